#pragma once
/// @file parallel/nd.hpp
/// @brief N-dimensional parallelism for transformers: tensor (with sequence), context, expert,
/// pipeline and data (with ZeRO) policies composed into one strategy, `parallel::nd`.
///
/// Each policy owns its rule in its header — how it divides compute, which collectives it
/// inserts, how it divides memory, its limits: `parallel/tensor.hpp`, `context.hpp`,
/// `expert.hpp`, `pipeline.hpp` (schedules, in-flight micro-batches, the bubble), `data.hpp`,
/// `zero.hpp`, `recompute.hpp`; `lower/` and `analytic/` apply them. The ranks are
/// laid out axis by axis in `order`, innermost first (default: tensor, context, expert, pipeline,
/// data, so a tensor group sits inside a node), and every collective runs on the group that layout
/// gives it. Misuse is a `plan_error` with a `limits::` sentence: a compile error in a constant
/// expression, an exception at run time.
/// @code
/// constexpr strata::parallel::nd s{
///     .tensor = {.degree = 8, .sequence = true},
///     .pipeline = {.degree = 8, .virtual_stages = 2,
///                  .kind = strata::parallel::schedule::interleaved},
///     .data = {.degree = 16, .zero = 1},
///     .micro_batch = 1};
/// static_assert(s.devices() == 1024);
/// @endcode

#include <array>
#include <string>
#include <string_view>

#include "strata/comm/placement.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/context.hpp"
#include "strata/parallel/data.hpp"
#include "strata/parallel/expert.hpp"
#include "strata/parallel/pipeline.hpp"
#include "strata/parallel/recompute.hpp"
#include "strata/parallel/tensor.hpp"
#include "strata/training.hpp"

namespace strata::parallel {

enum class axis { tensor, context, expert, pipeline, data };

[[nodiscard]] constexpr std::string_view to_string(axis a) {
  switch (a) {
    case axis::tensor:
      return "tensor";
    case axis::context:
      return "context";
    case axis::expert:
      return "expert";
    case axis::pipeline:
      return "pipeline";
    case axis::data:
      return "data";
  }
  return "tensor";
}

/// Whether the dense first layers of `m` run on pipeline `p`'s first stage, in its first chunk,
/// as the lowering's consumers place them (`analytic::dense_layers_on`, the simulator's first
/// virtual stage).
constexpr bool holds_dense_layers(const transformer& m, const pipeline_parallel& p) {
  return m.dense_layers == 0 || m.dense_layers <= p.chunk_layers(m.layers, 0, 0);
}

/// Whether per-operator checkpointing is modelled for `m` under `t`: its policy counts a dense
/// layer's matmuls, and LoRA's adapters, MoE's experts and latent attention add matmuls whose
/// order it has not been modelled for.
constexpr bool per_op_modelled(const transformer& m, const training& t) {
  return !t.lora.on() && !m.moe() && !m.mla();
}

/// What any plan of model `m` under training setup `t` needs, whatever its degrees: the parts
/// the lowering runs (`transformer::check_lowered`), run as the recipe runs them.
constexpr void check_model_setup(const transformer& m, const training& t) {
  m.check_lowered();
  if (m.mla() && !t.flash_attention)
    throw plan_error(
        "training.flash_attention: multi-head latent attention is modelled with a fused "
        "attention kernel (Transformer Engine's, as Megatron-Core runs it)");
  // transformers' DeepseekV3Attention (RoPE as rotate-half op chains, the padded value of its
  // flash path, its k/v cache) is not what `lower::detail::latent_attention` runs
  if (m.mla() && t.framework.modules == frameworks::module_style::transformers)
    throw plan_error(
        "transformer.kv_lora_rank: multi-head latent attention as transformers' modeling code "
        "runs it is not modelled; every other recipe runs it as Megatron-Core does "
        "(megatron, deepspeed, fsdp, ...)");
  if (m.dense_layers > 0 && t.lora.on())
    throw plan_error(
        "training.lora: LoRA adapters on a model with dense first layers (DeepSeek's) are not "
        "modelled");
}

/// A transformer strategy: the five axes, recomputation, micro-batch and rank order.
struct nd {
  static constexpr std::string_view name = "nd";
  tensor_parallel tensor{};
  context_parallel context{};
  expert_parallel expert{};
  pipeline_parallel pipeline{};
  data_parallel data{};
  recompute recomputation = recompute::none;
  /// With full recomputation, the layers of each chunk (of each stage without interleaving)
  /// that are checkpointed, the first ones; the others keep every tensor (0: all of them).
  /// Megatron-LM's `--recompute-method block --recompute-num-layers N`; fms-fsdp's
  /// `selective_checkpointing` p checkpoints about p of the blocks, evenly spaced
  /// (`policies/ac_handler.py`), the same count.
  int recompute_layers = 0;
  int micro_batch = 1;  ///< b, sequences per micro-batch
  std::array<axis, 5> order{axis::tensor, axis::context, axis::expert, axis::pipeline, axis::data};

  [[nodiscard]] constexpr int degree(axis a) const {
    switch (a) {
      case axis::tensor:
        return tensor.degree;
      case axis::context:
        return context.degree;
      case axis::expert:
        return expert.degree;
      case axis::pipeline:
        return pipeline.degree;
      case axis::data:
        return data.degree;
    }
    return 1;
  }
  [[nodiscard]] constexpr int devices() const {
    return tensor.degree * context.degree * expert.degree * pipeline.degree * data.degree;
  }
  /// Data-parallel replicas of the dense weights (expert ranks see different tokens).
  [[nodiscard]] constexpr int replicas() const { return data.degree * expert.degree; }
  /// The communicator of axis `a`: ranks `stride` apart, stride = product of inner axes.
  [[nodiscard]] constexpr group group_of(axis a) const {
    // the degrees by axis, read without a switch per step (sweeps lay out millions of groups)
    const std::array<int, 5> deg{tensor.degree, context.degree, expert.degree, pipeline.degree,
                                 data.degree};
    const auto at = [&](axis b) { return deg[static_cast<std::size_t>(b)]; };
    int stride = 1;
    for (const axis b : order) {
      if (b == a) break;
      stride *= at(b);
    }
    return {0, at(a), stride};
  }
  /// Micro-batches per replica per iteration.
  [[nodiscard]] constexpr int micro_batches(const training& t) const {
    return t.batch / replicas() / micro_batch;
  }
  /// The layers and stages left once the first and last stages take their given counts.
  [[nodiscard]] constexpr pipeline_parallel::evenly_split even_part(const transformer& m) const {
    return pipeline.even_part(m.layers);
  }
  /// Layers of pipeline stage `i` (all its virtual chunks together).
  [[nodiscard]] constexpr int stage_layers(const transformer& m, int i) const {
    return pipeline.stage_layers(m.layers, i);
  }
  /// Whether layer `l` of a chunk is checkpointed (`recompute_layers`).
  [[nodiscard]] constexpr bool checkpointed(int l) const {
    return recompute_layers == 0 || l < recompute_layers;
  }
  /// The checkpointed layers of pipeline stage `i`: all of them, or `recompute_layers` of
  /// each chunk.
  [[nodiscard]] constexpr int checkpointed_layers(const transformer& m, int i) const {
    if (recompute_layers == 0) return stage_layers(m, i);
    int n = 0;
    for (int k = 0; k < pipeline.virtual_stages; ++k)
      n += strata::detail::min(recompute_layers, pipeline.chunk_layers(m.layers, i, k));
    return n;
  }

  /// The limits of a transformer plan on `devices` ranks (see `limits.hpp`): each policy's own,
  /// then the ones the composition adds (devices, batch divisibility, positions).
  constexpr void check(const transformer& m, const training& t, int devices) const {
    check_model_setup(m, t);
    t.check_transformer();
    strata::detail::check_degrees(
        {tensor.degree, context.degree, expert.degree, pipeline.degree, data.degree});
    for (std::size_t i = 0; i < order.size(); ++i)
      for (std::size_t j = i + 1; j < order.size(); ++j)
        if (order[i] == order[j])
          throw plan_error("the rank order must name each of the five axes once");
    if (this->devices() != devices)
      throw plan_error(std::string(limits::degrees_must_match_devices) + " (tensor " +
                       std::to_string(tensor.degree) + " x pipeline " +
                       std::to_string(pipeline.degree) + " x data " + std::to_string(data.degree) +
                       " x context " + std::to_string(context.degree) + " x expert " +
                       std::to_string(expert.degree) + " = " + std::to_string(this->devices()) +
                       "; the cluster has " + std::to_string(devices) + ")");
    tensor.check(m);
    expert.check(m);
    const int s = t.sequence_or(m.sequence);
    if (m.positions == position_kind::learned && s > m.sequence)
      throw plan_error(limits::sequence_exceeds_positions);
    context.check(s);
    if (micro_batch < 1) throw plan_error(limits::degree_below_one);
    if (t.batch % replicas() != 0)
      throw plan_error(std::string(limits::global_batch_must_divide_replicas) + " (batch " +
                       std::to_string(t.batch) + " over " + std::to_string(replicas()) +
                       " replicas)");
    if ((t.batch / replicas()) % micro_batch != 0)
      throw plan_error(std::string(limits::micro_batch_must_divide_replica_batch) +
                       " (micro-batch " + std::to_string(micro_batch) + ", a replica's share " +
                       std::to_string(t.batch / replicas()) + " = batch " +
                       std::to_string(t.batch) + " / " + std::to_string(replicas()) + " replicas)");
    pipeline.check(m.layers, micro_batches(t));
    if (!holds_dense_layers(m, pipeline))
      throw plan_error("transformer.dense_layers: the " + std::to_string(m.dense_layers) +
                       " dense first layers must run on the first pipeline stage's first chunk, "
                       "which holds " +
                       std::to_string(pipeline.chunk_layers(m.layers, 0, 0)) +
                       " layers: give it more (pipeline.first_stage_layers) or use fewer stages");
    // Megatron refuses --tp-comm-overlap without --sequence-parallel
    // (megatron/training/arguments.py, `validate_args`); torchtitan's async TP is sequence-parallel
    if (t.framework.tp_comm_overlap && tensor.degree > 1 && !tensor.sequence)
      throw plan_error(
          "strategy.tensor: overlapping the tensor-parallel communication with the GEMMs "
          "(tp_comm_overlap) needs sequence parallelism (Megatron: --tp-comm-overlap requires "
          "--sequence-parallel)");
    if (recompute_layers < 0)
      throw plan_error("strategy.recompute_layers: a count of layers, at least 0 (0: all)");
    if (recompute_layers > 0 && recomputation != recompute::full)
      throw plan_error(
          "strategy.recompute_layers: checkpointing some of the layers is modelled with "
          "\"recompute\": \"full\" (Megatron-LM's --recompute-method block)");
    if (recompute_layers > 0 && m.dense_layers > 0)
      throw plan_error(
          "strategy.recompute_layers: checkpointing some of the layers of a model with dense "
          "first layers is not modelled");
    if (saves_op_outputs(recomputation) && !per_op_modelled(m, t))
      throw plan_error(
          "strategy.recompute: \"op\" (per-operator checkpointing) is modelled for dense layers "
          "without LoRA adapters or latent attention; use \"full\" or \"selective\"");
    data.check();
    check_engine(t.framework.data, data.zero, pipeline.degree);
    if (t.framework.separate_head && m.tied)
      throw plan_error(
          "transformer.tied: this recipe builds a separate head (LitGPT copies a tied "
          "embedding into its lm_head): describe the model untied");
    if (m.attention_softcap > 0 &&
        t.framework.capped_attention == frameworks::capped_attention::unknown)
      throw plan_error(
          "transformer.attention_softcap: how the " + std::string(t.framework.name) +
          " recipe runs soft-capped attention (Gemma 2) is not modelled; the recipes that model "
          "it: litgpt, torchtune, pytorch, pytorch-modules and fsdp (the scores written out), "
          "huggingface (its SDPA attention drops the cap)");
  }
};

}  // namespace strata::parallel
