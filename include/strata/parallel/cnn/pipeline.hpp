#pragma once
/// @file parallel/cnn/pipeline.hpp
/// @brief Layer (pipeline) parallelism, GPipe style: G layers cut into p contiguous stages, the
/// mini-batch into S segments (ParaDL Table III row 4, eqs. 11-14).
/// @code
/// strata::parallel::pipeline pp{.p = 4, .segments = 8};
/// @endcode

#include <cstddef>
#include <string_view>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/parallel/cnn/context.hpp"

namespace strata::parallel {

/// One stage: layers [first, last].
struct stage {
  std::size_t first = 0;
  std::size_t last = 0;
};

/// p stages of S segments each.
struct pipeline {
  static constexpr std::string_view name = "pipeline";
  int p = 1;
  int segments = 1;  ///< S: micro-batches per mini-batch

  [[nodiscard]] constexpr int devices() const { return p; }

  /// ParaDL Table III: p <= G; and a segment holds at least one sample (S <= B).
  constexpr void check(const context& c) const {
    strata::detail::check_degree(p);
    if (segments < 1) throw plan_error(limits::pipeline_segments_below_one);
    if (static_cast<std::size_t>(p) > c.size())
      throw plan_error(limits::pipeline_degree_exceeds_layers);
    if (segments > c.setup.batch) throw plan_error(limits::pipeline_segments_exceed_batch);
  }

  /// Calls f(stage) for each of the p stages of the balanced split: contiguous groups whose
  /// largest per-sample FW + BW time is as small as possible (binary search on that bound,
  /// greedy packing, every stage non-empty).
  template <class F>
  constexpr void for_each_stage(const context& c, F&& f) const {
    const std::size_t g = c.size(), np = static_cast<std::size_t>(p);
    auto load = [&](std::size_t i) {
      const layer_time lt = c.time(i);
      return (lt.fw + lt.bw).count();
    };
    auto stages_needed = [&](double cap) {
      std::size_t n = 1;
      double acc = 0;
      for (std::size_t i = 0; i < g; ++i) {
        const double w = load(i);
        if (w > cap) return g + 1;
        if (acc + w > cap) {
          ++n;
          acc = 0;
        }
        acc += w;
      }
      return n;
    };
    double lo = 0, hi = 0;
    for (std::size_t i = 0; i < g; ++i) hi += load(i);
    for (int it = 0; it < 64 && hi > lo; ++it) {
      const double mid = 0.5 * (lo + hi);
      if (mid <= lo || mid >= hi) break;
      (stages_needed(mid) <= np ? hi : lo) = mid;
    }
    // Greedy packing under `hi`, opening a new stage early when the remaining layers are just
    // enough to give every remaining stage one layer.
    std::size_t first = 0, made = 0;
    double acc = 0;
    for (std::size_t i = 0; i < g; ++i) {
      const std::size_t stages_left = np - made;  // including the open one
      const bool must_close = (g - i) == (stages_left - 1) && stages_left > 1 && i > first;
      if (i > first && (must_close || acc + load(i) > hi) && stages_left > 1) {
        f(stage{first, i - 1});
        ++made;
        first = i;
        acc = 0;
      }
      acc += load(i);
    }
    f(stage{first, g - 1});
  }

  /// Per iteration. ParaDL eq. (12): (p + S - 1)(B/S)(max FW_Gi + max BW_Gi), plus max WU_Gi once
  /// per iteration (eq. (12) and Table III place the WU term differently; once per iteration is
  /// the dimensionally consistent reading). Eq. (13): 2 (p + S - 2) max_i T_p2p((B/S)|y_Gi| delta)
  /// over the p - 1 stage boundaries. Memory, Table III: 2 delta max_i sum_{l in G_i}
  /// (B(|x_l| + |y_l|) + |w_l|) (eq. (14) carries an extra factor 2 that Table III does not).
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    const double seg = c.batch() / segments;
    seconds max_fw{}, max_bw{}, max_wu{}, max_send{};
    memory_breakdown worst{};
    int index = 0;
    for_each_stage(c, [&](stage s) {
      seconds fw{}, bw{}, wu{};
      double w = 0, xy = 0;
      for (std::size_t l = s.first; l <= s.last; ++l) {
        const layer_time t = c.time(l);
        fw += t.fw;
        bw += t.bw;
        wu += t.wu;
        w += c.layers[l].params;
        xy += c.layers[l].x() + c.layers[l].y();
      }
      max_fw = max(max_fw, fw);
      max_bw = max(max_bw, bw);
      max_wu = max(max_wu, wu);
      if (index + 1 < p) {
        const bytes m{seg * c.layers[s.last].y() * c.delta()};
        max_send = max(max_send, comm::p2p(m, c.machine.between(index, index + 1)));
      }
      const memory_breakdown mem = c.memory(w / c.sum_w, c.batch(), 1.0, xy);
      if (mem.total() > worst.total()) worst = mem;
      ++index;
    });
    const double steps = p + segments - 1;
    time_breakdown t;
    t.forward = steps * seg * max_fw;
    t.backward = steps * seg * max_bw;
    t.optimizer = max_wu;
    t.pipeline_p2p = p > 1 ? 2.0 * (p + segments - 2) * max_send : seconds{};
    return {t, worst};
  }
};

}  // namespace strata::parallel
