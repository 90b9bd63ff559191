// Transformer plans: one evaluation of a GPT-3 175B plan, and the sweep over its strategy space
// on 1024 A100 (tp | 8, pp | 96, dp = 1024 / (tp pp), micro-batch, interleaving, recomputation,
// ZeRO, sequence parallelism), memory-infeasible plans pruned first. Counters: candidates/s
// (plans considered per second on one core) and timed/s (plans that fit, fully evaluated).
// Figures to beat (issue 3, same kind of machine): a popular Python calculator ~3,500
// evaluations/s per core, Calculon ~55/s; target >= 1e6.
#include <benchmark/benchmark.h>

#include <strata/search/transformer_sweep.hpp>
#include <strata/strata.hpp>

using namespace strata;

namespace {
const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
const training setup{.batch = 1536, .sequence = 2048};
const parallel::nd sc21{
    .tensor = {.degree = 8},
    .pipeline = {.degree = 8, .virtual_stages = 2, .kind = parallel::schedule::interleaved},
    .data = {.degree = 16},
    .recomputation = parallel::recompute::full,
    .micro_batch = 1};

// Everything: check, kernel lowering of one layer, memory, time.
void gpt3_evaluate(benchmark::State& st) {
  const cluster c = presets::dgx_a100(128);
  const transformer m = zoo::gpt3_175b();
  for (auto _ : st) benchmark::DoNotOptimize(analytic::evaluate(m, sc21, c, setup, a100));
}
BENCHMARK(gpt3_evaluate)->Unit(benchmark::kNanosecond);

// What a sweep pays per plan once the layer is lowered: memory and time.
void gpt3_evaluate_lowered(benchmark::State& st) {
  const cluster c = presets::dgx_a100(128);
  const transformer m = zoo::gpt3_175b();
  const auto lc = analytic::lower_layer(m, a100, setup, lower::shard_of(m, sc21, setup));
  const auto keeps = analytic::keeps_of(m, sc21, setup);
  for (auto _ : st) {
    benchmark::DoNotOptimize(analytic::peak_stage_memory(m, sc21, setup, keeps));
    benchmark::DoNotOptimize(analytic::iteration(m, sc21, c, setup, a100, lc));
  }
}
BENCHMARK(gpt3_evaluate_lowered)->Unit(benchmark::kNanosecond);

void gpt3_sweep(benchmark::State& st) {
  const cluster c = presets::dgx_a100(128);
  const transformer m = zoo::gpt3_175b();
  search::transformer_sweep_result r;
  for (auto _ : st) {
    r = search::sweep(m, c, setup, a100);
    benchmark::DoNotOptimize(r.best.data());
  }
  st.counters["candidates"] = static_cast<double>(r.candidates);
  st.counters["fitting"] = static_cast<double>(r.fitting);
  st.counters["candidates/s"] =
      benchmark::Counter(static_cast<double>(r.candidates) * static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate);
  st.counters["timed/s"] =
      benchmark::Counter(static_cast<double>(r.fitting) * static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(gpt3_sweep)->Unit(benchmark::kMillisecond);
}  // namespace
