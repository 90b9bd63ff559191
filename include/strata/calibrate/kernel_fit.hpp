#pragma once
/// @file calibrate/kernel_fit.hpp
/// @brief Fitting a device profile (`hardware/kernels.hpp`) to microbenchmarks: GEMMs, memory-
/// bound kernels and flash attention, with Levenberg-Marquardt on log time (Eigen).
///
/// Input: the columns of test/data/h100_{gemm,membound,attention}.csv. Every fit reports its
/// errors on all points and, fitted again on the even-indexed rows only, on the odd-indexed rows
/// it did not see.
/// @code
/// std::ifstream g("gemm.csv"), m("membound.csv"), a("attention.csv");
/// auto fit = strata::calibrate::fit_profile(strata::presets::h100_sxm5_80gb, 132, g, m, a);
/// fit.profile;  // a strata::device_profile
/// fit.report;   // errors per op class
/// @endcode

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "strata/calibrate/levenberg_marquardt.hpp"
#include "strata/calibrate/measurement.hpp"
#include "strata/calibrate/readers.hpp"
#include "strata/hardware/kernels.hpp"

namespace strata::calibrate {

/// What the error messages call each input (the CLI passes its option names).
struct csv_labels {
  std::string gemm = "gemm CSV";
  std::string membound = "membound CSV";
  std::string attention = "attention CSV";
  std::string attention_fp32 = "attention fp32 CSV";
  std::string conv = "conv CSV";
};

struct profile_fit {
  device_profile profile;
  std::vector<class_report> report;
  /// the kernel classes no table measured, which keep `datasheet_profile`'s defaults
  std::vector<std::string> defaults;
};

namespace detail {

struct gemm_point {
  double m, n, k, t;
};

inline gemm_model fit_gemm(const std::vector<gemm_point>& pts, gemm_model base) {
  if (pts.size() < 4) throw plan_error("a GEMM fit needs at least 4 shapes");
  auto make = [&](const Eigen::VectorXd& x) {
    gemm_model g = base;
    g.efficiency = std::exp(x(0));
    g.half_area = std::exp(x(1));
    g.floor = std::exp(x(2));
    g.wave = std::exp(x(3));
    return g;
  };
  Eigen::VectorXd th(4);
  th << std::log(0.8), std::log(4096.0), std::log(10e-6), std::log(1e-6);
  const auto r =
      levenberg_marquardt(th, pts.size(), [&](const Eigen::VectorXd& x, Eigen::VectorXd& res) {
        const gemm_model g = make(x);
        for (std::size_t i = 0; i < pts.size(); ++i)
          res(static_cast<Eigen::Index>(i)) =
              std::log(g.time(pts[i].m, pts[i].n, pts[i].k) / pts[i].t);
      });
  return make(r.theta);
}

inline stream_model fit_stream(const std::vector<std::pair<double, double>>& pts) {
  if (pts.size() < 2) throw plan_error("a memory-bound fit needs at least 2 sizes");
  auto make = [](const Eigen::VectorXd& x) { return stream_model{std::exp(x(0)), std::exp(x(1))}; };
  Eigen::VectorXd th(2);
  th << std::log(1e12), std::log(10e-6);
  const auto r =
      levenberg_marquardt(th, pts.size(), [&](const Eigen::VectorXd& x, Eigen::VectorXd& res) {
        const stream_model s = make(x);
        for (std::size_t i = 0; i < pts.size(); ++i)
          res(static_cast<Eigen::Index>(i)) = std::log(s.time(pts[i].first) / pts[i].second);
      });
  return make(r.theta);
}

/// A fit on all points and its report.
template <class Model>
struct fitted {
  Model model;
  class_report report;
};

/// Fits on all points and reports their errors, then fits on the even rows and reports the odd
/// ones' errors (held out).
template <class Fit, class Predict, class Point>
auto report(const std::string& op, const std::vector<Point>& pts, Fit&& fit, Predict&& predict) {
  fitted<decltype(fit(pts))> out{fit(pts), {op, {}, {}}};
  std::vector<double> e;
  for (const auto& p : pts) e.push_back(predict(out.model, p));
  out.report.all = summarize(e);
  std::vector<Point> even, odd;
  for (std::size_t i = 0; i < pts.size(); ++i) (i % 2 == 0 ? even : odd).push_back(pts[i]);
  if (even.size() >= 2 && !odd.empty()) {
    try {
      const auto half = fit(even);
      std::vector<double> h;
      for (const auto& p : odd) h.push_back(predict(half, p));
      out.report.held_out = summarize(h);
    } catch (const plan_error&) {  // too few points for a separate fit: no held-out figure
    }
  }
  return out;
}

inline double number(const std::map<std::string, std::string>& row, const char* col, int line) {
  const auto it = row.find(col);
  if (it == row.end())
    throw plan_error("CSV row " + std::to_string(line) + ": no column '" + col + "'");
  return strata::calibrate::detail::number(it->second,
                                           "CSV row " + std::to_string(line) + " column " + col);
}

/// A number of column `col` in (lo, hi] (or [lo, hi] with `closed`); errors name row and column.
inline double bounded(const std::map<std::string, std::string>& row, const char* col, int line,
                      double lo, double hi, bool closed = false) {
  const double v = number(row, col, line);
  if (!(closed ? v >= lo : v > lo) || !(v <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "must lie in %s%g, %g]", closed ? "[" : "(", lo, hi);
    throw plan_error("CSV row " + std::to_string(line) + " column " + col + ": " + range +
                     " (got " + row.at(col).substr(0, 40) + ")");
  }
  return v;
}

/// The text of column `col`; a table without it is an error naming the column.
inline const std::string& text(const std::map<std::string, std::string>& row, const char* col,
                               int line) {
  const auto it = row.find(col);
  if (it == row.end())
    throw plan_error("CSV row " + std::to_string(line) + ": no column '" + col + "'");
  return it->second;
}

/// Checks that the header names every column in `cols`.
inline void require_columns(const csv_table& t, std::initializer_list<const char*> cols) {
  for (const char* c : cols) {
    bool found = false;
    for (const auto& h : t.header) found = found || h == c;
    if (!found) throw plan_error(std::string("CSV header: no column '") + c + "'");
  }
}

/// Runs `f`; a plan_error from it is rethrown with `label` in front (the input it came from).
template <class F>
auto labelled(const std::string& label, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const plan_error& e) {
    throw plan_error(label + ": " + e.what());
  }
}

/// Sizes and times the calibration readers accept: dimensions in [1, 1e7], times in
/// (0, 1e7] ms, bytes in (0, 1e15].
inline constexpr double max_dimension = 1e7, max_ms = 1e7, max_bytes = 1e15;

/// Every fitted parameter finite and positive, or a plan_error naming the fit.
inline void check_fit(const std::string& op, std::initializer_list<double> values) {
  for (double v : values)
    if (!std::isfinite(v) || !(v >= 0))
      throw plan_error(op + " fit: did not converge to finite parameters (check the timings)");
}

/// The GEMM fits, one per data type the table has (bfloat16 or float16, float32 with TF32
/// allowed, float32-ieee), into `p`'s GEMM models; their reports appended to `report`. Shapes
/// with M or N under `min_side` are left out: below the smallest tile cuBLAS runs skinny
/// kernels of another kind, which the tile model does not describe.
inline void fit_gemms(device_profile& p, std::vector<class_report>& report, std::istream& gemm_csv,
                      double min_side = 0) {
  const csv_table g = read_csv(gemm_csv);
  detail::require_columns(g, {"dtype", "M", "N", "K", "ms"});
  if (g.rows.empty()) throw plan_error("no rows to fit");
  for (std::size_t i = 0; i < g.rows.size(); ++i) {  // no row is left out unseen
    const std::string& t = detail::text(g.rows[i], "dtype", static_cast<int>(i) + 2);
    if (t != "bfloat16" && t != "float16" && t != "float32" && t != "float32-ieee")
      throw plan_error("CSV row " + std::to_string(i + 2) +
                       " column dtype: must be bfloat16, float16, float32 (TF32 allowed) or "
                       "float32-ieee (TF32 off) (got '" +
                       t.substr(0, 40) + "')");
  }
  bool half_fitted = false, ieee_fitted = false, tf32_fitted = false;
  for (const char* type : {"bfloat16", "float16", "float32", "float32-ieee"}) {
    std::vector<detail::gemm_point> pts;
    for (std::size_t i = 0; i < g.rows.size(); ++i) {
      const auto& row = g.rows[i];
      const int line = static_cast<int>(i) + 2;
      if (detail::text(row, "dtype", line) != type) continue;
      using detail::max_dimension;
      const detail::gemm_point pt{detail::bounded(row, "M", line, 1, max_dimension, true),
                                  detail::bounded(row, "N", line, 1, max_dimension, true),
                                  detail::bounded(row, "K", line, 1, max_dimension, true),
                                  detail::bounded(row, "ms", line, 0, detail::max_ms) * 1e-3};
      if (pt.m < min_side || pt.n < min_side) continue;  // a shape the tiles do not describe
      pts.push_back(pt);
    }
    if (pts.empty()) continue;
    const std::string name = type;
    // float16 and bfloat16 both run on the 16-bit tensor cores: one model, from one of the two
    const bool half = name == "bfloat16" || name == "float16";
    if (half && half_fitted)
      throw plan_error("give bfloat16 or float16 GEMMs, not both: they fit one 16-bit model");
    half_fitted = half_fitted || half;
    ieee_fitted = ieee_fitted || name == "float32-ieee";
    tf32_fitted = tf32_fitted || name == "float32";
    gemm_model& target = name == "float32" ? p.fp32 : name == "float32-ieee" ? p.fp32_ieee : p.bf16;
    const gemm_model base = target;
    auto r = detail::report(
        std::string("gemm ") + type, pts, [&](const auto& v) { return detail::fit_gemm(v, base); },
        [](const gemm_model& m, const detail::gemm_point& q) {
          return (m.time(q.m, q.n, q.k) - q.t) / q.t;
        });
    detail::check_fit(r.report.op,
                      {r.model.efficiency, r.model.half_area, r.model.floor, r.model.wave});
    target = r.model;
    // A launch floor far under every measured time is not determined by the rows (the fit
    // drives it to zero): the datasheet's stays
    double shortest = pts.front().t;
    for (const auto& q : pts) shortest = q.t < shortest ? q.t : shortest;
    if (target.floor < 0.01 * shortest) target.floor = base.floor;
    report.push_back(r.report);
  }
  // A GPU without TF32 (before Ampere) runs fp32 GEMMs on the CUDA cores whatever PyTorch
  // allows: the IEEE fit is its fp32 model too
  if (ieee_fitted && !tf32_fitted && !(p.dev.tf32.count() > 0)) p.fp32 = p.fp32_ieee;
}

/// The memory-bound kernels' fits, one per class (copy, host transfers, GELU, dropout, layer
/// norm, softmax), into `p`'s stream models.
inline void fit_membound(device_profile& p, std::vector<class_report>& report,
                         std::istream& membound_csv) {
  const csv_table mb = read_csv(membound_csv);
  detail::require_columns(mb, {"op", "bytes", "ms"});
  if (mb.rows.empty()) throw plan_error("no rows to fit");
  std::map<std::string, std::vector<std::pair<double, double>>> classes;
  for (std::size_t i = 0; i < mb.rows.size(); ++i) {
    const auto& row = mb.rows[i];
    const int line = static_cast<int>(i) + 2;
    const std::string op = detail::text(row, "op", line);
    std::string cls;
    if (op == "d2d_copy")
      cls = "copy";
    else if (op == "h2d_pinned")
      cls = "host_to_device";
    else if (op == "d2h_pinned")
      cls = "device_to_host";
    else if (op.rfind("gelu", 0) == 0)
      cls = "gelu";
    else if (op.rfind("dropout", 0) == 0)
      cls = "dropout";
    else if (op.rfind("layernorm", 0) == 0)
      cls = "layer_norm";
    else if (op.rfind("softmax", 0) == 0)
      cls = "softmax";
    else
      throw plan_error("CSV row " + std::to_string(line) + " column op: unknown op '" +
                       op.substr(0, 40) + "'");
    // a copy's `bytes` is the buffer it copies; every other row counts bytes read + written, as
    // the kernels' time models do: a copy moves its buffer twice
    const double moved =
        detail::bounded(row, "bytes", line, 0, detail::max_bytes) * (cls == "copy" ? 2 : 1);
    classes[cls].push_back({moved, detail::bounded(row, "ms", line, 0, detail::max_ms) * 1e-3});
  }
  for (auto& [cls, pts] : classes) {
    stream_model& target = cls == "copy"             ? p.copy
                           : cls == "host_to_device" ? p.host_to_device
                           : cls == "device_to_host" ? p.device_to_host
                           : cls == "gelu"           ? p.gelu
                           : cls == "dropout"        ? p.dropout
                           : cls == "layer_norm"     ? p.layer_norm
                                                     : p.softmax;
    auto r = detail::report(
        cls, pts, [](const auto& v) { return detail::fit_stream(v); },
        [](const stream_model& m, const std::pair<double, double>& q) {
          return (m.time(q.first) - q.second) / q.second;
        });
    detail::check_fit(cls, {r.model.bandwidth, r.model.floor});
    target = r.model;
    report.push_back(r.report);
  }
}

/// One measured attention shape: batch, heads, sequence, head size, forward and training s.
struct att_point {
  double b, h, s, d, fwd, train;
};

/// An attention table's rows.
inline std::vector<att_point> read_attention(std::istream& csv) {
  const csv_table at = read_csv(csv);
  detail::require_columns(at, {"b", "heads", "s", "d", "fwd_ms", "fwdbwd_ms"});
  std::vector<att_point> ap;
  using detail::max_dimension;
  for (std::size_t i = 0; i < at.rows.size(); ++i) {
    const auto& row = at.rows[i];
    const int line = static_cast<int>(i) + 2;
    ap.push_back({detail::bounded(row, "b", line, 1, max_dimension, true),
                  detail::bounded(row, "heads", line, 1, max_dimension, true),
                  detail::bounded(row, "s", line, 1, max_dimension, true),
                  detail::bounded(row, "d", line, 1, max_dimension, true),
                  detail::bounded(row, "fwd_ms", line, 0, detail::max_ms) * 1e-3,
                  detail::bounded(row, "fwdbwd_ms", line, 0, detail::max_ms) * 1e-3});
  }
  return ap;
}

/// Achieved forward and training rates, ramp and floor fitted to attention timings (log
/// residuals, Levenberg-Marquardt).
inline attention_model fit_attention(const std::vector<att_point>& v) {
  if (v.size() < 2) throw plan_error("an attention fit needs at least 2 shapes");
  auto make = [](const Eigen::VectorXd& x) {
    return attention_model{std::exp(x(0)), std::exp(x(1)), std::exp(x(2)), std::exp(x(3))};
  };
  Eigen::VectorXd th(4);
  th << std::log(600e12), std::log(500e12), std::log(1e9), std::log(10e-6);
  const auto r =
      levenberg_marquardt(th, 2 * v.size(), [&](const Eigen::VectorXd& x, Eigen::VectorXd& res) {
        const attention_model a = make(x);
        for (std::size_t i = 0; i < v.size(); ++i) {
          res(static_cast<Eigen::Index>(2 * i)) =
              std::log(a.forward(v[i].b, v[i].h, v[i].s, v[i].d) / v[i].fwd);
          res(static_cast<Eigen::Index>(2 * i + 1)) =
              std::log(a.forward_backward(v[i].b, v[i].h, v[i].s, v[i].d) / v[i].train);
        }
      });
  return make(r.theta);
}
}  // namespace detail

/// Fits `target`, an attention class (`name`: "attention" or "attention fp32"), to a table of
/// attention timings; its report appended to `report`.
inline void fit_attention_class(attention_model& target, std::vector<class_report>& report,
                                std::istream& csv, const char* name) {
  const auto ap = detail::read_attention(csv);
  if (ap.empty()) throw plan_error("no rows to fit");
  auto r = detail::report(name, ap, detail::fit_attention,
                          [](const attention_model& a, const detail::att_point& q) {
                            return (a.forward_backward(q.b, q.h, q.s, q.d) - q.train) / q.train;
                          });
  detail::check_fit(name,
                    {r.model.forward_rate, r.model.training_rate, r.model.ramp, r.model.floor});
  target = r.model;
  report.push_back(r.report);
}

/// Fits a profile for `dev` (with `sms` SMs) to the three microbenchmark tables (the command's
/// whole set of inputs, optional ones included: `calibrate/calibration.hpp`).
inline profile_fit fit_profile(const device& dev, int sms, std::istream& gemm_csv,
                               std::istream& membound_csv, std::istream& attention_csv,
                               std::istream* attention_fp32_csv = nullptr,
                               const csv_labels& labels = {}) {
  profile_fit out{datasheet_profile(dev, sms), {}, {}};
  device_profile& p = out.profile;
  detail::labelled(labels.gemm, [&] { detail::fit_gemms(p, out.report, gemm_csv); });
  detail::labelled(labels.membound, [&] { detail::fit_membound(p, out.report, membound_csv); });
  // Attention: achieved rates and the floor; bf16 (flash) and, when measured, fp32 (the
  // memory-efficient kernel, no tensor cores)
  detail::labelled(labels.attention, [&] {
    fit_attention_class(p.attention, out.report, attention_csv, "attention");
  });
  if (attention_fp32_csv != nullptr)
    detail::labelled(labels.attention_fp32, [&] {
      fit_attention_class(p.attention_fp32, out.report, *attention_fp32_csv, "attention fp32");
    });
  return out;
}

}  // namespace strata::calibrate
