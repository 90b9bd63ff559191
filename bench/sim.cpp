// Event-core throughput and plan-simulation cost. Baseline: the closed form of the same plan.
#include <benchmark/benchmark.h>

#include <strata/sim/paradl.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>

using namespace strata;

namespace {
// `streams` fifo streams and one shared link; each stream runs a chain of compute tasks with a
// flow on the link every fourth task. Durations are multiples of 0.1 ms and sizes of 1 MB, so
// with many streams many tasks end at the same instant; `jitter` scales each by a factor in
// [1, 1.001) that differs per task, so that (almost) every task ends at an instant of its own.
sim::simulator synthetic(int streams, int tasks_per_stream, bool jitter) {
  sim::simulator s;
  std::vector<int> fifo;
  for (int i = 0; i < streams; ++i)
    fifo.push_back(s.add_resource({"stream", sim::discipline::fifo}));
  const int link = s.add_resource({"link", sim::discipline::fair_share, 1e9});
  for (int i = 0; i < streams; ++i) {
    int prev = -1;
    for (int k = 0; k < tasks_per_stream; ++k) {
      sim::task_spec t;
      t.name = "t";
      const bool flow = k % 4 == 3;
      const double f = jitter ? 1 + 1e-3 * ((k * 7919 + i * 104729) % 1000) / 1000.0 : 1.0;
      t.resources = {flow ? link : fifo[static_cast<std::size_t>(i)]};
      t.work = f * (flow ? 1e6 * (1 + (k + i) % 5) : 1e-4 * (1 + (k * 7 + i) % 3));
      t.cls = flow ? sim::task_class::communication : sim::task_class::compute;
      t.device = i;
      if (prev >= 0) t.deps = {prev};
      prev = s.add_task(t);
    }
  }
  return s;
}

// Issue 13's target: >= 5 M events/s whatever the number of streams (before the event heap:
// 2.2 M events/s with 8 streams, 0.33 M with 64; with a binary heap of stale-marked events,
// jittered, at load 2: 4.4-5.3 M at 8 streams, 3.7-5.2 M at 64, 2.9-3.5 M at 512; with the
// indexed 4-ary heap, 64-byte task lines and add_task's prepared lists, at load 2.5-2.8:
// 7.2-8.2 M, 5.6-7.0 M and 4.7-5.3 M, docs/benchmarks.md). An event is an instant at which the core
// changes something (`result::events`); the tasks that end at that instant are handled in it
// together. On the grid workload (jitter 0) an event at 64 streams ends ~7.4 tasks, at 8 streams
// ~1.3, so events/s there falls with the streams however cheap each task is: the cost of an
// event is O(log n) plus the tasks it changes. The jittered workload (same tasks, durations
// apart by up to 0.1 %) has about one task per event at any stream count, and is the one that
// measures the cost of an event against the number of streams; tasks/s is shown for both.
void event_core(benchmark::State& st) {
  const auto s =
      synthetic(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)), st.range(2) != 0);
  std::size_t events = 0, tasks = 0;
  for (auto _ : st) {
    const auto r = s.run();
    events += r.events;
    tasks += r.tasks.size();
    benchmark::DoNotOptimize(r.makespan);
  }
  st.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  st.counters["tasks/s"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate);
  st.counters["tasks/event"] = static_cast<double>(tasks) / static_cast<double>(events);
}
BENCHMARK(event_core)
    ->ArgNames({"streams", "tasks", "jitter"})
    ->Args({8, 1000, 0})
    ->Args({64, 200, 0})
    ->Args({8, 1000, 1})
    ->Args({64, 125, 1})
    ->Args({512, 16, 1})
    ->Unit(benchmark::kMillisecond);

const auto resnet = zoo::resnet50();
const auto vgg = zoo::vgg16();

void closed_form_resnet50_data(benchmark::State& st) {
  for (auto _ : st)
    benchmark::DoNotOptimize(
        analytic::evaluate(resnet.view(), parallel::data{64}, presets::abci(64), {.batch = 1024}));
}
BENCHMARK(closed_form_resnet50_data);

void simulate_resnet50_data_overlap(benchmark::State& st) {
  for (auto _ : st)
    benchmark::DoNotOptimize(sim::simulate(resnet.view(), parallel::data{64}, presets::abci(64),
                                           {.batch = 1024}, {.overlap = true, .buckets = 8})
                                 .iteration);
}
BENCHMARK(simulate_resnet50_data_overlap)->Unit(benchmark::kMicrosecond);

void simulate_vgg16_gpipe_4x32(benchmark::State& st) {
  for (auto _ : st)
    benchmark::DoNotOptimize(
        sim::simulate(vgg.view(), parallel::pipeline{4, 32}, presets::abci(4), {.batch = 128})
            .iteration);
}
BENCHMARK(simulate_vgg16_gpipe_4x32)->Unit(benchmark::kMicrosecond);

// Issue 6's transformer targets. GPT-2 1.5B dimensions (48 layers, h = 1600) with 16 heads, so
// that t = 2 divides them (GPT-2 XL's 25 heads admit only t in {1, 5, 25}), on 32 A100 as
// t = 2 x p = 4 x d = 4, 16 micro-batches; Proteus Table VI needs 6.3 s for GPT-2 on 32 GPUs.
// Target <= 10 ms.
const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);

void simulate_gpt2_1_5b_3d_32_gpus(benchmark::State& st) {
  transformer m = zoo::gpt2_1_5b();
  m.heads = 16;
  const parallel::nd s{
      .tensor = {.degree = 2}, .pipeline = {.degree = 4}, .data = {.degree = 4}, .micro_batch = 4};
  const cluster c = presets::dgx_a100(4);
  const training t{.batch = 256};
  std::size_t tasks = 0;
  for (auto _ : st) {
    const auto r = sim::simulate(m, s, c, t, a100);
    tasks = r.graph.tasks().size();
    benchmark::DoNotOptimize(r.iteration);
  }
  st.counters["tasks"] = static_cast<double>(tasks);
}
BENCHMARK(simulate_gpt2_1_5b_3d_32_gpus)->Unit(benchmark::kMillisecond);

// GPT-3 175B on 1024 A100: t = 8, p = 8, d = 16, 1F1B, 64 micro-batches (global batch 1024).
// Target <= 1 s.
void simulate_gpt3_1024_gpus_1f1b_64(benchmark::State& st) {
  const parallel::nd s{.tensor = {.degree = 8},
                       .pipeline = {.degree = 8},
                       .data = {.degree = 16},
                       .recomputation = parallel::recompute::full,
                       .micro_batch = 1};
  const cluster c = presets::dgx_a100(128);
  const training t{.batch = 1024, .sequence = 2048};
  std::size_t tasks = 0, events = 0;
  for (auto _ : st) {
    const auto r = sim::simulate(zoo::gpt3_175b(), s, c, t, a100);
    tasks = r.graph.tasks().size();
    events = r.run.events;
    benchmark::DoNotOptimize(r.iteration);
  }
  st.counters["tasks"] = static_cast<double>(tasks);
  st.counters["events"] = static_cast<double>(events);
}
BENCHMARK(simulate_gpt3_1024_gpus_1f1b_64)->Unit(benchmark::kMillisecond);
}  // namespace
