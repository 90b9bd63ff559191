#pragma once
/// @file analytic/step.hpp
/// @brief Single-GPU training steps (GPT-2-style models, torchvision CNNs) lowered to kernels,
/// timed with a device profile (`hardware/kernels.hpp`, including the framework's dispatch costs)
/// and their memory between steps and at the peak (validated in test/validation/h100_steps.cpp).
///
/// The model: learned positions, pre-LayerNorm blocks with biases, a tanh-GELU MLP of 4h, tied
/// embeddings, vocabulary V (50304 by default). Per block forward: LN, QKV GEMM (T x 3h x h),
/// causal flash attention, projection GEMM (T x h x h), dropout + residual add, LN, fc GEMM
/// (T x 4h x h), GELU, projection GEMM (T x h x 4h), dropout + residual add; T = b s tokens.
/// Backward: two GEMMs per forward GEMM (dX: T x K x N, dW: K x N x T), flash attention's
/// backward, and each memory-bound kernel's backward at twice its bytes. Then the final LN, the
/// tied output projection (T x V x h, two GEMMs back), cross-entropy on fp32 logits (read,
/// write, softmax and its gradient: four fp32 passes over T x V) and the fused AdamW step (reads
/// weight, gradient and two moments, writes three: 28 B per fp32 parameter). Under bf16 autocast
/// each linear layer's weight is cast to bf16 before its forward and its gradient back to fp32
/// after its backward, and the layer-norm outputs are cast too (6 B per element each). Full
/// activation checkpointing repeats every block's forward during backward. `gpt2_memory` gives the
/// memory between steps and the peak during one, for the framework behaviour it documents.
/// @code
/// const auto p = strata::datasheet_profile(strata::presets::h100_sxm5_80gb, 132);
/// const auto step = strata::analytic::gpt2_step({.layers = 12, .hidden = 768, .heads = 12,
///                                               .sequence = 1024, .batch = 8}, p);
/// @endcode

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/analytic/transformer.hpp"
#include "strata/error.hpp"
#include "strata/frameworks/pytorch_eager.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/lower/cnn.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/zoo.hpp"
#include "strata/parallel/cnn/context.hpp"

namespace strata::analytic {

using kernel_kind = lower::kernel_kind;

/// One kernel of the step.
struct kernel {
  std::string name;
  kernel_kind kind = kernel_kind::gemm;
  double flops = 0;   ///< counted FLOPs (GEMMs: 2MNK; attention: the causal half)
  double bytes = 0;   ///< bytes read and written
  double time = 0;    ///< seconds on the GPU with the profile
  double host = 0;    ///< seconds of host time to dispatch it (the profile's `dispatch`)
  bool sync = false;  ///< the host waits for it to finish before issuing the next
};

/// The host issues kernel i after spending host(i), the GPU runs it once issued and once kernel
/// i-1 is done (gpu(i) seconds), and the step ends with the last kernel (a synchronising step):
/// a launch-bound step takes its host time, a large one the sum of its kernels. After a kernel
/// with `sync(i)` the host waits for the GPU. (`lower::span` is the same rule in closed form.)
template <class Host, class Gpu, class Sync>
[[nodiscard]] double issue_and_run(std::size_t kernels, Host&& host, Gpu&& gpu, Sync&& sync) {
  double issued = 0, done = 0;
  for (std::size_t i = 0; i < kernels; ++i) {
    issued += host(i);
    done = (done > issued ? done : issued) + gpu(i);
    if (sync(i)) issued = done;
  }
  return done;
}
template <class Host, class Gpu>
[[nodiscard]] double issue_and_run(std::size_t kernels, Host&& host, Gpu&& gpu) {
  return issue_and_run(kernels, host, gpu, [](std::size_t) { return false; });
}

/// The kernels of a step and their time (`issue_and_run`).
struct step_estimate {
  std::vector<kernel> kernels;
  [[nodiscard]] double time() const {
    return issue_and_run(
        kernels.size(), [&](std::size_t i) { return kernels[i].host; },
        [&](std::size_t i) { return kernels[i].time; },
        [&](std::size_t i) { return kernels[i].sync; });
  }
  /// The kernels' time alone (what a profiler sums over the GPU stream).
  [[nodiscard]] double kernel_time() const {
    double t = 0;
    for (const auto& k : kernels) t += k.time;
    return t;
  }
  [[nodiscard]] double host_time() const {
    double t = 0;
    for (const auto& k : kernels) t += k.host;
    return t;
  }
  [[nodiscard]] double flops(kernel_kind kind) const {
    double f = 0;
    for (const auto& k : kernels)
      if (k.kind == kind) f += k.flops;
    return f;
  }
};

namespace detail {
/// Lists kernels priced with a queued profile: one entry per kernel, named by the prefix, the
/// module and the part; `extra_host` goes to the next kernel (re-entering a checkpointed block).
struct kernel_list {
  step_estimate& out;
  const device_profile& q;
  const gemm_model& g;
  bool fp32_attention;
  double per_kernel;
  std::string prefix{};
  double extra_host = 0;
  void kernel(const lower::kernel_op& k) {
    std::string name = prefix;
    name += k.what;
    if (!k.part.empty()) {
      name += ' ';
      name += k.part;
    }
    lower::kernel_op one = k;
    one.times = 1;
    const double t = lower::gpu_time(one, q, g, fp32_attention);
    for (double i = 0; i < k.times; ++i) {
      out.kernels.push_back({name, k.kind, one.flops(), one.bytes, t,
                             per_kernel + (i == 0 ? k.host : 0.0) + extra_host,
                             k.sync && i + 1 >= k.times});
      extra_host = 0;
    }
  }
};
}  // namespace detail

/// The kernels one GPU runs for a one-GPU transformer plan, in issue order, as `lower/` lowers
/// them and `analytic::evaluate` sums them: per micro-batch the embedding, each layer's forward,
/// the head's forward and backward, each layer's recomputation (checkpointing) and backward, the
/// embedding's backward; then the optimizer step. `step_estimate::time()` equals the plan's
/// `iteration_time`.
[[nodiscard]] inline step_estimate step_kernels(const transformer& m, const parallel::nd& s,
                                                const training& tr, const device_profile& profile) {
  s.check(m, tr, s.devices());
  if (s.devices() != 1) throw plan_error("a step lists the kernels of a one-GPU plan");
  const layer_compute lc = lower_layer(m, profile, tr, lower::shard_of(m, s, tr));
  const device_profile q = profile.queued().with_tf32(tr.tf32);
  const gemm_models gm = gemm_models_of(q, tr);
  const lower::shard x = lower::shard_of(m, s, tr);
  step_estimate out;
  detail::kernel_list v{out, q, gm.layers, tr.compute() == dtype::fp32, lc.per_kernel};
  detail::kernel_list head{out, q, gm.head, tr.compute() == dtype::fp32, lc.per_kernel};
  using lower::phase;
  auto block = [](int l, const char* what) {  // "block 3 backward " (appends: GCC 12's
    std::string p = "block ";                 // -Wrestrict misfires on "literal" + string)
    p += std::to_string(l);
    p += ' ';
    p += what;
    return p;
  };
  const int mb = s.micro_batches(tr);
  const transformer dense = m.first_dense();  // the dense first layers' (`dense_layers`)
  const auto layer_at = [&](int l) -> const transformer& { return l < m.dense_layers ? dense : m; };
  for (int micro = 0; micro < mb; ++micro) {
    v.prefix.clear();
    lower::embedding(m, x, tr, phase::forward, v);
    for (int l = 0; l < m.layers; ++l) {
      v.prefix = block(l, "");
      lower::layer(layer_at(l), x, tr, phase::forward, v);
    }
    v.prefix.clear();
    lower::head(m, x, tr, phase::forward, head);
    lower::head(m, x, tr, phase::backward, head);
    for (int l = m.layers - 1; l >= 0; --l) {
      if (s.recomputation == parallel::recompute::full) {
        v.extra_host = lc.checkpoint_host;
        v.prefix = block(l, "recompute ");
        lower::layer(layer_at(l), x, tr, phase::forward, v);
      }
      v.prefix = block(l, "backward ");
      lower::layer(layer_at(l), x, tr, phase::backward, v);
    }
    v.prefix.clear();
    lower::embedding(m, x, tr, phase::backward, v);
  }
  const double params = m.parameters();
  const lower::span opt =
      optimizer_span(profile, tr, lc, params, lower::parameter_tensors(m, tr.framework));
  std::string update(to_string(tr.transformer_optimizer()));
  update += " step";
  out.kernels.push_back(
      {update, kernel_kind::optimizer, 0, tr.update_bytes() * params, opt.gpu, opt.host, false});
  return out;
}

// ---- GPT-2 steps (the measured H100 steps' model) ----------------------------------------------

struct gpt2_config {
  int layers = 12;
  int hidden = 768;
  int heads = 12;
  int sequence = 1024;
  int batch = 8;  ///< micro-batch b
  int vocabulary = 50304;
  dtype precision = dtype::bf16;  ///< bf16: autocast GEMMs and attention; fp32: TF32 GEMMs
  bool checkpoint = false;        ///< full activation checkpointing
  /// the training loop keeps the logits referenced through the backward pass (nanoGPT's forward
  /// returns them); false: only the loss leaves the model
  bool keep_logits = false;
};

/// The GPT-2-style model of the measured steps: learned positions, pre-LayerNorm blocks with
/// biases, a tanh-GELU MLP of 4h, tied embeddings, no dropout.
[[nodiscard]] constexpr transformer gpt2_model(const gpt2_config& c) {
  transformer m;
  m.name = "gpt2";
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.vocabulary = c.vocabulary;
  m.sequence = c.sequence;
  m.dropout = false;
  return m;
}
/// nanoGPT's loop in PyTorch eager (`frameworks::pytorch_eager`), AdamW, one micro-batch.
[[nodiscard]] constexpr training gpt2_training(const gpt2_config& c) {
  training t;
  t.batch = c.batch;
  t.sequence = c.sequence;
  t.precision = c.precision == dtype::fp32 ? precision_mode::fp32 : precision_mode::bf16_mixed;
  t.optim = optimizer::adam;
  t.framework = frameworks::pytorch_eager;
  t.framework.keep_logits = c.keep_logits;
  return t;
}
[[nodiscard]] constexpr parallel::nd gpt2_strategy(const gpt2_config& c) {
  parallel::nd s;
  s.micro_batch = c.batch;
  s.recomputation = c.checkpoint ? parallel::recompute::full : parallel::recompute::none;
  return s;
}

/// Parameters of the GPT-2 model of `gpt2_step` (weights, biases, LN, tied embedding, positions).
[[nodiscard]] constexpr double gpt2_parameters(const gpt2_config& c) {
  return gpt2_model(c).parameters();
}

namespace detail {
inline void check_gpt2(const gpt2_config& c) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.sequence < 1 || c.batch < 1 ||
      c.vocabulary < 1)
    throw plan_error(
        "GPT-2 step: layers, hidden, heads, sequence, batch and vocabulary must be >= 1");
  if (c.hidden % c.heads != 0) throw plan_error("GPT-2 step: heads must divide the hidden size");
}
}  // namespace detail

/// A GPT-2 step: the one-GPU plan of `gpt2_model`, `gpt2_training` and `gpt2_strategy`.
[[nodiscard]] inline step_estimate gpt2_step(const gpt2_config& c, const device_profile& profile) {
  detail::check_gpt2(c);
  return step_kernels(gpt2_model(c), gpt2_strategy(c), gpt2_training(c), profile);
}

/// cuBLAS and cuBLASLt workspaces on Hopper (32 MiB each), held by the caching allocator.
inline constexpr double blas_workspace = 64.0 * 1024 * 1024;

/// Memory of a single-GPU step between steps and at its peak, with the terms of the loss moment.
struct step_memory {
  double between_steps = 0;  ///< allocated after optimizer.step() and zero_grad()
  double peak = 0;           ///< max_memory_allocated during the step
  // the terms
  double parameters = 0, optimizer_states = 0, gradients = 0, weight_casts = 0, activations = 0,
         logits = 0, batch = 0, workspace = blas_workspace;
};

/// The memory of a one-GPU transformer plan (`analytic::stage_memory`) as a step's figures.
[[nodiscard]] constexpr step_memory step_memory_of(const transformer& m, const parallel::nd& s,
                                                   const training& tr) {
  const memory_terms x = stage_terms(m, s, tr, 0);
  step_memory out;
  out.parameters = x.states.weights.count();
  out.optimizer_states = x.states.optimizer_states.count();
  out.gradients = x.gradients;
  out.batch = x.states.batch.count();
  out.workspace = x.states.workspace.count();
  out.weight_casts = x.layers * x.in_flight * x.casts + x.head_casts;
  out.activations = x.layers * x.in_flight * x.saved + x.embedding + x.head;
  out.logits = x.logits + x.held_logits;
  out.between_steps = x.states.between_steps.count();
  out.peak = stage_memory(m, s, tr, 0).total().count();
  return out;
}

/// Memory of a GPT-2 training step in PyTorch eager (`frameworks::pytorch_eager` says what it
/// keeps): fp32 parameters, AdamW moments, the saved tensors, autocast's weight copies, the loss's
/// fp32 logits, the batch and the BLAS workspace.
[[nodiscard]] inline step_memory gpt2_memory(const gpt2_config& c) {
  detail::check_gpt2(c);
  return step_memory_of(gpt2_model(c), gpt2_strategy(c), gpt2_training(c));
}

/// A CNN training step (torchvision ResNet, VGG) lowered to kernels: convolutions as implicit
/// GEMMs (forward N Ho Wo x F x C k^2; backward data N Ho Wo x C x F k^2, skipped for the input
/// layer; backward weights C k^2 x F x N Ho Wo), fully-connected layers likewise, batch norm,
/// ReLU, residual adds and pooling as memory-bound kernels (backward at twice the bytes), and
/// SGD with momentum as five fp32 passes over the parameters (20 B each).
struct cnn_config {
  int batch = 32;
  dtype precision = dtype::bf16;  ///< bf16: autocast; fp32: TF32 convolutions
};

namespace detail {
inline void check_cnn(std::span<const layer> layers, int batch) {
  if (batch < 1) throw plan_error("CNN step: the batch must be at least 1");
  if (layers.empty()) throw plan_error("CNN step: the model has no layers");
}
}  // namespace detail

/// A CNN training step in PyTorch eager: `lower::cnn_layer`'s kernels forward, the
/// cross-entropy (four fp32 passes over the logits), the kernels backward, and SGD with momentum
/// as five fp32 passes over the parameters (20 B each), issued per parameter tensor.
[[nodiscard]] inline step_estimate cnn_step(std::span<const layer> layers, const cnn_config& c,
                                            const device_profile& profile) {
  detail::check_cnn(layers, c.batch);
  step_estimate out;
  const device_profile q = profile.queued();
  const bool autocast = c.precision != dtype::fp32;
  const gemm_model& g = q.gemm(c.precision);
  detail::kernel_list v{out, q, g, false, q.dispatch.per_kernel};
  const double N = c.batch;
  double params = 0, tensors = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    v.prefix = std::to_string(i);
    v.prefix += ' ';
    lower::cnn_layer(layers, i, N, autocast, lower::phase::forward, v);
    const layer& l = layers[i];
    params += l.params;
    if (l.kind == layer_kind::conv || l.kind == layer_kind::linear) {
      const bool bias = l.kind == layer_kind::linear ? l.params > l.in.elements() * l.out.c
                                                     : l.params > l.in.c * l.window() * l.out.c;
      tensors += bias ? 2 : 1;
    } else if (l.kind == layer_kind::norm) {
      tensors += 2;  // scale and shift
    }
  }
  v.prefix.clear();
  lower::kernel_op ce{.what = "cross-entropy", .part = {}, .kind = kernel_kind::memory};
  ce.stream = lower::stream_class::softmax;
  ce.bytes = 4 * N * layers.back().y() * 4;
  v.kernel(ce);
  for (std::size_t i = layers.size(); i-- > 0;) {
    v.prefix = std::to_string(i);
    v.prefix += " backward ";
    lower::cnn_layer(layers, i, N, autocast, lower::phase::backward, v);
  }
  out.kernels.push_back({"SGD with momentum", kernel_kind::optimizer, 0, 20 * params,
                         q.copy.time(20 * params), tensors * q.dispatch.per_tensor, false});
  return out;
}

/// Memory of a CNN step in PyTorch eager: `lower::cnn_layer`'s kept tensors (and autocast's weight
/// copies), fp32 parameters, momentum buffers and gradients, the fp32 image batch, int64 labels and
/// batch norm's running statistics, the loss's fp32 logits (three passes' worth at its peak);
/// cuDNN workspaces are not counted.
[[nodiscard]] inline step_memory cnn_memory(std::span<const layer> layers, const cnn_config& c) {
  detail::check_cnn(layers, c.batch);
  const bool bf16 = c.precision != dtype::fp32;
  const double N = c.batch;
  double P = 0, buffers = 0, saved = 0, casts = 0;
  struct keeper {
    double &acts, &copies;
    void save(const lower::saved_tensor& t) {
      (t.kind == lower::keep_kind::weight_copy ? copies : acts) += t.bytes;
    }
  } v{saved, casts};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    lower::cnn_layer(layers, i, N, bf16, lower::phase::forward, v);
    P += layers[i].params;
    if (layers[i].kind == layer_kind::norm) buffers += 2.0 * layers[i].in.c * 4;
  }
  step_memory m;
  m.parameters = 4 * P;
  m.optimizer_states = 4 * P;  // momentum buffers
  m.gradients = 4 * P;
  m.batch = N * layers.front().x() * 4 + N * 8 + buffers;
  m.weight_casts = casts;
  m.activations = saved;
  m.logits = 3 * N * layers.back().y() * 4;
  const double fixed = m.parameters + m.optimizer_states + m.batch + m.workspace;
  m.between_steps = fixed;
  m.peak = std::max(fixed + m.weight_casts + m.activations + m.logits, fixed + m.gradients);
  return m;
}

/// ParaDL's per-layer compute times (FW_l and BW_l per sample, WU_l per iteration) from the
/// kernels `lower::cnn_layer` gives for a micro-batch of `batch` samples: pass them as the
/// profiled times of `analytic::evaluate` and ParaDL's strategies run on the same lowering as the
/// single-GPU step (the image cast rides with the first layer, the loss with the last, the
/// optimizer's SGD with momentum is spread by parameters).
[[nodiscard]] inline std::vector<layer_time> cnn_layer_times(std::span<const layer> layers,
                                                             const cnn_config& c,
                                                             const device_profile& profile) {
  detail::check_cnn(layers, c.batch);
  const device_profile q = profile.queued();
  const gemm_model& g = q.gemm(c.precision);
  struct timer {
    const device_profile& q;
    const gemm_model& g;
    double t = 0;
    void kernel(const lower::kernel_op& k) { t += lower::gpu_time(k, q, g, false); }
  };
  const double N = c.batch;
  std::vector<layer_time> out;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    timer f{q, g}, b{q, g};
    lower::cnn_layer(layers, i, N, c.precision != dtype::fp32, lower::phase::forward, f);
    lower::cnn_layer(layers, i, N, c.precision != dtype::fp32, lower::phase::backward, b);
    if (i + 1 == layers.size()) f.t += q.softmax.time(4 * N * layers.back().y() * 4);
    out.push_back(
        {seconds{f.t / N}, seconds{b.t / N}, seconds{q.copy.time(20 * layers[i].params)}});
  }
  return out;
}

/// The step of a model by name: "gpt2" with `c`'s dimensions, "resnet50" or "vgg16" with its
/// batch and precision (the models of the measured steps, `test/data/h100_steps_*.csv`).
[[nodiscard]] inline step_estimate named_step(std::string_view model, const gpt2_config& c,
                                              const device_profile& profile) {
  if (model == "gpt2") return gpt2_step(c, profile);
  const cnn_config cc{c.batch, c.precision};
  if (model == "resnet50") return cnn_step(zoo::resnet50().view(), cc, profile);
  if (model == "vgg16") return cnn_step(zoo::vgg16().view(), cc, profile);
  throw plan_error("a step's model must be gpt2, resnet50 or vgg16");
}
[[nodiscard]] inline step_memory named_step_memory(std::string_view model, const gpt2_config& c) {
  if (model == "gpt2") return gpt2_memory(c);
  const cnn_config cc{c.batch, c.precision};
  if (model == "resnet50") return cnn_memory(zoo::resnet50().view(), cc);
  if (model == "vgg16") return cnn_memory(zoo::vgg16().view(), cc);
  throw plan_error("a step's model must be gpt2, resnet50 or vgg16");
}

}  // namespace strata::analytic
