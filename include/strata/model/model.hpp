#pragma once
/// @file model/model.hpp
/// @brief A model: the input shape and its layers in execution order.
///
/// Small models are composed from layer policies with `sequential`; the zoo builds large ones
/// (ResNet-152 has over 500 layers) with `model_builder`, which follows the shape from layer to
/// layer and can branch (a residual downsample path starts again from the block's input).
/// @code
/// constexpr auto net = strata::sequential("mlp", strata::shape{.c = 784},
///                                         strata::linear{.features = 128}, strata::relu{},
///                                         strata::linear{.features = 10});
/// static_assert(net.params() == 784 * 128 + 128 + 128 * 10 + 10);
/// @endcode

#include <array>
#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>

#include "strata/error.hpp"
#include "strata/model/layer.hpp"

namespace strata {

/// Sums over a sequence of layers.
[[nodiscard]] constexpr double total_params(std::span<const layer> ls) {
  double s = 0;
  for (const layer& l : ls) s += l.params;
  return s;
}
[[nodiscard]] constexpr double total_fw_flops(std::span<const layer> ls) {
  double s = 0;
  for (const layer& l : ls) s += l.fw_flops;
  return s;
}
[[nodiscard]] constexpr double total_bw_flops(std::span<const layer> ls) {
  double s = 0;
  for (const layer& l : ls) s += l.bw_flops;
  return s;
}

/// A model of N layers; a literal type, so it can be a `constexpr` variable.
template <std::size_t N>
struct model {
  std::string_view name;
  shape input;
  std::array<layer, N> layers{};

  [[nodiscard]] static constexpr std::size_t size() { return N; }
  [[nodiscard]] constexpr std::span<const layer> view() const { return layers; }
  [[nodiscard]] constexpr double params() const { return total_params(layers); }
  [[nodiscard]] constexpr double fw_flops() const { return total_fw_flops(layers); }
  [[nodiscard]] constexpr double bw_flops() const { return total_bw_flops(layers); }
};

/// Composes layer policies in order, threading each one's output shape into the next.
/// A model strata can lower: a transformer (its dimensions: `parameters()`, `check()`;
/// `lower/transformer.hpp`) or a network of layers (`model<N>`: `view()` gives the layers in
/// ParaDL's notation; `lower/cnn.hpp`).
template <class M>
concept Model = requires(const M& m) {
  { m.parameters() } -> std::convertible_to<double>;
  m.check();
}
|| requires(const M& m) {
  { m.view() } -> std::convertible_to<std::span<const layer>>;
};

template <Layer... Ls>
[[nodiscard]] constexpr model<sizeof...(Ls)> sequential(std::string_view name, shape input,
                                                        const Ls&... ls) {
  static_assert(sizeof...(Ls) > 0, "a model needs at least one layer");
  model<sizeof...(Ls)> m{name, input, {}};
  shape cur = input;
  std::size_t i = 0;
  ((m.layers[i] = ls.apply(cur), cur = m.layers[i].out, ++i), ...);
  return m;
}

/// Appends layers while tracking the current shape; capacity is a template parameter so the
/// builder works in constant expressions. `trim<n>()` returns the exact-size model.
template <std::size_t Capacity>
struct model_builder {
  std::string_view name;
  shape input;
  shape current;
  std::array<layer, Capacity> layers{};
  std::size_t count = 0;

  constexpr model_builder(std::string_view n, shape in) : name(n), input(in), current(in) {}

  template <Layer L>
  constexpr model_builder& add(const L& l) {
    if (count == Capacity) throw plan_error("model_builder capacity exceeded: raise Capacity");
    layers[count] = l.apply(current);
    current = layers[count].out;
    ++count;
    return *this;
  }
  /// Continue from another shape (the start of a branch).
  constexpr model_builder& at(shape s) {
    current = s;
    return *this;
  }
  [[nodiscard]] constexpr std::span<const layer> view() const { return {layers.data(), count}; }

  template <std::size_t N>
  [[nodiscard]] constexpr model<N> trim() const {
    if (N != count) throw plan_error("model_builder::trim<N>: N differs from the layer count");
    model<N> m{name, input, {}};
    for (std::size_t i = 0; i < N; ++i) m.layers[i] = layers[i];
    return m;
  }
};

}  // namespace strata
