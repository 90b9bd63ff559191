#pragma once
/// @file analytic/transformer.hpp
/// @brief Closed-form time and memory of a transformer trained with `parallel::nd`.
///
/// FLOPs follow Narayanan et al. SC'21 §5.1 (72 B s l h^2 (1 + s/6h + V/12lh) per iteration,
/// 96 B s l h^2 (1 + s/6h + V/16lh) with full recomputation), generalized per token by
/// `transformer::layer_forward_flops` to GQA, SwiGLU and MoE. Activation memory follows
/// Korthikanti et al. 2022 Table 2 (34 s b h + 5 a s^2 b bytes per layer, split into the 10 s b h
/// that tensor parallelism replicates and the 24 s b h + 5 a s^2 b it shards), the in-flight
/// micro-batches of the first 1F1B stage and the interleaving factor 1 + (p-1)/(p v) (§4.2.3),
/// and the embedding and output-layer terms (§4.3). Model states follow Rajbhandari et al.
/// 2020 §5 (ZeRO stages) with Megatron's 18 B/param as the default mixed-precision recipe.
/// Times come from a kernel-level lowering of one layer (`hardware/kernels.hpp`) and the
/// foundation's collectives on the groups `parallel::nd` lays out.
/// @code
/// const auto r = strata::analytic::evaluate(strata::zoo::gpt3_175b(), s,
///                                           strata::presets::dgx_a100(128),
///                                           {.batch = 1536, .sequence = 2048});
/// @endcode

#include "strata/analytic/flops.hpp"
#include "strata/analytic/iteration.hpp"
#include "strata/analytic/memory.hpp"
#include "strata/analytic/parameters.hpp"
#include "strata/analytic/price.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/report.hpp"
#include "strata/training.hpp"

namespace strata::analytic {

/// The report of a plan: its time (`iteration`), its peak memory (`peak_stage_memory`), FLOPs.
[[nodiscard]] constexpr report evaluate(const transformer& m, const parallel::nd& s,
                                        const cluster& c, const training& tr,
                                        const device_profile& prof, const layer_compute& lc,
                                        const plan_keeps* keeps = nullptr) {
  report r;
  r.strategy = parallel::nd::name;
  r.devices = s.devices();
  r.batch = tr.batch;
  r.iterations = tr.iterations();
  r.capacity = c.dev.memory;
  r.micro_batches = s.micro_batches(tr);
  r.peak = c.dev.peak(tr.compute());
  const double seq = detail::sequence_of(m, tr);
  r.tokens = tr.batch * seq;
  r.model_flops = model_flops(m, tr.batch, seq);
  r.hardware_flops = hardware_flops(m, tr.batch, seq, s.recomputation);
  r.memory = keeps ? peak_stage_memory(m, s, tr, *keeps) : peak_stage_memory(m, s, tr);
  r.headroom = headroom_of(s, tr.runtime, r.memory.total());
  r.time = iteration(m, s, c, tr, prof, lc);
  return r;
}

/// Evaluates a transformer plan; checks it first (`parallel::nd::check`).
[[nodiscard]] constexpr report evaluate(const transformer& m, const parallel::nd& s,
                                        const cluster& c, const training& tr,
                                        const device_profile& prof) {
  s.check(m, tr, c.devices());
  const layer_compute lc = lower_layer(m, prof, tr, lower::shard_of(m, s, tr));
  const plan_keeps keeps = keeps_of(m, s, tr, lc);
  return evaluate(m, s, c, tr, prof, lc, &keeps);
}

/// Evaluates with the device's datasheet peaks and the GEMM efficiency fitted on the H100
/// (`datasheet_profile(c.dev, h100_fitted_gemm)`, the profile validated on SC'21 Table 1).
[[nodiscard]] constexpr report evaluate(const transformer& m, const parallel::nd& s,
                                        const cluster& c, const training& tr) {
  return evaluate(m, s, c, tr, datasheet_profile(c.dev, h100_fitted_gemm));
}
}  // namespace strata::analytic
