#pragma once
/// @file report.hpp
/// @brief The result of evaluating a plan, one for every model family: the iteration's time by
/// term, the busiest device's memory by kind and its headroom, and what follows from them.
///
/// A CNN plan (ParaDL's closed forms) fills the terms ParaDL has: forward, backward, the weight
/// update (`optimizer`), the gradient exchange (`data_comm`), the layer-wise collectives of
/// filter / channel parallelism (`tensor_comm`), the halo exchange of spatial parallelism
/// (`context_comm`: the sample split along a dimension of its own, as context parallelism splits
/// the sequence) and the pipeline's sends; and the weights, gradients, optimizer states and
/// activations. A transformer plan fills every term. A term a family does not have stays zero.

#include <string_view>

#include "strata/units.hpp"

namespace strata {

/// One iteration's time, term by term, on the critical path (the slowest pipeline stage and its
/// waits). Terms add up: what overlaps is already left out of them.
struct time_breakdown {
  seconds forward{};          ///< compute of the forward passes
  seconds backward{};         ///< compute of the backward passes
  seconds recompute{};        ///< forward work repeated during backward (with its collectives)
  seconds tensor_comm{};      ///< tensor/sequence-parallel collectives; ParaDL's layer-wise ones
  seconds context_comm{};     ///< ring-attention exchange not hidden; ParaDL's halo exchange
  seconds expert_comm{};      ///< MoE all-to-all dispatch and combine
  seconds pipeline_bubble{};  ///< fill and drain: (p - 1) / v of a stage's micro-batch time
  seconds pipeline_p2p{};     ///< activation and gradient sends between stages
  seconds data_comm{};        ///< data-parallel / ZeRO collectives not hidden; ParaDL's GE
  seconds optimizer{};        ///< the optimizer step; ParaDL's weight update WU
  seconds host{};  ///< the GPU waiting for an eager host to issue kernels (`lower::span`)

  /// ParaDL's computation: forward, backward and the weight update (with recomputation).
  [[nodiscard]] constexpr seconds compute() const {
    return forward + backward + recompute + optimizer;
  }
  /// Every communication term.
  [[nodiscard]] constexpr seconds communication() const {
    return tensor_comm + context_comm + expert_comm + pipeline_p2p + data_comm;
  }
  [[nodiscard]] constexpr seconds total() const {
    return forward + backward + recompute + tensor_comm + context_comm + expert_comm +
           pipeline_bubble + pipeline_p2p + data_comm + optimizer + host;
  }
};

/// The moment of the step at which a device's memory peaks.
enum class memory_moment {
  loss,            ///< the forward is done: every saved tensor and the logits' working set
  first_backward,  ///< the first layer's backward (with its recomputed layer)
  last_backward,   ///< the last layer's backward: almost every gradient exists
  update,          ///< the optimizer step: every gradient
  /// the end of the forward with the previous step's graph still held by the training loop
  /// (`recipe::keep_logits`) and the tensors it holds outside `save_for_backward`
  next_forward,
  /// after a micro-batch's backward, its 16-bit gradients added into fp32 buffers one tensor at
  /// a time through an fp32 copy (DeepSpeed's BF16_Optimizer, `update_hp_grads`)
  accumulation
};

[[nodiscard]] constexpr std::string_view to_string(memory_moment m) {
  switch (m) {
    case memory_moment::loss:
      return "loss";
    case memory_moment::first_backward:
      return "first backward";
    case memory_moment::last_backward:
      return "last backward";
    case memory_moment::update:
      return "update";
    case memory_moment::next_forward:
      return "next forward";
    case memory_moment::accumulation:
      return "gradient accumulation";
  }
  return "loss";
}

/// Memory of one device (the stage with the largest total), at its peak moment.
struct memory_breakdown {
  bytes weights{};
  bytes gradients{};
  bytes optimizer_states{};  ///< fp32 master weights and the optimizer's moments
  bytes activations{};  ///< saved tensors of every in-flight micro-batch (ParaDL: x, y, dx, dy)
  bytes embedding_activations{};  ///< input-embedding dropout mask and the output layer (§4.3)
  bytes buffers{};                ///< communication buffers: DDP buckets, ZeRO-3 gathered layers
  bytes other{};                  ///< `training::reserved`
  bytes embedding_states{};       ///< the part of the model states held for embedding and head
  bytes weight_casts{};           ///< 16-bit weight copies autocast made, held by autograd
  bytes logits{};                 ///< the loss's working set (the recipe's `loss_style`)
  bytes batch{};                  ///< input ids and labels
  bytes workspace{};              ///< BLAS workspace held by the allocator
  bytes between_steps{};          ///< what stays allocated from one step to the next
  /// optimizer states in CUDA unified memory (`training::paged_optimizer`): not in `total()`,
  /// since the driver pages them to the host when the GPU is full
  bytes paged{};
  memory_moment moment = memory_moment::first_backward;
  int stage = 0;  ///< the pipeline stage this is
  /// the first step's peak, when lower: no earlier step's graph is held then (`next_forward`);
  /// zero when every step peaks alike
  bytes first_step{};
  [[nodiscard]] constexpr bytes model_states() const {
    return weights + gradients + optimizer_states;
  }
  [[nodiscard]] constexpr bytes total() const {
    return model_states() + activations + embedding_activations + buffers + other + weight_casts +
           logits + batch + workspace;
  }
};

/// What a device needs beyond its tensors (`runtime_memory`): the verdict "fits" compares the
/// tensors plus this with the card's capacity. ParaDL's CNN model counts tensors only (zero).
struct memory_headroom {
  bytes context{};        ///< CUDA context, kernels, library handles
  bytes communicators{};  ///< NCCL buffers, one communicator per parallel axis of degree > 1
  bytes fragmentation{};  ///< the caching allocator's reserved-but-free memory at the peak
  [[nodiscard]] constexpr bytes total() const { return context + communicators + fragmentation; }
};

/// Whether a plan's memory fits its device (`report::verdict`):
/// - `fits`: the tensors and all of the headroom, the allocator's slack included;
/// - `tight`: the tensors, the context and the communicators fit, the slack does not: the plan
///   runs if PyTorch's caching allocator frees its cached blocks and retries before failing
///   (it does, once, on every allocation that would fail) or `expandable_segments` keeps the
///   fragmentation down, and slows where it has to;
/// - `does_not_fit`: the tensors, context and communicators alone exceed the card.
enum class memory_verdict { fits, tight, does_not_fit };

[[nodiscard]] constexpr std::string_view to_string(memory_verdict v) {
  return v == memory_verdict::fits ? "fits" : v == memory_verdict::tight ? "tight" : "does not fit";
}

/// What `evaluate` returns for every plan.
struct report {
  std::string_view strategy;  ///< the strategy's name ("data", "filter", ...; "nd")
  int devices = 1;
  int batch = 1;             ///< samples or sequences per iteration
  double iterations = 1;     ///< per epoch: D / B
  time_breakdown time;       ///< one iteration
  memory_breakdown memory;   ///< the busiest device's tensors, at their peak
  memory_headroom headroom;  ///< beside the tensors
  bytes capacity{};          ///< the device's memory
  int micro_batches = 1;
  double tokens = 0;          ///< per iteration (transformers)
  double model_flops = 0;     ///< per iteration, all devices (transformers)
  double hardware_flops = 0;  ///< with recomputation (transformers)
  flop_rate peak{};           ///< one device's dense peak in the compute type (transformers)

  [[nodiscard]] constexpr seconds iteration_time() const { return time.total(); }
  [[nodiscard]] constexpr seconds epoch_time() const { return time.total() * iterations; }
  /// Samples (or sequences) per second.
  [[nodiscard]] constexpr double throughput() const { return batch / time.total().count(); }
  [[nodiscard]] constexpr double tokens_per_second() const { return tokens / time.total().count(); }
  /// Achieved hardware FLOP/s per device (SC'21 Table 1 reports this).
  [[nodiscard]] constexpr double flops_per_device() const {
    return hardware_flops / (time.total().count() * devices);
  }
  [[nodiscard]] constexpr double mfu() const {
    return model_flops / (time.total().count() * devices) / peak.count();
  }
  [[nodiscard]] constexpr double hfu() const { return flops_per_device() / peak.count(); }
  /// Tensors plus headroom: what the device must hold.
  [[nodiscard]] constexpr bytes required() const { return memory.total() + headroom.total(); }
  /// Capacity left over (negative: out of memory by that much).
  [[nodiscard]] constexpr bytes margin() const { return capacity - required(); }
  [[nodiscard]] constexpr bool fits() const { return required() <= capacity; }
  /// Three states (`memory_verdict`): `tight` where only the allocator's slack does not fit.
  [[nodiscard]] constexpr memory_verdict verdict() const {
    if (fits()) return memory_verdict::fits;
    return memory.total() + headroom.context + headroom.communicators <= capacity
               ? memory_verdict::tight
               : memory_verdict::does_not_fit;
  }
};

}  // namespace strata
