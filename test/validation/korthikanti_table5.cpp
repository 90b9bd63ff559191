// Korthikanti et al. 2022 Table 5 (test/data/korthikanti2022_table5_time.csv): end-to-end
// iteration time of the 22B, 175B, 530B and 1T GPTs on A100-80GB (Selene), full recomputation
// against sequence parallelism with selective recomputation, fp16, unfused attention (2022).
// The same A100 profile as SC'21 Table 1 (datasheet peaks, the H100-fitted GEMM efficiency);
// nothing is fitted to this table. Calculon reports 3.7 % mean, 8.9 % max on these rows.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <strata/calibrate/readers.hpp>
#include <strata/strata.hpp>
#include <string>

#include "korthikanti.hpp"
#include "record.hpp"

namespace validation_korthikanti_table5 {

using namespace strata;

TEST_CASE("Korthikanti et al. Table 5: iteration time with and without selective recomputation") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/korthikanti2022_table5_time.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 8);
  const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
  double sum = 0, worst = 0;
  for (const auto& row : table.rows) {
    const auto [m, s, t] = strata_test::korthikanti_row(row);
    const bool selective = row.at("recompute") == "selective";
    const auto r =
        analytic::evaluate(m, s, presets::dgx_a100(std::stoi(row.at("gpus")) / 8), t, a100);
    const double published = std::stod(row.at("iteration_s"));
    const double err = 100 * (r.iteration_time().count() / published - 1);
    INFO(row.at("model") << " " << row.at("mode") << ": " << r.iteration_time().count()
                         << " s against " << published);
    // selective recomputation runs the unfused attention core again: never free
    if (selective) CHECK(r.time.recompute.count() > 0);
    strata_test::record("korthikanti_table5", "model,mode,published_s,strata_s,error_pct",
                        row.at("model"), row.at("mode"), published, r.iteration_time().count(),
                        err);
    sum += std::abs(err);
    worst = std::max(worst, std::abs(err));
  }
  std::printf("Korthikanti Table 5: mean |error| %.1f %%, max %.1f %%\n", sum / 8, worst);
  // measured: 3.4 % mean, 7.2 % max (issue 40's target: 4.2 % and 8.2 %). Before the backward's
  // tensor-parallel collectives ran beside the column-parallel GEMMs (`recipe::tp_async_backward`)
  // 5.5 % and 9.3 %: every full-recomputation row was 6-9 % slow
  CHECK(sum / 8 <= 3.5);
  CHECK(worst <= 7.3);
}

}  // namespace validation_korthikanti_table5
