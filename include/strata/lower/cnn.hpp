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

#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "strata/lower/ops.hpp"
#include "strata/model/layer.hpp"
#include "strata/parallel/cnn/context.hpp"
#include "strata/parallel/cnn/pipeline.hpp"
#include "strata/parallel/cnn/spatial.hpp"

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
      // A 3 x 3 stride-1 convolution (its output as large as its input, or 2 smaller without
      // padding) may run as Winograd transforms: its tiles over the images' `h` x `w` extent
      const bool winograd = conv && l.in.d == 1 && l.kernel == 3 &&
                            (l.kernel_w == 0 || l.kernel_w == 3) && l.in.h - l.out.h <= 2 &&
                            l.in.w - l.out.w <= 2 && l.out.h <= l.in.h && l.out.w <= l.in.w;
      auto pass = [&](double h, double w, double in, double out, bool filter) {
        if (!winograd) return winograd_pass{};
        auto tiles = [&](double m) {
          return N * strata::detail::ceil_of(h / m) * strata::detail::ceil_of(w / m);
        };
        return winograd_pass{tiles(2), tiles(4), in, out, filter};
      };
      auto gemm = [&](std::string_view part, double m, double n, double kk, winograd_pass wp) {
        kernel_op op{.what = to_string(l.kind), .part = part, .kind = kernel_kind::gemm};
        op.m = m;
        op.n = n;
        op.k = kk;
        op.traffic = traffic;
        op.winograd = wp;
        emit(op);
      };
      const double in_c = l.in.c, out_c = l.out.c;
      if (!backward) {
        if (autocast && i == 0) memory("input cast", stream_class::copy, 6 * N * l.x());
        if (autocast) memory("weight cast", stream_class::copy, 6 * l.params);
        gemm({}, positions, l.out.c, ck, pass(l.out.h, l.out.w, in_c, out_c, false));
        // PyTorch adds a convolution's bias in a separate pass over the output
        if (bias && conv) memory("bias", stream_class::elementwise, 2 * N * l.y() * act);
      } else {
        // the data gradient is a convolution of dY with the flipped filters: C outputs per
        // position, a reduction over F k^2 (a linear layer: in features over out features)
        if (i > 0) {
          if (conv)
            gemm("data", positions, l.in.c, window * l.out.c,
                 pass(l.in.h, l.in.w, out_c, in_c, false));
          else
            gemm("data", positions, ck, l.out.c, {});
        }
        gemm("weights", ck, l.out.c, positions, pass(l.out.h, l.out.w, in_c, out_c, true));
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

// ---------------------------------------------------------------------------------------------
// ParaDL's strategies lowered: what one rank (or one pipeline stage) runs, in program order, from
// the per-layer times FW_l, BW_l, WU_l of the plan's `context` (profiled, or `cnn_layer` priced).
// The simulator (`sim/paradl.hpp`) turns these operations into tasks; the closed form
// (`Strategy::cost`) is their sum with nothing overlapped.

/// A ParaDL rank's communication: ParaDL §IV's ring all-gather and all-reduce, or one send.
enum class cnn_comm { all_gather, all_reduce, send };

/// Where the gradient buckets of `buckets` (at least 1) about equal shares of the weights close,
/// going backward: bucket k closes after the backward of layer `[k]` (the last one after layer 0).
inline std::vector<std::size_t> gradient_bucket_ends(const context& c, int buckets) {
  std::vector<std::size_t> bucket_end;
  const std::size_t L = c.size();
  const int nb = buckets > 1 ? buckets : 1;
  const double per = c.sum_w / nb;
  double acc = 0;
  for (std::size_t l = L; l-- > 0;) {
    acc += c.layers[l].params;
    if (acc >= per * (static_cast<double>(bucket_end.size()) + 1) - 1e-9 &&
        static_cast<int>(bucket_end.size()) < nb - 1)
      bucket_end.push_back(l);
  }
  bucket_end.push_back(0);
  return bucket_end;
}

/// One rank of a ParaDL strategy, as `rank_shape` says (`Strategy::rank`), lowered for a
/// visitor with
///  - `state(bytes)`: the weights, gradients and optimizer states it holds all iteration;
///  - `activation(l, bytes)`: layer l's kept tensors, 2 delta B'(|x_l| + |y_l|) (ParaDL's memory);
///  - `compute(phase, l, seconds)`: layer l's forward or backward for its samples;
///  - `comm(op, what, l, group, bytes)`: a blocking collective of layer l (the halo exchange,
///    ParaDL eq. (10); filter/channel parallelism's all-gather of y and all-reduce of dx,
///    eq. (22));
///  - `gradient(k, l, group, bytes)`: gradient bucket k, ready after layer l's backward (eq. (6));
///  - `update(seconds)`: the weight update, last.
template <class V>
void cnn_rank(const context& c, const rank_shape& rp, int buckets, V&& v) {
  const double d = c.delta();
  const std::size_t L = c.size();
  const int states = states_per_param(c.setup.cnn_optimizer());
  v.state(c.sum_w * rp.wu_share * d * (2 + states));
  for (std::size_t l = 0; l < L; ++l)
    v.activation(l, 2.0 * d * rp.samples * (c.layers[l].x() + c.layers[l].y()) / rp.act_split);
  std::size_t last_weighted = L;
  for (std::size_t l = 0; l < L; ++l)
    if (c.layers[l].has_weights()) last_weighted = l;
  // ParaDL eq. (10): a tile sends floor(K/2) rows of `sh` to each of its two neighbours.
  auto halo = [&](const shape& sh, int kernel, std::string_view what, std::size_t l) {
    if (!rp.tiles) return;
    const double h = rp.tiles->halo(sh, kernel);
    if (h > 0)
      for (int k = 0; k < 2; ++k) v.comm(cnn_comm::send, what, l, rp.hgroup, rp.samples * h * d);
  };
  const bool layerwise = rp.layerwise;
  for (std::size_t l = 0; l < L; ++l) {
    const strata::layer& ly = c.layers[l];
    halo(ly.in, ly.kernel, "halo x", l);
    v.compute(phase::forward, l, rp.samples * c.time(l).fw.count() / rp.split);
    if (layerwise && ly.has_weights() && l < last_weighted)
      v.comm(cnn_comm::all_gather, "all-gather y", l, rp.lgroup, rp.samples * ly.y() * d);
  }
  const std::vector<std::size_t> bucket_end = gradient_bucket_ends(c, buckets);
  std::vector<std::pair<double, std::size_t>> closed;  // (weights, closing layer) per bucket
  double bucket_w = 0;
  std::size_t next_bucket = 0;
  for (std::size_t l = L; l-- > 0;) {
    const strata::layer& ly = c.layers[l];
    halo(ly.out, ly.kernel, "halo dy", l);
    v.compute(phase::backward, l, rp.samples * c.time(l).bw.count() / rp.split);
    if (layerwise && ly.has_weights() && l < last_weighted)
      v.comm(cnn_comm::all_reduce, "all-reduce dx", l, rp.lgroup, rp.samples * ly.y() * d);
    bucket_w += ly.params;
    if (next_bucket < bucket_end.size() && l == bucket_end[next_bucket]) {
      closed.push_back({bucket_w, l});
      bucket_w = 0;
      ++next_bucket;
    }
  }
  if (rp.gradients)
    for (std::size_t k = 0; k < closed.size(); ++k)
      v.gradient(k, closed[k].second, rp.ggroup, closed[k].first * rp.gshare * d);
  v.update(c.sum_wu.count() * rp.wu_share);
}

/// One pipeline stage of ParaDL's layer parallelism for micro-batches of `micro` samples: its
/// per-micro-batch forward and backward times, its update, the state it holds, one micro-batch's
/// kept tensors and the bytes it sends to the next stage (its last layer's output).
struct cnn_stage {
  double forward = 0, backward = 0, update = 0;
  double state = 0, activations = 0, send = 0;
};

/// The stages of `pp` lowered (ParaDL eqs. 11-14's per-stage sums).
inline std::vector<cnn_stage> cnn_stages(const context& c, const parallel::pipeline& pp) {
  const double d = c.delta(), mb = c.batch() / pp.segments;
  const int states = states_per_param(c.setup.cnn_optimizer());
  std::vector<cnn_stage> out;
  pp.for_each_stage(c, [&](parallel::stage st) {
    double fw = 0, bw = 0, wu = 0, w = 0, xy = 0;
    for (std::size_t l = st.first; l <= st.last; ++l) {
      const layer_time t = c.time(l);
      fw += t.fw.count();
      bw += t.bw.count();
      wu += t.wu.count();
      w += c.layers[l].params;
      xy += c.layers[l].x() + c.layers[l].y();
    }
    out.push_back({.forward = mb * fw,
                   .backward = mb * bw,
                   .update = wu,
                   .state = w * d * (2 + states),
                   .activations = 2.0 * d * mb * xy,
                   .send = mb * c.layers[st.last].y() * d});
  });
  return out;
}

}  // namespace strata::lower
