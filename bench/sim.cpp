// Event-core throughput and plan-simulation cost. Baseline: the closed form of the same plan.
#include <benchmark/benchmark.h>

#include <strata/sim/paradl.hpp>
#include <strata/strata.hpp>

using namespace strata;

namespace {
// `streams` fifo streams and one shared link; each stream runs a chain of compute tasks with a
// flow on the link every fourth task.
sim::simulator synthetic(int streams, int tasks_per_stream) {
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
      t.resources = {flow ? link : fifo[static_cast<std::size_t>(i)]};
      t.work = flow ? 1e6 * (1 + (k + i) % 5) : 1e-4 * (1 + (k * 7 + i) % 3);
      t.cls = flow ? sim::task_class::communication : sim::task_class::compute;
      t.device = i;
      if (prev >= 0) t.deps = {prev};
      prev = s.add_task(t);
    }
  }
  return s;
}

void event_core(benchmark::State& st) {
  const auto s = synthetic(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  std::size_t events = 0;
  for (auto _ : st) {
    const auto r = s.run();
    events += r.events;
    benchmark::DoNotOptimize(r.makespan);
  }
  st.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(event_core)->Args({8, 1000})->Args({64, 200})->Unit(benchmark::kMillisecond);

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
}  // namespace
