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

namespace strata::parallel {

struct expert_parallel {
  static constexpr policy_slot slot = policy_slot::expert;  ///< `parallel/policy.hpp`
  int degree = 1;

  static constexpr int all_to_alls = 2;  ///< per MoE layer and pass: dispatch, combine
  constexpr void check(const transformer& m) const {
    if (degree < 1) throw plan_error(limits::degree_below_one);
    if (m.experts % degree != 0) throw plan_error(limits::expert_degree_must_divide_experts);
    if (degree > 1 && m.expert_load_cv > 0)
      throw plan_error(limits::expert_load_cv_with_expert_parallel);
  }
};

}  // namespace strata::parallel
