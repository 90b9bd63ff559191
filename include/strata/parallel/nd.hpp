#pragma once
/// @file parallel/nd.hpp
/// @brief N-dimensional parallelism for transformers: tensor (with sequence), context, expert,
/// pipeline and data (with ZeRO) policies composed into one strategy, `parallel::nd`.
///
/// Each policy owns its rule: how it divides compute, which collectives it inserts and how it
/// divides memory; `analytic/transformer.hpp` evaluates them. The ranks are laid out axis by
/// axis in `order`, innermost first (default: tensor, context, expert, pipeline, data, so a
/// tensor group sits inside a node), and every collective runs on the group that layout gives
/// it. Misuse is a `plan_error` with a `limits::` sentence: a compile error in a constant
/// expression, an exception at run time.
/// @code
/// constexpr strata::parallel::nd s{
///     .tensor = {.degree = 8, .sequence = true},
///     .pipeline = {.degree = 8, .virtual_stages = 2,
///                  .kind = strata::parallel::schedule::interleaved},
///     .data = {.degree = 16, .zero = 1},
///     .micro_batch = 1};
/// static_assert(s.devices() == 1024);
/// @endcode

#include <array>
#include <string_view>

#include "strata/comm/placement.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/model/transformer.hpp"
#include "strata/training.hpp"

namespace strata::parallel {

enum class schedule { gpipe, one_f_one_b, interleaved };
enum class recompute { none, selective, full };
enum class axis { tensor, context, expert, pipeline, data };

[[nodiscard]] constexpr std::string_view to_string(schedule s) {
  switch (s) {
    case schedule::gpipe:
      return "gpipe";
    case schedule::one_f_one_b:
      return "1f1b";
    case schedule::interleaved:
      return "interleaved";
  }
  return "1f1b";
}
[[nodiscard]] constexpr std::string_view to_string(recompute r) {
  switch (r) {
    case recompute::none:
      return "none";
    case recompute::selective:
      return "selective";
    case recompute::full:
      return "full";
  }
  return "none";
}
[[nodiscard]] constexpr std::string_view to_string(axis a) {
  switch (a) {
    case axis::tensor:
      return "tensor";
    case axis::context:
      return "context";
    case axis::expert:
      return "expert";
    case axis::pipeline:
      return "pipeline";
    case axis::data:
      return "data";
  }
  return "tensor";
}

/// Megatron tensor parallelism (Shoeybi et al. 2019): QKV and the first MLP GEMM split by
/// columns, the output projections by rows; two all-reduces forward and two backward per layer.
/// With `sequence` (Korthikanti et al. 2022 §4.2.2) each all-reduce becomes an all-gather plus a
/// reduce-scatter and norms, dropout and residuals work on s / t tokens.
struct tensor_parallel {
  int degree = 1;
  bool sequence = false;
};

/// Context parallelism (ring attention, Liu et al. 2023): the sequence is split `degree` ways;
/// K and V blocks travel around the ring while attention computes.
struct context_parallel {
  int degree = 1;
};

/// Expert parallelism (GShard, Lepikhin et al. 2020): experts spread over `degree` ranks, tokens
/// dispatched and combined by all-to-all. The expert ranks are also data-parallel replicas for
/// the dense weights.
struct expert_parallel {
  int degree = 1;
};

/// Pipeline parallelism: GPipe (Huang et al. 2019), 1F1B (PipeDream-Flush, Narayanan et al.
/// 2021) or interleaved 1F1B with `virtual_stages` chunks per device (SC'21 §2.2.2). Layers
/// split evenly, or the first and last stages take the given counts and the rest split evenly.
struct pipeline_parallel {
  int degree = 1;
  int virtual_stages = 1;
  schedule kind = schedule::one_f_one_b;
  int first_stage_layers = 0;  ///< 0: an even share
  int last_stage_layers = 0;   ///< 0: an even share
};

/// Data parallelism: gradients reduced in buckets, `overlap` of the reduction may hide behind
/// backward. ZeRO (Rajbhandari et al. 2020) stage 1 shards optimizer states (Megatron's
/// distributed optimizer), 2 also gradients, 3 also weights (FSDP's full sharding).
struct data_parallel {
  int degree = 1;
  int zero = 0;
  double overlap = 1.0;      ///< fraction of the backward pass the reduction may hide behind
  double bucket = 25e6 * 4;  ///< bucket bytes (PyTorch DDP: 25 MB of fp32 = 100 MB here)
};

/// A transformer strategy: the five axes, recomputation, micro-batch and rank order.
struct nd {
  static constexpr std::string_view name = "nd";
  tensor_parallel tensor{};
  context_parallel context{};
  expert_parallel expert{};
  pipeline_parallel pipeline{};
  data_parallel data{};
  recompute recomputation = recompute::none;
  int micro_batch = 1;  ///< b, sequences per micro-batch
  std::array<axis, 5> order{axis::tensor, axis::context, axis::expert, axis::pipeline, axis::data};

  [[nodiscard]] constexpr int degree(axis a) const {
    switch (a) {
      case axis::tensor:
        return tensor.degree;
      case axis::context:
        return context.degree;
      case axis::expert:
        return expert.degree;
      case axis::pipeline:
        return pipeline.degree;
      case axis::data:
        return data.degree;
    }
    return 1;
  }
  [[nodiscard]] constexpr int devices() const {
    return tensor.degree * context.degree * expert.degree * pipeline.degree * data.degree;
  }
  /// Data-parallel replicas of the dense weights (expert ranks see different tokens).
  [[nodiscard]] constexpr int replicas() const { return data.degree * expert.degree; }
  /// The communicator of axis `a`: ranks `stride` apart, stride = product of inner axes.
  [[nodiscard]] constexpr group group_of(axis a) const {
    int stride = 1;
    for (const axis b : order) {
      if (b == a) return {0, degree(a), stride};
      stride *= degree(b);
    }
    return {0, degree(a), stride};
  }
  /// Micro-batches per replica per iteration.
  [[nodiscard]] constexpr int micro_batches(const transformer_training& t) const {
    return t.global_batch / replicas() / micro_batch;
  }
  /// The layers and stages left once the first and last stages take their given counts.
  struct evenly_split {
    int layers, stages;
  };
  [[nodiscard]] constexpr evenly_split even_part(const transformer& m) const {
    evenly_split e{m.layers, pipeline.degree};
    if (pipeline.first_stage_layers > 0) e.layers -= pipeline.first_stage_layers, --e.stages;
    if (pipeline.last_stage_layers > 0) e.layers -= pipeline.last_stage_layers, --e.stages;
    return e;
  }
  /// Layers of pipeline stage `i` (all its virtual chunks together).
  [[nodiscard]] constexpr int stage_layers(const transformer& m, int i) const {
    const int p = pipeline.degree;
    if (p == 1) return m.layers;
    if (i == 0 && pipeline.first_stage_layers > 0) return pipeline.first_stage_layers;
    if (i == p - 1 && pipeline.last_stage_layers > 0) return pipeline.last_stage_layers;
    const evenly_split e = even_part(m);
    return e.layers / e.stages;
  }

  /// The limits of a transformer plan on `devices` ranks (see `limits.hpp`).
  constexpr void check(const transformer& m, const transformer_training& t, int devices) const {
    m.check();
    t.check();
    for (const axis a : order)
      if (degree(a) < 1) throw plan_error(limits::degree_below_one);
    for (std::size_t i = 0; i < order.size(); ++i)
      for (std::size_t j = i + 1; j < order.size(); ++j)
        if (order[i] == order[j])
          throw plan_error("the rank order must name each of the five axes once");
    if (this->devices() != devices) throw plan_error(limits::degrees_must_match_devices);
    const int tp = tensor.degree;
    if (m.heads % tp != 0) throw plan_error(limits::tensor_degree_must_divide_heads);
    if (m.hidden % tp != 0) throw plan_error(limits::tensor_degree_must_divide_hidden);
    if (m.kv() % tp != 0) throw plan_error(limits::tensor_degree_must_divide_kv_heads);
    if (static_cast<long long>(m.ffn_size()) % tp != 0)
      throw plan_error(limits::tensor_degree_must_divide_ffn);
    if (m.experts % expert.degree != 0) throw plan_error(limits::expert_degree_must_divide_experts);
    const int s = t.sequence_or(m.sequence);
    if (m.positions == position_kind::learned && s > m.sequence)
      throw plan_error(limits::sequence_exceeds_positions);
    if (context.degree > 1 && s % (2 * context.degree) != 0)
      throw plan_error(limits::context_degree_must_divide_sequence);
    if (micro_batch < 1) throw plan_error(limits::degree_below_one);
    if (t.global_batch % replicas() != 0)
      throw plan_error(limits::global_batch_must_divide_replicas);
    if ((t.global_batch / replicas()) % micro_batch != 0)
      throw plan_error(limits::micro_batch_must_divide_replica_batch);
    const int p = pipeline.degree, v = pipeline.virtual_stages;
    if (p > m.layers) throw plan_error(limits::pipeline_degree_exceeds_transformer_layers);
    if (v < 1) throw plan_error(limits::degree_below_one);
    if (v > 1 && (pipeline.kind != schedule::interleaved || p == 1))
      throw plan_error(limits::interleaving_needs_pipeline);
    if (pipeline.first_stage_layers < 0 || pipeline.last_stage_layers < 0)
      throw plan_error(limits::pipeline_layers_must_split_evenly);
    if (p > 1) {
      const evenly_split e = even_part(m);
      if (e.stages < 1 ? e.layers != 0 : (e.layers < e.stages || e.layers % e.stages != 0))
        throw plan_error(limits::pipeline_layers_must_split_evenly);
      for (int i = 0; i < p; ++i)
        if (stage_layers(m, i) % v != 0)
          throw plan_error(limits::pipeline_layers_must_split_evenly);
    }
    if (pipeline.kind == schedule::interleaved && v > 1 && micro_batches(t) % p != 0)
      throw plan_error(limits::interleaving_needs_micro_batch_multiple);
    if (data.zero < 0 || data.zero > 3) throw plan_error(limits::zero_stage_out_of_range);
    if (!(data.overlap >= 0 && data.overlap <= 1)) throw plan_error(limits::overlap_out_of_range);
    if (!(data.bucket > 0)) throw plan_error("data parallelism: the bucket size must be positive");
  }
};

}  // namespace strata::parallel
