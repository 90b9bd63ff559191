// The kernel-level compute model, worked by hand, and its calibration on the H100 microbenchmarks
// (test/data/h100_*.csv).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <strata/analytic/step.hpp>
#include <strata/calibrate/kernel_fit.hpp>
#include <strata/io/profile.hpp>
#include <strata/strata.hpp>

namespace unit_kernels {

using namespace strata;

TEST_CASE("GEMM model: tiles, waves and the memory bound") {
  // 1024^3 on 132 SMs at 1 PFLOP/s, efficiency 1 for every tile (half_area 0), no floor:
  //   256x128: 32 tiles, 1 wave of 2 x 32768 x 1024 / (1e15 / 132) = 8.86 us
  //   128x128: 64 tiles, 1 wave: 4.43 us;  128x64 / 64x128: 128 tiles, 1 wave: 2.21 us
  //   64x64: 256 tiles, 2 waves of 1.107 us: 2.21 us
  // memory: 3 x 1024^2 x 2 B / 3.35 TB/s = 1.88 us < 2.21 us. The fastest: 2.2145 us.
  constexpr gemm_model g{1e15, 1.0, 0.0, 0.0, 0.0, 3.35e12, 2, 132};
  CHECK(g.time(1024, 1024, 1024) == Approx(2.0 * 128 * 64 * 1024 * 132 / 1e15));
  // an outer product (K = 1) is memory-bound: it writes the 8192^2 output once,
  // (8192 + 8192 + 8192^2) x 2 B at 1 TB/s = 134.25 us, while its FLOPs take < 1 us
  constexpr gemm_model slow_memory{1e15, 1.0, 0.0, 0.0, 0.0, 1e12, 2, 132};
  CHECK(slow_memory.time(8192, 8192, 1) == Approx((2.0 * 8192 + 8192.0 * 8192) * 2 / 1e12));
  // the launch floor blends as (f^4 + w^4)^(1/4): equal parts give f x 2^(1/4)
  constexpr stream_model s{1e9, 10e-6};
  CHECK(s.time(1e4) == Approx(10e-6 * std::pow(2.0, 0.25)));
  CHECK(stream_model{1e9, 0}.time(1e6) == Approx(1e-3));
  // causal flash attention, b = 8, h = 12, s = 1024, d = 64: 2 b h s^2 d = 12.9 GFLOP forward
  CHECK(attention_model::forward_flops(8, 12, 1024, 64) == 2.0 * 8 * 12 * 1024 * 1024 * 64);
  static_assert(datasheet_profile(presets::a100_sxm4_80gb, 108).bf16.peak == 312e12);
  CHECK_THROWS_WITH(g.time(0, 1, 1), Catch::Contains("positive"));
}

namespace {
// The fp32 GEMMs with TF32 off (h100_gemm_ieee.csv) as `strata calibrate` reads a second
// `--gemm` file: its rows after the first file's.
calibrate::profile_fit fit_h100() {
  std::ifstream g1(STRATA_TEST_DATA_DIR "/h100_gemm.csv"),
      g2(STRATA_TEST_DATA_DIR "/h100_gemm_ieee.csv"), m(STRATA_TEST_DATA_DIR "/h100_membound.csv"),
      a(STRATA_TEST_DATA_DIR "/h100_attention.csv"),
      a32(STRATA_TEST_DATA_DIR "/h100_attention_fp32.csv");
  REQUIRE(g1);
  REQUIRE(g2);
  REQUIRE(a32);
  std::stringstream text;
  text << g1.rdbuf();
  std::string header;
  std::getline(g2, header);
  text << g2.rdbuf();
  std::istringstream g(text.str());
  return calibrate::fit_profile(presets::h100_sxm5_80gb, 132, g, m, a, &a32);
}
const calibrate::class_report& find(const calibrate::profile_fit& f, const std::string& op) {
  for (const auto& r : f.report)
    if (r.op == op) return r;
  FAIL("no report for " << op);
  return f.report.front();
}
}  // namespace

TEST_CASE("calibration on the H100 microbenchmarks") {
  const auto fit = fit_h100();
  // fitted on the even rows, predicting the odd ones (measured here, docs/calibration.md):
  // bf16 GEMM MAPE 9.2 %, GMAE 5.9 % (target <= 10 %); fp32 (TF32) GEMM 14.4 %, over the target:
  // some TF32 rows of this file are noisy (next test)
  CHECK(find(fit, "gemm bfloat16").held_out.points == 32);
  CHECK(find(fit, "gemm bfloat16").held_out.mape < 0.10);
  CHECK(find(fit, "gemm float32").held_out.mape < 0.15);
  // fp32 with TF32 off (FFMA on the CUDA cores, at most 52 TFLOP/s measured of 66.9): 2.4 % on
  // all 65 shapes, 3.9 % held out
  CHECK(find(fit, "gemm float32-ieee").all.mape < 0.03);
  CHECK(find(fit, "gemm float32-ieee").held_out.mape < 0.045);
  CHECK(fit.profile.fp32_ieee.peak == Approx(66.9e12));
  CHECK(find(fit, "copy").held_out.mape < 0.06);
  CHECK(find(fit, "host_to_device").all.mape < 0.02);
  CHECK(find(fit, "device_to_host").all.mape < 0.02);
  CHECK(find(fit, "layer_norm").all.mape < 0.06);
  CHECK(find(fit, "attention").all.mape < 0.2);
  // fp32 attention (memory-efficient kernel, measured by tools/measure/h100_steps.py):
  // 12.1 % on all 8 shapes, 8.8 % held out; about 30 TFLOP/s forward + backward
  CHECK(find(fit, "attention fp32").all.mape < 0.13);
  CHECK(fit.profile.attention_fp32.training_rate == Approx(30e12).epsilon(0.1));
  // plausible constants: pinned host copies near PCIe Gen5's 55 GB/s, device copies ~2.9 TB/s
  // read + written (the CSV counts a copy's buffer once)
  CHECK(fit.profile.host_to_device.bandwidth == Approx(55e9).epsilon(0.05));
  CHECK(fit.profile.bf16.efficiency < 1.0);
  CHECK(fit.profile.copy.bandwidth == Approx(2.88e12).epsilon(0.02));
}

TEST_CASE("GEMM fits on the re-measured shapes meet the 10 % held-out target") {
  // test/data/h100_gemm_rotated.csv: the same 130 shapes, median of 30 over rotating input sets.
  // Held out: bf16 7.2 %, fp32 (TF32) 8.0 % (the shared file's TF32 rows give 14.4 %: e.g.
  // 4096 x 768 x 3072 is 0.301 ms there and 0.095 ms here).
  std::ifstream g(STRATA_TEST_DATA_DIR "/h100_gemm_rotated.csv"),
      m(STRATA_TEST_DATA_DIR "/h100_membound.csv"), a(STRATA_TEST_DATA_DIR "/h100_attention.csv");
  REQUIRE(g);
  const auto fit = calibrate::fit_profile(presets::h100_sxm5_80gb, 132, g, m, a);
  CHECK(find(fit, "gemm bfloat16").held_out.mape < 0.08);
  CHECK(find(fit, "gemm float32").held_out.mape < 0.085);
  CHECK(find(fit, "gemm float32").held_out.points == 32);
}

TEST_CASE("the shipped H100 profile is what the documented command produces") {
  // strata calibrate --gemm test/data/h100_gemm.csv --gemm test/data/h100_gemm_ieee.csv
  //   --membound test/data/h100_membound.csv --attention test/data/h100_attention.csv
  //   --device h100 --sms 132 --output tools/profiles/h100_sxm.json
  std::ifstream f(STRATA_PROFILES_DIR "/h100_sxm.json");
  REQUIRE(f);
  std::stringstream text;
  text << f.rdbuf();
  const auto shipped = io::profile_from_text(text.str());
  const auto fit = fit_h100();
  CHECK(shipped.name == "H100-SXM5-80GB");
  CHECK(shipped.profile.bf16.efficiency == Approx(fit.profile.bf16.efficiency).epsilon(1e-9));
  CHECK(shipped.profile.bf16.floor == Approx(fit.profile.bf16.floor).epsilon(1e-9));
  CHECK(shipped.profile.fp32.half_area == Approx(fit.profile.fp32.half_area).epsilon(1e-9));
  CHECK(shipped.profile.fp32_ieee.efficiency ==
        Approx(fit.profile.fp32_ieee.efficiency).epsilon(1e-9));
  CHECK(shipped.profile.fp32_ieee.wave == Approx(fit.profile.fp32_ieee.wave).epsilon(1e-9));
  CHECK(shipped.profile.copy.bandwidth == Approx(fit.profile.copy.bandwidth).epsilon(1e-9));
  CHECK(shipped.profile.attention.ramp == Approx(fit.profile.attention.ramp).epsilon(1e-9));
  CHECK(shipped.profile.attention_fp32.training_rate ==
        Approx(fit.profile.attention_fp32.training_rate).epsilon(1e-9));
  // and it times a GEMM the same way
  CHECK(shipped.profile.bf16.time(4096, 4096, 4096) ==
        Approx(fit.profile.bf16.time(4096, 4096, 4096)).epsilon(1e-9));
}

TEST_CASE("profiles round-trip and bad profiles name the field") {
  const auto p = datasheet_profile(presets::v100_sxm2_16gb, 80);
  const auto back = io::profile_from_json(io::to_json(p));
  CHECK(back.profile.bf16.peak == p.bf16.peak);
  CHECK(back.profile.softmax.bandwidth == p.softmax.bandwidth);
  // fp32 GEMMs without TF32: the fp32 datasheet peak (V100: 15.7 TFLOP/s); a profile written
  // before they existed reads the datasheet's
  CHECK(back.profile.fp32_ieee.peak == p.fp32_ieee.peak);
  CHECK(p.fp32_ieee.peak == Approx(presets::v100_sxm2_16gb.fp32.count()));
  auto old = io::to_json(p);
  old["gemm"].erase("fp32_ieee");
  CHECK(io::profile_from_json(old).profile.fp32_ieee.efficiency == p.fp32_ieee.efficiency);
  CHECK(p.with_tf32(false).fp32.peak == p.fp32_ieee.peak);
  CHECK(p.with_tf32(true).fp32.peak == p.fp32.peak);
  auto j = io::to_json(p);
  j["gemm"]["bf16"].erase("peak");
  CHECK_THROWS_WITH(io::profile_from_json(j), Catch::Contains("profile.gemm.bf16.peak: missing"));
  j = io::to_json(p);
  j["stream"]["copy"]["bandwidth"] = -1;
  CHECK_THROWS_WITH(io::profile_from_json(j), Catch::Contains("profile.stream.copy.bandwidth"));
  std::istringstream bad_gemm("dtype,M,N,K,ms\nbfloat16,1,1,1,x\n"), mem("op,bytes,ms\n"),
      att("b,heads,s,d,fwd_ms,fwdbwd_ms\n");
  CHECK_THROWS_WITH(calibrate::fit_profile(presets::h100_sxm5_80gb, 132, bad_gemm, mem, att),
                    Catch::Contains("CSV row 2 column ms: 'x' is not a number"));
}

TEST_CASE("a GPT-2 step lowered to kernels has Narayanan's FLOPs") {
  const auto p = datasheet_profile(presets::h100_sxm5_80gb, 132);
  const analytic::gpt2_config c{
      .layers = 12, .hidden = 768, .heads = 12, .sequence = 1024, .batch = 8};
  const auto step = analytic::gpt2_step(c, p);
  const double B = 8, s = 1024, l = 12, h = 768, V = 50304;
  // GEMMs: Narayanan et al.'s 72 B s l h^2 (1 + s/6h + V/12lh) without its attention term
  // (forward 24 B s h^2 per layer, backward twice that, and the logits 2 B s h V, x 3)
  CHECK(step.flops(analytic::kernel_kind::gemm) ==
        Approx(72 * B * s * l * h * h * (1 + V / (12 * l * h))));
  // causal flash attention: forward 2 B s^2 h per layer, backward 2.5 x (recomputing the scores)
  CHECK(step.flops(analytic::kernel_kind::attention) == Approx(3.5 * 2 * B * s * s * h * l));
  // checkpointing adds one more forward of every block
  auto ck = c;
  ck.checkpoint = true;
  const auto re = analytic::gpt2_step(ck, p);
  CHECK(re.flops(analytic::kernel_kind::gemm) - step.flops(analytic::kernel_kind::gemm) ==
        Approx(24 * B * s * h * h * l));
  CHECK(re.time() > step.time());
  // the fused AdamW pass: 28 B per parameter, 124,475,904 parameters with V = 50304
  const double params = 12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h;
  CHECK(params == 124'475'904);
  CHECK(step.kernels.back().bytes == 28 * params);
  CHECK_THROWS_WITH(analytic::gpt2_step({.hidden = 770, .heads = 12}, p),
                    Catch::Contains("heads must divide the hidden size"));
}

TEST_CASE("GPT-2 step memory, worked by hand") {
  // 1 layer, h = 8, s = 4, b = 1, V = 16, bf16 autocast: P = 12 x 64 + 13 x 8 + (16 + 4) x 8 + 16
  //   = 768 + 104 + 160 + 16 = 1048 parameters.
  const analytic::gpt2_config c{
      .layers = 1, .hidden = 8, .heads = 2, .sequence = 4, .batch = 1, .vocabulary = 16};
  CHECK(analytic::gpt2_parameters(c) == 1048);
  const auto m = analytic::gpt2_memory(c);
  // between steps: fp32 parameters and two Adam moments, 12 x 1048, the int64 batch 2 x 8 x 4,
  // and the 64 MiB of BLAS workspaces W
  const double W = 64.0 * 1024 * 1024;
  CHECK(m.between_steps == 12 * 1048 + 64 + W);
  // saved: 38 T h per block = 38 x 4 x 8 = 1216, plus the final LN input 4 T h = 128 and the
  // output layer's bf16 input 2 T h = 64
  CHECK(m.activations == 1216 + 128 + 64);
  // bf16 casts: the block's linear weights and biases (12 h^2 + 9 h = 840) and the output
  // projection (V h = 128), 2 bytes each
  CHECK(m.weight_casts == 2 * (840 + 128));
  // logits (T V = 64): log-probs and two fp32 gradients 3 x 256 = 768; a loop that keeps the
  // bf16 logits adds 2 x 64
  CHECK(m.logits == 3 * 256);
  auto keep = c;
  keep.keep_logits = true;
  CHECK(analytic::gpt2_memory(keep).logits == 128 + 3 * 256);
  // at the loss: 12640 + W + 1936 + 1408 + 768 = W + 16752; in the optimizer step, with every
  // fp32 gradient: 12640 + W + 4 x 1048 = W + 16832, the peak of this tiny model
  CHECK(m.peak == 12 * 1048 + 64 + W + 4 * 1048);
  CHECK(m.peak > 12 * 1048 + 64 + W + 1936 + 1408 + 768);
  auto fp = c;
  fp.precision = dtype::fp32;
  CHECK(analytic::gpt2_memory(fp).weight_casts == 0);
  CHECK(analytic::gpt2_memory(fp).activations == 68 * 32 + 128 + 128);
}

TEST_CASE("a CNN step: implicit GEMMs, and memory worked by hand") {
  // conv 3x3 (2 -> 4 channels, 8x8, no bias) + batch norm + ReLU + 2x2 max pool + linear (64 -> 10)
  constexpr auto net =
      sequential("tiny", shape{.c = 2, .h = 8, .w = 8},
                 conv{.filters = 4, .kernel = 3, .padding = 1}, batch_norm{}, relu{},
                 max_pool{.kernel = 2, .stride = 2}, linear{.features = 10, .bias = false});
  const auto p = datasheet_profile(presets::h100_sxm5_80gb, 132);
  const analytic::cnn_config c{.batch = 4};
  const auto step = analytic::cnn_step(net.view(), c, p);
  // forward, data gradient (not for the input layer) and weight gradient GEMMs:
  // conv 2 x 4 x 9 x 64 = 4608 multiply-adds per sample, linear 64 x 10 = 640
  const double conv = 2.0 * 4608, fc = 2.0 * 640;
  CHECK(step.flops(analytic::kernel_kind::gemm) == Approx(4 * (2 * conv + 3 * fc)));
  const auto m = analytic::cnn_memory(net.view(), c);
  // saved, bf16: the image cast (4 x 128 x 2 = 1024), the conv output batch norm keeps
  // (4 x 256 x 2 = 2048), the ReLU output (2048), the pool indices (4 x 64 x 8 = 2048), the
  // linear layer's input after pooling (4 x 64 x 2 = 512)
  CHECK(m.activations == 1024 + 2048 + 2048 + 2048 + 512);
  // parameters: conv 72, batch norm 8, linear 640 = 720; weights cast: conv + linear = 712
  CHECK(m.parameters == 4 * 720);
  CHECK(m.weight_casts == 2 * 712);
  // between steps: parameters and momentum, the fp32 images (4 x 128 x 4), int64 labels, the
  // batch-norm running statistics (2 x 4 x 4 B), the 64 MiB of BLAS workspaces
  CHECK(m.between_steps == 8 * 720 + 2048 + 32 + 32 + 64.0 * 1024 * 1024);
}

}  // namespace unit_kernels
