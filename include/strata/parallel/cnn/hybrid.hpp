#pragma once
/// @file parallel/cnn/hybrid.hpp
/// @brief Hybrids: data + filter (ParaDL Table III last row, eqs. 20-22) and data + spatial.
///
/// p = p1 x p2 devices in p1 groups of p2. The inner strategy (filter or spatial) runs inside
/// each group on consecutive ranks, so on one node when p2 fits; data parallelism runs between
/// groups, on ranks p2 apart, across nodes ("we map the data parallel part on inter-node",
/// ParaDL §V-A).
/// @code
/// strata::parallel::data_filter df{.p1 = 8, .p2 = 4};      // 8 replicas of 4-way filter groups
/// strata::parallel::data_spatial ds{.p1 = 8, .inner = {.ph = 4}};
/// @endcode

#include <string_view>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/parallel/cnn/context.hpp"
#include "strata/parallel/cnn/data.hpp"
#include "strata/parallel/cnn/filter.hpp"
#include "strata/parallel/cnn/spatial.hpp"

namespace strata::parallel {

/// Data parallelism between p1 groups, filter parallelism inside each group of p2.
struct data_filter {
  static constexpr std::string_view name = "data+filter";
  int p1 = 1;  ///< data-parallel degree (groups)
  int p2 = 1;  ///< filter-parallel degree (devices per group)
  [[nodiscard]] constexpr int devices() const { return p1 * p2; }

  /// ParaDL Table III: p = p1 x p2 <= B x min_l F_l, i.e. p1 <= B and p2 <= min F_l.
  constexpr void check(const context& c) const {
    strata::detail::check_degrees({p1, p2});
    data{p1}.check(c);
    filter{p2}.check(c);
  }

  /// Each device: B/p1 samples, 1/p2 of the compute and of the update, the layer-wise
  /// collectives inside its group, its 1/p2 of the gradient all-reduced across the groups.
  [[nodiscard]] constexpr rank_shape rank(double B) const {
    return {.samples = B / p1,
            .split = double(p2),
            .wu_share = 1.0 / p2,
            .layerwise = true,
            .lgroup = {0, p2, 1},
            .gradients = true,
            .ggroup = {0, p1, p2},
            .gshare = 1.0 / p2};
  }

  /// Per iteration. Eq. (21): (B/p) sum(FW_l + BW_l) + sum WU_l / p2. Eq. (22):
  /// 3 (p2 - 1) sum_{l<G} (alpha + B|y_l| delta beta / p) inside groups, plus
  /// T_ar(p1, delta sum|w_l| / p2) between them. Eq. (20): 2 delta sum((B/p1)(|x|+|y|) + |w|/p2).
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    const int p = devices();
    time_breakdown t;
    t.forward = c.batch() / p * c.sum_fw;
    t.backward = c.batch() / p * c.sum_bw;
    t.optimizer = c.sum_wu / static_cast<double>(p2);
    t.tensor_comm = detail::layerwise_collectives(c, c.batch() / p1, {0, p2, 1});
    t.data_comm = comm::ring::all_reduce(p1, bytes{c.sum_w * c.delta() / p2},
                                         comm::ring_link(c.machine, {0, p1, p2}));
    return {t, c.memory(1.0 / p2, c.batch() / p1, 1.0)};
  }
};

/// Data parallelism between p1 groups, spatial parallelism inside each group of
/// p2 = ph x pw x pd. ParaDL gives no separate equations; composing its rules: compute as
/// eq. (9) over p = p1 p2, every device holds all weights so the gradient all-reduce spans all
/// p devices (eq. (6)), halo exchange (eq. (10)) inside each group for its B/p1 samples, and
/// memory 2 delta sum(B(|x_l| + |y_l|)/p + |w_l|).
struct data_spatial {
  static constexpr std::string_view name = "data+spatial";
  int p1 = 1;
  spatial inner{};
  [[nodiscard]] constexpr int devices() const { return p1 * inner.devices(); }

  /// p1 <= B and the spatial limits of Table III for the inner group.
  constexpr void check(const context& c) const {
    data{p1}.check(c);
    inner.check(c);
    strata::detail::check_degrees({p1, inner.devices()});
  }

  /// Each device: B/p1 samples, 1/p2 of the compute and of the activations, the halo exchange
  /// inside its group, the whole gradient all-reduced over all p devices.
  [[nodiscard]] constexpr rank_shape rank(double B) const {
    return {.samples = B / p1,
            .split = double(inner.devices()),
            .act_split = double(inner.devices()),
            .tiles = &inner,
            .hgroup = {0, inner.devices(), 1},
            .gradients = true,
            .ggroup = {0, devices(), 1}};
  }

  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    const int p = devices(), p2 = inner.devices();
    time_breakdown t;
    t.forward = c.batch() / p * c.sum_fw;
    t.backward = c.batch() / p * c.sum_bw;
    t.optimizer = c.sum_wu;
    t.data_comm = comm::ring::all_reduce(p, bytes{c.sum_w * c.delta()},
                                         comm::ring_link(c.machine, {0, p, 1}));
    t.context_comm = inner.halo_time(c, c.batch() / p1, {0, p2, 1});
    return {t, c.memory(1.0, c.batch() / p1, p2)};
  }
};

}  // namespace strata::parallel
