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

#include "record.hpp"

using namespace strata;

TEST_CASE("Korthikanti et al. Fig. 1: model states and activations per GPU within 0.5 %") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/korthikanti2022_fig1_memory.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 12);
  for (const auto& row : table.rows) {
    auto num = [&](const char* k) { return std::stoi(row.at(k)); };
    const transformer m{.name = "GPT",
                        .layers = num("layers"),
                        .hidden = num("hidden"),
                        .heads = num("heads"),
                        .ffn = num("ffn_hidden"),
                        .vocabulary = 51200,
                        .sequence = num("seq_len")};
    const int t = num("tp"), p = num("pp"), v = num("vp_interleave"), d = num("dp");
    const bool sp = row.at("sequence_parallel") == "yes";
    const auto rc = row.at("recompute") == "selective" ? parallel::recompute::selective
                                                       : parallel::recompute::none;
    const parallel::nd s{.tensor = {.degree = t, .sequence = sp},
                         .pipeline = {.degree = p,
                                      .virtual_stages = v,
                                      .kind = v > 1 ? parallel::schedule::interleaved
                                                    : parallel::schedule::one_f_one_b},
                         .data = {.degree = d},
                         .recomputation = rc,
                         .micro_batch = num("micro_batch")};
    const training tr{.batch = num("global_batch"),
                      .precision = precision_mode::fp16_mixed,
                      .flash_attention = false};
    s.check(m, tr, num("gpus"));
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
