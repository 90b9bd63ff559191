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
/// using namespace strata::parallel;  // the same plan with its policies as types
/// constexpr strata::plan r{strata::zoo::llama2_7b(), strata::presets::dgx_a100_40gb(1),
///                          strata::training{.batch = 64}, data_parallel{.degree = 8}, zero<3>{}};
/// static_assert(strata::peak_memory(r) == strata::peak_memory(q));
/// @endcode

#include <cstddef>
#include <utility>

#include "strata/analytic/evaluate.hpp"
#include "strata/analytic/transformer.hpp"
#include "strata/model/model.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/parallel/policy.hpp"

namespace strata {

/// Model + cluster + strategy + training setup: one template for every kind of model, one
/// `training` for all. A CNN in ParaDL's notation (`model<N>`) takes a ParaDL strategy; a
/// `transformer` takes `parallel::nd` (`transformer_plan`). Class template argument deduction
/// picks the kind from the values.
namespace detail {
template <std::size_t I, class P>
struct policy_leaf {
  P value;
};
template <class Indices, class... Ps>
struct policy_list;
/// The policies of a plan, one member each.
template <std::size_t... I, class... Ps>
struct policy_list<std::index_sequence<I...>, Ps...> : policy_leaf<I, Ps>... {
  [[nodiscard]] constexpr parallel::nd compose() const {
    return parallel::compose(static_cast<const policy_leaf<I, Ps>&>(*this).value...);
  }
};
}  // namespace detail

/// A transformer plan whose strategy is a list of policy types (`parallel/policy.hpp`): kinds
/// are types, checked as a composition when the plan is named, degrees are values.
/// `strategy()` is its runtime form, the `parallel::nd` every evaluator reads.
template <class M, class... Policies>
struct plan {
  static_assert(Model<M>, "plan<M, ...>: M must model strata::Model (a transformer or a model<N>)");
  static_assert(parallel::valid_composition<Policies...>());
  M net;
  cluster machine;
  training setup;
  detail::policy_list<std::index_sequence_for<Policies...>, Policies...> policies;

  constexpr plan(M model, cluster c, training t, Policies... ps)
      : net(model), machine(c), setup(t), policies{{ps}...} {}

  [[nodiscard]] constexpr parallel::nd strategy() const { return policies.compose(); }
};

/// A plan with one runtime strategy: a CNN model with a ParaDL strategy, or a transformer with a
/// `parallel::nd` composition (`transformer_plan`).
template <class M, class S>
requires(Strategy<S> || std::same_as<S, parallel::nd>) struct plan<M, S> {
  static_assert(Model<M>, "plan<M, S>: M must model strata::Model (a transformer or a model<N>)");
  M net;
  cluster machine;
  S strategy;
  training setup;
};

template <std::size_t N, class S>
plan(model<N>, cluster, S, training) -> plan<model<N>, S>;
plan(transformer, cluster, parallel::nd, training)->plan<transformer, parallel::nd>;
template <parallel::Policy... Ps>
plan(transformer, cluster, training, Ps...) -> plan<transformer, Ps...>;

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

/// The queries of a plan of policy types: those of its runtime form (`plan::strategy()`).
template <parallel::Policy... Ps>
[[nodiscard]] constexpr transformer_plan runtime_plan(const plan<transformer, Ps...>& p) {
  return {p.net, p.machine, p.strategy(), p.setup};
}
template <parallel::Policy... Ps>
[[nodiscard]] constexpr report evaluate(const plan<transformer, Ps...>& p,
                                        const device_profile& prof) {
  return evaluate(runtime_plan(p), prof);
}
template <parallel::Policy... Ps>
[[nodiscard]] constexpr report evaluate(const plan<transformer, Ps...>& p) {
  return evaluate(runtime_plan(p));
}
template <parallel::Policy... Ps>
[[nodiscard]] constexpr bytes peak_memory(const plan<transformer, Ps...>& p) {
  return peak_memory(runtime_plan(p));
}
template <parallel::Policy... Ps>
[[nodiscard]] constexpr bytes memory_per_device(const plan<transformer, Ps...>& p) {
  return peak_memory(runtime_plan(p));
}
template <parallel::Policy... Ps>
[[nodiscard]] constexpr seconds iteration_time(const plan<transformer, Ps...>& p) {
  return evaluate(runtime_plan(p)).iteration_time();
}

}  // namespace strata
