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

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::megatron` as a value (what `training::framework` holds).
inline constexpr recipe megatron = recipes::megatron{};

}  // namespace strata::frameworks
