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
#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/training.hpp"

namespace strata::parallel {

/// What ZeRO stage `stage` shards (Rajbhandari et al. 2020 §5: P_os, P_os+g, P_os+g+p) and so
/// when its collectives run. Every rule of the library that depends on the stage asks it here.
struct zero_stage {
  int stage = 0;
  /// one of the four stages 0-3
  [[nodiscard]] constexpr bool valid() const { return stage >= 0 && stage <= 3; }
  /// stage >= 1: optimizer states (and fp32 masters) sharded: the gradients are reduce-scattered
  /// and the updated weights all-gathered instead of one all-reduce
  [[nodiscard]] constexpr bool shards_optimizer() const { return stage >= 1; }
  /// stage >= 2: gradients sharded, so each micro-batch reduce-scatters what its backward made
  [[nodiscard]] constexpr bool shards_gradients() const { return stage >= 2; }
  /// stage >= 3: weights sharded, so each layer is gathered before it runs, in each pass
  [[nodiscard]] constexpr bool shards_weights() const { return stage >= 3; }
  /// stages 1 and 2 all-gather the updated weights once a step
  [[nodiscard]] constexpr bool gathers_updated_weights() const {
    return shards_optimizer() && !shards_weights();
  }
};

/// Bytes of model states for some parameters on one rank.
struct sharded_states {
  double weights = 0, gradients = 0, optimizer = 0;
};

/// `n` parameters of `weight`, `gradient` and `optimizer` bytes each, sharded over `shards` ranks
/// by ZeRO stage `stage`.
[[nodiscard]] constexpr sharded_states zero_states(double n, double shards, int stage,
                                                   double weight, double gradient,
                                                   double optimizer) {
  const zero_stage z{stage};
  return {n * weight / (z.shards_weights() ? shards : 1.0),
          n * gradient / (z.shards_gradients() ? shards : 1.0),
          n * optimizer / (z.shards_optimizer() ? shards : 1.0)};
}

constexpr void check_zero_stage(int stage) {
  if (!zero_stage{stage}.valid()) throw plan_error(limits::zero_stage_out_of_range);
}

/// Model states of `n` parameters on one GPU at ZeRO stage `stage` over `shards` ranks, as the
/// engine of `t.framework` stores them. What an offload moves to the host is not counted.
/// `b`: the bytes per parameter (`training::trained_bytes`, or LoRA's `adapter_bytes`).
[[nodiscard]] constexpr sharded_states engine_states(double n, double shards, int stage,
                                                     const training& t, const parameter_bytes& b) {
  const frameworks::sharding& e = t.framework.data;
  sharded_states z = zero_states(n, shards, stage, b.weight, b.gradient, b.optimizer);
  // FSDP keeps no 16-bit weights at rest under FULL_SHARD: they exist only gathered (buffers)
  const zero_stage zs{stage};
  if (e.engine == frameworks::data_engine::fsdp && zs.shards_weights() && t.master_weights())
    z.weights = 0;
  // the 16-bit gradients autograd made, unsharded beside the fp32 buffers
  if (t.keeps_16bit_gradients() && b.gradient >= 4) z.gradients += n * t.weight_bytes();
  // DeepSpeed ZeRO-1 with `contiguous_gradients` (on by default) copies the rank's partition of
  // the reduced gradients into a buffer of its own, allocated at the first step and kept
  // (`grads_in_partition`, stage_1_and_2.py `copy_grads_in_partition`; an offloaded optimizer
  // copies them to the host instead); the whole model's gradients are still made every backward
  if (e.engine == frameworks::data_engine::deepspeed && zs.shards_optimizer() &&
      !zs.shards_gradients() && b.gradient < 4 &&
      e.offload_optimizer == frameworks::offload_device::none)
    z.gradients += n * b.gradient / shards;
  if (e.offload_optimizer != frameworks::offload_device::none) {
    z.optimizer = 0;
    // from stage 2 each reduced gradient bucket is copied to the host partition and freed
    if (zs.shards_gradients()) z.gradients = 0;
  }
  if (e.offload_parameters != frameworks::offload_device::none) z.weights = 0;
  return z;
}
[[nodiscard]] constexpr sharded_states engine_states(double n, double shards, int stage,
                                                     const training& t) {
  return engine_states(n, shards, stage, t, t.trained_bytes());
}

/// Bytes the optimizer step adds on one GPU for a partition of `n` parameters at ZeRO stage
/// `stage`: DeepSpeed's fp32 copy of the 16-bit gradient partition, whole under ZeRO-1/2 and one
/// `sub_group_size` group at a time under ZeRO-3; none when the optimizer runs on the host.
/// ZeRO-1/2 make it as `flatten(averaged_gradients).to(fp32)` (stage_1_and_2.py, `step`): the
/// flattened 16-bit partition and its fp32 copy exist together.
[[nodiscard]] constexpr double update_buffer(double n, int stage, const training& t) {
  const frameworks::sharding& e = t.framework.data;
  if (e.fp32_gradient_group <= 0 || !t.master_weights() || t.gradient_bytes() >= 4 ||
      e.offload_optimizer != frameworks::offload_device::none)
    return 0;
  if (zero_stage{stage}.shards_weights()) return 4 * strata::detail::min(n, e.fp32_gradient_group);
  return (4 + t.gradient_bytes()) * n;
}

/// What the engines' buffer rule (`engine_buffers`) reads of a plan, on one rank of one stage.
struct engine_inputs {
  double unit = 0;        ///< one layer's parameters on this rank (an FSDP unit, a gathered layer)
  double trained = 0;     ///< parameters the rank trains (whose gradients it reduces)
  double weights = 0;     ///< parameters the rank holds (what ZeRO-3 gathers)
  double ddp_bucket = 0;  ///< DDP's (Megatron's) gradient bucket bytes, `data_parallel::bucket`
  bool replicated = false;  ///< more than one data-parallel replica (data x context ranks)
};

/// DeepSpeed's ZeRO-3 modules of one layer: the largest one's parameters and how many are
/// partitioned (above `stage3_param_persistence_threshold`); `lower::weight_modules` finds them.
struct partitioned_modules {
  double largest = 0, modules = 0;
};

/// The communication buffers the framework's data-parallel engine holds on one rank with the
/// plan facts `x`; `modules()` gives DeepSpeed's partitioned modules (asked only under its ZeRO-3):
/// - Megatron: one gradient bucket in flight (ZeRO-0); ZeRO-3 two layers' gathered weights (the
///   current and the prefetched);
/// - DeepSpeed: the contiguous gradient bucket (`reduce_bucket_size`; under ZeRO-1/2/3 on any
///   number of ranks); ZeRO-3 also the module being used and the prefetch bucket
///   (`stage3_prefetch_bucket_size`) gathered;
/// - FSDP: a unit's unsharded 16-bit gradients and their `reduce_dtype` copy before its
///   reduce-scatter; FULL_SHARD also two units gathered (the rate limiter's cap).
template <class Modules>
[[nodiscard]] constexpr double engine_buffers(const training& t, zero_stage z,
                                              const engine_inputs& x, Modules&& modules) {
  const frameworks::sharding& e = t.framework.data;
  const double wb = t.weight_bytes(), gb = t.gradient_bytes();
  switch (e.engine) {
    case frameworks::data_engine::megatron:
      if (z.shards_weights()) return 2 * wb * x.unit;
      if (x.replicated && !z.shards_optimizer())
        return strata::detail::min(x.ddp_bucket, x.trained * gb);
      return 0;
    case frameworks::data_engine::deepspeed: {
      // ZeRO's optimizers run on one rank too, so one GPU never needs less than two (issue 39):
      // stages 1 and 2 allocate the contiguous gradient bucket in every backward
      // (stage_1_and_2.py, `backward`: `torch.empty(reduce_bucket_size)` when
      // `contiguous_gradients`), stage 3 also fetches modules (stage3.py), which
      // ZeRO-Infinity's parameter offload fills from the host; without ZeRO, one rank reduces
      // nothing
      if (!x.replicated && !z.shards_optimizer()) return 0;
      const double bucket = strata::detail::min(e.reduce_bucket, x.trained * gb);
      if (!z.shards_weights()) return bucket;
      const partitioned_modules w = modules();
      return bucket + strata::detail::min(wb * w.largest + e.prefetch_bucket, wb * x.weights);
    }
    case frameworks::data_engine::fsdp:
      if (!x.replicated) return 0;
      return (wb + gb) * x.unit + (z.shards_weights() ? 2 * wb * x.unit : 0.0);
  }
  return 0;
}

/// The parameters of one pipeline stage on one rank before ZeRO shards them: dense ones
/// (replicated over the data, expert and context ranks), expert ones (replicated over the data
/// and context ranks), and the part of the dense ones in the embedding, head and final norm.
struct stage_parameters {
  double dense = 0;  ///< all dense parameters, embedding and head included
  double expert = 0;
  double embedding = 0;  ///< the part of `dense` in the embedding, head and final norm
};

/// The share of `x` one rank holds when sharded over `dense_shards` (dense parameters) and
/// `expert_shards` (expert ones) ranks; all of `x` when `sharded` is false.
[[nodiscard]] constexpr double partition(const stage_parameters& x, double dense_shards,
                                         double expert_shards, bool sharded = true) {
  if (!sharded) return x.dense + x.expert;
  return x.dense / dense_shards + x.expert / expert_shards;
}

/// What ZeRO's memory rule (`zero_memory_of`) reads of one rank of a stage besides the
/// parameters it holds.
struct zero_placement {
  double dense_shards = 1;   ///< ranks sharding the dense states: shard group x expert x context
  double expert_shards = 1;  ///< ranks sharding the expert states: shard group x context
  stage_parameters trained;  ///< what the rank trains: all it holds, or LoRA's adapters (dense)
  engine_inputs engine;      ///< what the engine's buffer rule reads (`engine_buffers`)
  /// the share of the optimizer states a paged optimizer puts in unified memory, outside the
  /// caching allocator (`training::paged_optimizer`)
  double paged = 0;
  /// LoRA: the bytes of the frozen base weights the rank stores, and the embedding's part of them
  double frozen = 0, frozen_embedding = 0;
};

/// Model states and buffers of one rank of a stage under ZeRO stage `stage`, as the framework's
/// engine stores them.
struct zero_memory {
  double weights = 0, gradients = 0, optimizer = 0;  ///< the trained (and frozen) layers'
  double paged = 0;             ///< optimizer states a paged optimizer keeps outside the allocator
  double embedding_states = 0;  ///< the embedding's, head's and final norm's states
  double head_gradients = 0;    ///< their gradients (made by the first backward)
  double buffers = 0;           ///< the engine's communication buffers (`engine_buffers`)
  double update_buffer = 0;     ///< the optimizer step's working copy (`update_buffer`)
};

/// ZeRO's memory for a stage: the states of the parameters `held` sharded as `x` says
/// (`engine_states`: full training shards the dense and expert weights; LoRA stores the frozen
/// base as `x.frozen` and trains the adapters in `training::adapter_bytes`), the engine's buffers
/// and the optimizer step's working copy. `modules()` as for `engine_buffers`.
template <class Modules>
[[nodiscard]] constexpr zero_memory zero_memory_of(int stage, const training& t,
                                                   const stage_parameters& held,
                                                   const zero_placement& x, Modules&& modules) {
  zero_memory z;
  const auto add = [&](double n, double shards, const parameter_bytes& b, double paged) {
    const sharded_states s = engine_states(n, shards, stage, t, b);
    z.weights += s.weights;
    z.gradients += s.gradients;
    z.optimizer += (1 - paged) * s.optimizer;
    z.paged += paged * s.optimizer;
  };
  if (t.lora.on()) {
    z.weights = x.frozen;
    add(x.trained.dense, x.dense_shards, t.adapter_bytes(), x.paged);
    z.embedding_states = x.frozen_embedding;
  } else {
    const double paged = t.paged_optimizer ? 1.0 : 0.0;
    add(held.dense, x.dense_shards, t.trained_bytes(), paged);
    add(held.expert, x.expert_shards, t.trained_bytes(), paged);
    const sharded_states e = engine_states(held.embedding, x.dense_shards, stage, t);
    z.embedding_states = e.weights + e.gradients + e.optimizer;
    z.head_gradients = e.gradients;
  }
  const zero_stage zs{stage};
  z.buffers = engine_buffers(t, zs, x.engine, modules);
  // the optimizer's partition: what the rank trains, sharded when the optimizer states are
  z.update_buffer = update_buffer(
      partition(x.trained, x.dense_shards, x.expert_shards, zs.shards_optimizer()), stage, t);
  return z;
}

/// How many calls a step's data-parallel collectives take on one rank, per micro-batch for
/// ZeRO-2/3 (the engine's rule, `frameworks::sharding`): ZeRO-3 gathers one layer per call
/// (Megatron, FSDP's units) or one module (DeepSpeed, above the persistence threshold) in each
/// pass; ZeRO-2/3 reduce once per micro-batch (Megatron), per unit (FSDP) or per
/// `reduce_bucket_size` (DeepSpeed); `bucket` is the reduction's bucket for ZeRO-0/1.
struct calls_per_step {
  double gathers = 1, reduces = 1, bucket = 0;
};
/// The calls for `gradient_bytes` of gradients over `layers` layers with DDP's bucket of
/// `ddp_bucket` bytes; `modules()` as for `engine_buffers`.
template <class Modules>
[[nodiscard]] constexpr calls_per_step collective_calls(const training& t, zero_stage z,
                                                        double layers, double ddp_bucket,
                                                        double gradient_bytes, Modules&& modules) {
  const frameworks::sharding& e = t.framework.data;
  const double l = strata::detail::max(1.0, layers);
  calls_per_step k;
  k.bucket = e.engine == frameworks::data_engine::deepspeed ? e.reduce_bucket : ddp_bucket;
  switch (e.engine) {
    case frameworks::data_engine::megatron:
      if (z.shards_weights()) k.gathers = l;
      break;
    case frameworks::data_engine::fsdp:
      if (z.shards_weights()) k.gathers = l;
      if (z.shards_gradients()) k.reduces = l;
      break;
    case frameworks::data_engine::deepspeed:
      if (z.shards_weights()) k.gathers = l * strata::detail::max(1.0, modules().modules);
      if (z.shards_gradients() && e.reduce_bucket > 0)
        k.reduces =
            strata::detail::max(1.0, strata::detail::ceil_of(gradient_bytes / e.reduce_bucket));
      break;
  }
  return k;
}

/// The engine's rules for a plan: DeepSpeed's pipeline engine takes ZeRO-1 only, FSDP has no
/// ZeRO-1, offload needs DeepSpeed and the stages that shard what it moves. The broken rule's
/// sentence (`limits::`), or nullptr when the plan is allowed.
[[nodiscard]] constexpr const char* engine_refuses(const frameworks::sharding& e, int stage,
                                                   int pipeline_degree) {
  using frameworks::data_engine;
  using frameworks::offload_device;
  const zero_stage z{stage};
  if (e.engine == data_engine::deepspeed && z.shards_gradients() && pipeline_degree > 1)
    return limits::deepspeed_zero_with_pipeline;
  if (e.engine == data_engine::fsdp && z.gathers_updated_weights() && !z.shards_gradients())
    return limits::fsdp_has_no_zero1;
  if (stage > e.highest_stage) return limits::megatron_2021_has_no_zero;
  const bool opt = e.offload_optimizer != offload_device::none,
             par = e.offload_parameters != offload_device::none;
  if ((opt || par) && e.engine != data_engine::deepspeed) return limits::offload_needs_deepspeed;
  if (opt && !z.shards_optimizer()) return limits::offload_optimizer_needs_zero;
  if (par && !z.shards_weights()) return limits::offload_parameters_needs_zero3;
  if (!(e.reduce_bucket >= 0 && e.prefetch_bucket >= 0 && e.persistence_threshold >= 0 &&
        e.fp32_gradient_group >= 0))
    return "the framework's bucket sizes must not be negative";
  return nullptr;
}
constexpr void check_engine(const frameworks::sharding& e, int stage, int pipeline_degree) {
  if (const char* why = engine_refuses(e, stage, pipeline_degree)) throw plan_error(why);
}

}  // namespace strata::parallel
