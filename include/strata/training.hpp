#pragma once
/// @file training.hpp
/// @brief The training setup: batch, dataset size, precision, optimizer and compute efficiency.
/// @code
/// constexpr strata::training t{.batch = 256, .dataset = 1'281'167};
/// static_assert(t.iterations() > 5000);
/// @endcode

#include <string_view>

#include "strata/error.hpp"
#include "strata/hardware/device.hpp"

namespace strata {

/// Optimizers, by the per-parameter state they keep.
enum class optimizer { sgd, momentum, adam };

/// Extra values per parameter: none for SGD, one velocity for momentum, two moments for Adam.
[[nodiscard]] constexpr int states_per_param(optimizer o) {
  switch (o) {
    case optimizer::sgd:
      return 0;
    case optimizer::momentum:
      return 1;
    case optimizer::adam:
      return 2;
  }
  return 0;
}

/// Bytes the weight update reads and writes per parameter, in units of delta: SGD reads w and
/// dL/dw and writes w (3); momentum adds a read and write of the velocity (5); Adam of two
/// moments (7).
[[nodiscard]] constexpr int update_passes(optimizer o) { return 3 + 2 * states_per_param(o); }

[[nodiscard]] constexpr std::string_view to_string(optimizer o) {
  switch (o) {
    case optimizer::sgd:
      return "sgd";
    case optimizer::momentum:
      return "momentum";
    case optimizer::adam:
      return "adam";
  }
  return "sgd";
}

/// What is trained and how. ParaDL's symbols: B = batch, D = dataset, delta = size_of(precision).
struct training {
  int batch = 1;                     ///< B, the global mini-batch (samples per iteration)
  double dataset = 0;                ///< D, samples per epoch; 0 means one iteration (D = B)
  dtype precision = dtype::fp32;     ///< storage and arithmetic type of every tensor
  optimizer optim = optimizer::sgd;  ///< ParaDL's model has no optimizer state (SGD)
  double efficiency = 0.5;           ///< achieved fraction of the device's peak FLOP/s

  [[nodiscard]] constexpr double delta() const { return size_of(precision); }
  [[nodiscard]] constexpr double samples() const { return dataset > 0 ? dataset : batch; }
  /// D / B, the iterations in one epoch (fractional, as in ParaDL's formulas).
  [[nodiscard]] constexpr double iterations() const { return samples() / batch; }

  constexpr void check() const {
    if (batch < 1) throw plan_error("training.batch must be at least 1");
    if (dataset < 0) throw plan_error("training.dataset must not be negative");
    if (!(efficiency > 0.0 && efficiency <= 1.0))
      throw plan_error("training.efficiency must lie in (0, 1]");
  }
};

}  // namespace strata
