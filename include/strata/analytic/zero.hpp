#pragma once
/// @file analytic/zero.hpp
/// @brief Model-state memory under ZeRO: Rajbhandari et al. 2020 §5 and DeepSpeed's estimators.
///
/// With mixed-precision Adam a parameter costs 2 B (fp16 weight) + 2 B (fp16 gradient) + K B of
/// optimizer state (K = 12: fp32 master weight, momentum, variance). Over N_d data-parallel ranks
/// stage 1 shards the optimizer states, stage 2 also the gradients, stage 3 also the weights
/// (Rajbhandari et al. Fig. 1: (2 + 2 + K) Psi, 4 Psi + K Psi / N_d, 2 Psi + (2 + K) Psi / N_d,
/// (2 + 2 + K) Psi / N_d).
///
/// DeepSpeed ships two estimators, `estimate_zero2_model_states_mem_needs` and
/// `estimate_zero3_model_states_mem_needs` (deepspeed/runtime/zero/stage_1_and_2.py and
/// stage3.py; docs/code-docs/source/memory.rst). `deepspeed_zero2` and `deepspeed_zero3` give
/// the same numbers, including the 1.5x buffer factor on host memory; they count model states
/// only, not activations.
/// @code
/// constexpr auto e = strata::analytic::deepspeed_zero2({.parameters = 2851e6, .nodes = 1,
///                                                     .gpus_per_node = 8});
/// // 4 x 2851e6 + 16 x 2851e6 / 8 = 17.1e9 B = 15.93 GiB per GPU
/// @endcode

#include "strata/error.hpp"
#include "strata/parallel/zero.hpp"
#include "strata/units.hpp"

namespace strata::analytic {

/// Bytes of model states per data-parallel rank for `parameters` parameters at ZeRO stage
/// `stage` over `ranks` ranks, with K bytes of optimizer state per parameter (Rajbhandari et
/// al. §5.1: K = 12 for mixed-precision Adam).
[[nodiscard]] constexpr bytes zero_model_states(double parameters, int ranks, int stage,
                                                double k = 12) {
  if (ranks < 1) throw plan_error("ZeRO needs at least one data-parallel rank");
  parallel::check_zero_stage(stage);
  const parallel::sharded_states z = parallel::zero_states(parameters, ranks, stage, 2, 2, k);
  return bytes{z.weights + z.gradients + z.optimizer};
}

/// The inputs of DeepSpeed's model-state estimators.
struct deepspeed_setup {
  double parameters = 0;     ///< total_params
  double largest_layer = 0;  ///< largest_layer_params (ZeRO-3)
  int nodes = 1;
  int gpus_per_node = 1;
  bool offload_optimizer = false;   ///< cpu_offload
  bool offload_parameters = false;  ///< cpu_offload_params (ZeRO-3)
  bool zero_init = true;            ///< ZeRO-3: parameters partitioned at construction
  double buffer_factor = 1.5;       ///< additional_buffer_factor on host memory
};

/// Per-GPU and per-node host bytes.
struct deepspeed_estimate {
  bytes gpu{};
  bytes cpu{};
};

namespace detail {
constexpr void check(const deepspeed_setup& s) {
  if (s.parameters < 0 || s.largest_layer < 0)
    throw plan_error("DeepSpeed estimate: parameter counts must not be negative");
  if (s.nodes < 1 || s.gpus_per_node < 1)
    throw plan_error("DeepSpeed estimate: nodes and GPUs per node must be at least 1");
}
/// Python's int() of a non-negative double.
constexpr double trunc(double x) { return static_cast<double>(static_cast<long long>(x)); }
}  // namespace detail

/// DeepSpeed's ZeRO-2 estimate: GPU 4 Psi + 16 Psi / N (2 Psi when the optimizer is offloaded);
/// host Psi max(4 N, 16) x 1.5 with offload, 4 Psi x GPUs per node x 1.5 without.
[[nodiscard]] constexpr deepspeed_estimate deepspeed_zero2(const deepspeed_setup& s) {
  detail::check(s);
  const double psi = s.parameters, gpus = static_cast<double>(s.nodes) * s.gpus_per_node;
  deepspeed_estimate e;
  if (s.offload_optimizer) {
    e.gpu = bytes{2 * psi};
    e.cpu = bytes{psi * (4 * gpus > 16 ? 4 * gpus : 16) * s.buffer_factor};
  } else {
    e.gpu = bytes{4 * psi + detail::trunc(16 * psi / gpus)};
    e.cpu = bytes{psi * 4 * s.gpus_per_node * s.buffer_factor};
  }
  return e;
}

/// DeepSpeed's ZeRO-3 estimate: GPU 4 x largest layer plus 18 Psi / N (2 Psi / N with the
/// optimizer offloaded, nothing more with parameters offloaded too); host per node as
/// DeepSpeed computes it, with gpus_factor = 1 / nodes.
[[nodiscard]] constexpr deepspeed_estimate deepspeed_zero3(const deepspeed_setup& s) {
  detail::check(s);
  const double psi = s.parameters, gpus = static_cast<double>(s.nodes) * s.gpus_per_node;
  const double per_node = s.gpus_per_node, factor = 1.0 / s.nodes;
  const double largest = 4 * s.largest_layer;
  auto larger = [](double a, double b) { return a > b ? a : b; };
  deepspeed_estimate e;
  if (s.offload_optimizer && s.offload_parameters) {
    e.gpu = bytes{largest};
    e.cpu = bytes{psi * (s.zero_init ? 18 * factor : larger(4 * per_node, 18 * factor)) *
                  s.buffer_factor};
  } else if (s.offload_optimizer) {
    e.gpu = bytes{largest + detail::trunc(2 * psi / gpus)};
    e.cpu = bytes{psi * (s.zero_init ? 16 * factor : larger(4 * per_node, 16 * factor)) *
                  s.buffer_factor};
  } else {
    e.gpu = bytes{largest + detail::trunc(18 * psi / gpus)};
    e.cpu = bytes{(s.zero_init ? s.largest_layer : psi) * 4 * per_node * s.buffer_factor};
  }
  return e;
}

}  // namespace strata::analytic
