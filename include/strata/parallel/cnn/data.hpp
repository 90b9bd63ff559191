#pragma once
/// @file parallel/cnn/data.hpp
/// @brief Serial training and data parallelism (ParaDL Table III rows 1-2, eqs. 3-7).
/// @code
/// strata::parallel::data dp{.p = 64};   // 64 replicas; the mini-batch is split 64 ways
/// @endcode

#include <string_view>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/parallel/cnn/context.hpp"

namespace strata::parallel {

/// One device runs everything: ParaDL eqs. (3) and (4).
struct serial {
  static constexpr std::string_view name = "serial";
  [[nodiscard]] constexpr int devices() const { return 1; }
  constexpr void check(const context&) const {}
  [[nodiscard]] constexpr rank_shape rank(double B) const { return {.samples = B}; }

  /// Per iteration: B sum(FW_l + BW_l) + sum WU_l; memory 2 delta sum(B(|x|+|y|) + |w|).
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    time_breakdown t;
    t.forward = c.batch() * c.sum_fw;
    t.backward = c.batch() * c.sum_bw;
    t.optimizer = c.sum_wu;
    return {t, c.memory(1.0, c.batch(), 1.0)};
  }
};

/// Data parallelism: p replicas, B/p samples each, one all-reduce of the gradients.
struct data {
  static constexpr std::string_view name = "data";
  int p = 1;

  [[nodiscard]] constexpr int devices() const { return p; }

  /// ParaDL Table III: p <= B.
  constexpr void check(const context& c) const {
    strata::detail::check_degree(p);
    if (p > c.setup.batch) throw plan_error(limits::data_degree_exceeds_batch);
  }

  /// Each replica: B/p samples, the whole gradient all-reduced over the p replicas.
  [[nodiscard]] constexpr rank_shape rank(double B) const {
    return {.samples = B / p, .gradients = true, .ggroup = {0, p, 1}};
  }

  /// Per iteration, ParaDL eq. (5): (B/p) sum(FW_l + BW_l) + sum WU_l;
  /// eq. (6): T_ar(p, delta sum |w_l|) = 2 (p-1) (alpha + sum|w_l| delta beta / p);
  /// eq. (7): 2 delta sum((B/p)(|x_l| + |y_l|) + |w_l|).
  [[nodiscard]] constexpr cost_breakdown cost(const context& c) const {
    const double share = c.batch() / p;
    time_breakdown t;
    t.forward = share * c.sum_fw;
    t.backward = share * c.sum_bw;
    t.optimizer = c.sum_wu;
    t.data_comm = comm::ring::all_reduce(p, bytes{c.sum_w * c.delta()},
                                         comm::ring_link(c.machine, {0, p, 1}));
    return {t, c.memory(1.0, share, 1.0)};
  }
};

}  // namespace strata::parallel
