// Lin et al.'s embedding lookups (issue 17): one EL cost from a reuse histogram (target
// <= 100 ns), against a bare bytes-over-bandwidth roofline as a baseline; and one sharding
// evaluation (a Table III sharder, then the 8-GPU plan's prediction) of 100 tables on 8 GPUs
// (target <= 50 us).
#include <benchmark/benchmark.h>

#include <strata/analytic/dlrm.hpp>
#include <strata/hardware/presets.hpp>
#include <strata/search/sharders.hpp>

using namespace strata;

namespace {
// a measured batch: E 1e6, D 32, L 20, B 4096, Zipf 1.05 (test/data/h100_embedding_bag.csv)
const embedding_bag_shape measured{
    1e6, 32, 20, 4096, {{21989, 2473, 1323, 690, 341, 206, 78, 56, 26, 13, 6, 3, 2, 1}}, 4};

void baseline_el_roofline(benchmark::State& st) {
  double n = 81920;
  for (auto _ : st) {
    benchmark::DoNotOptimize(43e-6 + n * 128 / 2.68e12);
    n += 1;
  }
}
BENCHMARK(baseline_el_roofline);

void el_forward(benchmark::State& st) {
  embedding_bag_shape s = measured;
  for (auto _ : st) {
    benchmark::DoNotOptimize(h100_embedding_bag.forward(s));
    s.batch += 1;
  }
}
BENCHMARK(el_forward);

void el_training_step(benchmark::State& st) {  // forward + fused backward/update
  embedding_bag_shape s = measured;
  for (auto _ : st) {
    benchmark::DoNotOptimize(h100_embedding_bag.step(s, embedding_gradient::fused));
    s.batch += 1;
  }
}
BENCHMARK(el_training_step);

void sharding_100_tables_8_gpus(benchmark::State& st) {
  const dlrm m{.tables = generate_tables(100, table_mix::normal, 64, 17, 4096)};
  const cluster c = presets::dgx_h100(1);
  const device_profile prof = datasheet_profile(presets::h100_sxm5_80gb);
  const analytic::dlrm_setup setup{.batch = 4096};
  const auto sizes = search::table_bytes(m, setup);
  for (auto _ : st) {
    const auto owner = search::shard(m.tables, 8, search::sharder::size_lookup_greedy, sizes, 60e9);
    benchmark::DoNotOptimize(
        analytic::dlrm_plan(m, setup, owner, 8, c, prof, h100_embedding_bag).iteration_time);
  }
}
BENCHMARK(sharding_100_tables_8_gpus)->Unit(benchmark::kMicrosecond);

void sharder_selection_100_tables_8_gpus(benchmark::State& st) {  // all six, Table IV
  const dlrm m{.tables = generate_tables(100, table_mix::normal, 64, 17, 4096)};
  const cluster c = presets::dgx_h100(1);
  const device_profile prof = datasheet_profile(presets::h100_sxm5_80gb);
  for (auto _ : st)
    benchmark::DoNotOptimize(
        search::select_sharder(m, {.batch = 4096}, 8, c, prof, h100_embedding_bag).best);
}
BENCHMARK(sharder_selection_100_tables_8_gpus)->Unit(benchmark::kMicrosecond);
}  // namespace
