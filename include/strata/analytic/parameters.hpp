#pragma once
/// @file analytic/parameters.hpp
/// @brief How a transformer plan splits the model's parameters over its ranks: what pipeline stage
/// i holds on one rank (tensor, expert and pipeline shares), what it trains (LoRA: the adapters),
/// the ZeRO partition one rank updates, and what the data-parallel engine's rules read of the plan
/// (`parallel::engine_inputs`).

#include "strata/lower/transformer.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/parallel/zero.hpp"
#include "strata/training.hpp"

namespace strata::analytic {

using parallel::recompute;

namespace detail {
/// The sequence length plan runs with: the training setup's, else the model's.
constexpr int sequence_of(const transformer& m, const training& t) {
  return t.sequence_or(m.sequence);
}
}  // namespace detail

/// Parameters pipeline stage i holds on one rank (`parallel::stage_parameters`: dense, expert,
/// and the embedding's part of the dense ones).
using parallel::stage_parameters;

/// The model's parameter counts that `parameters_on` splits over the stages, counted once.
struct model_parameters {
  double dense_layer = 0, expert_layer = 0, embedding = 0, head = 0;
};
[[nodiscard]] constexpr model_parameters parameters_of(const transformer& m) {
  return {m.dense_layer_parameters(), m.expert_layer_parameters(), m.embedding_parameters(),
          m.head_parameters()};
}

/// The dense first layers on pipeline stage `stage`: all of them on the first (`nd::check` keeps
/// them in its first chunk), none elsewhere.
[[nodiscard]] constexpr int dense_layers_on(const transformer& m, int stage) {
  return stage == 0 ? m.dense_layers : 0;
}

/// The same for a stage of `l` layers (`parallel::nd::stage_layers`, when the caller has it).
[[nodiscard]] constexpr stage_parameters parameters_on(const transformer& m, const parallel::nd& s,
                                                       int stage, const model_parameters& k,
                                                       int l) {
  const double t = s.tensor.degree;
  const int p = s.pipeline.degree;
  stage_parameters out;
  const int d = dense_layers_on(m, stage);  // the dense first layers among the l
  if (d == 0) {
    out.dense = l * k.dense_layer / t;
    out.expert = l * k.expert_layer / (t * s.expert.degree);
  } else {
    out.dense = ((l - d) * k.dense_layer + d * m.first_dense_layer_parameters()) / t;
    out.expert = (l - d) * k.expert_layer / (t * s.expert.degree);
  }
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
                                                       int stage, const model_parameters& k) {
  return parameters_on(m, s, stage, k, s.stage_layers(m, stage));
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
  const double shards = s.data.shards() * static_cast<double>(s.context.degree);
  return parallel::partition(x, shards * s.expert.degree, shards, sharded);
}

/// What the data-parallel engine's buffer rule (`parallel::engine_buffers`) reads of plan `s` on
/// one rank of a stage with `trained` trained and `weights` held parameters, for a model whose
/// layer has `layer_parameters` (`transformer::layer_parameters`).
[[nodiscard]] constexpr parallel::engine_inputs engine_inputs_of(double layer_parameters,
                                                                 const parallel::nd& s,
                                                                 double trained, double weights) {
  return {layer_parameters / s.tensor.degree, trained, weights, s.data.bucket,
          s.replicas() * s.context.degree > 1};
}
/// DeepSpeed's partitioned modules of one layer of plan `s` (`lower::weight_modules`).
[[nodiscard]] constexpr auto partitioned_modules_of(const transformer& m, const parallel::nd& s,
                                                    const training& t) {
  return [&m, &s, &t] {
    const lower::layer_weights w = lower::weight_modules(m, lower::shard_of(m, s, t), t,
                                                         t.framework.data.persistence_threshold);
    return parallel::partitioned_modules{w.largest, w.modules};
  };
}

}  // namespace strata::analytic
