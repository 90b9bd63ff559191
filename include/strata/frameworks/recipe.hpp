#pragma once
/// @file frameworks/recipe.hpp
/// @brief A framework recipe: the facts of how a training framework runs a model that change its
/// time and memory — which kernels it launches, which tensors autograd keeps, how it stores
/// weights, gradients and optimizer states, and whether the host's dispatch shows.
///
/// A recipe is a type and a value: `recipes::megatron`, `pytorch_eager`,
/// `pytorch_eager_modules`, `huggingface`, `deepspeed` and `fsdp` (`frameworks/*.hpp`) are types
/// derived from `recipe` whose constructors set the rules read from each framework's source (cited
/// there), and `frameworks::megatron`, ... are their values. A training setup holds the rules as a
/// `recipe` value, so a plan that names one stays `constexpr`. A user describes another stack by
/// deriving from the nearest recipe type and changing the rules that differ
/// (`examples/user_recipe.cpp`); the `Recipe` concept checks such a type.
/// @code
/// struct my_loop : strata::recipes::pytorch_eager {
///   constexpr my_loop() {
///     name = "my loop";
///     workspace = 0;  // no cuBLAS workspace counted
///   }
/// };
/// static_assert(strata::frameworks::Recipe<my_loop>);
/// strata::training t{.framework = my_loop{}};
/// @endcode

#include <concepts>
#include <string_view>
#include <type_traits>

namespace strata::frameworks {

/// How the module code writes a block's pieces (the kernels they become and what they keep).
enum class module_style {
  fused,         ///< one kernel per norm, activation and rotary embedding (Megatron, nanoGPT)
  transformers,  ///< Hugging Face `transformers` modeling code: norms, RoPE and gates as op chains
  /// torch.nn modules in plain eager code (a Llama written with `nn.RMSNorm`, separate
  /// projections and SDPA): RoPE and gates as op chains as `transformers` writes them, but each
  /// norm one fp32 kernel (PyTorch's own RMSNorm and LayerNorm) and no k/v cache
  eager_modules
};

/// What the loss keeps (bytes per logit on the last stage).
enum class loss_style {
  vocab_parallel,  ///< Megatron's fused cross-entropy on fp32 logits (Korthikanti et al. §4.3)
  eager,           ///< F.cross_entropy on the model's logits, upcast to fp32 inside the loss
  transformers,    ///< `logits.float()` in the model's loss function, then F.cross_entropy
  /// the output projection and the loss in chunks of tokens (LitGPT's `lm_head_chunk_size` with
  /// `chunked_cross_entropy`, torchtune's `CEWithChunkedOutputLoss`): each chunk's log-softmax
  /// is kept, never the whole fp32 logits with their gradient at once
  chunked
};

/// The engine that runs data parallelism and ZeRO: it decides how model states are stored and
/// sharded, how many collectives a step issues and which buffers they hold.
enum class data_engine {
  megatron,   ///< DDP-style gradient buckets, the distributed optimizer (ZeRO-1), fp32 main_grad
  deepspeed,  ///< DeepSpeed's ZeRO 1-3 (runtime/zero/stage_1_and_2.py, stage3.py)
  fsdp        ///< PyTorch FSDP (FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2, NO_SHARD = 0)
};

/// What pipelines the tensor-parallel collectives with GEMMs under `recipe::tp_comm_overlap`
/// (with sequence parallelism each block gathers its input before its column-parallel GEMM and
/// reduce-scatters its output after its row-parallel one; `analytic::overlapped_layer_comm`).
enum class tp_overlap_engine {
  /// Transformer Engine's userbuffers (Megatron-Core's `--tp-comm-overlap`, NeMo): every
  /// collective of both passes beside the GEMM it feeds or drains (`initialize_ub` in
  /// transformer_engine/pytorch/module/base.py: ring-exchange or pipelined overlaps of the
  /// qkv, proj, fc1 and fc2 forward GEMMs and of the proj and fc2 input gradients; bulk overlaps
  /// of the input's re-gather beside the qkv and fc1 input gradients and of their reduce-scatter
  /// beside the weight gradients)
  userbuffers,
  /// PyTorch's micro-pipelined tensor parallelism (torch.compile's `micro_pipeline_tp_pass`,
  /// torch/_inductor/fx_passes/micro_pipeline_tp.py; torchtitan's async TP), which fuses what
  /// matches `all_gather -> mm` and `reduce_scatter(mm)`: forward all four; backward the
  /// gathers of the output gradient before the row-parallel input gradients. The reduce-scatter
  /// of a column-parallel input gradient reduces a sum of matmuls (Q, K and V; gate and up),
  /// which the pattern does not match: it blocks
  micro_pipeline
};

/// Where ZeRO-Offload and ZeRO-Infinity keep what they take off the GPU.
enum class offload_device { none, cpu, nvme };

/// What a framework does with attention whose scores are soft-capped
/// (`transformer::attention_softcap`, Gemma 2): nothing known (a plan is refused, naming the
/// recipe); the scores materialized and capped kernel by kernel, since SDPA has no cap (LitGPT,
/// torchtune, a model written in eager PyTorch); or the cap dropped by the fused attention
/// (`transformers`' SDPA attention, which takes no `softcap` argument and ignores it, as its
/// warning for Gemma 2 says) and applied, the scores written out, by the unfused one
/// (`training::flash_attention` off: `attn_implementation="eager"`).
enum class capped_attention { unknown, materialized, dropped };

/// How a framework's data-parallel engine stores and moves model states (`data_engine`), with
/// its configuration knobs. The sizes are bytes of 16-bit values, as the engines count elements.
struct sharding {
  data_engine engine = data_engine::megatron;
  /// The ZeRO stage the engine runs when a plan does not name one (FSDP: FULL_SHARD, 3 —
  /// torch.distributed.fsdp.ShardingStrategy's default; Megatron and DeepSpeed: 0). A scenario
  /// that leaves `zero` out gets it, and its report names it.
  int default_stage = 0;
  /// The highest ZeRO stage the framework has (Megatron-LM 2021: 0, no distributed optimizer).
  int highest_stage = 3;
  /// Gradient bytes per reduction call under ZeRO-2/3 (DeepSpeed's `reduce_bucket_size`);
  /// 0: one call per layer (FSDP reduce-scatters each unit, Megatron each micro-batch's layer).
  double reduce_bucket = 0;
  /// Weight bytes ZeRO-3 gathers ahead of the compute (DeepSpeed's
  /// `stage3_prefetch_bucket_size`); 0: one unit ahead (FSDP's backward/forward prefetch).
  double prefetch_bucket = 0;
  /// Parameters with fewer elements than this are never partitioned under ZeRO-3 (DeepSpeed's
  /// `stage3_param_persistence_threshold`): norms and biases stay whole on every rank.
  double persistence_threshold = 0;
  /// The optimizer step makes an fp32 copy of the rank's gradient partition, this many
  /// elements at a time (DeepSpeed's `sub_group_size`); 0: none (the gradients are fp32).
  double fp32_gradient_group = 0;
  /// The 16-bit `.grad` tensors autograd makes stay alive beside fp32 gradient buffers until
  /// the next backward: DeepSpeed's BF16_Optimizer under its pipeline engine adds them into its
  /// fp32 buffer with `update_hp_grads(clear_lp_grads=False)` and clears them only before the
  /// next backward (runtime/pipe/engine.py, `_exec_backward_pass`; runtime/bf16_optimizer.py).
  bool keeps_16bit_gradients = false;
  /// ZeRO-Offload: optimizer states and fp32 master weights on the host (`cpu`) or on NVMe
  /// (ZeRO-Infinity); the optimizer step then runs on the CPU.
  offload_device offload_optimizer = offload_device::none;
  /// ZeRO-Infinity: the 16-bit weight partitions on the host or NVMe too (ZeRO-3 only).
  offload_device offload_parameters = offload_device::none;
};

struct recipe {
  std::string_view name = "megatron";
  /// `torch.autocast` over fp32 parameters: each linear layer's weight is cast to the compute
  /// type on every forward (autograd holds the copy until its backward) and its gradient cast back;
  /// norms and the residual stream stay fp32 and their outputs are cast. false: the framework
  /// keeps 16-bit working weights and fp32 master copies (Micikevicius et al. 2018, Megatron).
  bool autocast = false;
  /// The model is loaded in 16 bits and trained so (LitGPT's `bf16-true`, torchtune's
  /// `dtype: bf16`): no autocast and no fp32 master weights; gradients and the optimizer's
  /// moments in the parameters' type (torch.optim keeps its states in each parameter's dtype).
  bool pure_16bit = false;
  /// Python issues every kernel (eager PyTorch): the profile's `dispatch` costs are host time the
  /// GPU may wait for. false: kernels are queued far ahead of the GPU (host time hidden).
  bool eager = false;
  /// Host time of one kernel of this recipe's lowering, as a share of the profile's
  /// `dispatch.per_kernel`. That cost is fitted on nanoGPT's eager steps, whose lowering lumps
  /// about two launches into each kernel (836 kernels and memsets for the 444 kernels of GPT-2
  /// 124M, test/data/h100_trace_gpt2-124M_b8.json); a recipe whose lowering lists finer kernels
  /// pays less for each: its host time per kernel over nanoGPT's, both measured launch-bound on
  /// one machine (test/data/h100_host_steps.csv).
  double dispatch_share = 1;
  module_style modules = module_style::fused;
  loss_style loss = loss_style::vocab_parallel;
  bool fused_qkv = true;      ///< one GEMM for Q, K and V (false: three projections)
  bool fused_gate_up = true;  ///< SwiGLU's gate and up projections as one GEMM
  /// the attention output is made contiguous before the output projection, and autograd keeps
  /// both the kernel's output and the copy
  bool attention_output_copy = false;
  /// gradients live in persistent buffers (Megatron's main_grad); false: allocated during
  /// backward and freed by `zero_grad(set_to_none=True)`
  bool persistent_gradients = true;
  /// the training loop keeps the model's logits through the backward (nanoGPT's forward returns
  /// them) and, holding them until the next forward rebinds the name, the step's autograd graph
  /// into the next step; false: only the loss leaves the model
  bool keep_logits = false;
  /// the model's outputs are cast to fp32 before the loop sees them (Lightning Fabric's
  /// `precision.convert_output`, to `torch.get_default_dtype()`): the held logits are fp32
  bool fp32_outputs = false;
  /// RMSNorm upcasts its input (`x.float()`, LitGPT's and torchtune's own RMSNorm) and autograd
  /// keeps that fp32 copy; false: the norm keeps its input as the residual stream holds it
  bool norm_fp32_input = false;
  /// RMSNorm is written as tensor ops and runs as one kernel each (pow, mean, + eps, rsqrt,
  /// x r, the cast back, w n; `transformers`' and torchtitan's own RMSNorm without
  /// torch.compile); false: one fused kernel (Megatron's, `nn.RMSNorm`'s on current PyTorch).
  /// The `transformers` module style always runs the op chain.
  bool rmsnorm_op_chain = false;
  /// Rotary embedding as complex products (torchtitan's `apply_rotary_emb`:
  /// `view_as_complex(x.float())`, the product with `freqs_cis`, `type_as(x)`; three kernels per
  /// tensor each way, nothing kept, as `freqs_cis` needs no gradient); false under eager module
  /// styles: the rotate-half chain of Hugging Face's `apply_rotary_pos_emb` (five kernels)
  bool rope_complex = false;
  /// attention's inputs as LitGPT writes them: q and k rotated into new tensors and, with fewer
  /// k/v heads than query heads, k and v repeated to every head (`expand` then `reshape`,
  /// copies); SDPA keeps what it is given, so with one k/v head per query head v stays a view
  /// of the fused QKV output and keeps it whole
  bool attention_input_copies = false;
  /// LitGPT's `LoRAQKVLinear` with some of q, k, v adapted: the adapters' outputs are scattered
  /// into a zero QKV-wide tensor by an out-of-place `index_copy`, whose backward keeps its source
  bool lora_zero_pad = false;
  /// the framework's bitsandbytes plugin replaces every `nn.Linear`, the head too (Lightning's
  /// `BitsandbytesPrecision`): a quantized base stores the head quantized and dequantizes it
  /// for each of its GEMMs (LitGPT runs the head per chunk of tokens, dequantizing it per chunk)
  bool quantizes_head = false;
  /// the plugin quantizes an fp16 copy of each weight (Lightning: `weight.to(torch.half)`), so
  /// bitsandbytes' dequantization writes fp16 and `MatMul4Bit` casts it to the activations'
  /// bf16: 4 B per element live (2 B when the quantized state is in the compute type)
  bool fp16_quant_state = false;
  /// the head runs per chunk of this many sequence positions (LitGPT's `lm_head_chunk_size`,
  /// 128 in its fine-tuning scripts): the same GEMM work in smaller GEMMs, and a quantized head
  /// dequantized once per chunk; 0: one projection over the whole sequence
  double head_chunk = 0;
  /// the framework's model always has its own head matrix: a tied checkpoint's embedding is
  /// copied into it (LitGPT's scripts/convert_hf_checkpoint.py; its `GPT` never ties them), so a
  /// plan must describe the model untied (`transformer::tied` false; scenarios untie it and say so)
  bool separate_head = false;
  double workspace = 0;              ///< bytes of BLAS workspace held by the allocator
  double batch_bytes_per_token = 0;  ///< input ids and labels kept on the GPU
  /// the framework pads the vocabulary to a multiple of this times the tensor degree (Megatron-LM's
  /// `--make-vocab-size-divisible-by`, 128), so the head's GEMMs are aligned whatever the model's
  /// vocabulary; 1: the vocabulary is used as configured (an unpadded one slows the head,
  /// `lower::misaligned_gemm_peak_fraction`). The padded rows' extra work (under 2 %) is not
  /// counted.
  int vocabulary_padding = 128;
  /// tensor-parallel all-gathers and reduce-scatters pipelined with the GEMMs beside them
  /// (Megatron-Core's `--tp-comm-overlap`, Transformer Engine userbuffers; torchtitan's async TP;
  /// `analytic::overlapped_layer_comm`); false: they block the stream
  bool tp_comm_overlap = false;
  /// what does that overlap, and which collectives it covers
  frameworks::tp_overlap_engine tp_overlap = frameworks::tp_overlap_engine::userbuffers;
  /// a column-parallel linear's backward runs its block's tensor-parallel collectives beside its
  /// GEMMs (Megatron-LM's `LinearWithGradAccumulationAndAsyncCommunication`, core/tensor_parallel/
  /// layers.py, under its required CUDA_DEVICE_MAX_CONNECTIONS=1): the input gradient's
  /// all-reduce, or under sequence parallelism its reduce-scatter, beside the weight gradient's
  /// GEMM, and under sequence parallelism the input's re-gather beside the input gradient's GEMM
  /// (`analytic::collectives_of`); false: every backward collective blocks, as in the forward
  bool tp_async_backward = true;
  /// an interleaved pipeline's sends run beside the compute: a stage waits only where the data
  /// it needs is still on the wire, which in the steady state it never is (Megatron-Core's
  /// overlap_p2p_comm, the default since 2023-10-12, megatron/training/arguments.py
  /// --no-overlap-p2p-communication; NeMo's configs set it); false: each send blocks its
  /// stage (Megatron-LM before 2023, batched p2p). Megatron turns it off for 1F1B without
  /// interleaving, whose sends every stage waits for anyway
  /// (`parallel::pipeline_parallel::sends`)
  bool overlap_p2p = true;
  /// under an interleaved schedule each model chunk's gradients are reduced once its last
  /// micro-batch's backward on the stage ends and its updated weights gathered ahead of its first
  /// forward (Megatron-Core's grad_sync_func and param_sync_func in
  /// core/pipeline_parallel/schedules.py, with --overlap-grad-reduce and --overlap-param-gather;
  /// `parallel::data_parallel::behind_chunks`); false: the stage's traffic hides behind one
  /// micro-batch's pass at most (Megatron-LM 2021 all-reduced its gradient buffer after the
  /// backward)
  bool chunk_data_sync = true;
  /// pipelines run on DeepSpeed's pipeline engine (Megatron-DeepSpeed's `PipelineModule`,
  /// runtime/pipe/engine.py), which keeps per buffer slot the received activation and the stage's
  /// output (`analytic::pipe_buffers`); false: Megatron's schedule, which frees an output's data
  /// once sent (`deallocate_output_tensor`)
  bool pipe_buffers = false;
  /// soft-capped attention (Gemma 2) as the framework runs it
  frameworks::capped_attention capped_attention = frameworks::capped_attention::unknown;
  /// What runs for soft-capped attention with fused attention on or off
  /// (`training::flash_attention`): a cap the fused kernel drops is written out by the unfused
  /// attention.
  [[nodiscard]] constexpr frameworks::capped_attention capped_run(bool flash_attention) const {
    if (capped_attention == frameworks::capped_attention::dropped && !flash_attention)
      return frameworks::capped_attention::materialized;
    return capped_attention;
  }
  /// the logits are soft-capped when the model says so (`transformer::final_softcap`): the tanh's
  /// output kept and three elementwise kernels each way; false: the framework's training forward
  /// leaves them uncapped
  bool caps_logits = true;
  /// the data-parallel engine and its configuration (ZeRO, FSDP, offload)
  sharding data{};
};

/// A framework recipe type: derived from `recipe` (its rules are the fields its constructor
/// sets), copied as plain data and default-constructible in a constant expression, so that a plan
/// naming it stays `constexpr`.
template <class R>
concept Recipe = std::derived_from<R, recipe> && std::is_trivially_copyable_v<R> &&
    std::default_initializable<R> && requires {
  typename std::integral_constant<bool, (R{}.autocast || true)>;
};

/// The rules of recipe `r` as the value a training setup holds (`training::framework`).
template <Recipe R>
[[nodiscard]] constexpr recipe rules_of(const R& r) {
  return r;
}

}  // namespace strata::frameworks
