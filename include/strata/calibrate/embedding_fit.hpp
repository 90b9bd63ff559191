#pragma once
/// @file calibrate/embedding_fit.hpp
/// @brief EmbeddingBag measurements (CSV) and the fit of `embedding_bag_model` to them with
/// Levenberg-Marquardt on log time (Eigen), plus the errors per access distribution.
///
/// CSV columns (test/data/h100_embedding_bag.csv): rows_E, dim_D, pooling_L, batch, dist,
/// reuse_hist17 (17 counts separated by ';'), fwd_ms and, optionally, unique_rows, fwdbwd_ms,
/// fwdbwd_sgd_ms. The timed step is PyTorch's `nn.EmbeddingBag(mode="sum")`: `fwd_ms` the
/// forward, `fwdbwd_ms` forward + backward repeated without `zero_grad` (the dense gradient
/// accumulates), `fwdbwd_sgd_ms` forward + backward + `SGD.step` after
/// `zero_grad(set_to_none=True)` (a fresh dense gradient and the update). Every malformed field
/// is a `plan_error` naming the source, the row (the file's line number) and the column.
/// @code
/// std::ifstream f("h100_embedding_bag.csv");
/// const auto data = strata::calibrate::read_embedding_bag_csv(f, "h100_embedding_bag.csv");
/// const auto model = strata::calibrate::fit_embedding_bag(data);
/// const auto errors = strata::calibrate::embedding_errors(model, data);
/// @endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "strata/calibrate/levenberg_marquardt.hpp"
#include "strata/calibrate/measurement.hpp"
#include "strata/calibrate/readers.hpp"
#include "strata/model/embedding_bag.hpp"

namespace strata::calibrate {

/// One measured EmbeddingBag case; times in seconds, 0 where not measured.
struct embedding_bag_measurement {
  embedding_bag_shape shape;
  std::string distribution{};  ///< e.g. "uniform", "zipf1.05"
  double forward = 0;
  double forward_backward = 0;      ///< dense gradient accumulated (no zero_grad)
  double forward_backward_sgd = 0;  ///< fresh dense gradient + SGD step
};

/// Reads EmbeddingBag measurements; `source` names the input in error messages.
inline std::vector<embedding_bag_measurement> read_embedding_bag_csv(
    std::istream& in, const std::string& source = "embedding bag CSV") {
  csv_table t;
  try {
    t = read_csv(in);
  } catch (const plan_error& e) {
    throw plan_error(source + ": " + e.what());
  }
  auto has = [&](const char* c) {
    for (const auto& h : t.header)
      if (h == c) return true;
    return false;
  };
  for (const char* c : {"rows_E", "dim_D", "pooling_L", "batch", "dist", "reuse_hist17", "fwd_ms"})
    if (!has(c)) throw plan_error(source + ": no column '" + std::string(c) + "'");
  std::vector<embedding_bag_measurement> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    const std::string where = source + " row " + std::to_string(i + 2);
    auto num = [&](const char* col, double lo) {
      const double v = detail::number(detail::trim(row.at(col)), where + " column " + col);
      if (!(v >= lo))
        throw plan_error(where + " column " + col + ": must be at least " + std::to_string(lo));
      return v;
    };
    embedding_bag_measurement m;
    m.shape.rows = num("rows_E", 1);
    m.shape.dim = num("dim_D", 1);
    m.shape.pooling = num("pooling_L", 0);
    m.shape.batch = num("batch", 1);
    m.distribution = detail::trim(row.at("dist"));
    // the 17 reuse bins
    const std::string hist = row.at("reuse_hist17");
    std::size_t start = 0;
    int bin = 0;
    while (true) {
      const std::size_t end = hist.find(';', start);
      const std::string tok = detail::trim(hist.substr(start, end - start));
      if (bin >= reuse_bins) throw plan_error(where + " column reuse_hist17: more than 17 bins");
      const double v =
          detail::number(tok, where + " column reuse_hist17 bin " + std::to_string(bin));
      if (v < 0)
        throw plan_error(where + " column reuse_hist17 bin " + std::to_string(bin) +
                         ": a count must not be negative");
      m.shape.reuse.rows[static_cast<std::size_t>(bin++)] = v;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    if (bin != reuse_bins)
      throw plan_error(where + " column reuse_hist17: " + std::to_string(bin) +
                       " bins, expected 17");
    if (has("unique_rows") && !row.at("unique_rows").empty()) {
      const double u = num("unique_rows", 0);
      if (std::fabs(u - m.shape.reuse.unique()) > 0.5)
        throw plan_error(where + " column unique_rows: " + row.at("unique_rows") +
                         " differs from the histogram's total " +
                         std::to_string(static_cast<long long>(m.shape.reuse.unique())));
    }
    m.forward = num("fwd_ms", 0) * 1e-3;
    if (has("fwdbwd_ms") && !row.at("fwdbwd_ms").empty())
      m.forward_backward = num("fwdbwd_ms", 0) * 1e-3;
    if (has("fwdbwd_sgd_ms") && !row.at("fwdbwd_sgd_ms").empty())
      m.forward_backward_sgd = num("fwdbwd_sgd_ms", 0) * 1e-3;
    out.push_back(m);
  }
  if (out.empty()) throw plan_error(source + ": no measurements");
  return out;
}

/// The three measured columns as the model predicts them.
[[nodiscard]] constexpr double predict_forward(const embedding_bag_model& m,
                                               const embedding_bag_shape& s) {
  return m.forward(s);
}
[[nodiscard]] constexpr double predict_forward_backward(const embedding_bag_model& m,
                                                        const embedding_bag_shape& s) {
  return m.forward(s) + m.backward(s, embedding_gradient::dense_accumulate);
}
[[nodiscard]] constexpr double predict_forward_backward_sgd(const embedding_bag_model& m,
                                                            const embedding_bag_shape& s) {
  return m.forward(s) + m.backward(s, embedding_gradient::dense) +
         m.update(s, embedding_gradient::dense);
}

namespace detail {
/// Cauchy-robust residual of a log ratio: sqrt(c^2 log(1 + (r / c)^2)) with r's sign, so a few
/// measurements far off every smooth curve do not drag the fit away from the rest.
inline double robust(double r, double c) {
  if (c <= 0) return r;
  const double v = std::sqrt(c * c * std::log1p((r / c) * (r / c)));
  return r < 0 ? -v : v;
}
}  // namespace detail

/// Fit options: `robust` is the Cauchy scale of log residuals (0: plain least squares).
struct embedding_fit_options {
  double robust = 0.05;
  bool fit_bandwidths = false;  ///< fit the forward's gather and L2 bandwidths too
};

/// Fits the forward floor (and, with `fit_bandwidths`, the gather and L2 bandwidths) on `fwd_ms`,
/// then the backward and update parameters (floors, per-lookup cost, contention, dense bandwidth)
/// on `fwdbwd_ms` and `fwdbwd_sgd_ms` with the forward fixed. `base` supplies the start and the
/// fixed values (L2 size, index bytes).
inline embedding_bag_model fit_embedding_bag(const std::vector<embedding_bag_measurement>& data,
                                             embedding_bag_model base = {},
                                             embedding_fit_options opt = {}) {
  if (data.size() < 4) throw plan_error("an embedding-bag fit needs at least 4 measurements");
  for (const auto& d : data)
    if (!(d.forward > 0)) throw plan_error("an embedding-bag fit needs positive forward times");
  using Eigen::VectorXd;
  // forward: the host floor, and the bandwidths only when asked (they act only on calls whose
  // kernel outlasts the floor; on the H100 data every call is host-bound, 29-123 us against
  // kernels of at most 19 us, and they stay where they start)
  const Eigen::Index nf = opt.fit_bandwidths ? 3 : 1;
  auto make_fwd = [&](const VectorXd& x) {
    embedding_bag_model m = base;
    m.floor_forward = std::exp(x(0));
    if (nf == 3) {
      m.gather_bandwidth = std::exp(x(1));
      m.l2_bandwidth = std::exp(x(2));
    }
    return m;
  };
  // start the floor at the median of (measured - work): a robust loss has local minima, and
  // this one is the bulk's
  std::vector<double> rest;
  for (const auto& d : data) {
    embedding_bag_model z = base;
    z.floor_forward = 0;
    const double r = d.forward - z.forward(d.shape);
    rest.push_back(r > 1e-7 ? r : 1e-7);
  }
  std::nth_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(rest.size() / 2),
                   rest.end());
  VectorXd f0(nf);
  f0(0) = std::log(rest[rest.size() / 2]);
  if (nf == 3) f0.tail(2) << std::log(base.gather_bandwidth), std::log(base.l2_bandwidth);
  const auto rf = levenberg_marquardt(f0, data.size(), [&](const VectorXd& x, VectorXd& r) {
    const embedding_bag_model m = make_fwd(x);
    for (std::size_t i = 0; i < data.size(); ++i)
      r(static_cast<Eigen::Index>(i)) =
          detail::robust(std::log(m.forward(data[i].shape) / data[i].forward), opt.robust);
  });
  embedding_bag_model fwd = make_fwd(rf.theta);
  // backward and update
  std::vector<std::size_t> fb, sgd;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i].forward_backward > 0) fb.push_back(i);
    if (data[i].forward_backward_sgd > 0) sgd.push_back(i);
  }
  if (fb.size() + sgd.size() < 5) return fwd;  // too little to fit the backward: keep `base`'s
  auto make_bwd = [&](const VectorXd& x) {
    embedding_bag_model m = fwd;
    m.floor_backward = std::exp(x(0));
    m.per_lookup = std::exp(x(1));
    m.contention = std::exp(x(2));
    m.dense_bandwidth = std::exp(x(3));
    m.floor_update = std::exp(x(4));
    return m;
  };
  VectorXd b0(5);
  b0 << std::log(base.floor_backward), std::log(base.per_lookup),
      std::log(base.contention > 0 ? base.contention : 1e-9), std::log(base.dense_bandwidth),
      std::log(base.floor_update);
  const auto rb =
      levenberg_marquardt(b0, fb.size() + sgd.size(), [&](const VectorXd& x, VectorXd& r) {
        const embedding_bag_model m = make_bwd(x);
        Eigen::Index k = 0;
        for (std::size_t i : fb)
          r(k++) = detail::robust(
              std::log(predict_forward_backward(m, data[i].shape) / data[i].forward_backward),
              opt.robust);
        for (std::size_t i : sgd)
          r(k++) = detail::robust(std::log(predict_forward_backward_sgd(m, data[i].shape) /
                                           data[i].forward_backward_sgd),
                                  opt.robust);
      });
  return make_bwd(rb.theta);
}

/// Errors of a model on measurements, overall and per access distribution.
struct embedding_errors_report {
  error_summary forward, forward_backward, forward_backward_sgd;
  struct split {
    error_summary forward, forward_backward, forward_backward_sgd;
  };
  std::map<std::string, split> by_distribution;
};

/// Errors of any predictor of the three columns (callables taking an `embedding_bag_shape`,
/// returning seconds) on measurements; a column is scored on the rows that measured it.
template <class Forward, class ForwardBackward, class ForwardBackwardSgd>
embedding_errors_report embedding_errors_of(const std::vector<embedding_bag_measurement>& d,
                                            Forward&& f, ForwardBackward&& fb,
                                            ForwardBackwardSgd&& fs) {
  struct acc {
    std::vector<double> f, fb, fs;
  };
  acc all;
  std::map<std::string, acc> by;
  for (const auto& x : d) {
    auto add = [&](acc& a) {
      a.f.push_back((f(x.shape) - x.forward) / x.forward);
      if (x.forward_backward > 0)
        a.fb.push_back((fb(x.shape) - x.forward_backward) / x.forward_backward);
      if (x.forward_backward_sgd > 0)
        a.fs.push_back((fs(x.shape) - x.forward_backward_sgd) / x.forward_backward_sgd);
    };
    add(all);
    add(by[x.distribution]);
  }
  embedding_errors_report r;
  r.forward = summarize(all.f);
  r.forward_backward = summarize(all.fb);
  r.forward_backward_sgd = summarize(all.fs);
  for (const auto& [k, a] : by)
    r.by_distribution[k] = {summarize(a.f), summarize(a.fb), summarize(a.fs)};
  return r;
}

inline embedding_errors_report embedding_errors(const embedding_bag_model& m,
                                                const std::vector<embedding_bag_measurement>& d) {
  return embedding_errors_of(
      d, [&](const embedding_bag_shape& s) { return predict_forward(m, s); },
      [&](const embedding_bag_shape& s) { return predict_forward_backward(m, s); },
      [&](const embedding_bag_shape& s) { return predict_forward_backward_sgd(m, s); });
}

}  // namespace strata::calibrate
