#pragma once
/// @file parallel/policy.hpp
/// @brief Parallel strategies as types: the `Policy` concept, the policy types of a transformer
/// plan and their composition into the plan's runtime form `parallel::nd`.
///
/// A policy is a literal type that names the slot of the composition it fills (`slot`) and
/// writes its values there (`apply(policy, nd&)`, found by argument-dependent lookup). Kinds are
/// types, degrees are values: `compose<tensor_parallel, pipeline_parallel, data_parallel, zero<1>>`
/// checks at compile time that each slot is filled once and that the composition is one the
/// rules allow, and at run time (or in a constant expression) builds the `nd` that the lowering,
/// the closed form, the simulator and the search all read. A user writes a policy of their own
/// with the same two members (`examples/user_policy.cpp`).
/// @code
/// constexpr strata::parallel::nd s = strata::parallel::compose(
///     strata::parallel::tensor_parallel{.degree = 8, .sequence = true},
///     strata::parallel::data_parallel{.degree = 4}, strata::parallel::zero<1>{});
/// @endcode

#include <concepts>
#include <cstddef>

#include "strata/parallel/nd.hpp"
#include "strata/parallel/slot.hpp"

namespace strata::parallel {

/// A policy of a transformer plan: a literal type with its slot and a way to write itself into
/// the composition. Misuse (a type without them) fails here, with this concept's name.
template <class P>
concept Policy = std::is_trivially_copyable_v<P> && requires(const P& p, nd& s) {
  { P::slot } -> std::convertible_to<policy_slot>;
  apply(p, s);
};

// ---- the library's policies --------------------------------------------------------------------

constexpr void apply(const tensor_parallel& p, nd& s) { s.tensor = p; }
constexpr void apply(const context_parallel& p, nd& s) { s.context = p; }
constexpr void apply(const expert_parallel& p, nd& s) { s.expert = p; }
constexpr void apply(const pipeline_parallel& p, nd& s) { s.pipeline = p; }
/// Data parallelism keeps a ZeRO stage set by `zero<N>` (the two compose in either order).
constexpr void apply(const data_parallel& p, nd& s) {
  const int stage = s.data.zero;
  s.data = p;
  if (p.zero == 0) s.data.zero = stage;
}

/// ZeRO stage `Stage` of the data-parallel engine (Rajbhandari et al. 2020 §5; the engine's
/// rules are `parallel::zero_stage` and `engine_states`). Needs `data_parallel` in the plan.
template <int Stage>
struct zero {
  static_assert(Stage >= 0 && Stage <= 3, "parallel::zero<Stage>: ZeRO has stages 0, 1, 2 and 3");
  static constexpr policy_slot slot = policy_slot::zero;
  static constexpr zero_stage stage{Stage};
  friend constexpr void apply(const zero&, nd& s) { s.data.zero = Stage; }
};

/// Activation recomputation `R` (Korthikanti et al. 2022: selective recomputes the attention
/// core, full each layer's forward).
template <recompute R>
struct recomputation {
  static constexpr policy_slot slot = policy_slot::recompute;
  friend constexpr void apply(const recomputation&, nd& s) { s.recomputation = R; }
};

/// Sequences per micro-batch (b); the global batch over the replicas and b gives the
/// micro-batches each pipeline runs.
struct micro_batch {
  static constexpr policy_slot slot = policy_slot::micro_batch;
  int sequences = 1;
  friend constexpr void apply(const micro_batch& p, nd& s) { s.micro_batch = p.sequences; }
};

namespace detail {
template <class P>
inline constexpr policy_slot slot_of = P::slot;

template <class T>
struct is_zero : std::false_type {};
template <int S>
struct is_zero<zero<S>> : std::true_type {};

template <class... Ps>
constexpr int count_slot(policy_slot k) {
  return ((slot_of<Ps> == k ? 1 : 0) + ... + 0);
}
template <class... Ps>
constexpr bool each_slot_once() {
  for (const policy_slot k :
       {policy_slot::tensor, policy_slot::context, policy_slot::expert, policy_slot::pipeline,
        policy_slot::data, policy_slot::zero, policy_slot::recompute, policy_slot::micro_batch})
    if (count_slot<Ps...>(k) > 1) return false;
  return true;
}
}  // namespace detail

/// The composition rules a list of policies must keep, checked when the list is named: every
/// type a `Policy`, each slot filled once, ZeRO only with data parallelism.
template <class... Ps>
constexpr bool valid_composition() {
  static_assert((Policy<Ps> && ...),
                "a plan's policies must model strata::parallel::Policy (a static `slot` and an "
                "`apply(policy, nd&)` found by argument-dependent lookup)");
  static_assert(detail::each_slot_once<Ps...>(),
                "a plan names each policy slot once (two tensor, pipeline, data, ZeRO, "
                "recomputation or micro-batch policies cannot both apply)");
  static_assert(detail::count_slot<Ps...>(policy_slot::zero) == 0 ||
                    detail::count_slot<Ps...>(policy_slot::data) > 0,
                "parallel::zero<N> shards over data-parallel ranks: add a data_parallel policy "
                "to the plan");
  return true;
}

/// The runtime composition of `ps`, in the order given (a slot not named keeps `nd`'s
/// default: degree 1, no recomputation, one sequence per micro-batch).
template <Policy... Ps>
requires(valid_composition<Ps...>()) [[nodiscard]] constexpr nd compose(const Ps&... ps) {
  nd s;
  (apply(ps, s), ...);
  return s;
}

static_assert(Policy<tensor_parallel> && Policy<context_parallel> && Policy<expert_parallel> &&
              Policy<pipeline_parallel> && Policy<data_parallel> && Policy<zero<3>> &&
              Policy<recomputation<recompute::full>> && Policy<micro_batch>);
static_assert(!Policy<nd> && !Policy<int>);

}  // namespace strata::parallel
