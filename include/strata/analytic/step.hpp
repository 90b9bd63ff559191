#pragma once
/// @file analytic/step.hpp
/// @brief A single-GPU training step of a GPT-2-style model lowered to kernels and timed with a
/// device profile (`hardware/kernels.hpp`). First part of the kernel-level step model: time only.
///
/// The model: learned positions, pre-LayerNorm blocks with biases, a tanh-GELU MLP of 4h, tied
/// embeddings, vocabulary V (50304 by default). Per block forward: LN, QKV GEMM (T x 3h x h),
/// causal flash attention, projection GEMM (T x h x h), dropout + residual add, LN, fc GEMM
/// (T x 4h x h), GELU, projection GEMM (T x h x 4h), dropout + residual add; T = b s tokens.
/// Backward: two GEMMs per forward GEMM (dX: T x K x N, dW: K x N x T), flash attention's
/// backward, and each memory-bound kernel's backward at twice its bytes. Then the final LN, the
/// tied output projection (T x V x h, two GEMMs back), cross-entropy on fp32 logits (read,
/// write, softmax and its gradient: four fp32 passes over T x V) and the fused AdamW step (reads
/// weight, gradient and two moments, writes three: 28 B per fp32 parameter). Full activation
/// checkpointing repeats every block's forward during backward.
/// @code
/// const auto p = strata::datasheet_profile(strata::presets::h100_sxm5_80gb, 132);
/// const auto step = strata::analytic::gpt2_step({.layers = 12, .hidden = 768, .heads = 12,
///                                               .sequence = 1024, .batch = 8}, p);
/// @endcode

#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/hardware/kernels.hpp"

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
};

enum class kernel_kind { gemm, attention, memory, optimizer };

/// One kernel of the step.
struct kernel {
  std::string name;
  kernel_kind kind = kernel_kind::gemm;
  double flops = 0;  ///< counted FLOPs (GEMMs: 2MNK; attention: the causal half)
  double bytes = 0;  ///< memory-bound kernels: bytes read and written
  double time = 0;   ///< seconds with the profile
};

struct step_estimate {
  std::vector<kernel> kernels;
  [[nodiscard]] double time() const {
    double t = 0;
    for (const auto& k : kernels) t += k.time;
    return t;
  }
  [[nodiscard]] double flops(kernel_kind kind) const {
    double f = 0;
    for (const auto& k : kernels)
      if (k.kind == kind) f += k.flops;
    return f;
  }
};

[[nodiscard]] inline step_estimate gpt2_step(const gpt2_config& c, const device_profile& p) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.sequence < 1 || c.batch < 1 ||
      c.vocabulary < 1)
    throw plan_error(
        "GPT-2 step: layers, hidden, heads, sequence, batch and vocabulary must be >= 1");
  if (c.hidden % c.heads != 0) throw plan_error("GPT-2 step: heads must divide the hidden size");
  step_estimate out;
  const double T = static_cast<double>(c.batch) * c.sequence, h = c.hidden, V = c.vocabulary;
  const double act = c.precision == dtype::fp32 ? 4.0 : 2.0;  // activation bytes per element
  const gemm_model& g = p.gemm(c.precision);
  auto gemm = [&](const std::string& name, double m, double n, double k) {
    out.kernels.push_back({name, kernel_kind::gemm, 2 * m * n * k, 0, g.time(m, n, k)});
  };
  // forward GEMM and its two backward GEMMs
  auto gemm_fb = [&](const std::string& name, double m, double n, double k, bool backward) {
    if (!backward) {
      gemm(name, m, n, k);
      return;
    }
    gemm(name + " dX", m, k, n);
    gemm(name + " dW", k, n, m);
  };
  auto memory = [&](const std::string& name, const stream_model& s, double bytes) {
    out.kernels.push_back({name, kernel_kind::memory, 0, bytes, s.time(bytes)});
  };
  const double dh = h / c.heads, s = c.sequence;
  auto block = [&](int l, bool backward) {
    const std::string b = "block " + std::to_string(l) + (backward ? " backward " : " ");
    const double k = backward ? 2 : 1;  // backward memory kernels move twice the bytes
    memory(b + "layer norm 1", p.layer_norm, k * 2 * T * h * act);
    gemm_fb(b + "qkv", T, 3 * h, h, backward);
    if (!backward) {
      const double f = attention_model::forward_flops(static_cast<double>(c.batch), c.heads, s, dh);
      out.kernels.push_back({b + "attention", kernel_kind::attention, f, 0,
                             p.attention.forward(static_cast<double>(c.batch), c.heads, s, dh)});
    } else {
      const double f = attention_model::forward_flops(static_cast<double>(c.batch), c.heads, s, dh);
      const double t = p.attention.forward_backward(static_cast<double>(c.batch), c.heads, s, dh) -
                       p.attention.forward(static_cast<double>(c.batch), c.heads, s, dh);
      out.kernels.push_back({b + "attention", kernel_kind::attention, 2.5 * f, 0, t > 0 ? t : 0});
    }
    gemm_fb(b + "attention projection", T, h, h, backward);
    memory(b + "dropout + residual 1", p.dropout, k * 3 * T * h * act);
    memory(b + "layer norm 2", p.layer_norm, k * 2 * T * h * act);
    gemm_fb(b + "fc", T, 4 * h, h, backward);
    memory(b + "gelu", p.gelu, k * 2 * T * 4 * h * act);
    gemm_fb(b + "fc projection", T, h, 4 * h, backward);
    memory(b + "dropout + residual 2", p.dropout, k * 3 * T * h * act);
  };
  memory("embedding", p.copy, 2 * T * h * act);
  for (int l = 0; l < c.layers; ++l) block(l, false);
  memory("final layer norm", p.layer_norm, 2 * T * h * act);
  gemm("output projection", T, V, h);
  memory("cross-entropy (fp32 logits)", p.softmax, 4 * T * V * 4);
  gemm("output projection dX", T, h, V);
  gemm("output projection dW", h, V, T);
  memory("final layer norm backward", p.layer_norm, 4 * T * h * act);
  for (int l = c.layers - 1; l >= 0; --l) {
    if (c.checkpoint) block(l, false);  // recompute the block's forward
    block(l, true);
  }
  memory("embedding backward", p.copy, 2 * T * h * act);
  const double params =
      12.0 * c.layers * h * h + 13.0 * c.layers * h + (V + c.sequence) * h + 2 * h;
  out.kernels.push_back(
      {"AdamW (fused)", kernel_kind::optimizer, 0, 28 * params, p.copy.time(28 * params)});
  return out;
}

}  // namespace strata::analytic
