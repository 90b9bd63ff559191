#pragma once
/// @file model/dlrm.hpp
/// @brief DLRM (Naumov et al. 2019) as Lin et al. train it: dense features through a bottom
/// MLP, sparse features through embedding bags, a pairwise-dot (or concatenation) interaction,
/// a top MLP; and generated tables like Lin et al.'s heavy and normal tasks (§V-B1).
///
/// With the dot interaction the F = T + 1 vectors of dimension D (T pooled embeddings and the
/// bottom MLP's output) meet in F (F - 1) / 2 pairwise dot products, which the top MLP reads
/// after the bottom output: its input is D + F (F - 1) / 2. The bottom MLP must end at D.
/// @code
/// strata::dlrm m{.dense_features = 13, .bottom = {512, 256, 64}, .top = {512, 256, 1},
///                .tables = strata::generate_tables(52, strata::table_mix::heavy, 64, 1)};
/// m.validate();
/// @endcode

#include <cstdint>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/model/embedding_bag.hpp"

namespace strata {

/// One embedding table and what a batch does to it: reuse factors of the global batch (empty:
/// uniform access).
struct embedding_table {
  std::string name{};
  double rows = 1;     ///< E
  double dim = 64;     ///< D
  double pooling = 1;  ///< L, mean lookups per sample
  reuse_histogram reuse{};

  /// The bag this table runs for a batch of `batch` samples.
  [[nodiscard]] embedding_bag_shape shape(double batch, double element = 4) const {
    return {rows, dim, pooling, batch, reuse, element};
  }
  [[nodiscard]] double weight_bytes(double element = 4) const { return rows * dim * element; }
};

/// How the pooled embeddings meet the bottom MLP's output.
enum class interaction { dot, concat };

struct dlrm {
  int dense_features = 13;
  std::vector<int> bottom{512, 256, 64};  ///< widths of the bottom MLP's layers
  std::vector<int> top{512, 256, 1};      ///< widths of the top MLP's layers
  std::vector<embedding_table> tables{};
  strata::interaction op = interaction::dot;

  /// Checks the shapes; every message names the table or layer at fault.
  void validate() const {
    if (dense_features < 1) throw plan_error("DLRM: dense_features must be at least 1");
    if (bottom.empty() || top.empty()) throw plan_error("DLRM: both MLPs need a layer");
    for (int w : bottom)
      if (w < 1) throw plan_error("DLRM: bottom MLP widths must be at least 1");
    for (int w : top)
      if (w < 1) throw plan_error("DLRM: top MLP widths must be at least 1");
    if (tables.empty()) throw plan_error("DLRM: no embedding tables");
    for (const auto& t : tables) {
      if (!(t.rows >= 1 && t.dim >= 1 && t.pooling >= 0))
        throw plan_error("DLRM: table '" + t.name + "' needs rows >= 1, dim >= 1, pooling >= 0");
      if (op == interaction::dot && t.dim != bottom.back())
        throw plan_error("DLRM: table '" + t.name + "' has dimension " +
                         std::to_string(static_cast<long long>(t.dim)) +
                         " but the bottom MLP ends at " + std::to_string(bottom.back()) +
                         ": the dot interaction needs them equal");
    }
  }
  /// F, the vectors that interact.
  [[nodiscard]] double features() const { return static_cast<double>(tables.size()) + 1; }
  /// The top MLP's input width.
  [[nodiscard]] double top_input() const {
    if (op == interaction::dot) return bottom.back() + features() * (features() - 1) / 2;
    double w = bottom.back();
    for (const auto& t : tables) w += t.dim;
    return w;
  }
  /// Weights and biases of an MLP from `in` inputs.
  [[nodiscard]] static double mlp_parameters(double in, const std::vector<int>& widths) {
    double p = 0;
    for (int w : widths) {
      p += in * w + w;
      in = w;
    }
    return p;
  }
  [[nodiscard]] double dense_parameters() const {
    return mlp_parameters(dense_features, bottom) + mlp_parameters(top_input(), top);
  }
  [[nodiscard]] double embedding_parameters() const {
    double p = 0;
    for (const auto& t : tables) p += t.rows * t.dim;
    return p;
  }
};

/// Lin et al. §V-B1's two kinds of generated task: every table heavy (mean pooling L >= 20), or
/// a mix where most tables are light.
enum class table_mix { heavy, normal };

namespace detail {
/// splitmix64: a small, portable, deterministic generator (same tables on every platform).
struct splitmix64 {
  std::uint64_t state;
  constexpr std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Log-uniform in [lo, hi).
  double log_uniform(double lo, double hi) {
    return strata::detail::exp(strata::detail::log(lo) +
                               uniform() * (strata::detail::log(hi) - strata::detail::log(lo)));
  }
};
}  // namespace detail

/// Generates `count` tables resembling Meta's DLRM dataset as Lin et al. sample it (§III-B,
/// Fig. 3): rows log-uniform in [1e4, 1e7); dimension `dim`; heavy tables' mean pooling
/// log-uniform in [20, 200); in a `normal` mix 15 % of the tables are heavy, the others light
/// (half with L in [0.1, 1), half in [1, 20)); Zipf-like access with an exponent uniform in
/// [0.8, 1.2] over a global batch of `batch` samples (`zipf_reuse`). Deterministic in `seed`.
/// The rows, mix and exponents are strata's assumptions, not the dataset's statistics.
[[nodiscard]] inline std::vector<embedding_table> generate_tables(int count, table_mix mix,
                                                                  double dim, std::uint64_t seed,
                                                                  double batch = 4096) {
  if (count < 1) throw plan_error("generate_tables: count must be at least 1");
  detail::splitmix64 g{seed};
  std::vector<embedding_table> out;
  for (int i = 0; i < count; ++i) {
    embedding_table t;
    t.name = std::to_string(i);
    t.name.insert(t.name.begin(), 't');  // not "t" + ...: GCC 12's -Wrestrict false positive
    t.rows = static_cast<double>(static_cast<long long>(g.log_uniform(1e4, 1e7)));
    t.dim = dim;
    const bool heavy = mix == table_mix::heavy || g.uniform() < 0.15;
    if (heavy)
      t.pooling = g.log_uniform(20, 200);
    else
      t.pooling = g.uniform() < 0.5 ? 0.1 + 0.9 * g.uniform() : g.log_uniform(1, 20);
    const double a = 0.8 + 0.4 * g.uniform();
    t.reuse = zipf_reuse(t.rows, batch * t.pooling, a);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace strata
