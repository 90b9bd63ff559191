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

#include <cstddef>
#include <limits>
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
};

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

/// The best split of every layer for fixed N_ps, N_mr, N_wr (dynamic programming).
inline yan_solution optimize_layers(std::span<const yan::layer_view> net, const yan::system& s,
                                    const yan::costs& c, double samples, const yan_space& space) {
  const std::size_t L = net.size();
  std::vector<std::vector<yan::layer_split>> states(L);
  for (std::size_t i = 0; i < L; ++i)
    for (int p = 1; p <= s.workers && p <= detail::max_partitions(net[i]); ++p)
      for (int r = 1; p * r <= s.workers && (r == 1 || space.replicate_layers); ++r)
        for (int h : space.threads)
          if (h >= 1 && h <= c.cores) states[i].push_back({p, h, r});
  // remote[i][a][b]: A(i) with a partitions before and b in layer i (the greedy mapping)
  std::vector<std::vector<std::vector<double>>> remote(L);
  for (std::size_t i = 1; i < L; ++i) {
    remote[i].assign(static_cast<std::size_t>(s.workers) + 1,
                     std::vector<double>(static_cast<std::size_t>(s.workers) + 1, 0.0));
    for (int a = 1; a <= s.workers; ++a)
      for (int b = 1; b <= s.workers; ++b)
        remote[i][static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] =
            yan::remote_activations(net[i], a, b);
  }
  const double per_read = samples / s.read_period;
  // Terms that belong to layer i alone, for the epoch: compute and this layer's weight reads.
  auto node = [&](std::size_t i, const yan::layer_split& st) {
    const yan::layer_estimate e = yan::layer_terms(net, i, st, 0, 0, s, c);
    const double mw = e.mw_min + c.read_position * (e.mw_max - e.mw_min);
    return (e.uf + e.ub + e.uw) * samples / e.q + mw * per_read;
  };
  // Messages between layers i-1 and i: M_f(i) and M_b(i-1), each over its layer's Q.
  auto edge = [&](std::size_t i, const yan::layer_split& a, const yan::layer_split& b) {
    const double act =
        remote[i][static_cast<std::size_t>(a.partitions)][static_cast<std::size_t>(b.partitions)];
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
  std::size_t k = 0;
  for (std::size_t j = 0; j < cost[L - 1].size(); ++j)
    if (cost[L - 1][j] < best.epoch) {
      best.epoch = cost[L - 1][j];
      k = j;
    }
  for (std::size_t i = L; i-- > 0;) {
    best.split[i] = states[i][k];
    k = from[i][k];
  }
  return best;
}

/// Yan et al. §5.3: every (N_ps, N_mr, N_wr) with N_ps + N_mr N_wr <= N (constraint C1), each
/// with its optimal layer composition.
inline yan_solution optimize_yan(std::span<const yan::layer_view> net, const yan::costs& c,
                                 const yan_space& space, double samples) {
  if (space.machines < 2) throw plan_error("a parameter-server system needs at least 2 machines");
  yan_solution best;
  for (int ps = 1; ps < space.machines; ++ps)
    for (int wr = 1; ps + wr <= space.machines; ++wr)
      for (int mr = 1; ps + mr * wr <= space.machines; ++mr) {
        const yan::system s{ps, mr, wr, space.read_period, space.write_period};
        yan_solution cand = optimize_layers(net, s, c, samples, space);
        if (cand.epoch < best.epoch) best = std::move(cand);
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
