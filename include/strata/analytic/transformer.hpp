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
///                                           {.batch = 1536, .sequence = 2048});
/// @endcode

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/comm/collectives.hpp"
#include "strata/comm/nccl.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/lower/transformer.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/report.hpp"
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

/// The bytes of each kind one layer keeps on one rank (`lower::layer`'s kept tensors, one pass).
struct layer_keeps {
  double activation = 0, weight_copy = 0, until_loss = 0;
  [[nodiscard]] constexpr double of(lower::keep_kind kind) const {
    return kind == lower::keep_kind::activation    ? activation
           : kind == lower::keep_kind::weight_copy ? weight_copy
                                                   : until_loss;
  }
};
template <class Lowering>
[[nodiscard]] constexpr layer_keeps keeps_by(Lowering&& lowering) {
  layer_keeps k;
  lowering(lower::on_save{[&](const lower::saved_tensor& t) {
    (t.kind == lower::keep_kind::activation    ? k.activation
     : t.kind == lower::keep_kind::weight_copy ? k.weight_copy
                                               : k.until_loss) += t.bytes;
  }});
  return k;
}
[[nodiscard]] constexpr layer_keeps keeps_of(const transformer& m, const lower::shard& x,
                                             const training& tr) {
  return keeps_by([&](auto&& v) { lower::layer(m, x, tr, lower::phase::forward, v); });
}
/// The bytes of one kind a layer keeps (activations saved for backward by default).
[[nodiscard]] constexpr double layer_saved_bytes(
    const transformer& m, const lower::shard& x, const training& tr,
    lower::keep_kind kind = lower::keep_kind::activation) {
  return keeps_of(m, x, tr).of(kind);
}

/// Korthikanti et al. 2022 Table 2 as `lower::layer` keeps it under Megatron's recipe, for b
/// sequences of s tokens on one tensor-parallel rank. In units of s b h (2-byte activations,
/// 1-byte dropout masks):
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
  training tr;
  tr.precision = act >= 4 ? precision_mode::fp32 : precision_mode::bf16_mixed;
  tr.flash_attention = flash;
  return layer_saved_bytes(m, {b, s, s, tp, sp, 1, 1, r}, tr);
}

// ---- results --------------------------------------------------------------------------------

/// The headroom of plan `s` whose tensors peak at `allocated`.
[[nodiscard]] constexpr memory_headroom headroom_of(const parallel::nd& s, const runtime_memory& rt,
                                                    bytes allocated) {
  memory_headroom h;
  h.context = bytes{rt.context};
  for (const int d :
       {s.tensor.degree, s.context.degree, s.expert.degree, s.pipeline.degree, s.data.degree})
    if (d > 1) h.communicators += bytes{d == 2 ? rt.pair_communicator : rt.communicator};
  h.fragmentation = allocated * rt.fragmentation;
  return h;
}

// ---- model states ---------------------------------------------------------------------------

/// Parameters pipeline stage i holds on one rank, split into dense (replicated over data, expert
/// and context ranks) and expert weights (replicated over data and context ranks).
struct stage_parameters {
  double dense = 0;  ///< all dense parameters, embedding and head included
  double expert = 0;
  double embedding = 0;  ///< the part of `dense` in the embedding, head and final norm
};

/// The model's parameter counts that `parameters_on` splits over the stages, counted once.
struct model_parameters {
  double dense_layer = 0, expert_layer = 0, embedding = 0, head = 0;
};
[[nodiscard]] constexpr model_parameters parameters_of(const transformer& m) {
  return {m.dense_layer_parameters(), m.expert_layer_parameters(), m.embedding_parameters(),
          m.head_parameters()};
}

[[nodiscard]] constexpr stage_parameters parameters_on(const transformer& m, const parallel::nd& s,
                                                       int stage, const model_parameters& k) {
  const double t = s.tensor.degree;
  const int p = s.pipeline.degree;
  const int l = s.stage_layers(m, stage);
  stage_parameters out;
  out.dense = l * k.dense_layer / t;
  out.expert = l * k.expert_layer / (t * s.expert.degree);
  if (stage == 0) out.embedding += k.embedding / t;
  if (stage == p - 1) {
    out.embedding += k.head / t;
    // a tied projection on a separate last stage keeps its own copy of the embedding
    if (m.tied && p > 1) out.embedding += static_cast<double>(m.vocabulary) * m.hidden / t;
  }
  out.dense += out.embedding;
  return out;
}
[[nodiscard]] constexpr stage_parameters parameters_on(const transformer& m, const parallel::nd& s,
                                                       int stage) {
  return parameters_on(m, s, stage, parameters_of(m));
}

/// The parameters pipeline stage i trains on one rank: all of them, or under LoRA the adapters
/// of its layers (`lower::adapter_parameters`; the frozen weights keep only their storage copy).
/// `all` is the stage's `parameters_on`, when the caller has it.
[[nodiscard]] constexpr stage_parameters trained_on(const transformer& m, const parallel::nd& s,
                                                    const training& t, int stage,
                                                    const stage_parameters& all) {
  if (!t.lora.on()) return all;
  return {s.stage_layers(m, stage) * lower::adapter_parameters(m, lower::shard_of(m, s, t), t), 0,
          0};
}
[[nodiscard]] constexpr stage_parameters trained_on(const transformer& m, const parallel::nd& s,
                                                    const training& t, int stage) {
  return trained_on(m, s, t, stage, t.lora.on() ? stage_parameters{} : parameters_on(m, s, stage));
}

/// The share of `x` one rank holds when sharded (ZeRO-1 and up shard what the optimizer updates):
/// dense parameters over the shard group x expert x context ranks, expert parameters over the
/// shard group x context ranks; all of `x` when `sharded` is false.
[[nodiscard]] constexpr double partition_of(const parallel::nd& s, const stage_parameters& x,
                                            bool sharded = true) {
  if (!sharded) return x.dense + x.expert;
  const double shards = s.data.shards() * static_cast<double>(s.context.degree);
  return x.dense / (shards * s.expert.degree) + x.expert / shards;
}

namespace detail {
/// Weights, gradients and optimizer states of `n` parameters sharded over `shards` ranks by
/// ZeRO stage `zero`, as the framework's engine stores them (`parallel::engine_states`).
constexpr void add_states(memory_breakdown& mem, double n, double shards, int zero,
                          const training& t) {
  const auto z = parallel::engine_states(n, shards, zero, t);
  mem.weights += bytes{z.weights};
  mem.gradients += bytes{z.gradients};
  mem.optimizer_states += bytes{z.optimizer};
}
constexpr int sequence_of(const transformer& m, const training& t) {
  return t.sequence_or(m.sequence);
}
}  // namespace detail

/// The pieces of a stage's memory the moments are made of (see `stage_memory`).
struct memory_terms {
  memory_breakdown states;  ///< model states, buffers, batch, workspace, other
  double fixed = 0;         ///< all of `states` but the gradients
  double gradients = 0;     ///< every gradient of the stage
  bool persistent = true;   ///< gradients live all step (else: made in backward)
  /// more than one micro-batch runs on the stage: the first backward makes every gradient and
  /// they accumulate through the later micro-batches (so the peak moments hold them all)
  bool accumulates = false;
  double layer_gradients = 0;  ///< one layer's
  double head_gradients = 0;   ///< embedding's and head's (made by the first backward)
  double layers = 0, in_flight = 1;
  double saved = 0, casts = 0;            ///< one layer's saved tensors and weight copies
  double full_layer = 0, full_casts = 0;  ///< the same without recomputation
  double rebuilt = 0;                     ///< a recomputed layer during its backward
  double embedding = 0;       ///< input-embedding tensors of the in-flight micro-batches
  double head = 0;            ///< final norm and projection inputs
  double head_casts = 0;      ///< the projection's weight copy
  double logits = 0;          ///< the loss's working set, freed by the head's backward
  double forward_logits = 0;  ///< the same at the forward's end (with `until_loss`)
  double until_loss = 0;      ///< tensors alive until the forward ends
  double held_logits = 0;     ///< logits the training loop keeps
  double update_buffer = 0;   ///< the optimizer step's working copy (`parallel::update_buffer`)
};

/// What the strategy's lowering keeps: a layer (as the strategy recomputes it, and without
/// recomputation), the embedding and the head, per micro-batch; and the model's parameter counts
/// (`parameters_of`), so that each stage's memory does not count them again.
struct plan_keeps {
  layer_keeps layer, full, embedding, head;
  model_parameters parameters{};
};
[[nodiscard]] constexpr plan_keeps keeps_of(const transformer& m, const parallel::nd& s,
                                            const training& t) {
  using lower::phase;
  const lower::shard sh = lower::shard_of(m, s, t);
  plan_keeps k{keeps_of(m, sh, t),
               {},
               keeps_by([&](auto&& v) { lower::embedding(m, sh, t, phase::forward, v); }),
               keeps_by([&](auto&& v) { lower::head(m, sh, t, phase::forward, v); }),
               parameters_of(m)};
  if (sh.recompute == recompute::full) {
    lower::shard whole = sh;
    whole.recompute = recompute::none;
    k.full = keeps_of(m, whole, t);
  } else {
    k.full = k.layer;
  }
  return k;
}

/// DeepSpeed's pipeline engine on stage `stage` (runtime/pipe/engine.py; `recipe::pipe_buffers`):
/// `TrainSchedule.num_pipe_buffers` = max(2, min(p - stage, m)) slots, each holding the received
/// activation b s h (rebuilt whole after a partitioned receive; the forward runs on a clone of
/// it, which the layer's own saved input counts) on every stage but the first, and the stage's
/// output on every stage but the last, partitioned over the tensor-parallel group before it is
/// sent (b s h / t). Counted all step: the received slots stay filled between steps, the outputs
/// are released by their backward (an overstatement at the optimizer step of at most the slots'
/// outputs).
[[nodiscard]] constexpr double pipe_buffers(const transformer& m, const parallel::nd& s,
                                            const training& t, int stage) {
  const int p = s.pipeline.degree;
  if (!t.framework.pipe_buffers || p == 1) return 0;
  const double slots = strata::detail::max(2, strata::detail::min(p - stage, s.micro_batches(t)));
  const double act = static_cast<double>(s.micro_batch) * detail::sequence_of(m, t) /
                     s.context.degree * m.hidden * t.activation_bytes();
  return slots * ((stage > 0 ? act : 0.0) + (stage < p - 1 ? act / s.tensor.degree : 0.0));
}

/// The communication buffers the framework's data-parallel engine holds on one rank of a stage
/// with `params` trained parameters of `weights` in all:
/// - Megatron: one gradient bucket in flight (ZeRO-0); ZeRO-3 two layers' gathered weights (the
///   current and the prefetched);
/// - DeepSpeed: the contiguous gradient bucket (`reduce_bucket_size`); ZeRO-3 also the module
///   being used and the prefetch bucket (`stage3_prefetch_bucket_size`) gathered;
/// - FSDP: a unit's unsharded 16-bit gradients and their `reduce_dtype` copy before its
///   reduce-scatter; FULL_SHARD also two units gathered (the rate limiter's cap).
[[nodiscard]] constexpr double engine_buffers(const transformer& m, const parallel::nd& s,
                                              const training& t, double params, double weights) {
  const frameworks::sharding& e = t.framework.data;
  const int zero = s.data.zero;
  const double tp = s.tensor.degree, wb = t.weight_bytes(), gb = t.gradient_bytes();
  const double unit = m.layer_parameters() / tp;  // one layer's parameters on this rank
  const bool dp = s.replicas() * s.context.degree > 1;
  switch (e.engine) {
    case frameworks::data_engine::megatron:
      if (zero >= 3) return 2 * wb * unit;
      if (dp && zero == 0) return strata::detail::min(s.data.bucket, params * gb);
      return 0;
    case frameworks::data_engine::deepspeed: {
      if (!dp) return 0;
      const double bucket = strata::detail::min(e.reduce_bucket, params * gb);
      if (zero < 3) return bucket;
      const lower::layer_weights w =
          lower::weight_modules(m, lower::shard_of(m, s, t), t, e.persistence_threshold);
      return bucket + strata::detail::min(wb * w.largest + e.prefetch_bucket, wb * weights);
    }
    case frameworks::data_engine::fsdp:
      if (!dp) return 0;
      return (wb + gb) * unit + (zero >= 3 ? 2 * wb * unit : 0.0);
  }
  return 0;
}

/// The terms of pipeline stage `stage` on one rank.
[[nodiscard]] constexpr memory_terms stage_terms(const transformer& m, const parallel::nd& s,
                                                 const training& t, int stage,
                                                 const plan_keeps& keeps) {
  memory_terms x;
  memory_breakdown& mem = x.states;
  mem.stage = stage;
  const frameworks::recipe& r = t.framework;
  const stage_parameters n = parameters_on(m, s, stage, keeps.parameters);
  const double dense_shards =
      static_cast<double>(s.data.shards()) * s.expert.degree * s.context.degree;
  const double expert_shards = static_cast<double>(s.data.shards()) * s.context.degree;
  if (t.lora.on()) {
    // frozen weights: their storage copy only (sharded by ZeRO-3); the adapters train in full
    const bool z3 = s.data.zero >= 3;
    mem.weights += bytes{t.weight_bytes() * partition_of(s, n, z3)};
    detail::add_states(mem, trained_on(m, s, t, stage).dense, dense_shards, s.data.zero, t);
    mem.embedding_states = bytes{t.weight_bytes() * n.embedding / (z3 ? dense_shards : 1.0)};
  } else {
    detail::add_states(mem, n.dense, dense_shards, s.data.zero, t);
    detail::add_states(mem, n.expert, expert_shards, s.data.zero, t);
    const auto e = parallel::engine_states(n.embedding, dense_shards, s.data.zero, t);
    mem.embedding_states = bytes{e.weights + e.gradients + e.optimizer};
    x.head_gradients = e.gradients;
  }
  const int p = s.pipeline.degree;
  const lower::shard sh = lower::shard_of(m, s, t);
  const double T = sh.tokens(), tp = s.tensor.degree;
  x.layers = s.stage_layers(m, stage);
  x.in_flight = s.pipeline.in_flight(s.micro_batches(t), stage);
  using lower::keep_kind;
  x.saved = keeps.layer.activation;
  x.casts = keeps.layer.weight_copy;
  x.until_loss = x.layers * x.in_flight * keeps.layer.until_loss;
  x.full_layer = keeps.full.activation;
  x.full_casts = keeps.full.weight_copy;
  if (sh.recompute == recompute::full) x.rebuilt = x.full_layer;
  x.layer_gradients =
      (mem.gradients.count() - x.head_gradients) / strata::detail::max(x.layers, 1.0);
  if (stage == 0) x.embedding = x.in_flight * keeps.embedding.activation;
  if (stage == p - 1) {
    const double act = t.activation_bytes(), V = m.vocabulary / tp;
    // the final norm's and the projection's inputs (and weight copy; Megatron's fp32 logits)
    x.head = keeps.head.activation;
    x.head_casts = keeps.head.weight_copy;
    if (r.loss != frameworks::loss_style::vocab_parallel) {
      // the loss upcasts the logits to fp32 and, at its backward's peak, holds log-softmax's
      // output, its gradient and the logits' gradient (12 B per logit; measured:
      // h100_steps_gpt2.csv); `transformers` also peaks in the forward with the bf16 logits,
      // their fp32 copy and log-softmax's output (10 B) while the caches live; a loop that keeps
      // the logits (nanoGPT returns them) holds them through the backward
      x.logits = 3 * 4 * T * V;
      if (r.loss == frameworks::loss_style::transformers) x.forward_logits = 10 * T * V;
      x.held_logits = r.keep_logits ? act * T * V : 0.0;
    }
  }
  {
    const stage_parameters tn = trained_on(m, s, t, stage, n);
    mem.buffers = bytes{engine_buffers(m, s, t, tn.dense + tn.expert, n.dense + n.expert) +
                        pipe_buffers(m, s, t, stage)};
    x.update_buffer =
        parallel::update_buffer(partition_of(s, tn, s.data.zero >= 1), s.data.zero, t);
  }
  mem.other = bytes{t.reserved};
  mem.batch = bytes{r.batch_bytes_per_token * T};
  mem.workspace = bytes{r.workspace};
  x.persistent = r.persistent_gradients;
  x.accumulates = s.micro_batches(t) > 1;
  x.gradients = mem.gradients.count();
  mem.gradients = bytes{};
  x.fixed = mem.total().count();
  mem.between_steps = bytes{x.fixed + (x.persistent ? x.gradients : 0.0)};
  return x;
}

/// Memory of pipeline stage `stage` on one rank at its peak, the largest of four moments:
/// - loss: model states, every in-flight micro-batch's saved tensors and weight copies, the
///   head's inputs and the loss's working set;
/// - first backward: the same without the loss's working set (and, unless the recipe keeps them
///   through the backward as Megatron's accounting does, the head's inputs), plus the
///   recomputed layer (full recomputation, Korthikanti §5) and, when gradients are made in
///   backward, the embedding's and head's gradients;
/// - last backward: every gradient but the layer's own, the layer's saved and rebuilt tensors,
///   the other in-flight micro-batches;
/// - update: every gradient.
/// Gradients live all step under Megatron (main_grad buffers) and are made by the backward under
/// `zero_grad(set_to_none=True)` (PyTorch eager, Hugging Face).
[[nodiscard]] constexpr memory_terms stage_terms(const transformer& m, const parallel::nd& s,
                                                 const training& t, int stage) {
  return stage_terms(m, s, t, stage, keeps_of(m, s, t));
}

[[nodiscard]] constexpr memory_breakdown stage_memory(const memory_terms& x, const training& t) {
  const bool vocab_parallel = t.framework.loss == frameworks::loss_style::vocab_parallel;
  const bool all_grads = x.persistent || x.accumulates;
  const double g_always = all_grads ? x.gradients : 0.0;
  const double acts = x.layers * x.in_flight * x.saved, casts = x.layers * x.in_flight * x.casts;
  struct moment {
    memory_moment at;
    double gradients, activations, weight_casts, stored, logits, buffers = 0;
    [[nodiscard]] constexpr double total() const {
      return gradients + activations + weight_casts + stored + logits + buffers;
    }
  };
  // Megatron's accounting first: on ties the Korthikanti moment is the one reported
  const moment moments[] = {
      {memory_moment::first_backward, all_grads ? x.gradients : x.head_gradients, acts + x.rebuilt,
       casts + (x.rebuilt > 0 ? x.full_casts : 0.0), x.embedding + (vocab_parallel ? x.head : 0.0),
       x.held_logits},
      {memory_moment::loss, g_always, acts, casts + x.head_casts, x.embedding + x.head,
       x.logits + x.held_logits},
      {memory_moment::loss, g_always, acts + x.until_loss, casts + x.head_casts,
       x.embedding + x.head, x.forward_logits + x.held_logits},
      {memory_moment::last_backward, all_grads ? x.gradients : x.gradients - x.layer_gradients,
       (x.in_flight - 1) * x.layers * x.saved + x.saved + x.rebuilt,
       (x.in_flight - 1) * x.layers * x.casts + x.full_casts, x.embedding, x.held_logits},
      {memory_moment::update, x.gradients, 0, 0, 0, 0, x.update_buffer}};
  const moment* top = &moments[0];
  for (const moment& mo : moments)
    if (mo.total() > top->total()) top = &mo;
  memory_breakdown best = x.states;
  best.moment = top->at;
  best.gradients = bytes{top->gradients};
  best.activations = bytes{top->activations};
  best.weight_casts = bytes{top->weight_casts};
  best.embedding_activations = bytes{top->stored};
  best.logits = bytes{top->logits};
  best.buffers += bytes{top->buffers};
  return best;
}
[[nodiscard]] constexpr memory_breakdown stage_memory(const transformer& m, const parallel::nd& s,
                                                      const training& t, int stage) {
  return stage_memory(stage_terms(m, s, t, stage), t);
}

/// The largest per-device memory over the pipeline stages. Only three stages can hold it: the
/// first (most in-flight micro-batches, the embedding), the second (the fullest of the middle
/// stages, which all have the same layers and fewer micro-batches in flight down the pipeline)
/// and the last (the logits). With `enough`, the stages are looked at in that order and the
/// largest so far is returned as soon as `enough(its total)` holds: a sweep that only needs to
/// know that a plan cannot fit prices one stage, not three.
template <class Enough>
[[nodiscard]] constexpr memory_breakdown peak_stage_memory(const transformer& m,
                                                           const parallel::nd& s, const training& t,
                                                           const plan_keeps& keeps,
                                                           Enough&& enough) {
  const int p = s.pipeline.degree;
  memory_breakdown best = stage_memory(stage_terms(m, s, t, 0, keeps), t);
  const int others = p > 2 ? 2 : p - 1;  // with two stages, stage 1 is the last
  for (int k = 0; k < others && !enough(best.total()); ++k) {
    const memory_breakdown x = stage_memory(stage_terms(m, s, t, k == 0 ? 1 : p - 1, keeps), t);
    if (x.total() > best.total()) best = x;
  }
  return best;
}
[[nodiscard]] constexpr memory_breakdown peak_stage_memory(const transformer& m,
                                                           const parallel::nd& s, const training& t,
                                                           const plan_keeps& keeps) {
  return peak_stage_memory(m, s, t, keeps, [](bytes) { return false; });
}
/// The same, lowering the layer once for every stage (`keeps_of`).
[[nodiscard]] constexpr memory_breakdown peak_stage_memory(const transformer& m,
                                                           const parallel::nd& s,
                                                           const training& t) {
  return peak_stage_memory(m, s, t, keeps_of(m, s, t));
}

// ---- time -----------------------------------------------------------------------------------

/// Time of one layer for one micro-batch on one rank: `lower::layer`'s kernels priced with the
/// device profile (queued back to back) and, for eager recipes, the host's dispatch
/// (`lower::span`).
struct layer_compute {
  lower::span forward, backward;
  lower::span attention;  ///< the attention core's forward (recomputed under selective)
  lower::span embedding_forward, embedding_backward;  ///< first stage
  lower::span head_forward, head_backward;            ///< last stage: norm, logits, loss
  double attention_backward = 0;  ///< s of GPU time (what ring attention hides behind)
  double checkpoint_host = 0;     ///< host time to re-enter a checkpointed layer
  double per_kernel = 0;          ///< host time per kernel (eager recipes)
  double per_tensor = 0;          ///< host time per parameter tensor in the optimizer step
};

namespace detail {
/// Prices kernels into a span: GPU time from the profile, the recipe's host time per kernel.
/// Without host costs the span is the kernels' sum (what a queued stream runs).
struct pricer {
  const device_profile& p;
  gemm_model g;
  bool fp32_attention = false;
  double per_kernel = 0;
  double gpu = 0, attention_gpu = 0;
  lower::span total{}, attention{};  ///< with host costs only

  [[gnu::always_inline]] constexpr void kernel(const lower::kernel_op& k) {  // see lower::emit
    const double t = lower::gpu_time(k, p, g, fp32_attention);
    gpu += t;
    const bool core = k.kind == lower::kernel_kind::attention;
    if (core) attention_gpu += t;
    if (per_kernel <= 0 && k.host <= 0) return;
    lower::span one = lower::span::kernel(per_kernel, t / k.times).repeat(k.times);
    if (k.host > 0) one = lower::span::kernel(k.host, 0).then(one);
    if (k.sync) one = one.then(lower::span::sync());
    total = total.then(one);
    if (core) attention = attention.then(one);
  }
  [[nodiscard]] constexpr lower::span result() const {
    return per_kernel > 0 ? total : lower::span::kernel(0, gpu);
  }
  [[nodiscard]] constexpr lower::span attention_result() const {
    return per_kernel > 0 ? attention : lower::span::kernel(0, attention_gpu);
  }
};
}  // namespace detail

/// Lowers one layer, the embedding and the head for the shard `x` (`lower/transformer.hpp`) and
/// prices them.
[[nodiscard]] constexpr layer_compute lower_layer(const transformer& m, const device_profile& prof,
                                                  const training& tr, const lower::shard& x) {
  const device_profile q = prof.queued().with_tf32(tr.tf32);
  gemm_model g = q.gemm(tr.compute());
  if (tr.compute() == dtype::fp8 && q.dev.peak(dtype::fp8) > q.dev.peak(dtype::bf16)) {
    g.peak = q.dev.peak(dtype::fp8).count();
    g.element = 1;
  }
  const bool eager = tr.framework.eager;
  layer_compute c;
  c.per_kernel = eager ? q.dispatch.per_kernel * tr.framework.dispatch_share : 0.0;
  c.per_tensor = eager ? q.dispatch.per_tensor : 0.0;
  c.checkpoint_host = eager ? q.dispatch.per_checkpoint : 0.0;
  const bool fp32_attention = tr.compute() == dtype::fp32;
  using lower::phase;
  detail::pricer f{q, g, fp32_attention, c.per_kernel}, b = f, ef = f, eb = f, hf = f, hb = f;
  lower::layer(m, x, tr, phase::forward, f);
  lower::layer(m, x, tr, phase::backward, b);
  lower::embedding(m, x, tr, phase::forward, ef);
  lower::embedding(m, x, tr, phase::backward, eb);
  lower::head(m, x, tr, phase::forward, hf);
  lower::head(m, x, tr, phase::backward, hb);
  c.forward = f.result();
  c.attention = f.attention_result();
  c.backward = b.result();
  c.attention_backward = b.attention_gpu;
  c.embedding_forward = ef.result();
  c.embedding_backward = eb.result();
  c.head_forward = hf.result();
  c.head_backward = hb.result();
  return c;
}

/// The same for a strategy's shard (`tp`, `sp`, `cp`, `ep`, micro-batch `b` and its
/// recomputation: some recipes run other kernels under checkpointing, e.g. Hugging Face's
/// models build no k/v cache).
[[nodiscard]] constexpr layer_compute lower_layer(const transformer& m, const device_profile& prof,
                                                  const training& tr, int tp, bool sp, int cp,
                                                  int ep, double b,
                                                  recompute rc = recompute::none) {
  const double seq = detail::sequence_of(m, tr);
  return lower_layer(m, prof, tr, lower::shard{b, seq / cp, seq, tp, sp, cp, ep, rc});
}

/// What collective calls cost, as NCCL prices each call (`comm::nccl`: the fastest algorithm and
/// protocol, launch included), split into the start-up that every call pays whatever its size
/// and the transfer. The closed form adds the two; the simulator runs the start-up as a flow's
/// latency and the transfer as its bytes on the links, so that contention stretches only the
/// transfer and an uncontended flow takes exactly `total()`.
struct call_cost {
  seconds startup{};
  seconds transfer{};
  [[nodiscard]] static constexpr call_cost of(comm::collective op, const cluster& c, group g,
                                              bytes s) {
    const comm::nccl::choice x = comm::nccl::choose(op, c, g, s);
    return {x.startup, x.time - x.startup};
  }
  [[nodiscard]] constexpr seconds total() const { return startup + transfer; }
  constexpr call_cost& operator+=(const call_cost& o) {
    startup += o.startup;
    transfer += o.transfer;
    return *this;
  }
  friend constexpr call_cost operator+(call_cost a, const call_cost& b) { return a += b; }
  friend constexpr call_cost operator*(double k, const call_cost& a) {
    return {k * a.startup, k * a.transfer};
  }
};

namespace detail {
/// The data axis's ZeRO shard group (all data-parallel ranks unless hybrid sharding is on).
constexpr group shard_group(const parallel::nd& s) {
  group g = s.group_of(parallel::axis::data);
  g.size = s.data.shards();
  return g;
}
/// The ranks holding the same shard in the other shard groups (hybrid sharding's replicas).
constexpr group replica_group(const parallel::nd& s) {
  group g = s.group_of(parallel::axis::data);
  g.stride *= s.data.shards();
  g.size = s.data.degree / s.data.shards();
  return g;
}
/// A collective over several axes at once, composed hierarchically: reduce-scatter over each
/// axis in turn on a shrinking buffer (all-gather back in reverse). An all-reduce over one axis
/// is NCCL's all-reduce; over several, a reduce-scatter and an all-gather per axis.
constexpr call_cost over_axes(comm::collective op, const cluster& c, const parallel::nd& s,
                              std::initializer_list<parallel::axis> axes, bytes size) {
  call_cost total{};
  if (!(size > bytes{})) return total;  // nothing to move (a dense model's expert part)
  int spanned = 0;
  for (const parallel::axis ax : axes) spanned += s.group_of(ax).size > 1 ? 1 : 0;
  bytes piece = size;
  for (const parallel::axis ax : axes) {
    // ZeRO's collectives stay inside the shard group; plain all-reduces span every replica
    const group g = ax == parallel::axis::data && op != comm::collective::all_reduce
                        ? shard_group(s)
                        : s.group_of(ax);
    if (g.size == 1) continue;
    if (op == comm::collective::all_reduce && spanned > 1)
      total += call_cost::of(comm::collective::reduce_scatter, c, g, piece) +
               call_cost::of(comm::collective::all_gather, c, g, piece);
    else
      total += call_cost::of(op, c, g, piece);
    piece = piece / static_cast<double>(g.size);
  }
  return total;
}
}  // namespace detail

/// Blocking collectives of one layer for one micro-batch on one rank.
struct layer_collectives {
  seconds tensor{};  ///< forward: 2 all-reduces (or all-gather + reduce-scatter), not hidden
  seconds tensor_backward{};   ///< the same in the backward
  seconds context_forward{};   ///< ring attention's K/V exchange not hidden by attention
  seconds context_backward{};  ///< K/V and their gradients, behind attention's backward
  seconds expert{};            ///< each pass: dispatch and combine all-to-alls
  [[nodiscard]] constexpr seconds forward() const { return tensor + context_forward + expert; }
  [[nodiscard]] constexpr seconds backward() const {
    return tensor_backward + context_backward + expert;
  }
};

/// What of a pass's tensor-parallel collectives `comm` stays exposed when the framework overlaps
/// them with the GEMMs beside them (`recipe::tp_comm_overlap`, Megatron-Core with Transformer
/// Engine's userbuffers): each all-gather and reduce-scatter is split into `tp` chunks pipelined
/// with the GEMM it feeds or drains, so it hides behind the layer's GEMM time `gemm` except for
/// one chunk that starts (or ends) the pipeline.
[[nodiscard]] constexpr seconds overlapped_tensor_comm(seconds comm, seconds gemm, int tp) {
  return max(comm - gemm, comm / static_cast<double>(tp));
}

/// Prices `lower::layer_collectives` on the groups `s` lays out: tensor-parallel collectives per
/// call as NCCL prices them (`comm::nccl`), ring attention's transfers on the context ring's link
/// less the attention they hide behind, MoE all-to-alls as direct exchanges.
[[nodiscard]] constexpr layer_collectives collectives_of(const transformer& m,
                                                         const parallel::nd& s, const cluster& c,
                                                         const training& tr,
                                                         const layer_compute& lc) {
  using parallel::axis;
  struct visitor {
    const cluster& c;
    const parallel::nd& s;
    const layer_compute& lc;
    layer_collectives out{};
    // the last tensor-parallel call priced: a layer's calls mostly repeat (the all-reduce after
    // attention and the one after the MLP), and NCCL's tuner weighs nine choices per call
    comm::collective tp_op = comm::collective::all_reduce;
    double tp_bytes = -1;
    seconds tp_time{};
    constexpr void collective(const lower::collective_op& op) {
      const bool fwd = op.when == lower::phase::forward;
      switch (op.axis) {
        case lower::comm_axis::tensor:
          if (fwd) {
            if (op.op != tp_op || op.bytes != tp_bytes) {
              tp_op = op.op;
              tp_bytes = op.bytes;
              tp_time = comm::nccl::time(op.op, c, s.group_of(axis::tensor), bytes{op.bytes});
            }
            out.tensor += tp_time;
          }
          break;
        case lower::comm_axis::context: {
          const seconds ring =
              op.times * comm::ring_link(c, s.group_of(axis::context)).transfer(bytes{op.bytes});
          if (fwd)
            out.context_forward = max(ring - seconds{lc.attention.gpu}, seconds{});
          else
            out.context_backward = max(ring - seconds{lc.attention_backward}, seconds{});
          break;
        }
        case lower::comm_axis::expert:
          if (fwd)
            out.expert += comm::direct::time(op.op, c, s.group_of(axis::expert), bytes{op.bytes});
          break;
      }
    }
  } v{c, s, lc};
  const lower::shard x = lower::shard_of(m, s, tr);
  lower::layer_collectives(m, x, tr, lower::phase::forward, v);
  if (x.cp > 1)  // only ring attention's backward differs from its forward
    lower::layer_collectives(m, x, tr, lower::phase::backward, v);
  v.out.tensor_backward = v.out.tensor;
  if (tr.framework.tp_comm_overlap && x.tp > 1) {
    // the GEMMs are the layer's kernels less its attention core
    v.out.tensor =
        overlapped_tensor_comm(v.out.tensor, seconds{lc.forward.gpu - lc.attention.gpu}, x.tp);
    v.out.tensor_backward = overlapped_tensor_comm(
        v.out.tensor_backward, seconds{lc.backward.gpu - lc.attention_backward}, x.tp);
  }
  return v.out;
}

/// `collectives_of` over a run of plans of one model, cluster and training setup, each passed
/// with the `layer_compute` lowered for it: priced again only when a plan's lowering (tensor
/// degree, sequence parallelism, context, expert, micro-batch, recomputation) or the layout of
/// its tensor, context or expert group differs from the previous plan's, which is all that
/// `collectives_of` reads of a plan. The sweep and the batch walk plans grouped that way.
class collectives_memo {
 public:
  [[nodiscard]] const layer_collectives& operator()(const transformer& m, const parallel::nd& s,
                                                    const cluster& c, const training& tr,
                                                    const layer_compute& lc) {
    using parallel::axis;
    const group t = s.group_of(axis::tensor), x = s.group_of(axis::context),
                e = s.group_of(axis::expert);
    const std::array<int, 6> shard = lower::shard_key(s);
    const std::array<int, 9> laid{t.first,  t.size,  t.stride, x.first, x.size,
                                  x.stride, e.first, e.size,   e.stride};
    if (!priced_ || shard != shard_ || laid != laid_) {
      shard_ = shard;
      laid_ = laid;
      last_ = collectives_of(m, s, c, tr, lc);
      priced_ = true;
    }
    return last_;
  }

 private:
  std::array<int, 6> shard_{};  ///< the plan's lowering (`lower::shard_key`)
  std::array<int, 9> laid_{};   ///< its tensor, context and expert groups
  layer_collectives last_{};
  bool priced_ = false;
};

/// What one micro-batch runs on pipeline stage `i`, in issue order: the embedding (first
/// stage), each layer's forward, the head's forward and backward (last stage), each layer's
/// recomputation and backward, the embedding's backward. Blocking collectives count as GPU time.
struct stage_spans {
  lower::span forward_layer, backward_layer;  ///< with their collectives and recomputation
  lower::span recompute;                      ///< what `backward_layer` repeats of the forward
  [[nodiscard]] constexpr lower::span micro_batch(const layer_compute& lc, double layers,
                                                  bool first, bool last) const {
    lower::span s = first ? lc.embedding_forward : lower::span{};
    s = s.then(forward_layer.repeat(layers));
    if (last) s = s.then(lc.head_forward).then(lc.head_backward);
    s = s.then(backward_layer.repeat(layers));
    if (first) s = s.then(lc.embedding_backward);
    return s;
  }
};

[[nodiscard]] constexpr stage_spans spans_of(const layer_compute& lc,
                                             const layer_collectives& lcoll, recompute rc) {
  stage_spans out;
  const lower::span comm_f = lower::span::kernel(0, lcoll.forward().count());
  const lower::span comm_b = lower::span::kernel(0, lcoll.backward().count());
  out.forward_layer = lc.forward.then(comm_f);
  if (rc == recompute::full)
    out.recompute = lower::span::kernel(lc.checkpoint_host, 0).then(lc.forward).then(comm_f);
  else if (rc == recompute::selective)
    out.recompute = lc.attention;
  out.backward_layer = out.recompute.then(lc.backward).then(comm_b);
  return out;
}

/// The optimizer step over `params` parameters in `tensors` tensors on one rank: one
/// memory-bound pass (`training::update_bytes` per parameter) issued per tensor.
[[nodiscard]] constexpr lower::span optimizer_span(const device_profile& prof, const training& tr,
                                                   const layer_compute& lc, double params,
                                                   double tensors) {
  return lower::span::kernel(tensors * lc.per_tensor,
                             prof.queued(prof.copy).time(tr.update_bytes() * params));
}

/// Fractions of the host's datasheet figures (`host_side`) an offloaded step achieves (our
/// assumptions): pinned copies reach about 80 % of a PCIe link, NVMe transfers about 90 % of the
/// drives'.
struct offload_efficiency {
  static constexpr double pcie = 0.8, nvme = 0.9;
};

/// ZeRO-Offload's step for a rank's partition of `partition` parameters (Ren et al. 2021 §4):
/// the 16-bit gradient partition goes to the host as the last backward produces it (hidden
/// behind `backward` up to its length), the node's CPUs update every partition of the node at
/// `host_side::optimizer` parameters per second, ZeRO-Infinity reads and writes the optimizer
/// states from NVMe, and the updated 16-bit partition comes back over PCIe. The DeepSpeed
/// tutorial's 10B model on one V100 gives 1.6 + 6.3 + 1.6 = 9.5 s here against 7.6-8.0 s
/// measured for its optimizer phase (test/validation/published_frameworks.cpp).
[[nodiscard]] constexpr seconds offloaded_update(const cluster& c, const training& tr,
                                                 double partition, seconds backward) {
  const host_side& h = c.host;
  const bool nvme = tr.framework.data.offload_optimizer == frameworks::offload_device::nvme;
  if (!(h.pcie > byte_rate{}) || !(h.optimizer > 0) || (nvme && !(h.nvme > byte_rate{})))
    throw plan_error(limits::offload_needs_host);
  const double node = c.depth > 1 ? c.levels[0].fanout : c.devices();  // GPUs sharing the host
  // ZeRO-Offload keeps every partition of the node in host memory: the optimizer states (fp32
  // masters and moments) and the fp32 gradients; ZeRO-Infinity's NVMe holds the states instead
  if (!nvme && h.capacity > bytes{}) {
    const double need = node * partition * (tr.optimizer_bytes() + 4);
    if (need > h.capacity.count())
      throw plan_error("offload: the node's optimizer states and fp32 gradients (" +
                       std::to_string(static_cast<long long>(need / (1 << 30))) +
                       " GiB) exceed its host memory (cluster.host.dram_GiB: " +
                       std::to_string(static_cast<long long>(h.capacity.count() / (1 << 30))) +
                       " GiB)");
  }
  const double pcie = h.pcie.count() * offload_efficiency::pcie;
  const seconds down{partition * tr.gradient_bytes() / pcie};
  const seconds up{partition * tr.weight_bytes() / pcie};
  seconds cpu{node * partition / h.optimizer};
  if (nvme)
    cpu += seconds{2 * node * partition * tr.optimizer_bytes() /
                   (h.nvme.count() * offload_efficiency::nvme)};
  return max(down - backward, seconds{}) + cpu + up;
}

/// How many calls a step's data-parallel collectives take on one rank, per micro-batch for
/// ZeRO-2/3 (the engine's rule, `frameworks::sharding`): ZeRO-3 gathers one layer per call
/// (Megatron, FSDP's units) or one module (DeepSpeed, above the persistence threshold) in each
/// pass; ZeRO-2/3 reduce once per micro-batch (Megatron), per unit (FSDP) or per
/// `reduce_bucket_size` (DeepSpeed); `bucket` is the reduction's bucket for ZeRO-0/1.
struct calls_per_step {
  double gathers = 1, reduces = 1, bucket = 0;
};
[[nodiscard]] constexpr calls_per_step collective_calls(const transformer& m, const parallel::nd& s,
                                                        const training& tr, double layers,
                                                        double gradient_bytes) {
  const frameworks::sharding& e = tr.framework.data;
  const int zero = s.data.zero;
  const double l = strata::detail::max(1.0, layers);
  calls_per_step k;
  k.bucket = e.engine == frameworks::data_engine::deepspeed ? e.reduce_bucket : s.data.bucket;
  switch (e.engine) {
    case frameworks::data_engine::megatron:
      if (zero >= 3) k.gathers = l;
      break;
    case frameworks::data_engine::fsdp:
      if (zero >= 3) k.gathers = l;
      if (zero >= 2) k.reduces = l;
      break;
    case frameworks::data_engine::deepspeed:
      if (zero >= 3)
        k.gathers = l * strata::detail::max(1.0, lower::weight_modules(m, lower::shard_of(m, s, tr),
                                                                       tr, e.persistence_threshold)
                                                     .modules);
      if (zero >= 2 && e.reduce_bucket > 0)
        k.reduces =
            strata::detail::max(1.0, strata::detail::ceil_of(gradient_bytes / e.reduce_bucket));
      break;
  }
  return k;
}

/// The data-parallel (and ZeRO) collectives of one stage's parameters `n` (all) and `tn`
/// (trained) in one step, each call priced by NCCL (`call_cost`): the all-reduce of the
/// gradients (ZeRO-0), the reduce-scatter of the gradients per micro-batch (ZeRO-1: per step) in
/// `calls.reduces` calls, with hybrid sharding's all-reduce of the reduced shard across the
/// shard groups, and the all-gather of the weights per pass (ZeRO-3: every weight, in
/// `calls.gathers` calls; ZeRO-1/2: the updated ones, once). Dense weights span the context,
/// expert and data axes, expert weights the context and data axes. The closed form and the
/// simulator both price the data-parallel traffic with it.
struct data_collective_costs {
  call_cost all_reduce, reduce_scatter, all_gather;
};
[[nodiscard]] constexpr call_cost data_collective(comm::collective op, const cluster& c,
                                                  const parallel::nd& s, const stage_parameters& x,
                                                  double per_param, double calls = 1) {
  using parallel::axis;
  const double k = strata::detail::max(1.0, calls);
  return k * (detail::over_axes(op, c, s, {axis::context, axis::expert, axis::data},
                                bytes{x.dense * per_param / k}) +
              detail::over_axes(op, c, s, {axis::context, axis::data},
                                bytes{x.expert * per_param / k}));
}
[[nodiscard]] constexpr data_collective_costs data_collectives_of(
    const parallel::nd& s, const cluster& c, const training& tr, const stage_parameters& n,
    const stage_parameters& tn, const calls_per_step& calls) {
  using comm::collective;
  const int zero = s.data.zero;
  const double gb = tr.gradient_bytes(), wb = tr.weight_bytes();
  data_collective_costs out;
  if (zero == 0) {
    out.all_reduce = data_collective(collective::all_reduce, c, s, tn, gb, calls.reduces);
    return out;
  }
  out.reduce_scatter = data_collective(collective::reduce_scatter, c, s, tn, gb, calls.reduces);
  const group replicas = detail::replica_group(s);
  if (replicas.size > 1) {
    const double shard = partition_of(s, tn) * gb;
    const double k = strata::detail::max(1.0, calls.reduces);
    out.reduce_scatter += k * call_cost::of(collective::all_reduce, c, replicas, bytes{shard / k});
  }
  out.all_gather = data_collective(collective::all_gather, c, s, zero >= 3 ? n : tn, wb,
                                   zero >= 3 ? calls.gathers : 1.0);
  return out;
}

/// `data_collectives_of` over many plans of one cluster and training setup, remembered by what it
/// reads of a plan: ZeRO stage and shards, the data, context and expert groups, the parameters
/// and the calls. In a sweep, plans that differ only in micro-batch, recomputation or
/// interleaving move the same gradients and weights over the same groups; each such traffic is
/// priced once (an open-addressing table; NCCL's tuner costs about 2,000 instructions a plan).
/// It tells setups apart by address: a cluster or training setup changed in place while the memo
/// is in use is not noticed.
class data_collectives_memo {
 public:
  [[nodiscard]] data_collective_costs operator()(const parallel::nd& s, const cluster& c,
                                                 const training& tr, const stage_parameters& n,
                                                 const stage_parameters& tn,
                                                 const calls_per_step& calls) {
    if (&c != cluster_ || &tr != training_) {  // another setup: nothing known carries over
      slots_.clear();
      used_ = 0;
      cluster_ = &c;
      training_ = &tr;
    }
    using parallel::axis;
    const group d = s.group_of(axis::data), x = s.group_of(axis::context),
                e = s.group_of(axis::expert);
    auto pair = [](int a, int b) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32 |
             static_cast<std::uint32_t>(b);
    };
    auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
    const key k{pair(s.data.zero, s.data.shards()),
                pair(d.size, d.stride),
                pair(x.size, x.stride),
                pair(e.size, e.stride),
                bits(n.dense),
                bits(n.expert),
                bits(tn.dense),
                bits(tn.expert),
                bits(calls.reduces),
                bits(calls.gathers)};
    if (2 * (used_ + 1) > slots_.size()) grow();
    std::size_t i = hash(k) & (slots_.size() - 1);
    for (; slots_[i].used; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i].k == k) return slots_[i].v;
    slots_[i] = {k, data_collectives_of(s, c, tr, n, tn, calls), true};
    ++used_;
    return slots_[i].v;
  }

 private:
  using key = std::array<std::uint64_t, 10>;
  struct slot {
    key k{};
    data_collective_costs v{};
    bool used = false;
  };
  static std::size_t hash(const key& k) {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (const std::uint64_t w : k) h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
  void grow() {
    std::vector<slot> old(strata::detail::max<std::size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    for (const slot& o : old)
      if (o.used) {
        std::size_t i = hash(o.k) & (slots_.size() - 1);
        while (slots_[i].used) i = (i + 1) & (slots_.size() - 1);
        slots_[i] = o;
      }
  }
  std::vector<slot> slots_;
  std::size_t used_ = 0;
  const cluster* cluster_ = nullptr;
  const training* training_ = nullptr;
};

/// One iteration's time on the critical path, with kernel times `lc` from `lower_layer` and the
/// layer's collectives `lcoll` from `collectives_of` (pass the same to every strategy that shares
/// tp, sp, cp, ep and b, and for `lcoll` the same tensor, context and expert groups); a sweep
/// passes `data` to price each plan's data-parallel traffic once.
[[nodiscard]] constexpr time_breakdown iteration(const transformer& m, const parallel::nd& s,
                                                 const cluster& c, const training& tr,
                                                 const device_profile& prof,
                                                 const layer_compute& lc,
                                                 const layer_collectives& lcoll,
                                                 data_collectives_memo* data = nullptr) {
  using parallel::axis;
  const double seq = detail::sequence_of(m, tr);
  const int p = s.pipeline.degree, mb = s.micro_batches(tr);
  const double b = s.micro_batch, sl = seq / s.context.degree, h = m.hidden;
  const double act = tr.activation_bytes();
  const int tp = s.tensor.degree;
  const recompute rc = s.recomputation;

  const stage_spans sp = spans_of(lc, lcoll, rc);

  // per micro-batch time of each stage; the slowest sets the steady state. The middle stages
  // are alike, so three stage times give the worst and the sum.
  // without host costs a span is its GPU time: sum (the same algebra, fewer operations)
  const bool host_free = lc.per_kernel <= 0 && lc.checkpoint_host <= 0;
  auto stage_span = [&](int i) {
    if (!host_free) return sp.micro_batch(lc, s.stage_layers(m, i), i == 0, i == p - 1);
    double t = s.stage_layers(m, i) * (sp.forward_layer.gpu + sp.backward_layer.gpu);
    if (i == 0) t += lc.embedding_forward.gpu + lc.embedding_backward.gpu;
    if (i == p - 1) t += lc.head_forward.gpu + lc.head_backward.gpu;
    return lower::span::kernel(0, t);
  };
  lower::span crit = stage_span(0);
  seconds worst{crit.time}, sum = worst;
  int critical = 0;
  if (p > 2) {
    const lower::span middle = stage_span(1);
    sum += (p - 2) * seconds{middle.time};
    if (seconds{middle.time} > worst) worst = seconds{middle.time}, critical = 1, crit = middle;
  }
  if (p > 1) {
    const lower::span last = stage_span(p - 1);
    sum += seconds{last.time};
    if (seconds{last.time} > worst) worst = seconds{last.time}, critical = p - 1, crit = last;
  }
  const double lcrit = s.stage_layers(m, critical);
  const bool first = critical == 0, last = critical == p - 1;
  time_breakdown T;
  T.forward = mb * seconds{lcrit * lc.forward.gpu + (first ? lc.embedding_forward.gpu : 0.0) +
                           (last ? lc.head_forward.gpu : 0.0)};
  T.backward = mb * seconds{lcrit * lc.backward.gpu + (first ? lc.embedding_backward.gpu : 0.0) +
                            (last ? lc.head_backward.gpu : 0.0)};
  T.recompute = mb * lcrit * seconds{sp.recompute.gpu};
  T.tensor_comm = mb * lcrit * (lcoll.tensor + lcoll.tensor_backward);
  T.context_comm = mb * lcrit * (lcoll.context_forward + lcoll.context_backward);
  T.expert_comm = mb * lcrit * 2.0 * lcoll.expert;
  T.pipeline_bubble = s.pipeline.bubble(sum, worst);
  if (p > 1) {
    // each forward and backward step waits for its send of b s h / t (Megatron's scatter/gather:
    // each tensor-parallel rank sends its 1/t)
    const group g = s.group_of(axis::pipeline);
    const interconnect link = c.between(0, g.stride);
    T.pipeline_p2p = s.pipeline.sends(mb) * link.transfer(bytes{b * sl * h * act / tp});
  }

  // data parallelism and ZeRO on the critical stage's parameters: every weight is gathered,
  // the trained ones (LoRA: the adapters) reduced and updated
  const stage_parameters n = parameters_on(m, s, critical), tn = trained_on(m, s, tr, critical, n);
  const int zero = s.data.zero;
  const double gb = tr.gradient_bytes(), wb = tr.weight_bytes();
  const frameworks::sharding& e = tr.framework.data;
  const calls_per_step calls = collective_calls(m, s, tr, lcrit, (tn.dense + tn.expert) * gb);
  const double bucket_fraction = strata::detail::min(
      1.0, calls.bucket / strata::detail::max((tn.dense + tn.expert) * gb, 1.0));
  const seconds f_mb = T.forward / static_cast<double>(mb);
  const seconds b_mb = (T.backward + T.recompute) / static_cast<double>(mb);
  // the rank's parameter partition (what its optimizer updates)
  const double partition = partition_of(s, tn, zero >= 1);
  // ZeRO-Infinity brings the weights over PCIe on a single rank too
  const bool offload_weights =
      zero >= 3 && e.offload_parameters != frameworks::offload_device::none;
  if (s.replicas() * s.context.degree > 1 || offload_weights) {
    const data_collective_costs dc =
        data ? (*data)(s, c, tr, n, tn, calls) : data_collectives_of(s, c, tr, n, tn, calls);
    seconds ag = dc.all_gather.total();
    // ZeRO-Infinity: each pass first brings the rank's weight partition over PCIe
    if (offload_weights) {
      if (!(c.host.pcie > byte_rate{}) ||
          (e.offload_parameters == frameworks::offload_device::nvme &&
           !(c.host.nvme > byte_rate{})))
        throw plan_error(limits::offload_needs_host);
      ag += seconds{partition_of(s, n) * wb / (c.host.pcie.count() * offload_efficiency::pcie)};
    }
    const parallel::data_parallel::collective_times dp{dc.all_reduce.total(),
                                                       dc.reduce_scatter.total(), ag};
    T.data_comm =
        s.data.exposed(mb, dp, f_mb, b_mb, 1.0 / strata::detail::max(1.0, lcrit), bucket_fraction);
  }
  if (e.offload_optimizer != frameworks::offload_device::none) {
    T.optimizer = offloaded_update(c, tr, partition, b_mb);
  } else {
    // one memory-bound pass over this rank's (sharded) parameters
    const lower::span opt = optimizer_span(
        prof, tr, lc, partition,
        lc.per_tensor > 0 ? lower::parameter_tensors(m, tr.framework) * lcrit / m.layers : 0.0);
    T.optimizer = seconds{opt.gpu};
    T.host = seconds{p == 1 ? crit.repeat(mb).then(opt).exposed_host()
                            : mb * crit.exposed_host() + opt.exposed_host()};
    return T;
  }
  // an eager host: the time the GPU waits for kernels to be issued (exact on one stage, where
  // the micro-batches run back to back; the update runs on the CPU here)
  T.host = seconds{p == 1 ? crit.repeat(mb).exposed_host() : mb * crit.exposed_host()};
  return T;
}

/// `iteration` with the layer's collectives priced for `s` (`collectives_of`).
[[nodiscard]] constexpr time_breakdown iteration(const transformer& m, const parallel::nd& s,
                                                 const cluster& c, const training& tr,
                                                 const device_profile& prof,
                                                 const layer_compute& lc) {
  return iteration(m, s, c, tr, prof, lc, collectives_of(m, s, c, tr, lc));
}

/// The report of a plan: its time (`iteration`), its peak memory (`peak_stage_memory`), FLOPs.
[[nodiscard]] constexpr report evaluate(const transformer& m, const parallel::nd& s,
                                        const cluster& c, const training& tr,
                                        const device_profile& prof, const layer_compute& lc) {
  report r;
  r.strategy = parallel::nd::name;
  r.devices = s.devices();
  r.batch = tr.batch;
  r.iterations = tr.iterations();
  r.capacity = c.dev.memory;
  r.micro_batches = s.micro_batches(tr);
  r.peak = c.dev.peak(tr.compute());
  const double seq = detail::sequence_of(m, tr);
  r.tokens = tr.batch * seq;
  r.model_flops = model_flops(m, tr.batch, seq);
  r.hardware_flops = hardware_flops(m, tr.batch, seq, s.recomputation);
  r.memory = peak_stage_memory(m, s, tr);
  r.headroom = headroom_of(s, tr.runtime, r.memory.total());
  r.time = iteration(m, s, c, tr, prof, lc);
  return r;
}

/// Evaluates a transformer plan; checks it first (`parallel::nd::check`).
[[nodiscard]] constexpr report evaluate(const transformer& m, const parallel::nd& s,
                                        const cluster& c, const training& tr,
                                        const device_profile& prof) {
  s.check(m, tr, c.devices());
  return evaluate(m, s, c, tr, prof, lower_layer(m, prof, tr, lower::shard_of(m, s, tr)));
}

/// Evaluates with the device's datasheet peaks and the GEMM efficiency fitted on the H100
/// (`datasheet_profile(c.dev, h100_fitted_gemm)`, the profile validated on SC'21 Table 1).
[[nodiscard]] constexpr report evaluate(const transformer& m, const parallel::nd& s,
                                        const cluster& c, const training& tr) {
  return evaluate(m, s, c, tr, datasheet_profile(c.dev, h100_fitted_gemm));
}

}  // namespace strata::analytic
