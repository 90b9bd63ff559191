#pragma once
/// @file search/sharders.hpp
/// @brief Lin et al.'s embedding-table sharders (Table III) and sharding-config selection with
/// the performance model (§VI-A, Table IV).
///
/// An indexing sharder puts table x on a rank directly: naive x.idx % p, random a uniformly
/// drawn rank. A greedy sharder sorts the tables by a cost, largest first (ties by index), and
/// gives each to the rank with the least cost so far (ties to the lowest rank) among the ranks
/// its bytes still fit on. Costs (Table III): size_greedy E; lookup_greedy L x D;
/// norm_lookup_greedy L / E; size_lookup_greedy L x D x log10(E). Selection prices each
/// sharding's iteration with `analytic::dlrm_plan` and picks the fastest: Lin et al. do this
/// to replace benchmarking every config (85 % success, Table IV).
/// @code
/// const auto pick = strata::search::select_sharder(model, {.batch = 4096}, 8, cluster, profile,
///                                                  strata::h100_embedding_bag);
/// pick.best;  // index into pick.candidates
/// @endcode

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analytic/dlrm.hpp"
#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/model/dlrm.hpp"

namespace strata::search {

namespace detail {
inline std::string gib(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}
/// A fraction as a percentage a reader expects: "80 %", "62.5 %".
inline std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g %%", 100 * f);
  return buf;
}
}  // namespace detail

/// Lin et al. Table III.
enum class sharder {
  naive,
  random,
  size_greedy,
  lookup_greedy,
  norm_lookup_greedy,
  size_lookup_greedy
};

inline constexpr std::array<sharder, 6> all_sharders{sharder::naive,
                                                     sharder::random,
                                                     sharder::size_greedy,
                                                     sharder::lookup_greedy,
                                                     sharder::norm_lookup_greedy,
                                                     sharder::size_lookup_greedy};

[[nodiscard]] constexpr std::string_view to_string(sharder s) {
  switch (s) {
    case sharder::naive:
      return "naive";
    case sharder::random:
      return "random";
    case sharder::size_greedy:
      return "size_greedy";
    case sharder::lookup_greedy:
      return "lookup_greedy";
    case sharder::norm_lookup_greedy:
      return "norm_lookup_greedy";
    case sharder::size_lookup_greedy:
      return "size_lookup_greedy";
  }
  return "?";
}

/// The sharder called `name`, or a plan_error listing the six.
[[nodiscard]] inline sharder sharder_named(std::string_view name) {
  for (sharder s : all_sharders)
    if (to_string(s) == name) return s;
  throw plan_error("unknown sharder \"" + std::string(name) +
                   "\" (known: naive, random, size_greedy, lookup_greedy, norm_lookup_greedy, "
                   "size_lookup_greedy)");
}

/// Table III's cost of a table for the greedy sharders (indexing sharders: 0).
[[nodiscard]] constexpr double table_cost(sharder s, double rows, double dim, double pooling) {
  switch (s) {
    case sharder::size_greedy:
      return rows;
    case sharder::lookup_greedy:
      return pooling * dim;
    case sharder::norm_lookup_greedy:
      return pooling / rows;
    case sharder::size_lookup_greedy:
      return pooling * dim * strata::detail::log10(rows);
    default:
      return 0;
  }
}

/// Assigns each table a rank of `ranks`. `bytes[i]` is what table i occupies on its rank,
/// `capacity` what one rank offers the tables. A table that fits no rank (greedy) or not its
/// rank (indexing) is a plan_error naming it. `seed` drives `random`.
[[nodiscard]] inline std::vector<int> shard(const std::vector<embedding_table>& tables, int ranks,
                                            sharder s, const std::vector<double>& bytes,
                                            double capacity, std::uint64_t seed = 0) {
  if (ranks < 1) throw plan_error("sharding: at least one rank");
  if (bytes.size() != tables.size()) throw plan_error("sharding: one size per table");
  const std::size_t n = tables.size();
  std::vector<int> owner(n, 0);
  std::vector<double> used(static_cast<std::size_t>(ranks), 0.0);
  auto too_big = [&](std::size_t i, const std::string& where) {
    return plan_error("table '" + tables[i].name + "' (" + detail::gib(bytes[i]) +
                      ") does not fit " + where + " (" + detail::gib(capacity) +
                      " for tables per rank)");
  };
  if (s == sharder::naive || s == sharder::random) {
    strata::detail::splitmix64 g{seed};
    for (std::size_t i = 0; i < n; ++i) {
      const int r = s == sharder::naive ? static_cast<int>(i % static_cast<std::size_t>(ranks))
                                        : static_cast<int>(g.next() % static_cast<unsigned>(ranks));
      auto& u = used[static_cast<std::size_t>(r)];
      if (u + bytes[i] > capacity)
        throw too_big(i, "rank " + std::to_string(r) +
                             " beside the "
                             "tables it already holds");
      u += bytes[i];
      owner[i] = r;
    }
    return owner;
  }
  std::vector<double> cost(n);
  for (std::size_t i = 0; i < n; ++i)
    cost[i] = table_cost(s, tables[i].rows, tables[i].dim, tables[i].pooling);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(static_cast<std::size_t>(ranks), 0.0);
  for (std::size_t i : order) {
    int best = -1;
    for (int r = 0; r < ranks; ++r) {
      const auto k = static_cast<std::size_t>(r);
      if (used[k] + bytes[i] > capacity) continue;
      if (best < 0 || load[k] < load[static_cast<std::size_t>(best)]) best = r;
    }
    if (best < 0) throw too_big(i, "any rank");
    const auto k = static_cast<std::size_t>(best);
    load[k] += cost[i];
    used[k] += bytes[i];
    owner[i] = best;
  }
  return owner;
}

/// The bytes each table occupies under `setup` (weights, and the dense gradient if any).
[[nodiscard]] inline std::vector<double> table_bytes(const dlrm& model,
                                                     const analytic::dlrm_setup& setup) {
  std::vector<double> out;
  const double e = size_of(setup.precision);
  for (const auto& t : model.tables)
    out.push_back(t.weight_bytes(e) * (setup.gradient == embedding_gradient::fused ? 1.0 : 2.0));
  return out;
}

/// One sharder's outcome.
struct sharding_candidate {
  sharder which = sharder::naive;
  bool feasible = false;
  std::string error{};  ///< why not, when infeasible
  std::vector<int> owner{};
  analytic::dlrm_report report{};
};

struct sharding_selection {
  std::vector<sharding_candidate> candidates{};  ///< in `all_sharders` order
  int best = -1;                                 ///< the fastest feasible candidate
  /// (slowest - fastest) / fastest over the feasible candidates.
  [[nodiscard]] double spread() const {
    double lo = 0, hi = 0;
    bool any = false;
    for (const auto& c : candidates) {
      if (!c.feasible) continue;
      const double t = c.report.iteration_time;
      lo = any ? std::min(lo, t) : t;
      hi = any ? std::max(hi, t) : t;
      any = true;
    }
    return any && lo > 0 ? (hi - lo) / lo : 0;
  }
};

/// The bytes one of `ranks` ranks offers the tables: `memory_fraction` of a device's memory
/// less what the rest of the plan needs on it (the MLPs' states, activations and the all-to-all
/// buffers, counted as if the rank owned every table's pooled rows). Lin et al. keep the tables
/// under 80 % of a GPU's memory.
[[nodiscard]] inline double table_capacity(const dlrm& model, const analytic::dlrm_setup& setup,
                                           int ranks, const cluster& machine,
                                           const device_profile& prof,
                                           const embedding_bag_model& el,
                                           double memory_fraction = 0.8) {
  std::vector<int> rr(model.tables.size());
  for (std::size_t i = 0; i < rr.size(); ++i)
    rr[i] = static_cast<int>(i % static_cast<std::size_t>(ranks));
  const auto base = analytic::dlrm_plan(model, setup, rr, ranks, machine, prof, el);
  double other = 0, all_dim = 0;
  for (const auto& t : model.tables) all_dim += t.dim;
  for (const auto& r : base.ranks) other = std::max(other, r.memory - r.table_bytes);
  other += 2 * all_dim * setup.batch * size_of(setup.precision);
  const double capacity = memory_fraction * machine.dev.memory.count() - other;
  if (capacity <= 0)
    throw plan_error("DLRM: the MLPs, activations and buffers alone fill the " +
                     detail::percent(memory_fraction) + " of a device's memory the tables may use");
  return capacity;
}

/// Checks a given sharding against the capacity; the first table that overflows its rank is a
/// plan_error naming it.
inline void check_sharding(const std::vector<embedding_table>& tables,
                           const std::vector<int>& owner, int ranks,
                           const std::vector<double>& bytes, double capacity) {
  if (owner.size() != tables.size() || bytes.size() != tables.size())
    throw plan_error("sharding: one rank and one size per table");
  std::vector<double> used(static_cast<std::size_t>(ranks), 0.0);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    if (owner[i] < 0 || owner[i] >= ranks)
      throw plan_error("table '" + tables[i].name + "' is sharded to rank " +
                       std::to_string(owner[i]) + " of " + std::to_string(ranks));
    auto& u = used[static_cast<std::size_t>(owner[i])];
    u += bytes[i];
    if (u > capacity)
      throw plan_error("table '" + tables[i].name + "' does not fit rank " +
                       std::to_string(owner[i]) + ": its tables need " + detail::gib(u) + ", " +
                       detail::gib(capacity) + " are free");
  }
}

/// Lin et al. §VI-A: shard with every sharder (or those in `which`), predict each iteration,
/// pick the fastest. Throws only when no sharder fits.
[[nodiscard]] inline sharding_selection select_sharder(
    const dlrm& model, const analytic::dlrm_setup& setup, int ranks, const cluster& machine,
    const device_profile& prof, const embedding_bag_model& el, double memory_fraction = 0.8,
    std::uint64_t seed = 0, const std::vector<sharder>& which = {}) {
  model.validate();
  const auto sizes = table_bytes(model, setup);
  const double capacity = table_capacity(model, setup, ranks, machine, prof, el, memory_fraction);
  sharding_selection out;
  const std::vector<sharder> list =
      which.empty() ? std::vector<sharder>(all_sharders.begin(), all_sharders.end()) : which;
  for (sharder s : list) {
    sharding_candidate c;
    c.which = s;
    try {
      c.owner = shard(model.tables, ranks, s, sizes, capacity, seed);
      c.report = analytic::dlrm_plan(model, setup, c.owner, ranks, machine, prof, el);
      c.feasible = true;
    } catch (const plan_error& e) {
      c.error = e.what();
    }
    out.candidates.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < out.candidates.size(); ++i) {
    const auto& c = out.candidates[i];
    if (c.feasible &&
        (out.best < 0 ||
         c.report.iteration_time <
             out.candidates[static_cast<std::size_t>(out.best)].report.iteration_time))
      out.best = static_cast<int>(i);
  }
  if (out.best < 0) throw plan_error("no sharder fits the tables: " + out.candidates.front().error);
  return out;
}

}  // namespace strata::search
