#pragma once
/// @file calibrate/lin_fit.hpp
/// @brief Fitting Lin et al.'s eight-parameter collective model (eqs. 5-7) to measurements.
///
/// For every choice of the region boundaries m1 < m2 among the measured sizes: t_s is the mean
/// time of the points up to m1; BW_max is the least-squares bus bandwidth of the points from m2
/// on (given t_s); the sigmoid is fitted by Levenberg-Marquardt to log10(busbw / GB/s) against
/// log2(S) on the points between them, as Lin et al.'s code does. The boundaries with the
/// smallest squared log-error of the predicted times over all points win.
/// @code
/// auto model = strata::calibrate::fit_lin_model(points, comm::collective::all_reduce, 8);
/// auto errors = strata::calibrate::evaluate_fit(held_out, [&](bytes s) { return model.time(s); });
/// @endcode

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "strata/calibrate/levenberg_marquardt.hpp"
#include "strata/calibrate/measurement.hpp"
#include "strata/comm/lin_model.hpp"
#include "strata/error.hpp"

namespace strata::calibrate {

namespace detail {
inline comm::sigmoid fit_sigmoid(std::span<const measurement> pts) {
  const std::size_t n = pts.size();
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::log2(pts[i].size.count());
    y[i] = std::log10(pts[i].busbw.count() / 1e9);
  }
  const auto [ymin, ymax] = std::minmax_element(y.begin(), y.end());
  // Lin et al.'s initial guess: L = span of y, x0 = median x, k = 1, b = min y.
  Eigen::VectorXd th(4);
  th << (*ymax - *ymin) + 1e-3, x[n / 2], 1.0, *ymin;
  const auto r = levenberg_marquardt(th, n, [&](const Eigen::VectorXd& t, Eigen::VectorXd& out) {
    const comm::sigmoid s{t(0), t(1), t(2), t(3)};
    for (std::size_t i = 0; i < n; ++i) out(static_cast<Eigen::Index>(i)) = s(x[i]) - y[i];
  });
  return {r.theta(0), r.theta(1), r.theta(2), r.theta(3)};
}
}  // namespace detail

/// Fits Lin et al.'s model to at least 6 measurements of `op` on `ranks` devices.
inline comm::lin_model fit_lin_model(std::span<const measurement> data, comm::collective op,
                                     int ranks) {
  if (data.size() < 6) throw plan_error("fitting Lin et al.'s model needs at least 6 points");
  std::vector<measurement> pts(data.begin(), data.end());
  std::sort(pts.begin(), pts.end(),
            [](const measurement& a, const measurement& b) { return a.size < b.size; });
  for (const measurement& m : pts)
    if (!(m.size > bytes{0}) || !(m.time > seconds{0}) || !(m.busbw > byte_rate{0}))
      throw plan_error("every measurement needs a positive size, time and bus bandwidth");
  const std::size_t n = pts.size();
  const double factor = comm::busbw_factor(op, ranks);
  comm::lin_model best{};
  double best_err = std::numeric_limits<double>::infinity();
  for (std::size_t i1 = 0; i1 + 3 < n; ++i1) {
    double ts = 0;
    for (std::size_t i = 0; i <= i1; ++i) ts += pts[i].time.count();
    ts /= static_cast<double>(i1 + 1);
    for (std::size_t i2 = i1 + 3; i2 < n; ++i2) {
      // BW_max: least squares of t - ts = factor S / BW over i2 .. n-1
      double num = 0, den = 0;
      for (std::size_t i = i2; i < n; ++i) {
        const double a = factor * pts[i].size.count();
        num += a * a;
        den += a * (pts[i].time.count() - ts);
      }
      if (!(den > 0)) continue;
      comm::lin_model m{op, ranks, ts, pts[i1].size.count(), pts[i2].size.count(), {}, num / den};
      m.bw = detail::fit_sigmoid(std::span(pts).subspan(i1, i2 - i1 + 1));
      double err = 0;
      for (const measurement& p : pts) {
        const double e = std::log(m.time(p.size).count() / p.time.count());
        err += std::isfinite(e) ? e * e : 1e300;
      }
      if (err < best_err) {
        best_err = err;
        best = m;
      }
    }
  }
  if (!std::isfinite(best_err)) throw plan_error("Lin et al.'s model could not be fitted");
  return best;
}

}  // namespace strata::calibrate
