#pragma once
/// @file lower/transformer.hpp
/// @brief One transformer layer, the embedding and the head with its loss, lowered to the
/// operations one rank runs under a framework recipe: kernels in issue order, blocking
/// collectives, and the tensors kept for backward.
///
/// This is the only description of a transformer step in strata: the closed form
/// (`analytic/price.hpp`, `memory.hpp`, `iteration.hpp`) prices and sums it, the single-GPU step
/// (`analytic/step.hpp`) lists it, the simulator (`sim/transformer.hpp`) runs it. The layer's
/// forward, per token (T = b s tokens on the rank; t the tensor degree; norms and residuals see T /
/// t under sequence parallelism): a norm, the Q/K/V projections (one fused GEMM or three), rotary
/// embedding, causal attention (flash, or the unfused score GEMMs with softmax and dropout), the
/// output projection, bias-dropout-residual, a norm, the MLP (GELU, SwiGLU, or MoE: router,
/// permutation and the experts on this rank), bias-dropout-residual. Backward: each GEMM's dX and
/// dW GEMMs, attention's backward, each memory-bound kernel at twice its bytes (Megatron-LM and
/// PyTorch alike read the saved input and the incoming gradient and write the outgoing one). Under
/// `torch.autocast` each linear layer casts its weight per forward and its weight gradient back (6
/// B per element), and each norm's output is cast (6 B per element) forward and backward
/// (`frameworks::recipe`).
///
/// Saved tensors (Korthikanti et al. 2022 Table 2, generalized; bytes for the rank): both norms'
/// inputs (residual dtype), the QKV and MLP inputs, Q/K/V, the attention output (and its
/// contiguous copy where the module makes one), the MLP's activation inputs (GELU: its input and
/// output, 2 f; SwiGLU: gate, up and their product, 3 f; MoE: for top_k x capacity routed copies),
/// dropout masks (1 B), the unfused attention's scores; full recomputation keeps each layer's
/// input only, selective drops the scores. Under autocast the bf16 weight copies are held too.
/// @code
/// strata::lower::shard x{.b = 8, .s = 1024, .seq = 1024};
/// double saved = 0;
/// strata::lower::layer(strata::zoo::gpt2_124m(), x, {}, strata::lower::phase::forward,
///                      strata::lower::on_save{[&](const auto& t) { saved += t.bytes; }});
/// @endcode

#include <array>
#include <initializer_list>
#include <type_traits>

#include "strata/detail/cmath.hpp"
#include "strata/lower/ops.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/training.hpp"

namespace strata::lower {

/// The slice of a micro-batch one rank works on.
struct shard {
  double b = 1;    ///< sequences per micro-batch
  double s = 1;    ///< tokens per sequence on this rank (the sequence / context degree)
  double seq = 1;  ///< the full sequence (attention's length)
  int tp = 1;      ///< tensor-parallel degree
  bool sp = false;
  int cp = 1;  ///< context-parallel degree
  int ep = 1;  ///< expert-parallel degree
  parallel::recompute recompute = parallel::recompute::none;

  [[nodiscard]] constexpr double tokens() const { return b * s; }
  /// Tokens the norms, dropouts and residuals see (sequence parallelism splits them).
  [[nodiscard]] constexpr double norm_tokens() const { return sp ? b * s / tp : b * s; }
};

/// The shard of a `parallel::nd` strategy.
[[nodiscard]] constexpr shard shard_of(const transformer& m, const parallel::nd& s,
                                       const training& t) {
  const double seq = t.sequence_or(m.sequence);
  return {static_cast<double>(s.micro_batch),
          seq / s.context.degree,
          seq,
          s.tensor.degree,
          s.tensor.sequence,
          s.context.degree,
          s.expert.degree,
          s.recomputation};
}

/// What `shard_of` reads of a plan, as a key: plans with equal keys lower to the same layer (for
/// one model and training setup).
[[nodiscard]] constexpr std::array<int, 6> shard_key(const parallel::nd& s) {
  return {s.tensor.degree, s.tensor.sequence ? 1 : 0,        s.context.degree, s.expert.degree,
          s.micro_batch,   static_cast<int>(s.recomputation)};
}

namespace detail {
/// Hands kernel `k` to the visitor. Inlined always, with the pricer's `kernel` and `gpu_time`:
/// the builder's kernel of a known kind then prices in registers. Out of line, GCC (generic
/// x86-64 tuning) clears the 152-byte `kernel_op` with `rep stos` for every kernel, which cost
/// a sixth of a GPT-3 evaluation on an AMD EPYC (docs/benchmarks.md).
template <class V>
[[gnu::always_inline]] constexpr void emit(V& v, const kernel_op& k) {
  if constexpr (requires { v.kernel(k); }) v.kernel(k);
}
template <class V>
constexpr void keep(V& v, std::string_view what, double bytes,
                    keep_kind kind = keep_kind::activation) {
  if constexpr (requires { v.save(saved_tensor{}); }) v.save(saved_tensor{what, bytes, kind});
}
template <class V>
constexpr void communicate(V& v, const collective_op& c) {
  if constexpr (requires { v.collective(c); }) v.collective(c);
}

/// The pieces every lowering shares (GEMMs and autocast's casts of a linear layer, memory-bound
/// kernels, norms, residual adds) in the pass `backward` says, keeping tensors only when `keep`.
template <class V>
struct builder {
  V& v;
  const training& tr;
  bool backward;
  bool keep = true;
  /// per-operator checkpointing (`parallel::saves_op_outputs`): every other matmul's output and
  /// the fused attention's are cached
  bool op_sac = false;
  bool swiglu = true;           ///< the layer's MLP (which of its projections are cached)
  bool attention_core = false;  ///< its kernels are the unfused attention core's

  [[nodiscard]] constexpr bool autocast() const { return tr.framework.autocast && tr.mixed(); }
  /// Whether per-operator checkpointing caches the output of projection `what`
  /// (`parallel::op_caches`).
  [[nodiscard]] constexpr bool cached(std::string_view what) const {
    return op_sac && parallel::op_caches(what, swiglu);
  }
  /// Modules written as op chains (`transformers`, plain eager modules): separate projections
  /// that cast their inputs, fp32 residual adds, rotate-half RoPE and gates kernel by kernel.
  [[nodiscard]] constexpr bool hf() const {
    return tr.framework.modules != frameworks::module_style::fused;
  }
  /// What only the `transformers` modeling code does: RMSNorm as an op chain, the k/v cache in
  /// training, GPT-2's fused c_attn and gelu_new, `grouped_mm` experts.
  [[nodiscard]] constexpr bool transformers_code() const {
    return tr.framework.modules == frameworks::module_style::transformers;
  }
  /// bitsandbytes' `Linear4bit` and `Linear8bitLt` cast their input to the compute type and
  /// their output back to the input's type (bitsandbytes 0.49.2 `nn/modules.py`): beside fp32
  /// norms (`prepare_model_for_kbit_training`) under autocast the layers that read a norm take
  /// and give fp32, and so do the MLP's gate and up outputs, SiLU and their product.
  [[nodiscard]] constexpr bool quantized_fp32_io() const {
    return hf() && autocast() && tr.lora.quantized() && tr.frozen_embedding_bytes() == 4.0;
  }
  /// Bytes per element of the copy of its input that an adapter's A keeps of its own (0: none,
  /// A keeps the layer's input itself). PEFT casts x to the adapters' type
  /// (`_cast_input_dtype`; its bitsandbytes layers only without autocast, `lora/bnb.py`): A keeps
  /// that copy, or under autocast the 16-bit copy autocast casts it back to (`adapter_casts`).
  /// A layer whose input is fp32 under autocast keeps its autocast copy in `linear`.
  [[nodiscard]] constexpr double adapter_input_copy(std::string_view what) const {
    if (!adapted(what) || tr.lora.dropout > 0 || !transformers_code()) return 0.0;
    const double a = tr.adapter_bytes().weight;
    if (autocast()) return !tr.lora.quantized() && a == 4.0 ? 2.0 : 0.0;
    return a != tr.activation_bytes() ? a : 0.0;
  }

  /// Keeps `bytes` for the backward (forward only) as `kind`; a checkpointed layer keeps only
  /// what lives until the loss anyway, as `checkpointed` says. There, a visitor with
  /// `would_save` hears of every call as the layer without checkpointing makes it, so that one
  /// lowering gives both (`analytic::lower_layer`).
  [[gnu::always_inline]] constexpr void save(std::string_view what, double bytes, keep_kind kind,
                                             keep_kind checkpointed) const {
    if (backward || !(bytes > 0)) return;
    if (keep) return detail::keep(v, what, bytes, kind);
    if (checkpointed == keep_kind::until_loss) detail::keep(v, what, bytes, checkpointed);
    if constexpr (requires { v.would_save(saved_tensor{}); })
      v.would_save(saved_tensor{what, bytes, kind});
  }
  [[gnu::always_inline]] constexpr void save(std::string_view what, double bytes,
                                             keep_kind kind = keep_kind::activation) const {
    save(what, bytes, kind, kind);
  }
  /// `times` kernels moving `bytes` each (`sync`: the host waits for the GPU after them).
  constexpr void memory(std::string_view what, std::string_view part, stream_class c, double bytes,
                        double times = 1, bool sync = false) const {
    kernel_op k{.what = what, .part = part, .kind = kernel_kind::memory, .stream = c};
    k.attention_core = attention_core;
    k.bytes = bytes;
    k.times = times;
    k.sync = sync;
    emit(v, k);
  }
  /// A memory-bound kernel that moves `bytes` forward and twice that backward.
  constexpr void pointwise(std::string_view what, stream_class c, double bytes,
                           double times = 1) const {
    memory(what, {}, c, backward ? 2 * bytes : bytes, times);
  }
  /// Kernels of one pass only.
  constexpr void forward_only(std::string_view what, stream_class c, double bytes,
                              double times = 1) const {
    if (!backward) memory(what, {}, c, bytes, times);
  }
  constexpr void backward_only(std::string_view what, stream_class c, double bytes,
                               double times = 1) const {
    if (backward) memory(what, "backward", c, bytes, times);
  }
  /// A linear layer LoRA adapts (`training::lora`): never the router or the head.
  [[nodiscard]] constexpr bool adapted(std::string_view what) const {
    if (!tr.lora.on() || what == "router" || what == "output projection") return false;
    if (tr.lora.targets == lora_targets::all_linear) return true;
    // PEFT's default: the query and value projections, or the fused QKV projection whole
    if (tr.lora.targets == lora_targets::query_value)
      return what == "QKV" || what == "Q" || what == "V";
    return what == "QKV" || what == "Q" || what == "K" || what == "V" ||
           what == "attention projection";
  }
  /// A frozen weight (LoRA) made ready for a GEMM, forward (and for a quantized base again
  /// backward, for dX):
  /// - int8 or nf4 base (bitsandbytes): one dequantizing kernel reads the packed weight and its
  ///   block maxima and writes a 16-bit copy that the GEMM uses and frees (`MatMul4Bit` and
  ///   `MatMul8bitLt` keep the packed weight for backward, not the copy);
  /// - a 16-bit base in the compute type: nothing (the GEMM keeps the parameter itself);
  /// - an fp32 base under autocast: cast per use, and never cached: autocast caches casts of
  ///   leaves that require grad only (aten/src/ATen/autocast_mode.cpp, `cached_cast`), so the
  ///   copy lives while the GEMM keeps it for dX — until the backward, or not at all in a
  ///   recomputed forward.
  /// The head is stored as the embedding is (`lora_adapters::embeddings`) unless the recipe
  /// quantizes it too (`recipe::quantizes_head`); an fp16 quantized state is dequantized to fp16
  /// and then cast to bf16 (`recipe::fp16_quant_state`).
  /// LLM.int8's forward also quantizes its input row by row (int8 codes and fp32 row maxima
  /// from 16 bits, `MatMul8bitLt`) and waits for the GPU twice to find the outlier columns;
  /// bitsandbytes' own GEMMs for it are not modelled, the dequantized 16-bit GEMM stands in.
  constexpr void frozen_weight(std::string_view what, double elements, double m, double k,
                               double times) const {
    const bool head = what == "output projection";
    if (tr.lora.quantized() && (!head || tr.framework.quantizes_head)) {
      if (tr.lora.base == base_storage::int8 && !backward)
        memory(what, "quantize input", stream_class::copy, 3 * m * k, times, true);
      memory(what, "dequantize", stream_class::copy, (tr.frozen_weight_bytes(k) + 2) * elements,
             times);
      if (tr.framework.fp16_quant_state)
        memory(what, "dequantized fp16 to bf16", stream_class::copy, 4 * elements, times);
    } else if (head ? !tr.frozen_head_in_compute_type() : !tr.frozen_in_compute_type()) {
      memory(what, "weight cast", stream_class::copy, 6 * elements, times);
      save("16-bit weight copy", times * 2 * elements, keep_kind::weight_copy);
    }
  }
  /// Whether autograd keeps the input of a linear layer among `whats` (which share it): always
  /// when its weight trains; under LoRA when an adapter reads it directly (A's weight gradient;
  /// with `lora.dropout` A reads the dropout's output, which `linear` keeps instead), or when
  /// the base is quantized by a bitsandbytes that keeps every quantized layer's input
  /// (`lora_adapters::keeps_inputs`); a frozen weight alone needs no input for its dX.
  [[nodiscard]] constexpr bool input_kept(std::initializer_list<std::string_view> whats) const {
    if (!tr.lora.on() || (tr.lora.quantized() && tr.lora.keeps_inputs)) return true;
    for (const std::string_view w : whats)
      if (adapted(w) && tr.lora.dropout == 0) return true;
    return false;
  }
  /// Whether the input `whats` share is kept itself: `input_kept`, unless every adapter among
  /// them keeps a copy of its own instead (`adapter_input_copy`).
  [[nodiscard]] constexpr bool shared_input_kept(
      std::initializer_list<std::string_view> whats) const {
    if (!input_kept(whats)) return false;
    if (!tr.lora.on() || (tr.lora.quantized() && tr.lora.keeps_inputs)) return true;
    for (const std::string_view w : whats)
      if (adapted(w) && adapter_input_copy(w) == 0) return true;
    return false;
  }
  /// A quantized layer's input that bitsandbytes before 0.43.2 stores on its autograd node
  /// (`MatMul4Bit.forward`: `ctx.tensors = (A, B)`), outside `save_for_backward`: the backward
  /// does not free it, the graph's end does (`keep_kind::graph`; `input_kept` counts it as an
  /// activation).
  [[gnu::always_inline]] constexpr void graph_input(std::string_view what, double bytes) const {
    if (tr.lora.quantized() && tr.lora.keeps_inputs &&
        (what != "output projection" || tr.framework.quantizes_head))
      save("quantized layer input (bitsandbytes ctx)", bytes, keep_kind::graph);
  }
  constexpr void gemm(std::string_view what, std::string_view part, double m, double n, double k,
                      double times = 1, bool fp32 = false, bool sync = false,
                      bool misaligned = false, bool op_saved = false,
                      tp_window window = tp_window::none) const {
    if (tr.lora.on() && part == "dW") return;  // LoRA freezes every pretrained weight
    kernel_op op{.what = what, .part = part, .kind = kernel_kind::gemm, .m = m, .n = n, .k = k};
    op.window = window;
    op.times = times;
    op.fp32 = fp32;
    op.misaligned = misaligned;
    op.attention_core = attention_core;
    op.op_saved = op_saved;
    op.sync = sync;
    emit(v, op);
  }
  /// What an adapter does around its two GEMMs besides them: result + B(A(x)) x scaling is one
  /// multiply and one add over the m x n output in every LoRA (PEFT's `lora.Linear.forward`,
  /// LitGPT's `LoRALinear`, torchtune's `LoRALinear`); backward the scaling again on the
  /// output's gradient.
  /// With a quantized base and an fp32 input (`quantized_fp32_io`) the base layer's output is
  /// cast back to fp32, PEFT's `lora.Linear4bit` clones it, and the sum is fp32 (its gradient
  /// cast to 16 bits for each side backward).
  constexpr void adapter_sum(std::string_view what, double m, double n, double times,
                             bool fp32_in) const {
    const double act = tr.activation_bytes();
    const bool fp32 = fp32_in && quantized_fp32_io();
    memory(what, "LoRA scaling", stream_class::elementwise, 2 * act * m * n, times);
    if (!backward) {
      if (fp32) memory(what, "output to input type", stream_class::copy, 6 * m * n, times);
      if (fp32) memory(what, "PEFT result clone", stream_class::copy, 8 * m * n, times);
      memory(what, "LoRA add", stream_class::elementwise, (fp32 ? 10 : 3 * act) * m * n, times);
    } else if (fp32) {
      memory(what, "output gradient casts", stream_class::copy, 6 * m * n, times * 2);
    }
  }
  /// PEFT under autocast (`lora.Linear.forward`): `_cast_input_dtype(x, lora_A.weight.dtype)`
  /// copies x into the adapters' type when they differ (a bf16 input to fp32 adapters, PEFT's
  /// default; its bitsandbytes layers skip this under autocast, `lora/bnb.py`), and autocast
  /// casts A's fp32 input back to 16 bits, a copy of its own (casts of tensors that are not
  /// leaves are never cached), which A keeps. Backward: each cast's
  /// gradient cast back, and the adapter's input gradient added to the base layer's. `fp32_in`:
  /// the layer's input is fp32 (`linear`'s `cast_input`).
  constexpr void adapter_casts(std::string_view what, double m, double k, double times,
                               bool fp32_in) const {
    const double x = fp32_in ? 4.0 : tr.activation_bytes(), a = tr.adapter_bytes().weight;
    if (!autocast()) {  // PEFT's cast alone; its gradient cast back
      if (adapter_input_copy(what) > 0)
        memory(what, "LoRA input to adapter type", stream_class::copy, (x + a) * m * k, times);
      return;
    }
    const bool cast = x != a && !tr.lora.quantized();  // bitsandbytes' layers skip it
    if (cast)
      memory(what, "LoRA input to adapter type", stream_class::copy, (x + a) * m * k, times);
    if ((cast ? a : x) == 4.0)
      memory(what, "LoRA A input cast", stream_class::copy, 6 * m * k, times);
    if (backward)
      memory(what, "LoRA input gradient add", stream_class::elementwise, 3 * x * m * k, times);
  }
  /// The input gradient's window of a column-parallel linear, beside which Megatron runs its
  /// block's tensor-parallel collectives (`tp_window`; its weight gradient's is the next):
  /// "QKV", "Q", "K", "V" (attention) and "MLP up", "MLP gate" (not "MLP down"), told apart by
  /// length and a letter, as this runs for every linear of every plan a search prices.
  [[nodiscard]] static constexpr tp_window column_window(std::string_view what) {
    switch (what.size()) {
      case 1:
        return what[0] == 'Q' || what[0] == 'K' || what[0] == 'V' ? tp_window::attention_dgrad
                                                                  : tp_window::none;
      case 3:
        return what[0] == 'Q' ? tp_window::attention_dgrad : tp_window::none;  // "QKV"
      case 6:
        return what[0] == 'M' && what[4] == 'u' ? tp_window::mlp_dgrad : tp_window::none;
      case 8:
        return what[0] == 'M' && what[4] == 'g' ? tp_window::mlp_dgrad : tp_window::none;
      default:
        return tp_window::none;
    }
  }
  /// The window of linear `what`'s forward GEMM (and, for a row-parallel one, its input
  /// gradient's): the block's `in` for a column-parallel linear, `out` for the attention
  /// projection and MLP down.
  [[nodiscard]] static constexpr tp_window block_window(std::string_view what) {
    const tp_window column = column_window(what);
    if (column == tp_window::attention_dgrad) return tp_window::attention_in;
    if (column == tp_window::mlp_dgrad) return tp_window::mlp_in;
    if (what.size() == 20 && what[0] == 'a' && what[10] == 'p')  // "attention projection"
      return tp_window::attention_out;
    if (what.size() == 8 && what[0] == 'M' && what[4] == 'd')  // "MLP down"
      return tp_window::mlp_out;
    return tp_window::none;
  }
  /// y = x W^T (+ b) with W of n x k over m rows: one GEMM forward, dX and dW backward. Under
  /// autocast the weight (and bias) is cast to 16 bits before (held until backward; with
  /// `cast_input` the fp32 input too, and that copy is what the GEMM keeps) and the weight
  /// gradient cast back after (6 B per element each way; the input's gradient too).
  constexpr void linear(std::string_view what, double m, double n, double k, double bias,
                        double times = 1, bool cast_input = false, bool padded = false) const {
    const double elements = n * k + bias;
    const bool in = cast_input && autocast();
    // the weight's sides are the leading dimensions of every GEMM of the linear (the tokens m
    // never are): one that is no multiple of 16 bytes slows all three
    const double element = !tr.mixed() ? 4.0 : tr.compute() == dtype::fp8 ? 1.0 : 2.0;
    const bool mis = !padded && (!aligned_dimension(n, element) || !aligned_dimension(k, element));
    // fp8 GEMMs take fp8 operands: Transformer Engine's Linear casts its 16-bit input to fp8 and
    // writes its transpose for the weight gradient's GEMM in one kernel (fp8_cast_transpose_fused:
    // 2 B read, 1 + 1 written per element), and backward the output gradient the same way
    // (module/linear.py, grad_output_preprocess). The head runs outside fp8_autocast (Megatron's
    // output layer is a plain ColumnParallelLinear, core/models/gpt/gpt_model.py; torchtitan's
    // float8 conversion skips "output") and is priced at the 16-bit rate (`analytic::lower_layer`).
    // The fp8 weight and its transpose are made once a step (is_first_microbatch) and not counted.
    const bool fp8 = tr.compute() == dtype::fp8 && what != "output projection";
    if (fp8)
      memory(what, backward ? "fp8 gradient cast and transpose" : "fp8 cast and transpose",
             stream_class::copy, 4 * m * (backward ? n : k), times);
    if (!backward) {
      if (in) {
        memory(what, "input cast", stream_class::copy, 6 * m * k, times);
        if (input_kept({what})) save("16-bit input copy", times * 2 * m * k);
      }
      if (tr.lora.on()) {
        frozen_weight(what, elements, m, k, times);
      } else if (autocast()) {
        memory(what, "weight cast", stream_class::copy, 6 * elements, times);
        // checkpointed, an eager module's copy lives until the loss
        save("16-bit weight copy", times * 2 * elements, keep_kind::weight_copy,
             hf() ? keep_kind::until_loss : keep_kind::weight_copy);
      }
      const bool keep_output = cached(what);  // per-operator checkpointing
      gemm(what, {}, m, n, k, times, false, false, mis, keep_output, block_window(what));
      if (keep_output)
        detail::keep(v, "cached matmul output", times * tr.activation_bytes() * m * n);
      if (adapted(what)) {  // x A^T, then (x A^T) B^T added to y; A's output kept for dB
        const double r = tr.lora.rank;
        adapter_casts(what, m, k, times, in);
        if (tr.lora.dropout > 0) {  // PEFT's lora_dropout(x): its output and mask kept for A
          memory(what, "LoRA dropout", stream_class::dropout,
                 (2 * tr.activation_bytes() + 1) * m * k, times);
          save("LoRA dropout output and mask", times * (tr.activation_bytes() + 1) * m * k);
        }
        gemm(what, "LoRA A", m, r, k, times, false, false);
        gemm(what, "LoRA B", m, n, r, times, false, false);
        save("LoRA A output", times * tr.activation_bytes() * m * r);
        adapter_sum(what, m, n, times, in);
        if (!in && adapter_input_copy(what) > 0)
          save("LoRA A input copy", times * adapter_input_copy(what) * m * k);
      }
      return;
    }
    // dequantized again for dX
    if (tr.lora.quantized() && (what != "output projection" || tr.framework.quantizes_head))
      frozen_weight(what, elements, m, k, times);
    const tp_window dgrad = column_window(what), block = block_window(what);
    gemm(what, "dX", m, k, n, times, false, false, mis, false,
         dgrad != tp_window::none ? dgrad : block);
    gemm(what, "dW", k, n, m, times, false, false, mis, false,
         dgrad == tp_window::none ? dgrad : static_cast<tp_window>(static_cast<int>(dgrad) + 1));
    if (adapted(what)) {  // dB, the gradient through B, dA and the gradient through A
      const double r = tr.lora.rank;
      gemm(what, "LoRA dB", n, r, m, times, false, false);
      gemm(what, "LoRA dX B", m, r, n, times, false, false);
      gemm(what, "LoRA dA", r, k, m, times, false, false);
      gemm(what, "LoRA dX A", m, k, r, times, false, false);
      adapter_sum(what, m, n, times, in);
      adapter_casts(what, m, k, times, in);
    }
    if (autocast() && !tr.lora.on())
      memory(what, "gradient to fp32", stream_class::copy, 6 * elements, times);
    if (in) memory(what, "input gradient to fp32", stream_class::copy, 6 * m * k, times);
  }
  /// A norm over `tokens` x h. Fused (one kernel; bytes at the activation width, as measured;
  /// its output cast to 16 bits under autocast unless the consumers cast it): keeps its input.
  /// The `transformers` RMSNorm is an fp32 op chain (pow, mean, + eps, rsqrt, x r, w n) that
  /// keeps its input, the normalized n and r; its backward about eleven fp32 passes over T h;
  /// its LayerNorm, and both norms of plain eager modules, one fp32 kernel that keeps its input
  /// and the row statistics (mean and rstd; RMSNorm rstd only).
  constexpr void norm(std::string_view what, double tokens, double h, norm_kind kind, bool cast,
                      bool keep_input = true) const {
    // LitGPT's and torchtune's RMSNorm: `x.float()` first, and that copy is what autograd keeps
    // (with a trained weight the fp32 normalized tensor too, for the weight's gradient)
    const bool upcast = tr.framework.norm_fp32_input && hf() && !transformers_code();
    // an RMSNorm written as tensor ops (`recipe::rmsnorm_op_chain`): a kernel per op
    const bool chain = kind == norm_kind::rms_norm && hf() &&
                       (transformers_code() || tr.framework.rmsnorm_op_chain);
    if (keep_input) save("norm input", (upcast ? 4.0 : tr.residual_bytes()) * tokens * h);
    if (keep_input && upcast && !chain && !tr.lora.on()) save("norm fp32 output", 4 * tokens * h);
    if (!hf()) {
      pointwise(what, stream_class::layer_norm, 2 * tokens * h * tr.activation_bytes());
      if (cast && autocast()) memory(what, "cast", stream_class::copy, 6 * tokens * h);
      return;
    }
    if (!chain) {  // one fp32 kernel
      pointwise(what, stream_class::layer_norm, 8 * tokens * h);
      save(kind == norm_kind::layer_norm ? "norm mean and rstd" : "norm rstd",
           (kind == norm_kind::layer_norm ? 8 : 4) * tokens);
      return;
    }
    if (!backward) {
      // a 16-bit residual stream is upcast first (`x.float()`) and the result cast back
      // (`type_as(x)`, torchtitan/models/norms.py), and w n then runs at its width
      const double res = tr.residual_bytes();
      if (upcast) memory(what, "upcast", stream_class::copy, (res + 4) * tokens * h);
      memory(what, "pow", stream_class::elementwise, 8 * tokens * h);
      memory(what, "mean", stream_class::layer_norm, 4 * tokens * h);
      memory(what, "+ eps", stream_class::elementwise, 8 * tokens);
      memory(what, "rsqrt", stream_class::elementwise, 8 * tokens);
      memory(what, "x r", stream_class::elementwise, 8 * tokens * h);
      if (upcast) memory(what, "cast back", stream_class::copy, (4 + res) * tokens * h);
      memory(what, "w n", stream_class::elementwise, (upcast ? 3 * res : 8.0) * tokens * h);
      // w n keeps n for the weight's gradient: none when LoRA freezes the weight
      if (tr.lora.on())
        save("norm r", 4 * tokens);
      else
        save("norm n and r", (upcast ? res : 4.0) * tokens * h + 4 * tokens);
    } else {
      memory(what, "backward", stream_class::elementwise, 10 * tokens * h, 11);
      memory(what, "backward (rows)", stream_class::elementwise, 8 * tokens, 3);
    }
  }
  /// residual + branch: fused into bias-dropout-add (Megatron, nanoGPT), or an fp32 add of a
  /// 16-bit branch whose backward casts the gradient for the branch and adds the skip path's.
  constexpr void residual(double tokens, double h, double mask) const {
    const double act = tr.activation_bytes();
    if (!hf()) {
      pointwise("dropout + residual", stream_class::dropout, tokens * h * (3 * act + mask));
      save("dropout mask", mask * tokens * h);
      return;
    }
    forward_only("residual add", stream_class::elementwise, 10 * tokens * h);
    backward_only("residual gradient cast", stream_class::copy, 6 * tokens * h);
    backward_only("residual gradient add", stream_class::elementwise, 12 * tokens * h);
  }
};

/// Calls f(rows, times) for the GEMMs of `local` experts that share `rows` each on average: once
/// with times = local for an even split, else once per expert with its own rows
/// (`transformer::expert_share`; the tile waves of each round up on their own).
template <class F>
constexpr void expert_rows(const transformer& m, double rows, double local, F&& f) {
  const int n = static_cast<int>(local);
  if (m.expert_load_cv == 0 || n < 2) {
    f(rows, local);
    return;
  }
  for (int i = 0; i < n; ++i) f(rows * m.expert_share(i, n), 1.0);
}
}  // namespace detail

/// A visitor that only collects saved tensors.
template <class F>
struct on_save {
  F f;
  constexpr void save(const saved_tensor& t) { f(t); }
};
template <class F>
on_save(F) -> on_save<F>;

namespace detail {
/// What the pieces of a layer's lowering read: the model, the shard, the recipe, the widths
/// (T tokens, tn of them at the norms, t the tensor degree, h, the k/v width w, the MLP's f) and
/// the element sizes, as `layer` works them out once.
struct layer_shape {
  const transformer& m;
  const shard& x;
  const frameworks::recipe& r;
  bool fwd, hf, ac, swiglu, gpt2, use_cache;
  double T, tn, t, h, q, w, f, act, res, mask;  ///< q: the Q width, heads x head_dim
  double routed, up, gate_elems;  ///< MoE copies per token; up's width; the MLP's kept widths
};

/// Soft-capped attention scores written out op by op between Q K^T and P V (LitGPT's
/// `scaled_dot_product_attention` with `attention_logit_softcapping`, `transformers`' eager
/// Gemma 2 attention, torchtune's Gemma2Attention), each kernel over all `scores` of the full
/// s x s (no causal skipping) in the activations' type (`act` bytes): the scale, x / c, tanh,
/// x c, the causal mask's add, then softmax in fp32 (`F.softmax(dtype=torch.float)`: a cast up,
/// the softmax, a cast back). Backward: the casts and the softmax's backward, then the cap's
/// multiply, tanh_backward (reading the gradient and the kept output) and divide, and the scale.
/// The mask's own s x s kernels and the sliding window's are not counted.
template <class B>
constexpr void capped_scores(const B& core, double scores, double act) {
  const double n = scores, cast = act != 4 ? (act + 4) * n : 0.0;
  if (!core.backward) {
    for (const std::string_view op : {"score scale", "soft-cap divide", "soft-cap tanh",
                                      "soft-cap multiply", "causal mask add"})
      core.memory(op, {}, stream_class::elementwise, 2 * act * n);
    if (cast > 0) core.memory("scores to fp32", {}, stream_class::copy, cast);
    core.memory("attention softmax", {}, stream_class::softmax, 8 * n);
    if (cast > 0) core.memory("probabilities to 16-bit", {}, stream_class::copy, cast);
    return;
  }
  if (cast > 0) core.memory("probabilities gradient to fp32", {}, stream_class::copy, cast);
  core.memory("attention softmax", "backward", stream_class::softmax, 12 * n);
  if (cast > 0) core.memory("scores gradient to 16-bit", {}, stream_class::copy, cast);
  core.memory("soft-cap multiply", "backward", stream_class::elementwise, 2 * act * n);
  core.memory("soft-cap tanh", "backward", stream_class::elementwise, 3 * act * n);
  core.memory("soft-cap divide", "backward", stream_class::elementwise, 2 * act * n);
  core.memory("score scale", "backward", stream_class::elementwise, 2 * act * n);
}

/// Attention unfused: Q K^T, the softmax (or the soft-capped scores, `capped_scores`), dropout
/// and P V, each over the full s x s scores of the rank's heads; Q, K and V (`qkv_kept` wide) and
/// P kept (with dropout its mask and input too), unless selective recomputation drops the core.
template <class B>
constexpr void unfused_attention(const B& k, const layer_shape& L, double qkv_kept, bool capped) {
  const double heads = L.m.heads / L.t, d = L.m.head_dim();
  const double rows = L.x.b * heads * L.x.s, scores = rows * L.x.seq;
  B core = k;
  core.attention_core = true;
  if (L.fwd) {
    core.gemm("attention scores", {}, rows, L.x.seq, d);
    if (capped) detail::capped_scores(core, scores, L.act);
    core.gemm("attention over V", {}, rows, d, L.x.seq);
    if (!capped) core.memory("attention softmax", {}, stream_class::softmax, 2 * scores * L.act);
  } else {
    core.gemm("attention over V", "backward", rows, d, L.x.seq, 2);
    if (capped) detail::capped_scores(core, scores, L.act);
    core.gemm("attention scores", "backward", rows, L.x.seq, d, 2);
    if (!capped) core.memory("attention softmax", {}, stream_class::softmax, 3 * scores * L.act);
  }
  if (L.m.dropout)
    core.memory("attention dropout", {}, stream_class::dropout, scores * (2 * L.act + L.mask));
  k.save("Q, K, V", L.act * L.T * qkv_kept / L.t);
  if (!parallel::drops_attention_core(L.x.recompute)) {
    k.save("attention scores", scores * (L.act + (L.m.dropout ? L.mask + L.act : 0.0)));
    // the tanh's output (tanh_backward reads it) and the fp32 softmax's, besides P
    if (capped) k.save("capped scores", scores * (L.act + (L.act != 4 ? 4.0 : 0.0)));
  }
}

/// Multi-head latent attention (DeepSeek-V2 §2.1) as Megatron-Core's `MLASelfAttention` runs it
/// (megatron/core/transformer/multi_latent_attention.py at d98e8a6; its TE layer spec):
/// - the down projections, h -> q_lora_rank and h -> kv_lora_rank + qk_rope_dim, are whole on
///   every tensor rank (`parallel_mode="duplicated"`) over the rank's own tokens (s / t under
///   sequence parallelism), with no collective of their own; without q_lora_rank, Q is one
///   column-parallel projection;
/// - the latents' RMSNorms (fused into the up projections), then the column-parallel up
///   projections to the rank's heads, r -> a (qk_nope + qk_rope) and c -> a (qk_nope + v), over
///   every token (`layer_collectives` gathers the latents, not h);
/// - RoPE on Q's rotary part and on the one shared rotary key, then Q and K assembled (`cat`,
///   the key's rotary part copied to every head) and V made contiguous;
/// - the fused attention with score width qk_nope + qk_rope and value width v_head_dim (TE takes
///   both; its FLOPs are those of a head of their mean), the row-parallel output projection.
/// It keeps the down projections' input, the latents, Q, K, V, the log-sum-exp and the output.
template <class B>
[[gnu::noinline]] constexpr void latent_attention(const B& k, const layer_shape& L) {
  const transformer& m = L.m;
  const double a = m.heads / L.t, rope = m.qk_rope_dim, r = m.q_lora_rank, c = m.kv_lora_rank;
  const double qk = m.latent_qk_dim(), v = m.v_head_dim, qw = a * qk, vw = a * v;
  k.norm("input norm", L.tn, L.h, m.norm, !L.hf);
  if (!L.hf || (!k.autocast() && k.shared_input_kept({"Q down", "Q", "KV down"})))
    k.save("Q and KV down input", L.act * L.tn * L.h);
  k.graph_input("KV down", L.act * L.tn * L.h);
  if (r > 0) {
    k.linear("Q down", L.tn, r, L.h, 0.0, 1, L.hf);
  } else {
    k.linear("Q", L.T, qw, L.h, 0.0, 1, L.hf);
  }
  k.linear("KV down", L.tn, c + rope, L.h, 0.0, 1, L.hf);
  if (r > 0) {
    k.norm("Q latent norm", L.tn, r, m.norm, false);
    k.save("Q latent", L.act * L.tn * r);  // the up projection's input
    k.linear("Q up", L.T, qw, r, 0.0);
  }
  k.norm("KV latent norm", L.tn, c, m.norm, false);
  k.save("KV latent", L.act * L.tn * c);
  k.linear("KV up", L.T, a * (m.qk_nope_dim + v), c, 0.0);
  k.pointwise("rotary embedding", stream_class::elementwise, 2 * L.T * (a + 1) * rope * L.act);
  k.pointwise("Q, K and V assembly", stream_class::copy, 2 * L.T * (2 * qw + vw) * L.act);
  kernel_op at{.what = "attention", .part = {}, .kind = kernel_kind::attention};
  at.batch = L.x.b / L.x.cp;
  at.heads = a;
  at.seq = L.x.seq;
  at.dim = (qk + v) / 2;
  at.backward = !L.fwd;
  detail::emit(k.v, at);
  k.save("Q, K, V", L.act * L.T * (2 * qw + vw));
  k.save("attention log-sum-exp", 4 * L.T * a);
  k.save("attention output", L.act * L.T * vw);
  k.graph_input("attention projection", L.act * L.T * vw);
  k.linear("attention projection", L.T, L.h, vw, 0.0);
  k.residual(L.tn, L.h, L.mask);
}

/// The attention block: the input norm, the Q/K/V projections, rotary embedding, the k/v cache
/// copies (`transformers`), attention (flash, or the unfused score GEMMs with softmax and
/// dropout), the output projection and the residual.
template <class B>
[[gnu::always_inline]] constexpr void attention_block(const B& k, const layer_shape& L) {
  if (L.m.mla()) return detail::latent_attention(k, L);
  k.norm("input norm", L.tn, L.h, L.m.norm, !L.hf);
  // GPT-2's c_attn fuses them; per-operator checkpointing runs over torchtitan's Llama, whose
  // projections are separate `nn.Linear`s (each an `aten.mm` the policy counts)
  const bool fused_qkv = (L.r.fused_qkv && !k.op_sac) || (k.transformers_code() && L.gpt2);
  const bool qkv_bias = L.m.bias || L.m.qkv_bias;
  // the norm's output, which the projections read; under autocast each projection keeps its
  // own 16-bit copy instead (`builder::linear`)
  if (!L.hf || (!k.autocast() && k.shared_input_kept({"QKV", "Q", "K", "V"})))
    k.save("QKV input", L.act * L.tn * L.h);
  k.graph_input("QKV", L.act * L.tn * L.h);
  if (fused_qkv) {
    k.linear("QKV", L.T, (L.q + 2 * L.w) / L.t, L.h, qkv_bias ? (L.q + 2 * L.w) / L.t : 0.0, 1,
             L.hf);
    // LitGPT's `LoRAQKVLinear.zero_pad` with q and v adapted: the index_copy's source, the
    // adapters' q and v outputs (litgpt/lora.py)
    if (L.r.lora_zero_pad && k.tr.lora.on() && k.tr.lora.targets == lora_targets::query_value)
      k.save("LoRA zero-pad source", L.act * L.T * (L.q + L.w) / L.t);
  } else {
    k.linear("Q", L.T, L.q / L.t, L.h, qkv_bias ? L.q / L.t : 0.0, 1, L.hf);
    k.linear("K", L.T, L.w / L.t, L.h, qkv_bias ? L.w / L.t : 0.0, 1, L.hf);
    k.linear("V", L.T, L.w / L.t, L.h, qkv_bias ? L.w / L.t : 0.0, 1, L.hf);
    if (L.hf && L.ac)  // the three input gradients summed
      k.backward_only("QKV input gradient sum", stream_class::elementwise, 12 * L.T * L.h, 2);
  }
  // Q and K norms (Qwen3, Gemma 3: each head over its width; OLMo 2: the whole projection)
  if (L.m.qk_norm != qk_norm_kind::none) {
    const bool per_head = L.m.qk_norm == qk_norm_kind::per_head;
    const double d = L.m.head_dim();
    k.norm("Q norm", per_head ? L.T * L.q / d / L.t : L.T, per_head ? d : L.q / L.t, L.m.norm,
           false);
    k.norm("K norm", per_head ? L.T * L.w / d / L.t : L.T, per_head ? d : L.w / L.t, L.m.norm,
           false);
  }
  if (L.m.positions == position_kind::rotary) {
    if (!L.hf) {
      k.pointwise("rotary embedding", stream_class::elementwise,
                  2 * L.T * (L.q + L.w) / L.t * L.act);
    } else if (L.r.rope_complex) {  // x.float(), x * freqs_cis (complex), type_as(x)
      for (const double width : {L.q / L.t, L.w / L.t}) {
        k.forward_only("rotary to fp32", stream_class::copy, 6 * L.T * width);
        k.forward_only("rotary complex product", stream_class::elementwise, 8 * L.T * width);
        k.forward_only("rotary cast back", stream_class::copy, 6 * L.T * width);
        // the gradient's way back: to fp32, times conj(freqs_cis), to the 16-bit type
        k.backward_only("rotary gradient to fp32", stream_class::copy, 6 * L.T * width);
        k.backward_only("rotary complex product", stream_class::elementwise, 8 * L.T * width);
        k.backward_only("rotary gradient cast back", stream_class::copy, 6 * L.T * width);
      }
    } else {  // q cos + rotate_half(q) sin in fp32, for Q and for K
      for (const double width : {L.q / L.t, L.w / L.t}) {
        k.forward_only("rotary q cos", stream_class::elementwise, 6 * L.T * width);
        k.forward_only("rotary neg", stream_class::elementwise, 2 * L.T * width);
        k.forward_only("rotary cat", stream_class::elementwise, 4 * L.T * width);
        k.forward_only("rotary rot sin", stream_class::elementwise, 6 * L.T * width);
        k.forward_only("rotary add", stream_class::elementwise, 12 * L.T * width);
        k.backward_only("rotary", stream_class::elementwise, 5 * L.T * width, 12);
      }
    }
  }
  if (L.use_cache) {                       // DynamicCache.update: torch.cat copies of k and v
    const double kb = L.gpt2 ? 2.0 : 4.0;  // GPT-2's k is bf16, RoPE'd k is fp32
    k.forward_only("cache k", stream_class::copy, 2 * kb * L.T * L.w / L.t);
    k.forward_only("cache v", stream_class::copy, 4 * L.T * L.w / L.t);
    // GPT-2's attention keeps the copies; Llama's fp32 k copy lives until the loss
    k.save("k cache", (L.gpt2 ? 2.0 : 4.0) * L.T * L.w / L.t,
           L.gpt2 ? keep_kind::activation : keep_kind::until_loss);
    if (L.gpt2) k.save("v cache", 2 * L.T * L.w / L.t);
  }
  if (L.hf && !L.gpt2 && L.ac) {  // SDPA's autocast casts the fp32 q and k
    k.forward_only("SDPA q cast", stream_class::copy, 6 * L.T * L.q / L.t);
    k.forward_only("SDPA k cast", stream_class::copy, 6 * L.T * L.w / L.t);
    k.backward_only("q gradient to fp32", stream_class::copy, 6 * L.T * L.q / L.t);
    k.backward_only("k gradient to fp32", stream_class::copy, 6 * L.T * L.w / L.t);
  }
  const double heads = L.m.heads / L.t, d = L.m.head_dim();
  // what SDPA keeps of its inputs (`recipe::attention_input_copies`): q, k and v as projected;
  // or rotated q and k copies, with k and v repeated to every head under GQA, or else v a view
  // that keeps the fused QKV output whole
  const double qkv_kept = !L.r.attention_input_copies ? L.q + 2 * L.w
                          : L.w < L.q                 ? 3 * L.q
                          : fused_qkv                 ? 2 * L.q + 3 * L.w
                                                      : L.q + 2 * L.w;
  // soft-capped scores that the framework writes out op by op (`recipe::capped_run`)
  const bool capped = L.m.attention_softcap > 0 && L.r.capped_run(k.tr.flash_attention) ==
                                                       frameworks::capped_attention::materialized;
  if (k.tr.flash_attention && !capped) {
    kernel_op a{.what = "attention", .part = {}, .kind = kernel_kind::attention};
    a.batch = L.x.b / L.x.cp;
    a.heads = heads;
    a.seq = L.x.seq;
    a.dim = d;
    a.backward = !L.fwd;
    a.op_saved = k.op_sac;
    detail::emit(k.v, a);
    // per-operator checkpointing caches the fused kernel's output and its log-sum-exp (fp32)
    if (k.op_sac && L.fwd) {
      detail::keep(k.v, "cached attention output", L.act * L.T * L.q / L.t);
      detail::keep(k.v, "cached attention log-sum-exp", 4 * L.T * heads);
    }
    // Q, K, V and the output (16-bit); the fused kernel's log-sum-exp (fp32, per row)
    k.save("Q, K, V", L.act * L.T * qkv_kept / L.t);
    if (L.hf) k.save("attention log-sum-exp", 4 * L.T * heads);
  } else {
    detail::unfused_attention(k, L, qkv_kept, capped);
  }
  k.save("attention output", L.act * L.T * L.q / L.t);
  k.graph_input("attention projection", L.act * L.T * L.q / L.t);
  if (L.r.attention_output_copy) k.save("attention output (contiguous)", L.act * L.T * L.q / L.t);
  k.linear("attention projection", L.T, L.h, L.q / L.t, L.m.bias ? L.h : 0.0);
  // Gemma 2 and 3 normalize the branch's output before the residual add
  if (L.m.sandwich_norms) k.norm("post-attention output norm", L.tn, L.h, L.m.norm, !L.hf);
  k.residual(L.tn, L.h, L.mask);
}

/// `transformers`' MixtralSparseMoeBlock with the default `grouped_mm` experts.
template <class B>
constexpr void transformers_moe(const B& k, const layer_shape& L) {
  // transformers' MixtralSparseMoeBlock with the default `grouped_mm` experts
  // (integrations/moe.py, docs/huggingface_recipe.md §6): the router in bf16, its softmax, top-k
  // and renormalization in fp32; the S = k T routed rows sorted by expert and gathered in fp32;
  // each grouped GEMM on the fp32 weights copies its offsets to the host (a synchronization)
  // and runs one fp32 GEMM per expert (TF32 unless `training::tf32` is off; each on its own
  // rows, `expert_load_cv`); SiLU and the gate product; the routing weights,
  // the gather back and the sum over top_k. Backward: the gathers' index_put with its sort, the
  // grouped GEMMs' dX and dW (each synchronizing), the router's. Seen in the H100 trace
  // (test/data/h100_hf_kernels.csv): each grouped GEMM's output is copied on the device and
  // its sentinel rows zeroed by a masked_fill (306 and 397 us for S x 2f fp32), and so is the
  // gradient each backward grouped GEMM takes.
  const double E = L.m.experts, S = L.T * L.m.top_k * L.m.capacity, local = E / L.x.ep;
  const double rows = S * L.x.ep / E;  // per expert on this rank
  const double fe = L.f / L.t, ue = L.up / L.t;
  const auto copy = stream_class::copy, ew = stream_class::elementwise;
  // each grouped GEMM (forward, dX, dW) first copies its E + 1 group offsets to the host
  // (`offs.cpu()`, a device-to-host copy the host waits for)
  auto to_host = [&] { k.memory("expert offsets to host", {}, copy, 4 * (E + 1), 1, true); };
  // one fp32 GEMM per local expert on its own rows; `shape(rows)` gives its m, n, k
  auto experts_gemm = [&](std::string_view what, std::string_view part, auto shape) {
    detail::expert_rows(L.m, rows, local, [&](double own, double times) {
      const std::array<double, 3> mnk = shape(own);
      k.gemm(what, part, mnk[0], mnk[1], mnk[2], times, true);
    });
  };
  if (!k.backward) {
    k.linear("router", L.T, E, L.h, 0.0, 1, true);
    k.memory("router logits to fp32", {}, copy, 6 * L.T * E);
    k.memory("router softmax", {}, stream_class::softmax, 8 * L.T * E);
    k.memory("router top-k, sum, divide", {}, ew, 8 * L.T * E, 3);
    k.memory("sort by expert", {}, copy, 16 * S, 4);
    k.memory("token gather", {}, copy, 8 * S * L.h + 16 * S, 2);
    k.memory("routing bookkeeping", {}, ew, 9 * S, 6);
    k.memory("sentinel masked_fill", {}, ew, 8 * S * L.h);
    to_host();
    experts_gemm("expert up", {}, [&](double own) { return std::array{own, ue, L.h}; });
    k.memory("expert up output", "copy", copy, 8 * S * ue);
    k.memory("expert up output", "masked_fill", ew, 8 * S * ue);
    k.memory("expert SiLU", {}, ew, 8 * S * fe);
    k.memory("expert gate product", {}, ew, 12 * S * fe);
    to_host();
    experts_gemm("expert down", {}, [&](double own) { return std::array{own, L.h, fe}; });
    k.memory("expert down output", "copy", copy, 8 * S * L.h);
    k.memory("routing weights, masked_fill, gather back", {}, ew, 8 * S * L.h, 3);
    k.memory("index bookkeeping", {}, ew, 16 * S, 2);
    k.memory("sum over top-k", {}, ew, 4 * S * L.h + 4 * L.T * L.h);
  } else {
    k.memory("gather back", "backward", copy, 8 * S * L.h + 16 * S, 3);
    k.memory("routing weights and masked_fill", "backward", ew, 8 * S * L.h, 4);
    k.memory("expert down output gradient", "copy", copy, 8 * S * L.h);
    to_host();
    experts_gemm("expert down", "dX", [&](double own) { return std::array{own, fe, L.h}; });
    to_host();
    experts_gemm("expert down", "dW", [&](double own) { return std::array{fe, L.h, own}; });
    k.memory("expert SiLU and gate product", "backward", ew, 12 * S * fe, 3);
    k.memory("gate and up halves", "backward", copy, 8 * S * ue);
    k.memory("expert up output gradient", "copy", copy, 8 * S * ue);
    k.memory("expert up output gradient", "masked_fill", ew, 8 * S * ue);
    to_host();
    experts_gemm("expert up", "dX", [&](double own) { return std::array{own, L.h, ue}; });
    to_host();
    experts_gemm("expert up", "dW", [&](double own) { return std::array{ue, L.h, own}; });
    k.memory("sentinel masked_fill", "backward", copy, 8 * S * L.h);
    k.memory("sentinel masked_fill", "backward", ew, 8 * S * L.h);
    k.memory("token gather", "backward", copy, 8 * S * L.h + 16 * S, 4);
    k.memory("router top-k and softmax", "backward", ew, 8 * L.T * E, 4);
    k.linear("router", L.T, E, L.h, 0.0, 1, true);
  }
  k.save("router probabilities", 4 * L.T * E + 8 * L.T);
  k.save("expert inputs and outputs", S * (8 * L.h + 16 * fe) + 41 * S / L.m.capacity);
}

/// The shared expert of an MoE layer (Qwen2-MoE's `shared_expert`, DeepSeek's `shared_experts`):
/// a SwiGLU MLP `shared_ffn` wide over every token, split over the tensor ranks as a dense MLP;
/// Qwen2-MoE scales it by sigmoid(x w) (`shared_expert_gate`, h -> 1) before adding it to the
/// routed experts' output. Keeps the gate and up outputs and SiLU's (and the product where the
/// down projection needs it), and for the gate its output and the shared expert's.
template <class B>
constexpr void shared_expert(const B& k, const layer_shape& L) {
  const double sf = L.m.shared_ffn / L.t;
  k.linear("shared expert gate and up", L.T, 2 * sf, L.h, 0.0, 1, L.hf);
  k.pointwise("shared expert SiLU and product", stream_class::elementwise, 5 * L.T * sf * L.act);
  k.save("shared expert activation tensors", 3 * L.act * L.T * sf);
  if (k.shared_input_kept({"shared expert down"}))
    k.save("shared expert down input", L.act * L.T * sf);
  k.linear("shared expert down", L.T, L.h, sf, 0.0);
  if (L.m.shared_gate) {
    k.linear("shared expert gate", L.T, 1, L.h, 0.0, 1, L.hf);
    k.pointwise("shared expert sigmoid and scale", stream_class::elementwise,
                3 * L.T * L.h * L.act);
    k.save("shared expert output and gate", L.act * L.T * (L.h + 1));
  }
}

/// The MLP block: the norm, then a dense MLP (GELU, SwiGLU; `transformers`' GPT-2 `gelu_new`)
/// or MoE (router, permutation, this rank's experts), and the residual.
template <class B>
[[gnu::always_inline]] constexpr void mlp_block(const B& k, const layer_shape& L) {
  k.norm("post-attention norm", L.tn, L.h, L.m.norm, !L.hf);
  if (!L.hf || (!k.autocast() && k.shared_input_kept({"MLP up", "MLP gate", "expert up"})))
    k.save("MLP input", L.routed * L.act * L.tn * L.h);
  k.graph_input("MLP up", L.routed * L.act * L.tn * L.h);
  if (L.m.moe() && k.transformers_code()) {
    transformers_moe(k, L);
  } else if (L.m.moe()) {
    const double local = static_cast<double>(L.m.experts) / L.x.ep;  // experts on this rank
    const double rows = L.T * L.m.top_k * L.m.capacity * L.x.ep / L.m.experts;
    k.linear("router", L.T, L.m.experts, L.h, 0.0);
    k.pointwise("token permutation", stream_class::copy, 2 * 2 * L.T * L.m.top_k * L.h * L.act);
    detail::expert_rows(L.m, rows, local, [&](double own, double times) {
      k.linear("expert up", own, L.up / L.t, L.h, 0.0, times);
    });
    k.pointwise("expert activation", stream_class::elementwise,
                L.gate_elems * rows * local * L.act);
    detail::expert_rows(L.m, rows, local, [&](double own, double times) {
      k.linear("expert down", own, L.h, L.f / L.t, 0.0, times);
    });
    k.save("MLP activation tensors", L.routed * L.act * L.gate_elems * L.T);
  } else if (L.hf && !L.gpt2) {
    // act_fn(gate_proj(x)) * up_proj(x): SiLU keeps the gate output, the product both factors;
    // all in fp32 behind a quantized base's fp32 outputs (`quantized_fp32_io`)
    const bool fp32 = k.quantized_fp32_io();
    const double e = fp32 ? 4.0 : L.act, F = L.T * L.f / L.t;
    if (L.swiglu) {
      k.linear("MLP gate", L.T, L.f / L.t, L.h, L.m.bias ? L.f / L.t : 0.0, 1, true);
      k.linear("MLP up", L.T, L.f / L.t, L.h, L.m.bias ? L.f / L.t : 0.0, 1, true);
      if (L.ac)
        k.backward_only("MLP input gradient sum", stream_class::elementwise, 12 * L.T * L.h);
      k.pointwise("SiLU", stream_class::elementwise, 2 * e * F);
      k.forward_only("gate product", stream_class::elementwise, 3 * e * F);
      k.backward_only("gate product", stream_class::elementwise, 3 * e * F, 2);
      // the gate output, SiLU's output and the up output (the product is the down projection's
      // input: kept when that layer needs it)
      k.save("MLP activation tensors", e * 3 * F);
    } else {
      k.linear("MLP up", L.T, L.f / L.t, L.h, L.m.bias ? L.f / L.t : 0.0, 1, true);
      k.pointwise("GELU", stream_class::elementwise, 2 * e * F);
      k.save("MLP activation tensors", e * F);  // GELU's input
    }
    // the product, unless the down projection's own casts keep a copy instead
    if (k.shared_input_kept({"MLP down"}) && !fp32) k.save("MLP down input", L.act * F);
    k.graph_input("MLP down", L.act * F);
    k.linear("MLP down", L.T, L.h, L.f / L.t, L.m.bias ? L.h : 0.0, 1, fp32);
  } else if (k.transformers_code()) {
    // GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) as written, mostly in
    // fp32 (pow is an fp32 autocast op): nine kernels forward, about fifteen backward; it keeps
    // x^3's fp32 input, tanh's output, 0.5 x and 1 + tanh; c_proj casts its fp32 output
    k.linear("MLP up", L.T, L.f / L.t, L.h, L.m.bias ? L.f / L.t : 0.0, 1, true);
    const double F = L.T * L.f / L.t;
    for (const double b : {6.0, 8.0, 8.0, 10.0, 8.0, 8.0, 8.0, 4.0, 10.0})
      k.forward_only("gelu_new", stream_class::elementwise, b * F);
    k.backward_only("gelu_new", stream_class::elementwise, 8 * F, 15);
    k.save("gelu_new tensors", 14 * F);
    k.linear("MLP down", L.T, L.h, L.f / L.t, L.m.bias ? L.h : 0.0, 1, true);
  } else {
    if (L.swiglu && (!L.r.fused_gate_up || k.op_sac)) {
      k.linear("MLP gate", L.T, L.f / L.t, L.h, L.m.bias ? L.f / L.t : 0.0);
      k.linear("MLP up", L.T, L.f / L.t, L.h, L.m.bias ? L.f / L.t : 0.0);
    } else {
      k.linear("MLP up", L.T, L.up / L.t, L.h, L.m.bias ? L.up / L.t : 0.0);
    }
    k.pointwise("MLP activation", stream_class::elementwise, L.gate_elems * L.T * L.act);
    k.linear("MLP down", L.T, L.h, L.f / L.t, L.m.bias ? L.h : 0.0);
    k.save("MLP activation tensors", L.routed * L.act * L.gate_elems * L.T);
  }
  if (L.m.moe() && L.m.shared_ffn > 0) shared_expert(k, L);
  if (L.m.sandwich_norms) k.norm("post-MLP output norm", L.tn, L.h, L.m.norm, !L.hf);
  k.residual(L.tn, L.h, L.mask);
}
}  // namespace detail

namespace detail {
/// DeepSpeed's `BF16_Optimizer` (`sharding::keeps_16bit_gradients`) adds each micro-batch's
/// 16-bit gradients of `n` parameters into its fp32 buffer after the backward: the pipeline
/// engine's `_exec_backward_pass` (and `BF16_Optimizer.backward` on the last stage) calls
/// `update_hp_grads`, whose `hp_grad.add_(lp.grad.to(fp32))` casts (2 B read, 4 written) and
/// adds (4 + 4 read, 4 written): 18 B per parameter, every micro-batch. Under LoRA only the
/// adapters have gradients, a fraction of a percent of the weights: not charged.
template <class B>
constexpr void accumulate_16bit_gradients(const B& k, const training& tr, double n) {
  if (tr.keeps_16bit_gradients() && !tr.lora.on())
    k.backward_only("fp32 gradient accumulation (update_hp_grads)", stream_class::elementwise,
                    18 * n);
}
}  // namespace detail

/// The kernels (issue order) and, forward, the kept tensors of one layer on one rank.
///
/// Under the `transformers` module style (Hugging Face modeling code, see
/// `frameworks/huggingface.hpp`) the layer runs what the modeling files write: separate Q, K, V
/// (and gate, up) projections, each casting the fp32 norm output itself (autocast caches only
/// weights); rotate-half RoPE as five kernels per tensor that leave Q and K in fp32, cast back by
/// SDPA; the k/v cache copies `use_cache` makes in training; SiLU and the gate product as two
/// kernels (GPT-2: the tanh-GELU formula as nine); fp32 residual adds; MoE experts through
/// `grouped_mm` on fp32 weights (a host synchronization and one fp32 GEMM per expert for each).
template <class V>
requires LoweringVisitor<std::remove_cvref_t<V>>
constexpr void layer(const transformer& m, const shard& x, const training& tr, phase ph, V&& v) {
  const bool fwd = ph == phase::forward;
  const bool swiglu = m.mlp == mlp_kind::swiglu;
  const detail::builder<std::remove_reference_t<V>> k{v,
                                                      tr,
                                                      !fwd,
                                                      !parallel::checkpoints_layer(x.recompute),
                                                      parallel::saves_op_outputs(x.recompute),
                                                      swiglu};
  const double t = x.tp, f = m.ffn_size();
  const detail::layer_shape L{.m = m,
                              .x = x,
                              .r = tr.framework,
                              .fwd = fwd,
                              .hf = k.hf(),
                              .ac = k.autocast(),
                              .swiglu = swiglu,
                              .gpt2 = m.positions == position_kind::learned,
                              // `use_cache` (transformers only) is off under checkpointing
                              .use_cache = k.transformers_code() && k.keep,
                              .T = x.tokens(),
                              .tn = x.norm_tokens(),
                              .t = t,
                              .h = static_cast<double>(m.hidden),
                              .q = m.q_width(),
                              .w = m.kv_width(),
                              .f = f,
                              .act = tr.activation_bytes(),
                              .res = tr.residual_bytes(),
                              .mask = m.dropout ? 1.0 : 0.0,
                              .routed = m.moe() ? m.top_k * m.capacity : 1.0,
                              .up = swiglu ? 2 * f : f,
                              .gate_elems = (swiglu ? 3 : 2) * f / t};
  // the layer's input is what a checkpointed layer keeps
  if (fwd && !k.keep) detail::keep(v, "layer input", L.res * L.tn * L.h);
  detail::attention_block(k, L);
  detail::mlp_block(k, L);
  // per-operator checkpointing also caches the sequence-parallel reduce-scatters' outputs
  if (fwd && k.op_sac && x.tp > 1 && x.sp)
    detail::keep(v, "cached reduce-scatter outputs", 2 * L.act * L.tn * L.h);
  if (!fwd)
    detail::accumulate_16bit_gradients(
        k, tr, (m.dense_layer_parameters() + m.expert_layer_parameters() / x.ep) / x.tp);
}

namespace detail {
/// What a report calls tensor parallelism's collective `op`.
constexpr std::string_view tensor_collective_name(comm::collective op) {
  return op == comm::collective::all_reduce   ? "tensor-parallel all-reduce"
         : op == comm::collective::all_gather ? "sequence-parallel all-gather"
                                              : "sequence-parallel reduce-scatter";
}
/// Tensor parallelism's collectives around a latent attention layer (`latent_attention`): its
/// column-parallel side moves the latents, not h. Under sequence parallelism the all-gather of
/// the Q and KV latents and the rotary key (backward its mirror reduce-scatter); without, the
/// backward all-reduce of the up projections' input gradients (the rotary key's is not reduced:
/// Megatron-LM issue #1699). The others move b s h, as a layer's.
template <class V>
[[gnu::noinline]] constexpr void latent_tensor_collectives(const transformer& m, const shard& x,
                                                           const training& tr, phase ph, V& v) {
  const double act = tr.activation_bytes(), h = m.hidden;
  const bool fwd = ph == phase::forward;
  const comm::collective entry =
      x.sp ? (fwd ? comm::collective::all_gather : comm::collective::reduce_scatter)
           : (fwd ? comm::collective::send_recv : comm::collective::all_reduce);  // none forward
  const double latents =
      (m.q_lora_rank > 0 ? m.q_lora_rank : h) + m.kv_lora_rank + (x.sp ? m.qk_rope_dim : 0);
  for (const auto& [op, count] : parallel::tensor_parallel{x.tp, x.sp}.collectives())
    for (int i = 0; i < count; ++i)
      communicate(v, {tensor_collective_name(op), op, comm_axis::tensor,
                      (op == entry && i == 0 ? latents : h) * x.b * x.s * act, ph});
}
}  // namespace detail

/// The blocking collectives of one layer's forward or backward: tensor parallelism's two
/// all-reduces per pass of the b s h activation (Shoeybi et al. §3; with sequence parallelism an
/// all-gather and a reduce-scatter of the same bytes, Korthikanti et al. §4.2.2), ring
/// attention's K/V blocks (Liu et al. 2023: c - 1 transfers of the rank's K and V, as one
/// `send_recv` op of their total), MoE's dispatch and combine all-to-alls of the routed tokens.
/// Latent attention's tensor-parallel collectives: `detail::latent_tensor_collectives`.
template <class V>
requires LoweringVisitor<std::remove_cvref_t<V>>
constexpr void layer_collectives(const transformer& m, const shard& x, const training& tr, phase ph,
                                 V&& v) {
  const double act = tr.activation_bytes(), h = m.hidden;
  const double bsh = x.b * x.s * h * act;
  if (x.tp > 1 && m.mla()) {
    detail::latent_tensor_collectives(m, x, tr, ph, v);
  } else if (x.tp > 1) {
    for (const auto& [op, count] : parallel::tensor_parallel{x.tp, x.sp}.collectives())
      for (int i = 0; i < count; ++i)
        detail::communicate(v,
                            {detail::tensor_collective_name(op), op, comm_axis::tensor, bsh, ph});
  }
  if (x.cp > 1)  // K and V blocks forward; blocks and their gradients backward
    detail::communicate(
        v, {"ring attention K/V", comm::collective::send_recv, comm_axis::context,
            m.mla() ? x.b * x.s * m.heads * (m.latent_qk_dim() + m.v_head_dim) / x.tp * act
                    : 2 * x.b * x.s * m.kv_width() / x.tp * act,
            ph, parallel::context_parallel{x.cp}.transfers(ph == phase::backward)});
  if (m.moe() && x.ep > 1)
    for (int i = 0; i < parallel::expert_parallel::all_to_alls; ++i)
      detail::communicate(v, {i == 0 ? "MoE dispatch all-to-all" : "MoE combine all-to-all",
                              comm::collective::all_to_all, comm_axis::expert,
                              x.b * x.s * m.top_k * m.capacity * h * act, ph});
}

/// The token embedding (first stage): a gather of b s h activations; backward the same bytes
/// scattered into the gradient. Keeps the input dropout mask (Korthikanti et al. §4.3). Under the
/// `transformers` style the gather is fp32 (the residual stream starts there), learned positions
/// are added, and the backward zero-fills the V x h fp32 gradient and accumulates into it (a tied
/// matrix then adds the head's gradient).
template <class V>
requires LoweringVisitor<std::remove_cvref_t<V>>
constexpr void embedding(const transformer& m, const shard& x, const training& tr, phase ph,
                         V&& v) {
  const bool fwd = ph == phase::forward;
  const detail::builder<std::remove_reference_t<V>> k{v, tr, !fwd};
  const double T = x.tokens(), h = m.hidden, act = tr.activation_bytes();
  if (!k.hf()) {
    k.memory("embedding", fwd ? "" : "backward", stream_class::copy,
             2 * T * h * act / (x.sp ? x.tp : 1));
  } else {
    const double Vh = m.vocabulary * h / static_cast<double>(x.tp);
    k.forward_only("embedding", stream_class::copy, 8 * T * h);
    if (m.positions == position_kind::learned)
      k.forward_only("position embedding add", stream_class::elementwise, 12 * T * h);
    k.backward_only("embedding gradient zero-fill", stream_class::copy, 4 * Vh);
    k.backward_only("embedding gradient accumulate", stream_class::copy, 8 * T * h);
    if (m.tied) k.backward_only("tied gradient add", stream_class::elementwise, 12 * Vh);
  }
  if (!fwd) detail::accumulate_16bit_gradients(k, tr, m.embedding_parameters() / x.tp);
  // after the tensor-parallel all-reduce the embedding's output is whole on every rank; sequence
  // parallelism scatters it first (Megatron's `Embedding.forward`)
  if (fwd && m.dropout) detail::keep(v, "embedding dropout mask", x.norm_tokens() * h);
}

namespace detail {
/// The logits' soft-cap (`transformer::final_softcap`, `recipe::caps_logits`): x / c, tanh, x c
/// over the `logits` (transformers' Gemma2ForCausalLM.forward, litgpt/model.py `GPT.forward`),
/// the tanh's output kept for its backward; backward the three again, tanh_backward reading the
/// gradient and that output. Out of line: `head` stays small enough to inline.
template <class B>
[[gnu::noinline]] constexpr void logit_cap(const B& k, double logits) {
  const double act = k.tr.activation_bytes();
  if (!k.backward) {
    for (const std::string_view op : {"logit cap divide", "logit cap tanh", "logit cap multiply"})
      k.memory(op, {}, stream_class::elementwise, 2 * act * logits);
    k.save("logit cap tanh output", act * logits);
    return;
  }
  k.memory("logit cap multiply", "backward", stream_class::elementwise, 2 * act * logits);
  k.memory("logit cap tanh", "backward", stream_class::elementwise, 3 * act * logits);
  k.memory("logit cap divide", "backward", stream_class::elementwise, 2 * act * logits);
}
}  // namespace detail

/// The head (last stage): the final norm, the vocabulary projection (split over the tensor
/// ranks) and the loss; backward the loss's gradient, the projection's dX and dW and the norm's
/// backward. Fused loss (Megatron, nanoGPT): one cross-entropy over fp32 logits (read, write,
/// softmax and its gradient: four fp32 passes over T x V / t). `transformers`: `logits.float()`,
/// log-softmax, NLL; backward NLL's zero-filled gradient, log-softmax's backward and the cast back
/// to bf16. Keeps the norm's tensors and the projection's input (and weight copy).
template <class V>
requires LoweringVisitor<std::remove_cvref_t<V>>
constexpr void head(const transformer& m, const shard& x, const training& tr, phase ph, V&& v) {
  const bool fwd = ph == phase::forward;
  const detail::builder<std::remove_reference_t<V>> k{v, tr, !fwd};
  const bool hf = k.hf();
  const double T = x.tokens(), h = m.hidden, Vt = m.vocabulary / static_cast<double>(x.tp);
  const double logits = T * Vt;
  // an untied head's own matrix (a tied one's gradient is the embedding's)
  if (!fwd && !m.tied) detail::accumulate_16bit_gradients(k, tr, Vt * h);
  // LitGPT's `lm_head_chunk_size`: the projection runs per chunk of positions
  // (`recipe::head_chunk`), a quantized head dequantized for each
  const double chunks =
      tr.framework.head_chunk > 0 ? strata::detail::ceil_of(x.s / tr.framework.head_chunk) : 1.0;
  const auto project = [&] {
    k.linear("output projection", T / chunks, Vt, h, 0.0, chunks, hf,
             tr.framework.vocabulary_padding > 1);
  };
  const bool capped = m.final_softcap > 0 && tr.framework.caps_logits;
  if (fwd) {
    if (tr.framework.loss == frameworks::loss_style::vocab_parallel) {
      // Korthikanti et al. §4.3: the final norm's and the projection's inputs split over the
      // tensor ranks, 4 s b h / t with 2-byte activations, and the fp32 logits, 4 s b V / t,
      // kept through the backward
      k.norm("final norm", x.norm_tokens(), h, m.norm, !hf, false);
      k.save("final norm and projection inputs", 2 * tr.activation_bytes() * T * h / x.tp);
      k.save("fp32 logits", 4 * logits);
    } else {
      k.norm("final norm", x.norm_tokens(), h, m.norm, !hf);
      const double input = tr.activation_bytes() * x.norm_tokens() * h;
      if (!hf || (tr.framework.quantizes_head && tr.lora.quantized() && tr.lora.keeps_inputs))
        k.save("output projection input", input);
      k.graph_input("output projection", input);
    }
    project();
    if (capped) detail::logit_cap(k, logits);
    if (!hf) {
      k.memory("cross-entropy (fp32 logits)", {}, stream_class::softmax, 16 * logits);
    } else {
      // PyTorch's cunn_SoftMaxForward over rows this long reads each row three times (its
      // maximum, the sum of exponentials, the output) and writes it once: 16 B per fp32 logit
      // at streaming bandwidth (measured on the H100: 2.06 ms for GPT-2's 8192 x 50257 logits,
      // 6.61 ms for Qwen2.5's 8192 x 151936; `test/data/h100_hf_kernels.csv`)
      k.memory("logits to fp32", {}, stream_class::copy, 6 * logits);
      k.memory("log-softmax", {}, stream_class::copy, 16 * logits);
    }
    return;
  }
  if (hf) {
    // cunn_SoftMaxBackward: one read of the gradient for its row sum, then the gradient and
    // the output read and the input gradient written: 16 B per logit (2.28 and 6.76 ms measured)
    k.memory("NLL gradient zero-fill", {}, stream_class::copy, 4 * logits);
    k.memory("log-softmax", "backward", stream_class::copy, 16 * logits);
    k.memory("logits gradient to bf16", {}, stream_class::copy, 6 * logits);
  }
  if (capped) detail::logit_cap(k, logits);
  project();
  if (!hf)
    k.memory("final norm", "backward", stream_class::layer_norm,
             4 * x.norm_tokens() * h * tr.activation_bytes());
  else
    k.norm("final norm", x.norm_tokens(), h, m.norm, false);
}

/// The weight matrices one layer's forward multiplies by on one rank: the submodules a ZeRO-3
/// engine that fetches per module (DeepSpeed) gathers one call each. Read off the lowering's
/// forward GEMMs (each is x W^T with W of n x k); a grouped expert GEMM is one module holding
/// every local expert. Matrices under `threshold` elements stay whole on every rank (DeepSpeed's
/// `stage3_param_persistence_threshold`), as do norms and biases.
struct layer_weights {
  double modules = 0;   ///< matrices gathered one call each
  double elements = 0;  ///< their elements
  double largest = 0;   ///< the largest one's elements
};
[[nodiscard]] constexpr layer_weights weight_modules(const transformer& m, const shard& x,
                                                     const training& tr, double threshold = 0) {
  struct visitor {
    double threshold;
    layer_weights out{};
    constexpr void kernel(const kernel_op& k) {
      if (k.kind != kernel_kind::gemm || !k.part.empty()) return;
      const double e = k.n * k.k * k.times;
      if (e < threshold) return;
      out.modules += 1;
      out.elements += e;
      out.largest = out.largest > e ? out.largest : e;
    }
  } v{threshold};
  layer(m, x, tr, phase::forward, v);
  return v.out;
}

/// The LoRA adapter parameters of one layer on one rank (`training::lora`): r (n + k)
/// for each adapted n x k weight, read off the lowering's forward adapter GEMMs; with
/// `min_tensor`, those of the factors of at least that many elements only.
[[nodiscard]] constexpr double adapter_parameters(const transformer& m, const shard& x,
                                                  const training& tr, double min_tensor = 0) {
  if (!tr.lora.on()) return 0;
  struct visitor {
    double min, out = 0;
    constexpr void kernel(const kernel_op& k) {
      if (k.kind != kernel_kind::gemm || k.n * k.k < min) return;
      if (k.part == "LoRA A") out += k.times * k.n * k.k;  // A: r x k
      if (k.part == "LoRA B") out += k.times * k.n * k.k;  // B: n x r
    }
  } v{min_tensor};
  layer(m, x, tr, phase::forward, v);
  return v.out;
}

/// Parameter tensors of the model (one optimizer "tensor" each, for the per-tensor host cost).
[[nodiscard]] constexpr double parameter_tensors(const transformer& m,
                                                 const frameworks::recipe& r) {
  const bool swiglu = m.mlp == mlp_kind::swiglu;
  const bool hf = r.modules == frameworks::module_style::transformers;
  const double qkv = r.fused_qkv || (hf && m.positions == position_kind::learned) ? 1 : 3;
  const double mlp = (swiglu && !r.fused_gate_up ? 2 : 1) + 1;
  // transformers' MoE keeps each layer's experts in two 3-D tensors
  const double experts = hf ? 2 : m.experts * mlp;
  const double linears = qkv + 1 + (m.moe() ? experts + 1 : mlp);
  const double biases = m.bias ? linears - (m.moe() ? 1 : 0) : (m.qkv_bias ? qkv : 0);
  const double norm = m.norm == norm_kind::layer_norm ? 2 : 1;
  return m.layers * (linears + biases + 2 * norm) + 1 +
         (m.positions == position_kind::learned ? 1 : 0) + norm + (m.tied ? 0 : 1);
}

}  // namespace strata::lower
