#pragma once
/// @file lower/ops.hpp
/// @brief The operations a plan lowers to on one rank: kernels (FLOPs, bytes, kind), collectives
/// (operation, axis, bytes, phase) and tensors saved for backward, plus `span`, the host-issue /
/// GPU-execution algebra that times a kernel sequence.
///
/// A lowering (`lower/transformer.hpp`) does not build a graph: it calls a visitor once per
/// operation, so the same lowering feeds the closed form (which prices and sums, `constexpr`,
/// no allocation), the single-GPU step report (which keeps every kernel) and the simulator
/// (which turns them into tasks).
/// @code
/// constexpr auto s = strata::lower::span::kernel(50e-6, 10e-6)        // host-bound kernel
///                        .then(strata::lower::span::kernel(5e-6, 1e-3));  // GPU-bound one
/// static_assert(s.time == 50e-6 + 1e-3);
/// @endcode

#include <string_view>
#include <type_traits>

#include "strata/comm/collectives.hpp"
#include "strata/hardware/kernels.hpp"

namespace strata::lower {

/// What a kernel is, for FLOP accounting and reports.
enum class kernel_kind { gemm, attention, memory, optimizer };

/// The stream model that prices a memory-bound kernel (`device_profile`'s classes).
enum class stream_class { copy, layer_norm, softmax, elementwise, dropout };

/// A GEMM of a tensor-parallel linear that a collective of the same block can run beside
/// (`analytic::collectives_of`). Backward, of a column-parallel linear (QKV, MLP up and gate):
/// the input gradient's GEMM (dgrad, beside the sequence-parallel re-gather of the input) or the
/// weight gradient's (wgrad, beside the input gradient's all-reduce or reduce-scatter), as
/// Megatron's `LinearWithGradAccumulationAndAsyncCommunication` and Transformer Engine's bulk
/// overlaps run them. Under a pipelined overlap (`recipe::tp_comm_overlap`) also the forward
/// GEMMs, each beside the all-gather that feeds it (`in`: QKV, MLP up) or the reduce-scatter
/// that drains it (`out`: the attention projection, MLP down), and backward the row-parallel
/// linear's input gradient (`out`), beside the gather of its output gradient.
enum class tp_window : unsigned char {
  none,
  attention_dgrad,
  attention_wgrad,
  mlp_dgrad,
  mlp_wgrad,
  attention_in,
  mlp_in,
  attention_out,
  mlp_out
};

/// One kernel. GEMMs are C = A(m x k) B(k x n) (`traffic`: the bytes an implicit GEMM really
/// moves, 0 for its operands once); attention is flash (or PyTorch's memory-efficient kernel for
/// fp32) over `batch` x `heads` sequences of `seq` tokens and head size `dim`, its forward or
/// the rest of its training pass; memory-bound kernels move `bytes`. `times` identical kernels run
/// back to back (the experts on a rank).
struct kernel_op {
  std::string_view what;  ///< the module ("QKV", "MLP down")
  std::string_view part;  ///< which of its kernels ("dX", "weight cast"); empty: the main one
  kernel_kind kind = kernel_kind::memory;
  double m = 0, n = 0, k = 0, traffic = 0;  ///< GEMM
  stream_class stream = stream_class::copy;
  double bytes = 0;                               ///< memory-bound (and optimizer) bytes
  double batch = 0, heads = 0, seq = 0, dim = 0;  ///< attention
  bool backward = false;                          ///< attention: the backward part
  double times = 1;
  double host = 0;    ///< extra host time before it (a checkpointed block re-entered)
  bool sync = false;  ///< the host waits for the GPU after it (a `.cpu()` of its result)
  bool fp32 = false;  ///< a GEMM on fp32 inputs (TF32) whatever the compute type
  /// a GEMM with a dimension that is no multiple of 16 bytes' elements (an unpadded vocabulary
  /// such as GPT-2's 50257): cuBLAS cannot use its vectorized kernels
  bool misaligned = false;
  /// a kernel of the unfused attention core (Q K^T, softmax, dropout, P V): what selective
  /// recomputation runs again (Korthikanti et al. §4.2)
  bool attention_core = false;
  /// its output is cached by per-operator checkpointing (`parallel::saves_op_outputs`): the
  /// recomputation skips it
  bool op_saved = false;
  tp_window window = tp_window::none;  ///< the collective it can hide
  /// a 3 x 3 stride-1 convolution's pass, which cuDNN may run as Winograd transforms on the
  /// CUDA cores (`device_profile::winograd`); FLOPs are still counted as the direct convolution's
  winograd_pass winograd{};

  /// FLOPs as counted in reports: 2 m n k per GEMM; attention forward 2 b a s^2 d (causal),
  /// backward 2.5 x that.
  [[nodiscard]] constexpr double flops() const {
    if (kind == kernel_kind::gemm) return times * 2 * m * n * k;
    if (kind == kernel_kind::attention) {
      const double f = attention_model::forward_flops(batch, heads, seq, dim);
      return times * (backward ? 2.5 * f : f);
    }
    return 0;
  }
};

/// Which part of the step an operation belongs to.
enum class phase { forward, backward };

/// A blocking collective of a layer on the communicator of a parallel axis (priced by the
/// plan's placement of that axis).
enum class comm_axis { tensor, context, expert };
struct collective_op {
  std::string_view what;
  comm::collective op = comm::collective::all_reduce;
  comm_axis axis = comm_axis::tensor;
  double bytes = 0;  ///< the full buffer (ring attention: one block)
  phase when = phase::forward;
  double times = 1;  ///< back-to-back repetitions (ring attention's c - 1 steps)
};

/// What a tensor a layer keeps is, and how long it lives.
enum class keep_kind {
  activation,   ///< saved for backward: from the layer's forward to its backward
  weight_copy,  ///< a 16-bit weight copy autocast made, held until the layer's backward
  until_loss,   ///< alive until the forward ends (a cache, autocast's cache under checkpointing)
  /// held by the autograd graph rather than saved for backward (a custom autograd Function's
  /// `ctx` attribute, which the backward does not free): alive until the graph dies, which is
  /// in the next step's forward when the training loop still holds the logits
  /// (`frameworks::recipe::keep_logits`); also counted as an `activation` when the step uses it
  graph
};
struct saved_tensor {
  std::string_view what;
  double bytes = 0;
  keep_kind kind = keep_kind::activation;
};

/// Host issue and GPU execution of a kernel sequence without synchronization: the host spends
/// `host` seconds issuing, the GPU `gpu` seconds running, and `time` runs from an idle host and
/// GPU to the end of the last kernel. Kernel i issued at H_i (the host time up to it) ends at
/// max over j <= i of (H_j + the GPU time of kernels j..i), so time = max_j (H_j + G_{j..n}).
struct issue_run {
  double host = 0;
  double gpu = 0;
  double time = 0;
  /// This sequence, then `b`: C = max(C_a + G_b, H_a + C_b).
  [[nodiscard]] constexpr issue_run then(issue_run b) const {
    const double x = time + b.gpu, y = host + b.time;
    return {host + b.host, gpu + b.gpu, x > y ? x : y};
  }
  /// `r` copies back to back: the worst issue point lies in the first or the last copy, so
  /// C = C_1 + (r - 1) max(H, G).
  [[nodiscard]] constexpr issue_run repeat(double r) const {
    if (r <= 0) return {};
    return {r * host, r * gpu, time + (r - 1) * (host > gpu ? host : gpu)};
  }
};

/// The time of a kernel sequence issued by a host and run in order by a GPU, with host-device
/// synchronizations (a `.cpu()`, `.item()` or data-dependent shape: the host waits for the GPU).
/// Up to the first synchronization the sequence is `first`; after the last one, `last`; between
/// them `middle` seconds pass with host and GPU aligned at both ends. Sequences compose (`then`)
/// and repeat exactly, which lets the closed form time a whole step from one layer: a
/// launch-bound step takes its host time, a large one the sum of its kernels.
struct span {
  issue_run first{};
  double middle = 0;
  issue_run last{};
  bool synced = false;
  double gpu = 0;   ///< the kernels' time
  double host = 0;  ///< when the host has issued the last kernel
  double time = 0;  ///< when the last kernel ends

  [[nodiscard]] static constexpr span of(issue_run a) {
    return {a, 0, {}, false, a.gpu, a.host, a.time};
  }
  [[nodiscard]] static constexpr span kernel(double host, double gpu) {
    return of({host, gpu, host + gpu});
  }
  /// The host waits for every issued kernel to finish.
  [[nodiscard]] static constexpr span sync() { return {{}, 0, {}, true, 0, 0, 0}; }

  [[nodiscard]] static constexpr span made(issue_run f, double m, issue_run l, bool synced,
                                           double gpu) {
    if (!synced) return of(f);
    return {f, m, l, true, gpu, f.time + m + l.host, f.time + m + l.time};
  }
  [[nodiscard]] constexpr span then(span b) const {
    const double g = gpu + b.gpu;
    if (!synced && !b.synced) return of(first.then(b.first));
    if (synced && !b.synced) return made(first, middle, last.then(b.first), true, g);
    if (!synced) return made(first.then(b.first), b.middle, b.last, true, g);
    return made(first, middle + last.then(b.first).time + b.middle, b.last, true, g);
  }
  [[nodiscard]] constexpr span repeat(double r) const {
    if (r <= 0) return {};
    if (!synced) return of(first.repeat(r));
    return made(first, r * middle + (r - 1) * last.then(first).time, last, true, r * gpu);
  }
  /// Time the GPU waits for the host: 0 when the kernels queue up faster than they run.
  [[nodiscard]] constexpr double exposed_host() const { return time - gpu; }
};

/// A GEMM whose leading dimension is no multiple of 16 bytes (GPT-2's unpadded vocabulary of
/// 50257) cannot use the TMA-fed Hopper kernels: cuBLAS falls back to CUTLASS's SM75 `s1688gemm
/// ... align1` kernels, which load one element at a time. Measured on the H100 (this project's
/// traces, `test/data/h100_hf_kernels.csv`): GPT-2's head, T = 8192, V = 50257, h = 768 (0.63
/// TFLOP each), took 6.64 ms forward (128x128 tiles, 95 TFLOP/s), 4.26 and 4.52 ms for dX and dW
/// (256-wide tiles, 148 and 140 TFLOP/s), a fifth of the aligned kernels' rate and 4-6x their
/// time. Priced at this fraction of the dense peak; never faster than the aligned shape.
inline constexpr double misaligned_gemm_peak_fraction = 0.12;

/// Whether a GEMM dimension of `elements` is a multiple of 16 bytes (8 16-bit or 4 fp32 ones).
[[nodiscard]] constexpr bool aligned_dimension(double elements, double element_bytes) {
  const double per16 = 16 / element_bytes;
  if (!(elements < 9e15)) return true;  // beyond exact integers: nothing to say
  return static_cast<long long>(elements) % static_cast<long long>(per16) == 0;
}

namespace detail {
/// `t`, or the Winograd form of convolution pass `op` where the profile runs it and it is
/// faster. Winograd runs on the CUDA cores: it competes with GEMMs there, never with tensor
/// cores. Out of line: the transformer GEMMs never take it, and inlined it slows their pricing.
[[gnu::noinline]] constexpr double or_winograd(double t, const kernel_op& op,
                                               const device_profile& p, const gemm_model& gm) {
  if (!p.winograd || gm.peak > p.dev.fp32.count()) return t;
  const double w = winograd_time(gm, p.copy, op.winograd, op.traffic);
  return w < t ? w : t;
}
}  // namespace detail

/// Seconds kernel `op` runs on a device, with `p` already `queued()`; `g` is the GEMM model of the
/// compute type (fp8 GEMMs: the bf16 model at the fp8 peak). Inlined always: see `emit` in
/// `lower/transformer.hpp`. `Convolutions` = false for a lowering that emits none (the
/// transformer's closed form): its GEMMs then skip the Winograd check, which inlined costs the
/// GPT-3 evaluation 2 % of its instructions.
template <bool Convolutions = true>
[[nodiscard, gnu::always_inline]] constexpr double gpu_time(const kernel_op& op,
                                                            const device_profile& p,
                                                            const gemm_model& g,
                                                            bool fp32_attention) {
  switch (op.kind) {
    case kernel_kind::gemm: {
      const gemm_model& gm = op.fp32 ? p.fp32 : g;
      double t = op.traffic > 0 ? gm.time(op.m, op.n, op.k, op.traffic) : gm.time(op.m, op.n, op.k);
      if constexpr (Convolutions)
        if (op.winograd.tiles4 > 0) [[unlikely]]
          t = detail::or_winograd(t, op, p, gm);
      if (!op.misaligned) return op.times * t;
      const double fallback = 2 * op.m * op.n * op.k / (misaligned_gemm_peak_fraction * gm.peak);
      return op.times * (fallback > t ? fallback : t);
    }
    case kernel_kind::attention: {
      const attention_model& a = fp32_attention ? p.attention_fp32 : p.attention;
      if (!op.backward) return op.times * a.forward(op.batch, op.heads, op.seq, op.dim);
      const double t = a.forward_backward(op.batch, op.heads, op.seq, op.dim) -
                       a.forward(op.batch, op.heads, op.seq, op.dim);
      return op.times * (t > 0 ? t : 0.0);
    }
    case kernel_kind::memory:
    case kernel_kind::optimizer:
      switch (op.stream) {
        case stream_class::copy:
          return op.times * p.copy.time(op.bytes);
        case stream_class::layer_norm:
          return op.times * p.layer_norm.time(op.bytes);
        case stream_class::softmax:
          return op.times * p.softmax.time(op.bytes);
        case stream_class::elementwise:
          return op.times * p.gelu.time(op.bytes);
        case stream_class::dropout:
          return op.times * p.dropout.time(op.bytes);
      }
  }
  return 0;
}

/// What the lowering hands its operations to (`lower::layer`, `embedding`, `head`,
/// `layer_collectives`): a type with at least one of `kernel(kernel_op)`,
/// `collective(collective_op)` and `save(saved_tensor)`; the lowering calls those it has (and,
/// in a checkpointed layer, `would_save(saved_tensor)` for what the layer would keep without
/// checkpointing, when the visitor has it). A visitor with none of the three (a misspelt
/// `kernels`) would see nothing, so it is refused by name.
template <class V>
concept LoweringVisitor = requires(V& v, const kernel_op& k) {
  v.kernel(k);
}
|| requires(V& v, const collective_op& c) { v.collective(c); }
|| requires(V& v, const saved_tensor& t) { v.save(t); };

}  // namespace strata::lower
