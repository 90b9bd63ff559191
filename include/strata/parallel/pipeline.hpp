#pragma once
/// @file parallel/pipeline.hpp
/// @brief Pipeline parallelism for transformers: GPipe (Huang et al. 2019), 1F1B
/// (PipeDream-Flush, Narayanan et al. 2021) and Megatron's interleaved 1F1B with v chunks per
/// device (Narayanan et al. SC'21 §2.2.2). ParaDL's CNN pipeline is `parallel/cnn/pipeline.hpp`.
///
/// - compute: layers split evenly over the p stages (or the first and last stages take given
///   counts), each stage's share in v chunks (`stage_layers`, `chunk_layers`); or, as
///   Megatron-Core's `account_for_embedding_in_pipeline_split` and
///   `account_for_loss_in_pipeline_split` do, the embedding and the loss count as a layer each,
///   so that L + 2 layers split over the p v chunks and the first chunk of the first stage and
///   the last chunk of the last stage hold one transformer layer fewer (Llama-3.1 405B: 126 + 2
///   = 128 over 8 x 8 chunks);
/// - schedule: the order a stage runs its forward and backward units (`program`), the micro-batches
///   it holds at its fullest (`in_flight`), the fill-and-drain bubble (`bubble`) and the
///   activation and gradient sends (`sends`);
/// - memory: a stage keeps its layers' weights and `in_flight` micro-batches of activations.

#include <string_view>
#include <vector>

#include "strata/detail/algorithm.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/parallel/slot.hpp"
#include "strata/units.hpp"

namespace strata::parallel {

enum class schedule { gpipe, one_f_one_b, interleaved };

[[nodiscard]] constexpr std::string_view to_string(schedule s) {
  switch (s) {
    case schedule::gpipe:
      return "gpipe";
    case schedule::one_f_one_b:
      return "1f1b";
    case schedule::interleaved:
      return "interleaved";
  }
  return "1f1b";
}

/// One (micro-batch, chunk) unit of a stage's program, forward or backward.
struct pipeline_unit {
  bool forward;
  int micro;
  int chunk;
};

struct pipeline_parallel {
  static constexpr policy_slot slot = policy_slot::pipeline;  ///< `parallel/policy.hpp`
  int degree = 1;
  int virtual_stages = 1;
  schedule kind = schedule::one_f_one_b;
  int first_stage_layers = 0;          ///< 0: an even share
  int last_stage_layers = 0;           ///< 0: an even share
  bool account_for_embedding = false;  ///< the embedding counts as a layer of the first chunk
  bool account_for_loss = false;       ///< the head and loss count as a layer of the last chunk

  /// The layers and stages left once the first and last stages take their given counts.
  struct evenly_split {
    int layers, stages;
  };
  [[nodiscard]] constexpr evenly_split even_part(int layers) const {
    evenly_split e{layers, degree};
    if (first_stage_layers > 0) e.layers -= first_stage_layers, --e.stages;
    if (last_stage_layers > 0) e.layers -= last_stage_layers, --e.stages;
    return e;
  }
  [[nodiscard]] constexpr bool accounts() const {
    return account_for_embedding || account_for_loss;
  }
  /// Layers of chunk `chunk` (0 to v - 1) of stage `i`.
  [[nodiscard]] constexpr int chunk_layers(int layers, int i, int chunk) const {
    if (!accounts()) return stage_layers(layers, i) / virtual_stages;
    const int v = virtual_stages;
    int n = (layers + (account_for_embedding ? 1 : 0) + (account_for_loss ? 1 : 0)) / (degree * v);
    if (account_for_embedding && i == 0 && chunk == 0) --n;
    if (account_for_loss && i == degree - 1 && chunk == v - 1) --n;
    return n;
  }
  /// Layers of stage `i` (all its virtual chunks together).
  [[nodiscard]] constexpr int stage_layers(int layers, int i) const {
    if (first_stage_layers == 0 && last_stage_layers == 0 && !accounts())
      return layers / degree;  // an even split (the common case, asked often)
    if (accounts()) {
      int n = 0;
      for (int k = 0; k < virtual_stages; ++k) n += chunk_layers(layers, i, k);
      return n;
    }
    if (degree == 1) return layers;
    if (i == 0 && first_stage_layers > 0) return first_stage_layers;
    if (i == degree - 1 && last_stage_layers > 0) return last_stage_layers;
    const evenly_split e = even_part(layers);
    return e.layers / e.stages;
  }

  /// Micro-batches whose activations stage `stage` holds at its fullest: all of them under
  /// GPipe, p - stage under 1F1B, and for the first stage of an interleaved schedule 1 + (p - 1) /
  /// (p v) times that (Korthikanti et al. 2022 §4.2.3).
  [[nodiscard]] constexpr double in_flight(int micro_batches, int stage) const {
    if (kind == schedule::gpipe) return micro_batches;
    double n = strata::detail::min(micro_batches, degree - stage);
    if (virtual_stages > 1 && stage == 0)
      n *= 1.0 + static_cast<double>(degree - 1) / (static_cast<double>(degree) * virtual_stages);
    return n;
  }
  /// Micro-batches whose first-chunk tensors (the embedding's) stage 0 holds at its fullest: as
  /// `in_flight`, but under an interleaved schedule 2p: its warm-up runs 2 (p - 1) + (v - 1) p
  /// forwards, p at a time per chunk, and the first chunk's backwards start (v - 1) p steps into
  /// the steady state, by when that chunk has run 2p forwards (Megatron-Core's
  /// `forward_backward_pipelining_with_interleaving`; the simulator runs the same order).
  [[nodiscard]] constexpr double first_chunk_in_flight(int micro_batches) const {
    if (kind != schedule::interleaved || virtual_stages <= 1) return in_flight(micro_batches, 0);
    return strata::detail::min(micro_batches, 2 * degree);
  }
  /// Fill and drain: the other stages' micro-batch time over v (Narayanan et al. SC'21 §2.2:
  /// bubble fraction (p - 1) / (v m) when the stages are alike).
  [[nodiscard]] constexpr seconds bubble(seconds all_stages, seconds slowest) const {
    return (all_stages - slowest) / static_cast<double>(virtual_stages);
  }
  /// Sends a stage waits for: one per forward and backward step, 2 (v m + p - 1). An interleaved
  /// schedule whose sends run beside the compute (`overlapped`, Megatron-Core's overlap_p2p_comm)
  /// waits only along the first micro-batch's way through the p v virtual stages and back,
  /// 2 (p v - 1): each of its rounds through the stages reaches stage 0 p sends late, while in the
  /// steady state a stage has p units of other work to do before it needs what is sent.
  [[nodiscard]] constexpr double sends(int micro_batches, bool overlapped = false) const {
    if (degree <= 1) return 0.0;
    if (overlapped && virtual_stages > 1) return 2.0 * (degree * virtual_stages - 1);
    return 2.0 * (virtual_stages * micro_batches + degree - 1);
  }

  /// What the pipeline adds to an iteration of `micro_batches`: the fill-and-drain bubble of the
  /// stages' per-micro-batch times (`all_stages` summed, `slowest`) and the sends a stage waits
  /// for, `send` each (`overlapped`: as in `sends`).
  struct time_terms {
    seconds bubble{}, sends{};
  };
  [[nodiscard]] constexpr time_terms time(seconds all_stages, seconds slowest, int micro_batches,
                                          seconds send, bool overlapped = false) const {
    return {bubble(all_stages, slowest), sends(micro_batches, overlapped) * send};
  }

  /// The program of stage i with m micro-batches, in Megatron's order: GPipe runs every forward
  /// then every backward; 1F1B p - i - 1 warm-up forwards, then one forward one backward, then the
  /// drain; interleaved 1F1B (p - i - 1) 2 + (v - 1) p warm-up units, unit k running chunk
  /// (k / p) mod v of micro-batch (k / pv) p + k mod p. `limit` > 0 caps the micro-batches in
  /// flight (Proteus's max_ongoing_micro_batch).
  [[nodiscard]] std::vector<pipeline_unit> program(int m, int i, int limit = 0) const {
    const int p = degree, v = virtual_stages, total = m * v;
    std::vector<pipeline_unit> out;
    auto micro_of = [&](int k) { return (k / (p * v)) * p + k % p; };
    auto fwd = [&](int k) { return pipeline_unit{true, micro_of(k), (k / p) % v}; };
    auto bwd = [&](int k) { return pipeline_unit{false, micro_of(k), v - 1 - (k / p) % v}; };
    if (kind == schedule::gpipe) {
      for (int k = 0; k < total; ++k) out.push_back(fwd(k));
      for (int k = 0; k < total; ++k) out.push_back(bwd(k));
      return out;
    }
    int warm = v == 1 ? p - i - 1 : (p - i - 1) * 2 + (v - 1) * p;
    if (limit > 0) warm = strata::detail::min(warm, limit * v - 1);
    warm = strata::detail::min(warm, total);
    int f = 0, b = 0;
    for (; f < warm; ++f) out.push_back(fwd(f));
    for (; f < total; ++f, ++b) {
      out.push_back(fwd(f));
      out.push_back(bwd(b));
    }
    for (; b < total; ++b) out.push_back(bwd(b));
    return out;
  }

  /// The limits for `layers` layers and m micro-batches per replica, each once: the first broken
  /// (`rule::ok` when none). `check` throws its sentence; the search asks `admits`.
  enum class rule {
    ok,
    degree_below_one,
    exceeds_layers,
    interleaving_needs_pipeline,
    uneven,
    split_given_twice,
    chunk_without_layers,
    micro_batch_multiple
  };
  [[nodiscard]] constexpr rule broken(int layers, int micro_batches) const {
    const int p = degree, v = virtual_stages;
    if (p < 1 || v < 1) return rule::degree_below_one;
    if (p > layers) return rule::exceeds_layers;
    if (v > 1 && (kind != schedule::interleaved || p == 1))
      return rule::interleaving_needs_pipeline;
    if (first_stage_layers < 0 || last_stage_layers < 0) return rule::uneven;
    if (accounts()) {
      if (first_stage_layers > 0 || last_stage_layers > 0) return rule::split_given_twice;
      const int total = layers + (account_for_embedding ? 1 : 0) + (account_for_loss ? 1 : 0);
      if (total % (p * v) != 0) return rule::uneven;
      for (int i = 0; i < p; ++i)
        for (int k = 0; k < v; ++k)
          if (chunk_layers(layers, i, k) < 1) return rule::chunk_without_layers;
    } else if (p > 1) {
      const evenly_split e = even_part(layers);
      if (e.stages < 1 ? e.layers != 0 : (e.layers < e.stages || e.layers % e.stages != 0))
        return rule::uneven;
      if (first_stage_layers == 0 && last_stage_layers == 0) {  // every stage e.layers / p
        if ((e.layers / e.stages) % v != 0) return rule::uneven;
      } else {
        for (const int i : {0, 1, p - 1})  // the stages between hold e.layers / e.stages each
          if (stage_layers(layers, i) % v != 0) return rule::uneven;
      }
    }
    if (kind == schedule::interleaved && v > 1 && micro_batches % p != 0)
      return rule::micro_batch_multiple;
    return rule::ok;
  }
  [[nodiscard]] constexpr bool admits(int layers, int micro_batches) const {
    return broken(layers, micro_batches) == rule::ok;
  }
  constexpr void check(int layers, int micro_batches) const {
    switch (broken(layers, micro_batches)) {
      case rule::ok:
        return;
      case rule::degree_below_one:
        throw plan_error(limits::degree_below_one);
      case rule::exceeds_layers:
        throw plan_error(limits::pipeline_degree_exceeds_transformer_layers);
      case rule::interleaving_needs_pipeline:
        throw plan_error(limits::interleaving_needs_pipeline);
      case rule::uneven:
        throw plan_error(limits::pipeline_layers_must_split_evenly);
      case rule::split_given_twice:
        throw plan_error(limits::pipeline_split_given_twice);
      case rule::chunk_without_layers:
        throw plan_error(limits::pipeline_chunk_without_layers);
      case rule::micro_batch_multiple:
        throw plan_error(limits::interleaving_needs_micro_batch_multiple);
    }
  }
};

}  // namespace strata::parallel
