// Device profiles from published microbenchmarks (issue 37): DeepBench's V100 and TITAN Xp GEMMs
// and convolutions (test/data/deepbench/, tools/deepbench_csv.py), the Winograd convolutions
// cuDNN runs on the CUDA cores, and the shipped profiles fitted from them.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <tuple>
#include <vector>

#include <strata/calibrate/calibration.hpp>
#include <strata/hardware/presets.hpp>
#include <strata/io/profile.hpp>
#include <strata/io/profile_choice.hpp>

namespace unit_deepbench {
using namespace strata;

io::stored_profile shipped(const char* file) {
  std::ifstream f(std::string(STRATA_PROFILES_DIR "/") + file);
  REQUIRE(f);
  std::stringstream text;
  text << f.rdbuf();
  return io::profile_from_text(text.str());
}

// strata calibrate --device <device> --gemm test/data/deepbench/<gpu>_gemm.csv
//   --gemm-min-side 64 --conv test/data/deepbench/<gpu>_conv.csv --output tools/profiles/<file>
calibrate::profile_fit fit(const device& dev, const std::string& gpu) {
  std::ifstream g(STRATA_TEST_DATA_DIR "/deepbench/" + gpu + "_gemm.csv"),
      c(STRATA_TEST_DATA_DIR "/deepbench/" + gpu + "_conv.csv");
  REQUIRE(g);
  REQUIRE(c);
  calibrate::calibration_inputs in;
  in.gemm = &g;
  in.conv = &c;
  in.gemm_min_side = 64;
  return calibrate::fit_profile(dev, dev.sms, in);
}

const calibrate::class_report& find(const calibrate::profile_fit& f, const std::string& op) {
  for (const auto& r : f.report)
    if (r.op == op) return r;
  FAIL("no report for " << op);
  return f.report.front();
}

// The geometric mean absolute error of the convolutions of one pass and type under `p`.
double conv_gmae(const device_profile& p, const std::string& gpu, const std::string& type,
                 int pass) {
  std::ifstream c(STRATA_TEST_DATA_DIR "/deepbench/" + gpu + "_conv.csv");
  std::vector<double> e;
  for (const auto& q : calibrate::read_convs(c))
    if (q.dtype == type && q.time[static_cast<std::size_t>(pass)] > 0) {
      const double t = calibrate::conv_times(p, q)[static_cast<std::size_t>(pass)];
      e.push_back((t - q.time[static_cast<std::size_t>(pass)]) /
                  q.time[static_cast<std::size_t>(pass)]);
    }
  return calibrate::summarize(e).gmae;
}

TEST_CASE("a 3 x 3 stride-1 convolution is lowered with its Winograd tiles") {
  // ResNet's 14 x 14 x 512 -> 512 3 x 3 convolution (pad 1) at N = 16, a DeepBench row:
  // 2 x 2 tiles: 16 x 7 x 7 = 784; 4 x 4 tiles: 16 x 4 x 4 = 256 (14 / 4 rounds up to 4)
  calibrate::conv_point q;
  q.dtype = "float32-ieee";
  q.n = 16;
  q.c = q.k = 512;
  q.h = q.w = 14;
  q.r = q.s = 3;
  q.pad_h = q.pad_w = 1;
  const std::array<layer, 2> layers{layer{}, calibrate::conv_layer(q)};
  std::vector<lower::kernel_op> ops;
  struct collect {
    std::vector<lower::kernel_op>& ops;
    void kernel(const lower::kernel_op& op) { ops.push_back(op); }
  } v{ops};
  lower::cnn_layer(std::span<const layer>(layers), 1, 16, false, lower::phase::forward, v);
  lower::cnn_layer(std::span<const layer>(layers), 1, 16, false, lower::phase::backward, v);
  REQUIRE(ops.size() == 3);
  for (const auto& op : ops) {
    CHECK(op.winograd.tiles2 == 784);
    CHECK(op.winograd.tiles4 == 256);
  }
  CHECK(!ops[0].winograd.filter);
  CHECK(ops[2].winograd.filter);
  // the forward reduces C = 512 into K = 512 (implicit GEMM: 3136 x 512 x 4608)
  CHECK(ops[0].m == 16 * 196);
  CHECK(ops[0].k == 9 * 512);

  // priced: the faster of F(2, 3) fused (16 GEMMs of 784 x 512 x 512 stacked: 12544 rows, the
  // pass's own traffic) and F(4, 3) non-fused (36 x 256 = 9216 rows, plus the transformed input,
  // filter and output, 36 x 4 B x (256 x (512 + 512) + 512 x 512) = 75,497,472 B, through copies)
  const device_profile p = shipped("v100_sxm2.json").profile;
  REQUIRE(p.winograd);
  const gemm_model& g = p.fp32_ieee;
  const double traffic = ops[0].traffic;
  CHECK(traffic == (16.0 * 512 * 196 * 2 + 512.0 * 512 * 9) * 4);
  const double fused = g.time(12544, 512, 512, traffic);
  const double nonfused = g.time(9216, 512, 512) + p.copy.time(traffic + 75497472.0);
  const double implicit = g.time(3136, 512, 4608, traffic);
  CHECK(winograd_time(g, p.copy, ops[0].winograd, traffic) == std::min(fused, nonfused));
  CHECK(lower::gpu_time(ops[0], p, g, false) == std::min({fused, nonfused, implicit}));
  // DeepBench measured 0.506 ms (cuDNN WINOGRAD_NONFUSED); priced at 0.4-0.6 ms, and the
  // implicit GEMM alone would be over twice that
  CHECK(lower::gpu_time(ops[0], p, g, false) > 0.4e-3);
  CHECK(lower::gpu_time(ops[0], p, g, false) < 0.6e-3);
  CHECK(implicit > 2 * 0.506e-3);
  // tensor cores never run Winograd, nor does a profile without it
  CHECK(lower::gpu_time(ops[0], p, p.bf16, false) == p.bf16.time(3136, 512, 4608, traffic));
  device_profile off = p;
  off.winograd = false;
  CHECK(lower::gpu_time(ops[0], off, g, false) == implicit);
  // a strided or 1 x 1 convolution has no Winograd pass
  q.stride_h = q.stride_w = 2;
  const std::array<layer, 2> strided{layer{}, calibrate::conv_layer(q)};
  ops.clear();
  lower::cnn_layer(std::span<const layer>(strided), 1, 16, false, lower::phase::forward, v);
  CHECK(ops.at(0).winograd.tiles4 == 0);
}

TEST_CASE("the shipped V100 and TITAN Xp profiles are what the documented commands produce") {
  for (const auto& [dev, gpu, file] :
       {std::tuple{presets::v100_sxm2_16gb, "v100", "v100_sxm2.json"},
        std::tuple{presets::titan_xp, "titan_xp", "titan_xp.json"}}) {
    const auto f = fit(dev, gpu);
    const auto s = shipped(file);
    CHECK(s.name == dev.name);
    CHECK(s.profile.winograd == f.profile.winograd);
    CHECK(s.profile.fp32_ieee.efficiency == Approx(f.profile.fp32_ieee.efficiency).epsilon(1e-9));
    CHECK(s.profile.fp32_ieee.half_area == Approx(f.profile.fp32_ieee.half_area).epsilon(1e-9));
    CHECK(s.profile.fp32_ieee.floor == Approx(f.profile.fp32_ieee.floor).epsilon(1e-9));
    CHECK(s.profile.bf16.efficiency == Approx(f.profile.bf16.efficiency).epsilon(1e-9));
    // no TF32 on these GPUs: fp32 GEMMs are the CUDA cores' whatever PyTorch allows
    CHECK(s.profile.fp32.efficiency == s.profile.fp32_ieee.efficiency);
    // memory-bound kernels and attention were not measured: the datasheet defaults, named
    CHECK(f.defaults.size() == 2);
    CHECK(s.profile.copy.bandwidth == Approx(0.8 * dev.memory_bandwidth.count()));
  }
}

TEST_CASE("DeepBench's V100: GEMMs fitted within a few percent, convolutions predicted") {
  const auto f = fit(presets::v100_sxm2_16gb, "v100");
  // cuDNN chose Winograd for 28 of the 32 3 x 3 stride-1 fp32 convolutions
  CHECK(f.profile.winograd);
  // 47 untransposed shapes per type with M, N >= 64 (of 77)
  CHECK(find(f, "gemm float32-ieee").all.points == 47);
  CHECK(find(f, "gemm float32-ieee").all.gmae < 0.02);
  CHECK(find(f, "gemm float32-ieee").held_out.gmae < 0.025);
  CHECK(find(f, "gemm float16").all.gmae < 0.03);
  // large fp32 tiles at 86 % of the 15.7 TFLOP/s peak
  CHECK(f.profile.fp32_ieee.efficiency == Approx(0.859).margin(0.005));
  // the convolutions, not fitted: 94 shapes forward (84 with a data gradient)
  CHECK(find(f, "conv forward float32-ieee").all.points == 94);
  CHECK(find(f, "conv data gradient float32-ieee").all.points == 84);
  for (const char* op : {"conv forward float32-ieee", "conv data gradient float32-ieee",
                         "conv filter gradient float32-ieee", "conv forward float16"})
    CHECK(find(f, op).all.gmae < 0.26);
  // Winograd is what brings the fp32 convolutions there
  device_profile off = f.profile;
  off.winograd = false;
  for (int pass = 0; pass < 3; ++pass)
    CHECK(conv_gmae(off, "v100", "float32-ieee", pass) >
          conv_gmae(f.profile, "v100", "float32-ieee", pass) + 0.08);
}

TEST_CASE("calibration inputs: what is optional, what is refused") {
  std::istringstream g("dtype,M,N,K,ms\nfloat16,128,128,128,0.01\n"), c("dtype,N\n");
  calibrate::calibration_inputs in;
  CHECK_THROWS_WITH(calibrate::fit_profile(presets::v100_sxm2_16gb, 80, in),
                    "gemm CSV: required (GEMM timings)");
  in.gemm = &g;
  in.conv = &c;
  CHECK_THROWS_WITH(calibrate::fit_profile(presets::v100_sxm2_16gb, 80, in),
                    "gemm CSV: a GEMM fit needs at least 4 shapes");
  std::istringstream both(
      "dtype,M,N,K,ms\nfloat16,128,128,128,0.01\nfloat16,256,128,128,0.01\n"
      "float16,256,256,128,0.01\nfloat16,256,256,256,0.02\nbfloat16,128,128,128,0.01\n"
      "bfloat16,256,128,128,0.01\nbfloat16,256,256,128,0.01\nbfloat16,256,256,256,0.02\n");
  in.gemm = &both;
  CHECK_THROWS_WITH(calibrate::fit_profile(presets::v100_sxm2_16gb, 80, in),
                    "gemm CSV: give bfloat16 or float16 GEMMs, not both: they fit one 16-bit "
                    "model");
  std::istringstream four(
      "dtype,M,N,K,ms\nfloat16,128,128,128,0.01\nfloat16,256,128,128,0.01\n"
      "float16,256,256,128,0.01\nfloat16,256,256,256,0.02\n");
  in.gemm = &four;
  CHECK_THROWS_WITH(calibrate::fit_profile(presets::v100_sxm2_16gb, 80, in),
                    "conv CSV: CSV header: no column 'C'");
}

TEST_CASE("DeepBench's all-reduce on a dual-socket Broadwell box, as docs/proteus.md quotes it") {
  // 64.5 M floats (258 MB) on 2, 4 and 8 GTX 1080 Ti under two E5-2690 v4 sockets (HC1's
  // platform): 21.14, 35.11 and 51.82 ms; bus bandwidth = 2 (n - 1) / n x 258 MB / t
  std::ifstream f(STRATA_TEST_DATA_DIR "/deepbench/gtx1080ti_allreduce.csv");
  REQUIRE(f);
  const auto t = calibrate::read_csv(f);
  std::vector<double> busbw;
  for (const auto& row : t.rows)
    if (row.at("floats") == "64500000" && row.at("nodes") == "1") {
      const double n = std::stod(row.at("gpus")), ms = std::stod(row.at("ms"));
      busbw.push_back(2 * (n - 1) / n * 64.5e6 * 4 / (ms * 1e-3) / 1e9);
    }
  REQUIRE(busbw.size() == 3);
  CHECK(busbw[0] == Approx(12.2).margin(0.05));
  CHECK(busbw[1] == Approx(11.0).margin(0.05));
  CHECK(busbw[2] == Approx(8.7).margin(0.05));
}

TEST_CASE("a profile serves the same GPU with another memory size, and no other GPU") {
  // fitted on a V100-SXM2-16GB; HC2's V100s have 32 GB: the same rates, so the profile serves,
  // and capacity comes from the cluster's device
  const std::string v100 = STRATA_PROFILES_DIR "/v100_sxm2.json";
  const auto p = io::choose_profile(nlohmann::json(v100), presets::v100_sxm2_32gb, {});
  CHECK(p.efficiencies ==
        "fitted on V100-SXM2-16GB (profile file; the same rates, the memory of V100-SXM2-32GB)");
  CHECK(p.profile.dev.memory.count() == presets::v100_sxm2_32gb.memory.count());
  CHECK(p.profile.fp32_ieee.efficiency == shipped("v100_sxm2.json").profile.fp32_ieee.efficiency);
  CHECK(p.profile.winograd);
  // a TITAN Xp's profile on a V100 is refused, naming both
  CHECK_THROWS_WITH(
      io::choose_profile(nlohmann::json(std::string(STRATA_PROFILES_DIR "/titan_xp.json")),
                         presets::v100_sxm2_32gb, {}),
      Catch::Contains("describes \"TITAN-Xp\"") && Catch::Contains("\"V100-SXM2-32GB\""));
}

}  // namespace unit_deepbench
