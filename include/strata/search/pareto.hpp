#pragma once
/// @file search/pareto.hpp
/// @brief Pareto fronts of plans under several objectives (all minimized) and the cost of
/// training on a plan: GPU-hours and, given a price per GPU-hour, money for N tokens.
///
/// A plan dominates another when it is no worse in every objective and better in one; the front
/// is the set of plans nothing dominates. Plans with equal objectives are all kept (neither
/// dominates the other). `pareto_front` keeps the front incrementally, so a sweep can offer it
/// every plan it times and a distributed search can merge fronts by offering one to another.
/// @code
/// strata::search::pareto_front<int, 2> front;
/// front.offer({3.0, 10.0}, 0);  // kept
/// front.offer({4.0, 12.0}, 1);  // dominated by the first: dropped
/// front.offer({5.0, 8.0}, 2);   // kept: less memory
/// @endcode

#include <array>
#include <cstddef>
#include <vector>

#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"

namespace strata::search {

/// True when `a` dominates `b`: no objective worse, at least one better (minimization).
template <std::size_t N>
[[nodiscard]] constexpr bool dominates(const std::array<double, N>& a,
                                       const std::array<double, N>& b) {
  bool better = false;
  for (std::size_t i = 0; i < N; ++i) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) better = true;
  }
  return better;
}

/// The non-dominated subset of the items offered to it, with their objectives.
template <class T, std::size_t N>
struct pareto_front {
  struct entry {
    std::array<double, N> objectives;
    T item;
  };
  std::vector<entry> entries;

  /// Offers an item; returns whether it joined the front (dropping what it dominates).
  bool offer(const std::array<double, N>& objectives, const T& item) {
    for (const entry& e : entries)
      if (dominates(e.objectives, objectives)) return false;
    std::erase_if(entries, [&](const entry& e) { return dominates(objectives, e.objectives); });
    entries.push_back({objectives, item});
    return true;
  }
  /// Offers every entry of another front (merging two searches' fronts).
  void merge(const pareto_front& other) {
    for (const entry& e : other.entries) offer(e.objectives, e.item);
  }
  [[nodiscard]] std::size_t size() const { return entries.size(); }
};

/// What training costs on a plan (`cost_of`).
struct training_cost {
  double gpu_hours_per_iteration = 0;  ///< devices x iteration time / 3600 s
  double iterations = 0;               ///< tokens / tokens per iteration (0 without a budget)
  double gpu_hours = 0;                ///< for the token budget (0 without one)
  double money = 0;                    ///< gpu_hours x price (0 without a price)
};

/// The cost of training `tokens` tokens (0: none given) on `devices` devices whose iterations
/// take `iteration_s` seconds and consume `tokens_per_iteration` tokens, at `price` per
/// GPU-hour (0: none given). GPU-hours = devices x iterations x iteration time / 3600.
/// @code
/// // GPT-3 175B, 1024 GPUs, 1536 x 2048 tokens per 30 s iteration, 300 B tokens at $2 / GPU-hour:
/// // 95,367 iterations x 30 s x 1024 / 3600 = 813,802 GPU-hours, $1.63 M
/// auto c = strata::search::cost_of(1024, 30.0, 1536.0 * 2048, 300e9, 2.0);
/// @endcode
[[nodiscard]] inline training_cost cost_of(int devices, double iteration_s,
                                           double tokens_per_iteration, double tokens = 0,
                                           double price = 0) {
  if (devices < 1) throw plan_error("cost: a plan needs at least one device");
  if (!(iteration_s > 0) || !strata::detail::isfinite(iteration_s))
    throw plan_error("cost: the iteration time must be a positive number of seconds");
  if (!(tokens_per_iteration > 0) || !strata::detail::isfinite(tokens_per_iteration))
    throw plan_error("cost: an iteration must consume a positive number of tokens");
  if (!(tokens >= 0) || !strata::detail::isfinite(tokens))
    throw plan_error("cost.tokens: must be a non-negative number of tokens");
  if (!(price >= 0) || !strata::detail::isfinite(price))
    throw plan_error("cost.price_per_gpu_hour: must be a non-negative number");
  training_cost c;
  c.gpu_hours_per_iteration = devices * iteration_s / 3600.0;
  c.iterations = tokens / tokens_per_iteration;
  c.gpu_hours = c.iterations * c.gpu_hours_per_iteration;
  c.money = c.gpu_hours * price;
  return c;
}

}  // namespace strata::search
