#pragma once
/// @file frameworks/huggingface.hpp
/// @brief A Hugging Face `transformers` (5.x) causal LM trained the ordinary way: the model
/// built from its config with fp32 parameters and `attn_implementation="sdpa"`, the forward and
/// the loss under `torch.autocast(bfloat16)`, fused AdamW, `zero_grad(set_to_none=True)`,
/// optionally `gradient_checkpointing_enable(use_reentrant=False)`.
///
/// What the modeling code runs (models/llama, qwen2, mixtral, gpt2/modeling_*.py,
/// integrations/sdpa_attention.py and moe.py, loss/loss_utils.py), as `lower/transformer.hpp`
/// lowers it under `module_style::transformers`:
/// - the residual stream is fp32 (the embedding is not an autocast op), so RMSNorm runs as its
///   fp32 op chain (pow, mean, + eps, rsqrt, two products) and keeps its input, the normalized
///   tensor and the reciprocal; LayerNorm (GPT-2) is one fp32 kernel;
/// - autocast caches weight casts only: Q, K, V (and gate, up) each cast the fp32 norm output
///   and keep their own bf16 copy; Qwen2's Q/K/V biases ride in the GEMM;
/// - rotate-half RoPE with fp32 cos/sin: five kernels per tensor leaving Q and K in fp32, cast
///   back to bf16 by SDPA's autocast; SDPA gets `is_causal=True` and `enable_gqa=True` (no mask is
///   passed, so no `repeat_kv`) and keeps Q, K, V, its output and the fp32 log-sum-exp;
/// - `use_cache` stays on in training: every layer copies k and v into a DynamicCache (GPT-2's
///   attention keeps the copies; Llama's fp32 k copy lives until the output is dropped);
/// - SiLU and the gate product as two kernels (GPT-2: `gelu_new`, the tanh formula as nine
///   elementwise kernels, mostly fp32); residual adds in fp32;
/// - MoE experts through `grouped_mm` on the fp32 weights (not an autocast op): per grouped GEMM
///   a host synchronization and one fp32 GEMM per expert on the rows routed to it (TF32 unless
///   `training::tf32` is false, PyTorch's default; the rows as uneven as
///   `transformer::expert_load_cv` says); router softmax in fp32;
/// - the loss: bf16 logits, `logits.float()`, log-softmax and NLL over all T positions: 10 B per
///   logit at the forward's peak (with the cache), 12 at the backward's;
/// - gradient checkpointing wraps each decoder layer (non-reentrant): it keeps the layer input,
///   turns the cache off, and autocast's weight cache holds every layer's bf16 weights until the
///   forward ends; the recomputation casts them again.
///
/// The host cost: the five models, launch-bound at sequence 128, spend 300.1 ms of host time on
/// the 11,516 kernels this lowering lists, against nanoGPT's 14.24 ms on 444, measured on one
/// machine (test/data/h100_host_steps.csv): `dispatch_share` = 26.1 / 32.1 us.

#include "strata/frameworks/recipe.hpp"

namespace strata::recipes {

struct huggingface : frameworks::recipe {
  constexpr huggingface()
      : frameworks::recipe{.name = "huggingface",
                           .autocast = true,
                           .eager = true,
                           .dispatch_share = 0.81,
                           .modules = frameworks::module_style::transformers,
                           .loss = frameworks::loss_style::transformers,
                           .fused_qkv = false,
                           .fused_gate_up = false,
                           .attention_output_copy = false,
                           .persistent_gradients = false,
                           .keep_logits = false,
                           .workspace = 64.0 * 1024 * 1024,
                           .batch_bytes_per_token = 16,
                           .vocabulary_padding = 1,
                           // no Megatron linear layers: every tensor-parallel collective blocks
                           .tp_async_backward = false,
                           // the default `sdpa` attention drops Gemma 2's cap
                           // (integrations/sdpa_attention.py takes no `softcap`)
                           .capped_attention = frameworks::capped_attention::dropped} {}
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::huggingface` as a value (what `training::framework` holds).
inline constexpr recipe huggingface = recipes::huggingface{};

}  // namespace strata::frameworks
