#pragma once
/// @file hardware/device.hpp
/// @brief A compute device: peak throughput per data type, memory size and bandwidth.
/// @code
/// constexpr auto gpu = strata::presets::v100_sxm2_16gb;
/// static_assert(gpu.peak(strata::dtype::fp32) == 15.7_TFLOPS);
/// @endcode

#include <string>
#include <string_view>

#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/units.hpp"

namespace strata {

/// Element types for weights, activations and arithmetic.
enum class dtype { fp32, tf32, fp16, bf16, fp8 };

/// Bytes one element of `t` occupies in memory (tf32 is stored as fp32).
[[nodiscard]] constexpr double size_of(dtype t) {
  switch (t) {
    case dtype::fp32:
    case dtype::tf32:
      return 4.0;
    case dtype::fp16:
    case dtype::bf16:
      return 2.0;
    case dtype::fp8:
      return 1.0;
  }
  return 4.0;
}

[[nodiscard]] constexpr std::string_view to_string(dtype t) {
  switch (t) {
    case dtype::fp32:
      return "fp32";
    case dtype::tf32:
      return "tf32";
    case dtype::fp16:
      return "fp16";
    case dtype::bf16:
      return "bf16";
    case dtype::fp8:
      return "fp8";
  }
  return "fp32";
}

/// One accelerator. A peak of zero means the device has no fast path for that type; `peak()` then
/// falls back to the next wider type (fp8 -> fp16/bf16 -> fp32), as frameworks do.
struct device {
  std::string_view name;
  flop_rate fp32{};
  flop_rate tf32{};
  flop_rate fp16{};
  flop_rate bf16{};
  flop_rate fp8{};
  bytes memory{};
  byte_rate memory_bandwidth{};
  int sms = 0;  ///< streaming multiprocessors (GPU); 0 where unknown or not a GPU
  /// CUDA compute capability x 10 (70 Volta, 80 Ampere, 89 Ada, 90 Hopper, 100 Blackwell); 0
  /// where unknown or not an NVIDIA GPU. NCCL's tuner picks its constants by it (`comm/nccl.hpp`).
  int arch = 0;
  // What a datasheet lists beside the figures above (`io/device_file.hpp`, `--list-gpus`); no
  // prediction reads them yet. Zero where unknown or where the part has none.
  flop_rate int8{};      ///< dense INT8 tensor rate (operations per second)
  double clock_mhz = 0;  ///< boost clock
  bytes l2{};            ///< L2 cache
  byte_rate link{};      ///< one direction of the part's peer links (NVLink, Infinity Fabric, PCIe)
  /// Rated board power, the power the datasheet's peaks are sustained at (H100 SXM 700 W); 0
  /// where unknown.
  double power_w = 0;
  /// The power limit the GPU is held at (`nvidia-smi -pl`); 0: its rated `power_w`. Profiles
  /// built for the device scale its arithmetic rates by `power_clock_share` (hardware/kernels.hpp).
  double power_limit_w = 0;

  /// Dense peak for arithmetic in `t`.
  [[nodiscard]] constexpr flop_rate peak(dtype t) const {
    const flop_rate zero{};
    switch (t) {
      case dtype::fp8:
        if (fp8 > zero) return fp8;
        [[fallthrough]];
      case dtype::fp16:
        if (t != dtype::bf16 && fp16 > zero) return fp16;
        [[fallthrough]];
      case dtype::bf16:
        if (bf16 > zero) return bf16;
        if (fp16 > zero) return fp16;
        [[fallthrough]];
      case dtype::tf32:
        if (t == dtype::tf32 && tf32 > zero) return tf32;
        [[fallthrough]];
      case dtype::fp32:
        return fp32;
    }
    return fp32;
  }
};

/// What a power limit does to a GPU's arithmetic, in the form P ~ f^(1/a) that dynamic power
/// (f V^2, the voltage rising with the clock) takes over the clocks a limit selects: held at
/// `power_limit_w` below its rated `power_w` it sustains (limit / rated)^a of its rated arithmetic
/// rates (tensor and CUDA cores, GEMMs and attention alike); HBM has its own clock, so
/// memory-bound kernels keep their rates. a = 0.445 rests on one public H100 pair at the same
/// shape: a bf16 8192^3 GEMM at 585.23 TFLOP/s on Meta's H100s held at 500 W (pytorch/FBGEMM
/// pull request 2546, 2024-04-29) against 679.76 TFLOP/s on this project's H100 SXM at its rated
/// 700 W (test/data/h100_gemm.csv): 585.23 / 679.76 = 0.8609 = (500 / 700)^0.445. The same pair's
/// fp8 GEMM (1,125.5 TFLOP/s) is 4 % below what the bf16 share gives at the fp8 peak.
inline constexpr double power_clock_exponent = 0.445;

/// The share of its rated arithmetic rates device `d` sustains at its power limit: 1 without one,
/// (power_limit_w / power_w)^`power_clock_exponent` below the rated power. A limit above the rated
/// power, under a quarter of it, or on a device whose rated power is unknown is an error.
[[nodiscard]] constexpr double power_clock_share(const device& d) {
  if (d.power_limit_w <= 0 || d.power_limit_w == d.power_w) return 1.0;
  const std::string name(d.name);
  const auto watts = [](double w) {
    return std::to_string(static_cast<long long>(w + 0.5)) + " W";
  };
  if (d.power_w <= 0)
    throw plan_error(name + " has a power limit but no rated board power: give its power_W");
  if (d.power_limit_w > d.power_w)
    throw plan_error(name + ": a power limit of " + watts(d.power_limit_w) +
                     " is above its rated " + watts(d.power_w));
  if (d.power_limit_w < 0.25 * d.power_w)
    throw plan_error(name + ": a power limit of " + watts(d.power_limit_w) +
                     " is under a quarter of its rated " + watts(d.power_w) +
                     ", outside what the model rests on");
  return detail::pow(d.power_limit_w / d.power_w, power_clock_exponent);
}

}  // namespace strata
