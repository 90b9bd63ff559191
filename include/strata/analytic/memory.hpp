#pragma once
/// @file analytic/memory.hpp
/// @brief Per-device memory of a transformer plan: the tensors one layer keeps (Korthikanti et al.
/// 2022 Table 2 as `lower::layer` keeps them), the model states each ZeRO stage and engine stores
/// (`parallel::engine_states`), the engine's and the pipeline engine's buffers, and the four
/// moments of a stage whose largest is its peak (`stage_memory`, `peak_stage_memory`).

#include "strata/analytic/parameters.hpp"
#include "strata/analytic/price.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/lower/transformer.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/parallel/zero.hpp"
#include "strata/report.hpp"
#include "strata/training.hpp"
#include "strata/units.hpp"

namespace strata::analytic {

using parallel::recompute;

// ---- activation memory (Korthikanti et al. 2022) -------------------------------------------

/// The bytes of each kind one layer keeps on one rank (`lower::layer`'s kept tensors, one pass).
template <class Lowering>
[[nodiscard]] constexpr layer_keeps keeps_by(Lowering&& lowering) {
  layer_keeps k;
  lowering(lower::on_save{[&](const lower::saved_tensor& t) { k.add(t); }});
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
  double saved = 0, casts = 0;  ///< one layer's saved tensors and weight copies
  double last_saved = 0;        ///< the saved tensors of the stage's last layer to run backward
  double full_layer = 0, full_casts = 0;  ///< the same without recomputation
  double rebuilt = 0;                     ///< a recomputed layer during its backward
  double embedding = 0;       ///< input-embedding tensors of the in-flight micro-batches
  double head = 0;            ///< final norm and projection inputs
  double head_casts = 0;      ///< the projection's weight copy
  double logits = 0;          ///< the loss's working set, freed by the head's backward
  double forward_logits = 0;  ///< the same at the forward's end (with `until_loss`)
  double until_loss = 0;      ///< tensors alive until the forward ends
  double held_logits = 0;     ///< logits the training loop keeps
  /// one layer's tensors its autograd graph holds outside `save_for_backward`
  /// (`lower::keep_kind::graph`), alive through the whole backward
  double graph = 0;
  /// the previous step's graph-held tensors, alive in this step's forward while the training
  /// loop still holds the previous logits (`recipe::keep_logits`)
  double previous_graph = 0;
  double dequant = 0;        ///< a quantized block layer's dequantized copy (one at a time)
  double head_dequant = 0;   ///< the quantized head's (`recipe::quantizes_head`)
  double update_buffer = 0;  ///< the optimizer step's working copy (`parallel::update_buffer`)
  /// the fp32 copy of the stage's largest gradient that adding the 16-bit gradients into fp32
  /// buffers makes after each backward (`training::keeps_16bit_gradients`)
  double accumulation_copy = 0;
};

/// What the strategy's lowering keeps: a layer (as the strategy recomputes it, and without
/// recomputation), the embedding and the head, per micro-batch; and the model's parameter counts
/// (`parameters_of`), so that each stage's memory does not count them again.
struct plan_keeps {
  layer_keeps layer, full, embedding, head;
  model_parameters parameters{};
  layer_keeps dense_layer{}, dense_full{};  ///< a dense first layer's (`transformer::dense_layers`)
};
namespace detail {
/// A plan's keeps from what its layer, embedding and head keep; a checkpointed layer is lowered
/// once more without recomputation, for what it rebuilds in its backward.
[[nodiscard]] constexpr plan_keeps with_whole_layer(const transformer& m, const lower::shard& sh,
                                                    const training& t, const layer_keeps& layer,
                                                    const layer_keeps& embedding,
                                                    const layer_keeps& head) {
  plan_keeps k{layer, layer, embedding, head, parameters_of(m)};
  lower::shard whole = sh;
  whole.recompute = recompute::none;
  if (parallel::checkpoints_layer(sh.recompute)) k.full = keeps_of(m, whole, t);
  if (m.dense_layers > 0) {
    k.dense_layer = keeps_of(m.first_dense(), sh, t);
    k.dense_full = parallel::checkpoints_layer(sh.recompute) ? keeps_of(m.first_dense(), whole, t)
                                                             : k.dense_layer;
  }
  return k;
}
}  // namespace detail
[[nodiscard]] constexpr plan_keeps keeps_of(const transformer& m, const parallel::nd& s,
                                            const training& t) {
  using lower::phase;
  const lower::shard sh = lower::shard_of(m, s, t);
  return detail::with_whole_layer(
      m, sh, t, keeps_of(m, sh, t),
      keeps_by([&](auto&& v) { lower::embedding(m, sh, t, phase::forward, v); }),
      keeps_by([&](auto&& v) { lower::head(m, sh, t, phase::forward, v); }));
}
/// `keeps_of` from the plan's lowering already priced (`lower_layer` of `lower::shard_of(m, s,
/// t)`, whose forward lowerings collected the same saves): only the layer without recomputation
/// is lowered again, under checkpointing.
[[nodiscard]] constexpr plan_keeps keeps_of(const transformer& m, const parallel::nd& s,
                                            const training& t, const layer_compute& lc) {
  if (lc.whole_known)
    return {lc.keeps,      lc.whole_keeps, lc.embedding_keeps,  lc.head_keeps,
            lc.parameters, lc.dense.keeps, lc.dense.whole_keeps};
  return detail::with_whole_layer(m, lower::shard_of(m, s, t), t, lc.keeps, lc.embedding_keeps,
                                  lc.head_keeps);
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
namespace detail {
/// `layer_terms` with `d` dense first layers among the `layers`; out of line, as only DeepSeek's
/// models have them.
[[gnu::noinline]] constexpr void dense_layer_terms(memory_terms& x, const plan_keeps& keeps,
                                                   int layers, int d) {
  const auto mix = [&](double layer, double dense) {
    return ((layers - d) * layer + d * dense) / layers;
  };
  const layer_keeps &dl = keeps.dense_layer, &df = keeps.dense_full;
  x.saved = mix(keeps.layer.activation, dl.activation);
  x.casts = mix(keeps.layer.weight_copy, dl.weight_copy);
  x.until_loss = x.in_flight * ((layers - d) * keeps.layer.until_loss + d * dl.until_loss);
  x.graph = mix(keeps.layer.graph, dl.graph);
  x.full_layer = strata::detail::max(x.full_layer, df.activation);
  x.full_casts = strata::detail::max(x.full_casts, df.weight_copy);
  x.last_saved = dl.activation;
}
/// A stage's per-layer memory terms from what its layers keep (`x.layers` and `x.in_flight` set):
/// with `d` dense first layers among its `layers`, the per-layer figures on average over the two
/// kinds, a recomputed layer the larger kind's, and the last backward's layer (layer 0) a dense
/// one.
constexpr void layer_terms(memory_terms& x, const plan_keeps& keeps, int layers, int d) {
  x.saved = keeps.layer.activation;
  x.casts = keeps.layer.weight_copy;
  x.until_loss = x.layers * x.in_flight * keeps.layer.until_loss;
  x.graph = keeps.layer.graph;
  x.full_layer = keeps.full.activation;
  x.full_casts = keeps.full.weight_copy;
  x.last_saved = x.saved;
  if (d > 0) dense_layer_terms(x, keeps, layers, d);
}
/// `layer_terms` when `k` of the stage's `layers` are checkpointed (the first ones, layer 0
/// the last backward's) and the others keep what they keep without recomputation
/// (`parallel::nd::recompute_layers`), `share` of each checkpoint on the device
/// (`checkpoint_share`): the per-layer figures on average.
constexpr void some_checkpointed(memory_terms& x, const plan_keeps& keeps, int layers, int k,
                                 double share) {
  if (layers <= 0 || k >= layers) return;
  const auto mix = [&](double checkpointed, double kept) {
    return (k * checkpointed + (layers - k) * kept) / layers;
  };
  const layer_keeps &c = keeps.layer, &f = keeps.full;
  x.saved = mix(share * c.activation, f.activation);
  x.casts = mix(c.weight_copy, f.weight_copy);
  x.until_loss = x.in_flight * (k * c.until_loss + (layers - k) * f.until_loss);
  x.graph = mix(c.graph, f.graph);
  x.last_saved = k > 0 ? share * c.activation : f.activation;
}
}  // namespace detail

/// The terms of pipeline stage `stage` on one rank.
[[nodiscard]] constexpr memory_terms stage_terms(const transformer& m, const parallel::nd& s,
                                                 const training& t, int stage,
                                                 const plan_keeps& keeps) {
  memory_terms x;
  memory_breakdown& mem = x.states;
  mem.stage = stage;
  const frameworks::recipe& r = t.framework;
  const int layers = s.stage_layers(m, stage), micro_batches = s.micro_batches(t);
  const stage_parameters n = parameters_on(m, s, stage, keeps.parameters, layers);
  const stage_parameters tn = trained_on(m, s, t, stage, n);
  parallel::zero_placement place{
      .dense_shards = static_cast<double>(s.data.shards()) * s.expert.degree * s.context.degree,
      .expert_shards = static_cast<double>(s.data.shards()) * s.context.degree,
      .trained = tn,
      .engine = engine_inputs_of(keeps.parameters.dense_layer + keeps.parameters.expert_layer, s,
                                 tn.dense + tn.expert, n.dense + n.expert)};
  if (t.lora.on()) {
    // frozen weights: their storage only (sharded by ZeRO-3), the blocks' linear layers as
    // `lora.base` stores them (quantized with their block statistics), the embedding, head and
    // norms in `lora.embeddings`; the adapters train in full in their own type
    const bool z3 = s.data.sharding().shards_weights();
    const double emb = n.embedding / (z3 ? place.dense_shards : 1.0);
    // a head the recipe quantizes with the blocks (`recipe::quantizes_head`)
    const double qhead =
        r.quantizes_head && t.lora.quantized() && !m.tied && stage == s.pipeline.degree - 1
            ? static_cast<double>(m.vocabulary) * m.hidden / s.tensor.degree /
                  (z3 ? place.dense_shards : 1.0)
            : 0.0;
    place.frozen = t.frozen_weight_bytes(m.hidden) * (partition_of(s, n, z3) - emb + qhead) +
                   t.frozen_embedding_bytes() * (emb - qhead);
    place.frozen_embedding = t.frozen_embedding_bytes() * (emb - qhead);
    // bitsandbytes pages the states of tensors of 100,000 elements and more only
    // (optim/optimizer.py, `get_state_buffer`: `A.numel() < 1e5` stays in device memory)
    if (t.paged_optimizer && tn.dense > 0)
      place.paged =
          layers * lower::adapter_parameters(m, lower::shard_of(m, s, t), t, 1e5) / tn.dense;
    // bitsandbytes dequantizes a whole weight for each GEMM and frees it after: the largest
    // linear layer's 16-bit copy is alive at any moment (bitsandbytes/autograd/_functions.py,
    // `MatMul4Bit`: `F.dequantize_4bit(B, quant_state).to(A.dtype)`), with an fp16 quantized
    // state its fp16 copy too (`recipe::fp16_quant_state`); a quantized head's while the head
    // runs (`recipe::quantizes_head`)
    if (t.lora.quantized()) {
      const double copy = r.fp16_quant_state ? 4.0 : 2.0;
      x.dequant = copy * m.hidden *
                  strata::detail::max(m.ffn_size(), static_cast<double>(m.hidden)) /
                  s.tensor.degree;
      if (r.quantizes_head && stage == s.pipeline.degree - 1)
        x.head_dequant = copy * static_cast<double>(m.vocabulary) * m.hidden / s.tensor.degree;
    }
  }
  // ZeRO's states and buffers (`parallel::zero_memory_of`), then the pipeline engine's slots
  const parallel::zero_memory z =
      parallel::zero_memory_of(s.data.zero, t, n, place, partitioned_modules_of(m, s, t));
  mem.weights = bytes{z.weights};
  mem.gradients = bytes{z.gradients};
  mem.optimizer_states = bytes{z.optimizer};
  mem.paged = bytes{z.paged};
  mem.embedding_states = bytes{z.embedding_states};
  mem.buffers = bytes{z.buffers + pipe_buffers(m, s, t, stage)};
  x.head_gradients = z.head_gradients;
  x.update_buffer = z.update_buffer;
  const int p = s.pipeline.degree;
  const lower::shard sh = lower::shard_of(m, s, t);
  const double T = sh.tokens(), tp = s.tensor.degree;
  // BF16_Optimizer's update_hp_grads: hp_grad.add_(lp.grad.to(fp32)) makes an fp32 copy of one
  // gradient at a time; the largest is a layer's largest matrix or, on a stage holding it, the
  // embedding (the last stage keeps its own copy of a tied one under pipeline parallelism)
  if (t.keeps_16bit_gradients() && !t.lora.on()) {
    double largest = lower::weight_modules(m, sh, t).largest;
    if (stage == 0 || (stage == p - 1 && (!m.tied || p > 1)))
      largest = strata::detail::max(largest, static_cast<double>(m.vocabulary) * m.hidden / tp);
    x.accumulation_copy = 4 * largest;
  }
  x.layers = layers;
  x.in_flight = s.pipeline.in_flight(micro_batches, stage);
  using lower::keep_kind;
  const int checkpointed = s.recompute_layers > 0 ? s.checkpointed_layers(m, stage) : layers;
  // DeepSpeed's checkpoints kept on the host, or split over the tensor-parallel ranks
  const double share = checkpoint_share(s, t);
  detail::layer_terms(x, keeps, layers, dense_layers_on(m, stage));
  if (share != 1.0) {  // every layer a checkpoint
    x.saved *= share;
    x.last_saved *= share;
  }
  if (checkpointed < layers) detail::some_checkpointed(x, keeps, layers, checkpointed, share);
  // what a checkpointed layer rebuilds while its backward runs: the whole layer, or what the
  // per-operator policy does not cache (its cached outputs are in `saved` already)
  if (parallel::rebuilds_layer(sh.recompute) && checkpointed > 0) x.rebuilt = x.full_layer;
  if (parallel::saves_op_outputs(sh.recompute))
    x.rebuilt = strata::detail::max(0.0, x.full_layer - x.saved);
  x.layer_gradients =
      (mem.gradients.count() - x.head_gradients) / strata::detail::max(x.layers, 1.0);
  if (stage == 0)
    x.embedding = s.pipeline.first_chunk_in_flight(micro_batches) * keeps.embedding.activation;
  if (stage == p - 1) {
    const double act = t.activation_bytes(), V = m.vocabulary / tp;
    // the final norm's and the projection's inputs (and weight copy; Megatron's fp32 logits)
    x.head = keeps.head.activation;
    x.head_casts = keeps.head.weight_copy;
    if (r.loss != frameworks::loss_style::vocab_parallel) {
      // the loss upcasts the logits to fp32 and, at its backward's peak, holds log-softmax's
      // output, its gradient and the logits' gradient (12 B per logit; measured:
      // h100_steps_gpt2.csv; a chunked loss keeps each chunk's 4-byte log-softmax and works
      // through one chunk's gradients at a time); `transformers` also peaks in the forward with the
      // bf16 logits, their fp32 copy and log-softmax's output (10 B) while the caches live; a loop
      // that keeps the logits (nanoGPT returns them) holds them through the backward
      x.logits = (r.loss == frameworks::loss_style::chunked ? 4 : 3 * 4) * T * V;
      if (r.loss == frameworks::loss_style::transformers) x.forward_logits = 10 * T * V;
      x.held_logits = r.keep_logits ? (r.fp32_outputs ? 4 : act) * T * V : 0.0;
      // Fabric's fp32 copies of the model's outputs beside them at the forward's end, or the
      // last chunk's quantized head dequantized beside the outputs so far
      if (r.fp32_outputs)
        x.forward_logits = strata::detail::max((act + 4) * T * V, act * T * V + x.head_dequant);
    }
  }
  if (r.keep_logits)
    x.previous_graph =
        x.layers * x.in_flight * keeps.layer.graph + (stage == p - 1 ? keeps.head.graph : 0.0);
  mem.other = bytes{t.reserved};
  mem.batch = bytes{r.batch_bytes_per_token * T};
  mem.workspace += bytes{r.workspace};
  x.persistent = r.persistent_gradients;
  x.accumulates = micro_batches > 1;
  x.gradients = mem.gradients.count();
  mem.gradients = bytes{};
  x.fixed = mem.total().count();
  mem.between_steps = bytes{x.fixed + (x.persistent ? x.gradients : 0.0)};
  return x;
}

/// Memory of pipeline stage `stage` on one rank at its peak, the largest of six moments:
/// - loss: model states, every in-flight micro-batch's saved tensors and weight copies, the
///   head's inputs and the loss's working set;
/// - first backward: the same without the loss's working set (and, unless the recipe keeps them
///   through the backward as Megatron's accounting does, the head's inputs), plus the
///   recomputed layer (full recomputation, Korthikanti §5) and, when gradients are made in
///   backward, the embedding's and head's gradients;
/// - the forward's end: the saved tensors with the caches kept until the loss, the outputs
///   being made (`forward_logits`) and, while the loop still holds the previous step's logits,
///   that step's graph-held tensors (bitsandbytes before 0.43.2 under LitGPT);
/// - last backward: every gradient but the layer's own, the layer's saved and rebuilt tensors
///   (and every layer's graph-held ones), the other in-flight micro-batches;
/// - update: every gradient;
/// - gradient accumulation (`training::keeps_16bit_gradients`): every gradient, the other
///   in-flight micro-batches' tensors and the fp32 copy of one gradient.
/// A quantized base adds one dequantized weight to each moment but the update.
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
  // a dequantized copy: the head's from the loss into the first backward, a block layer's else;
  // at the forward's end the head's is in `forward_logits`
  const double dq = strata::detail::max(x.dequant, x.head_dequant);
  struct moment {
    memory_moment at;
    double gradients, activations, weight_casts, stored, logits, buffers = 0, workspace = 0;
    [[nodiscard]] constexpr double total() const {
      return gradients + activations + weight_casts + stored + logits + buffers + workspace;
    }
  };
  // Megatron's accounting first: on ties the Korthikanti moment is the one reported
  const moment moments[] = {
      {memory_moment::first_backward, all_grads ? x.gradients : x.head_gradients, acts + x.rebuilt,
       casts + (x.rebuilt > 0 ? x.full_casts : 0.0), x.embedding + (vocab_parallel ? x.head : 0.0),
       x.held_logits, 0, dq},
      {memory_moment::loss, g_always, acts, casts + x.head_casts, x.embedding + x.head,
       x.logits + x.held_logits, 0, dq},
      {x.previous_graph > 0 ? memory_moment::next_forward : memory_moment::loss, g_always,
       acts + x.until_loss + x.previous_graph, casts + x.head_casts, x.embedding + x.head,
       x.forward_logits + x.held_logits, 0, x.head_dequant > 0 ? 0.0 : x.dequant},
      {memory_moment::last_backward, all_grads ? x.gradients : x.gradients - x.layer_gradients,
       (x.in_flight - 1) * x.layers * x.saved + x.last_saved + x.rebuilt +
           (x.layers * x.in_flight - 1) * x.graph,
       (x.in_flight - 1) * x.layers * x.casts + x.full_casts, x.embedding, x.held_logits, 0,
       x.dequant},
      {memory_moment::update, x.gradients, 0, 0, 0, 0, x.update_buffer},
      // the micro-batch's own tensors are freed; the others in flight stay
      {memory_moment::accumulation, x.gradients, (x.in_flight - 1) * x.layers * x.saved,
       (x.in_flight - 1) * x.layers * x.casts, x.embedding, x.held_logits, 0, x.accumulation_copy}};
  const moment* top = &moments[0];
  double first = 0;  // the largest without the previous step's graph
  for (const moment& mo : moments) {
    if (mo.total() > top->total()) top = &mo;
    const double own = mo.total() - (mo.at == memory_moment::next_forward ? x.previous_graph : 0);
    first = strata::detail::max(first, own);
  }
  memory_breakdown best = x.states;
  if (first < top->total()) best.first_step = x.states.total() + bytes{first};
  best.moment = top->at;
  best.gradients = bytes{top->gradients};
  best.activations = bytes{top->activations};
  best.weight_casts = bytes{top->weight_casts};
  best.embedding_activations = bytes{top->stored};
  best.logits = bytes{top->logits};
  best.workspace += bytes{top->workspace};
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

}  // namespace strata::analytic
