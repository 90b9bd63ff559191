#pragma once
/// @file frameworks/deepspeed.hpp
/// @brief DeepSpeed's ZeRO engine (runtime/zero/stage_1_and_2.py, stage3.py,
/// partitioned_param_coordinator.py) under Megatron-DeepSpeed's fused model code, with the
/// defaults of its `zero_optimization` configuration (runtime/zero/config.py; sizes in elements,
/// here bytes of 16-bit values):
/// - 16-bit weights and 16-bit gradient partitions, fp32 masters and Adam moments: 16 B per
///   parameter over the stage's shards, plus the step's fp32 copy of the gradient partition one
///   `sub_group_size` (1e9 elements) group at a time: DeepSpeed's estimator counts 18 B;
/// - ZeRO-1/2 reduce gradients in `reduce_bucket_size` (5e8 elements) buckets held in a
///   contiguous buffer; ZeRO-2/3 reduce after every micro-batch;
/// - ZeRO-3 fetches each submodule's partitioned parameters with one all-gather just before
///   the submodule runs (forward and backward), prefetching up to `stage3_prefetch_bucket_size`
///   (5e7 elements) ahead, and releases them after; parameters under
///   `stage3_param_persistence_threshold` (1e5 elements: norms, biases) stay whole;
/// - the pipeline engine accepts ZeRO-1 only (`limits::deepspeed_zero_with_pipeline`) and keeps
///   its send and receive buffers (`recipe::pipe_buffers`);
/// - ZeRO-Offload / ZeRO-Infinity: set `data.offload_optimizer` (and `offload_parameters` with
///   ZeRO-3) to `offload_device::cpu` or `nvme`; the cluster's `host` figures price the copies
///   and the CPU Adam pass.
/// A Hugging Face model under DeepSpeed is `with_engine(huggingface, deepspeed.data)`.

#include "strata/frameworks/megatron.hpp"

namespace strata::frameworks {

inline constexpr sharding deepspeed_zero{.engine = data_engine::deepspeed,
                                         .reduce_bucket = 2 * 5e8,
                                         .prefetch_bucket = 2 * 5e7,
                                         .persistence_threshold = 1e5,
                                         .fp32_gradient_group = 1e9};

/// Megatron-DeepSpeed's `BF16_Optimizer` (DeepSpeed runtime/bf16_optimizer.py, with
/// `zero_optimization.stage` 0 and bf16 on): bf16 weights, an unsharded fp32 gradient
/// accumulation buffer (`training::gradients` fp32), fp32 masters and moments sharded over the
/// data-parallel ranks (ZeRO-1), reduced by all-reducing the fp32 buffer in place; the bf16
/// `.grad` tensors stay alive beside the buffer (`sharding::keeps_16bit_gradients`).
inline constexpr sharding deepspeed_bf16_optimizer{.keeps_16bit_gradients = true};

}  // namespace strata::frameworks

namespace strata::recipes {

struct deepspeed : megatron {
  constexpr deepspeed() {
    name = "deepspeed";
    pipe_buffers = true;
    // the Megatron-LM fork its published runs (BLOOM) used: `ColumnParallelLinear` all-reduces
    // its input gradient in `copy_to_tensor_model_parallel_region`'s backward, blocking
    // (bigscience-workshop/Megatron-DeepSpeed megatron/mpu/layers.py)
    tp_async_backward = false;
    data = frameworks::deepspeed_zero;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::deepspeed` as a value (what `training::framework` holds).
inline constexpr recipe deepspeed = recipes::deepspeed{};

/// `r` run by another data-parallel engine (e.g. Hugging Face model code under DeepSpeed or FSDP).
/// DeepSpeed manages its own mixed precision: it casts the module to 16 bits and keeps the fp32
/// masters in its optimizer, and the trainers leave autocast off under it (transformers'
/// Trainer: `if args.fp16 and not args.deepspeed:  # deepspeed manages its own fp16`;
/// accelerate: no native AMP for DistributedType.DEEPSPEED), so an autocast recipe stops casting.
[[nodiscard]] constexpr recipe with_engine(recipe r, const sharding& engine) {
  r.data = engine;
  if (engine.engine == data_engine::deepspeed) r.autocast = false;
  return r;
}

}  // namespace strata::frameworks
