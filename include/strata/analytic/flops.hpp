#pragma once
/// @file analytic/flops.hpp
/// @brief A transformer iteration's FLOPs: the model's (Narayanan et al. SC'21 eq. (3),
/// generalized per token by `transformer::layer_forward_flops` to GQA, SwiGLU and MoE) and the
/// hardware's, which adds what recomputation runs again.

#include <string_view>

#include "strata/model/transformer.hpp"
#include "strata/parallel/recompute.hpp"

namespace strata::analytic {

using parallel::recompute;

/// Forward FLOPs of every layer for one token at sequence length s: the dense first layers'
/// (`transformer::first_dense`) and the others'.
[[nodiscard]] constexpr double layers_forward_flops(const transformer& m, double s) {
  if (m.dense_layers == 0) return m.layers * m.layer_forward_flops(s);
  return (m.layers - m.dense_layers) * m.layer_forward_flops(s) +
         m.dense_layers * m.first_dense().layer_forward_flops(s);
}

/// Model FLOPs of one iteration: forward and backward (3x forward) of every layer and of the
/// vocabulary projection, for B sequences of s tokens (Narayanan et al. SC'21 eq. (3) without
/// recomputation, generalized).
[[nodiscard]] constexpr double model_flops(const transformer& m, double batch, double s) {
  return 3 * batch * s * (layers_forward_flops(m, s) + m.head_forward_flops());
}

/// The matmul FLOPs per token that per-operator checkpointing runs again in a dense layer: the
/// second, fourth, ... of its separate projections in issue order (Q, K, V, the output
/// projection, then gate and up, or up alone, then down), whose outputs it does not cache.
[[nodiscard]] constexpr double uncached_matmul_flops(const transformer& m) {
  const double h = m.hidden, q = m.q_width(), w = m.kv_width(), f = m.ffn_size();
  const bool swiglu = m.mlp == mlp_kind::swiglu;
  struct projection {
    std::string_view name;
    double flops;  // per token
  };
  const projection layer[] = {{"Q", 2 * h * q},        {"K", 2 * h * w},
                              {"V", 2 * h * w},        {"attention projection", 2 * q * h},
                              {"MLP gate", 2 * h * f}, {"MLP up", 2 * h * f},
                              {"MLP down", 2 * f * h}};
  double again = 0;
  for (const projection& p : layer)
    if ((swiglu || p.name != "MLP gate") && !parallel::op_caches(p.name, swiglu)) again += p.flops;
  return again;
}

/// FLOPs the hardware runs: model FLOPs plus the recomputed forward (full: every layer, giving
/// SC'21's 96 B s l h^2 (1 + s/6h + V/16lh); selective: the attention core, 4 s h per token;
/// per-operator checkpointing: the matmuls whose outputs it does not cache).
[[nodiscard]] constexpr double hardware_flops(const transformer& m, double batch, double s,
                                              recompute r) {
  const double base = model_flops(m, batch, s);
  if (r == recompute::full)
    return m.dense_layers == 0 ? base + batch * s * m.layers * m.layer_forward_flops(s)
                               : base + batch * s * layers_forward_flops(m, s);
  if (r == recompute::selective)
    return base + batch * s * m.layers * (m.mla() ? m.attention_core_flops(s) : 4 * s * m.hidden);
  if (r == recompute::per_op) return base + batch * s * m.layers * uncached_matmul_flops(m);
  return base;
}

}  // namespace strata::analytic
