// Prints a transformer plan's report: the time and memory breakdowns and the rates.
#pragma once
#include <cstdio>
#include <strata/strata.hpp>

namespace example {

inline void print(const char* title, const strata::report& r) {
  using strata::to_gib;
  const auto& t = r.time;
  const auto& m = r.memory;
  std::printf("%s\n", title);
  std::printf(
      "  iteration %.3f s  (%d micro-batches)  %.0f tokens/s  %.1f TFLOP/s per GPU"
      "  MFU %.1f %%  HFU %.1f %%\n",
      t.total().count(), r.micro_batches, r.tokens_per_second(), r.flops_per_device() / 1e12,
      100 * r.mfu(), 100 * r.hfu());
  std::printf(
      "  time: forward %.3f  backward %.3f  recompute %.3f  tensor %.3f  context %.3f"
      "  expert %.3f  bubble %.3f  p2p %.3f  data %.3f  optimizer %.3f s\n",
      t.forward.count(), t.backward.count(), t.recompute.count(), t.tensor_comm.count(),
      t.context_comm.count(), t.expert_comm.count(), t.pipeline_bubble.count(),
      t.pipeline_p2p.count(), t.data_comm.count(), t.optimizer.count());
  std::printf(
      "  memory (stage %d): weights %.2f  gradients %.2f  optimizer %.2f  activations"
      " %.2f  embedding/output %.2f  buffers %.2f  other %.2f  = %.2f GiB of %.0f\n",
      m.stage, to_gib(m.weights), to_gib(m.gradients), to_gib(m.optimizer_states),
      to_gib(m.activations), to_gib(m.embedding_activations), to_gib(m.buffers), to_gib(m.other),
      to_gib(m.total()), to_gib(r.capacity));
}

}  // namespace example
