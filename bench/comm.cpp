// Cost of one collective estimate: the closed forms per algorithm on a 1024-GPU DGX H100 cluster,
// NCCL's tuner, Lin et al.'s model, and the NVLink channel search. Baseline: ParaDL's ring formula
// on one precomputed link (the least work any estimate does).
#include <benchmark/benchmark.h>

#include <strata/strata.hpp>

using namespace strata;
using comm::collective;

namespace {
const cluster big = presets::dgx_h100(128);
const group world{0, 1024, 1};

void baseline_ring_formula(benchmark::State& st) {
  const interconnect l = comm::ring_link(big, world);
  double m = 1e9;
  for (auto _ : st) {
    benchmark::DoNotOptimize(comm::ring::all_reduce(1024, bytes{m}, l));
    m += 1;
  }
}
BENCHMARK(baseline_ring_formula);

// Alternates between two group sizes so that the placement is not hoisted out of the loop.
template <class Algorithm>
void algorithm(benchmark::State& st) {
  double m = 1e9;
  group g = world;
  for (auto _ : st) {
    benchmark::DoNotOptimize(g);
    benchmark::DoNotOptimize(Algorithm::time(collective::all_reduce, big, g, bytes{m}));
    g.size = g.size == 1024 ? 512 : 1024;
    m += 1;
  }
}
BENCHMARK(algorithm<comm::ring>);
BENCHMARK(algorithm<comm::tree>);
BENCHMARK(algorithm<comm::recursive>);
BENCHMARK(algorithm<comm::hierarchical>);
BENCHMARK(algorithm<comm::direct>);
// NCCL's tuner: 8 algorithm x protocol pairs priced, the fastest kept (comm/nccl.hpp).
BENCHMARK(algorithm<comm::nccl>);

void lin_sigmoid_model(benchmark::State& st) {
  const comm::lin_model m{collective::all_reduce,
                          8,
                          27e-6,
                          16384,
                          1 << 30,
                          comm::sigmoid{3.3, 18.0, 0.38, -0.62},
                          476e9};
  double s = 1e6;
  for (auto _ : st) {
    benchmark::DoNotOptimize(m.time(bytes{s}));
    s += 1;
  }
}
BENCHMARK(lin_sigmoid_model);

void nvlink_channel_search_4_gpus(benchmark::State& st) {
  mesh m = presets::lin_4x_gv100_mesh();
  for (auto _ : st) {
    benchmark::DoNotOptimize(m);
    benchmark::DoNotOptimize(ring_bandwidth(m));
  }
}
BENCHMARK(nvlink_channel_search_4_gpus);
}  // namespace
