#pragma once
/// @file parallel/cnn/context.hpp
/// @brief What a strategy is evaluated against, what it returns, and the `Strategy` concept.
///
/// A `context` bundles the layers, the cluster and the training setup, plus each layer's
/// compute times: ParaDL's FW_l and BW_l (per sample) and WU_l (per iteration). They are either
/// profiled by the user, as ParaDL does (§IV), or derived: FLOPs / (peak x efficiency) for
/// FW_l and BW_l, and the optimizer's bytes over the memory bandwidth for WU_l.

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>

#include "strata/comm/placement.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/limits.hpp"
#include "strata/model/layer.hpp"
#include "strata/report.hpp"
#include "strata/training.hpp"
#include "strata/units.hpp"

namespace strata {

/// ParaDL's per-layer times: FW_l, BW_l per sample and WU_l per iteration.
struct layer_time {
  seconds fw{};
  seconds bw{};
  seconds wu{};
};

/// What a strategy's formulas yield for one iteration.
struct cost_breakdown {
  time_breakdown time;
  memory_breakdown memory;
};

/// Everything a strategy's formulas read.
struct context {
  std::span<const layer> layers;
  cluster machine;
  training setup;
  std::span<const layer_time> profiled{};  ///< empty: derive times from FLOPs

  // Sums over all layers, filled by `make_context`.
  seconds sum_fw{};   ///< sum_l FW_l (per sample)
  seconds sum_bw{};   ///< sum_l BW_l (per sample)
  seconds sum_wu{};   ///< sum_l WU_l (per iteration)
  double sum_w = 0;   ///< sum_l |w_l|
  double sum_xy = 0;  ///< sum_l (|x_l| + |y_l|)

  [[nodiscard]] constexpr double delta() const { return setup.delta(); }
  [[nodiscard]] constexpr double batch() const { return setup.batch; }
  [[nodiscard]] constexpr std::size_t size() const { return layers.size(); }

  /// FW_l, BW_l, WU_l of layer i.
  [[nodiscard]] constexpr layer_time time(std::size_t i) const {
    if (!profiled.empty()) return profiled[i];
    const layer& l = layers[i];
    const flop_rate rate =
        machine.dev.peak(setup.element_type()) * setup.efficiency * power_clock_share(machine.dev);
    const bytes touched{l.params * delta() * update_passes(setup.cnn_optimizer())};
    return {flops{l.fw_flops} / rate, flops{l.bw_flops} / rate,
            touched / machine.dev.memory_bandwidth};
  }

  /// Memory of one device holding `weight_share` of the weights (and their gradients and
  /// optimizer states) and activations for `samples` samples, each split `activation_split`
  /// ways: the 2 delta (B'(|x| + |y|) + |w|) pattern of ParaDL eqs. 4, 7, 8, 16, 17, 20.
  [[nodiscard]] constexpr memory_breakdown memory(double weight_share, double samples,
                                                  double activation_split, double xy = -1) const {
    const double w = sum_w * weight_share * delta();
    const double acts = (xy < 0 ? sum_xy : xy) * samples / activation_split * delta();
    return {.weights = bytes{w},
            .gradients = bytes{w},
            .optimizer_states = bytes{w * states_per_param(setup.cnn_optimizer())},
            .activations = bytes{2.0 * acts}};
  }
};

/// Builds a context and its sums; checks the inputs once.
[[nodiscard]] constexpr context make_context(std::span<const layer> layers, const cluster& machine,
                                             const training& setup,
                                             std::span<const layer_time> profiled = {}) {
  if (layers.empty()) throw plan_error("the model has no layers");
  setup.check_cnn();
  if (!profiled.empty() && profiled.size() != layers.size())
    throw plan_error("profiled layer times must list every layer of the model");
  context c{layers, machine, setup, profiled};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const layer_time t = c.time(i);
    if (t.fw < seconds{0} || t.bw < seconds{0} || t.wu < seconds{0})
      throw plan_error("layer times must not be negative");
    c.sum_fw += t.fw;
    c.sum_bw += t.bw;
    c.sum_wu += t.wu;
    c.sum_w += layers[i].params;
    c.sum_xy += layers[i].x() + layers[i].y();
  }
  return c;
}

/// A parallel strategy: how many devices it occupies, the limits it must respect, and the cost
/// of one iteration (its compute scaling, the collectives it inserts, its memory rule).
namespace parallel {
struct spatial;
}

/// What one rank of a ParaDL strategy (all but the pipeline) runs, as the strategy answers it
/// (`rank(batch)`): `samples` samples with compute divided `split` ways and activations
/// `act_split` ways; `wu_share` of the weight update; the layer-wise collectives of filter and
/// channel parallelism on `lgroup`; the halo exchange of `tiles` on `hgroup`; the gradient
/// all-reduce of `gshare` of the weights on `ggroup`. `lower::cnn_rank` lowers it.
struct rank_shape {
  double samples = 1;
  double split = 1;
  double act_split = 1;
  double wu_share = 1;
  bool layerwise = false;
  group lgroup{};
  const parallel::spatial* tiles = nullptr;  ///< the strategy's own tiling (it outlives the shape)
  group hgroup{};
  bool gradients = false;
  group ggroup{};
  double gshare = 1;
};

/// A ParaDL strategy whose ranks are alike (or alike by symmetry): one `rank_shape` says what
/// each runs.
template <class S>
concept RankStrategy = requires(const S& s, double batch) {
  { s.rank(batch) } -> std::same_as<rank_shape>;
};

template <class S>
concept Strategy = requires(const S& s, const context& c) {
  { S::name } -> std::convertible_to<std::string_view>;
  { s.devices() } -> std::same_as<int>;
  s.check(c);
  { s.cost(c) } -> std::same_as<cost_breakdown>;
};

}  // namespace strata
