// Yan et al.'s optimizer: time of the full search (every N_ps, N_mr, N_wr on N machines, each
// with the layer dynamic program) against layers and machines. The paper bounds it by
// O(L x K x N^7); baseline: one epoch evaluation of a fixed configuration.
#include <benchmark/benchmark.h>

#include <strata/search/yan_optimizer.hpp>
#include <strata/strata.hpp>

using namespace strata;

namespace {
// A fully-connected network of `layers` layers of 1024 neurons.
std::vector<yan::layer_view> mlp(int layers) {
  std::vector<yan::layer_view> v;
  for (int i = 0; i < layers; ++i)
    v.push_back(
        {layer_kind::linear, shape{1024}, shape{1024}, 1, 1024.0 * 1024, 1024.0 * 1024, 1024});
  return v;
}

void evaluate_one_configuration(benchmark::State& st) {
  const auto net = mlp(static_cast<int>(st.range(0)));
  const yan::system s{2, 4, 4};
  const auto split = yan::uniform(net, s, 16);
  for (auto _ : st)
    benchmark::DoNotOptimize(yan::evaluate(net, s, split, yan::e5_2450(), 60000, 20).epoch());
}
BENCHMARK(evaluate_one_configuration)->Arg(8)->Arg(32);

void optimize(benchmark::State& st) {
  const auto net = mlp(static_cast<int>(st.range(0)));
  const search::yan_space space{.machines = static_cast<int>(st.range(1))};
  for (auto _ : st)
    benchmark::DoNotOptimize(search::optimize_yan(net, yan::e5_2450(), space, 60000).epoch);
  st.counters["layers"] = static_cast<double>(st.range(0));
  st.counters["machines"] = static_cast<double>(st.range(1));
}
BENCHMARK(optimize)
    ->Args({4, 10})
    ->Args({8, 10})
    ->Args({16, 10})
    ->Args({8, 20})
    ->Args({8, 40})
    ->Unit(benchmark::kMillisecond);
}  // namespace
