#pragma once
/// @file parallel/recompute.hpp
/// @brief Activation recomputation (Korthikanti et al. 2022 §5): `none` keeps every saved tensor;
/// `selective` recomputes the attention core (its s^2 scores are not kept); `full` keeps each
/// layer's input only and runs the layer's forward again before its backward (Chen et al. 2016's
/// checkpointing, one checkpoint per layer); `per_op` checkpoints each layer too but caches the
/// outputs of some operators so the recomputation skips them (PyTorch's selective activation
/// checkpointing as torchtitan's "op" policy uses it). Its rules, each once: what it keeps
/// (`rebuilds_layer`, `checkpoints_layer`, `saves_op_outputs`, `drops_attention_core`, which
/// `lower::layer`'s kept tensors and `analytic::stage_terms` ask) and what it runs again
/// (`recomputed`, which the closed form's spans and the simulator ask); the typed policy is
/// `recomputation<R>` (`parallel/policy.hpp`).

#include <string_view>

namespace strata::parallel {

enum class recompute { none, selective, full, per_op };

/// Whether a layer runs its whole forward again before its backward (full).
[[nodiscard]] constexpr bool rebuilds_layer(recompute r) { return r == recompute::full; }
/// Whether the layer is checkpointed: autograd keeps its input only, and what the policy caches
/// (full: nothing; per_op: the outputs of the operators it saves).
[[nodiscard]] constexpr bool checkpoints_layer(recompute r) {
  return r == recompute::full || r == recompute::per_op;
}
/// Whether per-operator checkpointing caches operators' outputs (torchtitan's selective "op"
/// policy, `torchtitan/parallelisms/parallelize_llama.py` `_save_list` at 9dec370: the output of
/// every other `aten.mm` — the first, third, ... of a layer — and of the fused attention kernel;
/// with sequence parallelism the reduce-scatters' too; everything else is recomputed).
[[nodiscard]] constexpr bool saves_op_outputs(recompute r) { return r == recompute::per_op; }
/// Which projections of a dense layer per-operator checkpointing caches, by the lowering's names:
/// torchtitan counts a layer's `aten.mm` calls and caches the odd ones (`forward_mm_count % 2`),
/// which over its separate projections (Q, K, V, output, gate, up, down; without SwiGLU up,
/// down) are Q, V, gate and down (up without SwiGLU).
[[nodiscard]] constexpr bool op_caches(std::string_view projection, bool swiglu) {
  return projection == "Q" || projection == "V" || projection == (swiglu ? "MLP gate" : "MLP up") ||
         (swiglu && projection == "MLP down");
}
/// Whether the attention core's tensors (scores, softmax, dropout) are dropped and the core run
/// again before the backward (selective).
[[nodiscard]] constexpr bool drops_attention_core(recompute r) { return r == recompute::selective; }
/// What `r` runs again before a layer's backward, given the layer's whole forward, its
/// attention core and its forward without the operators per-op checkpointing caches (as spans
/// or seconds): the whole forward (full), the core (selective), the uncached operators (per_op)
/// or nothing.
template <class T>
[[nodiscard]] constexpr T recomputed(recompute r, const T& whole, const T& attention_core,
                                     const T& uncached) {
  if (rebuilds_layer(r)) return whole;
  if (drops_attention_core(r)) return attention_core;
  if (saves_op_outputs(r)) return uncached;
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
    case recompute::per_op:
      return "op";
  }
  return "none";
}

}  // namespace strata::parallel
