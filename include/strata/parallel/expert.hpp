#pragma once
/// @file parallel/expert.hpp
/// @brief Expert parallelism (GShard, Lepikhin et al. 2020).
///
/// - compute: E / e experts per rank, each running its share of the k T capacity-scaled routed
///   tokens (`lower::layer`'s MoE block);
/// - collectives: per MoE layer and pass, a dispatch and a combine all-to-all of the routed
///   tokens (`all_to_alls`), priced as direct exchanges on the expert group;
/// - memory: expert weights divided by e; the expert ranks are also data-parallel replicas of the
///   dense weights (`nd::replicas`).
/// The limits: e divides the experts; an uneven expert load (`transformer::expert_load_cv`) is
/// priced on one expert rank only.

#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/slot.hpp"
#include "strata/units.hpp"

namespace strata::parallel {

struct expert_parallel {
  static constexpr policy_slot slot = policy_slot::expert;  ///< `parallel/policy.hpp`
  int degree = 1;

  static constexpr int all_to_alls = 2;  ///< per MoE layer and pass: dispatch, combine
  /// What expert parallelism adds to an iteration: the dispatch and combine of each layer pass,
  /// `per_pass` in each of the forward and the backward, over `layer_passes` passes.
  [[nodiscard]] constexpr seconds time(double layer_passes, seconds per_pass) const {
    return layer_passes * 2.0 * per_pass;
  }
  /// The limits, each once (`check` throws, the search asks `admits`).
  enum class rule { ok, degree_below_one, experts, load_cv };
  [[nodiscard]] constexpr rule broken(const transformer& m) const {
    if (degree < 1) return rule::degree_below_one;
    if (m.experts % degree != 0) return rule::experts;
    if (degree > 1 && m.expert_load_cv > 0) return rule::load_cv;
    return rule::ok;
  }
  [[nodiscard]] constexpr bool admits(const transformer& m) const { return broken(m) == rule::ok; }
  constexpr void check(const transformer& m) const {
    switch (broken(m)) {
      case rule::ok:
        return;
      case rule::degree_below_one:
        throw plan_error(limits::degree_below_one);
      case rule::experts:
        throw plan_error(limits::expert_degree_must_divide_experts);
      case rule::load_cv:
        throw plan_error(limits::expert_load_cv_with_expert_parallel);
    }
  }
};

}  // namespace strata::parallel
