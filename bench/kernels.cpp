// Cost of predicting one kernel with a device profile (issue 4's "one op"), against the bare
// roofline formula as a baseline.
#include <benchmark/benchmark.h>

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
}  // namespace
