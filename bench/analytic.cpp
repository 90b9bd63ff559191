// Cost of the closed-form (ParaDL) evaluation: one plan, and a sweep over p and strategies.
// Baseline: the data-parallel equations (5)-(7) hand-written over precomputed sums, i.e. the
// least work any implementation must do.
#include <benchmark/benchmark.h>

#include <strata/search/paradl_sweep.hpp>
#include <strata/strata.hpp>
#include <vector>

using namespace strata;

namespace {
const auto resnet = zoo::resnet50();
const cluster abci = presets::abci(1024);
const training setup{.batch = 8192, .dataset = 1'281'167};

void baseline_hand_written_eq5_7(benchmark::State& st) {
  const context c = make_context(resnet.view(), abci, setup);
  int p = 64;
  for (auto _ : st) {
    const double share = c.batch() / p;
    const double comp = share * (c.sum_fw + c.sum_bw).count() + c.sum_wu.count();
    const strata::interconnect l = comm::ring_link(abci, {0, p, 1});
    const double comm = 2.0 * (p - 1) * (l.alpha.count() + c.sum_w * 4 / p / l.bandwidth.count());
    const double mem = 8.0 * (share * c.sum_xy + c.sum_w);
    benchmark::DoNotOptimize(comp + comm + mem);
    p = p == 64 ? 128 : 64;
  }
}
BENCHMARK(baseline_hand_written_eq5_7);

// One evaluation of a prepared context (sums done once per model and setup).
void data_parallel_cost(benchmark::State& st) {
  const context c = make_context(resnet.view(), abci, setup);
  int p = 64;
  for (auto _ : st) {
    benchmark::DoNotOptimize(parallel::data{p}.cost(c));
    p = p == 64 ? 128 : 64;
  }
}
BENCHMARK(data_parallel_cost);

// A full evaluate(): context (a pass over ResNet-50's 174 layers), checks, cost.
void evaluate_resnet50_data(benchmark::State& st) {
  for (auto _ : st)
    benchmark::DoNotOptimize(analytic::evaluate(resnet.view(), parallel::data{64}, abci, setup));
}
BENCHMARK(evaluate_resnet50_data);

// Sweep: every ParaDL strategy kind and power-of-two degree up to 1024 devices
// (search::paradl_strategies), checked, evaluated and ranked against one context; counts plans
// per second (those rejected by Table III's limits included).
void sweep_strategies(benchmark::State& st) {
  auto space = search::paradl_strategies(1024);  // filter views iterate non-const
  std::int64_t n = 0;
  for (const auto& s : space) {
    (void)s;
    ++n;
  }
  std::int64_t evaluated = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(search::rank(resnet.view(), abci, setup, space, false));
    evaluated += n;
  }
  st.counters["plans"] = static_cast<double>(n);
  st.counters["plans/s"] =
      benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsRate);
}
BENCHMARK(sweep_strategies);
}  // namespace

BENCHMARK_MAIN();
