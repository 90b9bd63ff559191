#pragma once
/// @file hardware/device.hpp
/// @brief A compute device: peak throughput per data type, memory size and bandwidth.
/// @code
/// constexpr auto gpu = strata::presets::v100_sxm2_16gb;
/// static_assert(gpu.peak(strata::dtype::fp32) == 15.7_TFLOPS);
/// @endcode

#include <string_view>

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

}  // namespace strata
