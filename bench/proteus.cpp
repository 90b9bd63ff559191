// Proteus Table VI: the cost of simulating VGG19 and GPT-2 data parallelism on HC2 at 1..32 GPUs,
// compile (strategy tree -> execution graph) and execution (HTAE) apart, next to the seconds
// Proteus reports (test/data/proteus_table6.csv; the paper's Python simulator). Each benchmark
// prints paper_s, the paper's seconds for the same step, as a counter.
#include <benchmark/benchmark.h>

#include <array>

#include <strata/hardware/presets.hpp>
#include <strata/model/transformer_zoo.hpp>
#include <strata/model/zoo.hpp>
#include <strata/proteus/htae.hpp>

using namespace strata;

namespace {
// Table VI rows (GPUs 1, 2, 4, 8, 16, 32): VGG19 compile, exe; GPT-2 compile, exe (seconds)
constexpr std::array<std::array<double, 5>, 6> table6{{{1, 0.033, 0.006, 0.188, 0.070},
                                                       {2, 0.053, 0.407, 0.341, 0.450},
                                                       {4, 0.114, 0.530, 0.504, 0.692},
                                                       {8, 0.170, 0.563, 1.008, 0.873},
                                                       {16, 0.336, 0.630, 1.966, 1.172},
                                                       {32, 0.777, 0.921, 4.143, 2.123}}};
double paper(int gpus, int column) {
  for (const auto& r : table6)
    if (static_cast<int>(r[0]) == gpus) return r[static_cast<std::size_t>(column)];
  return 0;
}

const cluster hc2 = presets::hc2();
const device_profile v100 = datasheet_profile(hc2.dev);

// VGG19: 32 samples per GPU (Proteus §VIII-D), fp32
proteus::execution_graph vgg19_graph(int gpus) {
  static const auto net = zoo::vgg19();
  const auto tree = proteus::data_parallel_cnn("vgg19", static_cast<int>(net.view().size()), gpus);
  return proteus::compile(net.view(), tree, hc2, {.batch = 32 * gpus}, v100);
}
// GPT-2 124M: 4 sequences of 1024 per GPU (Table V's HC2 batch of 64 over 16), fp32
proteus::execution_graph gpt2_graph(int gpus) {
  const auto m = zoo::gpt2_124m();
  training tr{.batch = 4 * gpus, .precision = precision_mode::fp32};
  tr.flash_attention = false;
  return proteus::compile(m, proteus::dp_mp_pp(m, {.dp = gpus}), hc2, tr, v100);
}

void vgg19_compile(benchmark::State& st) {
  const int gpus = static_cast<int>(st.range(0));
  for (auto _ : st) benchmark::DoNotOptimize(vgg19_graph(gpus));
  st.counters["paper_s"] = paper(gpus, 1);
}
void vgg19_execute(benchmark::State& st) {
  const int gpus = static_cast<int>(st.range(0));
  const auto g = vgg19_graph(gpus);
  double iteration = 0;
  for (auto _ : st) {
    const auto run = proteus::execute(g, hc2);
    benchmark::DoNotOptimize(run.iteration);  // read-only: GCC mangles a "+m,r" double
    iteration = run.iteration;
  }
  st.counters["paper_s"] = paper(gpus, 2);
  st.counters["iteration_s"] = iteration;
  st.counters["ops"] = static_cast<double>(g.ops.size());
}
void gpt2_compile(benchmark::State& st) {
  const int gpus = static_cast<int>(st.range(0));
  for (auto _ : st) benchmark::DoNotOptimize(gpt2_graph(gpus));
  st.counters["paper_s"] = paper(gpus, 3);
}
void gpt2_execute(benchmark::State& st) {
  const int gpus = static_cast<int>(st.range(0));
  const auto g = gpt2_graph(gpus);
  double iteration = 0;
  for (auto _ : st) {
    const auto run = proteus::execute(g, hc2);
    benchmark::DoNotOptimize(run.iteration);  // read-only: GCC mangles a "+m,r" double
    iteration = run.iteration;
  }
  st.counters["paper_s"] = paper(gpus, 4);
  st.counters["iteration_s"] = iteration;
  st.counters["ops"] = static_cast<double>(g.ops.size());
}
}  // namespace

BENCHMARK(vgg19_compile)->RangeMultiplier(2)->Range(1, 32)->Unit(benchmark::kMillisecond);
BENCHMARK(vgg19_execute)->RangeMultiplier(2)->Range(1, 32)->Unit(benchmark::kMillisecond);
BENCHMARK(gpt2_compile)->RangeMultiplier(2)->Range(1, 32)->Unit(benchmark::kMillisecond);
BENCHMARK(gpt2_execute)->RangeMultiplier(2)->Range(1, 32)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
