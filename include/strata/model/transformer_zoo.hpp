#pragma once
/// @file model/transformer_zoo.hpp
/// @brief Transformers with their published dimensions.
///
/// GPT-2 (Radford et al. 2019: vocabulary 50257, 1024 positions, tied); the GPT models of
/// Narayanan et al. SC'21 Table 1 (vocabulary 51200, sequence 2048); GPT-3 175B (Brown et al.
/// 2020 Table 2.1); BERT (Devlin et al. 2019; token-type embeddings, pooler and MLM transform
/// not modelled: 0.7 % of BERT-base); Llama 2 (Touvron et al. 2023), Llama 3 (Meta 2024:
/// grouped-query attention with 8 KV heads, vocabulary 128256) and Mixtral 8x7B (Jiang et al.
/// 2024: 8 experts, top-2), each from its released configuration.
/// @code
/// static_assert(strata::zoo::gpt2_124m().parameters() == 124'439'808);
/// @endcode

#include "strata/model/transformer.hpp"

namespace strata::zoo {

namespace detail {
constexpr transformer gpt(std::string_view name, int l, int h, int a, int vocab = 50257,
                          int seq = 1024) {
  return {.name = name, .layers = l, .hidden = h, .heads = a, .vocabulary = vocab, .sequence = seq};
}
constexpr transformer llama(std::string_view name, int l, int h, int a, int kv, int f, int vocab,
                            int seq) {
  return {.name = name,
          .layers = l,
          .hidden = h,
          .heads = a,
          .kv_heads = kv,
          .ffn = f,
          .vocabulary = vocab,
          .sequence = seq,
          .mlp = mlp_kind::swiglu,
          .norm = norm_kind::rms_norm,
          .positions = position_kind::rotary,
          .tied = false,
          .bias = false,
          .dropout = false};
}
constexpr transformer sc21(std::string_view name, int l, int h, int a) {
  return gpt(name, l, h, a, 51200, 2048);
}
}  // namespace detail

[[nodiscard]] constexpr transformer gpt2_124m() { return detail::gpt("GPT-2 124M", 12, 768, 12); }
[[nodiscard]] constexpr transformer gpt2_355m() { return detail::gpt("GPT-2 355M", 24, 1024, 16); }
[[nodiscard]] constexpr transformer gpt2_774m() { return detail::gpt("GPT-2 774M", 36, 1280, 20); }
[[nodiscard]] constexpr transformer gpt2_1_5b() { return detail::gpt("GPT-2 1.5B", 48, 1600, 25); }

/// GPT-3 175B: 96 layers, h = 12288, 96 heads, context 2048.
[[nodiscard]] constexpr transformer gpt3_175b() {
  return detail::gpt("GPT-3 175B", 96, 12288, 96, 50257, 2048);
}

// Narayanan et al. SC'21 Table 1.
[[nodiscard]] constexpr transformer gpt_1_7b() { return detail::sc21("GPT 1.7B", 24, 2304, 24); }
[[nodiscard]] constexpr transformer gpt_3_6b() { return detail::sc21("GPT 3.6B", 30, 3072, 32); }
[[nodiscard]] constexpr transformer gpt_7_5b() { return detail::sc21("GPT 7.5B", 36, 4096, 32); }
[[nodiscard]] constexpr transformer gpt_18b() { return detail::sc21("GPT 18B", 40, 6144, 48); }
[[nodiscard]] constexpr transformer gpt_39b() { return detail::sc21("GPT 39B", 48, 8192, 64); }
[[nodiscard]] constexpr transformer gpt_76b() { return detail::sc21("GPT 76B", 60, 10240, 80); }
[[nodiscard]] constexpr transformer gpt_145b() { return detail::sc21("GPT 145B", 80, 12288, 96); }
[[nodiscard]] constexpr transformer gpt_310b() { return detail::sc21("GPT 310B", 96, 16384, 128); }
[[nodiscard]] constexpr transformer gpt_530b() { return detail::sc21("GPT 530B", 105, 20480, 128); }
[[nodiscard]] constexpr transformer gpt_1t() { return detail::sc21("GPT 1T", 128, 25600, 160); }

[[nodiscard]] constexpr transformer bert_base() {
  return detail::gpt("BERT-base", 12, 768, 12, 30522, 512);
}
[[nodiscard]] constexpr transformer bert_large() {
  return detail::gpt("BERT-large", 24, 1024, 16, 30522, 512);
}

[[nodiscard]] constexpr transformer llama2_7b() {
  return detail::llama("Llama-2 7B", 32, 4096, 32, 32, 11008, 32000, 4096);
}
[[nodiscard]] constexpr transformer llama2_13b() {
  return detail::llama("Llama-2 13B", 40, 5120, 40, 40, 13824, 32000, 4096);
}
[[nodiscard]] constexpr transformer llama2_70b() {
  return detail::llama("Llama-2 70B", 80, 8192, 64, 8, 28672, 32000, 4096);
}
[[nodiscard]] constexpr transformer llama3_8b() {
  return detail::llama("Llama-3 8B", 32, 4096, 32, 8, 14336, 128256, 8192);
}
[[nodiscard]] constexpr transformer llama3_70b() {
  return detail::llama("Llama-3 70B", 80, 8192, 64, 8, 28672, 128256, 8192);
}
[[nodiscard]] constexpr transformer llama3_405b() {
  return detail::llama("Llama-3 405B", 126, 16384, 128, 8, 53248, 128256, 8192);
}
/// Llama-3.2 1B: tied embeddings (its released config), 1,235,814,400 parameters.
[[nodiscard]] constexpr transformer llama3_2_1b() {
  transformer m = detail::llama("Llama-3.2 1B", 16, 2048, 32, 8, 8192, 128256, 131072);
  m.tied = true;
  return m;
}
/// TinyLlama 1.1B: 22 layers, 4 key/value heads, 1,100,048,384 parameters.
[[nodiscard]] constexpr transformer tinyllama_1_1b() {
  return detail::llama("TinyLlama 1.1B", 22, 2048, 32, 4, 5632, 32000, 2048);
}
/// Qwen2.5 0.5B: Q/K/V biases only, tied embeddings, 494,032,768 parameters.
[[nodiscard]] constexpr transformer qwen2_5_0_5b() {
  transformer m = detail::llama("Qwen2.5 0.5B", 24, 896, 14, 2, 4864, 151936, 32768);
  m.tied = true;
  m.qkv_bias = true;
  return m;
}
/// Qwen2.5 7B: 28 layers, 4 key/value heads, Q/K/V biases, 7,615,616,512 parameters.
[[nodiscard]] constexpr transformer qwen2_5_7b() {
  transformer m = detail::llama("Qwen2.5 7B", 28, 3584, 28, 4, 18944, 152064, 32768);
  m.qkv_bias = true;
  return m;
}
/// Mistral 7B (v0.1): Llama's architecture with 8 key/value heads, 7,241,732,096 parameters.
[[nodiscard]] constexpr transformer mistral_7b() {
  return detail::llama("Mistral 7B", 32, 4096, 32, 8, 14336, 32000, 32768);
}
[[nodiscard]] constexpr transformer mixtral_8x7b() {
  transformer m = detail::llama("Mixtral 8x7B", 32, 4096, 32, 8, 14336, 32000, 32768);
  m.experts = 8;
  m.top_k = 2;
  return m;
}

}  // namespace strata::zoo
