#pragma once
/// @file calibrate/levenberg_marquardt.hpp
/// @brief A small dense Levenberg-Marquardt least-squares solver on Eigen (run time only).
///
/// Minimizes sum_i r_i(theta)^2 with a central-difference Jacobian; the damping follows
/// Marquardt (1963): scaled by diag(J^T J), divided by 3 on success, multiplied by 2 on failure.
/// @code
/// auto fit = strata::calibrate::levenberg_marquardt(
///     Eigen::VectorXd::Constant(2, 1.0), n_points,
///     [&](const Eigen::VectorXd& th, Eigen::VectorXd& r) { /* r_i = model_i(th) - y_i */ });
/// @endcode

#include <cmath>
#include <cstddef>

#include <Eigen/Dense>

namespace strata::calibrate {

struct lm_result {
  Eigen::VectorXd theta;
  double cost = 0;  ///< sum of squared residuals at theta
  int iterations = 0;
  bool converged = false;
};

template <class Residual>
lm_result levenberg_marquardt(Eigen::VectorXd theta, std::size_t residuals, Residual&& f,
                              int max_iterations = 200, double tolerance = 1e-12) {
  const Eigen::Index n = theta.size(), m = static_cast<Eigen::Index>(residuals);
  Eigen::VectorXd r(m), r_try(m), rp(m), rm(m);
  Eigen::MatrixXd J(m, n);
  auto cost_of = [&](const Eigen::VectorXd& th, Eigen::VectorXd& out) {
    f(th, out);
    const double c = out.squaredNorm();
    return std::isfinite(c) ? c : std::numeric_limits<double>::infinity();
  };
  lm_result res;
  double cost = cost_of(theta, r);
  double lambda = 1e-3;
  for (int it = 0; it < max_iterations; ++it) {
    res.iterations = it + 1;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double h = 1e-6 * (std::fabs(theta(j)) + 1e-3);
      Eigen::VectorXd tp = theta, tm = theta;
      tp(j) += h;
      tm(j) -= h;
      f(tp, rp);
      f(tm, rm);
      J.col(j) = (rp - rm) / (2 * h);
    }
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 30 && !improved; ++tries) {
      Eigen::MatrixXd D = A;
      for (Eigen::Index j = 0; j < n; ++j) D(j, j) += lambda * (A(j, j) > 1e-30 ? A(j, j) : 1e-30);
      const Eigen::VectorXd step = D.ldlt().solve(-g);
      if (!step.allFinite()) {
        lambda *= 4;
        continue;
      }
      const Eigen::VectorXd candidate = theta + step;
      const double c = cost_of(candidate, r_try);
      if (c < cost) {
        const double gain = cost - c;
        theta = candidate;
        r = r_try;
        cost = c;
        lambda = lambda / 3 > 1e-12 ? lambda / 3 : 1e-12;
        improved = true;
        if (gain <= tolerance * (1 + cost)) {
          res.converged = true;
          res.theta = theta;
          res.cost = cost;
          return res;
        }
      } else {
        lambda *= 2;
      }
    }
    if (!improved) {
      res.converged = true;  // no direction lowers the cost: a (local) minimum
      break;
    }
  }
  res.theta = theta;
  res.cost = cost;
  return res;
}

}  // namespace strata::calibrate
