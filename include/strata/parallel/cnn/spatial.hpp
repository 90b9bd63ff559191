#pragma once
/// @file parallel/cnn/spatial.hpp
/// @brief Spatial parallelism: each sample's height, width (and depth) split over
/// p = ph x pw x pd devices, with halo exchange (ParaDL Table III row 3, eqs. 8-10).
/// @code
/// strata::parallel::spatial sp{.ph = 2, .pw = 2};   // 2 x 2 tiles of every feature map
/// @endcode

#include <cstddef>
#include <string_view>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/parallel/cnn/context.hpp"

namespace strata::parallel {

/// ph x pw x pd tiles of each sample (pd only for 3-D data).
struct spatial {
  static constexpr std::string_view name = "spatial";
  int ph = 1;
  int pw = 1;
  int pd = 1;

  [[nodiscard]] constexpr int devices() const { return ph * pw * pd; }

  /// Elements one tile sends to one neighbour per sample, for a K x K window over shape `s`:
  /// floor(K/2) rows of the tile's face, for each split dimension, times the channels.
  /// Windows of size 1 need no halo.
  [[nodiscard]] constexpr double halo(const shape& s, int kernel) const {
    if (kernel <= 1) return 0.0;
    const double r = kernel / 2;
    const double h = static_cast<double>(s.h) / ph, w = static_cast<double>(s.w) / pw,
                 d = static_cast<double>(s.d) / pd;
    double face = 0;
    if (ph > 1) face += w * d;
    if (pw > 1) face += h * d;
    if (pd > 1) face += h * w;
    return r * face * s.c;
  }

  /// Layers that are split: those with a spatial extent, except fully-connected layers (the
  /// classifier tail is not a limit; ParaDL §V-A splits the early layers and gathers before it).
  [[nodiscard]] static constexpr bool splits(const layer& l) {
    return l.kind != layer_kind::linear && l.in.spatial() > 1.0;
  }

  /// Each tile: every sample, 1/p of the compute and of the activations, the halo exchange and
  /// the whole gradient all-reduced over the p tiles.
  [[nodiscard]] constexpr rank_shape rank(double B) const {
    const group tiles_group{0, devices(), 1};
    return {.samples = B,
            .split = double(devices()),
            .act_split = double(devices()),
            .tiles = this,
            .hgroup = tiles_group,
            .gradients = true,
            .ggroup = tiles_group};
  }

  /// ParaDL Table III: p = pw x ph (x pd) <= min_l (W_l x H_l); each factor fits its dimension.
  constexpr void check(const context& c) const {
    strata::detail::check_degrees({ph, pw, pd});
    for (const layer& l : c.layers) {
      if (!splits(l)) continue;
      if (devices() > l.WH()) throw plan_error(limits::spatial_degree_exceeds_smallest_extent);
      if (ph > l.in.h || pw > l.in.w || pd > l.in.d)
        throw plan_error(limits::spatial_split_exceeds_dimension);
    }
  }

  /// ParaDL eq. (10), per iteration for `samples` samples on the tile group `g`:
  /// 2 sum_l (T_p2p(samples halo(|x_l|) delta) + T_p2p(samples halo(|dL/dy_l|) delta)).
  [[nodiscard]] constexpr seconds halo_time(const context& c, double samples, group g) const {
    const interconnect nb = comm::ring_link(c.machine, g);
    seconds t{};
    for (const layer& l : c.layers) {
      const double hx = halo(l.in, l.kernel), hy = halo(l.out, l.kernel);
      if (hx > 0) t += 2.0 * comm::p2p(bytes{samples * hx * c.delta()}, nb);
      if (hy > 0) t += 2.0 * comm::p2p(bytes{samples * hy * c.delta()}, nb);
    }
    return t;
  }

  /// Per iteration, ParaDL eq. (9): (B/p) sum(FW_l + BW_l) + sum WU_l; gradient all-reduce as
  /// eq. (6); halo eq. (10); memory eq. (8): 2 delta sum(B(|x_l| + |y_l|)/p + |w_l|).
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    const int p = devices();
    time_breakdown t;
    t.forward = c.batch() / p * c.sum_fw;
    t.backward = c.batch() / p * c.sum_bw;
    t.optimizer = c.sum_wu;
    t.data_comm = comm::ring::all_reduce(p, bytes{c.sum_w * c.delta()},
                                         comm::ring_link(c.machine, {0, p, 1}));
    t.context_comm = halo_time(c, c.batch(), {0, p, 1});
    return {t, c.memory(1.0, c.batch(), p)};
  }
};

}  // namespace strata::parallel
