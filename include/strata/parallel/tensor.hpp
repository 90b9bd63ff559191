#pragma once
/// @file parallel/tensor.hpp
/// @brief Megatron tensor parallelism (Shoeybi et al. 2019 §3), with sequence parallelism
/// (Korthikanti et al. 2022 §4.2.2).
///
/// - compute: QKV and the first MLP GEMM split by columns, the output projections by rows: every
///   GEMM, attention head and MLP unit of a layer divided by t (`lower::layer`'s `/ t`);
/// - collectives: per layer and pass, two all-reduces of the b s h activation (after the attention
///   and MLP blocks forward; their inputs' gradients backward), each an all-gather plus a
///   reduce-scatter of the same bytes under sequence parallelism (`collectives`);
/// - memory: the sharded activations divided by t; under sequence parallelism norms, dropout and
///   residuals work on s / t tokens, so the replicated ones are divided too.
/// The limits: t divides the heads, the key/value heads, the hidden size and the MLP width;
/// sequence parallelism needs t > 1.

#include <array>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/slot.hpp"
#include "strata/units.hpp"

namespace strata::parallel {

struct tensor_parallel {
  static constexpr policy_slot slot = policy_slot::tensor;  ///< `parallel/policy.hpp`
  int degree = 1;
  bool sequence = false;

  /// One collective a layer's pass runs `count` times on the b s h activation.
  struct pass_collective {
    comm::collective op;
    int count;
  };
  [[nodiscard]] constexpr std::array<pass_collective, 2> collectives() const {
    if (sequence)
      return {{{comm::collective::all_gather, 2}, {comm::collective::reduce_scatter, 2}}};
    return {{{comm::collective::all_reduce, 2}, {comm::collective::all_reduce, 0}}};
  }
  /// What tensor parallelism adds to an iteration: its blocking collectives, `forward` and
  /// `backward` per layer pass, over `layer_passes` passes (micro-batches x the stage's layers).
  [[nodiscard]] constexpr seconds time(double layer_passes, seconds forward,
                                       seconds backward) const {
    return layer_passes * (forward + backward);
  }
  /// Tokens the norms, dropouts and residuals of one rank see.
  [[nodiscard]] constexpr double norm_tokens(double tokens) const {
    return sequence ? tokens / degree : tokens;
  }

  /// The limits, each once: the first `m` breaks (`rule::ok` when none). `check` throws its
  /// sentence; the search asks `admits` of every candidate.
  enum class rule { ok, degree_below_one, sequence_needs_degree, heads, hidden, kv_heads, ffn };
  [[nodiscard]] constexpr rule broken(const transformer& m) const {
    if (degree < 1) return rule::degree_below_one;
    if (sequence && degree == 1) return rule::sequence_needs_degree;
    if (m.heads % degree != 0) return rule::heads;
    if (m.hidden % degree != 0) return rule::hidden;
    if (m.kv() % degree != 0) return rule::kv_heads;
    if (static_cast<long long>(m.ffn_size()) % degree != 0) return rule::ffn;
    return rule::ok;
  }
  [[nodiscard]] constexpr bool admits(const transformer& m) const { return broken(m) == rule::ok; }
  constexpr void check(const transformer& m) const {
    switch (broken(m)) {
      case rule::ok:
        return;
      case rule::degree_below_one:
        throw plan_error(limits::degree_below_one);
      case rule::sequence_needs_degree:
        throw plan_error(limits::sequence_parallel_needs_tensor_degree);
      case rule::heads:
        throw plan_error(limits::tensor_degree_must_divide_heads);
      case rule::hidden:
        throw plan_error(limits::tensor_degree_must_divide_hidden);
      case rule::kv_heads:
        throw plan_error(limits::tensor_degree_must_divide_kv_heads);
      case rule::ffn:
        throw plan_error(limits::tensor_degree_must_divide_ffn);
    }
  }
};

}  // namespace strata::parallel
