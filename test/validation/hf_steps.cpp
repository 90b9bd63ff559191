// Five measured Hugging Face training steps on one H100 (test/data/h100_hf_steps.csv, from
// shared/data/h100/hf_steps.csv: transformers 5.17, PyTorch 2.11, bf16 autocast over fp32
// parameters, sdpa attention, fused AdamW) against `frameworks::huggingface` as derived from
// the modeling code (frameworks/huggingface.hpp); nothing here is fitted to these rows. This
// project's own measurements on a second H100 session (tools/measure/h100_steps.py --part hf
// --trace, --part host-steps) check the recipe with checkpointing too, its host cost and single
// kernels from the profiler traces (h100_hf_steps_rerun.csv, h100_host_steps.csv,
// h100_hf_kernels.csv).
#include <catch2/catch.hpp>
#include <strata/analytic/step.hpp>
#include <strata/frameworks/huggingface.hpp>
#include <strata/frameworks/pytorch_eager.hpp>
#include <strata/io/profile.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "record.hpp"

namespace validation_hf_steps {

using namespace strata;

namespace {
std::vector<std::vector<std::string>> csv_rows(const std::string& file) {
  std::ifstream in(std::string(STRATA_TEST_DATA_DIR "/") + file);
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<std::string>> out;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> f;
    std::string cell;
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        f.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    f.push_back(cell);
    out.push_back(f);
  }
  return out;
}

struct hf_row {
  std::string name;
  transformer model;
  int sequence = 0, batch = 0;
  bool checkpoint = false;
  bool tf32 = false;
  double params = 0, step_s = 0, static_bytes = 0, peak_bytes = 0, reserved_bytes = 0;
};

// How unevenly the untrained router of the Mixtral-style model spreads the tokens over its 8
// experts, read from two H100 traces of its step (h100_moe_expert_gemms.csv, two steps each):
// the coefficient of variation of the rows of each layer's forward expert-up GEMMs (n = 2f =
// 7168), eight experts per layer in issue order, averaged over the 32 layer-steps (0.08 to 0.79).
double traced_expert_load_cv() {
  std::map<std::string, std::vector<double>> layer_rows;
  std::map<std::string, int> seen;
  for (const auto& f : csv_rows("h100_moe_expert_gemms.csv")) {
    if (f[2] != "forward" || f[4] != "7168") continue;
    const std::string run = f[0] + "/" + f[1];
    layer_rows[run + "/" + std::to_string(seen[run]++ / 8)].push_back(std::stod(f[3]));
  }
  double sum = 0;
  for (const auto& [layer, rows] : layer_rows) {
    REQUIRE(rows.size() == 8);
    double mean = 0, var = 0;
    for (const double r : rows) mean += r / 8;
    for (const double r : rows) var += (r - mean) * (r - mean) / 8;
    sum += std::sqrt(var) / mean;
  }
  REQUIRE(layer_rows.size() == 32);
  return sum / 32;
}

// The columns of h100_hf_steps.csv (the rerun file adds tf32, launches and kernel_ms). The MoE
// rows' expert load is the traced one (`traced_expert_load_cv`): the routers are untrained.
std::vector<hf_row> hf_rows(const std::string& file = "h100_hf_steps.csv") {
  static const double load_cv = traced_expert_load_cv();
  std::vector<hf_row> out;
  for (const auto& f : csv_rows(file)) {
    REQUIRE(f.size() >= 24);
    hf_row r;
    r.name = f[0];
    transformer& m = r.model;
    m.name = "hf";
    m.layers = std::stoi(f[1]);
    m.hidden = std::stoi(f[2]);
    m.heads = std::stoi(f[3]);
    m.kv_heads = std::stoi(f[4]);
    m.vocabulary = std::stoi(f[6]);
    m.tied = f[7] == "1";
    if (std::stoi(f[8]) > 1) {
      m.experts = std::stoi(f[8]);
      m.top_k = std::stoi(f[9]);
      m.expert_load_cv = load_cv;
    }
    r.sequence = std::stoi(f[10]);
    m.sequence = r.sequence;
    m.dropout = false;
    if (r.name.find("gpt2") == std::string::npos) {  // the Llama family (Qwen2: Q/K/V biases)
      m.ffn = std::stoi(f[5]);
      m.mlp = mlp_kind::swiglu;
      m.norm = norm_kind::rms_norm;
      m.positions = position_kind::rotary;
      m.bias = false;
      m.qkv_bias = r.name.find("qwen") != std::string::npos;
    }
    r.batch = std::stoi(f[11]);
    r.checkpoint = f[12] == "1";
    r.params = std::stod(f[17]);
    r.step_s = std::stod(f[18]) * 1e-3;
    r.static_bytes = std::stod(f[21]);
    r.peak_bytes = std::stod(f[22]);
    r.reserved_bytes = std::stod(f[23]);
    r.tf32 = f.size() > 25 && f[25] == "1";
    out.push_back(r);
  }
  return out;
}

device_profile shipped_h100() {
  std::ifstream in(STRATA_PROFILES_DIR "/h100_sxm.json");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  return io::profile_from_text(text).profile;
}

training hf_training(const hf_row& r) {
  training tr{.batch = r.batch, .sequence = r.sequence};
  tr.framework = frameworks::huggingface;
  return tr;
}
parallel::nd hf_strategy(const hf_row& r) {
  return {.recomputation = r.checkpoint ? parallel::recompute::full : parallel::recompute::none,
          .micro_batch = r.batch};
}

// nanoGPT's GPT-2 124M step at sequence 128, micro-batch 1 (h100_host_steps.csv's first row).
analytic::step_estimate nanogpt_launch_bound(const device_profile& p) {
  return analytic::gpt2_step(
      {.layers = 12, .hidden = 768, .heads = 12, .sequence = 128, .batch = 1}, p);
}

// The shipped profile with its dispatch costs scaled to the rerun machine's host: nanoGPT's
// launch-bound step spent 14.24 ms of host time there (h100_host_steps.csv) against the
// 21.66 ms the profile gives.
device_profile rerun_h100() {
  device_profile p = shipped_h100();
  const double host_scale = 14.238e-3 / nanogpt_launch_bound(p).host_time();
  p.dispatch.per_kernel *= host_scale;
  p.dispatch.per_checkpoint *= host_scale;
  p.dispatch.per_tensor *= host_scale;
  return p;
}

// A row of the rerun, for docs/validation.md's generated table.
void record_rerun(const hf_row& r, const char* recipe, double seconds, double peak) {
  strata_test::record(
      "hf_rerun", "row,recipe,checkpointed,measured_ms,strata_ms,measured_peak_gb,strata_peak_gb",
      r.name, recipe, r.checkpoint ? 1 : 0, r.step_s * 1e3, seconds * 1e3, r.peak_bytes / 1e9,
      peak / 1e9);
}

// Seconds of the kernels of `e` whose name starts with one of `names` (layers included:
// "block 3 backward MLP up dX" matches "MLP up" only when `names` says so).
double kernels_named(const analytic::step_estimate& e, std::initializer_list<std::string> names) {
  double t = 0;
  for (const auto& k : e.kernels)
    for (const auto& n : names)
      if (k.name == n) t += k.time;
  return t;
}

// Seconds of a step's expert GEMMs (forward, dX, dW of the up and down projections).
double expert_gemms(const analytic::step_estimate& e) {
  double t = 0;
  for (const auto& k : e.kernels)
    if ((k.name.find("expert up") != std::string::npos ||
         k.name.find("expert down") != std::string::npos) &&
        k.name.find("output") == std::string::npos)
      t += k.time;
  return t;
}

// Seconds of the traced expert GEMMs of h100_moe_expert_gemms.csv's second step, with TF32
// allowed or not, and what `gemm` prices for the same shapes.
struct traced_gemms {
  double traced = 0, priced = 0;
  int count = 0;
};
traced_gemms expert_gemms_traced(bool tf32, const gemm_model& gemm) {
  traced_gemms out;
  for (const auto& f : csv_rows("h100_moe_expert_gemms.csv")) {
    if (f[0] != (tf32 ? "1" : "0") || f[1] != "1") continue;
    ++out.count;
    out.traced += std::stod(f[6]) * 1e-6;
    out.priced += gemm.time(std::stod(f[3]), std::stod(f[4]), std::stod(f[5]));
  }
  return out;
}

// Microseconds per step of the traced kernels of `model` whose name contains `part`.
double traced_us(const std::string& model, const std::string& part) {
  double us = 0;
  for (const auto& f : csv_rows("h100_hf_kernels.csv"))
    if (f[0] == model && f[1] == "0" && f[3].find(part) != std::string::npos) us += std::stod(f[5]);
  return us;
}
}  // namespace

TEST_CASE("Hugging Face steps on an H100: memory to the percent, time from the derived recipe") {
  const auto rows = hf_rows();
  REQUIRE(rows.size() == 5);
  const device_profile h100 = shipped_h100();
  double worst_peak = 0, worst_static = 0, worst_time = 0;
  int time_within_10 = 0;
  for (const auto& r : rows) {
    INFO(r.name);
    CHECK(r.model.parameters() == r.params);  // the configs' parameter counts, exactly
    const training tr = hf_training(r);
    const parallel::nd s = hf_strategy(r);
    const auto mem = analytic::step_memory_of(r.model, s, tr);
    const double peak = mem.peak / r.peak_bytes - 1, stat = mem.between_steps / r.static_bytes - 1;
    const double predicted = analytic::step_kernels(r.model, s, tr, h100).time();
    strata_test::record("hf_steps",
                        "row,batch,sequence,measured_ms,strata_ms,measured_peak_gb,strata_peak_gb",
                        r.name, r.batch, r.sequence, r.step_s * 1e3, predicted * 1e3,
                        r.peak_bytes / 1e9, mem.peak / 1e9);
    const double t = predicted / r.step_s - 1;
    WARN(r.name << ": time " << 100 * t << " %, peak " << 100 * peak << " %, between steps "
                << 100 * stat << " %");
    worst_peak = std::max(worst_peak, std::abs(peak));
    worst_static = std::max(worst_static, std::abs(stat));
    worst_time = std::max(worst_time, std::abs(t));
    if (std::abs(t) <= 0.10) ++time_within_10;
  }
  // measured (docs/validation.md): GPT-2 -8 %, Llama-3.2 1B -4 %, TinyLlama -3 %, Qwen2.5 0.5B
  // -1 %, the Mixtral-style MoE -9 % with its traced expert load (-11 % with an even one; its
  // host work around the grouped GEMMs' synchronizations is not all modelled, see the rerun)
  CHECK(worst_time < 0.10);
  CHECK(time_within_10 == 5);
  // peak (max_memory_allocated): every row within 0.2 %; between steps within 0.5 %
  CHECK(worst_peak < 0.002);
  CHECK(worst_static < 0.005);
}

TEST_CASE("the transformers recipe's host cost per kernel, from launch-bound steps") {
  // h100_host_steps.csv: every model's step at sequence 128, micro-batch 1 on one machine, where
  // each kernel is short and the step takes the host's time to issue it (`host_ms`: step()
  // alone, unsynchronised; a host time above the synchronised step means the host was held up,
  // as in Qwen2.5's row, and the step bounds it). Per kernel of each lowering, nanoGPT's host
  // costs 14.24 ms / 444 = 32.1 us; the transformers models 300.1 ms / 11,516 = 26.1 us. The
  // recipe's share of the profile's per-kernel cost (fitted on nanoGPT) is their ratio.
  const device_profile h100 = shipped_h100();
  std::map<std::string, double> host;
  for (const auto& f : csv_rows("h100_host_steps.csv"))
    host[f[0]] = std::min(std::stod(f[3]), std::stod(f[4])) * 1e-3;
  const auto nano = nanogpt_launch_bound(h100);
  REQUIRE(nano.kernels.size() == 444);
  const double nano_per_kernel = host.at("nanogpt-124M") / 444;
  double hf_host = 0, hf_kernels = 0;
  for (auto r : hf_rows()) {
    r.sequence = r.model.sequence = 128;
    r.batch = 1;
    r.checkpoint = false;
    hf_host += host.at(r.name);
    hf_kernels += static_cast<double>(
        analytic::step_kernels(r.model, hf_strategy(r), hf_training(r), h100).kernels.size());
  }
  CHECK(hf_kernels == 11516);
  const double share = hf_host / hf_kernels / nano_per_kernel;
  CHECK(share == Approx(0.8126).margin(0.001));
  CHECK(frameworks::huggingface.dispatch_share == Approx(share).margin(0.005));
  // That machine's host was faster than the one the profile's dispatch costs were fitted on:
  // the profile gives nanoGPT's launch-bound step 21.7 ms of host time, measured 14.2 ms.
  CHECK(nano.host_time() == Approx(21.66e-3).epsilon(0.001));
}

TEST_CASE("single kernels of the traced steps: the loss, GPT-2's unaligned head, MoE copies") {
  const device_profile h100 = shipped_h100();
  std::map<std::string, analytic::step_estimate> est;
  for (const auto& r : hf_rows())
    est[r.name] = analytic::step_kernels(r.model, hf_strategy(r), hf_training(r), h100);
  // log-softmax forward and backward over the fp32 logits, 16 B per logit each at streaming
  // bandwidth: 2.06 + 2.28 ms traced for GPT-2 (8192 x 50257), 6.61 + 6.76 ms for Qwen2.5
  // (8192 x 151936)
  for (const std::string row : {"hf-gpt2-124M", "hf-qwen2.5-0.5B"}) {
    INFO(row);
    const double traced = traced_us(row, "cunn_SoftMax") * 1e-6;
    const double modelled = kernels_named(est[row], {"log-softmax", "log-softmax backward"});
    CHECK(modelled / traced == Approx(1).margin(0.08));
  }
  // GPT-2's head at V = 50257 (no multiple of 8): cuBLAS's align1 fallback kernels, 15.42 ms
  // traced for the forward, dX and dW (`lower::misaligned_gemm_peak_fraction`)
  const double head = traced_us("hf-gpt2-124M", "align1") * 1e-6;
  CHECK(head == Approx(15.42e-3).epsilon(0.001));
  CHECK(kernels_named(est["hf-gpt2-124M"],
                      {"output projection", "output projection dX", "output projection dW"}) /
            head ==
        Approx(1).margin(0.06));
  // the fused AdamW step: 28 B per parameter at the copy bandwidth (traced: 1.33 ms for GPT-2's
  // 124 M parameters, 13.16 ms for Llama-3.2's 1.24 B; the kernel reaches about 91 % of it)
  for (const std::string row : {"hf-gpt2-124M", "hf-llama3.2-1B"}) {
    INFO(row);
    const double traced = traced_us(row, "FusedOptimizer") * 1e-6;
    CHECK(kernels_named(est[row], {"adam step"}) / traced == Approx(0.91).margin(0.03));
  }
}

TEST_CASE("the MoE's per-expert GEMMs against the H100 traces: an uneven load costs waves") {
  // h100_moe_expert_gemms.csv: every expert GEMM of two traced steps of the Mixtral-style row
  // (transformers' grouped_mm on fp32 weights runs one GEMM per expert on the rows routed to it).
  // TF32 allowed, second step: 128 forward and 256 backward GEMMs, 34.48 ms.
  const double cv = traced_expert_load_cv();
  CHECK(cv == Approx(0.3815).margin(0.0005));
  const device_profile q = shipped_h100().queued();
  const traced_gemms g = expert_gemms_traced(true, q.fp32);
  CHECK(g.count == 384);
  const double traced = g.traced;
  CHECK(traced == Approx(34.484e-3).epsilon(0.001));
  // the profile's TF32 GEMM model on the traced shapes: 35.07 ms (+1.7 %)
  CHECK(g.priced / traced == Approx(1.017).margin(0.01));
  // The lowering with the traced load spread prices 34.97 ms (+1.4 %); an even split (2048 rows
  // per expert, 7 full waves of 128 x 128 tiles for the up GEMM) 31.76 ms (-7.9 %): with the
  // rows spread, the tile waves of each expert's GEMM round up on their own.
  hf_row r = hf_rows()[4];
  REQUIRE(r.name == "hf-mixtral-mini");
  auto experts = [&](double load_cv) {
    r.model.expert_load_cv = load_cv;
    return expert_gemms(
        analytic::step_kernels(r.model, hf_strategy(r), hf_training(r), shipped_h100()));
  };
  CHECK(experts(cv) / traced == Approx(1.014).margin(0.01));
  CHECK(experts(0) / traced == Approx(0.921).margin(0.01));
}

TEST_CASE("the MoE step with TF32 allowed and off (PyTorch's default): the experts' GEMMs") {
  // h100_moe_steps.csv (a third H100 session): the Mixtral-style row measured before each trace,
  // TF32 off (268.8 ms) and allowed (121.9 ms); the second session's TF32-off row (270.95 ms,
  // h100_hf_steps_rerun.csv). With TF32 off transformers' fp32 expert GEMMs run on the CUDA
  // cores: 189.4 ms of the step's 384 traced GEMMs against 34.5 ms with TF32. `training::tf32`
  // = false prices them with the profile's `fp32_ieee` GEMMs (fitted on h100_gemm_ieee.csv alone:
  // the 65 fp32 shapes of h100_gemm.csv with TF32 off, 52 TFLOP/s at most).
  const device_profile h100 = shipped_h100();
  const traced_gemms ieee = expert_gemms_traced(false, h100.queued().fp32_ieee);
  CHECK(ieee.count == 384);
  CHECK(ieee.traced == Approx(189.42e-3).epsilon(0.001));
  // the fitted FFMA model on the traced shapes: 208.5 ms (+10 %; the narrow n = 1024 GEMMs, whose
  // tiles the model does not know, 18-22 % over)
  CHECK(ieee.priced / ieee.traced == Approx(1.10).margin(0.01));
  const traced_gemms tf = expert_gemms_traced(true, h100.queued().fp32);
  std::vector<hf_row> rows = hf_rows("h100_moe_steps.csv");
  REQUIRE(rows.size() == 2);
  for (const auto& r : hf_rows("h100_hf_steps_rerun.csv"))
    if (r.model.moe() && !r.tf32 && !r.checkpoint) rows.push_back(r);
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows) {
    const bool third = &r != &rows.back();
    INFO((third ? "third" : "second") << " session, tf32 " << r.tf32);
    training tr = hf_training(r);
    tr.tf32 = r.tf32;
    const auto est = analytic::step_kernels(r.model, hf_strategy(r), tr, h100);
    const double t = est.time() / r.step_s - 1, gemms = expert_gemms(est);
    const traced_gemms& g = r.tf32 ? tf : ieee;
    if (third)
      strata_test::record(
          "hf_moe", "session,tf32,traced_gemm_ms,strata_gemm_ms,measured_ms,strata_ms", "third",
          r.tf32 ? 1 : 0, g.traced * 1e3, gemms * 1e3, r.step_s * 1e3, est.time() * 1e3);
    else
      strata_test::record("hf_moe",
                          "session,tf32,traced_gemm_ms,strata_gemm_ms,measured_ms,strata_ms",
                          "second", 0, "", "", r.step_s * 1e3, est.time() * 1e3);
    if (r.tf32) {
      // 120.9 ms against 121.9 ms, with the shipped profile's host costs
      CHECK(std::abs(t) < 0.03);
      continue;
    }
    // TF32 off: 212.2 ms of expert GEMMs (+12 % on the traced 189.4 ms), the step 282.1 ms:
    // +4.9 % on the third session, +4.1 % on the second
    CHECK(gemms / ieee.traced == Approx(1.12).margin(0.01));
    CHECK(t > 0.03);
    CHECK(t < 0.06);
    // priced as TF32 (what the recipe assumed before `training::tf32`) the same row is 55 % fast
    CHECK(analytic::step_kernels(r.model, hf_strategy(r), hf_training(r), h100).time() / r.step_s <
          0.46);
  }
}

TEST_CASE("the recipe on a second H100 session: checkpointing on and off") {
  // h100_hf_steps_rerun.csv (this project, 2026-11-26): the five rows again, without and with
  // `gradient_checkpointing_enable`. The dense rows allow no TF32 (PyTorch's default, as the
  // recipe assumes for bf16 runs); the MoE row is taken with TF32 allowed (its experts multiply
  // fp32 weights; the recipe prices them as TF32). That machine's host issued kernels faster
  // than the profile's: its dispatch costs are scaled by nanoGPT's launch-bound step there
  // (14.24 ms of host measured, 21.66 ms predicted; previous test).
  const device_profile h100 = rerun_h100();
  int dense = 0;
  for (const auto& r : hf_rows("h100_hf_steps_rerun.csv")) {
    if (r.name.rfind("hf-", 0) != 0 || r.tf32 != r.model.moe()) continue;
    INFO(r.name << (r.checkpoint ? ", checkpointed" : ""));
    const auto mem = analytic::step_memory_of(r.model, hf_strategy(r), hf_training(r));
    const double t =
        analytic::step_kernels(r.model, hf_strategy(r), hf_training(r), h100).time() / r.step_s - 1;
    const double peak = mem.peak / r.peak_bytes - 1;
    record_rerun(r, "huggingface", (1 + t) * r.step_s, mem.peak);
    WARN(r.name << (r.checkpoint ? " (checkpointed)" : "") << ": time " << 100 * t << " %, peak "
                << 100 * peak << " %");
    // memory: every row, checkpointed or not, within 3 % (the MoE's checkpointed peak is the
    // farthest, -2.8 %; the dense rows within 0.4 %)
    CHECK(std::abs(peak) < (r.model.moe() ? 0.03 : 0.004));
    CHECK(std::abs(mem.between_steps / r.static_bytes - 1) < 0.005);
    if (r.model.moe()) {
      // measured 25 % (33 % checkpointed) slower than predicted: the MoE block's host work
      // between its 48 synchronizations (advanced indexing, the grouped GEMMs' per-expert
      // launches on varying shapes) leaves the GPU idle 35 ms of 141 (traced: 105.6 ms busy)
      CHECK(t < -0.2);
      continue;
    }
    ++dense;
    // GPT-2 -3 % (-10 % checkpointed), Llama-3.2 -4 % (-4 %), TinyLlama -1 % (+1 %), Qwen2.5
    // +1 % (-5 %)
    CHECK(std::abs(t) < (r.checkpoint ? 0.11 : 0.05));
  }
  CHECK(dense == 8);
}

TEST_CASE("a Hugging Face row worked by hand: Llama-3.2 1B, micro-batch 2, sequence 2048") {
  const auto rows = hf_rows();
  const hf_row& r = rows[1];
  REQUIRE(r.name == "hf-llama3.2-1B");
  training tr{.batch = 2, .sequence = 2048};
  tr.framework = frameworks::huggingface;
  const parallel::nd s{.micro_batch = 2};
  const auto mem = analytic::step_memory_of(r.model, s, tr);
  // T = 4096 tokens, P = 1,235,814,400. Between steps: 12 P (fp32 weights, two AdamW moments),
  // the int64 ids and labels 16 T, 64 MiB of cuBLAS workspace.
  const double P = 1'235'814'400, T = 4096, W = 64.0 * 1024 * 1024;
  CHECK(mem.between_steps == 12 * P + 16 * T + W);
  // The peak is the loss's backward: 16 layers x 129,160 B x T saved, the bf16 weight copies
  // (2 B x 60,817,408 per layer, and the tied V x h head), the final norm (8h + 4) and the head's
  // input copy (2h) per token, and 12 B per logit (T x 128256).
  const double layers = 16 * 129'160.0 * T, casts = 2 * (16 * 60'817'408.0 + 128256.0 * 2048);
  const double head = (10 * 2048.0 + 4) * T, logits = 12 * T * 128256;
  CHECK(mem.peak == Approx(12 * P + 16 * T + W + layers + casts + head + logits));
  CHECK(mem.peak / r.peak_bytes == Approx(1).epsilon(0.002));  // measured 32,225,667,072
}

TEST_CASE("the caching allocator's reserve: predicted peak x (1 + fragmentation) vs measured") {
  // `runtime_memory::fragmentation` = 0.061, the median of the five reserved / allocated-peak
  // ratios (1.118, 1.042, 1.042, 1.110, 1.061): each row's reserve within 6 %.
  const double f = runtime_memory{}.fragmentation;
  CHECK(f == 0.061);
  for (const auto& r : hf_rows()) {
    INFO(r.name);
    training tr{.batch = r.batch, .sequence = r.sequence};
    tr.framework = frameworks::huggingface;
    const parallel::nd s{
        .recomputation = r.checkpoint ? parallel::recompute::full : parallel::recompute::none,
        .micro_batch = r.batch};
    const double peak = analytic::step_memory_of(r.model, s, tr).peak;
    const memory_headroom h = analytic::headroom_of(s, tr.runtime, bytes{peak});
    CHECK(h.communicators.count() == 0);  // one GPU: no communicator
    CHECK((peak + h.fragmentation.count()) / r.reserved_bytes == Approx(1).epsilon(0.06));
  }
}

TEST_CASE("Llama-style models in plain eager PyTorch (`pytorch_eager_modules`) on the H100") {
  // h100_hf_steps_rerun.csv's `eager-*` rows: the Llama family's configurations written with
  // torch.nn modules (tools/measure/h100_steps.py's `Llama`: no biases, so Qwen2.5 has 27,648
  // parameters fewer than its transformers row), without and with checkpointing, on the rerun
  // machine (its host as in the test above).
  const device_profile h100 = rerun_h100();
  std::map<std::string, double> host;
  for (const auto& f : csv_rows("h100_host_steps.csv"))
    host[f[0]] = std::min(std::stod(f[3]), std::stod(f[4])) * 1e-3;
  double tiny_host = 0, tiny_kernels = 0;
  int rows = 0;
  for (auto r : hf_rows("h100_hf_steps_rerun.csv")) {
    if (r.name.rfind("eager-", 0) != 0) continue;
    ++rows;
    INFO(r.name << (r.checkpoint ? ", checkpointed" : ""));
    r.model.qkv_bias = false;
    CHECK(r.model.parameters() == r.params);
    training tr = hf_training(r);
    tr.framework = frameworks::pytorch_eager_modules;
    const auto mem = analytic::step_memory_of(r.model, hf_strategy(r), tr);
    const double t =
        analytic::step_kernels(r.model, hf_strategy(r), tr, h100).time() / r.step_s - 1;
    const double peak = mem.peak / r.peak_bytes - 1;
    record_rerun(r, "pytorch_eager_modules", (1 + t) * r.step_s, mem.peak);
    WARN(r.name << (r.checkpoint ? " (checkpointed)" : "") << ": time " << 100 * t << " %, peak "
                << 100 * peak << " %");
    // measured: Llama-3.2 -2 % (checkpointed -8 %), TinyLlama -1 % (+1 %), Qwen2.5 -0.3 % (-9 %);
    // the peak within 0.05 % on all six, between steps within 0.2 % (`frameworks::pytorch_eager`,
    // nanoGPT's modules, had them 17-20 % fast and 5-10 % low)
    CHECK(std::abs(t) < (r.checkpoint ? 0.10 : 0.03));
    CHECK(std::abs(peak) < 0.001);
    CHECK(std::abs(mem.between_steps / r.static_bytes - 1) < 0.002);
    if (!r.checkpoint) {  // the recipe's host share, from the same models launch-bound
      auto small = r;
      small.sequence = small.model.sequence = 128;
      small.batch = 1;
      training small_tr = hf_training(small);
      small_tr.framework = frameworks::pytorch_eager_modules;
      tiny_host += host.at(r.name);
      tiny_kernels += static_cast<double>(
          analytic::step_kernels(small.model, hf_strategy(small), small_tr, shipped_h100())
              .kernels.size());
    }
  }
  CHECK(rows == 6);
  CHECK(tiny_kernels == 6442);
  const double share = tiny_host / tiny_kernels / (host.at("nanogpt-124M") / 444);
  CHECK(frameworks::pytorch_eager_modules.dispatch_share == Approx(share).margin(0.005));
}

}  // namespace validation_hf_steps
