#pragma once
/// @file search/paradl_sweep.hpp
/// @brief Enumerating and ranking ParaDL strategies: a lazy range-v3 view over every strategy
/// kind and power-of-two degree up to a device budget, evaluated against one shared context.
///
/// The single-degree strategy kinds are a compile-time list of policy types (Boost.Hana); each
/// becomes a view of degrees, and the views are concatenated into one range of
/// `parallel::any_strategy`. Ranking checks each plan (Table III's limits, the device count),
/// prunes what does not fit in memory first, then sorts by epoch time.
/// @code
/// const auto net = strata::zoo::resnet50();
/// auto ranked = strata::search::rank(net.view(), strata::presets::abci(64), {.batch = 1024},
///                                    strata::search::paradl_strategies(64));
/// @endcode

#include <algorithm>
#include <span>
#include <variant>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/transform.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>
#include <range/v3/view/cartesian_product.hpp>
#include <range/v3/view/concat.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/single.hpp>
#include <range/v3/view/transform.hpp>

#include "strata/analytic/evaluate.hpp"
#include "strata/error.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/report.hpp"

namespace strata::search {

namespace hana = boost::hana;

/// The strategy kinds with a single degree p.
inline constexpr auto single_degree_kinds =
    hana::tuple_t<parallel::data, parallel::filter, parallel::channel>;

/// Every ParaDL strategy on up to `max_devices` devices with power-of-two degrees: serial;
/// data, filter, channel and spatial (height split) with p = 2 .. max; pipeline with p stages
/// and S = 1, 2, 4, ..., 64 segments; data+filter and data+spatial with p1 x p2 <= max. A lazy
/// view: nothing is evaluated until it is iterated.
[[nodiscard]] inline auto paradl_strategies(int max_devices) {
  namespace rv = ranges::views;
  if (max_devices < 1) throw plan_error("a strategy sweep needs at least one device");
  int log = 0;
  while ((2 << log) <= max_devices) ++log;
  const auto pow2 = rv::iota(1, log + 1) | rv::transform([](int k) { return 1 << k; });
  auto singles = hana::unpack(hana::transform(single_degree_kinds,
                                              [pow2](auto kind) {
                                                using S = typename decltype(kind)::type;
                                                return pow2 | rv::transform([](int p) {
                                                         return parallel::any_strategy{S{p}};
                                                       });
                                              }),
                              [](auto... views) { return rv::concat(views...); });
  auto spatial = pow2 | rv::transform([](int p) {
                   return parallel::any_strategy{parallel::spatial{p, 1, 1}};
                 });
  const auto stages = rv::concat(rv::single(1), pow2);
  const auto segments = rv::iota(0, 7) | rv::transform([](int k) { return 1 << k; });
  auto pipeline =
      rv::cartesian_product(stages, segments) |
      rv::filter([](auto ps) { return std::get<0>(ps) > 1; }) | rv::transform([](auto ps) {
        return parallel::any_strategy{parallel::pipeline{std::get<0>(ps), std::get<1>(ps)}};
      });
  auto pairs = rv::cartesian_product(pow2, pow2) | rv::filter([max_devices](auto pq) {
                 return std::get<0>(pq) * std::get<1>(pq) <= max_devices;
               });
  auto hybrids = rv::concat(
      pairs | rv::transform([](auto pq) {
        return parallel::any_strategy{parallel::data_filter{std::get<0>(pq), std::get<1>(pq)}};
      }),
      pairs | rv::transform([](auto pq) {
        return parallel::any_strategy{
            parallel::data_spatial{std::get<0>(pq), {std::get<1>(pq), 1, 1}}};
      }));
  return rv::concat(rv::single(parallel::any_strategy{parallel::serial{}}), singles, spatial,
                    pipeline, hybrids);
}

/// One evaluated plan.
struct ranked_plan {
  parallel::any_strategy strategy;
  report result;
};

/// Evaluates every strategy of `strategies` against one context; drops the ones that violate a
/// limit, need more devices than `machine` has or (with `must_fit`) do not fit in memory; sorts
/// the rest by epoch time, fastest first.
template <class Strategies>
[[nodiscard]] std::vector<ranked_plan> rank(std::span<const layer> layers, const cluster& machine,
                                            const training& setup, Strategies&& strategies,
                                            bool must_fit = true) {
  const context c = make_context(layers, machine, setup);
  std::vector<ranked_plan> out;
  for (const parallel::any_strategy& s : strategies) {
    std::visit(
        [&](const auto& st) {
          if (st.devices() > machine.devices()) return;
          try {
            st.check(c);
          } catch (const plan_error&) {
            return;
          }
          const report r = analytic::report_of(st, c);
          if (must_fit && !r.fits()) return;
          out.push_back({s, r});
        },
        s);
  }
  std::stable_sort(out.begin(), out.end(), [](const ranked_plan& a, const ranked_plan& b) {
    return a.result.epoch_time() < b.result.epoch_time();
  });
  return out;
}

}  // namespace strata::search
