#pragma once
/// @file io/cnn_zoo.hpp
/// @brief The CNNs a scenario names by key (`strata --list-models`): ParaDL scenarios, Proteus
/// strategy trees and the model list read them here.
/// @code
/// const std::vector<strata::layer> net = strata::io::detail::zoo_model("vgg19", "model");
/// @endcode

#include <cstddef>
#include <string>
#include <vector>

#include "strata/io/json.hpp"
#include "strata/model/model.hpp"
#include "strata/model/zoo.hpp"

namespace strata::io::detail {

template <std::size_t N>
std::vector<layer> to_vector(const model<N>& m) {
  return {m.layers.begin(), m.layers.end()};
}

/// The CNNs a scenario names by key.
inline constexpr const char* cnn_zoo[] = {"resnet50",   "resnet152",       "vgg16",
                                          "vgg19",      "cosmoflow",       "megatron-2.5b",
                                          "mnist-adam", "imagenet22k-adam"};

/// Whether `name` is a key of `cnn_zoo`.
inline bool is_cnn_name(const std::string& name) {
  for (const char* c : cnn_zoo)
    if (name == c) return true;
  return false;
}

/// The layers of zoo CNN `name`; an unknown name is an error at `path` listing both zoos.
inline std::vector<layer> zoo_model(const std::string& name, const std::string& path) {
  if (name == "resnet50") return to_vector(zoo::resnet50());
  if (name == "resnet152") return to_vector(zoo::resnet152());
  if (name == "vgg16") return to_vector(zoo::vgg16());
  if (name == "vgg19") return to_vector(zoo::vgg19());
  if (name == "cosmoflow") return to_vector(zoo::cosmoflow());
  if (name == "megatron-2.5b") return to_vector(zoo::megatron_2_5b());
  if (name == "mnist-adam") return to_vector(zoo::mnist_adam());
  if (name == "imagenet22k-adam") return to_vector(zoo::imagenet22k_adam());
  fail(path, "unknown model \"" + cut(name) +
                 "\" (known CNNs: resnet50, resnet152, vgg16, vgg19, cosmoflow, megatron-2.5b, "
                 "mnist-adam, imagenet22k-adam; transformers: docs/cli.md, e.g. gpt3-175b)");
}

}  // namespace strata::io::detail
