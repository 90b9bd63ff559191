#pragma once
/// @file training.hpp
/// @brief The training setup of every plan, CNN or transformer: batch, dataset, sequence,
/// precision, optimizer, the framework recipe and its runtime memory, LoRA.
/// @code
/// constexpr strata::training cnn{.batch = 256, .dataset = 1'281'167};  // fp32, SGD (ParaDL)
/// static_assert(cnn.iterations() > 5000);
/// constexpr strata::training llm{.batch = 64, .sequence = 4096};  // bf16 mixed, Adam
/// static_assert(llm.mixed() && llm.optimizer_bytes() == 12);
/// @endcode

#include <string_view>

#include "strata/error.hpp"
#include "strata/frameworks/megatron.hpp"
#include "strata/hardware/device.hpp"

namespace strata {

/// Optimizers, by the per-parameter state they keep. `automatic`: the model family's convention
/// (`family_defaults`). `adam_8bit`: bitsandbytes' 8-bit Adam/AdamW (`bnb.optim.AdamW8bit`), two
/// moments quantized block-wise (`state_bytes`).
enum class optimizer { automatic, sgd, momentum, adam, adam_8bit };

/// Extra values per parameter: none for SGD, one velocity for momentum, two moments for Adam
/// (give a resolved optimizer: `training::optimizer_for`).
[[nodiscard]] constexpr int states_per_param(optimizer o) {
  switch (o) {
    case optimizer::automatic:
    case optimizer::sgd:
      return 0;
    case optimizer::momentum:
      return 1;
    case optimizer::adam:
    case optimizer::adam_8bit:
      return 2;
  }
  return 0;
}

/// Bytes of one optimizer state value: fp32 (4), or bitsandbytes' 8-bit states, one byte each
/// plus an fp32 absolute maximum per block of 256 values (bitsandbytes/optim/optimizer.py,
/// `Optimizer8bit.init_state`: `blocks = n // 256`, `absmax1`/`absmax2` fp32; Dettmers et al.
/// 2022, "8-bit Optimizers via Block-wise Quantization", §2).
[[nodiscard]] constexpr double state_bytes(optimizer o) {
  return o == optimizer::adam_8bit ? 1.0 + 4.0 / 256 : 4.0;
}

/// Bytes the weight update reads and writes per parameter, in units of delta: SGD reads w and
/// dL/dw and writes w (3); momentum adds a read and write of the velocity (5); Adam of two
/// moments (7).
[[nodiscard]] constexpr int update_passes(optimizer o) { return 3 + 2 * states_per_param(o); }

[[nodiscard]] constexpr std::string_view to_string(optimizer o) {
  switch (o) {
    case optimizer::automatic:
      return "automatic";
    case optimizer::sgd:
      return "sgd";
    case optimizer::momentum:
      return "momentum";
    case optimizer::adam:
      return "adam";
    case optimizer::adam_8bit:
      return "adam_8bit";
  }
  return "sgd";
}

/// How a model is trained numerically.
/// - One type for every tensor (`fp32`, `tf32`: fp32 storage with TF32 arithmetic, `fp16`,
///   `bf16`, `fp8`): ParaDL's delta; what CNN plans take.
/// - Mixed modes compute in 16 (or 8) bits and keep fp32 master weights in the optimizer
///   (Micikevicius et al. 2018); `fp8_mixed` runs the GEMMs in fp8 and stores weights and
///   activations as bf16 (Transformer Engine's default recipe). Transformer plans take these and
///   `fp32`.
/// - `automatic`: the model family's convention (`family_defaults`).
enum class precision_mode {
  automatic,
  fp32,
  tf32,
  fp16,
  bf16,
  fp8,
  fp16_mixed,
  bf16_mixed,
  fp8_mixed
};

[[nodiscard]] constexpr std::string_view to_string(precision_mode p) {
  switch (p) {
    case precision_mode::automatic:
      return "automatic";
    case precision_mode::fp32:
      return "fp32";
    case precision_mode::tf32:
      return "tf32";
    case precision_mode::fp16:
    case precision_mode::fp16_mixed:
      return "fp16";
    case precision_mode::bf16:
    case precision_mode::bf16_mixed:
      return "bf16";
    case precision_mode::fp8:
    case precision_mode::fp8_mixed:
      return "fp8";
  }
  return "fp32";
}

/// Whether `p` keeps fp32 master weights beside 16- or 8-bit working copies.
[[nodiscard]] constexpr bool is_mixed(precision_mode p) {
  return p == precision_mode::fp16_mixed || p == precision_mode::bf16_mixed ||
         p == precision_mode::fp8_mixed;
}

/// The arithmetic type of mode `p` (resolved): the GEMMs' type under a mixed mode.
[[nodiscard]] constexpr dtype compute_type(precision_mode p) {
  switch (p) {
    case precision_mode::automatic:
    case precision_mode::fp32:
      return dtype::fp32;
    case precision_mode::tf32:
      return dtype::tf32;
    case precision_mode::fp16:
    case precision_mode::fp16_mixed:
      return dtype::fp16;
    case precision_mode::bf16:
    case precision_mode::bf16_mixed:
      return dtype::bf16;
    case precision_mode::fp8:
    case precision_mode::fp8_mixed:
      return dtype::fp8;
  }
  return dtype::fp32;
}

/// What a setup's `automatic` precision and optimizer mean for one model family.
struct family_defaults {
  precision_mode precision;
  optimizer optim;
};
/// ParaDL's CNNs: fp32 and SGD, no optimizer state (ParaDL §IV's memory model).
inline constexpr family_defaults cnn_defaults{precision_mode::fp32, optimizer::sgd};
/// Transformers: bf16 mixed precision with Adam, as Megatron-LM, DeepSpeed and Hugging Face
/// train them.
inline constexpr family_defaults transformer_defaults{precision_mode::bf16_mixed, optimizer::adam};

/// What a training process holds on a GPU besides its tensors, so that "fits" is judged against
/// the card's real capacity (the defaults are measurements; set all to 0 to compare tensor
/// totals with formulas such as Korthikanti's):
/// - `context`: the CUDA context with its loaded kernels and library handles. About 0.5 GiB
///   under CUDA 12's lazy module loading (our assumption for PyTorch on Hopper; with eager
///   loading it is several times larger).
/// - `communicator`, `pair_communicator`: NCCL's buffers per communicator a rank joins (one per
///   parallel axis of degree > 1), as measured through PyTorch on 4 x A100 over NVLink: 688 MB
///   for groups of more than two ranks, 544 MB for pairs (NVIDIA/nccl issue #964; NCCL's
///   maintainers: linear in the channels, flat beyond two nodes for rings).
/// - `fragmentation`: the caching allocator reserves more than it hands out; reserved =
///   allocated peak x (1 + this). 0.061 is the median of the five Hugging Face steps of
///   `test/data/h100_hf_steps.csv` (4.2-11.8 %).
struct runtime_memory {
  double context = 512.0 * 1024 * 1024;
  double communicator = 688e6;
  double pair_communicator = 544e6;
  double fragmentation = 0.061;

  /// No headroom: tensors only.
  [[nodiscard]] static constexpr runtime_memory none() { return {0, 0, 0, 0}; }
  constexpr void check() const {
    if (!(context >= 0 && communicator >= 0 && pair_communicator >= 0 && fragmentation >= 0))
      throw plan_error("training.runtime: every headroom term must be non-negative");
  }
};

/// Which linear layers LoRA adapts.
enum class lora_targets {
  /// PEFT's default for the architecture when `target_modules` is not given
  /// (peft/utils/constants.py, `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`): the query
  /// and value projections of Llama-style models (`q_proj`, `v_proj`), GPT-2's fused `c_attn`,
  /// GPT-NeoX's `query_key_value`
  query_value,
  attention,  ///< Q, K, V and the output projection (Hu et al. 2021's choice)
  all_linear  ///< every linear layer of the blocks (QLoRA's "all-linear"); never the head
};

/// How LoRA's frozen pretrained weights are stored.
/// - `automatic`: as the recipe stores parameters (fp32 under autocast, 16 bits beside fp32
///   masters);
/// - `fp32`, `bf16`, `fp16`: the type the model was loaded in (`torch_dtype`);
/// - `int8`: bitsandbytes' LLM.int8 (`Linear8bitLt`, `load_in_8bit`): one byte per weight and an
///   fp32 scale per output row (`SCB`); Dettmers et al. 2022, "LLM.int8()";
/// - `nf4`: bitsandbytes' 4-bit NormalFloat (`Linear4bit`, QLoRA; Dettmers et al. 2023 §3): two
///   weights a byte and an fp32 absolute maximum per block of 64, or with double quantization
///   (`bnb_4bit_use_double_quant`, `lora_adapters::double_quant`) an 8-bit one with an fp32
///   constant per 256 blocks: 0.5 + 4/64 = 0.5625 or 0.5 + 1/64 + 4/(64 x 256) = 0.5159 B.
/// Quantized formats cover the blocks' linear layers; the embedding, the head and the norms stay
/// in `lora_adapters::embeddings`.
enum class base_storage { automatic, fp32, bf16, fp16, int8, nf4 };

/// The type of LoRA's trained adapter weights (their gradients and Adam moments follow it).
/// `automatic`: the recipe's parameters (fp32 masters or fp32 under autocast; PEFT upcasts the
/// adapters to fp32 by default, `autocast_adapter_dtype=True`); `bf16`: adapters, gradients and
/// moments all in bf16, as a model loaded in bf16 and trained without masters (LitGPT's
/// `bf16-true`).
enum class adapter_storage { automatic, fp32, bf16 };

/// LoRA fine-tuning (Hu et al. 2021, §4): the pretrained weights are frozen (no gradients, no
/// optimizer states, no weight-gradient GEMMs) and each targeted n x k weight W gains trained
/// factors A (r x k) and B (n x r): y = x W^T + (x A^T) B^T.
struct lora_adapters {
  int rank = 0;  ///< r; 0: every parameter is trained (no adapters)
  lora_targets targets = lora_targets::all_linear;
  base_storage base = base_storage::automatic;
  bool double_quant = false;  ///< nf4: quantize the block maxima too (QLoRA §3)
  /// the embedding, head and norms (`torch_dtype`); `automatic`: the base's own type when it is
  /// a float type, else as `training::frozen_embedding_bytes` says
  base_storage embeddings = base_storage::automatic;
  adapter_storage adapters = adapter_storage::automatic;
  /// PEFT's `lora_dropout`: above 0 each adapted layer drops out its input for the adapter
  /// path and autograd keeps that copy (a mask-free `nn.Identity` at 0, PEFT's default)
  double dropout = 0;
  /// bitsandbytes before 0.43.2 keeps each quantized layer's input for its backward, adapted or
  /// not (bitsandbytes/autograd/_functions.py, `MatMul4Bit.forward`: `ctx.tensors = (A, B)`;
  /// from 0.43.2 only B, the packed weight)
  bool keeps_inputs = false;
  [[nodiscard]] constexpr bool on() const { return rank > 0; }
  [[nodiscard]] constexpr bool quantized() const {
    return base == base_storage::int8 || base == base_storage::nf4;
  }
};

/// Bytes per element of a float storage type (`automatic`: `fallback`).
[[nodiscard]] constexpr double float_bytes(base_storage b, double fallback) {
  switch (b) {
    case base_storage::fp32:
      return 4;
    case base_storage::bf16:
    case base_storage::fp16:
      return 2;
    case base_storage::int8:
      return 1;
    case base_storage::nf4:
      return 0.5;
    case base_storage::automatic:
      return fallback;
  }
  return fallback;
}

/// Bytes of model state per parameter.
struct parameter_bytes {
  double weight = 0, gradient = 0, optimizer = 0;
};

/// What is trained and how: one setup for every plan, CNN or transformer. ParaDL's symbols:
/// B = `batch`, D = `dataset`, delta = the element size (`delta()`). Fields a family does not
/// read are ignored by it (`sequence`, `framework`, `runtime`, `lora`, ... by CNN plans;
/// `dataset` and `efficiency` by transformer plans). `precision` and `optim` left `automatic`
/// take the family's convention (`cnn_defaults`, `transformer_defaults`); the CNN accessors
/// (`element_type`, `delta`, `cnn_optimizer`) read them as a CNN plan does, the others as a
/// transformer plan does.
struct training {
  int batch = 1;       ///< B, the global batch per iteration: samples (CNN) or sequences
  double dataset = 0;  ///< D, samples per epoch; 0 means one iteration (D = B)
  int sequence = 0;    ///< s, tokens per sequence; 0 means the model's
  precision_mode precision = precision_mode::automatic;
  optimizer optim = optimizer::automatic;
  /// Storage and reduction type of gradients under mixed precision: fp32 as Megatron-LM's
  /// main_grad buffers (18 B/param with Adam), bf16/fp16 as DeepSpeed (16 B/param).
  dtype gradients = dtype::fp32;
  bool flash_attention = true;  ///< fused attention: no s x s tensors are kept (or moved)
  /// DeepSpeed's activation checkpointing (Megatron-DeepSpeed's --partition-activations and
  /// --checkpoint-in-cpu; deepspeed/runtime/activation_checkpointing/checkpointing.py): each
  /// checkpointed layer input split over the tensor-parallel ranks (gathered again before its
  /// recomputation), and kept in host memory (`.cpu()` after the forward, `.to(device)` before
  /// the recomputation: two copies over PCIe)
  bool partition_activations = false;
  bool checkpoint_in_cpu = false;
  double efficiency = 0.5;  ///< CNN plans: achieved fraction of the device's peak FLOP/s
  double reserved = 0;      ///< bytes of "other" memory per device (framework, workspaces)
  /// how the framework runs the step (`frameworks/*.hpp`): kernels, saved tensors, storage
  frameworks::recipe framework = frameworks::megatron;
  /// the CUDA context, NCCL buffers and allocator slack beside the tensors (judges "fits")
  runtime_memory runtime{};
  /// LoRA adapters over frozen weights (rank 0: full training)
  lora_adapters lora{};
  /// bitsandbytes' paged optimizers (`PagedAdamW`, `PagedAdamW8bit`): the states live in CUDA
  /// unified memory (`cudaMallocManaged`, bitsandbytes/functional.py `get_paged`), outside
  /// PyTorch's caching allocator, and the driver moves them to the host when the GPU runs out:
  /// they are reported apart (`memory_breakdown::paged`) and do not decide "fits"
  bool paged_optimizer = false;
  /// Transformer plans: fp32 matmuls may use TF32 (`torch.backends.cuda.matmul.allow_tf32`), as
  /// in every measured step the shipped profile was fitted on. false: IEEE fp32 on the CUDA cores
  /// (`device_profile::fp32_ieee`), PyTorch's default; it matters for fp32 training and for the
  /// fp32 expert GEMMs of transformers' MoE under autocast.
  bool tf32 = true;

  // ---- resolving `automatic` ----------------------------------------------------------------
  [[nodiscard]] constexpr precision_mode precision_for(family_defaults f) const {
    return precision == precision_mode::automatic ? f.precision : precision;
  }
  [[nodiscard]] constexpr optimizer optimizer_for(family_defaults f) const {
    return optim == optimizer::automatic ? f.optim : optim;
  }

  // ---- as a CNN plan reads it (ParaDL) --------------------------------------------------------
  /// The one type of every tensor.
  [[nodiscard]] constexpr dtype element_type() const {
    return compute_type(precision_for(cnn_defaults));
  }
  [[nodiscard]] constexpr double delta() const { return size_of(element_type()); }
  [[nodiscard]] constexpr optimizer cnn_optimizer() const { return optimizer_for(cnn_defaults); }
  [[nodiscard]] constexpr double samples() const { return dataset > 0 ? dataset : batch; }
  /// D / B, the iterations in one epoch (fractional, as in ParaDL's formulas).
  [[nodiscard]] constexpr double iterations() const { return samples() / batch; }

  // ---- as a transformer plan reads it ---------------------------------------------------------
  [[nodiscard]] constexpr precision_mode mode() const {
    return precision_for(transformer_defaults);
  }
  [[nodiscard]] constexpr optimizer transformer_optimizer() const {
    return optimizer_for(transformer_defaults);
  }
  /// Tokens per sequence: `sequence`, or the model's own length `model_sequence` when it is 0.
  [[nodiscard]] constexpr int sequence_or(int model_sequence) const {
    return sequence == 0 ? model_sequence : sequence;
  }
  /// Type of the GEMMs and of the attention kernels.
  [[nodiscard]] constexpr dtype compute() const { return compute_type(mode()); }
  [[nodiscard]] constexpr bool mixed() const { return is_mixed(mode()); }
  /// Bytes per element of activations (the GEMMs' inputs and outputs).
  [[nodiscard]] constexpr double activation_bytes() const { return mixed() ? 2.0 : 4.0; }
  /// Mixed precision with 16-bit working weights and fp32 masters (Megatron); under autocast the
  /// parameters themselves stay fp32 and there is no master copy.
  [[nodiscard]] constexpr bool master_weights() const {
    return mixed() && !framework.autocast && !framework.pure_16bit;
  }
  /// Parameters, gradients and optimizer states all in 16 bits (`recipe::pure_16bit`).
  [[nodiscard]] constexpr bool pure_16bit() const { return mixed() && framework.pure_16bit; }
  /// Bytes per element of the residual stream (fp32 under autocast: the norms run in fp32).
  [[nodiscard]] constexpr double residual_bytes() const {
    return framework.autocast ? 4.0 : activation_bytes();
  }
  [[nodiscard]] constexpr double weight_bytes() const {
    return master_weights() || pure_16bit() ? 2.0 : 4.0;
  }
  /// Gradient bytes per parameter: fp32 without master weights (autocast); else
  /// `gradients`, or 2 where the engine keeps 16-bit gradients (DeepSpeed).
  [[nodiscard]] constexpr double gradient_bytes() const {
    if (pure_16bit()) return 2.0;
    if (!master_weights()) return 4.0;
    return framework.data.engine == frameworks::data_engine::deepspeed ? 2.0 : size_of(gradients);
  }
  /// The 16-bit `.grad` tensors autograd makes are added into fp32 gradient buffers after each
  /// backward and stay beside them (`frameworks::sharding::keeps_16bit_gradients`: DeepSpeed's
  /// BF16_Optimizer): what `parallel::engine_states` keeps and the lowering's accumulation pass.
  [[nodiscard]] constexpr bool keeps_16bit_gradients() const {
    return framework.data.keeps_16bit_gradients && master_weights() && gradient_bytes() >= 4;
  }
  /// Optimizer bytes per parameter: the fp32 master copy (if any) and its states
  /// (`state_bytes`: 4 B each, about 1 B for 8-bit Adam).
  [[nodiscard]] constexpr double optimizer_bytes() const {
    const optimizer o = transformer_optimizer();
    const double state = pure_16bit() && o != optimizer::adam_8bit ? 2.0 : state_bytes(o);
    return (master_weights() ? 4.0 : 0.0) + state * states_per_param(o);
  }
  /// Bytes the optimizer step reads and writes per parameter: gradient, (master) weight and
  /// states read and written back, plus the working copy written (master weights): 30 B for
  /// Megatron's Adam, 28 B for fused AdamW on fp32 parameters.
  [[nodiscard]] constexpr double update_bytes() const {
    const optimizer o = transformer_optimizer();
    return gradient_bytes() + 2 * (4.0 + state_bytes(o) * states_per_param(o)) +
           (master_weights() ? weight_bytes() : 0.0);
  }

  // ---- LoRA's frozen and trained weights ------------------------------------------------------
  /// Bytes per frozen weight of the blocks' linear layers (`lora_adapters::base`): the
  /// quantized formats with their block statistics; `k` is the layer's input width (LLM.int8's
  /// scale per output row: 4 / k per weight).
  [[nodiscard]] constexpr double frozen_weight_bytes(double k) const {
    switch (lora.base) {
      case base_storage::int8:
        return 1.0 + 4.0 / k;
      case base_storage::nf4:
        return lora.double_quant ? 0.5 + 1.0 / 64 + 4.0 / (64.0 * 256) : 0.5 + 4.0 / 64;
      default:
        return float_bytes(lora.base, weight_bytes());
    }
  }
  /// Bytes per frozen weight of the embedding, the head and the norms.
  /// Beside a quantized base: fp32 under autocast (PEFT's `prepare_model_for_kbit_training`,
  /// which TRL's SFTTrainer calls, upcasts every 16-bit parameter that is not quantized), bf16
  /// otherwise (the loaded `torch_dtype`, as LitGPT and torchtune keep it).
  [[nodiscard]] constexpr double frozen_embedding_bytes() const {
    if (lora.embeddings != base_storage::automatic) return float_bytes(lora.embeddings, 4);
    if (lora.quantized()) return framework.autocast ? 4.0 : 2.0;
    return float_bytes(lora.base, weight_bytes());
  }
  /// The frozen weights are already in the compute type: no cast per use (a bf16 or fp16 base
  /// under bf16/fp16 autocast).
  [[nodiscard]] constexpr bool frozen_in_compute_type() const {
    return (lora.base == base_storage::bf16 && compute() == dtype::bf16) ||
           (lora.base == base_storage::fp16 && compute() == dtype::fp16) ||
           (lora.base == base_storage::automatic && !framework.autocast);
  }
  /// The same for the frozen head (stored as the embedding is).
  [[nodiscard]] constexpr bool frozen_head_in_compute_type() const {
    if (lora.embeddings == base_storage::automatic && !lora.quantized())
      return frozen_in_compute_type();
    return frozen_embedding_bytes() == 2.0 && mixed() && compute() != dtype::fp8;
  }
  /// Bytes per trained parameter: its weight, gradient and optimizer state (masters included).
  [[nodiscard]] constexpr parameter_bytes trained_bytes() const {
    return {weight_bytes(), gradient_bytes(), optimizer_bytes()};
  }
  /// The same for LoRA's adapters (`lora_adapters::adapters`): fp32 or bf16 adapters keep their
  /// gradient and moments in their own type and no masters (torch.optim's states follow the
  /// parameter's dtype).
  [[nodiscard]] constexpr parameter_bytes adapter_bytes() const {
    if (lora.adapters == adapter_storage::automatic) return trained_bytes();
    const optimizer o = transformer_optimizer();
    const double w = lora.adapters == adapter_storage::bf16 ? 2.0 : 4.0;
    return {w, w, (o == optimizer::adam_8bit ? state_bytes(o) : w) * states_per_param(o)};
  }

  /// The limits every plan shares.
  constexpr void check() const {
    if (batch < 1) throw plan_error("training.batch must be at least 1");
    if (dataset < 0) throw plan_error("training.dataset must not be negative");
    if (!(efficiency > 0.0 && efficiency <= 1.0))
      throw plan_error("training.efficiency must lie in (0, 1]");
    if (sequence < 0) throw plan_error("training.sequence must not be negative");
    if (reserved < 0) throw plan_error("training.reserved must not be negative");
    if (lora.rank < 0) throw plan_error("training.lora.rank must not be negative");
    if (!(lora.dropout >= 0 && lora.dropout < 1))
      throw plan_error("training.lora.dropout must lie in [0, 1)");
    runtime.check();
  }
  /// A CNN plan's: one type for every tensor.
  constexpr void check_cnn() const {
    check();
    if (is_mixed(precision))
      throw plan_error(
          "training.precision: ParaDL's CNN model keeps every tensor in one type: give fp32, "
          "tf32, fp16, bf16 or fp8, not a mixed mode");
  }
  /// A transformer plan's: fp32 or a mixed mode.
  constexpr void check_transformer() const {
    check();
    const precision_mode p = mode();
    if (p != precision_mode::fp32 && !is_mixed(p))
      throw plan_error(
          "training.precision: transformer plans train in fp32 or in a mixed mode (fp16_mixed, "
          "bf16_mixed, fp8_mixed: fp32 master weights)");
    if (lora.quantized() && !mixed())
      throw plan_error(
          "training.lora.base: an int8 or nf4 base is dequantized to 16 bits for its GEMMs: "
          "give a mixed precision (bf16 or fp16)");
    if (lora.quantized() && !lora.on())
      throw plan_error("training.lora.base: a quantized base needs LoRA adapters (a rank)");
  }
};

}  // namespace strata
