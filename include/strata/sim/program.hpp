#pragma once
/// @file sim/program.hpp
/// @brief What every pipeline executor shares: the stages' programs (`parallel::pipeline_parallel::
/// program`, one 1F1B / GPipe / interleaved order for the closed form, the simulators and
/// Proteus) turned into tasks stage by stage, each unit only once the sends it waits for exist.
///
/// The transformer simulator (`sim/transformer.hpp`) and the ParaDL one (`sim/paradl.hpp`) hand
/// `lower_programs` a callback that builds one unit's tasks, or answers false while an input is
/// missing; the walk makes tasks in an order that respects the dependencies across stages and
/// refuses a program that can never finish.
/// @code
/// strata::sim::lower_programs(programs, [&](std::size_t stage, std::size_t k,
///                                           const strata::parallel::pipeline_unit& u) {
///   return build_unit(stage, k, u);  // false: wait for the other stages
/// });
/// @endcode

#include <cstddef>
#include <vector>

#include "strata/error.hpp"
#include "strata/parallel/pipeline.hpp"

namespace strata::sim {

/// Calls `lower(stage, k, unit)` for unit k of every stage's program in program order, sweeping
/// the stages again and again: a stage goes on until `lower` answers false (its input is not
/// sent yet). Throws when a sweep makes no progress before every program is done.
template <class Lower>
void lower_programs(const std::vector<std::vector<parallel::pipeline_unit>>& programs,
                    Lower&& lower) {
  std::vector<std::size_t> next(programs.size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; i < programs.size(); ++i)
      while (next[i] < programs[i].size() && lower(i, next[i], programs[i][next[i]])) {
        ++next[i];
        progress = true;
      }
  }
  for (std::size_t i = 0; i < programs.size(); ++i)
    if (next[i] < programs[i].size()) throw plan_error("the pipeline schedule deadlocks");
}

}  // namespace strata::sim
