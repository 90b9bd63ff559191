#pragma once
/// @file frameworks/fsdp.hpp
/// @brief PyTorch FSDP (torch/distributed/fsdp; Zhao et al., VLDB 2023) as torchtitan and
/// llm-foundry run decoder LMs: every decoder layer wrapped as one unit, eager Llama-style modules,
/// `MixedPrecision(param_dtype=bf16, reduce_dtype=fp32)` instead of autocast, fused AdamW,
/// `zero_grad(set_to_none=True)`. The sharding strategy is the plan's ZeRO stage: FULL_SHARD 3,
/// SHARD_GRAD_OP 2, NO_SHARD 0, HYBRID_SHARD a shard group (`data_parallel::shard_group`) with
/// replicas across groups.
/// - States: the fp32 shard is the parameter (no 16-bit copy at rest), fp32 gradient shards after
///   the reduce-scatter, Adam's moments beside them: 16 B per parameter over the shards;
/// - one all-gather per unit before its forward and (FULL_SHARD) again before its backward, in
///   bf16; backward prefetch issues the next unit's gather while the current one computes, and
///   the rate limiter (`limit_all_gathers`) lets at most two units be gathered at once;
/// - one reduce-scatter per unit as its backward ends, in fp32 (`reduce_dtype`), which also holds
///   the unit's unsharded bf16 gradients and their fp32 copy until it is issued.

#include "strata/frameworks/pytorch_eager.hpp"

namespace strata::frameworks {

inline constexpr sharding fsdp_units{.engine = data_engine::fsdp, .default_stage = 3};

}  // namespace strata::frameworks

namespace strata::recipes {

struct fsdp : pytorch_eager {
  constexpr fsdp() {
    name = "fsdp";
    autocast = false;  // MixedPrecision casts the gathered parameters instead
    attention_output_copy = false;
    data = frameworks::fsdp_units;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::fsdp` as a value (what `training::framework` holds).
inline constexpr recipe fsdp = recipes::fsdp{};

}  // namespace strata::frameworks
