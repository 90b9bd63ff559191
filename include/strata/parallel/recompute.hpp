#pragma once
/// @file parallel/recompute.hpp
/// @brief Activation recomputation (Korthikanti et al. 2022 §5): `none` keeps every saved tensor;
/// `selective` recomputes the attention core (its s^2 scores are not kept); `full` keeps each
/// layer's input only and runs the layer's forward again before its backward (Chen et al. 2016's
/// checkpointing, one checkpoint per layer). Its rules, each once: what it keeps
/// (`rebuilds_layer`, `drops_attention_core`, which `lower::layer`'s kept tensors and
/// `analytic::stage_terms` ask) and what it runs again (`recomputed`, which the closed form's
/// spans and the simulator ask); the typed policy is `recomputation<R>` (`parallel/policy.hpp`).

#include <string_view>

namespace strata::parallel {

enum class recompute { none, selective, full };

/// Whether a layer keeps only its input and rebuilds the rest before its backward (full).
[[nodiscard]] constexpr bool rebuilds_layer(recompute r) { return r == recompute::full; }
/// Whether the attention core's tensors (scores, softmax, dropout) are dropped and the core run
/// again before the backward (selective).
[[nodiscard]] constexpr bool drops_attention_core(recompute r) { return r == recompute::selective; }
/// What `r` runs again before a layer's backward, given the layer's whole forward and its
/// attention core (as spans or seconds): the whole forward (full), the core (selective) or
/// nothing.
template <class T>
[[nodiscard]] constexpr T recomputed(recompute r, const T& whole, const T& attention_core) {
  if (rebuilds_layer(r)) return whole;
  if (drops_attention_core(r)) return attention_core;
  return T{};
}

[[nodiscard]] constexpr std::string_view to_string(recompute r) {
  switch (r) {
    case recompute::none:
      return "none";
    case recompute::selective:
      return "selective";
    case recompute::full:
      return "full";
  }
  return "none";
}

}  // namespace strata::parallel
