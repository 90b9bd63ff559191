// Cost of predicting one kernel with a device profile (issue 4's "one op"), against the bare
// roofline formula as a baseline.
#include <benchmark/benchmark.h>

#include <algorithm>

#include <strata/analytic/step.hpp>
#include <strata/strata.hpp>

using namespace strata;

namespace {
const device_profile profile = datasheet_profile(presets::h100_sxm5_80gb, 132);

void baseline_roofline(benchmark::State& st) {
  double m = 4096;
  for (auto _ : st) {
    const double flops = 2 * m * 4096 * 4096, mem = (m * 4096 * 3) * 2;
    benchmark::DoNotOptimize(std::max(flops / 989e12, mem / 3.35e12));
    m += 1;
  }
}
BENCHMARK(baseline_roofline);

void gemm_time(benchmark::State& st) {
  double m = 4096;
  for (auto _ : st) {
    benchmark::DoNotOptimize(profile.bf16.time(m, 4096, 4096));
    m += 1;
  }
}
BENCHMARK(gemm_time);

void stream_time(benchmark::State& st) {
  double b = 1e6;
  for (auto _ : st) {
    benchmark::DoNotOptimize(profile.layer_norm.time(b));
    b += 1;
  }
}
BENCHMARK(stream_time);

// One whole-step prediction: time (every kernel) and memory.
void gpt2_124m_step(benchmark::State& st) {
  const analytic::gpt2_config c{
      .layers = 12, .hidden = 768, .heads = 12, .sequence = 1024, .batch = 8};
  for (auto _ : st) {
    benchmark::DoNotOptimize(analytic::gpt2_step(c, profile).time());
    benchmark::DoNotOptimize(analytic::gpt2_memory(c).peak);
  }
}
BENCHMARK(gpt2_124m_step)->Unit(benchmark::kMicrosecond);

void resnet50_step(benchmark::State& st) {
  const auto net = zoo::resnet50();
  for (auto _ : st) {
    benchmark::DoNotOptimize(analytic::cnn_step(net.view(), {128}, profile).time());
    benchmark::DoNotOptimize(analytic::cnn_memory(net.view(), {128}).peak);
  }
}
BENCHMARK(resnet50_step)->Unit(benchmark::kMicrosecond);
}  // namespace
