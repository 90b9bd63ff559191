// Lin et al.'s model against measured all-reduce curves (test/data/nccl_tests_allreduce_busbw.csv,
// Azure ND H100 v5 / H200 v5 / A100 v4 nccl-tests, 24 sizes each): fit on the even-indexed sizes,
// predict the odd ones. Lin et al. Table I reports 5-6 % GMAE for all-reduce. The alpha-beta rows
// are strata's closed forms on the DGX presets; docs/comm.md explains their gap.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <strata/calibrate/lin_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/strata.hpp>

#include "record.hpp"

namespace validation_nccl_allreduce {

using namespace strata;
using comm::collective;

namespace {
std::vector<calibrate::measurement> curve(const std::string& system) {
  std::ifstream in(STRATA_TEST_DATA_DIR "/nccl_tests_allreduce_busbw.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  return calibrate::measurements_from_csv(
      table, collective::all_reduce, 8,
      [&](const auto& row) {
        return row.at("kind") == "measured curve" && row.at("system") == system;
      },
      true);
}
calibrate::error_summary held_out(const std::string& system) {
  const auto all = curve(system);
  REQUIRE(all.size() == 24);
  std::vector<calibrate::measurement> train, test;
  for (std::size_t i = 0; i < all.size(); ++i) (i % 2 == 0 ? train : test).push_back(all[i]);
  const auto m = calibrate::fit_lin_model(train, collective::all_reduce, 8);
  for (std::size_t i = 0; i < all.size(); ++i)
    strata_test::record(
        "nccl_allreduce", "system,bytes,held_out,measured_busbw_gbps,lin_busbw_gbps", system,
        all[i].size.count(), i % 2 == 1 ? 1 : 0, all[i].busbw.count() / 1e9,
        comm::busbw(collective::all_reduce, 8, all[i].size, m.time(all[i].size)).count() / 1e9);
  return calibrate::evaluate_fit(test, [&](bytes s) { return m.time(s); });
}
}  // namespace

TEST_CASE("Lin et al.'s model predicts held-out all-reduce sizes") {
  // measured here: H100 GMAE 2.5 % / MAPE 3.8 %, H200 1.3 % / 1.9 %, A100 2.0 % / 4.2 %
  const auto h100 = held_out("Azure ND H100 v5");
  CHECK(h100.gmae < 0.03);
  CHECK(h100.mape < 0.045);
  const auto h200 = held_out("Azure ND H200 v5");
  CHECK(h200.gmae < 0.02);
  CHECK(h200.mape < 0.025);
  const auto a100 = held_out("Azure ND A100 v4");
  CHECK(a100.gmae < 0.025);
  CHECK(a100.mape < 0.05);
}

TEST_CASE("alpha-beta ring on the DGX presets against the same curves") {
  const group g{0, 8, 1};
  // A100: at 8 GiB the ring on 300 GB/s NVLink predicts 300 GB/s bus bandwidth; NCCL measures
  // 231.6, about 77 % of line rate (the maintainers' "~20 GB/s effective per 25 GB/s link").
  const auto a100 = curve("Azure ND A100 v4");
  const auto big = a100.back();
  const seconds t = comm::ring::time(collective::all_reduce, presets::dgx_a100(1), g, big.size);
  CHECK(comm::busbw(collective::all_reduce, 8, big.size, t).count() == Approx(300e9).epsilon(0.01));
  CHECK(big.busbw.count() / 300e9 == Approx(0.772).epsilon(0.01));
  // H100: NVLS (in-switch) reaches 479 GB/s bus bandwidth, above the 450 GB/s wire, which no
  // algorithm without in-network reduction can (the ring model tops out at the wire).
  const auto h100 = curve("Azure ND H100 v5");
  const seconds tr =
      comm::ring::time(collective::all_reduce, presets::dgx_h100(1), g, h100.back().size);
  CHECK(comm::busbw(collective::all_reduce, 8, h100.back().size, tr).count() <= 450e9);
  CHECK(h100.back().busbw.count() > 450e9);
}

TEST_CASE("NCCL's tuner (comm::nccl) against the measured curves, 1 KiB to 8 GiB") {
  // Errors printed per size (model / measured - 1). What the data supports:
  //  - at 256 MiB and above, within 10 % on all three systems (NVLS on H100/H200, ring on A100);
  //  - H200 (NCCL 2.20.5), within 25 % at every size (largest: -21 % at 16 MiB, where NVLS has not
  //    reached its bandwidth yet);
  //  - H100 (NCCL 2.18.5), within 25 % at every size but 64-512 KiB, within 40 % there: that
  //    NCCL version measured a flat 42 us from 64 KiB to 2 MiB, while 2.20.5 on the same NVSwitch
  //    fabric (the H200 curve) stays at 31 us; the tuner's 25-32 us sits with the latter;
  //  - A100 (Azure ND A100 v4), within 45 %: that system never goes below 42 us, 17 us above the
  //    tuner's ring/LL plus launch; from 256 MiB on within 10 %.
  struct sys {
    std::string name;
    cluster c;
  };
  for (const sys& s : {sys{"Azure ND H100 v5", presets::dgx_h100(1)},
                       sys{"Azure ND H200 v5", presets::dgx_h200(1)},
                       sys{"Azure ND A100 v4", presets::dgx_a100(1)}}) {
    const auto measured = curve(s.name);
    REQUIRE(measured.size() == 24);
    double worst = 0;
    for (const auto& m : measured) {
      const auto pick = comm::nccl::choose(collective::all_reduce, s.c, {0, 8, 1}, m.size);
      const double err = pick.time / m.time - 1;
      std::printf(
          "nccl tuner %-17s %11.0f B  measured %9.1f us  model %9.1f us (%s/%s)  %+6.1f %%\n",
          s.name.c_str(), m.size.count(), m.time.count() * 1e6, pick.time.count() * 1e6,
          std::string(comm::to_string(pick.algo)).c_str(),
          std::string(comm::to_string(pick.proto)).c_str(), 100 * err);
      INFO(s.name << " at " << m.size.count() << " B: " << 100 * err << " %");
      const double kib = m.size.count() / 1024;
      if (m.size.count() >= 256.0 * 1024 * 1024) CHECK(std::abs(err) <= 0.10);
      if (s.name == "Azure ND H200 v5") CHECK(std::abs(err) <= 0.25);
      if (s.name == "Azure ND H100 v5")
        CHECK(std::abs(err) <= (kib >= 64 && kib <= 512 ? 0.40 : 0.25));
      if (s.name == "Azure ND A100 v4") CHECK(std::abs(err) <= 0.45);
      worst = std::max(worst, std::abs(err));
    }
    std::printf("nccl tuner %-17s largest error %.1f %%\n", s.name.c_str(), 100 * worst);
  }
}

}  // namespace validation_nccl_allreduce
