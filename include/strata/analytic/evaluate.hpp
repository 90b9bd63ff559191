#pragma once
/// @file analytic/evaluate.hpp
/// @brief Closed-form evaluation of a strategy on a model, cluster and training setup (ParaDL).
/// @code
/// constexpr auto net = strata::zoo::resnet50();
/// constexpr auto r = strata::analytic::evaluate(net.view(), strata::parallel::data{.p = 16},
///                                               strata::presets::abci(16), {.batch = 512});
/// static_assert(r.memory.total() < 16_GiB);
/// @endcode

#include <concepts>
#include <span>
#include <variant>

#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/report.hpp"
#include "strata/training.hpp"

namespace strata::analytic {

/// The report of `strategy` on context `c` (checked by the caller): its ParaDL cost.
template <Strategy S>
[[nodiscard]] constexpr report report_of(const S& strategy, const context& c) {
  const cost_breakdown k = strategy.cost(c);
  return {.strategy = S::name,
          .devices = strategy.devices(),
          .batch = c.setup.batch,
          .iterations = c.setup.iterations(),
          .time = k.time,
          .memory = k.memory,
          .headroom = {},
          .capacity = c.machine.dev.memory};
}

/// Checks the plan (Table III's limits, the device count) and evaluates its cost.
template <Strategy S>
[[nodiscard]] constexpr report evaluate(std::span<const layer> layers, const S& strategy,
                                        const cluster& machine, const training& setup,
                                        std::span<const layer_time> profiled = {}) {
  const context c = make_context(layers, machine, setup, profiled);
  strategy.check(c);
  if (strategy.devices() > machine.devices()) throw plan_error(limits::plan_exceeds_cluster);
  return report_of(strategy, c);
}

/// The same for a strategy chosen at run time (a template only so that a translation unit that
/// never calls it does not instantiate every strategy's cost).
template <std::same_as<parallel::any_strategy> Any>
[[nodiscard]] constexpr report evaluate(std::span<const layer> layers, const Any& strategy,
                                        const cluster& machine, const training& setup,
                                        std::span<const layer_time> profiled = {}) {
  return std::visit([&](const auto& s) { return evaluate(layers, s, machine, setup, profiled); },
                    strategy);
}

}  // namespace strata::analytic
