#pragma once
/// @file model/transformer.hpp
/// @brief A decoder (or encoder) transformer described by its published dimensions: attention
/// (multi-head, grouped-query, multi-query), MLP (GELU or SwiGLU, any width), LayerNorm or
/// RMSNorm, learned or rotary positions, tied or untied embeddings, and mixture-of-experts MLPs.
///
/// Counts are per layer and per token so that the parallel strategies can split them: attention
/// weights are h (2h + 2 kv d) (Q and the output projection are h x h, K and V are h x kv d with
/// d = h / heads); a GELU MLP is 2 h f, a SwiGLU MLP 3 h f (gate, up, down); an MoE layer holds
/// `experts` MLPs and a router of h x experts, and each token runs `top_k` of them.
/// @code
/// constexpr strata::transformer llama{.layers = 32, .hidden = 4096, .heads = 32, .ffn = 11008,
///                                     .vocabulary = 32000, .sequence = 4096,
///                                     .mlp = strata::mlp_kind::swiglu,
///                                     .norm = strata::norm_kind::rms_norm,
///                                     .positions = strata::position_kind::rotary,
///                                     .tied = false, .bias = false};
/// static_assert(llama.parameters() == 6'738'415'616);
/// @endcode

#include <string>
#include <string_view>

#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"

namespace strata {

enum class mlp_kind { gelu, swiglu };
enum class norm_kind { layer_norm, rms_norm };
enum class position_kind { learned, rotary };
/// Norms on the queries and keys before attention: per head (Qwen3, Gemma 3: one weight of the
/// head's width, shared by the heads) or over the whole projection (OLMo 2: q and k widths).
enum class qk_norm_kind { none, per_head, per_width };

/// The dimensions of a transformer language model.
struct transformer {
  std::string_view name = "transformer";
  int layers = 12;
  int hidden = 768;  ///< h
  int heads = 12;    ///< a, query heads
  int kv_heads = 0;  ///< key/value heads; 0 means `heads` (multi-head); 1 is multi-query
  int ffn = 0;       ///< MLP width f; 0 means 4h
  int vocabulary = 50257;
  int sequence = 1024;  ///< the longest sequence (size of a learned position table)
  mlp_kind mlp = mlp_kind::gelu;
  norm_kind norm = norm_kind::layer_norm;
  position_kind positions = position_kind::learned;
  bool tied = true;       ///< the output projection shares the embedding matrix
  bool bias = true;       ///< linear layers carry biases
  bool qkv_bias = false;  ///< Q, K and V carry biases even without `bias` (Qwen2)
  bool dropout = true;    ///< dropout after attention, the projections and the embedding
  int experts = 1;        ///< MLPs per layer (> 1: every layer is a mixture of experts)
  int top_k = 1;          ///< experts each token runs
  double capacity = 1;    ///< capacity factor: tokens an expert accepts / its even share
  /// How unevenly a step's routed tokens fall on the experts: the coefficient of variation of
  /// their counts (0: every expert gets its even share). Each expert runs its own GEMMs, whose
  /// tile waves round up per expert, so an uneven split costs time at the same token total. An
  /// untrained router is far from even: 0.38 on average over the layers of two H100 traces of a
  /// Mixtral-style model at initialisation (test/data/h100_moe_expert_gemms.csv).
  double expert_load_cv = 0;
  // The fields below describe models read from Hugging Face configurations
  // (`io/hf_config.hpp`). Their defaults leave every count above unchanged. The lowering
  // (`lower/transformer.hpp`) runs the head width, Q/K norms, Gemma's extra norms and the shared
  // expert, latent attention and the dense first layers (`first_dense`).
  /// Width of one attention head when it is not hidden / heads (Gemma, Qwen3 0.6B, Mistral NeMo:
  /// Q is then heads x head_dim wide); 0 means hidden / heads.
  int head_size = 0;
  qk_norm_kind qk_norm = qk_norm_kind::none;  ///< norms on Q and K (Qwen3, OLMo 2, Gemma 3)
  /// Norms after the attention and the MLP as well as before them (Gemma 2 and 3: four a layer).
  bool sandwich_norms = false;
  /// An always-on SwiGLU MLP of this width beside the routed experts of each MoE layer
  /// (Qwen2-MoE's `shared_expert_intermediate_size`; DeepSeek's `n_shared_experts` x
  /// `moe_intermediate_size`); 0: none.
  int shared_ffn = 0;
  bool shared_gate = false;  ///< the shared expert scaled by a sigmoid gate, h -> 1 (Qwen2-MoE)
  /// The first layers of an MoE model dense, with a SwiGLU MLP `dense_ffn` wide (DeepSeek's
  /// `first_k_dense_replace`, `intermediate_size`), lowered as `first_dense()`; a plan keeps
  /// them on the first pipeline stage (`parallel::nd::check`).
  int dense_layers = 0;
  int dense_ffn = 0;
  /// Multi-head latent attention (DeepSeek-V2/V3): K and V made from a `kv_lora_rank` latent
  /// (with a shared rotary key `qk_rope_dim` wide), Q from a `q_lora_rank` latent (0: a plain
  /// projection), per head `qk_nope_dim + qk_rope_dim` for the scores and `v_head_dim` for the
  /// values. kv_lora_rank 0: none. Lowered as Megatron-Core runs it (`lower::detail::
  /// latent_attention`).
  int q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, qk_nope_dim = 0, v_head_dim = 0;
  /// Soft-capping (Gemma 2): each attention score s becomes c tanh(s / c) with c =
  /// `attention_softcap`, and each logit likewise with c = `final_softcap`; 0: none. They count
  /// no parameters; the lowering runs what the recipe makes of them
  /// (`frameworks::recipe::capped_attention`, `recipe::caps_logits`).
  double attention_softcap = 0, final_softcap = 0;

  [[nodiscard]] constexpr int kv() const { return kv_heads == 0 ? heads : kv_heads; }
  [[nodiscard]] constexpr double head_dim() const {
    return head_size > 0 ? static_cast<double>(head_size) : static_cast<double>(hidden) / heads;
  }
  /// Width of the Q projection (and the output projection's input): heads x d, which is h unless
  /// `head_size` says otherwise.
  [[nodiscard]] constexpr double q_width() const {
    return head_size > 0 ? static_cast<double>(heads) * head_size : static_cast<double>(hidden);
  }
  [[nodiscard]] constexpr double ffn_size() const {
    return ffn == 0 ? 4.0 * hidden : static_cast<double>(ffn);
  }
  [[nodiscard]] constexpr bool moe() const { return experts > 1; }
  /// The largest `expert_load_cv` that leaves every one of n experts some tokens: the counts are
  /// spread evenly over a range around their mean (`expert_share`), whose lowest end is 0 there.
  [[nodiscard]] static constexpr double max_expert_load_cv(int n) {
    return n < 2 ? 0.0 : detail::sqrt((n + 1.0) / (3.0 * (n - 1.0)));
  }
  /// Expert i's tokens as a multiple of the even share, for n experts whose counts have the
  /// coefficient of variation `expert_load_cv`: n points spaced evenly about 1 (a discrete
  /// uniform spread, whose standard deviation is sqrt((n^2 - 1) / 12) steps).
  [[nodiscard]] constexpr double expert_share(int i, int n) const {
    if (n < 2 || expert_load_cv == 0) return 1.0;
    const double step = expert_load_cv / detail::sqrt((n * n - 1.0) / 12.0);
    return 1.0 + step * (i - (n - 1) / 2.0);
  }
  /// Width of the K and V projections: kv x d.
  [[nodiscard]] constexpr double kv_width() const { return kv() * head_dim(); }

  [[nodiscard]] constexpr bool mla() const { return kv_lora_rank > 0; }
  /// Under latent attention, a head's width in the scores (`qk_nope_dim + qk_rope_dim`).
  [[nodiscard]] constexpr double latent_qk_dim() const {
    return static_cast<double>(qk_nope_dim) + qk_rope_dim;
  }
  /// Forward FLOPs per token of the attention core at sequence length s, uncausal: Q K^T and P V,
  /// 2 s per element of their head widths (4 s q; latent attention: 2 s heads (qk + v), its
  /// scores and values being of different widths).
  [[nodiscard]] constexpr double attention_core_flops(double s) const {
    return mla() ? 2 * s * heads * (latent_qk_dim() + v_head_dim) : 4 * s * q_width();
  }
  /// Q, K, V and output projection weights and biases (q = h unless `head_size` is set). Under
  /// multi-head latent attention (DeepSeek-V2 §2.1): Q's down projection, its norm and up
  /// projection (or one projection), K and V's joint down projection with the rotary key, its
  /// norm and up projection, and the output projection from the heads' values.
  [[nodiscard]] constexpr double attention_parameters() const {
    const double h = hidden, q = q_width(), w = kv_width();
    if (mla()) {
      const double a = heads, qk = qk_nope_dim + qk_rope_dim, r = q_lora_rank, c = kv_lora_rank;
      const double query = r > 0 ? h * r + r + r * a * qk : h * a * qk;
      return query + h * (c + qk_rope_dim) + c + c * a * (qk_nope_dim + v_head_dim) +
             a * v_head_dim * h;
    }
    return h * (2 * q + 2 * w) + (bias ? q + h + 2 * w : qkv_bias ? q + 2 * w : 0.0);
  }
  /// The shared expert of an MoE layer (`shared_ffn`) and its gate.
  [[nodiscard]] constexpr double shared_expert_parameters() const {
    return moe() ? 3.0 * hidden * shared_ffn + (shared_gate ? hidden : 0.0) : 0.0;
  }
  /// The weights of the Q and K norms (`qk_norm`): 2 d per head-wise pair, q + kv d over the
  /// projections' widths.
  [[nodiscard]] constexpr double qk_norm_parameters() const {
    if (qk_norm == qk_norm_kind::per_head) return 2 * head_dim();
    return qk_norm == qk_norm_kind::per_width ? q_width() + kv_width() : 0.0;
  }
  /// Norms in one layer: before the attention and the MLP, and after them with `sandwich_norms`.
  [[nodiscard]] constexpr double layer_norms() const { return sandwich_norms ? 4.0 : 2.0; }
  /// One MLP (one expert of an MoE layer).
  [[nodiscard]] constexpr double mlp_parameters() const {
    const double h = hidden, f = ffn_size();
    if (mlp == mlp_kind::swiglu) return 3 * h * f + (bias ? 2 * f + h : 0.0);
    return 2 * h * f + (bias ? f + h : 0.0);
  }
  [[nodiscard]] constexpr double norm_parameters() const {
    return norm == norm_kind::layer_norm ? 2.0 * hidden : static_cast<double>(hidden);
  }
  /// The router of an MoE layer: h x experts.
  [[nodiscard]] constexpr double router_parameters() const {
    return moe() ? static_cast<double>(hidden) * experts : 0.0;
  }
  /// Parameters of one layer outside its experts (attention, norms, router and shared expert;
  /// the MLP when dense).
  [[nodiscard]] constexpr double dense_layer_parameters() const {
    return attention_parameters() + qk_norm_parameters() + layer_norms() * norm_parameters() +
           router_parameters() + shared_expert_parameters() + (moe() ? 0.0 : mlp_parameters());
  }
  /// One of the dense first layers (`dense_layers`): attention, norms and a `dense_ffn` MLP.
  [[nodiscard]] constexpr double first_dense_layer_parameters() const {
    return attention_parameters() + qk_norm_parameters() + layer_norms() * norm_parameters() +
           3.0 * hidden * dense_ffn;
  }
  /// One of the dense first layers as a layer of its own: this model's attention and norms
  /// with a `dense_ffn` SwiGLU MLP and no experts (what the lowering runs for them).
  [[nodiscard]] constexpr transformer first_dense() const {
    transformer d = *this;
    d.experts = 1;
    d.top_k = 1;
    d.capacity = 1;
    d.expert_load_cv = 0;
    d.ffn = dense_ffn;
    d.shared_ffn = 0;
    d.shared_gate = false;
    d.dense_layers = 0;
    return d;
  }
  /// Expert weights of one layer (zero for a dense model).
  [[nodiscard]] constexpr double expert_layer_parameters() const {
    return moe() ? experts * mlp_parameters() : 0.0;
  }
  [[nodiscard]] constexpr double layer_parameters() const {
    return dense_layer_parameters() + expert_layer_parameters();
  }
  /// Token embedding V x h plus a learned position table.
  [[nodiscard]] constexpr double embedding_parameters() const {
    const double h = hidden;
    return vocabulary * h + (positions == position_kind::learned ? sequence * h : 0.0);
  }
  /// The output projection V x h when untied (zero when tied), plus the final norm.
  [[nodiscard]] constexpr double head_parameters() const {
    return (tied ? 0.0 : static_cast<double>(vocabulary) * hidden) + norm_parameters();
  }
  [[nodiscard]] constexpr double parameters() const {
    return (layers - dense_layers) * layer_parameters() +
           dense_layers * first_dense_layer_parameters() + embedding_parameters() +
           head_parameters();
  }
  /// Parameters one token's forward pass multiplies with (top_k experts of each MoE layer).
  [[nodiscard]] constexpr double active_parameters() const {
    return (layers - dense_layers) *
               (dense_layer_parameters() + (moe() ? top_k * mlp_parameters() : 0.0)) +
           dense_layers * first_dense_layer_parameters() + embedding_parameters() +
           head_parameters();
  }

  /// Forward FLOPs of one layer for one token at sequence length s, counted as Narayanan et
  /// al. (SC'21 §5.1) do: 2 per multiply-add of every weight matrix the token meets (top_k
  /// experts and the shared expert), plus 4 s q (q = h unless `head_size`) for the attention scores
  /// and their product with V (no causal discount).
  [[nodiscard]] constexpr double layer_forward_flops(double s) const {
    const double h = hidden, q = q_width(), w = kv_width(), f = ffn_size();
    // latent attention: 2 per weight of its projections (its norms' weights are not multiplied)
    const double attention =
        mla() ? 2 * (attention_parameters() - kv_lora_rank - q_lora_rank) + attention_core_flops(s)
              : 2 * h * (2 * q + 2 * w) + attention_core_flops(s);
    const double one_mlp = 2 * (mlp == mlp_kind::swiglu ? 3.0 : 2.0) * h * f;
    const double mlp_flops =
        moe() ? top_k * one_mlp + 2 * h * experts + 2 * shared_expert_parameters() : one_mlp;
    return attention + mlp_flops;
  }
  /// Forward FLOPs of the vocabulary projection for one token: 2 h V.
  [[nodiscard]] constexpr double head_forward_flops() const {
    return 2.0 * hidden * static_cast<double>(vocabulary);
  }

  constexpr void check() const {
    if (layers < 1 || hidden < 1 || heads < 1 || vocabulary < 1 || sequence < 1)
      throw plan_error("a transformer needs layers, hidden, heads, vocabulary and sequence >= 1");
    if (head_size < 0) throw plan_error("a transformer's head_size must not be negative");
    if (head_size == 0 && hidden % heads != 0)
      throw plan_error("a transformer's heads must divide its hidden size");
    if (kv_heads < 0 || kv() > heads || heads % kv() != 0)
      throw plan_error("a transformer's key/value heads must divide its query heads");
    if (ffn < 0) throw plan_error("a transformer's ffn size must not be negative");
    if (experts < 1 || top_k < 1 || top_k > experts)
      throw plan_error("a mixture of experts needs 1 <= top_k <= experts");
    if (!(capacity > 0)) throw plan_error("an MoE capacity factor must be positive");
    if (expert_load_cv != 0 && experts < 2)
      throw plan_error("expert_load_cv: a model without experts has no expert load to spread");
    if (shared_ffn < 0 || dense_layers < 0 || dense_layers >= layers || dense_ffn < 0 ||
        q_lora_rank < 0 || kv_lora_rank < 0 || qk_rope_dim < 0 || qk_nope_dim < 0 || v_head_dim < 0)
      throw plan_error(
          "a transformer's shared_ffn, dense_layers (fewer than its layers), dense_ffn and "
          "latent attention sizes must not be negative");
    if (!(attention_softcap >= 0) || !(final_softcap >= 0))
      throw plan_error("a transformer's attention_softcap and final_softcap must not be negative");
    if (!(expert_load_cv >= 0 && expert_load_cv <= max_expert_load_cv(experts)))
      throw plan_error("expert_load_cv must lie between 0 and " +
                       std::to_string(max_expert_load_cv(experts)) + " for " +
                       std::to_string(experts) +
                       " experts (beyond it the least loaded expert would get no tokens)");
  }
  /// What a plan needs beyond `check`: the parts the lowering runs.
  constexpr void check_lowered() const {
    check();
    if (dense_layers > 0 && (!moe() || mlp != mlp_kind::swiglu || bias))
      throw plan_error(
          "transformer.dense_layers: dense first layers are modelled in front of MoE layers "
          "with SwiGLU MLPs without biases (DeepSeek's)");
  }
};

}  // namespace strata
