#pragma once
/// @file frameworks/pytorch_eager.hpp
/// @brief A plain PyTorch eager training loop (nanoGPT-style modules: `F.layer_norm`, a fused
/// QKV `nn.Linear`, `scaled_dot_product_attention`, tanh-GELU, `F.cross_entropy`), under
/// `torch.autocast(bfloat16)` over fp32 parameters, fused AdamW and `zero_grad(set_to_none=True)`;
/// validated on 253 H100 steps (test/validation/h100_steps.cpp).
///
/// What it runs and keeps, from PyTorch's autocast and autograd rules:
/// - each `nn.Linear` casts its fp32 weight and bias to bf16 on every forward (6 B per element:
///   read 4, write 2) and autograd holds the copy until the layer's backward; the bf16 weight
///   gradient is cast back to fp32 (6 B per element);
/// - layer norm runs in fp32 on the fp32 residual stream (it saves its fp32 input) and its output
///   is cast to bf16 for the next GEMM (that cast is what the GEMM saves);
/// - `y.transpose(1, 2).contiguous()` after attention: autograd keeps the attention output and
///   its contiguous copy;
/// - the loss upcasts the logits to fp32 (the peak holds log-softmax's output, its gradient and
///   the logits' gradient, 12 B per logit);
/// - the host issues every kernel (the profile's `dispatch` costs);
/// - 64 MiB of cuBLAS/cuBLASLt workspace on Hopper, the int64 inputs and targets on the GPU.

#include "strata/frameworks/recipe.hpp"

namespace strata::recipes {

struct pytorch_eager : frameworks::recipe {
  constexpr pytorch_eager()
      : frameworks::recipe{.name = "pytorch",
                           .autocast = true,
                           .eager = true,
                           .modules = frameworks::module_style::fused,
                           .loss = frameworks::loss_style::eager,
                           .fused_qkv = true,
                           .fused_gate_up = true,
                           .attention_output_copy = true,
                           .persistent_gradients = false,
                           .workspace = 64.0 * 1024 * 1024,
                           .batch_bytes_per_token = 16,
                           .vocabulary_padding = 1,
                           // DTensor's tensor parallelism, overlapped by torch.compile's pass
                           .tp_overlap = frameworks::tp_overlap_engine::micro_pipeline,
                           // no Megatron linear layers: every tensor-parallel collective blocks
                           .tp_async_backward = false,
                           // SDPA has no soft-cap: a capped model is written out op by op
                           .capped_attention = frameworks::capped_attention::materialized} {}
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::pytorch_eager` as a value (what `training::framework` holds).
inline constexpr recipe pytorch_eager = recipes::pytorch_eager{};

}  // namespace strata::frameworks

namespace strata::recipes {

/// The same loop over a Llama-style model written with torch.nn modules
/// (`tools/measure/h100_steps.py --part llama`): `nn.RMSNorm` (one fp32 kernel under autocast),
/// separate q/k/v/o and gate/up/down `nn.Linear`s (each casts its fp32 input), rotate-half RoPE
/// with fp32 cos/sin (Q and K come out fp32 and are cast back for SDPA), SDPA with `enable_gqa`,
/// `F.silu(gate) * up`, an fp32 residual stream, `F.cross_entropy(logits.float())`; only the
/// int64 ids on the GPU. SDPA's output is laid out sequence-major, so `y.transpose(1, 2)
/// .reshape(b, s, h)` is a view, not a copy (the 1-2 % of peak memory a copy would add is not
/// there in the measurements).
/// The host cost: the three measured models, launch-bound at sequence 128, spend 170.8 ms of host
/// time on the 6,442 kernels this lowering lists, against nanoGPT's 14.24 ms on 444
/// (test/data/h100_host_steps.csv): `dispatch_share` = 26.5 / 32.1 us.
struct pytorch_eager_modules : pytorch_eager {
  constexpr pytorch_eager_modules() {
    name = "pytorch-modules";
    modules = frameworks::module_style::eager_modules;
    loss = frameworks::loss_style::transformers;
    fused_qkv = false;
    fused_gate_up = false;
    attention_output_copy = false;
    batch_bytes_per_token = 8;
    dispatch_share = 0.83;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::pytorch_eager_modules` as a value (what `training::framework` holds).
inline constexpr recipe pytorch_eager_modules = recipes::pytorch_eager_modules{};

}  // namespace strata::frameworks
