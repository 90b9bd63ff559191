#pragma once
/// @file parallel/context.hpp
/// @brief Context parallelism: ring attention (Liu et al. 2023).
///
/// - compute: the sequence split c ways; each rank's queries attend to the whole sequence, so
///   attention on a rank costs b / c sequences of full length (`lower::layer`);
/// - collectives: around the ring, c - 1 transfers of the rank's K and V blocks forward, of the
///   blocks and their gradients backward (`transfers`), hidden behind attention as far as it lasts
///   (`analytic::collectives_of`);
/// - memory: activations of s / c tokens; gradients reduced over the context ranks as over data
///   replicas.
/// The limit: 2c divides the sequence (each rank takes two chunks, for the causal mask's balance).

#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/parallel/slot.hpp"
#include "strata/units.hpp"

namespace strata::parallel {

struct context_parallel {
  static constexpr policy_slot slot = policy_slot::context;  ///< `parallel/policy.hpp`
  int degree = 1;

  /// K/V block transfers per layer: c - 1 forward, 2 (c - 1) backward.
  [[nodiscard]] constexpr double transfers(bool backward) const {
    return (backward ? 2.0 : 1.0) * (degree - 1);
  }
  /// What context parallelism adds to an iteration: ring attention's K/V exchange not hidden
  /// behind attention, `forward` and `backward` per layer pass, over `layer_passes` passes.
  [[nodiscard]] constexpr seconds time(double layer_passes, seconds forward,
                                       seconds backward) const {
    return layer_passes * (forward + backward);
  }
  /// The limits for a sequence of `sequence` tokens, each once (`check` throws, the search asks
  /// `admits`).
  enum class rule { ok, degree_below_one, sequence };
  [[nodiscard]] constexpr rule broken(int sequence) const {
    if (degree < 1) return rule::degree_below_one;
    if (degree > 1 && sequence % (2 * degree) != 0) return rule::sequence;
    return rule::ok;
  }
  [[nodiscard]] constexpr bool admits(int sequence) const { return broken(sequence) == rule::ok; }
  constexpr void check(int sequence) const {
    switch (broken(sequence)) {
      case rule::ok:
        return;
      case rule::degree_below_one:
        throw plan_error(limits::degree_below_one);
      case rule::sequence:
        throw plan_error(limits::context_degree_must_divide_sequence);
    }
  }
};

}  // namespace strata::parallel
