// Lin et al.'s embedding lookups (issue 17): one EL cost from a reuse histogram (target
// <= 100 ns), against a bare bytes-over-bandwidth roofline as a baseline; and one sharding
// evaluation (a Table III sharder, then the 8-GPU plan's prediction) of 100 tables on 8 GPUs
// (target <= 50 us). Beside them, Lin et al.'s MLP (calibrate/embedding_mlp.hpp): one prediction
// and the training of one network on 18 rows, the size of the held-out split's training half.
#include <benchmark/benchmark.h>

#include <strata/calibrate/embedding_mlp.hpp>

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

// 18 rows shaped like the H100 file's (E 1e5..1e7, L 1/20/80, the measured batch's histogram);
// times from the shipped model, so the networks have something smooth to fit
std::vector<calibrate::embedding_bag_measurement> mlp_rows() {
  std::vector<calibrate::embedding_bag_measurement> d;
  for (double e : {1e5, 1e6, 1e7})
    for (double l : {1.0, 20.0, 80.0})
      for (double b : {2048.0, 4096.0}) {
        calibrate::embedding_bag_measurement m;
        m.shape = measured;
        m.shape.rows = e;
        m.shape.pooling = l;
        m.shape.batch = b;
        m.forward = h100_embedding_bag.forward(m.shape);
        d.push_back(m);
      }
  return d;
}

void el_forward_mlp(benchmark::State& st) {  // the learned model's one prediction
  const auto net = calibrate::train_embedding_mlp(mlp_rows(), calibrate::embedding_column::forward);
  embedding_bag_shape s = measured;
  for (auto _ : st) {
    benchmark::DoNotOptimize(net.predict(s));
    s.batch += 1;
  }
}
BENCHMARK(el_forward_mlp);

void el_mlp_training_18_rows(benchmark::State& st) {  // 500 full-batch Adam steps
  const auto rows = mlp_rows();
  for (auto _ : st)
    benchmark::DoNotOptimize(
        calibrate::train_embedding_mlp(rows, calibrate::embedding_column::forward).training_loss());
}
BENCHMARK(el_mlp_training_18_rows)->Unit(benchmark::kMillisecond);

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
