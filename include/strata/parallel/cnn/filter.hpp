#pragma once
/// @file parallel/cnn/filter.hpp
/// @brief Model-horizontal parallelism: filter (split F) and channel (split C), ParaDL Table III
/// rows 5-6, eqs. 15-19.
///
/// Each of p devices holds 1/p of every layer's weights. Filter parallelism all-gathers each
/// layer's output in the forward pass and all-reduces the input gradient in the backward pass;
/// channel parallelism does the reverse. Either way a layer costs
/// T_ag(p, B|y_l|delta/p) + T_ar(p, B|y_l|delta) = 3 (p - 1)(alpha + B|y_l| delta beta / p).
/// @code
/// strata::parallel::filter fp{.p = 4};
/// @endcode

#include <cstddef>
#include <string_view>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/parallel/cnn/context.hpp"

namespace strata::parallel {

namespace detail {
/// ParaDL eq. (15)/(19) on group `g` of p devices with `samples` samples per group:
/// sum over weighted layers l except the last of T_ag(p, samples |y_l| delta / p) +
/// T_ar(p, samples |y_l| delta). Only convolution and fully-connected layers split their
/// weights; normalisation, activation and pooling layers work channel by channel on the
/// partitioned output and need no collective of their own (ParaDL Table IV counts ResNet-50 as
/// 50 layers: its weighted ones).
constexpr seconds layerwise_collectives(const context& c, double samples, group g) {
  if (g.size == 1) return {};
  const interconnect l = comm::ring_link(c.machine, g);
  std::size_t last = c.size();
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c.layers[i].has_weights()) last = i;
  seconds t{};
  for (std::size_t i = 0; i < last; ++i) {
    if (!c.layers[i].has_weights()) continue;
    const bytes m{samples * c.layers[i].y() * c.delta()};
    t += comm::ring::all_gather(g.size, m, l) + comm::ring::all_reduce(g.size, m, l);
  }
  return t;
}

/// Per iteration, ParaDL eqs. (16)-(18): (B/p) sum(FW_l + BW_l) + sum WU_l / p; memory
/// 2 delta sum(B(|x_l| + |y_l|) + |w_l|/p).
constexpr cost_breakdown model_horizontal_cost(const context& c, int p) {
  time_breakdown t;
  t.forward = c.batch() / p * c.sum_fw;
  t.backward = c.batch() / p * c.sum_bw;
  t.optimizer = c.sum_wu / static_cast<double>(p);
  t.tensor_comm = layerwise_collectives(c, c.batch(), {0, p, 1});
  return {t, c.memory(1.0 / p, c.batch(), 1.0)};
}
}  // namespace detail

/// Filter parallelism: every layer's F output channels split over p devices.
struct filter {
  static constexpr std::string_view name = "filter";
  int p = 1;
  [[nodiscard]] constexpr int devices() const { return p; }

  /// ParaDL Table III: p <= min_l F_l.
  constexpr void check(const context& c) const {
    strata::detail::check_degree(p);
    for (const layer& l : c.layers)
      if (p > l.F()) throw plan_error(limits::filter_degree_exceeds_fewest_filters);
  }
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    return detail::model_horizontal_cost(c, p);
  }
  /// Each device: every sample, 1/p of the compute and of the update, the layer-wise
  /// collectives over the p devices.
  [[nodiscard]] constexpr rank_shape rank(double B) const {
    return {.samples = B,
            .split = double(p),
            .wu_share = 1.0 / p,
            .layerwise = true,
            .lgroup = {0, p, 1}};
  }
};

/// Channel parallelism: every layer's C input channels split over p devices. The first layer's
/// input is the sample itself (3 colour channels for ImageNet), which is not split: ParaDL
/// Table VIII runs channel parallelism on 64 GPUs for ResNet-50 and VGG16.
struct channel {
  static constexpr std::string_view name = "channel";
  int p = 1;
  [[nodiscard]] constexpr int devices() const { return p; }

  /// ParaDL Table III: p <= min_l C_l (over layers after the first).
  constexpr void check(const context& c) const {
    strata::detail::check_degree(p);
    for (std::size_t i = 1; i < c.size(); ++i)
      if (p > c.layers[i].C()) throw plan_error(limits::channel_degree_exceeds_fewest_channels);
  }
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    return detail::model_horizontal_cost(c, p);
  }
  /// Each device: what a filter-parallel one runs (the same splits and collectives).
  [[nodiscard]] constexpr rank_shape rank(double B) const { return filter{p}.rank(B); }
};

}  // namespace strata::parallel
