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

/// torchtitan's Llama as its configurations run it without torch.compile (`compile = false`
/// in train_configs/llama3_*.toml, read at 9dec370, December 2024): FSDP2 units with
/// `MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)` (no autocast: a 16-bit residual
/// stream) over torch.nn modules, each op its own kernel (torchtitan/models/llama/model.py):
/// - separate wq, wk, wv and w1, w3, w2 linears, SDPA, `F.silu(w1(x)) * w3(x)`;
/// - torchtitan's RMSNorm (models/norms.py, `norm_type = "rmsnorm"`): `x.float()`, pow, mean,
///   + eps, rsqrt, x r, `type_as(x)`, w n, one kernel each; autograd keeps the fp32 copy, r
///   and the 16-bit n;
/// - the loss on `pred.float()` (`cross_entropy` of the fp32 logits).
/// - its rotary embedding (models/llama/model.py `apply_rotary_emb`): complex fp32 copies of q
///   and k times `freqs_cis`, cast back (`recipe::rope_complex`, three kernels each).
/// With torch.compile the norms' and activations' chains fuse: `fsdp`, whose modules are fused
/// kernels, prices those runs.
struct torchtitan : pytorch_eager_modules {
  constexpr torchtitan() {
    name = "torchtitan";
    autocast = false;  // MixedPrecisionPolicy casts the gathered parameters instead
    norm_fp32_input = true;
    rmsnorm_op_chain = true;
    rope_complex = true;
    batch_bytes_per_token = 16;  // int64 inputs and labels
    data = frameworks::fsdp_units;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::fsdp` as a value (what `training::framework` holds).
inline constexpr recipe fsdp = recipes::fsdp{};
/// The rules of `recipes::torchtitan` as a value.
inline constexpr recipe torchtitan = recipes::torchtitan{};

}  // namespace strata::frameworks
