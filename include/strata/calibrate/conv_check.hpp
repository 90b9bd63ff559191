#pragma once
/// @file calibrate/conv_check.hpp
/// @brief Measured convolutions against a profile: each one lowered as a CNN layer is
/// (`lower::cnn_layer`: implicit GEMMs, or Winograd transforms where cuDNN runs them) and priced
/// with the profile's kernels. Nothing is fitted to them; they check the GEMM fit on the shapes
/// a CNN runs, and their cuDNN algorithms say whether the device runs Winograd.
///
/// Input: the columns of test/data/deepbench/*_conv.csv (`tools/deepbench_csv.py`): dtype, N, C,
/// H, W, K, R (filter height), S (width), pad_h, pad_w, stride_h, stride_w, fwd_ms, bwd_data_ms
/// (may be empty), bwd_filter_ms and, optionally, fwd_algorithm.
/// @code
/// std::ifstream c("test/data/deepbench/v100_conv.csv");
/// std::vector<strata::calibrate::class_report> report;
/// strata::calibrate::check_convs(profile, report, c);  // sets profile.winograd from the table
/// @endcode

#include <array>
#include <istream>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "strata/calibrate/kernel_fit.hpp"
#include "strata/calibrate/measurement.hpp"
#include "strata/calibrate/readers.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/lower/cnn.hpp"
#include "strata/model/layer.hpp"

namespace strata::calibrate {

/// One measured convolution: its shape and its three passes' times (s; a pass not measured is 0).
struct conv_point {
  std::string dtype;  ///< float32-ieee (CUDA cores), float32 (TF32 allowed), float16 or bfloat16
  int n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  std::array<double, 3> time{};  ///< forward, data gradient, filter gradient
  std::string algorithm;         ///< cuDNN's forward algorithm, when the table names it
};

namespace detail {
inline int conv_dimension(const std::map<std::string, std::string>& row, const char* col, int line,
                          double lo) {
  return static_cast<int>(bounded(row, col, line, lo, max_dimension, true));
}
}  // namespace detail

/// A convolution table's rows; errors name the row and column.
inline std::vector<conv_point> read_convs(std::istream& csv) {
  const csv_table t = read_csv(csv);
  detail::require_columns(t, {"dtype", "N", "C", "H", "W", "K", "R", "S", "pad_h", "pad_w",
                              "stride_h", "stride_w", "fwd_ms", "bwd_data_ms", "bwd_filter_ms"});
  std::vector<conv_point> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    const int line = static_cast<int>(i) + 2;
    conv_point q;
    q.dtype = detail::text(row, "dtype", line);
    if (q.dtype != "float32-ieee" && q.dtype != "float32" && q.dtype != "float16" &&
        q.dtype != "bfloat16")
      throw plan_error("CSV row " + std::to_string(line) +
                       " column dtype: must be float32-ieee, float32, float16 or bfloat16 (got '" +
                       q.dtype.substr(0, 40) + "')");
    using detail::conv_dimension;
    q.n = conv_dimension(row, "N", line, 1);
    q.c = conv_dimension(row, "C", line, 1);
    q.h = conv_dimension(row, "H", line, 1);
    q.w = conv_dimension(row, "W", line, 1);
    q.k = conv_dimension(row, "K", line, 1);
    q.r = conv_dimension(row, "R", line, 1);
    q.s = conv_dimension(row, "S", line, 1);
    q.pad_h = conv_dimension(row, "pad_h", line, 0);
    q.pad_w = conv_dimension(row, "pad_w", line, 0);
    q.stride_h = conv_dimension(row, "stride_h", line, 1);
    q.stride_w = conv_dimension(row, "stride_w", line, 1);
    if (q.h + 2 * q.pad_h < q.r || q.w + 2 * q.pad_w < q.s)
      throw plan_error("CSV row " + std::to_string(line) +
                       ": the filter is larger than the padded image");
    const char* cols[3] = {"fwd_ms", "bwd_data_ms", "bwd_filter_ms"};
    for (int p = 0; p < 3; ++p)
      if (p != 1 || !detail::text(row, cols[p], line).empty())  // a first layer has no data pass
        q.time[p] = detail::bounded(row, cols[p], line, 0, detail::max_ms) * 1e-3;
    if (const auto it = row.find("fwd_algorithm"); it != row.end()) q.algorithm = it->second;
    out.push_back(std::move(q));
  }
  return out;
}

/// The convolution as the CNN lowering describes it (R high, S wide).
[[nodiscard]] inline layer conv_layer(const conv_point& q) {
  const shape in{q.c, 1, q.h, q.w};
  const shape out{q.k, 1, (q.h + 2 * q.pad_h - q.r) / q.stride_h + 1,
                  (q.w + 2 * q.pad_w - q.s) / q.stride_w + 1};
  const double window = 1.0 * q.r * q.s;
  const double forward = 2.0 * q.c * window * out.elements();
  return {layer_kind::conv,   in,      out,         q.r,
          q.c * window * q.k, forward, 2 * forward, q.s == q.r ? 0 : q.s};
}

/// The three passes' times of `q` on profile `p`: its GEMM kernels as `lower::cnn_layer` emits
/// them (16-bit inputs as autocast runs them), priced by `lower::gpu_time`.
[[nodiscard]] inline std::array<double, 3> conv_times(const device_profile& p,
                                                      const conv_point& q) {
  const bool half = q.dtype == "float16" || q.dtype == "bfloat16";
  const gemm_model& g = half ? p.bf16 : q.dtype == "float32" ? p.fp32 : p.fp32_ieee;
  const std::array<layer, 2> layers{layer{}, conv_layer(q)};  // second: it has a data pass
  std::array<double, 3> t{};
  struct pricer {
    const device_profile& p;
    const gemm_model& g;
    std::vector<double> times;
    void kernel(const lower::kernel_op& op) {
      if (op.kind == lower::kernel_kind::gemm) times.push_back(lower::gpu_time(op, p, g, false));
    }
  };
  pricer fwd{p, g, {}}, bwd{p, g, {}};
  lower::cnn_layer(std::span<const layer>(layers), 1, q.n, half, lower::phase::forward, fwd);
  lower::cnn_layer(std::span<const layer>(layers), 1, q.n, half, lower::phase::backward, bwd);
  t[0] = fwd.times.at(0);
  t[1] = bwd.times.at(0);
  t[2] = bwd.times.at(1);
  return t;
}

/// Checks `p` against measured convolutions: first `p.winograd` is set when cuDNN chose a
/// Winograd algorithm for any fp32 row (the table's `fwd_algorithm`), then each data type's
/// forward, data and filter passes are predicted and their errors appended to `report` (as
/// `all`; nothing is fitted, so there is no held-out figure).
inline void check_convs(device_profile& p, std::vector<class_report>& report, std::istream& csv) {
  const std::vector<conv_point> rows = read_convs(csv);
  if (rows.empty()) throw plan_error("no rows to check");
  for (const auto& q : rows)
    if (q.dtype.rfind("float32", 0) == 0 && q.algorithm.find("WINOGRAD") != std::string::npos)
      p.winograd = true;
  const char* passes[3] = {"forward", "data gradient", "filter gradient"};
  for (const char* type : {"bfloat16", "float16", "float32", "float32-ieee"}) {
    std::array<std::vector<double>, 3> errors;
    for (const auto& q : rows) {
      if (q.dtype != type) continue;
      const auto t = conv_times(p, q);
      for (int i = 0; i < 3; ++i)
        if (q.time[i] > 0) errors[i].push_back((t[i] - q.time[i]) / q.time[i]);
    }
    for (int i = 0; i < 3; ++i)
      if (!errors[i].empty())
        report.push_back({std::string("conv ") + passes[i] + " " + type, summarize(errors[i]), {}});
  }
}

}  // namespace strata::calibrate
