#pragma once
/// @file parallel/zero.hpp
/// @brief ZeRO (Rajbhandari et al. 2020 §5): stage 1 shards the optimizer states over the
/// data-parallel ranks (Megatron's distributed optimizer), stage 2 also the gradients, stage 3
/// also the weights (FSDP's full sharding). `analytic/zero.hpp` has the paper's and DeepSpeed's
/// estimators for whole models; this is the rule per parameter that a plan's stage memory uses,
/// as each framework's engine (`frameworks::data_engine`) stores the states:
/// - Megatron: 16-bit working weights, `training::gradients` main_grad buffers,
///   fp32 masters and moments (18 B/param with fp32 gradients);
/// - DeepSpeed (runtime/zero/stage_1_and_2.py, stage3.py): 16-bit weights and 16-bit gradient
///   partitions (`averaged_gradients`, the contiguous `grad_partitions_flat_buffer`), fp32
///   masters and moments; the step converts the gradient partition to fp32 one `sub_group_size`
///   group at a time; ZeRO-Offload keeps masters, moments and fp32 gradients in host memory;
/// - FSDP (torch/distributed/fsdp): the fp32 shard is the parameter (no 16-bit copy at rest:
///   `MixedPrecision(param_dtype=bf16)` casts it when gathering), fp32 gradient shards after the
///   reduce-scatter (`reduce_dtype`), the moments sharded with them: 16 B/param over N ranks.

#include "strata/detail/algorithm.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/training.hpp"

namespace strata::parallel {

/// Bytes of model states for some parameters on one rank.
struct sharded_states {
  double weights = 0, gradients = 0, optimizer = 0;
};

/// `n` parameters of `weight`, `gradient` and `optimizer` bytes each, sharded over `shards` ranks
/// by ZeRO stage `stage`.
[[nodiscard]] constexpr sharded_states zero_states(double n, double shards, int stage,
                                                   double weight, double gradient,
                                                   double optimizer) {
  return {n * weight / (stage >= 3 ? shards : 1.0), n * gradient / (stage >= 2 ? shards : 1.0),
          n * optimizer / (stage >= 1 ? shards : 1.0)};
}

constexpr void check_zero_stage(int stage) {
  if (stage < 0 || stage > 3) throw plan_error(limits::zero_stage_out_of_range);
}

/// Model states of `n` parameters on one GPU at ZeRO stage `stage` over `shards` ranks, as the
/// engine of `t.framework` stores them. What an offload moves to the host is not counted.
[[nodiscard]] constexpr sharded_states engine_states(double n, double shards, int stage,
                                                     const training& t) {
  const frameworks::sharding& e = t.framework.data;
  sharded_states z =
      zero_states(n, shards, stage, t.weight_bytes(), t.gradient_bytes(), t.optimizer_bytes());
  // FSDP keeps no 16-bit weights at rest under FULL_SHARD: they exist only gathered (buffers)
  if (e.engine == frameworks::data_engine::fsdp && stage >= 3 && t.master_weights()) z.weights = 0;
  if (e.offload_optimizer != frameworks::offload_device::none) {
    z.optimizer = 0;
    // from stage 2 each reduced gradient bucket is copied to the host partition and freed
    if (stage >= 2) z.gradients = 0;
  }
  if (e.offload_parameters != frameworks::offload_device::none) z.weights = 0;
  return z;
}

/// Bytes the optimizer step adds on one GPU for a partition of `n` parameters at ZeRO stage
/// `stage`: DeepSpeed's fp32 copy of the 16-bit gradient partition, whole under ZeRO-1/2
/// (stage_1_and_2.py flattens the partition's gradients to fp32 at once) and one
/// `sub_group_size` group at a time under ZeRO-3; none when the optimizer runs on the host.
[[nodiscard]] constexpr double update_buffer(double n, int stage, const training& t) {
  const frameworks::sharding& e = t.framework.data;
  if (e.fp32_gradient_group <= 0 || !t.master_weights() || t.gradient_bytes() >= 4 ||
      e.offload_optimizer != frameworks::offload_device::none)
    return 0;
  return 4 * (stage >= 3 ? strata::detail::min(n, e.fp32_gradient_group) : n);
}

/// The engine's rules for a plan: DeepSpeed's pipeline engine takes ZeRO-1 only, FSDP has no
/// ZeRO-1, offload needs DeepSpeed and the stages that shard what it moves. The broken rule's
/// sentence (`limits::`), or nullptr when the plan is allowed.
[[nodiscard]] constexpr const char* engine_refuses(const frameworks::sharding& e, int stage,
                                                   int pipeline_degree) {
  using frameworks::data_engine;
  using frameworks::offload_device;
  if (e.engine == data_engine::deepspeed && stage >= 2 && pipeline_degree > 1)
    return limits::deepspeed_zero_with_pipeline;
  if (e.engine == data_engine::fsdp && stage == 1) return limits::fsdp_has_no_zero1;
  const bool opt = e.offload_optimizer != offload_device::none,
             par = e.offload_parameters != offload_device::none;
  if ((opt || par) && e.engine != data_engine::deepspeed) return limits::offload_needs_deepspeed;
  if (opt && stage < 1) return limits::offload_optimizer_needs_zero;
  if (par && stage < 3) return limits::offload_parameters_needs_zero3;
  if (!(e.reduce_bucket >= 0 && e.prefetch_bucket >= 0 && e.persistence_threshold >= 0 &&
        e.fp32_gradient_group >= 0))
    return "the framework's bucket sizes must not be negative";
  return nullptr;
}
constexpr void check_engine(const frameworks::sharding& e, int stage, int pipeline_degree) {
  if (const char* why = engine_refuses(e, stage, pipeline_degree)) throw plan_error(why);
}

}  // namespace strata::parallel
