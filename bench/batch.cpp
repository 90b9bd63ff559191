// Batch evaluation (search/batch.hpp) beside the scalar path, on every candidate of the GPT-3
// 175B / 1024-A100 strategy space (the sweep's enumeration: tp | 8, pp | 96, the data degree
// that fills the cluster, micro-batch, interleaving, recomputation, ZeRO, sequence parallelism).
// Counters: evals/s (full evaluations, time and memory, per second of wall time), evals/s/core
// (the same over the threads used) and evals/cpu-s (per second of the process's CPU time, all
// threads: the per-core rate even on a loaded machine, where wall time overstates). The scalar
// baseline calls analytic::evaluate per plan (check, kernel lowering, memory, time); the batch
// lowers once per group of plans sharing a layer and spreads the groups over threads. Issue 19's
// target: >= 1e6 full evaluations per second per core.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <thread>
#include <vector>

#include <strata/search/batch.hpp>
#include <strata/search/transformer_sweep.hpp>
#include <strata/strata.hpp>

using namespace strata;

namespace {
const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
const training setup{.batch = 1536, .sequence = 2048};
const transformer gpt3 = zoo::gpt3_175b();
const cluster dgx = presets::dgx_a100(128);

const std::vector<parallel::nd>& space() {
  static const std::vector<parallel::nd> plans = [] {
    std::vector<parallel::nd> out;
    search::for_each_plan(
        gpt3, dgx, setup, a100, {},
        [&](const parallel::nd& s, const auto&, const auto&) { out.push_back(s); });
    return out;
  }();
  return plans;
}

// CPU seconds this process has used, every thread counted.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void rate(benchmark::State& st, double per_iteration, double cores, double cpu) {
  st.counters["evals/cpu-s"] = per_iteration * static_cast<double>(st.iterations()) / cpu;
  st.counters["plans"] = per_iteration;
  st.counters["evals/s"] = benchmark::Counter(per_iteration * static_cast<double>(st.iterations()),
                                              benchmark::Counter::kIsRate);
  st.counters["evals/s/core"] = benchmark::Counter(
      per_iteration * static_cast<double>(st.iterations()) / cores, benchmark::Counter::kIsRate);
}

// The scalar path: one full analytic::evaluate per plan.
void scalar_evaluate(benchmark::State& st) {
  const auto& plans = space();
  const double cpu0 = cpu_seconds();
  for (auto _ : st)
    for (const auto& s : plans)
      benchmark::DoNotOptimize(analytic::evaluate(gpt3, s, dgx, setup, a100));
  rate(st, static_cast<double>(plans.size()), 1, cpu_seconds() - cpu0);
}
BENCHMARK(scalar_evaluate)->Unit(benchmark::kMillisecond)->UseRealTime();

// The batch on st.range(0) threads (0: one per hardware thread).
void batch_evaluate(benchmark::State& st) {
  const auto& plans = space();
  const int threads = static_cast<int>(st.range(0));
  const double cpu0 = cpu_seconds();
  long long lowerings = 0;
  for (auto _ : st) {
    auto r = search::evaluate_batch(gpt3, dgx, setup, a100, plans, {.threads = threads});
    benchmark::DoNotOptimize(r.iteration_s.data());
    lowerings = r.groups;
  }
  st.counters["lowerings"] = static_cast<double>(lowerings);
  const double cores = threads > 0 ? threads : std::max(1U, std::thread::hardware_concurrency());
  rate(st, static_cast<double>(plans.size()), cores, cpu_seconds() - cpu0);
}
BENCHMARK(batch_evaluate)->Arg(1)->Arg(2)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
}  // namespace
BENCHMARK_MAIN();
