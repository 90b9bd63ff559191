#pragma once
// Yan et al. Table 1: eight configurations <workers per replica / replicas / parameter servers>
// of each benchmark on the 20 servers of §6.1, ranked by measured epoch time on Adam. Shared by
// examples/yan_table1.cpp and test/unit/yan.cpp. Every layer runs on all N_wr workers of its
// replica (P = N_wr) with 16 threads; reads every 70 samples, writes every 40 (§6.2).
#include <array>
#include <vector>

#include <strata/analytic/yan.hpp>
#include <strata/search/rank.hpp>
#include <strata/strata.hpp>

namespace table1 {

struct row {
  int workers, replicas, servers;
  int measured_rank;
};

inline constexpr std::array<row, 8> mnist{{{2, 9, 2, 1},
                                           {2, 8, 4, 2},
                                           {2, 6, 8, 3},
                                           {4, 4, 4, 4},
                                           {1, 19, 1, 5},
                                           {1, 18, 2, 6},
                                           {1, 16, 4, 7},
                                           {1, 12, 8, 8}}};
inline constexpr std::array<row, 8> imagenet{{{4, 4, 4, 1},
                                              {4, 4, 2, 2},
                                              {2, 9, 2, 3},
                                              {4, 3, 6, 4},
                                              {4, 3, 4, 5},
                                              {2, 8, 4, 6},
                                              {2, 6, 6, 7},
                                              {2, 6, 4, 8}}};
inline constexpr double mnist_samples = 60'000;         // MNIST training set
inline constexpr double imagenet_samples = 15'000'000;  // "over 15 million images"

inline strata::yan::estimate estimate(const std::vector<strata::yan::layer_view>& net, const row& r,
                                      double samples, const strata::yan::costs& c) {
  const strata::yan::system s{r.servers, r.replicas, r.workers};
  return strata::yan::evaluate(net, s, strata::yan::uniform(net, s, 16), c, samples, 20);
}

/// Kendall's tau between the estimated epoch times and the measured ranks.
template <std::size_t N>
double tau(const std::vector<strata::yan::layer_view>& net, const std::array<row, N>& rows,
           double samples, const strata::yan::costs& c) {
  std::vector<double> est, measured;
  for (const row& r : rows) {
    est.push_back(estimate(net, r, samples, c).epoch());
    measured.push_back(r.measured_rank);
  }
  return strata::search::kendall_tau(est, measured);
}

}  // namespace table1
