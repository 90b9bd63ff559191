#pragma once
/// @file calibrate/step_fit.hpp
/// @brief Whole-step measurements (`tools/measure/h100_steps.py`, `test/data/h100_steps_*.csv`):
/// reading them, predicting each with the kernel-level step model, and fitting the framework's
/// dispatch costs (`dispatch_model`) that kernel microbenchmarks cannot see.
///
/// The columns: model (`gpt2`, `resnet50`, `vgg16`), layers, hidden, heads, sequence (GPT-2
/// only), batch, precision (`bf16`, `fp32`), checkpoint (0/1), step_ms, peak_bytes,
/// between_bytes, oom (1: the step did not fit; no times). Other columns are ignored.
/// @code
/// std::ifstream f("test/data/h100_steps_gpt2.csv");
/// const auto steps = strata::calibrate::read_steps(f);
/// const auto fit = strata::calibrate::fit_dispatch(steps, profile);  // fit.dispatch, fit.report
/// @endcode

#include <cmath>
#include <istream>
#include <span>
#include <string>
#include <vector>

#include "strata/analytic/step.hpp"
#include "strata/calibrate/kernel_fit.hpp"
#include "strata/model/zoo.hpp"

namespace strata::calibrate {

/// One measured single-GPU training step.
struct step_measurement {
  std::string model;             ///< gpt2, resnet50 or vgg16
  analytic::gpt2_config config;  ///< batch, precision, checkpoint (and the GPT-2 dimensions)
  bool oom = false;              ///< did not fit; the figures below are 0
  double time = 0;               ///< s, median step
  double peak = 0;               ///< B, max_memory_allocated during a step
  double between = 0;            ///< B, memory_allocated between steps
};

/// The most GPT-2 layers a measured step may have (each row is lowered kernel by kernel).
inline constexpr int max_step_layers = 1024;

/// Reads whole-step rows; the bounds per column: layers [1, 1024], hidden [1, 2^16], heads
/// [1, 2^10], sequence [1, 2^17], batch [1, 2^16], step_ms (0, 1e9], bytes (0, 1e15].
inline std::vector<step_measurement> read_steps(std::istream& in) {
  const csv_table t = read_csv(in);
  std::vector<step_measurement> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    const int line = static_cast<int>(i) + 2;
    const std::string where = "step CSV row " + std::to_string(line);
    auto text = [&](const char* col) {
      const auto it = row.find(col);
      if (it == row.end()) throw plan_error(where + ": no column '" + col + "'");
      return it->second;
    };
    // checked before the cast to int: a whole number in [1, hi]
    auto integer = [&](const char* col, double hi) {
      const double v = detail::number(row, col, line);
      if (v < 1 || v > hi || v != std::floor(v))
        throw plan_error(where + " column " + col + ": must be a whole number in [1, " +
                         std::to_string(static_cast<long long>(hi)) + "]");
      return static_cast<int>(v);
    };
    step_measurement m;
    m.model = text("model");
    if (m.model != "gpt2" && m.model != "resnet50" && m.model != "vgg16")
      throw plan_error(where + ": unknown model '" + m.model + "' (gpt2, resnet50, vgg16)");
    if (m.model == "gpt2") {
      m.config.layers = integer("layers", max_step_layers);
      m.config.hidden = integer("hidden", 1 << 16);
      m.config.heads = integer("heads", 1 << 10);
      m.config.sequence = integer("sequence", 1 << 17);
    }
    m.config.batch = integer("batch", 1 << 16);
    const std::string p = text("precision");
    if (p != "bf16" && p != "fp32")
      throw plan_error(where + ": precision must be bf16 or fp32 (got '" + p + "')");
    m.config.precision = p == "bf16" ? dtype::bf16 : dtype::fp32;
    auto flag = [&](const char* col) {
      const std::string v = text(col);
      if (v != "0" && v != "1")
        throw plan_error(where + " column " + col + ": must be 0 or 1 (got '" + v.substr(0, 40) +
                         "')");
      return v == "1";
    };
    m.config.checkpoint = flag("checkpoint");
    m.oom = flag("oom");
    if (!m.oom) {
      m.time = detail::bounded(row, "step_ms", line, 0, 1e9) * 1e-3;
      m.peak = detail::bounded(row, "peak_bytes", line, 0, 1e15);
      m.between = detail::bounded(row, "between_bytes", line, 0, 1e15);
    }
    out.push_back(m);
  }
  return out;
}

/// The step model's prediction for a measured configuration.
[[nodiscard]] inline analytic::step_estimate predict_step(const step_measurement& m,
                                                          const device_profile& p) {
  return analytic::named_step(m.model, m.config, p);
}

[[nodiscard]] inline analytic::step_memory predict_memory(const step_measurement& m) {
  return analytic::named_step_memory(m.model, m.config);
}

struct dispatch_fit {
  dispatch_model dispatch;
  class_report report;  ///< "step time": all steps, and the odd rows fitted on the even ones
};

namespace detail {
/// A lowered step whose host costs are linear in (per_kernel, per_checkpoint, per_tensor).
struct lowered_step {
  std::vector<double> gpu, kernel, checkpoint, tensor;
  double measured = 0;
  [[nodiscard]] double time(double a, double b, double c) const {
    return analytic::issue_and_run(
        gpu.size(),
        [&](std::size_t i) { return a * kernel[i] + b * checkpoint[i] + c * tensor[i]; },
        [&](std::size_t i) { return gpu[i]; });
  }
};

inline std::vector<lowered_step> lower_steps(std::span<const step_measurement> steps,
                                             device_profile p, double kernel_floor) {
  std::vector<lowered_step> out;
  for (const auto& m : steps) {
    if (m.oom) continue;
    lowered_step l;
    l.measured = m.time;
    const dispatch_model unit[3] = {
        {1, 0, 0, kernel_floor}, {0, 1, 0, kernel_floor}, {0, 0, 1, kernel_floor}};
    std::vector<double>* coefficient[3] = {&l.kernel, &l.checkpoint, &l.tensor};
    for (int u = 0; u < 3; ++u) {
      p.dispatch = unit[u];
      const auto e = predict_step(m, p);
      for (const auto& k : e.kernels) {
        coefficient[u]->push_back(k.host);
        if (u == 0) l.gpu.push_back(k.time);
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

inline double step_mape(const std::vector<lowered_step>& steps, double a, double b, double c) {
  double s = 0;
  for (const auto& l : steps) s += std::fabs(l.time(a, b, c) / l.measured - 1);
  return s / static_cast<double>(steps.size());
}

/// Minimizes the MAPE over the three host costs on a grid refined around its best point.
inline dispatch_model fit_host(const std::vector<lowered_step>& steps, double kernel_floor,
                               double* mape) {
  double best[3] = {50e-6, 1e-3, 10e-6}, step[3] = {25e-6, 1e-3, 10e-6};
  double best_err = step_mape(steps, best[0], best[1], best[2]);
  for (int round = 0; round < 8; ++round) {
    const double center[3] = {best[0], best[1], best[2]};
    for (int i = -2; i <= 2; ++i)
      for (int j = -2; j <= 2; ++j)
        for (int k = -2; k <= 2; ++k) {
          const double a = center[0] + i * step[0], b = center[1] + j * step[1],
                       c = center[2] + k * step[2];
          if (a < 0 || b < 0 || c < 0) continue;
          const double err = step_mape(steps, a, b, c);
          if (err < best_err) {
            best_err = err;
            best[0] = a;
            best[1] = b;
            best[2] = c;
          }
        }
    for (double& s : step) s /= 2;
  }
  if (mape != nullptr) *mape = best_err;
  return {best[0], best[1], best[2], kernel_floor};
}
}  // namespace detail

/// Fits `dispatch_model` to measured steps with the given profile's kernels: the queued-kernel
/// floor from {1, 2, 3, 4, 6, 8} us and, for each, the three host costs that minimize the mean
/// absolute percentage error of the step time (the OOM rows are skipped).
[[nodiscard]] inline dispatch_fit fit_dispatch(std::span<const step_measurement> steps,
                                               const device_profile& p) {
  auto fit = [&](std::span<const step_measurement> rows) {
    dispatch_model best;
    double best_err = -1;
    for (double floor : {1e-6, 2e-6, 3e-6, 4e-6, 6e-6, 8e-6}) {
      const auto lowered = detail::lower_steps(rows, p, floor);
      if (lowered.size() < 3)
        throw plan_error("the host costs need at least 3 measured steps that ran (got " +
                         std::to_string(lowered.size()) + ")");
      double err = 0;
      const dispatch_model d = detail::fit_host(lowered, floor, &err);
      if (best_err < 0 || err < best_err) {
        best_err = err;
        best = d;
      }
    }
    return best;
  };
  std::vector<step_measurement> measured;
  for (const auto& m : steps)
    if (!m.oom) measured.push_back(m);
  auto r = detail::report(
      "step time", measured, [&](const auto& rows) { return fit(rows); },
      [&](const dispatch_model& d, const step_measurement& m) {
        device_profile q = p;
        q.dispatch = d;
        return predict_step(m, q).time() / m.time - 1;
      });
  return {r.model, r.report};
}

}  // namespace strata::calibrate
