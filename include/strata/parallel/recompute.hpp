#pragma once
/// @file parallel/recompute.hpp
/// @brief Activation recomputation (Korthikanti et al. 2022 §5): `none` keeps every saved tensor;
/// `selective` recomputes the attention core (its s^2 scores are not kept); `full` keeps each
/// layer's input only and runs the layer's forward again before its backward (Chen et al. 2016's
/// checkpointing, one checkpoint per layer). What a layer keeps under each is
/// `lower::layer`'s `keep_kind::activation` tensors.

#include <string_view>

namespace strata::parallel {

enum class recompute { none, selective, full };

[[nodiscard]] constexpr std::string_view to_string(recompute r) {
  switch (r) {
    case recompute::none:
      return "none";
    case recompute::selective:
      return "selective";
    case recompute::full:
      return "full";
  }
  return "none";
}

}  // namespace strata::parallel
