#pragma once
/// @file io/hf_config.hpp
/// @brief A transformer from a Hugging Face `config.json`: the dimensions its `model_type`'s
/// modeling code builds, every field the file leaves out taken from that architecture's
/// configuration class default (cited per architecture below), `tied`, `bias` and `dropout`
/// set explicitly from the file (never strata's GPT-2 defaults).
///
/// Two levels of refusal, both `plan_error`s that start with "hf_config: ":
///  - `read_hf_config` refuses what strata's `transformer` cannot count (multi-head latent
///    attention, shared experts, dense layers in an MoE, attention biases without MLP biases, an
///    unknown `model_type`). What it returns has the checkpoint's exact parameter count.
///  - `transformer_from_hf_config` (the form a plan uses) also refuses what the count knows but
///    the lowering (`lower/transformer.hpp`) does not run yet: a sliding window shorter than the
///    training sequence (`hf_options::sequence`; within the window attention is full). A
///    head_dim other than hidden / heads (Q and the output projection heads x head_dim wide),
///    Q/K norms, Gemma's norms after each block, DeepSeek's latent attention and dense first
///    layers are lowered (latent attention as Megatron-Core runs it, refused for the
///    `huggingface` recipe's plans: `parallel::check_model_setup`).
///
/// Not priced, accepted as they are: a partial rotary embedding (GPT-NeoX, Phi-4-mini: the
/// rotary kernels priced over the whole head), fused QKV or gate/up projections (the recipe's
/// module style decides the GEMM split), Gemma's embedding scale and Granite's scalar
/// multipliers (one elementwise multiply each), RoPE scaling (frequencies only). Gemma 2's
/// soft-capping is read (`transformer::attention_softcap`, `final_softcap`) and run as the
/// recipe runs it (`frameworks::recipe::capped_attention`). Configs shipped
/// with strata live in `tools/hf_configs/` (docs/hf_configs.md), found by `hf_config_dirs`.
/// @code
/// auto m = strata::io::transformer_from_hf_config(nlohmann::json::parse(R"({
///   "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
///   "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
///   "vocab_size": 128256, "tie_word_embeddings": true})"));
/// // m.parameters() == 1'235'814'400 (Llama-3.2-1B)
/// @endcode

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/io/json.hpp"
#include "strata/model/transformer.hpp"

#if defined(__linux__)
#include <unistd.h>
#endif

namespace strata::io {

/// How a configuration will be used.
struct hf_options {
  /// The longest sequence the model will be trained at; 0 means its max_position_embeddings. A
  /// sliding window at least this long changes nothing, a shorter one is refused.
  int sequence = 0;
};

/// What `read_hf_config` found.
struct hf_model {
  transformer net;
  std::string name;  ///< `_name_or_path`, else the name given, else the model_type
  std::string model_type;
  int sliding_window = 0;  ///< the window of the layers that slide (0: none does)
};

namespace detail {

/// The `model_type`s the reader knows, with the class `architectures` names for each (the
/// causal language model: a classification head has other weights).
struct hf_arch_entry {
  const char* type;
  const char* causal_lm;
};
inline constexpr hf_arch_entry hf_architectures[] = {
    {"llama", "LlamaForCausalLM"},
    {"mistral", "MistralForCausalLM"},
    {"mixtral", "MixtralForCausalLM"},
    {"qwen2", "Qwen2ForCausalLM"},
    {"qwen2_moe", "Qwen2MoeForCausalLM"},
    {"qwen3", "Qwen3ForCausalLM"},
    {"qwen3_moe", "Qwen3MoeForCausalLM"},
    {"gemma", "GemmaForCausalLM"},
    {"gemma2", "Gemma2ForCausalLM"},
    {"gemma3_text", "Gemma3ForCausalLM"},
    {"phi3", "Phi3ForCausalLM"},
    {"gpt2", "GPT2LMHeadModel"},
    {"gpt_neox", "GPTNeoXForCausalLM"},
    {"olmo2", "Olmo2ForCausalLM"},
    {"granite", "GraniteForCausalLM"},
    {"deepseek_v2", "DeepseekV2ForCausalLM"},
    {"deepseek_v3", "DeepseekV3ForCausalLM"},
};

inline std::string hf_supported() {
  std::string out;
  for (const auto& a : hf_architectures) out += (out.empty() ? "" : ", ") + std::string(a.type);
  return out;
}

[[noreturn]] inline void hf_fail(const std::string& what) {
  throw plan_error("hf_config: " + what);
}

/// Stable storage for the names of transformers returned by value (`transformer::name` is a
/// view; `detail::intern`).
inline std::string_view hf_intern(const std::string& name) { return detail::intern(name); }

/// Reads fields of one configuration: a missing or null field is the default given.
struct hf_fields {
  const nlohmann::json& j;

  [[nodiscard]] bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  [[nodiscard]] int integer(const char* key, int fallback, int lo = 1) const {
    if (!has(key)) return fallback;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > (1LL << 30))
      hf_fail(std::string(key) + " must be an integer in [" + std::to_string(lo) + ", 2^30]");
    return v.get<int>();
  }
  [[nodiscard]] bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) hf_fail(std::string(key) + " must be true or false");
    return j[key].get<bool>();
  }
  [[nodiscard]] double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number()) hf_fail(std::string(key) + " must be a number");
    return j[key].get<double>();
  }
  [[nodiscard]] std::string text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) hf_fail(std::string(key) + " must be a string");
    return j[key].get<std::string>();
  }
  /// A soft-cap: `fallback` when the field is missing, none (0) when it is null (None), else a
  /// positive number.
  [[nodiscard]] double cap(const char* key, double fallback) const {
    if (!j.contains(key)) return fallback;
    if (j[key].is_null()) return 0;
    if (!j[key].is_number() || !(j[key].get<double>() > 0))
      hf_fail(std::string(key) + " must be a positive number or null");
    return j[key].get<double>();
  }
  /// A sliding window: `fallback` when the field is missing, none (0) when it is null (None).
  [[nodiscard]] int window(const char* key, int fallback) const {
    if (!j.contains(key)) return fallback;
    return j[key].is_null() ? 0 : integer(key, fallback, 0);
  }
  /// Whether `layer_types` (when given) lists a sliding layer; `fallback` when it is not given.
  [[nodiscard]] bool any_sliding_layer(bool fallback) const {
    if (!has("layer_types")) return fallback;
    if (!j["layer_types"].is_array()) hf_fail("layer_types must be an array of strings");
    for (const auto& t : j["layer_types"])
      if (t.is_string() && t.get<std::string>() == "sliding_attention") return true;
    return false;
  }
};

/// An architecture's configuration-class defaults (the fields the reader needs).
struct hf_defaults {
  int vocab, hidden, ffn, layers, heads;
  int kv = 0;        ///< 0: the query heads
  int head_dim = 0;  ///< 0: hidden / heads
  int max_pos = 2048;
  bool tied = false;
  int sliding = 0;  ///< sliding_window's default (0: None)
};

/// Refuses a `model_type` the reader does not know (Gemma 3's multimodal model among them) and
/// `architectures` that name another class than the type's causal language model.
inline void hf_check_model_type(const hf_fields& f, const std::string& type) {
  const hf_arch_entry* arch = nullptr;
  for (const auto& a : hf_architectures)
    if (type == a.type) arch = &a;
  if (type == "gemma3")
    hf_fail(
        "gemma3 is Gemma 3's image-and-text model (a SigLIP vision tower and a projector strata "
        "does not model); give its text_config with model_type gemma3_text");
  if (!arch)
    hf_fail("unknown model_type \"" + cut(type) + "\" (supported: " + hf_supported() + ")");
  if (f.has("architectures")) {
    if (!f.j["architectures"].is_array()) hf_fail("architectures must be an array of class names");
    for (const auto& c : f.j["architectures"])
      if (!c.is_string() || c.get<std::string>() != arch->causal_lm)
        hf_fail("architectures names " + cut(c.dump()) + ", but strata reads model_type " + type +
                " as " + arch->causal_lm + " (the causal language model)");
  }
}

/// The configuration class's defaults of `type` (src/transformers/models/<type>/
/// configuration_*.py).
inline hf_defaults hf_defaults_of(const std::string& type) {
  if (type == "llama" || type == "granite") {
    // LlamaConfig / GraniteConfig: vocab 32000, hidden 4096, intermediate 11008, 32 layers,
    // 32 heads, num_key_value_heads None (= heads), head_dim None (= hidden / heads),
    // max_position_embeddings 2048, tie_word_embeddings False
    return {32000, 4096, 11008, 32, 32};
  } else if (type == "mistral") {
    // MistralConfig: intermediate 14336, 8 KV heads, max_position_embeddings 4096 * 32,
    // sliding_window 4096, tie_word_embeddings False
    return {32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, false, 4096};
  } else if (type == "mixtral") {
    // MixtralConfig: as Mistral with sliding_window None, 8 local experts, 2 per token
    return {32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, false, 0};
  } else if (type == "qwen2") {
    // Qwen2Config: vocab 151936, intermediate 22016, 32 KV heads, max_position_embeddings 32768,
    // use_sliding_window False, tie_word_embeddings False
    return {151936, 4096, 22016, 32, 32, 32, 0, 32768};
  } else if (type == "qwen2_moe") {
    // Qwen2MoeConfig: hidden 2048, intermediate 5632, 24 layers, 16 heads, 16 KV heads,
    // moe_intermediate_size 1408, shared_expert_intermediate_size 5632, 60 experts, 4 per token
    return {151936, 2048, 5632, 24, 16, 16, 0, 32768};
  } else if (type == "qwen3") {
    // Qwen3Config: as Qwen2 with head_dim 128
    return {151936, 4096, 22016, 32, 32, 32, 128, 32768};
  } else if (type == "qwen3_moe") {
    // Qwen3MoeConfig: hidden 2048, intermediate 6144, 24 layers, 32 heads, 4 KV heads, no
    // head_dim field (the modeling code's getattr falls back to hidden / heads),
    // moe_intermediate_size 768, 128 experts, 8 per token
    return {151936, 2048, 6144, 24, 32, 4, 0, 32768};
  } else if (type == "gemma") {
    // GemmaConfig: vocab 256000, hidden 3072, intermediate 24576, 28 layers, 16 heads,
    // 16 KV heads, head_dim 256, max_position_embeddings 8192, tie_word_embeddings True
    return {256000, 3072, 24576, 28, 16, 16, 256, 8192, true};
  } else if (type == "gemma2") {
    // Gemma2Config: vocab 256000, hidden 2304, intermediate 9216, 26 layers, 8 heads, 4 KV
    // heads, head_dim 256, max_position_embeddings 8192, tied, sliding_window 4096 (every
    // other layer)
    return {256000, 2304, 9216, 26, 8, 4, 256, 8192, true, 4096};
  } else if (type == "gemma3_text") {
    // Gemma3TextConfig: vocab 262208, hidden 2304, intermediate 9216, 26 layers, 8 heads, 4 KV
    // heads, head_dim 256, max_position_embeddings 131072, tied, sliding_window 4096 (five
    // layers in six)
    return {262208, 2304, 9216, 26, 8, 4, 256, 131072, true, 4096};
  } else if (type == "phi3") {
    // Phi3Config: vocab 32064, hidden 3072, intermediate 8192, 32 layers, 32 heads, KV heads
    // None (= heads), max_position_embeddings 4096, tie_word_embeddings False, sliding_window
    // None
    return {32064, 3072, 8192, 32, 32, 0, 0, 4096};
  } else if (type == "gpt2") {
    // GPT2Config: vocab 50257, n_positions 1024, n_embd 768, n_layer 12, n_head 12, n_inner
    // None (= 4 n_embd); PretrainedConfig's tie_word_embeddings True
    return {50257, 768, 0, 12, 12, 0, 0, 1024, true};
  } else if (type == "gpt_neox") {
    // GPTNeoXConfig: vocab 50432, hidden 6144, intermediate 24576, 44 layers, 64 heads,
    // max_position_embeddings 2048, tie_word_embeddings False, attention_bias True
    return {50432, 6144, 24576, 44, 64, 0, 0, 2048};
  } else if (type == "olmo2") {
    // Olmo2Config: vocab 50304, hidden 4096, intermediate 11008, 32 layers, 32 heads, KV heads
    // None (= heads), max_position_embeddings 2048, tie_word_embeddings False
    return {50304, 4096, 11008, 32, 32};
  }
  if (type == "deepseek_v2") {
    // DeepseekV2Config: vocab 32000, hidden 4096, intermediate 11008 (the dense layers), 32
    // layers, 32 heads, KV heads None (= heads), max_position_embeddings 2048, untied
    return {32000, 4096, 11008, 32, 32};
  }
  // DeepseekV3Config: vocab 129280, hidden 7168, intermediate 18432, 61 layers, 128 heads, 128
  // KV heads, max_position_embeddings 4096, untied
  return {129280, 7168, 18432, 61, 128, 128, 0, 4096};
}

/// The dimensions (hidden, layers, heads, vocabulary, positions, KV heads, FFN, head_dim),
/// each field the file leaves out taken from `d`.
inline void hf_dimensions(const hf_fields& f, const hf_defaults& d, const std::string& type,
                          bool llama_like, hf_model& out) {
  transformer& m = out.net;
  const bool gpt2 = type == "gpt2";
  m.hidden = f.integer(gpt2 ? "n_embd" : "hidden_size", d.hidden);
  m.layers = f.integer(gpt2 ? "n_layer" : "num_hidden_layers", d.layers);
  m.heads = f.integer(gpt2 ? "n_head" : "num_attention_heads", d.heads);
  m.vocabulary = f.integer("vocab_size", d.vocab);
  m.sequence = f.integer(gpt2 ? "n_positions" : "max_position_embeddings", d.max_pos);
  const int kv = llama_like ? f.integer("num_key_value_heads", d.kv == 0 ? m.heads : d.kv) : 0;
  m.kv_heads = kv == m.heads ? 0 : kv;
  m.ffn = gpt2 ? f.integer("n_inner", 4 * m.hidden) : f.integer("intermediate_size", d.ffn);
  if (m.ffn == 4 * m.hidden) m.ffn = 0;  // strata's 4h default, the same count
  if (m.heads % std::max(kv, 1) != 0)
    hf_fail("num_key_value_heads (" + std::to_string(kv) + ") must divide num_attention_heads (" +
            std::to_string(m.heads) + ")");

  const bool default_head_dim = d.head_dim == 0;
  const int head_dim =
      f.integer("head_dim", default_head_dim ? (m.heads > 0 ? m.hidden / m.heads : 0) : d.head_dim);
  if (default_head_dim && !f.has("head_dim") && m.hidden % m.heads != 0)
    hf_fail("num_attention_heads (" + std::to_string(m.heads) + ") must divide hidden_size (" +
            std::to_string(m.hidden) + ")");
  // Q and the output projection heads x head_dim wide (Gemma, Qwen3 0.6B, Mistral NeMo)
  if (static_cast<long long>(head_dim) * m.heads != m.hidden) m.head_size = head_dim;
}

/// The biases each modeling file builds; refuses biases on only some linear layers.
inline void hf_biases(const hf_fields& f, const std::string& type, transformer& m) {
  m.bias = false;
  m.qkv_bias = false;
  if (type == "gpt2") {
    m.bias = true;  // Conv1D layers with biases
  } else if (type == "gpt_neox") {
    if (!f.flag("attention_bias", true))
      hf_fail(
          "gpt_neox with attention_bias false keeps the MLP's biases, which strata does not "
          "model yet (its bias flag covers every linear layer)");
    m.bias = true;
  } else if (type == "qwen2" || type == "qwen2_moe") {
    m.qkv_bias = type == "qwen2" || f.flag("qkv_bias", true);  // Q, K, V biased; o_proj not
  } else if (type == "llama" || type == "granite") {
    const bool attention = f.flag("attention_bias", false), mlp = f.flag("mlp_bias", false);
    if (attention != mlp)
      hf_fail(type + " with attention_bias " + (attention ? "true" : "false") + " and mlp_bias " +
              (mlp ? "true" : "false") +
              " biases only some linear layers, which strata does not model yet");
    m.bias = attention;
  } else if (type != "mistral" && type != "mixtral" && type != "phi3") {
    // qwen3, qwen3_moe, gemma*, olmo2: attention_bias (default False) biases q, k, v and o
    if (f.flag("attention_bias", false))
      hf_fail(type +
              " with attention_bias true biases the attention only, which strata does not "
              "model yet");
  }
}

/// Whether the modeling code applies dropout in training: any dropout probability above 0.
inline bool hf_dropout(const hf_fields& f, const std::string& type) {
  double p = 0;
  if (type == "gpt2") {
    for (const char* k : {"resid_pdrop", "embd_pdrop", "attn_pdrop"})
      p = std::max(p, f.number(k, 0.1));  // GPT2Config: 0.1 each
  } else {
    for (const char* k : {"attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop"})
      p = std::max(p, f.number(k, 0.0));  // 0.0 in every other configuration class
  }
  return p > 0;
}

/// The mixture of experts of Mixtral, Qwen's and DeepSeek's MoE models: routed experts, Qwen2-MoE's
/// gated shared expert, DeepSeek's shared experts and dense first layers; refuses Qwen's dense
/// layers among the MoE layers.
inline void hf_experts(const hf_fields& f, const std::string& type, transformer& m) {
  if (type == "mixtral") {
    m.experts = f.integer("num_local_experts", 8);
    m.top_k = f.integer("num_experts_per_tok", 2);
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    // DeepseekV2/V3Config: n_routed_experts 64 / 256, n_shared_experts 2 / 1,
    // moe_intermediate_size 1407 / 2048, first_k_dense_replace 0 / 3, num_experts_per_tok None
    // (V2: its modeling code needs it) / 8; the first_k_dense_replace first layers dense with
    // intermediate_size, the others MoE with the shared experts as one MLP
    // (modeling_deepseek_v3.py: `DeepseekV3MLP(config, intermediate_size=moe_intermediate_size
    // * n_shared_experts)`)
    const bool v3 = type == "deepseek_v3";
    if (!v3 && !f.has("num_experts_per_tok"))
      hf_fail(
          "deepseek_v2: num_experts_per_tok is None by default, which its modeling code "
          "cannot route with: give it");
    const int moe_f = f.integer("moe_intermediate_size", v3 ? 2048 : 1407);
    m.dense_ffn = m.ffn;  // intermediate_size, read with the dimensions
    m.experts = f.integer("n_routed_experts", v3 ? 256 : 64);
    m.top_k = f.integer("num_experts_per_tok", 8);
    m.ffn = moe_f;
    m.shared_ffn = f.integer("n_shared_experts", v3 ? 1 : 2, 0) * moe_f;
    m.dense_layers = f.integer("first_k_dense_replace", v3 ? 3 : 0, 0);
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    const bool q2 = type == "qwen2_moe";
    // Qwen2MoeSparseMoeBlock: a shared expert of shared_expert_intermediate_size (default 5632)
    // scaled by sigmoid(shared_expert_gate(x)), a Linear(hidden, 1) without bias
    m.shared_ffn = q2 ? f.integer("shared_expert_intermediate_size", 5632, 0) : 0;
    m.shared_gate = m.shared_ffn > 0;
    const bool dense_layers = f.integer("decoder_sparse_step", 1) != 1 ||
                              (f.has("mlp_only_layers") && f.j["mlp_only_layers"].is_array() &&
                               !f.j["mlp_only_layers"].empty());
    if (dense_layers)
      hf_fail(type +
              " mixes dense and MoE layers (mlp_only_layers, decoder_sparse_step), which "
              "strata does not model yet");
    m.experts = f.integer("num_experts", q2 ? 60 : 128);
    m.top_k = f.integer("num_experts_per_tok", q2 ? 4 : 8);
    m.ffn = f.integer("moe_intermediate_size", q2 ? 1408 : 768);
  }
  if (m.top_k > m.experts) hf_fail("num_experts_per_tok must not exceed the experts");
}

/// Multi-head latent attention (DeepSeek-V2/V3; DeepseekV2/V3Config: kv_lora_rank 512,
/// q_lora_rank 1536 (null: a plain q_proj, DeepSeek-V2-Lite), qk_rope_head_dim 64,
/// qk_nope_head_dim 128, v_head_dim 128); attention biases are refused with the other
/// architectures' (`hf_biases`).
inline void hf_latent_attention(const hf_fields& f, const std::string& type, transformer& m) {
  if (type != "deepseek_v2" && type != "deepseek_v3") return;
  m.kv_lora_rank = f.integer("kv_lora_rank", 512);
  m.q_lora_rank = f.j.contains("q_lora_rank") && f.j["q_lora_rank"].is_null()
                      ? 0
                      : f.integer("q_lora_rank", 1536);
  m.qk_rope_dim = f.integer("qk_rope_head_dim", 64);
  m.qk_nope_dim = f.integer("qk_nope_head_dim", 128);
  m.v_head_dim = f.integer("v_head_dim", 128);
}

/// The norms beyond the two before each block: Q/K norms (Qwen3, Gemma 3 per head; OLMo 2 over
/// the projections), Gemma 2 and 3's norms after the attention and the MLP.
inline void hf_extra_norms(const std::string& type, hf_model& out) {
  transformer& m = out.net;
  if (type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text")
    m.qk_norm = qk_norm_kind::per_head;  // q_norm, k_norm over head_dim
  else if (type == "olmo2")
    m.qk_norm = qk_norm_kind::per_width;  // q_norm, k_norm over the projections
  // post_attention_layernorm, post_feedforward_layernorm
  if (type == "gemma2" || type == "gemma3_text") m.sandwich_norms = true;
}

/// Soft-capping of the attention scores and the logits: Gemma2Config's attn_logit_softcapping
/// 50.0 and final_logit_softcapping 30.0, Gemma3TextConfig's None and None.
inline void hf_softcaps(const hf_fields& f, const std::string& type, transformer& m) {
  if (type != "gemma2" && type != "gemma3_text") return;
  const bool gemma2 = type == "gemma2";
  m.attention_softcap = f.cap("attn_logit_softcapping", gemma2 ? 50.0 : 0.0);
  m.final_softcap = f.cap("final_logit_softcapping", gemma2 ? 30.0 : 0.0);
}

/// The window of the layers that slide one (0: none does).
inline int hf_sliding_window(const hf_fields& f, const hf_defaults& d, const std::string& type,
                             int layers) {
  if (type == "mistral" || type == "mixtral" || type == "phi3") {
    return f.window("sliding_window", d.sliding);
  } else if (type == "gemma2" || type == "gemma3_text") {
    return f.any_sliding_layer(true) ? f.window("sliding_window", d.sliding) : 0;
  } else if (type == "qwen2" || type == "qwen2_moe" || type == "qwen3" || type == "qwen3_moe") {
    // layers >= max_window_layers slide when use_sliding_window (Qwen2Config.__post_init__)
    const bool on = f.flag("use_sliding_window", false);
    const bool some = f.any_sliding_layer(f.integer("max_window_layers", 28, 0) < layers);
    return on && some ? f.window("sliding_window", 4096) : 0;
  }
  return 0;
}

}  // namespace detail

/// The model a Hugging Face `config.json` describes, with the exact parameter count of its
/// checkpoint; `fallback_name` names it when the file has no `_name_or_path`.
inline hf_model read_hf_config(const nlohmann::json& j, const std::string& fallback_name = {}) {
  using detail::hf_fail;
  if (!j.is_object()) hf_fail("a config.json must be a JSON object");
  const detail::hf_fields f{j};
  if (!f.has("model_type")) hf_fail("no model_type (supported: " + detail::hf_supported() + ")");
  const std::string type = f.text("model_type", "");
  detail::hf_check_model_type(f, type);

  hf_model out;
  out.model_type = type;
  out.name = f.text("_name_or_path", "");
  if (out.name.empty()) out.name = fallback_name.empty() ? type : fallback_name;
  transformer& m = out.net;
  const bool llama_like = type != "gpt2" && type != "gpt_neox";

  // ---- the configuration classes' defaults (src/transformers/models/<type>/configuration_*.py)
  const detail::hf_defaults d = detail::hf_defaults_of(type);
  // ---- dimensions
  detail::hf_dimensions(f, d, type, llama_like, out);
  // ---- layer kinds
  m.mlp = llama_like ? mlp_kind::swiglu : mlp_kind::gelu;  // gated (SiLU or GELU gate) or not
  m.norm = llama_like ? norm_kind::rms_norm : norm_kind::layer_norm;
  m.positions = type == "gpt2" ? position_kind::learned : position_kind::rotary;
  m.tied = f.flag("tie_word_embeddings", d.tied);
  // biases: what each modeling file builds
  detail::hf_biases(f, type, m);
  // dropout: any dropout probability the modeling code applies in training
  m.dropout = detail::hf_dropout(f, type);
  // ---- mixtures of experts, latent attention
  detail::hf_experts(f, type, m);
  detail::hf_latent_attention(f, type, m);
  // ---- norms beyond the two before each block
  detail::hf_extra_norms(type, out);
  detail::hf_softcaps(f, type, m);
  // ---- sliding windows: the window of the layers that use one
  out.sliding_window = detail::hf_sliding_window(f, d, type, m.layers);

  try {
    m.check();
  } catch (const plan_error& e) {
    hf_fail(e.what());
  }
  m.name = detail::hf_intern(out.name);
  return out;
}

/// The transformer of a Hugging Face `config.json`, ready for a plan: `read_hf_config`'s model,
/// refused when it needs what the lowering does not price (the first reason) or slides a window
/// shorter than `o.sequence` (its max_position_embeddings when 0).
inline transformer transformer_from_hf_config(const nlohmann::json& j, hf_options o = {},
                                              const std::string& fallback_name = {}) {
  hf_model h = read_hf_config(j, fallback_name);
  try {  // what the lowering does not run
    h.net.check_lowered();
  } catch (const plan_error& e) {
    detail::hf_fail(h.model_type + ": " + e.what());
  }
  const int seq = o.sequence > 0 ? o.sequence : h.net.sequence;
  if (h.sliding_window > 0 && h.sliding_window < seq)
    detail::hf_fail(h.model_type + " slides a window of " + std::to_string(h.sliding_window) +
                    " tokens (sliding_window) over a " + std::to_string(seq) +
                    "-token sequence, which strata's lowering does not price yet (its attention "
                    "is full causal): train at " +
                    std::to_string(h.sliding_window) + " tokens or fewer (training.sequence)");
  return h.net;
}

/// Reads a `config.json` file; its name, without `_name_or_path`, is the file's stem.
inline nlohmann::json read_hf_config_file(const std::filesystem::path& path) {
  return detail::parse_json(detail::read_file(path.string(), "hf_config", "config file"));
}
inline transformer transformer_from_hf_config(const std::filesystem::path& path,
                                              hf_options o = {}) {
  return transformer_from_hf_config(read_hf_config_file(path), o, path.stem().string());
}

// ---- shipped configurations ---------------------------------------------------------------

/// The file of model `id` among the shipped configurations: "org/name" -> "org--name.json".
inline std::string hf_config_file_name(std::string_view id) {
  std::string out;
  for (const char c : id) {
    if (c == '/')
      out += "--";
    else
      out += c;
  }
  return out + ".json";
}

/// The folders searched for shipped configurations, in order: $STRATA_HF_CONFIGS, the folder
/// compiled in as STRATA_HF_CONFIGS_DIR, ./tools/hf_configs, and next to the running program
/// (on Linux): ../share/strata/hf_configs (installed), ../tools/hf_configs and
/// ../../tools/hf_configs (a build folder inside the source tree).
inline std::vector<std::filesystem::path> hf_config_dirs() {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  std::error_code ec;
  auto add = [&](const fs::path& p) {
    if (!p.empty() && fs::is_directory(p, ec)) out.push_back(p);
  };
  if (const char* env = std::getenv("STRATA_HF_CONFIGS")) add(env);
#ifdef STRATA_HF_CONFIGS_DIR
  add(STRATA_HF_CONFIGS_DIR);
#endif
  add(fs::path("tools") / "hf_configs");
#if defined(__linux__)
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path bin = exe.parent_path();
    add(bin / ".." / "share" / "strata" / "hf_configs");
    add(bin / ".." / "tools" / "hf_configs");
    add(bin / ".." / ".." / "tools" / "hf_configs");
  }
#endif
  return out;
}

/// The model ids of the shipped configurations (from their file names), sorted.
inline std::vector<std::string> hf_shipped_ids() {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& dir : hf_config_dirs()) {
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::string n = e.path().filename().string();
      const auto sep = n.find("--");
      if (e.path().extension() != ".json" || sep == std::string::npos) continue;
      n = n.substr(0, n.size() - 5);
      n.replace(sep, 2, "/");
      if (std::find(ids.begin(), ids.end(), n) == ids.end()) ids.push_back(n);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// The shipped `config.json` of model `id` (no network); an unknown id is a plan_error listing
/// the closest shipped ids.
inline nlohmann::json hf_shipped_config(std::string_view id) {
  const auto dirs = hf_config_dirs();
  if (dirs.empty())
    detail::hf_fail("no shipped configurations found for hf_id \"" + detail::cut(id) +
                    "\" (set STRATA_HF_CONFIGS to strata's tools/hf_configs folder)");
  const std::string file = hf_config_file_name(id);
  if (id.find("..") == std::string_view::npos && id.find('\\') == std::string_view::npos &&
      std::count(id.begin(), id.end(), '/') == 1) {
    for (const auto& d : dirs) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(d / file, ec)) return read_hf_config_file(d / file);
    }
  }
  auto ids = hf_shipped_ids();
  // ids compared in any case, their separators kept (they tell versions from sizes)
  auto lower = [](std::string x) {
    for (char& c : x)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return x;
  };
  const std::string want = lower(std::string(id));
  std::stable_sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
    return detail::edit_distance(lower(a), want) < detail::edit_distance(lower(b), want);
  });
  std::string close;
  for (std::size_t i = 0; i < ids.size() && i < 5; ++i) close += (i ? ", " : "") + ids[i];
  detail::hf_fail("unknown hf_id \"" + detail::cut(id) + "\" (closest shipped: " + close +
                  "; or give the file as {\"hf_config\": \"path/to/config.json\"})");
}

/// `transformer_from_hf_config` of a shipped configuration, named `id`.
inline transformer transformer_from_hf_id(std::string_view id, hf_options o = {}) {
  nlohmann::json j = hf_shipped_config(id);
  j["_name_or_path"] = std::string(id);
  return transformer_from_hf_config(j, o);
}

}  // namespace strata::io
