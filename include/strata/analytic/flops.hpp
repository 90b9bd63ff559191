#pragma once
/// @file analytic/flops.hpp
/// @brief A transformer iteration's FLOPs: the model's (Narayanan et al. SC'21 eq. (3),
/// generalized per token by `transformer::layer_forward_flops` to GQA, SwiGLU and MoE) and the
/// hardware's, which adds what recomputation runs again.

#include "strata/model/transformer.hpp"
#include "strata/parallel/recompute.hpp"

namespace strata::analytic {

using parallel::recompute;

/// Model FLOPs of one iteration: forward and backward (3x forward) of every layer and of the
/// vocabulary projection, for B sequences of s tokens (Narayanan et al. SC'21 eq. (3) without
/// recomputation, generalized).
[[nodiscard]] constexpr double model_flops(const transformer& m, double batch, double s) {
  return 3 * batch * s * (m.layers * m.layer_forward_flops(s) + m.head_forward_flops());
}

/// FLOPs the hardware runs: model FLOPs plus the recomputed forward (full: every layer, giving
/// SC'21's 96 B s l h^2 (1 + s/6h + V/16lh); selective: the attention core, 4 s h per token).
[[nodiscard]] constexpr double hardware_flops(const transformer& m, double batch, double s,
                                              recompute r) {
  const double base = model_flops(m, batch, s);
  if (r == recompute::full) return base + batch * s * m.layers * m.layer_forward_flops(s);
  if (r == recompute::selective) return base + batch * s * m.layers * 4 * s * m.hidden;
  return base;
}

}  // namespace strata::analytic
