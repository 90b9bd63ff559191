// Whole single-GPU training steps measured on an H100 SXM (PyTorch 2.11 eager, CUDA 13.0;
// tools/measure/h100_steps.py; test/data/h100_steps_gpt2.csv and h100_steps_cnn.csv): GPT-2-style
// models of 124M..2.7B parameters at sequence 512..2048 and micro-batch 1..16, bf16 autocast or
// fp32 (TF32), with and without full checkpointing; torchvision ResNet-50 and VGG16 at batch
// 32..256. Predictions use the shipped profile (tools/profiles/h100_sxm.json): its kernels come
// from the microbenchmarks alone, its dispatch costs (host time per kernel, per checkpointed
// block, per parameter tensor) from these steps, so the step-time figures are also given held
// out (fitted on the even rows, predicting the odd ones). Memory uses no fitted constant.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <strata/calibrate/step_fit.hpp>
#include <strata/io/profile.hpp>
#include <string>
#include <vector>

#include "record.hpp"

namespace validation_h100_steps {

using namespace strata;

namespace {
device_profile shipped() {
  std::ifstream in(STRATA_PROFILES_DIR "/h100_sxm.json");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  return io::profile_from_text(text).profile;
}

std::vector<calibrate::step_measurement> steps() {
  std::vector<calibrate::step_measurement> all;
  for (const char* name : {"/h100_steps_gpt2.csv", "/h100_steps_cnn.csv"}) {
    std::ifstream in(std::string(STRATA_TEST_DATA_DIR) + name);
    REQUIRE(in);
    const auto rows = calibrate::read_steps(in);
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

struct errors {
  double time = 0, peak = 0, between = 0, peak_max = 0;
  int n = 0;
  void add(double t, double p, double b) {
    time += std::fabs(t);
    peak += std::fabs(p);
    between += std::fabs(b);
    peak_max = std::fmax(peak_max, std::fabs(p));
    ++n;
  }
  [[nodiscard]] double mape(double sum) const { return sum / n; }
};
}  // namespace

TEST_CASE("H100 training steps: time, peak memory and memory between steps") {
  const auto profile = shipped();
  const auto all = steps();
  REQUIRE(all.size() == 253);  // 237 GPT-2 configurations (9 out of memory) and 16 CNN ones
  errors gpt_bf16, gpt_fp32, cnn_bf16, cnn_fp32, total;
  const double capacity = 81559.0 * 1024 * 1024;  // what the device reported
  for (const auto& m : all) {
    const auto mem = calibrate::predict_memory(m);
    if (m.oom) {  // every configuration that did not fit is predicted not to fit
      CHECK(mem.peak > capacity);
      continue;
    }
    CHECK(mem.peak < capacity);  // and every one that ran is predicted to fit
    const double predicted = calibrate::predict_step(m, profile).time();
    strata_test::record("h100_steps",
                        "model,precision,checkpoint,layers,hidden,sequence,batch,measured_ms,"
                        "strata_ms,measured_peak_gb,strata_peak_gb",
                        m.model, m.config.precision == dtype::bf16 ? "bf16" : "fp32",
                        m.config.checkpoint ? 1 : 0, m.config.layers, m.config.hidden,
                        m.config.sequence, m.config.batch, m.time * 1e3, predicted * 1e3,
                        m.peak / 1e9, mem.peak / 1e9);
    const double t = predicted / m.time - 1;
    const double p = mem.peak / m.peak - 1, b = mem.between_steps / m.between - 1;
    const bool bf16 = m.config.precision == dtype::bf16;
    errors& e = m.model == "gpt2" ? (bf16 ? gpt_bf16 : gpt_fp32) : (bf16 ? cnn_bf16 : cnn_fp32);
    e.add(t, p, b);
    total.add(t, p, b);
  }
  REQUIRE(total.n == 244);
  // Measured here (docs/calibration.md has the table): step time MAPE 7.1 % over all 244 steps;
  // GPT-2 bf16 7.5 %, fp32 6.4 %; CNNs bf16 7.7 %, fp32 10.5 % (ResNet-50's fp32 memory-bound
  // kernels run faster per byte than the bf16-fitted stream models say).
  CHECK(total.mape(total.time) < 0.075);
  CHECK(gpt_bf16.mape(gpt_bf16.time) < 0.08);
  CHECK(gpt_fp32.mape(gpt_fp32.time) < 0.07);
  CHECK(cnn_bf16.mape(cnn_bf16.time) < 0.08);
  CHECK(cnn_fp32.mape(cnn_fp32.time) < 0.11);
  // Peak (max_memory_allocated): 2.7 % overall, GPT-2 2.2 % / 2.5 %, worst GPT-2 row 13.6 %;
  // VGG16 is 10-19 % under (cuDNN workspaces are not counted).
  CHECK(total.mape(total.peak) < 0.03);
  CHECK(gpt_bf16.mape(gpt_bf16.peak) < 0.025);
  CHECK(gpt_fp32.mape(gpt_fp32.peak) < 0.03);
  CHECK(gpt_bf16.peak_max < 0.10);
  CHECK(cnn_bf16.mape(cnn_bf16.peak) < 0.08);
  // Between steps (memory_allocated): 1.1 %, no row off by more than 3 %.
  CHECK(total.mape(total.between) < 0.012);
}

TEST_CASE("a row worked by hand: GPT-2 124M, sequence 512, micro-batch 1, bf16") {
  const auto all = steps();
  const auto& m = all.front();
  REQUIRE(m.model == "gpt2");
  REQUIRE(m.config.layers == 12);
  REQUIRE(m.config.sequence == 512);
  REQUIRE(m.config.batch == 1);
  // between steps: 124,082,688 fp32 parameters with two Adam moments (12 B each), the int64
  // batch (2 x 8 x 512) and the 64 MiB of BLAS workspaces: 1,556,105,216 B; measured
  // 1,564,311,552 (-0.5 %)
  const auto mem = calibrate::predict_memory(m);
  CHECK(mem.between_steps == 12.0 * 124'082'688 + 2 * 8 * 512 + 64.0 * 1024 * 1024);
  CHECK(m.between == 1'564'311'552);
  CHECK(mem.between_steps / m.between == Approx(0.9948).epsilon(1e-3));
  // time: a launch-bound step. The host issues its 444 kernels (autocast's casts among them) at
  // 49 us each (21.7 ms) while the GPU needs 5.7 ms for them, so the step is predicted at
  // 22.9 ms against 25.3 ms measured (-9.5 %; launch-bound rows are the hardest: PyTorch's host
  // time varies most where nothing hides it)
  const auto e = calibrate::predict_step(m, shipped());
  CHECK(e.kernels.size() == 444);
  CHECK(e.host_time() == Approx(21.7e-3).epsilon(0.005));
  CHECK(e.kernel_time() == Approx(5.7e-3).epsilon(0.01));
  CHECK(e.time() == Approx(22.9e-3).epsilon(0.005));
  CHECK(e.time() == Approx(m.time).epsilon(0.12));
}

TEST_CASE("the shipped dispatch costs are what the documented calibration fits", "[dispatch_fit]") {
  // strata calibrate ... --steps test/data/h100_steps_gpt2.csv --steps test/data/h100_steps_cnn.csv
  const auto profile = shipped();
  const auto fit = calibrate::fit_dispatch(steps(), profile);
  CHECK(fit.dispatch.per_kernel == Approx(profile.dispatch.per_kernel).epsilon(1e-9));
  CHECK(fit.dispatch.per_checkpoint == Approx(profile.dispatch.per_checkpoint).epsilon(1e-9));
  CHECK(fit.dispatch.per_tensor == Approx(profile.dispatch.per_tensor).margin(1e-12));
  CHECK(fit.dispatch.kernel_floor == profile.dispatch.kernel_floor);
  // fitted on the even rows, the odd ones: 6.6 % step-time MAPE
  CHECK(fit.report.held_out.points == 122);
  CHECK(fit.report.held_out.mape < 0.07);
  // plausible host costs: tens of microseconds per eager kernel, a millisecond or two per
  // checkpointed block
  CHECK(profile.dispatch.per_kernel > 20e-6);
  CHECK(profile.dispatch.per_kernel < 100e-6);
  CHECK(profile.dispatch.per_checkpoint > 0.5e-3);
  CHECK(profile.dispatch.per_checkpoint < 3e-3);
  // the rounded copy datasheet profiles use
  CHECK(pytorch_eager_dispatch.per_kernel == Approx(profile.dispatch.per_kernel).epsilon(0.01));
  CHECK(pytorch_eager_dispatch.per_checkpoint ==
        Approx(profile.dispatch.per_checkpoint).epsilon(0.01));
  CHECK(pytorch_eager_dispatch.per_tensor == Approx(profile.dispatch.per_tensor).epsilon(0.05));
  CHECK(pytorch_eager_dispatch.kernel_floor == profile.dispatch.kernel_floor);
}

TEST_CASE("step measurements: bad rows are named") {
  std::istringstream bad(
      "model,layers,hidden,heads,sequence,batch,precision,checkpoint,step_ms,"
      "peak_bytes,between_bytes,oom\n"
      "gpt3,12,768,12,512,1,bf16,0,1,1,1,0\n");
  CHECK_THROWS_WITH(calibrate::read_steps(bad), Catch::Contains("row 2: unknown model 'gpt3'"));
  std::istringstream prec(
      "model,batch,precision,checkpoint,step_ms,peak_bytes,between_bytes,oom\n"
      "resnet50,32,fp16,0,1,1,1,0\n");
  CHECK_THROWS_WITH(calibrate::read_steps(prec), Catch::Contains("precision must be bf16 or fp32"));
}

}  // namespace validation_h100_steps
