#pragma once
/// @file calibrate/measurement.hpp
/// @brief One measured collective (size, time, bus bandwidth) and the error metrics of a fit:
/// MAPE and GMAE as Lin et al. report them (§V-A, Table I).

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/units.hpp"

namespace strata::calibrate {

/// One row of a collective benchmark.
struct measurement {
  bytes size;       ///< S, nccl-tests convention
  seconds time;     ///< measured time of one operation
  byte_rate busbw;  ///< bus bandwidth as reported (or derived from time)
};

/// Prediction errors over a set of points: |predicted - measured| / measured.
struct error_summary {
  std::size_t points = 0;
  double mape = 0;  ///< mean absolute percentage error (a fraction: 0.05 = 5 %)
  double gmae = 0;  ///< geometric mean of the absolute errors (Lin et al.)
  double max = 0;   ///< the largest absolute error
};

/// Errors of one op class: all points with the fit on all of them, and the odd rows with a fit
/// on the even ones.
struct class_report {
  std::string op;
  error_summary all;
  error_summary held_out;
};

/// Summarizes relative errors; exact predictions count as 1e-12 in the geometric mean.
[[nodiscard]] inline error_summary summarize(std::span<const double> relative_errors) {
  error_summary e;
  e.points = relative_errors.size();
  if (e.points == 0) return e;
  double log_sum = 0;
  for (double r : relative_errors) {
    const double a = std::fabs(r);
    e.mape += a;
    e.max = a > e.max ? a : e.max;
    log_sum += std::log(a > 1e-12 ? a : 1e-12);
  }
  e.mape /= static_cast<double>(e.points);
  e.gmae = std::exp(log_sum / static_cast<double>(e.points));
  return e;
}

/// Errors of `predict(size)` (returning seconds) against measured times.
template <class Predict>
[[nodiscard]] error_summary evaluate_fit(std::span<const measurement> data, Predict&& predict) {
  std::vector<double> rel;
  rel.reserve(data.size());
  for (const measurement& m : data) rel.push_back((predict(m.size) - m.time) / m.time);
  return summarize(rel);
}

/// Fills in the time from the bus bandwidth (or the reverse) for operation `op` on n ranks.
[[nodiscard]] inline measurement complete(measurement m, comm::collective op, int n) {
  if (m.time > seconds{0} && !(m.busbw > byte_rate{0}))
    m.busbw = comm::busbw(op, n, m.size, m.time);
  if (!(m.time > seconds{0}) && m.busbw > byte_rate{0})
    m.time = comm::time_at_busbw(op, n, m.size, m.busbw);
  if (!(m.time > seconds{0})) throw plan_error("a measurement needs a time or a bus bandwidth");
  return m;
}

}  // namespace strata::calibrate
