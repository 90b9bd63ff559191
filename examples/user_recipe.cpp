// A framework recipe of your own, as a type: Megatron-Core with Transformer Engine's
// tensor-parallel communication overlap (`--tp-comm-overlap`), derived from strata's Megatron
// recipe with that one rule changed and nothing in the library touched. The same type drives the
// closed form, the event simulation and the strategy search.
#include <cstdio>
#include <strata/search/transformer_sweep.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>

using namespace strata;
using namespace strata::parallel;

/// Megatron-LM with each tensor-parallel all-gather and reduce-scatter pipelined with the GEMM
/// beside it (Transformer Engine userbuffers).
struct megatron_tp_overlap : recipes::megatron {
  constexpr megatron_tp_overlap() {
    name = "megatron-tp-overlap";
    tp_comm_overlap = true;
  }
};
static_assert(frameworks::Recipe<megatron_tp_overlap>);

// Llama-3 70B on 64 H100s: tensor parallelism 8 with sequence parallelism, 4 pipeline stages,
// 2 data-parallel replicas with the distributed optimizer, selective recomputation.
constexpr training setup(frameworks::recipe r) {
  return {.batch = 128, .sequence = 8192, .framework = r};
}
template <class Recipe>
constexpr strata::plan<transformer, tensor_parallel, pipeline_parallel, data_parallel, zero<1>,
                       recomputation<recompute::selective>>
llama(Recipe r) {
  return {zoo::llama3_70b(),
          presets::dgx_h100(8),
          setup(frameworks::rules_of(r)),
          tensor_parallel{.degree = 8, .sequence = true},
          pipeline_parallel{.degree = 4},
          data_parallel{.degree = 2},
          zero<1>{},
          recomputation<recompute::selective>{}};
}
constexpr auto base = llama(frameworks::megatron);
constexpr auto overlapped = llama(megatron_tp_overlap{});
// the overlap hides communication, it keeps every tensor: same memory, less time
static_assert(peak_memory(overlapped) == peak_memory(base));
static_assert(iteration_time(overlapped) < iteration_time(base));

int main() {
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  const report r0 = evaluate(base, h100), r1 = evaluate(overlapped, h100);
  std::printf("Llama-3 70B, 64 x H100, t=8 (sp) p=4 d=2, ZeRO-1, selective recompute\n");
  std::printf("  megatron:            %.3f s (tensor comm %.3f s), %.2f GiB\n",
              r0.iteration_time().count(), r0.time.tensor_comm.count(), to_gib(r0.memory.total()));
  std::printf("  megatron-tp-overlap: %.3f s (tensor comm %.3f s), %.2f GiB\n",
              r1.iteration_time().count(), r1.time.tensor_comm.count(), to_gib(r1.memory.total()));
  const sim::transformer_run s0 = sim::simulate(base, h100), s1 = sim::simulate(overlapped, h100);
  std::printf("  simulated:           %.3f s -> %.3f s\n", s0.iteration.count(),
              s1.iteration.count());
  // the search ranks plans under the recipe it is given
  search::transformer_space space;
  space.pipeline = {2, 4, 8};
  space.virtual_stages = {1};
  space.keep = 1;
  const auto best = search::sweep(zoo::llama3_70b(), presets::dgx_h100(8),
                                  setup(megatron_tp_overlap{}), h100, space);
  const nd& b = best.best.front().strategy;
  std::printf("  best under the recipe: t=%d p=%d d=%d ZeRO-%d b=%d, %.3f s (%lld plans fit)\n",
              b.tensor.degree, b.pipeline.degree, b.data.degree, b.data.zero, b.micro_batch,
              best.best.front().time.total().count(), best.fitting);
}
