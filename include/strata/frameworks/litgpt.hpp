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
///   the head too, from fp16 copies, and LitGPT's loop holds the fp32 logits, and with them the
///   step's graph, until the next forward (the recipe's fields below say where each is read).
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
    norm_fp32_input = true;      // RMSNorm.forward: `x = x.float()`
    attention_input_copies = true;
    lora_zero_pad = true;
    // finetune/lora.py: `logits = model(input_ids, lm_head_chunk_size=128)`, never deleted, so
    // the list (and the graph behind it) lives until the next step's forward returns; Fabric
    // casts it to fp32 (`_FabricModule.forward` -> `precision.convert_output`)
    head_chunk = 128;
    keep_logits = true;
    fp32_outputs = true;
    // `--quantize bnb.nf4`: Lightning's `BitsandbytesPrecision` swaps every `torch.nn.Linear`,
    // the head included, and quantizes `weight.to(torch.half)` (plugins/precision/bitsandbytes.py)
    quantizes_head = true;
    fp16_quant_state = true;
    separate_head = true;
    // soft-capped attention (Gemma 2): `CausalSelfAttention.scaled_dot_product_attention` skips
    // SDPA ("with softcapping we cannot use SDPA") and writes q k^T, the cap, the mask, an fp32
    // softmax and P v out (litgpt/model.py at 2b195c7f and 916a84ca, the config hub's Gemma 2
    // rows; torchtune's Gemma2Attention likewise, torchtune/models/gemma2/_attention.py); the
    // inherited `capped_attention::materialized`. The LoRA model's forward returns the chunked
    // logits before the final cap (litgpt/lora.py `GPT.forward`, `lm_head_chunk_size > 0`), so
    // the fine-tuning loop trains on uncapped logits
    caps_logits = false;
  }
};

/// torchtune's single-device LoRA/QLoRA and full recipes: LitGPT's modules with separate q, k
/// and v projections (torchtune/modules/attention.py), the output projection over the whole
/// sequence, the logits deleted once the loss has them (`del logits` in the recipes), and QLoRA
/// through torchao's NF4 on the adapted linears only (the output projection stays bf16).
struct torchtune : litgpt {
  constexpr torchtune() {
    name = "torchtune";
    fused_qkv = false;
    lora_zero_pad = false;
    head_chunk = 0;
    keep_logits = false;
    fp32_outputs = false;
    quantizes_head = false;
    fp16_quant_state = false;
    separate_head = false;  // a tied model's `TiedLinear` (torchtune/modules/tied_linear.py)
    // Gemma 2: `Gemma2FinalNorm` caps the final norm's h-wide output, not the logits
    // (torchtune/models/gemma2/_component_builders.py; its three small kernels are not counted)
    caps_logits = false;
  }
};

}  // namespace strata::recipes

namespace strata::frameworks {

/// The rules of `recipes::litgpt` and `recipes::torchtune` as values.
inline constexpr recipe litgpt = recipes::litgpt{};
inline constexpr recipe torchtune = recipes::torchtune{};

}  // namespace strata::frameworks
