#pragma once
/// @file model/layer.hpp
/// @brief Layers in ParaDL's notation and the policy types that produce them.
///
/// Every layer of a model is described by one `layer` value: per-sample input and output shapes
/// (ParaDL §III-A: x[N, C, W x H], y[N, F, W x H], w[C, F, K x K]), its parameter count |w_l|
/// and its forward/backward FLOPs per sample. A fully-connected layer is a convolution whose
/// kernel covers the whole input; an element-wise layer has F = C; a layer without weights has
/// |w_l| = 0 (ParaDL §III-A).
///
/// Layer policies (`conv`, `linear`, `max_pool`, `batch_norm`, `relu`, ...) are small literal
/// types that map an input shape to a `layer`; the `Layer` concept names that contract.
/// @code
/// constexpr strata::shape in{.c = 3, .h = 224, .w = 224};
/// constexpr auto l = strata::conv{.filters = 64, .kernel = 7, .stride = 2, .padding =
/// 3}.apply(in); static_assert(l.params == 9408);               // 3 * 64 * 7 * 7, no bias
/// static_assert(l.out.h == 112);
/// @endcode

#include <concepts>
#include <string_view>

#include "strata/error.hpp"

namespace strata {

/// Per-sample tensor extents: channels x depth x height x width (depth = 1 for 2-D data; a
/// sequence of tokens is c = hidden size, w = sequence length).
struct shape {
  int c = 1;
  int d = 1;
  int h = 1;
  int w = 1;
  [[nodiscard]] constexpr double elements() const { return static_cast<double>(c) * d * h * w; }
  [[nodiscard]] constexpr double spatial() const { return static_cast<double>(d) * h * w; }
  friend constexpr bool operator==(const shape&, const shape&) = default;
};

enum class layer_kind { conv, linear, pool, norm, elementwise, attention, embedding };

[[nodiscard]] constexpr std::string_view to_string(layer_kind k) {
  switch (k) {
    case layer_kind::conv:
      return "conv";
    case layer_kind::linear:
      return "linear";
    case layer_kind::pool:
      return "pool";
    case layer_kind::norm:
      return "norm";
    case layer_kind::elementwise:
      return "elementwise";
    case layer_kind::attention:
      return "attention";
    case layer_kind::embedding:
      return "embedding";
  }
  return "?";
}

/// One layer in ParaDL's notation; all sizes are per sample and in elements.
struct layer {
  layer_kind kind = layer_kind::elementwise;
  shape in;             ///< x_l: C_l channels, W_l x H_l (x D_l) extents
  shape out;            ///< y_l: F_l channels
  int kernel = 1;       ///< K (square / cubic kernels); 1 for layers without a window
  double params = 0;    ///< |w_l|, weights plus biases
  double fw_flops = 0;  ///< forward FLOPs per sample
  double bw_flops = 0;  ///< backward FLOPs per sample (input and weight gradients)
  int kernel_w = 0;     ///< a rectangular 2-D kernel's width (K is then its height); 0: square

  /// Weights per filter and input channel: K^2 (K^3 in 3-D), or K x kernel_w.
  [[nodiscard]] constexpr double window() const {
    return in.d > 1 ? 1.0 * kernel * kernel * kernel
                    : 1.0 * kernel * (kernel_w > 0 ? kernel_w : kernel);
  }

  [[nodiscard]] constexpr double x() const { return in.elements(); }   ///< |x_l|
  [[nodiscard]] constexpr double y() const { return out.elements(); }  ///< |y_l|
  [[nodiscard]] constexpr int C() const { return in.c; }
  [[nodiscard]] constexpr int F() const { return out.c; }
  /// Spatial extent W_l x H_l (x D_l) of the input, the dimension spatial parallelism splits.
  [[nodiscard]] constexpr double WH() const { return in.spatial(); }
  [[nodiscard]] constexpr bool has_weights() const { return params > 0; }
};

/// A layer policy: maps the incoming per-sample shape to a described `layer`.
template <class L>
concept Layer = requires(const L& l, shape s) {
  { l.apply(s) } -> std::same_as<layer>;
};

namespace detail {
constexpr int conv_out(int in, int kernel, int stride, int padding) {
  if (padding < 0) return (in + stride - 1) / stride;  // "same" padding
  return (in + 2 * padding - kernel) / stride + 1;
}
constexpr void check_positive(int v, const char* what) {
  if (v < 1) throw plan_error(what);
}
}  // namespace detail

/// 2-D or 3-D convolution (3-D when the input has depth > 1). padding = -1 means "same".
/// FLOPs: 2 C F K^n per output position forward (+ F for the bias), twice that backward.
struct conv {
  int filters = 1;
  int kernel = 1;
  int stride = 1;
  int padding = -1;
  bool bias = false;
  int kernel_w = 0;  ///< a rectangular 2-D kernel (Inception's 1 x 7): `kernel` high, this wide

  [[nodiscard]] constexpr layer apply(shape in) const {
    detail::check_positive(filters, "a convolution needs at least one filter");
    detail::check_positive(kernel, "a convolution kernel must be at least 1 wide");
    detail::check_positive(stride, "a convolution stride must be at least 1");
    const bool three_d = in.d > 1;
    if (kernel_w < 0 || (three_d && kernel_w > 0))
      throw plan_error("a rectangular kernel width must be positive and only for 2-D inputs");
    const int kw = kernel_w > 0 ? kernel_w : kernel;
    shape out{filters, three_d ? detail::conv_out(in.d, kernel, stride, padding) : 1,
              detail::conv_out(in.h, kernel, stride, padding),
              detail::conv_out(in.w, kw, stride, padding)};
    if (out.h < 1 || out.w < 1 || out.d < 1)
      throw plan_error("a convolution kernel is larger than its (padded) input");
    const double window = three_d ? 1.0 * kernel * kernel * kernel : 1.0 * kernel * kw;
    const double params = in.c * window * filters + (bias ? filters : 0);
    const double fw = 2.0 * in.c * window * out.elements() + (bias ? out.elements() : 0.0);
    return {layer_kind::conv, in, out, kernel, params, fw, 2.0 * fw, kernel_w};
  }
};

/// Fully-connected layer over the flattened input (ParaDL: a convolution whose filter covers the
/// input). FLOPs: 2 |x| F forward (+ F bias), twice that backward.
struct linear {
  int features = 1;
  bool bias = true;
  [[nodiscard]] constexpr layer apply(shape in) const {
    detail::check_positive(features, "a linear layer needs at least one output feature");
    const double x = in.elements();
    const double params = x * features + (bias ? features : 0);
    const double fw = 2.0 * x * features + (bias ? features : 0);
    return {layer_kind::linear, in, shape{features, 1, 1, 1}, 1, params, fw, 2.0 * fw};
  }
};

/// A linear layer applied to every position independently (a 1x1 convolution): the projections
/// of a transformer, where c is the hidden size and w the sequence length. `tied` marks an
/// output projection that reuses the embedding matrix (its parameters are counted there).
struct token_linear {
  int features = 1;
  bool bias = true;
  bool tied = false;
  [[nodiscard]] constexpr layer apply(shape in) const {
    detail::check_positive(features, "a linear layer needs at least one output feature");
    const double positions = in.spatial();
    const double params = tied ? 0.0 : 1.0 * in.c * features + (bias ? features : 0);
    const double fw = positions * (2.0 * in.c * features + (bias ? features : 0));
    return {layer_kind::linear, in, shape{features, in.d, in.h, in.w}, 1, params, fw, 2.0 * fw};
  }
};

/// Max or average pooling over a K^n window (K^n compares or adds per output, one pass back).
struct max_pool {
  int kernel = 2;
  int stride = 2;
  int padding = 0;
  [[nodiscard]] constexpr layer apply(shape in) const {
    detail::check_positive(kernel, "a pooling window must be at least 1 wide");
    detail::check_positive(stride, "a pooling stride must be at least 1");
    const bool three_d = in.d > 1;
    shape out{in.c, three_d ? detail::conv_out(in.d, kernel, stride, padding) : 1,
              detail::conv_out(in.h, kernel, stride, padding),
              detail::conv_out(in.w, kernel, stride, padding)};
    if (out.h < 1 || out.w < 1 || out.d < 1)
      throw plan_error("a pooling window is larger than its input");
    const double window = three_d ? 1.0 * kernel * kernel * kernel : 1.0 * kernel * kernel;
    return {layer_kind::pool, in, out, kernel, 0, window * out.elements(), in.elements()};
  }
};

/// Global average pooling to 1 x 1 (torchvision's AdaptiveAvgPool2d((1, 1))).
struct global_avg_pool {
  [[nodiscard]] constexpr layer apply(shape in) const {
    return {layer_kind::pool, in, shape{in.c, 1, 1, 1}, 1, 0, in.elements(), in.elements()};
  }
};

/// Batch normalization: 2 C parameters (scale, shift); ~5 FLOPs per element forward, 10 back.
struct batch_norm {
  [[nodiscard]] constexpr layer apply(shape in) const {
    return {layer_kind::norm, in, in, 1, 2.0 * in.c, 5.0 * in.elements(), 10.0 * in.elements()};
  }
};

/// Layer normalization over the channel (hidden) dimension: 2 c parameters.
struct layer_norm {
  [[nodiscard]] constexpr layer apply(shape in) const {
    return {layer_kind::norm, in, in, 1, 2.0 * in.c, 5.0 * in.elements(), 10.0 * in.elements()};
  }
};

/// Element-wise layer (ReLU, GELU, dropout, residual add): F = C, no weights.
/// `flops_per_element` is the forward cost; the backward pass costs the same.
struct elementwise {
  double flops_per_element = 1.0;
  [[nodiscard]] constexpr layer apply(shape in) const {
    const double f = flops_per_element * in.elements();
    return {layer_kind::elementwise, in, in, 1, 0, f, f};
  }
};

struct relu : elementwise {
  constexpr relu() : elementwise{1.0} {}
};

/// Self-attention core on a packed QKV input (c = 3 h, w = s): Q K^T and the weighted sum of V,
/// 2 s^2 h FLOPs each forward (Narayanan et al. SC'21), plus the softmax; twice that backward.
struct attention {
  int heads = 1;
  [[nodiscard]] constexpr layer apply(shape in) const {
    detail::check_positive(heads, "attention needs at least one head");
    if (in.c % 3 != 0) throw plan_error("attention expects packed Q, K, V (3 x hidden channels)");
    const int h = in.c / 3;
    if (h % heads != 0) throw plan_error("the hidden size must be a multiple of the head count");
    const double s = in.spatial();
    const double fw = 4.0 * s * s * h + 5.0 * heads * s * s;
    return {layer_kind::attention, in, shape{h, in.d, in.h, in.w}, 1, 0, fw, 2.0 * fw};
  }
};

/// Token (plus optional learned position) embedding: input c = 1 token id per position.
struct embedding {
  int vocabulary = 1;
  int dim = 1;
  int positions = 0;  ///< learned position table rows (0: none)
  [[nodiscard]] constexpr layer apply(shape in) const {
    detail::check_positive(vocabulary, "an embedding needs a vocabulary of at least one token");
    detail::check_positive(dim, "an embedding needs a dimension of at least 1");
    const double params = 1.0 * vocabulary * dim + 1.0 * positions * dim;
    shape out{dim, in.d, in.h, in.w};
    return {layer_kind::embedding, in, out, 1, params, out.elements(), out.elements()};
  }
};

}  // namespace strata
