#pragma once
/// @file search/yan_optimizer.hpp
/// @brief Yan et al. §5's scalability optimizer: the configuration (N_ps, N_mr, N_wr and per layer
/// P, H, R) with the smallest epoch time on N machines, in polynomial time.
///
/// The segment-to-worker mapping is greedy (`yan::greedy_remote_rows`, inside
/// `remote_activations`). Layers are composed by dynamic programming (§5.3):
///   T([1, l], s_l) = min_{s_{l-1}} T([1, l-1], s_{l-1}) + U(l, s_l) + M(l, l-1, s_l, s_{l-1}),
/// where a state s = (P, R, H) and M holds the activations l receives from l-1 and the error
/// terms l-1 receives back from l. Every other term of the epoch time belongs to one layer, so
/// the recurrence is exact. `brute_force` enumerates every split for checking it on small cases.
/// @code
/// const auto best = strata::search::optimize_yan(net, strata::yan::e5_2450(), {.machines = 20},
///                                                60000);
/// @endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "strata/analytic/yan.hpp"
#include "strata/error.hpp"

namespace strata::search {

/// The search space: machines, the thread counts to try and whether layers may be replicated.
struct yan_space {
  int machines = 20;
  std::vector<int> threads{1, 2, 4, 8, 16};
  bool replicate_layers = true;
  int read_period = 70;
  int write_period = 40;
  /// Called after each (N_ps, N_mr, N_wr) with the fraction of the work done; returning false
  /// stops the search with a plan_error (a time limit). Empty: never called.
  std::function<bool(double)> progress{};
};

/// The most machines `optimize_yan` searches over: 1024.
inline constexpr int max_search_machines = 1024;
/// The most work (dynamic-programming transitions and segment pairs mapped) `optimize_yan`
/// starts: 10^11, several minutes on one core. A larger search is refused before it starts.
inline constexpr double max_search_work = 1e11;

/// A configuration and its epoch time.
struct yan_solution {
  yan::system system;
  std::vector<yan::layer_split> split;
  double epoch = std::numeric_limits<double>::infinity();
};

namespace detail {
inline int max_partitions(const yan::layer_view& l) {
  return l.kind == layer_kind::conv ? l.out.h : l.out.c;
}
}  // namespace detail

namespace detail {
/// A(i) for a partitions before layer i and b in it, computed once per (i, a, b) and shared by
/// every system of a search.
class remote_cache {
 public:
  explicit remote_cache(std::span<const yan::layer_view> net)
      : net_(net), table_(net.size()), rows_(net.size(), 0), cols_(net.size(), 0) {}
  double operator()(std::size_t i, int a, int b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    if (ua >= rows_[i] || ub >= cols_[i])
      grow(i, std::max(rows_[i], std::max(ua + 1, 2 * rows_[i])),
           std::max(cols_[i], std::max(ub + 1, 2 * cols_[i])));
    double& v = table_[i][ua * cols_[i] + ub];
    if (std::isnan(v)) v = yan::remote_activations(net_[i], a, b);
    return v;
  }

 private:
  void grow(std::size_t i, std::size_t rows, std::size_t cols) {
    std::vector<double> t(rows * cols, std::numeric_limits<double>::quiet_NaN());
    for (std::size_t a = 0; a < rows_[i]; ++a)
      for (std::size_t b = 0; b < cols_[i]; ++b) t[a * cols + b] = table_[i][a * cols_[i] + b];
    table_[i] = std::move(t);
    rows_[i] = rows;
    cols_[i] = cols;
  }
  std::span<const yan::layer_view> net_;
  std::vector<std::vector<double>> table_;
  std::vector<std::size_t> rows_, cols_;
};

inline std::vector<std::vector<yan::layer_split>> layer_states(std::span<const yan::layer_view> net,
                                                               const yan::system& s,
                                                               const yan::costs& c,
                                                               const yan_space& space) {
  std::vector<std::vector<yan::layer_split>> states(net.size());
  for (std::size_t i = 0; i < net.size(); ++i)
    for (int p = 1; p <= s.workers && p <= max_partitions(net[i]); ++p)
      for (int r = 1;
           static_cast<long long>(p) * r <= s.workers && (r == 1 || space.replicate_layers); ++r)
        for (int h : space.threads)
          if (h >= 1 && h <= c.cores) states[i].push_back({p, h, r});
  return states;
}

inline yan_solution optimize_layers(std::span<const yan::layer_view> net, const yan::system& s,
                                    const yan::costs& c, double samples, const yan_space& space,
                                    remote_cache& remote) {
  const std::size_t L = net.size();
  const auto states = layer_states(net, s, c, space);
  const double per_read = samples / s.read_period;
  // Terms that belong to layer i alone, for the epoch: compute and this layer's weight reads.
  auto node = [&](std::size_t i, const yan::layer_split& st) {
    const yan::layer_estimate e = yan::layer_terms(net, i, st, 0, 0, s, c);
    const double mw = e.mw_min + c.read_position * (e.mw_max - e.mw_min);
    return (e.uf + e.ub + e.uw) * samples / e.q + mw * per_read;
  };
  // Messages between layers i-1 and i: M_f(i) and M_b(i-1), each over its layer's Q.
  auto edge = [&](std::size_t i, const yan::layer_split& a, const yan::layer_split& b) {
    const double act = remote(i, a.partitions, b.partitions);
    if (act <= 0) return 0.0;
    const double qa = static_cast<double>(a.threads) * a.replicas * s.replicas;
    const double qb = static_cast<double>(b.threads) * b.replicas * s.replicas;
    const double mf = c.c_ncost(b.threads) + act * c.bits / (c.nbw / b.threads);
    const double mb = c.c_ncost(a.threads) + act * c.bits / (c.nbw / a.threads);
    return mf * samples / qb + mb * samples / qa;
  };
  std::vector<std::vector<double>> cost(L);
  std::vector<std::vector<std::size_t>> from(L);
  for (std::size_t i = 0; i < L; ++i) {
    cost[i].assign(states[i].size(), std::numeric_limits<double>::infinity());
    from[i].assign(states[i].size(), 0);
    for (std::size_t k = 0; k < states[i].size(); ++k) {
      const double own = node(i, states[i][k]);
      if (i == 0) {
        cost[i][k] = own;
        continue;
      }
      for (std::size_t j = 0; j < states[i - 1].size(); ++j) {
        const double v = cost[i - 1][j] + edge(i, states[i - 1][j], states[i][k]) + own;
        if (v < cost[i][k]) {
          cost[i][k] = v;
          from[i][k] = j;
        }
      }
    }
  }
  yan_solution best{s, std::vector<yan::layer_split>(L), std::numeric_limits<double>::infinity()};
  if (L == 0) return best;
  std::size_t k = 0;
  for (std::size_t j = 0; j < cost[L - 1].size(); ++j)
    if (cost[L - 1][j] < best.epoch) {
      best.epoch = cost[L - 1][j];
      k = j;
    }
  if (cost[L - 1].empty()) return best;
  for (std::size_t i = L; i-- > 0;) {
    best.split[i] = states[i][k];
    k = from[i][k];
  }
  return best;
}
}  // namespace detail

/// The best split of every layer for fixed N_ps, N_mr, N_wr (dynamic programming).
inline yan_solution optimize_layers(std::span<const yan::layer_view> net, const yan::system& s,
                                    const yan::costs& c, double samples, const yan_space& space) {
  detail::remote_cache remote(net);
  return detail::optimize_layers(net, s, c, samples, space, remote);
}

/// The work `optimize_yan` does for `space` (dynamic-programming transitions plus segment pairs
/// mapped), to refuse a search that cannot finish before it starts.
[[nodiscard]] inline double search_work(std::span<const yan::layer_view> net, const yan::costs& c,
                                        const yan_space& space) {
  const int n = space.machines;
  double threads = 0;
  for (int h : space.threads) threads += (h >= 1 && h <= c.cores) ? 1 : 0;
  double work = 0;
  std::vector<double> prev;
  for (int wr = 1; wr < n; ++wr) {
    double systems = 0;  // (N_ps, N_mr) with N_ps + N_mr wr <= N
    for (int ps = 1; ps + wr <= n; ++ps) systems += (n - ps) / wr;
    double dp = 0, states_prev = 0;
    for (std::size_t i = 0; i < net.size(); ++i) {
      double st = 0;
      const int top = std::min(wr, detail::max_partitions(net[i]));
      for (int p = 1; p <= top; ++p) st += space.replicate_layers ? wr / p : 1;
      st *= threads;
      if (i > 0) dp += st * states_prev;
      states_prev = st;
    }
    work += systems * dp;
    if (work > max_search_work) return work;
  }
  // segment pairs mapped once per (layer, a, b): sum over a, b of a b
  const double top = n;
  work += static_cast<double>(net.size()) * (top * (top + 1) / 2) * (top * (top + 1) / 2);
  return work;
}

/// Yan et al. §5.3: every (N_ps, N_mr, N_wr) with N_ps + N_mr N_wr <= N (constraint C1), each
/// with its optimal layer composition.
inline yan_solution optimize_yan(std::span<const yan::layer_view> net, const yan::costs& c,
                                 const yan_space& space, double samples) {
  if (space.machines < 2) throw plan_error("a parameter-server system needs at least 2 machines");
  if (space.machines > max_search_machines)
    throw plan_error("the parameter-server search covers at most " +
                     std::to_string(max_search_machines) + " machines (got " +
                     std::to_string(space.machines) + ")");
  const double total = search_work(net, c, space);
  if (total > max_search_work)
    throw plan_error("the parameter-server search on " + std::to_string(space.machines) +
                     " machines would take more than 10^11 steps (hours); search fewer machines "
                     "or fewer thread counts");
  detail::remote_cache remote(net);
  yan_solution best;
  const double systems = [&] {
    double k = 0;
    for (int ps = 1; ps < space.machines; ++ps)
      for (int wr = 1; ps + wr <= space.machines; ++wr) k += (space.machines - ps) / wr;
    return k;
  }();
  double done = 0;
  for (int ps = 1; ps < space.machines; ++ps)
    for (int wr = 1; ps + wr <= space.machines; ++wr)
      for (int mr = 1; ps + static_cast<long long>(mr) * wr <= space.machines; ++mr) {
        const yan::system s{ps, mr, wr, space.read_period, space.write_period};
        yan_solution cand = detail::optimize_layers(net, s, c, samples, space, remote);
        if (cand.epoch < best.epoch) best = std::move(cand);
        ++done;
        if (space.progress && !space.progress(done / systems))
          throw plan_error("the parameter-server search stopped at its time limit after " +
                           std::to_string(static_cast<long long>(done)) + " of " +
                           std::to_string(static_cast<long long>(systems)) + " configurations");
      }
  return best;
}

/// Every split of every layer for fixed N_ps, N_mr, N_wr: exponential, for tests.
inline yan_solution brute_force(std::span<const yan::layer_view> net, const yan::system& s,
                                const yan::costs& c, double samples, const yan_space& space) {
  const std::size_t L = net.size();
  std::vector<yan::layer_split> options;
  for (int p = 1; p <= s.workers; ++p)
    for (int r = 1; p * r <= s.workers && (r == 1 || space.replicate_layers); ++r)
      for (int h : space.threads) options.push_back({p, h, r});
  std::vector<std::size_t> pick(L, 0);
  yan_solution best{s, {}, std::numeric_limits<double>::infinity()};
  std::vector<yan::layer_split> split(L);
  while (true) {
    bool valid = true;
    for (std::size_t i = 0; i < L; ++i) {
      split[i] = options[pick[i]];
      valid = valid && split[i].partitions <= detail::max_partitions(net[i]);
    }
    if (valid) {
      const double t = yan::evaluate(net, s, split, c, samples, space.machines).epoch();
      if (t < best.epoch) best = {s, split, t};
    }
    std::size_t i = 0;
    while (i < L && ++pick[i] == options.size()) pick[i++] = 0;
    if (i == L) break;
  }
  return best;
}

}  // namespace strata::search
