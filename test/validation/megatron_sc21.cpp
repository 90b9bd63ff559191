// Narayanan et al. SC'21 Table 1 (test/data/megatron_sc21_table1_weak_scaling_a100.csv): GPT
// 1.7B..1T on 32..3072 A100-80GB, fp16, full recomputation, unfused attention (2021). One A100
// profile for every row: the datasheet profile (`datasheet_profile`) with the GEMM efficiency
// fitted on the H100 (`h100_fitted_gemm`); nothing is fitted to this table. Predicted TFLOP/s
// per GPU (hardware FLOPs, SC'21's 96 B s l h^2 (1 + s/6h + V/16lh)) within 10 % of every row,
// with Megatron-LM as it was in 2021 (`frameworks::megatron_2021`: no backward overlap of the
// tensor-parallel all-reduces, which came after the paper's runs).
// The table of predictions is in docs/validation.md.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <strata/calibrate/readers.hpp>
#include <strata/io/profile.hpp>
#include <strata/strata.hpp>
#include <string>

#include "record.hpp"

namespace validation_megatron_sc21 {

using namespace strata;

namespace {
const transformer* by_name(const std::string& name) {
  static const transformer zoo[] = {
      zoo::gpt_1_7b(), zoo::gpt_3_6b(), zoo::gpt_7_5b(), zoo::gpt_18b(),  zoo::gpt_39b(),
      zoo::gpt_76b(),  zoo::gpt_145b(), zoo::gpt_310b(), zoo::gpt_530b(), zoo::gpt_1t()};
  for (const auto& m : zoo)
    if (m.name == name) return &m;
  return nullptr;
}
}  // namespace

TEST_CASE("the A100 profile's GEMM efficiency is the shipped H100 fit") {
  std::ifstream in(STRATA_PROFILES_DIR "/h100_sxm.json");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto h100 = io::profile_from_text(text).profile;
  CHECK(h100.bf16.efficiency == Approx(h100_fitted_gemm.efficiency).epsilon(0.001));
  CHECK(h100.bf16.half_area == Approx(h100_fitted_gemm.half_area).epsilon(0.001));
  CHECK(h100.bf16.wave == Approx(h100_fitted_gemm.wave).epsilon(0.001));
}

TEST_CASE("SC'21 Table 1: TFLOP/s per GPU within 10 % on every row") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/megatron_sc21_table1_weak_scaling_a100.csv");
  REQUIRE(in);
  const auto table = calibrate::read_csv(in);
  const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
  int rows = 0;
  for (const auto& row : table.rows) {
    if (row.at("table_version").rfind("SC21", 0) != 0) continue;
    ++rows;
    const transformer* m = by_name(row.at("model"));
    REQUIRE(m != nullptr);
    auto num = [&](const char* k) { return row.at(k).empty() ? 1 : std::stoi(row.at(k)); };
    const int v = num("vp_interleave");
    const parallel::nd s{.tensor = {.degree = num("tp")},
                         .pipeline = {.degree = num("pp"),
                                      .virtual_stages = v,
                                      .kind = v > 1 ? parallel::schedule::interleaved
                                                    : parallel::schedule::one_f_one_b},
                         .data = {.degree = num("dp")},
                         .recomputation = parallel::recompute::full,
                         .micro_batch = num("micro_batch")};
    const training t{.batch = num("global_batch"),
                     .sequence = num("seq_len"),
                     .precision = precision_mode::fp16_mixed,
                     .flash_attention = false,
                     .framework = frameworks::megatron_2021};
    const auto r = analytic::evaluate(*m, s, presets::dgx_a100(num("nodes")), t, a100);
    const double published = std::stod(row.at("tflops_per_gpu"));
    INFO(row.at("model") << ": predicted " << r.flops_per_device() / 1e12 << " published "
                         << published);
    strata_test::record(
        "megatron_sc21", "model,gpus,t,p,v,d,b,published_tflops,strata_tflops,memory_gib",
        row.at("model"), num("gpus"), num("tp"), num("pp"), v, num("dp"), num("micro_batch"),
        published, r.flops_per_device() / 1e12, to_gib(r.memory.total()));
    CHECK(std::abs(r.flops_per_device() / 1e12 / published - 1) <= 0.10);
    CHECK(r.fits());
  }
  CHECK(rows == 10);
}

}  // namespace validation_megatron_sc21
