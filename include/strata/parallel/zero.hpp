#pragma once
/// @file parallel/zero.hpp
/// @brief ZeRO (Rajbhandari et al. 2020 §5): stage 1 shards the optimizer states over the
/// data-parallel ranks (Megatron's distributed optimizer), stage 2 also the gradients, stage 3
/// also the weights (FSDP's full sharding). `analytic/zero.hpp` has the paper's and DeepSpeed's
/// estimators for whole models; this is the rule per parameter that a plan's stage memory uses.

#include "strata/error.hpp"
#include "strata/limits.hpp"

namespace strata::parallel {

/// Bytes of model states for some parameters on one rank.
struct sharded_states {
  double weights = 0, gradients = 0, optimizer = 0;
};

/// `n` parameters of `weight`, `gradient` and `optimizer` bytes each, sharded over `shards` ranks
/// by ZeRO stage `stage`.
[[nodiscard]] constexpr sharded_states zero_states(double n, double shards, int stage,
                                                   double weight, double gradient,
                                                   double optimizer) {
  return {n * weight / (stage >= 3 ? shards : 1.0), n * gradient / (stage >= 2 ? shards : 1.0),
          n * optimizer / (stage >= 1 ? shards : 1.0)};
}

constexpr void check_zero_stage(int stage) {
  if (stage < 0 || stage > 3) throw plan_error(limits::zero_stage_out_of_range);
}

}  // namespace strata::parallel
