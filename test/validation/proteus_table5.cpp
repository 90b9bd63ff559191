// Proteus (Duan et al.) Table V: GPT-2 under DP x MP x PP(n_micro_batch) on HC1 (8 TITAN Xp,
// PCIe with QPI, global batch 8) and HC2 (4 x 8 V100, NVLink, 100 Gb/s InfiniBand, global batch
// 64), ranked by HTAE's predicted throughput against the measured ranks
// (test/data/proteus_table5.csv). Assumptions (device profiles, gamma, precision, layout):
// docs/proteus.md.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "record.hpp"
#include "strata/calibrate/readers.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/profile.hpp"
#include "strata/model/transformer_zoo.hpp"
#include "strata/proteus/htae.hpp"
#include "strata/search/rank.hpp"

namespace validation_proteus_table5 {

using namespace strata;

namespace {
/// The shipped profile fitted to DeepBench's GEMMs and convolutions of the cluster's GPU
/// (docs/calibration.md): a TITAN Xp for HC1, a V100 for HC2.
device_profile fitted_profile(const std::string& hc) {
  std::ifstream f(std::string(STRATA_PROFILES_DIR "/") +
                  (hc == "HC1" ? "titan_xp.json" : "v100_sxm2.json"));
  REQUIRE(f);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return io::profile_from_text(text).profile;
}

/// Kendall's tau of predicted throughput against the truth ranks of one cluster's rows.
double table5_tau(const std::string& hc, std::vector<double>* throughput = nullptr) {
  std::ifstream in(STRATA_TEST_DATA_DIR "/proteus_table5.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  const auto m = zoo::gpt2_124m();
  const cluster c = hc == "HC1" ? presets::hc1() : presets::hc2();
  const device_profile prof = fitted_profile(hc);
  std::vector<double> predicted, truth;
  for (const auto& row : table.rows) {
    if (row.at("cluster") != hc) continue;
    auto num = [&](const char* k) { return std::stoi(row.at(k)); };
    training tr{.batch = num("global_batch"), .precision = precision_mode::fp32};
    tr.flash_attention = false;  // PyTorch 1.8
    const auto tree = proteus::dp_mp_pp(
        m,
        {.dp = num("dp"), .mp = num("mp"), .pp = num("pp"), .n_micro_batch = num("n_micro_batch")});
    const auto run = proteus::execute(proteus::compile(m, tree, c, tr, prof), c);
    REQUIRE_FALSE(run.oom);
    // rank 1 is the fastest: compare -throughput with the rank
    predicted.push_back(-tr.batch / run.iteration);
    truth.push_back(num("truth_rank"));
    if (throughput) throughput->push_back(tr.batch / run.iteration);
    strata_test::record("proteus_table5", "cluster,strategy,iteration_s,samples_per_s,truth_rank",
                        hc,
                        row.at("dp") + "x" + row.at("mp") + "x" + row.at("pp") + " (" +
                            row.at("n_micro_batch") + ")",
                        run.iteration, tr.batch / run.iteration, num("truth_rank"));
    std::printf("%s %sx%sx%s (%s): iteration %.3f s, %.1f samples/s, truth rank %s\n", hc.c_str(),
                row.at("dp").c_str(), row.at("mp").c_str(), row.at("pp").c_str(),
                row.at("n_micro_batch").c_str(), run.iteration, tr.batch / run.iteration,
                row.at("truth_rank").c_str());
  }
  return search::kendall_tau(predicted, truth);
}
}  // namespace

TEST_CASE("Proteus Table V: GPT-2 strategies on HC2 ranked as measured", "[proteus][table5]") {
  std::vector<double> thr;
  const double tau = table5_tau("HC2", &thr);
  // rows: 16x1x1, 8x2x1, 4x4x1, 2x8x1, 8x1x2(4), 8x1x2(8), 2x4x2(4). Predicted order (on the
  // V100 profile fitted to DeepBench): 16x1x1 > 8x2x1 > 4x4x1 > 2x8x1 > 8x1x2(8) > 8x1x2(4) >
  // 2x4x2(4), the measured one: tau = 1, as Proteus gets. 8x2x1 and 4x4x1 lie 0.2 % apart (on the
  // datasheet profile 4x4x1 came first and 2x4x2(4) before 8x1x2(4): tau 17/21).
  CHECK(tau == Approx(1.0));
  // data parallelism first (§VIII-C: the hybrids share the InfiniBand NIC)
  for (std::size_t i = 1; i < thr.size(); ++i) CHECK(thr[0] > thr[i]);
  CHECK(thr[2] / thr[1] < 1.03);
  // pipelines pay bubbles, more micro-batches fewer (§VIII-C): 8 micro-batches beat 4
  CHECK(thr[5] > thr[4]);
  CHECK(thr[4] < thr[3]);
  CHECK(thr[6] < thr[4]);
}

TEST_CASE("Proteus Table V: GPT-2 strategies on HC1 ranked as measured", "[proteus][table5]") {
  std::vector<double> thr;
  const double tau = table5_tau("HC1", &thr);
  // rows: 8x1x1, 4x2x1, 2x4x1, 1x8x1, 2x2x2(1), 2x2x2(2). Predicted order: 8x1x1 > 4x2x1 >
  // 2x4x1 > 2x2x2(2) > 1x8x1 > 2x2x2(1): one of 15 pairs discordant (8x1x1 vs 4x2x1, where the
  // paper credits 2-way model parallelism with using the QPI links fully): tau = (14 - 1) / 15,
  // on the datasheet profile and on the TITAN Xp profile fitted to DeepBench alike. Proteus
  // gets 1.0.
  CHECK(tau == Approx(13.0 / 15));
  // 2 micro-batches beat 1 by more than the bubble they remove from the lighter first stage
  CHECK(thr[5] / thr[4] > 1.2);
  CHECK(thr[5] > thr[3]);  // and beat 8-way model parallelism, whose all-reduces cross sockets
}

}  // namespace validation_proteus_table5
