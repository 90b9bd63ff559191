#pragma once
/// @file analytic/report.hpp
/// @brief The result of evaluating a plan: time and memory breakdowns and what follows from them.

#include <string_view>

#include "strata/parallel/cnn/context.hpp"
#include "strata/units.hpp"

namespace strata {

/// Time per iteration and per epoch, memory of the busiest device, and throughput.
struct report {
  std::string_view strategy;
  int devices = 1;
  int batch = 1;
  double iterations = 1;     ///< D / B
  time_breakdown iteration;  ///< one iteration
  memory_breakdown memory;   ///< per device (the largest)
  bytes capacity{};          ///< the device's memory

  [[nodiscard]] constexpr seconds iteration_time() const { return iteration.total(); }
  [[nodiscard]] constexpr seconds epoch_time() const { return iteration.total() * iterations; }
  /// Samples per second.
  [[nodiscard]] constexpr double throughput() const { return batch / iteration.total().count(); }
  [[nodiscard]] constexpr bool fits() const { return memory.total() <= capacity; }
};

}  // namespace strata
