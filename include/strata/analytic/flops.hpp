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

/// The matmul FLOPs per token that per-operator checkpointing runs again in a dense layer: the
/// second, fourth, ... of its separate projections in issue order (Q, K, V, the output
/// projection, then gate and up, or up alone, then down), whose outputs it does not cache.
[[nodiscard]] constexpr double uncached_matmul_flops(const transformer& m) {
  const double h = m.hidden, q = m.q_width(), w = m.kv_width(), f = m.ffn_size();
  const bool swiglu = m.mlp == mlp_kind::swiglu;
  const double per_token[] = {2 * h * q, 2 * h * w, 2 * h * w, 2 * q * h,
                              2 * h * f, 2 * h * f, 2 * f * h};
  // without SwiGLU the MLP is up then down: up is cached (5th), down (6th) recomputed
  return swiglu ? per_token[1] + per_token[3] + per_token[5]
                : per_token[1] + per_token[3] + 2 * f * h;
}

/// FLOPs the hardware runs: model FLOPs plus the recomputed forward (full: every layer, giving
/// SC'21's 96 B s l h^2 (1 + s/6h + V/16lh); selective: the attention core, 4 s h per token;
/// per-operator checkpointing: the matmuls whose outputs it does not cache).
[[nodiscard]] constexpr double hardware_flops(const transformer& m, double batch, double s,
                                              recompute r) {
  const double base = model_flops(m, batch, s);
  if (r == recompute::full) return base + batch * s * m.layers * m.layer_forward_flops(s);
  if (r == recompute::selective) return base + batch * s * m.layers * 4 * s * m.hidden;
  if (r == recompute::per_op) return base + batch * s * m.layers * uncached_matmul_flops(m);
  return base;
}

}  // namespace strata::analytic
