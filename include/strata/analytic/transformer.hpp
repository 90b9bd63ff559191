#pragma once
/// @file analytic/transformer.hpp
/// @brief Closed-form time and memory of a transformer trained with `parallel::nd`.
///
/// FLOPs follow Narayanan et al. SC'21 §5.1 (72 B s l h^2 (1 + s/6h + V/12lh) per iteration,
/// 96 B s l h^2 (1 + s/6h + V/16lh) with full recomputation), generalized per token by
/// `transformer::layer_forward_flops` to GQA, SwiGLU and MoE. Activation memory follows
/// Korthikanti et al. 2022 Table 2 (34 s b h + 5 a s^2 b bytes per layer, split into the 10 s b h
/// that tensor parallelism replicates and the 24 s b h + 5 a s^2 b it shards), the in-flight
/// micro-batches of the first 1F1B stage and the interleaving factor 1 + (p-1)/(p v) (§4.2.3),
/// and the embedding and output-layer terms (§4.3). Model states follow Rajbhandari et al.
/// 2020 §5 (ZeRO stages) with Megatron's 18 B/param as the default mixed-precision recipe.
/// Times come from a kernel-level lowering of one layer (`hardware/kernels.hpp`) and the
/// foundation's collectives on the groups `parallel::nd` lays out.
/// @code
/// const auto r = strata::analytic::evaluate(strata::zoo::gpt3_175b(), s,
///                                           strata::presets::dgx_a100(128),
///                                           {.global_batch = 1536, .sequence = 2048});
/// @endcode

#include <algorithm>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/training.hpp"
#include "strata/units.hpp"

namespace strata::analytic {

using parallel::recompute;

// ---- FLOPs ---------------------------------------------------------------------------------

/// Model FLOPs of one iteration: forward and backward (3x forward) of every layer and of the
/// vocabulary projection, for B sequences of s tokens (Narayanan et al. SC'21 eq. (3) without
/// recomputation, generalized).
[[nodiscard]] constexpr double model_flops(const transformer& m, double batch, double s) {
  return 3 * batch * s * (m.layers * m.layer_forward_flops(s) + m.head_forward_flops());
}

/// FLOPs the hardware runs: model FLOPs plus the recomputed forward (full: every layer, giving
/// SC'21's 96 B s l h^2 (1 + s/6h + V/16lh); selective: the attention core, 4 s h per token).
[[nodiscard]] constexpr double hardware_flops(const transformer& m, double batch, double s,
                                              recompute r) {
  const double base = model_flops(m, batch, s);
  if (r == recompute::full) return base + batch * s * m.layers * m.layer_forward_flops(s);
  if (r == recompute::selective) return base + batch * s * m.layers * 4 * s * m.hidden;
  return base;
}

// ---- activation memory (Korthikanti et al. 2022) -------------------------------------------

/// Bytes one layer keeps for backward, for b sequences of s tokens on one tensor-parallel rank.
/// In units of s b h (2-byte activations, 1-byte dropout masks):
/// - replicated by tensor parallelism (10 for GPT): the two norms' inputs (4), the inputs of
///   the QKV and first MLP GEMMs (4) and the two dropout masks (2);
/// - sharded (24 for GPT): Q (2), K and V (4 kv d / h), the attention output (2), the MLP's
///   GELU input and second-GEMM input (2 f / h each, 16 for f = 4h; SwiGLU keeps its
///   two input halves and their product, 6 f / h);
/// - the scores: 5 a s / h (softmax output 2, dropout mask 1, dropout output 2; 2 without
///   dropout), gone with selective recomputation or fused (flash) attention.
/// MoE layers keep the MLP terms for top_k x capacity routed copies of each token. fp32
/// activations double every 2-byte term.
[[nodiscard]] constexpr double layer_activation_bytes(const transformer& m, double s, double b,
                                                      int tp, bool sp, recompute r, bool flash,
                                                      double act = 2) {
  const double h = m.hidden, sbh = s * b * h, t = tp;
  const double mask = m.dropout ? 1.0 : 0.0;
  const double routed = m.moe() ? m.top_k * m.capacity : 1.0;
  if (r == recompute::full) return act * sbh / (sp ? t : 1.0);  // each layer's input
  const double f = m.ffn_size() / h, kv = m.kv_width() / h;
  const double replicated =
      2 * act /*norms*/ + act /*QKV input*/ + routed * act /*MLP input*/ + 2 * mask;
  const double mlp = m.mlp == mlp_kind::swiglu ? 3 * act * f : 2 * act * f;
  const double sharded =
      act /*Q*/ + 2 * act * kv /*K, V*/ + act /*attention output*/ + routed * mlp;
  const double scores = (r == recompute::selective || flash)
                            ? 0.0
                            : (act + (m.dropout ? mask + act : 0.0)) * m.heads * s / h;
  return sbh * ((sp ? replicated / t : replicated) + sharded / t + scores / t);
}

// ---- results --------------------------------------------------------------------------------

/// One iteration on the critical path (the slowest pipeline stage and its waits).
struct transformer_time {
  seconds forward{};          ///< compute of the forward passes
  seconds backward{};         ///< compute of the backward passes
  seconds recompute{};        ///< forward work repeated during backward (with its collectives)
  seconds tensor_comm{};      ///< tensor/sequence-parallel collectives (blocking)
  seconds context_comm{};     ///< ring-attention exchange not hidden by attention
  seconds expert_comm{};      ///< MoE all-to-all dispatch and combine
  seconds pipeline_bubble{};  ///< fill and drain: (p - 1) / v of a stage's micro-batch time
  seconds pipeline_p2p{};     ///< activation and gradient sends between stages
  seconds data_comm{};        ///< data-parallel / ZeRO collectives not hidden by compute
  seconds optimizer{};        ///< the optimizer step

  [[nodiscard]] constexpr seconds total() const {
    return forward + backward + recompute + tensor_comm + context_comm + expert_comm +
           pipeline_bubble + pipeline_p2p + data_comm + optimizer;
  }
};

/// Memory of one device (the stage with the largest total).
struct transformer_memory {
  bytes weights{};
  bytes gradients{};
  bytes optimizer_states{};  ///< fp32 master weights and the optimizer's moments
  bytes activations{};       ///< the transformer layers' saved tensors, all in-flight micro-batches
  bytes embedding_activations{};  ///< input-embedding dropout mask and the output layer (§4.3)
  bytes buffers{};                ///< communication buffers: DDP buckets, ZeRO-3 gathered layers
  bytes other{};                  ///< `transformer_training::reserved`
  bytes embedding_states{};       ///< the part of the model states held for embedding and head
  int stage = 0;                  ///< the pipeline stage this is
  [[nodiscard]] constexpr bytes model_states() const {
    return weights + gradients + optimizer_states;
  }
  [[nodiscard]] constexpr bytes total() const {
    return model_states() + activations + embedding_activations + buffers + other;
  }
};

struct transformer_report {
  transformer_time time;
  transformer_memory memory;
  bytes capacity{};
  int devices = 1;
  int micro_batches = 1;
  double tokens = 0;          ///< per iteration
  double model_flops = 0;     ///< per iteration, all devices
  double hardware_flops = 0;  ///< with recomputation
  flop_rate peak{};           ///< one device's dense peak in the compute type

  [[nodiscard]] constexpr seconds iteration_time() const { return time.total(); }
  [[nodiscard]] constexpr double tokens_per_second() const { return tokens / time.total().count(); }
  /// Achieved hardware FLOP/s per device (SC'21 Table 1 reports this).
  [[nodiscard]] constexpr double flops_per_device() const {
    return hardware_flops / (time.total().count() * devices);
  }
  [[nodiscard]] constexpr double mfu() const {
    return model_flops / (time.total().count() * devices) / peak.count();
  }
  [[nodiscard]] constexpr double hfu() const { return flops_per_device() / peak.count(); }
  [[nodiscard]] constexpr bool fits() const { return memory.total() <= capacity; }
};

// ---- model states ---------------------------------------------------------------------------

/// Parameters pipeline stage i holds on one rank, split into dense (replicated over data, expert
/// and context ranks) and expert weights (replicated over data and context ranks).
struct stage_parameters {
  double dense = 0;  ///< all dense parameters, embedding and head included
  double expert = 0;
  double embedding = 0;  ///< the part of `dense` in the embedding, head and final norm
};

[[nodiscard]] constexpr stage_parameters parameters_on(const transformer& m, const parallel::nd& s,
                                                       int stage) {
  const double t = s.tensor.degree;
  const int p = s.pipeline.degree;
  const int l = s.stage_layers(m, stage);
  stage_parameters out;
  out.dense = l * m.dense_layer_parameters() / t;
  out.expert = l * m.expert_layer_parameters() / (t * s.expert.degree);
  if (stage == 0) out.embedding += m.embedding_parameters() / t;
  if (stage == p - 1) {
    out.embedding += m.head_parameters() / t;
    // a tied projection on a separate last stage keeps its own copy of the embedding
    if (m.tied && p > 1) out.embedding += static_cast<double>(m.vocabulary) * m.hidden / t;
  }
  out.dense += out.embedding;
  return out;
}

namespace detail {
/// Weights, gradients and optimizer states of `n` parameters sharded over `shards` ranks by
/// ZeRO stage `zero`.
constexpr void add_states(transformer_memory& mem, double n, double shards, int zero,
                          const transformer_training& t) {
  mem.weights += bytes{n * t.weight_bytes() / (zero >= 3 ? shards : 1.0)};
  mem.gradients += bytes{n * t.gradient_bytes() / (zero >= 2 ? shards : 1.0)};
  mem.optimizer_states += bytes{n * t.optimizer_bytes() / (zero >= 1 ? shards : 1.0)};
}
constexpr int sequence_of(const transformer& m, const transformer_training& t) {
  return t.sequence_or(m.sequence);
}
}  // namespace detail

/// Korthikanti et al. §4.3, per micro-batch on one rank: the input embedding's dropout mask,
/// s b h / t bytes.
[[nodiscard]] constexpr double input_embedding_bytes(const transformer& m, const parallel::nd& s,
                                                     const transformer_training& t) {
  const double sl = static_cast<double>(detail::sequence_of(m, t)) / s.context.degree;
  return m.dropout ? sl * s.micro_batch * m.hidden / s.tensor.degree : 0.0;
}
/// Korthikanti et al. §4.3: the final norm's and the projection's inputs and the fp32 logits,
/// 4 s b h / t (1 + V / h) with 2-byte activations.
[[nodiscard]] constexpr double output_layer_bytes(const transformer& m, const parallel::nd& s,
                                                  const transformer_training& t) {
  const double sl = static_cast<double>(detail::sequence_of(m, t)) / s.context.degree;
  const double sb = sl * s.micro_batch, tp = s.tensor.degree;
  return 2 * t.activation_bytes() * sb * m.hidden / tp + 4 * sb * m.vocabulary / tp;
}

/// Memory of pipeline stage `stage` on one rank.
[[nodiscard]] constexpr transformer_memory stage_memory(const transformer& m, const parallel::nd& s,
                                                        const transformer_training& t, int stage) {
  transformer_memory mem;
  mem.stage = stage;
  const stage_parameters n = parameters_on(m, s, stage);
  const double dense_shards =
      static_cast<double>(s.data.degree) * s.expert.degree * s.context.degree;
  const double expert_shards = static_cast<double>(s.data.degree) * s.context.degree;
  detail::add_states(mem, n.dense, dense_shards, s.data.zero, t);
  detail::add_states(mem, n.expert, expert_shards, s.data.zero, t);
  {
    transformer_memory e;
    detail::add_states(e, n.embedding, dense_shards, s.data.zero, t);
    mem.embedding_states = e.model_states();
  }

  const int p = s.pipeline.degree, v = s.pipeline.virtual_stages;
  const int mb = s.micro_batches(t);
  const double seq = static_cast<double>(detail::sequence_of(m, t)) / s.context.degree;
  const double b = s.micro_batch, act = t.activation_bytes();
  const int tp = s.tensor.degree;
  const bool sp = s.tensor.sequence;
  // micro-batches whose activations stage `stage` holds at its fullest
  double in_flight = 1;
  if (s.pipeline.kind == parallel::schedule::gpipe) {
    in_flight = mb;
  } else {
    in_flight = std::min(mb, p - stage);
    if (v > 1 && stage == 0)  // Korthikanti §4.2.3: interleaving keeps 1 + (p-1)/(pv) more
      in_flight *= 1.0 + static_cast<double>(p - 1) / (static_cast<double>(p) * v);
  }
  const int layers = s.stage_layers(m, stage);
  const bool flash = t.flash_attention;
  mem.activations = bytes{layers * in_flight *
                          layer_activation_bytes(m, seq, b, tp, sp, s.recomputation, flash, act)};
  if (s.recomputation == recompute::full)  // one layer rebuilt in full during its backward
    mem.activations +=
        bytes{layer_activation_bytes(m, seq, b, tp, sp, recompute::none, flash, act)};
  if (stage == 0) mem.embedding_activations += bytes{in_flight * input_embedding_bytes(m, s, t)};
  if (stage == p - 1) mem.embedding_activations += bytes{output_layer_bytes(m, s, t)};
  // communication buffers
  if (s.data.zero >= 3) {
    mem.buffers += bytes{2 * t.weight_bytes() * m.layer_parameters() / tp};  // gathered + prefetch
  } else if (s.replicas() * s.context.degree > 1 && s.data.zero == 0) {
    mem.buffers += bytes{std::min(s.data.bucket, (n.dense + n.expert) * t.gradient_bytes())};
  }
  mem.other = bytes{t.reserved};
  return mem;
}

/// The largest per-device memory over the pipeline stages. Only three stages can hold it: the
/// first (most in-flight micro-batches, the embedding), the second (the fullest of the middle
/// stages, which all have the same layers and fewer micro-batches in flight down the pipeline)
/// and the last (the logits).
[[nodiscard]] constexpr transformer_memory peak_stage_memory(const transformer& m,
                                                             const parallel::nd& s,
                                                             const transformer_training& t) {
  const int p = s.pipeline.degree;
  transformer_memory best = stage_memory(m, s, t, 0);
  for (const int i : {1, p - 1}) {
    if (i < 1 || i >= p) continue;
    const transformer_memory x = stage_memory(m, s, t, i);
    if (x.total() > best.total()) best = x;
  }
  return best;
}

// ---- time -----------------------------------------------------------------------------------

/// Compute time of one layer for one micro-batch on one rank, from its kernels.
struct layer_compute {
  double forward = 0;    ///< s
  double backward = 0;   ///< s
  double attention = 0;  ///< the attention core's forward (recomputed under selective)
  double attention_backward = 0;
  double embedding_forward = 0, embedding_backward = 0;  ///< first stage
  double head_forward = 0, head_backward = 0;            ///< last stage: norm, logits, loss
};

/// Lowers one layer to kernels: the GEMMs (dX and dW in backward) with their tensor-parallel
/// shards, flash attention or the unfused score GEMMs with softmax and dropout, norms,
/// activation, bias-dropout-residual, rotary embedding and the MoE permutations (memory-bound
/// kernels move twice their forward bytes backward).
[[nodiscard]] constexpr layer_compute lower_layer(const transformer& m, const device_profile& prof,
                                                  const transformer_training& tr, int tp, bool sp,
                                                  int cp, int ep, double b) {
  const double seq = detail::sequence_of(m, tr);
  const double s = seq / cp, T = b * s, h = m.hidden, t = tp, w = m.kv_width(), f = m.ffn_size(),
               V = m.vocabulary, a = m.heads, d = m.head_dim();
  const double act = tr.activation_bytes();
  gemm_model g = prof.gemm(tr.compute());
  if (tr.compute() == dtype::fp8 && prof.dev.peak(dtype::fp8) > prof.dev.peak(dtype::bf16)) {
    g.peak = prof.dev.peak(dtype::fp8).count();
    g.element = 1;
  }
  layer_compute c;
  auto gemm = [&](double mm, double nn, double kk, double count = 1) {
    c.forward += count * g.time(mm, nn, kk);
    c.backward += count * (g.time(mm, kk, nn) + g.time(kk, nn, mm));
  };
  auto memory = [&](const stream_model& sm, double size) {
    c.forward += sm.time(size);
    c.backward += 2 * sm.time(size);
  };
  const double tn = sp ? T / t : T;  // tokens the norms and residuals see
  const double mask = m.dropout ? 1.0 : 0.0;
  // attention block
  memory(prof.layer_norm, 2 * tn * h * act);
  gemm(T, (h + 2 * w) / t, h);
  if (m.positions == position_kind::rotary) memory(prof.gelu, 2 * T * (h + w) / t * act);
  const double heads = a / t;
  if (tr.flash_attention) {
    const double fwd = prof.attention.forward(b / cp, heads, seq, d);
    const double both = prof.attention.forward_backward(b / cp, heads, seq, d);
    c.attention = fwd;
    c.attention_backward = std::max(both - fwd, 0.0);
  } else {
    const double rows = b * heads * s, scores = rows * seq;
    c.attention = g.time(rows, seq, d) + g.time(rows, d, seq) +
                  prof.softmax.time(2 * scores * act) +
                  (m.dropout ? prof.dropout.time(scores * (2 * act + mask)) : 0.0);
    c.attention_backward = 2 * (g.time(rows, d, seq) + g.time(rows, seq, d)) +
                           prof.softmax.time(3 * scores * act) +
                           (m.dropout ? prof.dropout.time(scores * (2 * act + mask)) : 0.0);
  }
  c.forward += c.attention;
  c.backward += c.attention_backward;
  gemm(T, h, h / t);
  memory(prof.dropout, tn * h * (3 * act + mask));
  // MLP block
  memory(prof.layer_norm, 2 * tn * h * act);
  const double up = m.mlp == mlp_kind::swiglu ? 2 * f : f;
  if (m.moe()) {
    const double local = static_cast<double>(m.experts) / ep;  // experts on this rank
    const double rows = T * m.top_k * m.capacity * ep / m.experts;
    gemm(T, m.experts, h);                             // router
    memory(prof.copy, 2 * 2 * T * m.top_k * h * act);  // permute and un-permute
    gemm(rows, up / t, h, local);
    memory(prof.gelu, (m.mlp == mlp_kind::swiglu ? 3 : 2) * rows * local * f / t * act);
    gemm(rows, h, f / t, local);
  } else {
    gemm(T, up / t, h);
    memory(prof.gelu, (m.mlp == mlp_kind::swiglu ? 3 : 2) * T * f / t * act);
    gemm(T, h, f / t);
  }
  memory(prof.dropout, tn * h * (3 * act + mask));
  // embedding (first stage) and head (last stage)
  c.embedding_forward = prof.copy.time(2 * T * h * act / (sp ? t : 1.0));
  c.embedding_backward = 2 * c.embedding_forward;
  c.head_forward = prof.layer_norm.time(2 * tn * h * act) + g.time(T, V / t, h) +
                   prof.softmax.time(4 * T * V / t * 4);
  c.head_backward =
      2 * prof.layer_norm.time(2 * tn * h * act) + g.time(T, h, V / t) + g.time(h, V / t, T);
  return c;
}

namespace detail {
/// A collective over several axes at once, composed hierarchically: reduce-scatter over each
/// axis in turn on a shrinking buffer (all-gather back in reverse). With one axis of size > 1
/// this is the ring itself: all-reduce = reduce-scatter + all-gather.
constexpr seconds over_axes(comm::collective op, const cluster& c, const parallel::nd& s,
                            std::initializer_list<parallel::axis> axes, bytes size) {
  seconds total{};
  bytes piece = size;
  for (const parallel::axis ax : axes) {
    const group g = s.group_of(ax);
    if (g.size == 1 || !(size > bytes{})) continue;
    if (op == comm::collective::all_reduce)
      total += comm::ring::time(comm::collective::reduce_scatter, c, g, piece) +
               comm::ring::time(comm::collective::all_gather, c, g, piece);
    else
      total += comm::ring::time(op, c, g, piece);
    piece = piece / static_cast<double>(g.size);
  }
  return total;
}
}  // namespace detail

/// Blocking collectives of one layer for one micro-batch on one rank.
struct layer_collectives {
  seconds tensor{};            ///< each pass: 2 all-reduces (or all-gather + reduce-scatter)
  seconds context_forward{};   ///< ring attention's K/V exchange not hidden by attention
  seconds context_backward{};  ///< K/V and their gradients, behind attention's backward
  seconds expert{};            ///< each pass: dispatch and combine all-to-alls
  [[nodiscard]] constexpr seconds forward() const { return tensor + context_forward + expert; }
  [[nodiscard]] constexpr seconds backward() const { return tensor + context_backward + expert; }
};

/// The collectives of one layer on the groups `s` lays out: tensor parallelism's two
/// all-reduces per pass of the b s h activation (Shoeybi et al. §3; with sequence parallelism
/// all-gather + reduce-scatter of the same bytes, Korthikanti et al. §4.2.2), ring attention's
/// c - 1 K/V blocks (Liu et al. 2023) and MoE's all-to-alls of the routed tokens.
[[nodiscard]] constexpr layer_collectives collectives_of(const transformer& m,
                                                         const parallel::nd& s, const cluster& c,
                                                         const transformer_training& tr,
                                                         const layer_compute& lc) {
  using parallel::axis;
  const double b = s.micro_batch, sl = detail::sequence_of(m, tr) / s.context.degree, h = m.hidden,
               act = tr.activation_bytes();
  const int tp = s.tensor.degree;
  layer_collectives out;
  if (tp > 1) {
    const group g = s.group_of(axis::tensor);
    const bytes x{b * sl * h * act};
    out.tensor = s.tensor.sequence
                     ? 2.0 * (comm::ring::time(comm::collective::all_gather, c, g, x) +
                              comm::ring::time(comm::collective::reduce_scatter, c, g, x))
                     : 2.0 * comm::ring::time(comm::collective::all_reduce, c, g, x);
  }
  if (s.context.degree > 1) {
    const interconnect link = comm::ring_link(c, s.group_of(axis::context));
    const seconds ring =
        (s.context.degree - 1) * link.transfer(bytes{2 * b * sl * m.kv_width() / tp * act});
    out.context_forward = max(ring - seconds{lc.attention}, seconds{});
    out.context_backward = max(2.0 * ring - seconds{lc.attention_backward}, seconds{});
  }
  if (m.moe() && s.expert.degree > 1)
    out.expert = 2.0 * comm::direct::time(comm::collective::all_to_all, c, s.group_of(axis::expert),
                                          bytes{b * sl * m.top_k * m.capacity * h * act});
  return out;
}

/// One iteration's time on the critical path, with kernel times `lc` from `lower_layer` (pass
/// the same `layer_compute` to every strategy that shares tp, sp, cp, ep and b).
[[nodiscard]] constexpr transformer_time iteration(const transformer& m, const parallel::nd& s,
                                                   const cluster& c, const transformer_training& tr,
                                                   const device_profile& prof,
                                                   const layer_compute& lc) {
  using parallel::axis;
  const double seq = detail::sequence_of(m, tr);
  const int p = s.pipeline.degree, v = s.pipeline.virtual_stages, mb = s.micro_batches(tr);
  const double b = s.micro_batch, sl = seq / s.context.degree, h = m.hidden;
  const double act = tr.activation_bytes();
  const int tp = s.tensor.degree;
  const recompute rc = s.recomputation;

  const layer_collectives lcoll = collectives_of(m, s, c, tr, lc);
  const seconds layer_comm_fwd = lcoll.forward();
  const seconds layer_comm_bwd = lcoll.backward();
  const seconds layer_recompute = rc == recompute::full ? seconds{lc.forward} + layer_comm_fwd
                                  : rc == recompute::selective ? seconds{lc.attention}
                                                               : seconds{};

  // per micro-batch time of each stage; the slowest sets the steady state. The middle stages
  // are alike, so three stage times give the worst and the sum.
  auto stage_time = [&](int i) {
    const double l = s.stage_layers(m, i);
    seconds ti =
        l * (seconds{lc.forward + lc.backward} + layer_comm_fwd + layer_comm_bwd + layer_recompute);
    if (i == 0) ti += seconds{lc.embedding_forward + lc.embedding_backward};
    if (i == p - 1) ti += seconds{lc.head_forward + lc.head_backward};
    return ti;
  };
  seconds worst = stage_time(0), sum = worst;
  int critical = 0;
  if (p > 2) {
    const seconds middle = stage_time(1);
    sum += (p - 2) * middle;
    if (middle > worst) worst = middle, critical = 1;
  }
  if (p > 1) {
    const seconds last = stage_time(p - 1);
    sum += last;
    if (last > worst) worst = last, critical = p - 1;
  }
  const double lcrit = s.stage_layers(m, critical);
  transformer_time T;
  T.forward = mb * seconds{lcrit * lc.forward + (critical == 0 ? lc.embedding_forward : 0.0) +
                           (critical == p - 1 ? lc.head_forward : 0.0)};
  T.backward = mb * seconds{lcrit * lc.backward + (critical == 0 ? lc.embedding_backward : 0.0) +
                            (critical == p - 1 ? lc.head_backward : 0.0)};
  T.recompute = mb * lcrit * layer_recompute;
  T.tensor_comm = mb * lcrit * 2.0 * lcoll.tensor;
  T.context_comm = mb * lcrit * (lcoll.context_forward + lcoll.context_backward);
  T.expert_comm = mb * lcrit * 2.0 * lcoll.expert;
  // fill and drain: (p - 1) / v of the other stages' micro-batch time (Narayanan et al. SC'21
  // §2.2: bubble fraction (p - 1) / (v m))
  T.pipeline_bubble = (sum - worst) / static_cast<double>(v);
  if (p > 1) {
    // each forward and backward step waits for its send: 2 (v m + p - 1) sends of b s h / t
    // (Megatron's scatter/gather: each tensor-parallel rank sends its 1/t)
    const group g = s.group_of(axis::pipeline);
    const interconnect link = c.between(0, g.stride);
    T.pipeline_p2p = 2.0 * (v * mb + p - 1) * link.transfer(bytes{b * sl * h * act / tp});
  }

  // data parallelism and ZeRO on the critical stage's parameters
  const stage_parameters n = parameters_on(m, s, critical);
  const int zero = s.data.zero;
  const double gb = tr.gradient_bytes(), wb = tr.weight_bytes();
  auto dense_and_expert = [&](comm::collective op, double per_param) {
    return detail::over_axes(op, c, s, {axis::context, axis::expert, axis::data},
                             bytes{n.dense * per_param}) +
           detail::over_axes(op, c, s, {axis::context, axis::data}, bytes{n.expert * per_param});
  };
  const double bucket_fraction =
      std::min(1.0, s.data.bucket / std::max((n.dense + n.expert) * gb, 1.0));
  const seconds f_mb = T.forward / static_cast<double>(mb);
  const seconds b_mb = (T.backward + T.recompute) / static_cast<double>(mb);
  const double ov = s.data.overlap;
  if (s.replicas() * s.context.degree > 1) {
    if (zero <= 1) {
      // gradients reduced once, in buckets during the last micro-batch's backward; the last
      // bucket cannot hide
      const seconds reduce = zero == 0 ? dense_and_expert(comm::collective::all_reduce, gb)
                                       : dense_and_expert(comm::collective::reduce_scatter, gb);
      T.data_comm = max(reduce - ov * b_mb, bucket_fraction * reduce);
    } else {
      // ZeRO-2/3: gradients reduce-scattered after every micro-batch's backward
      const seconds rs = dense_and_expert(comm::collective::reduce_scatter, gb);
      const double layer_share = 1.0 / std::max(1.0, lcrit);
      if (zero == 2) {
        T.data_comm = mb * max(rs - ov * b_mb, bucket_fraction * rs);
      } else {
        // ZeRO-3/FSDP: weights gathered before each forward and backward (prefetched a layer
        // ahead; the first layer's gather is exposed)
        const seconds ag = dense_and_expert(comm::collective::all_gather, wb);
        T.data_comm = mb * (max(ag - ov * f_mb, layer_share * ag) +
                            max(ag + rs - ov * b_mb, layer_share * rs));
      }
    }
    if (zero == 1 || zero == 2)  // updated weights gathered back, behind the next forward
      T.data_comm += max(dense_and_expert(comm::collective::all_gather, wb) - ov * f_mb,
                         bucket_fraction * dense_and_expert(comm::collective::all_gather, wb));
  }
  // optimizer: one memory-bound pass over this rank's (sharded) parameters
  const double shards_dense = zero >= 1 ? s.replicas() * s.context.degree : 1.0;
  const double shards_expert = zero >= 1 ? s.data.degree * s.context.degree : 1.0;
  T.optimizer = seconds{
      prof.copy.time(tr.update_bytes() * (n.dense / shards_dense + n.expert / shards_expert))};
  return T;
}

/// The report of a plan: its time (`iteration`), its peak memory (`peak_stage_memory`), FLOPs.
[[nodiscard]] constexpr transformer_report evaluate(const transformer& m, const parallel::nd& s,
                                                    const cluster& c,
                                                    const transformer_training& tr,
                                                    const device_profile& prof,
                                                    const layer_compute& lc) {
  transformer_report r;
  r.devices = s.devices();
  r.capacity = c.dev.memory;
  r.micro_batches = s.micro_batches(tr);
  r.peak = c.dev.peak(tr.compute());
  const double seq = detail::sequence_of(m, tr);
  r.tokens = tr.global_batch * seq;
  r.model_flops = model_flops(m, tr.global_batch, seq);
  r.hardware_flops = hardware_flops(m, tr.global_batch, seq, s.recomputation);
  r.memory = peak_stage_memory(m, s, tr);
  r.time = iteration(m, s, c, tr, prof, lc);
  return r;
}

/// Evaluates a transformer plan; checks it first (`parallel::nd::check`).
[[nodiscard]] constexpr transformer_report evaluate(const transformer& m, const parallel::nd& s,
                                                    const cluster& c,
                                                    const transformer_training& tr,
                                                    const device_profile& prof) {
  s.check(m, tr, c.devices());
  return evaluate(m, s, c, tr, prof,
                  lower_layer(m, prof, tr, s.tensor.degree, s.tensor.sequence, s.context.degree,
                              s.expert.degree, s.micro_batch));
}

/// Evaluates with the device's datasheet peaks and the GEMM efficiency fitted on the H100
/// (`datasheet_profile(c.dev, h100_fitted_gemm)`, the profile validated on SC'21 Table 1).
[[nodiscard]] constexpr transformer_report evaluate(const transformer& m, const parallel::nd& s,
                                                    const cluster& c,
                                                    const transformer_training& tr) {
  return evaluate(m, s, c, tr, datasheet_profile(c.dev, h100_fitted_gemm));
}

}  // namespace strata::analytic
