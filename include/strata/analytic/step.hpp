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
#include <vector>

#include "strata/error.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/model/layer.hpp"

namespace strata::analytic {

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

enum class kernel_kind { gemm, attention, memory, optimizer };

/// One kernel of the step.
struct kernel {
  std::string name;
  kernel_kind kind = kernel_kind::gemm;
  double flops = 0;  ///< counted FLOPs (GEMMs: 2MNK; attention: the causal half)
  double bytes = 0;  ///< bytes read and written
  double time = 0;   ///< seconds on the GPU with the profile
  double host = 0;   ///< seconds of host time to dispatch it (the profile's `dispatch`)
};

/// The host issues kernel i after spending host(i), the GPU runs it once issued and once kernel
/// i-1 is done (gpu(i) seconds), and the step ends with the last kernel (a synchronising step):
/// a launch-bound step takes its host time, a large one the sum of its kernels.
template <class Host, class Gpu>
[[nodiscard]] double issue_and_run(std::size_t kernels, Host&& host, Gpu&& gpu) {
  double issued = 0, done = 0;
  for (std::size_t i = 0; i < kernels; ++i) {
    issued += host(i);
    done = (done > issued ? done : issued) + gpu(i);
  }
  return done;
}

/// The kernels of a step and their time (`issue_and_run`).
struct step_estimate {
  std::vector<kernel> kernels;
  [[nodiscard]] double time() const {
    return issue_and_run(
        kernels.size(), [&](std::size_t i) { return kernels[i].host; },
        [&](std::size_t i) { return kernels[i].time; });
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

/// Parameters of the GPT-2 model of `gpt2_step` (weights, biases, LN, tied embedding, positions).
[[nodiscard]] constexpr double gpt2_parameters(const gpt2_config& c) {
  const double h = c.hidden, l = c.layers;
  return 12.0 * l * h * h + 13.0 * l * h + (static_cast<double>(c.vocabulary) + c.sequence) * h +
         2 * h;
}

[[nodiscard]] inline step_estimate gpt2_step(const gpt2_config& c, const device_profile& profile) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.sequence < 1 || c.batch < 1 ||
      c.vocabulary < 1)
    throw plan_error(
        "GPT-2 step: layers, hidden, heads, sequence, batch and vocabulary must be >= 1");
  if (c.hidden % c.heads != 0) throw plan_error("GPT-2 step: heads must divide the hidden size");
  step_estimate out;
  const device_profile p = profile.queued();
  const double dispatch = p.dispatch.per_kernel;
  const double T = static_cast<double>(c.batch) * c.sequence, h = c.hidden, V = c.vocabulary;
  const double act = c.precision == dtype::fp32 ? 4.0 : 2.0;  // activation bytes per element
  const gemm_model& g = p.gemm(c.precision);
  auto gemm = [&](const std::string& name, double m, double n, double k) {
    out.kernels.push_back({name, kernel_kind::gemm, 2 * m * n * k, 0, g.time(m, n, k), dispatch});
  };
  auto memory = [&](const std::string& name, const stream_model& s, double bytes) {
    out.kernels.push_back({name, kernel_kind::memory, 0, bytes, s.time(bytes), dispatch});
  };
  // Autocast casts a linear layer's fp32 weight and bias to bf16 before its forward GEMM, and the
  // bf16 weight gradient back to fp32 after the backward (6 B per parameter each way).
  const bool autocast = c.precision != dtype::fp32;
  // forward GEMM and its two backward GEMMs
  auto gemm_fb = [&](const std::string& name, double m, double n, double k, bool backward) {
    if (!backward) {
      if (autocast) memory(name + " weight cast", p.copy, 6 * (n * k + n));
      gemm(name, m, n, k);
      return;
    }
    gemm(name + " dX", m, k, n);
    gemm(name + " dW", k, n, m);
    if (autocast) memory(name + " gradient to fp32", p.copy, 6 * (n * k + n));
  };
  // ... and casts the fp32 layer-norm output to bf16 (its backward casts the gradient back)
  auto norm_cast = [&](const std::string& name) {
    if (autocast) memory(name + " cast", p.copy, 6 * T * h);
  };
  const double dh = h / c.heads, s = c.sequence;
  // fp32 inputs run PyTorch's memory-efficient attention (no tensor cores), 16-bit ones flash
  const attention_model& att = c.precision == dtype::fp32 ? p.attention_fp32 : p.attention;
  auto block = [&](int l, bool backward) {
    const std::string b = "block " + std::to_string(l) + (backward ? " backward " : " ");
    const double k = backward ? 2 : 1;  // backward memory kernels move twice the bytes
    memory(b + "layer norm 1", p.layer_norm, k * 2 * T * h * act);
    norm_cast(b + "layer norm 1");
    gemm_fb(b + "qkv", T, 3 * h, h, backward);
    if (!backward) {
      const double f = attention_model::forward_flops(static_cast<double>(c.batch), c.heads, s, dh);
      out.kernels.push_back({b + "attention", kernel_kind::attention, f, 0,
                             att.forward(static_cast<double>(c.batch), c.heads, s, dh), dispatch});
    } else {
      const double f = attention_model::forward_flops(static_cast<double>(c.batch), c.heads, s, dh);
      const double t = att.forward_backward(static_cast<double>(c.batch), c.heads, s, dh) -
                       att.forward(static_cast<double>(c.batch), c.heads, s, dh);
      out.kernels.push_back(
          {b + "attention", kernel_kind::attention, 2.5 * f, 0, t > 0 ? t : 0, dispatch});
    }
    gemm_fb(b + "attention projection", T, h, h, backward);
    memory(b + "dropout + residual 1", p.dropout, k * 3 * T * h * act);
    memory(b + "layer norm 2", p.layer_norm, k * 2 * T * h * act);
    norm_cast(b + "layer norm 2");
    gemm_fb(b + "fc", T, 4 * h, h, backward);
    memory(b + "gelu", p.gelu, k * 2 * T * 4 * h * act);
    gemm_fb(b + "fc projection", T, h, 4 * h, backward);
    memory(b + "dropout + residual 2", p.dropout, k * 3 * T * h * act);
  };
  memory("embedding", p.copy, 2 * T * h * act);
  for (int l = 0; l < c.layers; ++l) block(l, false);
  memory("final layer norm", p.layer_norm, 2 * T * h * act);
  norm_cast("final layer norm");
  if (autocast) memory("output projection weight cast", p.copy, 6 * V * h);
  gemm("output projection", T, V, h);
  memory("cross-entropy (fp32 logits)", p.softmax, 4 * T * V * 4);
  gemm("output projection dX", T, h, V);
  gemm("output projection dW", h, V, T);
  if (autocast) memory("output projection gradient to fp32", p.copy, 6 * V * h);
  memory("final layer norm backward", p.layer_norm, 4 * T * h * act);
  for (int l = c.layers - 1; l >= 0; --l) {
    if (c.checkpoint) {  // recompute the block's forward
      const std::size_t first = out.kernels.size();
      block(l, false);
      out.kernels[first].host += p.dispatch.per_checkpoint;
    }
    block(l, true);
  }
  memory("embedding backward", p.copy, 2 * T * h * act);
  const double params = gpt2_parameters(c);
  const double tensors = 12.0 * c.layers + 4;  // per block 4 weights, 4 biases, 2 LN x 2
  out.kernels.push_back({"AdamW (fused)", kernel_kind::optimizer, 0, 28 * params,
                         p.copy.time(28 * params), tensors * p.dispatch.per_tensor});
  return out;
}

/// Memory of a GPT-2 training step in PyTorch eager, the framework behaviour strata assumes
/// (a nanoGPT-style loop): fp32 parameters; `torch.autocast(bfloat16)` for bf16 (GEMMs and
/// attention in bf16, layer norm and the residual stream in fp32, linear weights cast to bf16 once
/// per forward and held by autograd until their backward); `scaled_dot_product_attention` (flash,
/// or memory-efficient in fp32: no s^2 buffer); dropout 0; cross-entropy on fp32 logits; fused
/// AdamW; `zero_grad(set_to_none=True)`; the batch (inputs and targets, int64) on the GPU; the
/// cuBLAS and cuBLASLt workspaces (32 MiB each on Hopper) taken from the caching allocator.
inline constexpr double blas_workspace = 64.0 * 1024 * 1024;

struct step_memory {
  double between_steps = 0;  ///< allocated after optimizer.step() and zero_grad()
  double peak = 0;           ///< max_memory_allocated during the step
  // the terms
  double parameters = 0, optimizer_states = 0, gradients = 0, weight_casts = 0, activations = 0,
         logits = 0, batch = 0, workspace = blas_workspace;
};

[[nodiscard]] inline step_memory gpt2_memory(const gpt2_config& c) {
  if (c.layers < 1 || c.hidden < 1 || c.sequence < 1 || c.batch < 1 || c.vocabulary < 1)
    throw plan_error("GPT-2 memory: layers, hidden, sequence, batch and vocabulary must be >= 1");
  const bool bf16 = c.precision != dtype::fp32;
  const double T = static_cast<double>(c.batch) * c.sequence, h = c.hidden, V = c.vocabulary,
               l = c.layers;
  const double P = gpt2_parameters(c);
  step_memory m;
  m.parameters = 4 * P;
  m.optimizer_states = 8 * P;  // AdamW exp_avg and exp_avg_sq, fp32
  m.gradients = 4 * P;
  m.batch = 2 * 8 * T;  // inputs and targets, int64
  // Saved for backward per block, in bytes per token and hidden unit:
  // bf16: LN1 input (fp32) 4, QKV input (bf16 cast) 2, QKV output (q, k, v views) 6, attention
  //   output 2 and its contiguous copy 2, LN2 input 4, fc input 2, GELU input 8, fc-projection
  //   input 8: 38.
  // fp32: 4 + 4 + 12 + 4 + 4 + 4 + 4 + 16 + 16 = 68.
  const double per_block = (bf16 ? 38.0 : 68.0) * T * h;
  const double block_input = 4 * T * h;  // what a checkpointed block keeps (fp32 residual)
  const double cast = bf16 ? 2.0 : 0.0;
  const double block_casts = cast * (12.0 * h * h + 9.0 * h);  // a block's linear weights in bf16
  const double output_cast = cast * V * h;                     // the tied output projection
  // Alive at the end of the forward pass: every block's saved tensors (only its input under
  // checkpointing), the casts autograd holds, the final LN input and the output layer's input.
  const double blocks = c.checkpoint ? l * block_input : l * per_block;
  const double casts = (c.checkpoint ? 0.0 : l * block_casts) + output_cast;
  const double head = 4 * T * h + (bf16 ? 2 : 4) * T * h;
  m.activations = blocks + head;
  m.weight_casts = casts;
  // Logits: the loss up-casts the model's output to fp32 (a copy under autocast, freed once
  // log-softmax has run) and log-softmax keeps its fp32 output for backward (forward: 8 B per
  // logit at most); its backward holds that output, a dense fp32 gradient of it and the
  // gradient of the logits: 12 B per logit, plus the logits themselves when the loop keeps them.
  // Measured (h100_steps_gpt2.csv, GPT-2 124M, checkpointed, micro-batch 16): the peak less the
  // memory between steps is 12.9 logits' worth of bytes in bf16 and fp32 alike.
  const double held = c.keep_logits ? (bf16 ? 2 : 4) * T * V : 0.0, fp32 = 4 * T * V;
  m.logits = held + 3 * fp32;
  const double fixed = m.parameters + m.optimizer_states + m.batch + m.workspace;
  m.between_steps = fixed;
  // Candidates for the peak: the loss (everything saved is still alive); the last block's
  // backward, when every other gradient exists and its own saved tensors (recomputed, under
  // checkpointing) are alive; the optimizer step.
  const double at_loss = fixed + casts + m.activations + m.logits;
  const double block_params = 12.0 * h * h + 13.0 * h;
  const double last_block = fixed + m.gradients - 4 * block_params + held + per_block + block_casts;
  const double at_update = fixed + m.gradients;
  m.peak = std::max({at_loss, last_block, at_update});
  return m;
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

[[nodiscard]] inline step_estimate cnn_step(std::span<const layer> layers, const cnn_config& c,
                                            const device_profile& profile) {
  if (c.batch < 1) throw plan_error("CNN step: the batch must be at least 1");
  if (layers.empty()) throw plan_error("CNN step: the model has no layers");
  step_estimate out;
  const device_profile p = profile.queued();
  const double dispatch = p.dispatch.per_kernel;
  const double N = c.batch, act = c.precision == dtype::fp32 ? 4.0 : 2.0;
  const bool autocast = c.precision != dtype::fp32;
  const gemm_model& g = p.gemm(c.precision);
  auto memory = [&](const std::string& name, const stream_model& s, double bytes) {
    out.kernels.push_back({name, kernel_kind::memory, 0, bytes, s.time(bytes), dispatch});
  };
  double params = 0, tensors = 0;
  auto lower = [&](std::size_t i, bool backward) {
    const layer& l = layers[i];
    const std::string name =
        std::string(to_string(l.kind)) + " " + std::to_string(i) + (backward ? " backward" : "");
    const double k = backward ? 2 : 1;
    switch (l.kind) {
      case layer_kind::conv:
      case layer_kind::linear: {
        const double window =
            l.kind == layer_kind::conv
                ? static_cast<double>(l.kernel) * l.kernel * (l.in.d > 1 ? l.kernel : 1)
                : l.in.elements();
        const double positions = l.kind == layer_kind::conv ? N * l.out.spatial() : N;
        const double ck = l.kind == layer_kind::conv ? l.in.c * window : window;
        const double weights = ck * l.out.c;
        const bool bias = l.params > weights;
        // the tensors an implicit GEMM moves: input, weights, output, each once
        const double traffic = (N * l.x() + weights + N * l.y()) * act;
        auto gemm = [&](const std::string& what, double m, double n, double kk) {
          out.kernels.push_back({what, kernel_kind::gemm, 2 * m * n * kk, traffic,
                                 g.time(m, n, kk, traffic), dispatch});
        };
        if (!backward) {
          tensors += bias ? 2 : 1;
          // autocast: the image and the fp32 weights cast to bf16 (6 B per element)
          if (autocast && i == 0) memory("input cast", p.copy, 6 * N * l.x());
          if (autocast) memory(name + " weight cast", p.copy, 6 * l.params);
          gemm(name, positions, l.out.c, ck);
          // PyTorch adds a convolution's bias in a separate pass over the output
          if (bias && l.kind == layer_kind::conv)
            memory(name + " bias", p.gelu, 2 * N * l.y() * act);
        } else {
          // the data gradient is a convolution of dY with the flipped filters: C outputs per
          // position, a reduction over F k^2 (a linear layer: in features over out features)
          if (i > 0) {
            if (l.kind == layer_kind::conv)
              gemm(name + " data", positions, l.in.c, window * l.out.c);
            else
              gemm(name + " data", positions, ck, l.out.c);
          }
          gemm(name + " weights", ck, l.out.c, positions);
          if (autocast) memory(name + " gradient to fp32", p.copy, 6 * l.params);
          if (bias) memory(name + " bias", p.softmax, N * l.y() * act);  // a reduction of dY
        }
        break;
      }
      case layer_kind::norm:
        if (!backward) tensors += 2;  // scale and shift
        memory(name, p.layer_norm, k * 3 * N * l.x() * act);
        break;
      case layer_kind::pool:
        if (l.kernel > 1) {
          // max pooling also writes (forward) or reads (backward) int64 indices, and its
          // backward first zero-fills the input gradient
          const double moved = N * (l.x() + l.y()) * act + N * l.y() * 8;
          memory(name, p.gelu, backward ? moved + N * l.x() * act : moved);
        } else {
          memory(name, p.gelu, k * N * (l.x() + l.y()) * act);
        }
        break;
      default:
        memory(name, p.gelu, k * 2 * N * l.y() * act);
        break;
    }
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    lower(i, false);
    params += layers[i].params;
  }
  memory("cross-entropy", p.softmax, 4 * N * layers.back().y() * 4);
  for (std::size_t i = layers.size(); i-- > 0;) lower(i, true);
  out.kernels.push_back({"SGD with momentum", kernel_kind::optimizer, 0, 20 * params,
                         p.copy.time(20 * params), tensors * p.dispatch.per_tensor});
  return out;
}

/// Memory of a CNN step in PyTorch eager (torchvision models: ReLU in place; batch norm saves its
/// input; max pooling saves int64 indices; autocast keeps bf16 copies of conv and linear weights
/// until their backward), SGD with momentum, `zero_grad(set_to_none=True)`, the fp32 image batch
/// and int64 labels on the GPU. cuDNN workspaces are not counted.
[[nodiscard]] inline step_memory cnn_memory(std::span<const layer> layers, const cnn_config& c) {
  if (c.batch < 1) throw plan_error("CNN memory: the batch must be at least 1");
  if (layers.empty()) throw plan_error("CNN memory: the model has no layers");
  const bool bf16 = c.precision != dtype::fp32;
  const double N = c.batch, act = bf16 ? 2.0 : 4.0;
  double P = 0, weights = 0, saved = 0, buffers = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const layer& l = layers[i];
    const bool next_norm = i + 1 < layers.size() && layers[i + 1].kind == layer_kind::norm;
    const bool next_elementwise =
        i + 1 < layers.size() && layers[i + 1].kind == layer_kind::elementwise;
    const bool prev_elementwise = i > 0 && layers[i - 1].kind == layer_kind::elementwise;
    P += l.params;
    switch (l.kind) {
      case layer_kind::conv:
      case layer_kind::linear:
        weights += l.params;
        if (next_norm) saved += N * l.y() * act;       // batch norm saves its input
        if (i == 0 && bf16) saved += N * l.x() * act;  // the image cast to bf16
        if (l.kind == layer_kind::linear && !prev_elementwise)
          saved += N * l.x() * act;  // the input of a linear layer after pooling
        break;
      case layer_kind::norm:
        buffers += 2.0 * l.in.c * 4;  // running mean and variance
        break;
      case layer_kind::elementwise:
        // ReLU in place keeps its output; a residual add followed by its ReLU shares storage
        if (!next_elementwise) saved += N * l.y() * act;
        break;
      case layer_kind::pool:
        if (l.kernel > 1) saved += N * l.y() * 8;  // max-pool indices, int64
        break;
      default:
        break;
    }
  }
  step_memory m;
  m.parameters = 4 * P;
  m.optimizer_states = 4 * P;  // momentum buffers
  m.gradients = 4 * P;
  m.batch = N * layers.front().x() * 4 + N * 8 + buffers;
  m.weight_casts = bf16 ? 2 * weights : 0;
  m.activations = saved;
  m.logits = 3 * N * layers.back().y() * 4;
  const double fixed = m.parameters + m.optimizer_states + m.batch + m.workspace;
  m.between_steps = fixed;
  m.peak = std::max(fixed + m.weight_casts + m.activations + m.logits, fixed + m.gradients);
  return m;
}

}  // namespace strata::analytic
