#pragma once
/// @file search/rank.hpp
/// @brief Rank agreement: Kendall's tau-b between two orderings (ties allowed).
/// @code
/// const double tau = strata::search::kendall_tau(predicted_times, measured_ranks);
/// @endcode

#include <cmath>
#include <cstddef>
#include <span>

#include "strata/error.hpp"

namespace strata::search {

/// Kendall's tau-b of x and y: (concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y)).
[[nodiscard]] inline double kendall_tau(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size() || x.size() < 2)
    throw plan_error("Kendall's tau needs two sequences of the same length, at least 2");
  double concordant = 0, discordant = 0, tx = 0, ty = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j) {
      const double a = x[i] - x[j], b = y[i] - y[j];
      if (a == 0 && b == 0) continue;
      if (a == 0) {
        ++tx;
      } else if (b == 0) {
        ++ty;
      } else if ((a > 0) == (b > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  const double n1 = concordant + discordant + tx, n2 = concordant + discordant + ty;
  if (n1 == 0 || n2 == 0) return 0;
  return (concordant - discordant) / std::sqrt(n1 * n2);
}

}  // namespace strata::search
