#pragma once
/// @file frameworks/megatron.hpp
/// @brief Megatron-LM as SC'21 and Korthikanti et al. 2022 describe it: fused kernels (one per
/// norm, bias-GELU/SwiGLU, bias-dropout-add, rotary embedding), fused QKV and gate/up GEMMs,
/// 16-bit working weights with fp32 master weights and main_grad buffers (18 B per parameter
/// with Adam, `training::gradients` = fp32), the vocabulary-parallel cross-entropy on
/// fp32 logits, kernels queued ahead of the GPU, and Korthikanti's saved tensors (34 s b h +
/// 5 a s^2 b per layer, Table 2). No allocator workspace or batch tensors are counted (as in
/// Korthikanti's accounting).

#include "strata/frameworks/recipe.hpp"

namespace strata::recipes {

/// The recipe type (derive from it to change a rule) and its value.
struct megatron : frameworks::recipe {
  constexpr megatron() : frameworks::recipe{} {}
};

/// Megatron-LM as SC'21 ran it (v2.6 and before, August 2021): every backward tensor-parallel
/// collective blocks the stream. The input gradient's all-reduce beside the weight gradient's
/// GEMM (`recipe::tp_async_backward`) came after, in commit cf7efd4 ("allreduce overlap with
/// wgrad gemm", 2021-08-30), and is in every later release Korthikanti et al. 2022 measured. Nor
/// did it reduce an interleaved stage's gradients chunk by chunk (`recipe::chunk_data_sync`), nor
/// overlap an interleaved pipeline's sends with compute (`recipe::overlap_p2p`, 2023).
struct megatron_2021 : megatron {
  constexpr megatron_2021() {
    name = "megatron-2021";
    tp_async_backward = false;
    chunk_data_sync = false;
    overlap_p2p = false;
    data.highest_stage = 0;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::megatron` as a value (what `training::framework` holds).
inline constexpr recipe megatron = recipes::megatron{};
/// The rules of `recipes::megatron_2021` as a value.
inline constexpr recipe megatron_2021 = recipes::megatron_2021{};

}  // namespace strata::frameworks
