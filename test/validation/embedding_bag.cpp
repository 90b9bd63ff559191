// The EL model (model/embedding_bag.hpp) against 36 measured nn.EmbeddingBag cases on an H100
// (test/data/h100_embedding_bag.csv: E 1e5/1e6/1e7, D 32, L 1/20/80 at B 8192/4096/2048,
// uniform and Zipf 0.8/1.05/1.2 access). Fixed split: in every group of four rows (one (E, L)
// with its four distributions) two rows train and two are held out, alternating between
// groups, so every distribution and every shape is on both sides. Fit on the 18 training rows,
// report on the 18 others, split by distribution. Lin et al. Table I: 4-6 % GMAE forward,
// 3-4 % backward (an MLP per GPU on FBGEMM's kernel).
//
// Measured here (docs/lin.md): held out, forward GMAE 11.3 % (MAPE 26.2 %), forward +
// backward 4.4 %, + SGD 8.4 %. The forward misses the 10 % target, and no form built from the
// file's columns can meet it: PyTorch's CUDA forward is one kernel for every E (no sort, no
// radix pass; aten/src/ATen/native/cuda/EmbeddingBag.cu), that kernel needs at most 19 us here
// (checked below), and every measured call (29-123 us) is the host's dispatch, not the
// kernel. The calls fall in clusters by position in the benchmark, not by any column (the
// E = 1e6, L <= 20 block runs at 114-123 us, 2.6x its neighbours E = 1e5 and 1e7 and its own
// L = 80 rows; the same block's SGD step is host-bound too, see docs/lin.md). A lookup on the
// nearest training row of the same (E, L) gets 5.0 % (below): it memorizes that host state.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <strata/analytic/dlrm.hpp>
#include <strata/calibrate/embedding_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/hardware/presets.hpp>
#include <strata/io/profile.hpp>

#include "record.hpp"

namespace validation_embedding_bag {

using namespace strata;

namespace {
std::vector<calibrate::embedding_bag_measurement> load() {
  std::ifstream in(STRATA_TEST_DATA_DIR "/h100_embedding_bag.csv");
  REQUIRE(in);
  return calibrate::read_embedding_bag_csv(in, "h100_embedding_bag.csv");
}
void print(const char* what, const calibrate::embedding_errors_report& r) {
  std::printf(
      "%s: forward GMAE %.1f %% (MAPE %.1f %%), forward+backward %.1f %% (%.1f %%), "
      "+SGD %.1f %% (%.1f %%)\n",
      what, 100 * r.forward.gmae, 100 * r.forward.mape, 100 * r.forward_backward.gmae,
      100 * r.forward_backward.mape, 100 * r.forward_backward_sgd.gmae,
      100 * r.forward_backward_sgd.mape);
  for (const auto& [d, s] : r.by_distribution)
    std::printf("  %-9s forward %5.1f %%  forward+backward %5.1f %%  +SGD %5.1f %%\n", d.c_str(),
                100 * s.forward.gmae, 100 * s.forward_backward.gmae,
                100 * s.forward_backward_sgd.gmae);
}
}  // namespace

TEST_CASE("EL model on held-out H100 EmbeddingBag measurements", "[embedding][validation]") {
  const auto all = load();
  REQUIRE(all.size() == 36);
  std::vector<calibrate::embedding_bag_measurement> train, test;
  for (std::size_t i = 0; i < all.size(); ++i)
    ((i + i / 4) % 2 == 0 ? train : test).push_back(all[i]);
  const auto m = calibrate::fit_embedding_bag(train);
  const auto held = calibrate::embedding_errors(m, test);
  print("held out", held);
  print("training", calibrate::embedding_errors(m, train));
  CHECK(held.forward.gmae <= 0.12);           // 11.3 % measured (target 10 %: see the file comment)
  CHECK(held.forward_backward.gmae <= 0.05);  // 4.4 % measured
  CHECK(held.forward_backward_sgd.gmae <= 0.10);  // 8.4 % measured
  REQUIRE(held.by_distribution.size() == 4);
  for (const auto& [d, s] : held.by_distribution) CHECK(s.forward_backward.gmae <= 0.10);

  // The fitted dense-gradient bandwidth is physical: 85 % of the H100's 3.35 TB/s, with four
  // passes per accumulated backward and one + three with zero_grad and SGD.
  CHECK(m.dense_bandwidth == Approx(2.85e12).epsilon(0.05));

  // Every call in the file is host-bound: the one forward kernel (launch + the longer of its
  // serial chain and its traffic) ends before the call returns. The largest kernel is an
  // L = 80 row: 3 us + 80 lookups x 0.2 us = 19 us, against the fastest such call, 31.7 us.
  double worst = 0;
  for (const auto& x : all) {
    CHECK(m.forward_kernel(x.shape) < x.forward);
    worst = std::max(worst, m.forward_kernel(x.shape) / x.forward);
  }
  std::printf("forward kernel / measured call: at most %.2f\n", worst);
  CHECK(worst == Approx(19.0 / 31.68).epsilon(0.01));

  // Baseline (what Lin et al.'s learned model could pick up): each held-out forward predicted
  // by the training row of the same (E, L) with the nearest unique-row count.
  std::vector<double> nn;
  for (const auto& t : test) {
    const calibrate::embedding_bag_measurement* best = nullptr;
    for (const auto& r : train)
      if (r.shape.rows == t.shape.rows && r.shape.pooling == t.shape.pooling &&
          (best == nullptr ||
           std::fabs(std::log(r.shape.reuse.unique() / t.shape.reuse.unique())) <
               std::fabs(std::log(best->shape.reuse.unique() / t.shape.reuse.unique()))))
        best = &r;
    REQUIRE(best != nullptr);
    nn.push_back((best->forward - t.forward) / t.forward);
  }
  const auto base = calibrate::summarize(nn);
  std::printf("nearest (E, L) neighbour, forward: GMAE %.1f %% (MAPE %.1f %%)\n", 100 * base.gmae,
              100 * base.mape);
  CHECK(base.gmae < held.forward.gmae);
}

TEST_CASE("the shipped H100 EL constants are the fit on all rows", "[embedding][validation]") {
  const auto all = load();
  const auto m = calibrate::fit_embedding_bag(all);
  const embedding_bag_model& h = h100_embedding_bag;
  CHECK(m.floor_forward == Approx(h.floor_forward).epsilon(0.01));
  CHECK(m.floor_backward == Approx(h.floor_backward).epsilon(0.01));
  CHECK(m.floor_update == Approx(h.floor_update).epsilon(0.01));
  CHECK(m.per_lookup == Approx(h.per_lookup).epsilon(0.01));
  CHECK(m.dense_bandwidth == Approx(h.dense_bandwidth).epsilon(0.01));
  const auto e = calibrate::embedding_errors(h, all);
  print("shipped constants, all rows", e);
  CHECK(e.forward_backward.gmae <= 0.06);
}

TEST_CASE("kernel-only EmbeddingBag times: one forward kernel, calls bound by the host",
          "[embedding][validation]") {
  // test/data/h200_embedding_bag_kernels.csv (this project, one H200, 2026-11-27): the 36 shapes
  // of h100_embedding_bag.csv under torch.profiler. What the EL model's forward rests on holds
  // there: each forward is ONE GPU operation (no sort, no radix pass), lasting 4.4-15.6 us,
  // under half of the same call timed between CUDA events (35-86 us): the call's time is the
  // host's (`floor_forward`), the kernel's only its floor. The backward is 34-35 operations
  // (the sort, the segment reduction, the dense gradient's zero-fill, ...); SGD adds 1, 2 and
  // 16 of them at E = 1e5, 1e6 and 1e7.
  std::ifstream in(STRATA_TEST_DATA_DIR "/h200_embedding_bag_kernels.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 36);
  double longest = 0, largest_share = 0;
  for (const auto& r : table.rows) {
    CHECK(r.at("fwd_ops") == "1");
    const double kernel = std::stod(r.at("fwd_kernel_ms")), call = std::stod(r.at("fwd_ms"));
    longest = std::max(longest, kernel);
    largest_share = std::max(largest_share, kernel / call);
    const int backward_ops = std::stoi(r.at("fwdbwd_ops")) - 1;
    CHECK((backward_ops == 34 || backward_ops == 35));
    const double E = std::stod(r.at("rows_E"));
    CHECK(std::stoi(r.at("fwdbwd_sgd_ops")) - std::stoi(r.at("fwdbwd_ops")) == (E < 1e6   ? 1
                                                                                : E < 1e7 ? 2
                                                                                          : 16));
  }
  CHECK(longest * 1e3 == Approx(15.55).margin(0.05));
  CHECK(largest_share < 0.45);
}

TEST_CASE("Lin et al.'s measured DLRM steps on a V100 and a TITAN Xp", "[embedding][validation]") {
  // test/data/lin_hipc22_dlrm_steps.csv: dlrm_s_pytorch.py's steps (batched tables, fused SGD)
  // as Lin et al.'s HiPC'22 figure shows them, on the DeepBench-fitted profiles of each GPU
  // (tools/profiles) and the H100 EL fit carried to it. The eager loop (`dlrm_loop::eager`)
  // against the kernels alone: the small batches are the host's, 4.1-4.6 ms of it (Lin et al.'s
  // overheads), where the kernels alone came out 2-3 times too fast. The P100 rows are left out:
  // strata has no P100 profile. Measured here (docs/lin.md): V100 DLRM_default +1.8 / -2.3 /
  // -12.4 / -3.0 %; the TITAN Xp and DLRM_DDP rows 8-40 % fast, the most at batch 4096.
  std::ifstream in(STRATA_TEST_DATA_DIR "/lin_hipc22_dlrm_steps.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 24);
  const auto profile = [](const char* file) {
    std::ifstream f(std::string(STRATA_PROFILES_DIR) + "/" + file);
    std::stringstream text;
    text << f.rdbuf();
    return io::profile_from_text(text.str()).profile;
  };
  const device_profile v100 = profile("v100_sxm2.json"), xp = profile("titan_xp.json");
  std::vector<double> errors;
  int rows = 0;
  for (const auto& r : table.rows) {
    if (r.at("gpu") == "P100") continue;
    const bool is_v100 = r.at("gpu") == "V100";
    const device& dev = is_v100 ? presets::v100_sxm2_16gb : presets::titan_xp;
    const embedding_bag_model el = h100_embedding_bag.carried(
        dev.memory_bandwidth / presets::h100_sxm5_80gb.memory_bandwidth, dev.l2.count());
    dlrm m;
    m.dense_features = std::stoi(r.at("dense_features"));
    m.bottom.clear();
    m.top.clear();
    std::stringstream bottom(r.at("bottom")), top(r.at("top"));
    for (std::string w; std::getline(bottom, w, '-');) m.bottom.push_back(std::stoi(w));
    for (std::string w; std::getline(top, w, '-');) m.top.push_back(std::stoi(w));
    for (int i = 0; i < std::stoi(r.at("tables")); ++i)
      m.tables.push_back({.name = std::to_string(i),
                          .rows = std::stod(r.at("rows")),
                          .dim = std::stod(r.at("dim")),
                          .pooling = std::stod(r.at("pooling"))});
    const double batch = std::stod(r.at("batch")), measured = std::stod(r.at("measured_ms"));
    const auto step = [&](analytic::dlrm_loop loop) {
      analytic::dlrm_setup s{.batch = batch};
      s.loop = loop;
      return 1e3 * analytic::dlrm_step(m, s, dev, is_v100 ? v100 : xp, el).iteration_time;
    };
    const double eager = step(analytic::dlrm_loop::eager);
    const double kernels = step(analytic::dlrm_loop::kernels);
    const double e = eager / measured - 1;
    std::printf("%-8s %-12s %5.0f: measured %6.2f ms, eager %6.2f (%+5.1f %%), kernels %6.2f\n",
                r.at("gpu").c_str(), r.at("model").c_str(), batch, measured, eager, 100 * e,
                kernels);
    strata_test::record("lin_dlrm_steps", "gpu,model,batch,measured_ms,strata_ms,kernels_ms",
                        r.at("gpu"), r.at("model"), batch, measured, eager, kernels);
    // the host accounts for what the kernels alone miss, on every row
    CHECK(std::abs(e) < std::abs(kernels / measured - 1));
    if (is_v100 && r.at("model") == "DLRM_default") CHECK(std::abs(e) < 0.15);
    CHECK(std::abs(e) < 0.45);
    errors.push_back(std::abs(e));
    ++rows;
  }
  REQUIRE(rows == 16);
  std::sort(errors.begin(), errors.end());
  const double median = (errors[7] + errors[8]) / 2;
  std::printf("median |error| %.1f %%\n", 100 * median);
  CHECK(median < 0.16);
}

}  // namespace validation_embedding_bag
