#pragma once
/// @file lower/cnn.hpp
/// @brief CNN layers (torchvision ResNet, VGG, any `model<N>` in ParaDL's notation) lowered to
/// the kernels one GPU runs for a micro-batch of N samples, and the tensors PyTorch eager keeps.
///
/// Kernels: convolutions as implicit GEMMs (forward N Ho Wo x F x C k^2; backward data N Ho Wo x
/// C x F k^2, skipped for the input layer; backward weights C k^2 x F x N Ho Wo), bounded by the
/// tensors they really move (input, weights, output, once each); fully-connected layers likewise;
/// batch norm, ReLU, residual adds and pooling as memory-bound kernels, backward at twice the
/// bytes (max pooling also writes or reads int64 indices, and its backward zero-fills the input
/// gradient); a convolution's bias added in a pass of its own and reduced from dY backward. Under
/// bf16 autocast the image and every conv/linear weight are cast per forward (6 B per element)
/// and the weight gradients cast back.
///
/// Kept (torchvision: ReLU in place; batch norm keeps its input; max pooling its int64 indices;
/// a linear layer after pooling its input; the image's bf16 copy; autocast's bf16 weight copies
/// until their backward). `analytic::cnn_step` lists these kernels, `analytic::cnn_memory` sums
/// the kept tensors and `analytic::cnn_layer_times` hands them to ParaDL's strategies as
/// profiled layer times, so the single-GPU step and ParaDL's plans read the same lowering.
/// @code
/// constexpr auto net = strata::zoo::resnet50();
/// double flops = 0;
/// struct { double& f; void kernel(const strata::lower::kernel_op& k) { f += k.flops(); } }
/// v{flops}; for (std::size_t i = 0; i < net.view().size(); ++i)
///   strata::lower::cnn_layer(net.view(), i, 32, true, strata::lower::phase::forward, v);
/// @endcode

#include <span>
#include <type_traits>

#include "strata/lower/ops.hpp"
#include "strata/model/layer.hpp"

namespace strata::lower {

/// The kernels of layer `i` of `layers` for N samples, forward or backward (`autocast`: bf16
/// autocast over fp32 parameters; otherwise fp32 with TF32 convolutions).
template <class V>
constexpr void cnn_layer(std::span<const strata::layer> layers, std::size_t i, double N,
                         bool autocast, phase ph, V&& v) {
  const strata::layer& l = layers[i];
  const bool backward = ph == phase::backward;
  const double act = autocast ? 2.0 : 4.0, k = backward ? 2 : 1;
  auto emit = [&](const kernel_op& op) {
    if constexpr (requires { v.kernel(op); }) v.kernel(op);
  };
  auto memory = [&](std::string_view part, stream_class c, double bytes) {
    kernel_op op{.what = to_string(l.kind), .part = part, .kind = kernel_kind::memory};
    op.stream = c;
    op.bytes = bytes;
    emit(op);
  };
  switch (l.kind) {
    case layer_kind::conv:
    case layer_kind::linear: {
      const bool conv = l.kind == layer_kind::conv;
      const double window = conv ? l.window() : l.in.elements();
      const double positions = conv ? N * l.out.spatial() : N;
      const double ck = conv ? l.in.c * window : window;
      const double weights = ck * l.out.c;
      const bool bias = l.params > weights;
      // the tensors an implicit GEMM moves: input, weights, output, each once
      const double traffic = (N * l.x() + weights + N * l.y()) * act;
      auto gemm = [&](std::string_view part, double m, double n, double kk) {
        kernel_op op{.what = to_string(l.kind), .part = part, .kind = kernel_kind::gemm};
        op.m = m;
        op.n = n;
        op.k = kk;
        op.traffic = traffic;
        emit(op);
      };
      if (!backward) {
        if (autocast && i == 0) memory("input cast", stream_class::copy, 6 * N * l.x());
        if (autocast) memory("weight cast", stream_class::copy, 6 * l.params);
        gemm({}, positions, l.out.c, ck);
        // PyTorch adds a convolution's bias in a separate pass over the output
        if (bias && conv) memory("bias", stream_class::elementwise, 2 * N * l.y() * act);
      } else {
        // the data gradient is a convolution of dY with the flipped filters: C outputs per
        // position, a reduction over F k^2 (a linear layer: in features over out features)
        if (i > 0) {
          if (conv)
            gemm("data", positions, l.in.c, window * l.out.c);
          else
            gemm("data", positions, ck, l.out.c);
        }
        gemm("weights", ck, l.out.c, positions);
        if (autocast) memory("gradient to fp32", stream_class::copy, 6 * l.params);
        if (bias) memory("bias", stream_class::softmax, N * l.y() * act);  // a reduction of dY
      }
      break;
    }
    case layer_kind::norm:
      memory({}, stream_class::layer_norm, k * 3 * N * l.x() * act);
      break;
    case layer_kind::pool:
      if (l.kernel > 1) {
        const double moved = N * (l.x() + l.y()) * act + N * l.y() * 8;
        memory({}, stream_class::elementwise, backward ? moved + N * l.x() * act : moved);
      } else {
        memory({}, stream_class::elementwise, k * N * (l.x() + l.y()) * act);
      }
      break;
    default:
      memory({}, stream_class::elementwise, k * 2 * N * l.y() * act);
      break;
  }
  if (backward) return;
  // what PyTorch eager keeps of this layer until its backward
  auto keep = [&](std::string_view what, double bytes, keep_kind kind = keep_kind::activation) {
    if constexpr (requires { v.save(saved_tensor{}); })
      if (bytes > 0) v.save(saved_tensor{what, bytes, kind});
  };
  const bool next_norm = i + 1 < layers.size() && layers[i + 1].kind == layer_kind::norm;
  const bool next_elementwise =
      i + 1 < layers.size() && layers[i + 1].kind == layer_kind::elementwise;
  const bool prev_elementwise = i > 0 && layers[i - 1].kind == layer_kind::elementwise;
  switch (l.kind) {
    case layer_kind::conv:
    case layer_kind::linear:
      if (autocast) keep("bf16 weight copy", 2 * l.params, keep_kind::weight_copy);
      if (next_norm) keep("batch norm input", N * l.y() * act);
      if (i == 0 && autocast) keep("bf16 image", N * l.x() * act);
      if (l.kind == layer_kind::linear && !prev_elementwise)
        keep("linear input after pooling", N * l.x() * act);
      break;
    case layer_kind::elementwise:
      // ReLU in place keeps its output; a residual add followed by its ReLU shares storage
      if (!next_elementwise) keep("ReLU output", N * l.y() * act);
      break;
    case layer_kind::pool:
      if (l.kernel > 1) keep("max-pool indices", N * l.y() * 8);
      break;
    default:
      break;
  }
}

}  // namespace strata::lower
