#pragma once
/// @file calibrate/calibration.hpp
/// @brief `strata calibrate` as one library call: a device profile fitted to whatever
/// microbenchmarks a GPU has. The GEMM table is required; memory-bound kernels and attention are
/// fitted when measured and otherwise keep `datasheet_profile`'s defaults (named in
/// `profile_fit::defaults`); convolutions, when given, are predicted and reported, and their
/// cuDNN algorithms set `device_profile::winograd`.
///
/// Published tables serve as well as one's own measurements: DeepBench's GEMMs and convolutions
/// of a V100 and a TITAN Xp (`tools/deepbench_csv.py`, test/data/deepbench/) give the shipped
/// `tools/profiles/v100_sxm2.json` and `titan_xp.json`.
/// @code
/// std::ifstream g("test/data/deepbench/v100_gemm.csv"), c("test/data/deepbench/v100_conv.csv");
/// strata::calibrate::calibration_inputs in;
/// in.gemm = &g;
/// in.conv = &c;
/// in.gemm_min_side = 64;
/// auto fit = strata::calibrate::fit_profile(strata::presets::v100_sxm2_16gb, 80, in);
/// @endcode

#include <istream>
#include <string>

#include "strata/calibrate/conv_check.hpp"
#include "strata/calibrate/kernel_fit.hpp"

namespace strata::calibrate {

/// What a calibration reads (null: not measured).
struct calibration_inputs {
  std::istream* gemm = nullptr;            ///< required: dtype, M, N, K, ms
  std::istream* membound = nullptr;        ///< op, bytes, ms
  std::istream* attention = nullptr;       ///< b, heads, s, d, fwd_ms, fwdbwd_ms (16-bit)
  std::istream* attention_fp32 = nullptr;  ///< the same in fp32
  std::istream* conv = nullptr;            ///< convolutions to check (`calibrate/conv_check.hpp`)
  double gemm_min_side = 0;                ///< GEMMs with M or N below it are not fitted
  csv_labels labels;
};

/// Fits a profile for `dev` (with `sms` SMs) to the given tables.
inline profile_fit fit_profile(const device& dev, int sms, const calibration_inputs& in) {
  if (in.gemm == nullptr) throw plan_error(in.labels.gemm + ": required (GEMM timings)");
  if (!(in.gemm_min_side >= 0 && in.gemm_min_side <= detail::max_dimension))
    throw plan_error("the smallest GEMM side fitted must lie in [0, 1e7]");
  profile_fit out{datasheet_profile(dev, sms), {}, {}};
  device_profile& p = out.profile;
  detail::labelled(in.labels.gemm,
                   [&] { detail::fit_gemms(p, out.report, *in.gemm, in.gemm_min_side); });
  if (in.membound != nullptr)
    detail::labelled(in.labels.membound,
                     [&] { detail::fit_membound(p, out.report, *in.membound); });
  else
    out.defaults.push_back(
        "memory-bound kernels (copies and element-wise at 80 % of the memory bandwidth, "
        "normalization and softmax at 50 %, host copies at 25 GB/s)");
  if (in.attention != nullptr)
    detail::labelled(in.labels.attention, [&] {
      fit_attention_class(p.attention, out.report, *in.attention, "attention");
    });
  else
    out.defaults.push_back("attention (50 % of the 16-bit peak forward, 40 % forward + backward)");
  if (in.attention_fp32 != nullptr)
    detail::labelled(in.labels.attention_fp32, [&] {
      fit_attention_class(p.attention_fp32, out.report, *in.attention_fp32, "attention fp32");
    });
  if (in.conv != nullptr)
    detail::labelled(in.labels.conv, [&] { check_convs(p, out.report, *in.conv); });
  return out;
}

}  // namespace strata::calibrate
