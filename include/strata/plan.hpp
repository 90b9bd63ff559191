#pragma once
/// @file plan.hpp
/// @brief A plan bundles a model, a cluster, a strategy and a training setup; the queries on it
/// are `constexpr`, so a memory budget can be a `static_assert`.
/// @code
/// constexpr strata::plan p{strata::zoo::resnet50(), strata::presets::abci(16),
///                          strata::parallel::data{.p = 16}, strata::training{.batch = 512}};
/// static_assert(strata::memory_per_device(p) <= 16_GiB);
/// constexpr strata::plan q{strata::zoo::llama2_7b(), strata::presets::dgx_a100_40gb(1),
///                          strata::parallel::nd{.data = {.degree = 8, .zero = 3}},
///                          strata::training{.batch = 64}};
/// static_assert(strata::peak_memory(q) <= 40_GiB);  // q is a transformer_plan
/// @endcode

#include <cstddef>

#include "strata/analytic/evaluate.hpp"
#include "strata/analytic/transformer.hpp"
#include "strata/model/model.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"

namespace strata {

/// Model + cluster + strategy + training setup: one template for every kind of model, one
/// `training` for all. A CNN in ParaDL's notation (`model<N>`) takes a ParaDL strategy; a
/// `transformer` takes `parallel::nd` (`transformer_plan`). Class template argument deduction
/// picks the kind from the values.
template <class Model, class Strategy>
struct plan {
  Model net;
  cluster machine;
  Strategy strategy;
  training setup;
};

template <std::size_t N, class S>
plan(model<N>, cluster, S, training) -> plan<model<N>, S>;
plan(transformer, cluster, parallel::nd, training)->plan<transformer, parallel::nd>;

/// The full report of a plan.
template <std::size_t N, class S>
[[nodiscard]] constexpr report evaluate(const plan<model<N>, S>& p) {
  return analytic::evaluate(p.net.view(), p.strategy, p.machine, p.setup);
}

/// Memory the busiest device needs (ParaDL's "maximum memory per PE").
template <std::size_t N, class S>
[[nodiscard]] constexpr bytes memory_per_device(const plan<model<N>, S>& p) {
  return evaluate(p).memory.total();
}

/// Peak memory of any device; with ParaDL's model the same as `memory_per_device`.
template <std::size_t N, class S>
[[nodiscard]] constexpr bytes peak_memory(const plan<model<N>, S>& p) {
  return memory_per_device(p);
}

/// Time of one iteration.
template <std::size_t N, class S>
[[nodiscard]] constexpr seconds iteration_time(const plan<model<N>, S>& p) {
  return evaluate(p).iteration_time();
}

/// A transformer + cluster + `parallel::nd` strategy + training setup (with its framework
/// recipe). Its queries use the device's datasheet profile unless one is passed.
using transformer_plan = plan<transformer, parallel::nd>;

[[nodiscard]] constexpr report evaluate(const transformer_plan& p, const device_profile& prof) {
  return analytic::evaluate(p.net, p.strategy, p.machine, p.setup, prof);
}
[[nodiscard]] constexpr report evaluate(const transformer_plan& p) {
  return analytic::evaluate(p.net, p.strategy, p.machine, p.setup);
}
/// Memory of the fullest device (the largest pipeline stage), at its peak.
[[nodiscard]] constexpr bytes peak_memory(const transformer_plan& p) {
  p.strategy.check(p.net, p.setup, p.machine.devices());
  return analytic::peak_stage_memory(p.net, p.strategy, p.setup).total();
}
[[nodiscard]] constexpr bytes memory_per_device(const transformer_plan& p) {
  return peak_memory(p);
}
[[nodiscard]] constexpr seconds iteration_time(const transformer_plan& p) {
  return evaluate(p).iteration_time();
}

}  // namespace strata
