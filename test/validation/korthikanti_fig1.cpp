// Korthikanti et al. 2022 Fig. 1 (test/data/korthikanti2022_fig1_memory.csv): per-GPU memory of
// the 22B, 175B, 530B and 1T GPT models with their tensor/pipeline/interleaving configuration.
// The figure's model states are 18 B per transformer-layer parameter (12 l h^2 / (t p); the
// embedding is not part of it) and its activations are the first pipeline stage's, Table 2 x
// the interleaving factor 1 + (p - 1)/(p v). Every value within 0.5 %.
#include <catch2/catch.hpp>
#include <fstream>
#include <strata/calibrate/readers.hpp>
#include <strata/strata.hpp>
#include <string>

#include "korthikanti.hpp"
#include "record.hpp"

namespace validation_korthikanti_fig1 {

using namespace strata;

TEST_CASE("Korthikanti et al. Fig. 1: model states and activations per GPU within 0.5 %") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/korthikanti2022_fig1_memory.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 12);
  for (const auto& row : table.rows) {
    const auto [m, s, tr] = strata_test::korthikanti_row(row);
    s.check(m, tr, std::stoi(row.at("gpus")));
    const auto mem = analytic::stage_memory(m, s, tr, 0);
    const double gib = std::stod(row.at("value")) * 1024 * 1024 * 1024;
    const std::string metric = row.at("metric");
    INFO(row.at("model") << " " << row.at("mode") << ": " << metric);
    const double gib_unit = 1024.0 * 1024 * 1024;
    const bool states = metric.rfind("weights", 0) == 0;
    strata_test::record(
        "korthikanti_fig1", "model,mode,metric,paper_gib,strata_gib", row.at("model"),
        row.at("mode"), states ? "model states" : "activations", gib / gib_unit,
        (states ? (mem.model_states() - mem.embedding_states) : mem.activations).count() /
            gib_unit);
    if (states) {
      const double layers = (mem.model_states() - mem.embedding_states).count();
      CHECK(layers == Approx(gib).epsilon(0.005));
    } else {
      CHECK(mem.activations.count() == Approx(gib).epsilon(0.005));
    }
  }
}

}  // namespace validation_korthikanti_fig1
