#pragma once
/// @file frameworks/litgpt.hpp
/// @brief Fine-tuning loops that load the model in bf16 and train it without autocast or master
/// weights: LitGPT (`litgpt finetune lora --precision bf16-true`) and torchtune's single-device
/// recipes (`dtype: bf16`).
///
/// What they run, read from litgpt/finetune/lora.py, litgpt/model.py and litgpt/utils.py, and
/// torchtune/modules (transformer.py, rms_norm.py, loss/ce_chunked_output_loss.py):
/// - every parameter in bf16, the residual stream too (no autocast: nothing is cast per use),
///   and no fp32 masters: gradients and AdamW's moments in bf16, LoRA's adapters' too
///   (`recipe::pure_16bit`);
/// - torch.nn modules: LitGPT's one fused q/k/v linear, torchtune's three, separate gate and up
///   projections, an RMSNorm that keeps its input and the reciprocal, SDPA;
/// - the loss in chunks: LitGPT's `lm_head_chunk_size=128` with `chunked_cross_entropy`,
///   torchtune's `CEWithChunkedOutputLoss` (8 chunks) (`frameworks::loss_style::chunked`);
/// - QLoRA through bitsandbytes' NF4 (`lora_adapters::base`); LitGPT's Fabric plugin quantizes
///   the head too (a frozen bf16 head is what `lora_adapters::embeddings` describes otherwise).
/// Not modelled: torchtune's `compile: True`, which fuses the norms' and activations' op chains
/// and keeps fewer tensors (its README: 70.5 -> 59.3 GiB on Llama 3.2 3B), so strata's memory
/// for compiled torchtune runs is an upper bound.

#include "strata/frameworks/pytorch_eager.hpp"

namespace strata::recipes {

struct litgpt : pytorch_eager_modules {
  constexpr litgpt() {
    name = "litgpt";
    autocast = false;
    pure_16bit = true;
    loss = frameworks::loss_style::chunked;
    batch_bytes_per_token = 16;  // int64 input ids and labels
    fused_qkv = true;            // CausalSelfAttention's one `attn` linear
  }
};

/// torchtune's single-device LoRA/QLoRA and full recipes: LitGPT's rules with separate q, k
/// and v projections (torchtune/modules/attention.py).
struct torchtune : litgpt {
  constexpr torchtune() {
    name = "torchtune";
    fused_qkv = false;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::litgpt` and `recipes::torchtune` as values.
inline constexpr recipe litgpt = recipes::litgpt{};
inline constexpr recipe torchtune = recipes::torchtune{};

}  // namespace strata::frameworks
