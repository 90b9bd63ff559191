// Published training runs under DeepSpeed, Megatron-DeepSpeed, FSDP and Megatron-Core
// (test/data/published_frameworks.csv; its .md gives each source, table and assumption), each
// predicted from its row alone: the model's shape, the plan, the GPU's datasheet preset and the
// framework's recipe (frameworks/*.hpp). Nothing is fitted to these rows. Every row is either
// predicted and recorded (docs/validation.md lists them) or skipped with its reason; the test
// pins the error statistics so that a change to the model that moves them is seen.
#include <catch2/catch.hpp>
#include <strata/calibrate/kernel_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "record.hpp"

namespace validation_published_frameworks {

using namespace strata;
using namespace strata::literals;

namespace {

struct outcome {
  std::string source, framework, metric;
  double measured = 0, predicted = 0;
  memory_verdict verdict = memory_verdict::fits;  ///< of the predicted plan
  std::string plan{};                             ///< model and t / p / d / micro-batch
  double required_gib = 0;                        ///< what the plan needs on its fullest GPU
  bool skipped = false;
  std::string why{};
};

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

int number_after(const std::string& s, const char* key, int fallback) {
  const std::regex re(std::string(key) + "=?(\\d+)");
  std::smatch m;
  return std::regex_search(s, m, re) ? std::stoi(m[1]) : fallback;
}

/// The row's model: Llama-style (SwiGLU, RMSNorm, rotary, untied) where its name says so, MPT with
/// ALiBi (no position table, no biases), else GPT/BLOOM-style (learned positions, biases, tied).
transformer model_of(const std::map<std::string, std::string>& r, std::string& name) {
  name = r.at("model");
  const auto i = [&](const char* k) { return std::stoi(r.at(k)); };
  if (has(name, "Llama") || has(name, "llama"))  // the zoo's Llama shape
    return zoo::detail::llama(name, i("layers"), i("hidden"), i("heads"), i("kv_heads"), i("ffn"),
                              i("vocab"), i("seq"));
  transformer m{.name = name,
                .layers = i("layers"),
                .hidden = i("hidden"),
                .heads = i("heads"),
                .kv_heads = i("kv_heads"),
                .ffn = i("ffn"),
                .vocabulary = i("vocab"),
                .sequence = i("seq")};
  if (has(name, "MPT")) {
    m.positions = position_kind::rotary;  // ALiBi: no position table (its bias costs no GEMM)
    m.bias = false;
    m.dropout = false;
  }
  return m;
}

/// The preset of the row's GPU with its node shape ("nodes x GPUs per node").
bool cluster_of(const std::map<std::string, std::string>& r, cluster& c, std::string& why) {
  const std::string gpu = r.at("gpu"), shape = r.at("nodes_gpus_per_node");
  const auto x = shape.find('x');
  const int nodes = std::stoi(shape.substr(0, x)), per = std::stoi(shape.substr(x + 1));
  if (gpu == "V100-32GB") {
    // Jean Zay / DGX-2 V100-SXM2-32GB: NVLink2 in a node, 100 Gbps Omni-Path/EDR per GPU pair
    const std::array<level, 2> l{
        level{"node", per, interconnect{5_us, 150_GBps}, 1.0},
        level{"cluster", nodes, interconnect{10_us, 100_Gbps}, 1.0, std::max(1, per / 2)}};
    c = nodes == 1 ? make_cluster("V100 node", presets::v100_sxm2_32gb, {l[0]})
                   : make_cluster("V100 nodes", presets::v100_sxm2_32gb, {l[0], l[1]});
    c.host = {16_GBps, cpu_adam_rate, {}, 768_GiB};  // PCIe Gen3 x16
    return true;
  }
  if (per != 8) {
    why = "only 8-GPU nodes of this GPU have a preset";
    return false;
  }
  if (gpu == "A100-80GB") {
    c = presets::dgx_a100(nodes);
  } else if (gpu == "A100-40GB") {
    c = presets::dgx_a100_40gb(nodes);
  } else if (gpu == "H100-80GB") {
    c = presets::dgx_h100(nodes);
  } else if (gpu == "H100-96GB-HBM2e") {
    c = presets::dgx_h100(nodes);  // Grand Teton's 96 GB H100 (2.4 TB/s), held at 500 W
    c.dev.memory = 96_GiB;
    c.dev.memory_bandwidth = 2400_GBps;
    c.dev.power_limit_w = 500;
  } else if (gpu == "H200-141GB") {
    c = presets::dgx_h200(nodes);
  } else {
    why = "no preset for " + gpu;
    return false;
  }
  // The network between nodes as the source gives it (Gbps per node), over the preset's rails.
  if (const auto net = r.find("network_gbps"); net != r.end() && !net->second.empty()) {
    level& between = c.levels[1];
    between.pair.bandwidth = byte_rate{std::stod(net->second) * 1e9 / 8 / between.rails};
  }
  return true;
}

/// FlashAttention-2's rates on an H100 (test/data/fa2_h100_attention.csv: the FlashAttention-2
/// and -3 papers' figures), fitted as `strata calibrate --attention` fits a measured table.
attention_model fa2_h100() {
  static const attention_model fitted = [] {
    std::ifstream in(STRATA_TEST_DATA_DIR "/fa2_h100_attention.csv");
    REQUIRE(in);
    attention_model a;
    std::vector<calibrate::class_report> report;
    calibrate::fit_attention_class(a, report, in, "attention");
    return a;
  }();
  return fitted;
}

/// A row's plan: its model, cluster, training setup and strategy, or why it cannot be made.
struct row_plan {
  transformer m;
  cluster c;
  training tr;
  parallel::nd s;
  /// the device's datasheet peaks with the H100-fitted GEMM efficiency; the attention kernel the
  /// row ran where its source names one (`attention`: fa2, FlashAttention-2 on Hopper)
  device_profile prof;
  std::string why;  ///< empty: the plan is made
};

row_plan plan_of(const std::map<std::string, std::string>& r) {
  row_plan out;
  std::string name;
  const transformer m = model_of(r, name);
  out.m = m;
  cluster c;
  if (!cluster_of(r, c, out.why)) return out;
  const std::string mode = r.at("stage_or_mode"), fw = r.at("framework");
  training tr{.batch = std::stoi(r.at("global_batch")), .sequence = std::stoi(r.at("seq"))};
  const std::string prec = r.at("precision");
  tr.precision = prec == "fp16"  ? precision_mode::fp16_mixed
                 : prec == "fp8" ? precision_mode::fp8_mixed
                                 : precision_mode::bf16_mixed;
  int zero = 0, shard_group = 0;
  if (fw == "megatron") {
    tr.framework = frameworks::megatron;
    zero = 1;  // the distributed optimizer
  } else if (fw == "fsdp") {
    // torchtitan without torch.compile runs its modules op by op (its RMSNorm a chain of
    // kernels); compiled runs (the rest of the set) fuse them, as `fsdp` prices them
    const bool eager_titan =
        r.at("source") == "torchtitan-bench" && has(r.at("notes"), "no compile");
    tr.framework = eager_titan ? frameworks::torchtitan : frameworks::fsdp;
    zero = has(mode, "SHARD_GRAD_OP") ? 2 : 3;
    if (has(mode, "HYBRID") || has(mode, "HSDP")) shard_group = 8;
  } else if (has(mode, "inside BF16_Optimizer")) {
    // Megatron-DeepSpeed's BF16_Optimizer (from 02-28; the 02-17 rows ran bf16 through ZeRO-1's
    // stage_1_and_2.py, "before the BF16_Optimizer existed")
    tr.framework =
        frameworks::with_engine(frameworks::deepspeed, frameworks::deepspeed_bf16_optimizer);
    tr.gradients = dtype::fp32;
    zero = 1;
  } else {
    tr.framework = has(mode, "HF Trainer") ? frameworks::with_engine(frameworks::huggingface,
                                                                     frameworks::deepspeed_zero)
                                           : frameworks::deepspeed;
    zero = has(mode, "ZeRO-3") ? 3 : has(mode, "ZeRO-2") ? 2 : 1;
    if (r.at("offload") == "cpu") {
      tr.framework.data.offload_optimizer = frameworks::offload_device::cpu;
      if (has(mode, "offload_param"))
        tr.framework.data.offload_parameters = frameworks::offload_device::cpu;
    }
  }
  // DeepSpeed's rows ran in 2020-2022, before FlashAttention (May 2022): Megatron-DeepSpeed's
  // fused scale-mask-softmax and Hugging Face's eager attention keep the s x s scores
  if (fw == "deepspeed" || fw == "megatron_deepspeed") tr.flash_attention = false;
  // BigScience measured the CUDA context of their stack with nvidia-smi: 1573 MiB on a 40 GB
  // A100 (chronicles-prequel.md), against the 0.5 GiB of CUDA 12's lazy loading
  if (r.at("source").rfind("bigscience-tr11", 0) == 0) tr.runtime.context = 1573.0 * 1024 * 1024;
  // torchtitan's tensor parallelism is always sequence-parallel (its norms are SequenceParallel)
  // and computes the loss over the vocabulary shards (loss parallel, on unless
  // --training.disable_loss_parallel): torchtitan/parallelisms/parallelize_llama.py at 9dec370
  const bool torchtitan = r.at("source") == "torchtitan-bench";
  if (torchtitan && std::stoi(r.at("tp")) > 1)
    tr.framework.loss = frameworks::loss_style::vocab_parallel;
  // Megatron-Core's userbuffers and torchtitan's async TP overlap the tensor-parallel collectives,
  // which needs sequence parallelism (Megatron refuses --tp-comm-overlap without
  // --sequence-parallel: megatron/training/arguments.py, `validate_args`)
  tr.framework.tp_comm_overlap =
      has(mode, "TP comm overlap") || has(mode, "tp-comm-overlap") || has(mode, "async TP");
  if (has(mode, "grad_sync_dtype bf16")) tr.gradients = dtype::bf16;
  // DeepSpeed's activation checkpointing options as Megatron-DeepSpeed passes them
  tr.partition_activations = has(mode, "--partition-activations");
  tr.checkpoint_in_cpu = has(mode, "--checkpoint-in-cpu");
  const int t = std::stoi(r.at("tp")), p = std::stoi(r.at("pp")), d = std::stoi(r.at("dp"));
  const int cp = number_after(mode, "CP", 1), v = number_after(mode, "VP", 1);
  parallel::nd s{.tensor = {.degree = t,
                            .sequence = t > 1 && (has(mode, "sequence") || torchtitan ||
                                                  tr.framework.tp_comm_overlap)},
                 .context = {.degree = cp},
                 .pipeline = {.degree = p,
                              .virtual_stages = v,
                              .kind = v > 1 ? parallel::schedule::interleaved
                                            : parallel::schedule::one_f_one_b},
                 .data = {.degree = d, .zero = zero, .shard_group = shard_group},
                 .micro_batch = r.at("micro_batch").empty() ? 1 : std::stoi(r.at("micro_batch"))};
  const std::string rc = r.at("recompute");
  // torchtitan's "selective" is its per-operator policy ('op' in train_configs/llama3_*.toml at
  // 9dec370, test/data/published_frameworks.md)
  // "full:N": N layers of each chunk checkpointed (Megatron's --recompute-num-layers; fms-fsdp's
  // selective_checkpointing fraction of the blocks, test/data/published_frameworks.md)
  const bool some = rc.rfind("full:", 0) == 0;
  s.recomputation = rc == "full" || some              ? parallel::recompute::full
                    : rc == "selective" && torchtitan ? parallel::recompute::per_op
                    : rc == "selective"               ? parallel::recompute::selective
                                                      : parallel::recompute::none;
  if (some) s.recompute_layers = std::stoi(rc.substr(5));
  // layers that do not split evenly: fewer on the first and last stages, which also hold the
  // embedding and the head (Megatron's --decoder-first/last-pipeline-num-layers; DeepSpeed's
  // parameter-balanced partition does the same)
  // With interleaving Megatron-Core can instead count the embedding and the loss as a layer each
  // (Megatron-Bridge's Llama-3.1 405B: 126 + 2 over 8 x 8 chunks)
  const int L = m.layers, stages = p * v;
  if (v > 1 && L % stages != 0 && (L + 2) % stages == 0)
    s.pipeline.account_for_embedding = s.pipeline.account_for_loss = true;
  else if (p > 2 && L % stages != 0)
    for (int k = L / p; k >= 1; --k)
      if ((L - 2 * k) % ((p - 2) * v) == 0) {
        s.pipeline.first_stage_layers = s.pipeline.last_stage_layers = k;
        break;
      }
  if (s.devices() != c.devices())
    out.why = "tp x pp x dp x cp = " + std::to_string(s.devices()) + " of " +
              std::to_string(c.devices()) + " GPUs";
  out.c = c;
  out.tr = tr;
  out.s = s;
  device rated = c.dev;
  rated.power_limit_w = 0;
  out.prof = datasheet_profile(rated, h100_fitted_gemm);
  // FlashAttention-2 (fms-fsdp: "SDPA implementation of Flash attention v2"; torchtitan's
  // PyTorch nightly of 2024-12-23, whose SDPA ran FA2 on Hopper since pytorch#138522;
  // llm-foundry's 2024 sweep with flash-attn 2.4.2): the papers' H100 figures, on H100 and H200
  if (r.at("attention") == "fa2") out.prof.attention = fa2_h100();
  out.prof = at_power_limit(out.prof, c.dev);  // torchtitan's H100s at 500 W
  return out;
}

outcome predict(const std::map<std::string, std::string>& r) {
  outcome o{.source = r.at("source"),
            .framework = r.at("framework"),
            .metric = r.at("metric"),
            .measured = std::stod(r.at("value"))};
  auto skip = [&](std::string why) {
    o.skipped = true;
    o.why = std::move(why);
    return o;
  };
  const row_plan p = plan_of(r);
  if (!p.why.empty()) return skip(p.why);
  // rows priced with the torchtitan recipe count toward its band, which its scenarios print
  if (std::string_view(p.tr.framework.name) == "torchtitan") o.framework = "torchtitan";
  const transformer& m = p.m;
  const cluster& c = p.c;
  const training& tr = p.tr;
  const parallel::nd& s = p.s;
  try {
    const auto rep = analytic::evaluate(m, s, c, tr, p.prof);
    const double gpus = c.devices();
    if (o.metric == "s_per_iter") o.predicted = rep.iteration_time().count();
    if (o.metric == "tokens_per_s") o.predicted = rep.tokens_per_second() / gpus;
    if (o.metric == "tflops_per_gpu") o.predicted = rep.flops_per_device() / 1e12;
    if (o.metric == "peak_mem_gib") o.predicted = rep.required().count() / (1024.0 * 1024 * 1024);
    if (o.metric == "oom") o.predicted = rep.fits() ? 0 : 1;
    o.verdict = rep.verdict();
    o.plan = r.at("model") + " t" + r.at("tp") + " p" + r.at("pp") + " d" + r.at("dp") + " b" +
             r.at("micro_batch");
    o.required_gib = rep.required().count() / (1024.0 * 1024 * 1024);
  } catch (const std::exception& e) {
    return skip(e.what());
  }
  return o;
}

std::vector<std::map<std::string, std::string>> rows_of_csv() {
  std::ifstream in(STRATA_TEST_DATA_DIR "/published_frameworks.csv");
  REQUIRE(in);
  return calibrate::read_csv(in).rows;
}

std::vector<outcome> outcomes() {
  std::vector<outcome> out;
  for (const auto& row : rows_of_csv()) out.push_back(predict(row));
  return out;
}

double median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

}  // namespace

TEST_CASE("published framework runs: every row predicted or skipped with a reason") {
  const auto rows = outcomes();
  REQUIRE(rows.size() == 114);
  std::map<std::string, std::vector<double>> errors;  // by framework, time-like metrics
  int oom_rows = 0, oom_predicted = 0, skipped = 0;
  std::map<memory_verdict, int> ran;  // the verdicts on the runs that ran
  for (const outcome& o : rows) {
    if (o.skipped) {
      ++skipped;
      strata_test::record("published_frameworks_skipped", "source,framework,metric,why", o.source,
                          o.framework, o.metric, o.why);
      continue;
    }
    if (o.metric == "oom") {
      ++oom_rows;
      oom_predicted += o.predicted > 0 ? 1 : 0;
      WARN("ran out of memory, predicted " << to_string(o.verdict) << ": " << o.plan << ", "
                                           << o.required_gib << " GiB required");
      strata_test::record("published_frameworks",
                          "source,framework,metric,measured,predicted,error_pct", o.source,
                          o.framework, o.metric, o.measured, o.predicted, 0.0);
      continue;
    }
    ++ran[o.verdict];
    if (o.verdict != memory_verdict::fits) {
      WARN("ran, predicted " << to_string(o.verdict) << ": " << o.plan << ", " << o.required_gib
                             << " GiB required");
      strata_test::record("published_frameworks_verdicts", "source,framework,metric,verdict",
                          o.source, o.framework, o.metric, std::string(to_string(o.verdict)));
    }
    // error of the prediction against the measurement; for time, time-like (throughputs inverted)
    const bool throughput = o.metric == "tokens_per_s" || o.metric == "tflops_per_gpu";
    const double err = throughput ? o.measured / o.predicted - 1 : o.predicted / o.measured - 1;
    CHECK(std::isfinite(err));
    if (o.metric != "peak_mem_gib") errors[o.framework].push_back(std::abs(err));
    errors[o.metric == "peak_mem_gib" ? "memory" : "time"].push_back(std::abs(err));
    strata_test::record("published_frameworks",
                        "source,framework,metric,measured,predicted,error_pct", o.source,
                        o.framework, o.metric, o.measured, o.predicted, 100 * err);
  }
  for (const auto& [k, v] : errors)
    WARN(k << ": " << v.size() << " rows, median |error| " << 100 * median(v) << " %");
  WARN("OOM rows predicted out of memory: " << oom_predicted << " of " << oom_rows
                                            << "; skipped rows: " << skipped);
  // what the recipes give today (docs/validation.md explains the far ones): a change that moves
  // these is a change in the model's accuracy and must be looked at
  CHECK(skipped == 1);
  CHECK(oom_rows == 8);
  // (5 while Megatron-DeepSpeed's host checkpoints were on the GPU; 4 -> 5 with what DeepSpeed's
  // optimizers keep: BF16_Optimizer's bf16 gradients, ZeRO-1's gradient partition and the step's
  // flattened copy, and the embedding's whole dropout mask without sequence parallelism; 5 -> 6
  // with the fp32 copy of the embedding's gradient that update_hp_grads makes after each
  // backward: BLOOM 184.3B at micro-batch 1)
  CHECK(oom_predicted == 6);
  // of the 105 rows that ran, the verdicts (issue 40: none should read "does not fit"); the
  // OOM rows predicted to fit are a memory shortfall, not the slack's
  WARN("runs that ran: " << ran[memory_verdict::fits] << " fit, " << ran[memory_verdict::tight]
                         << " tight, " << ran[memory_verdict::does_not_fit] << " do not fit");
  // (torchtitan's per-operator checkpointing modelled: 28 -> 23 do not fit, 4 -> 2 tight; its
  // sequence and loss parallelism: 23 -> 19, every torchtitan run that ran now fits; sequence
  // parallelism under TP communication overlap, as Megatron requires it: 19 -> 13; fms-fsdp's
  // "selective AC" as the whole blocks it checkpoints: 13 -> 10; NeMo's 512-GPU GPT-3 run with
  // the 16-bit gradients of its MLPerf configuration: 10 -> 9; BigScience's DeepSpeed
  // checkpoints in host memory and the Trainer's own mixed precision under DeepSpeed: 9 -> 0)
  // (2 -> 3: one of BigScience's 2021 ZeRO-3 runs, whose attention keeps its s x s scores
  // without FlashAttention)
  CHECK(ran[memory_verdict::tight] == 3);
  CHECK(ran[memory_verdict::does_not_fit] == 0);
  // (Megatron's gradient reduction and weight gather hidden behind the interleaved schedule's
  // chunks, as Megatron-Core runs them: 17.6 -> 24.7; the MLPerf runs on 512-1,344 nodes had
  // been close only because that traffic was charged as exposed; Transformer Engine's fp8 casts
  // and the 16-bit head: 24.7 -> 20.8, fsdp's float8 rows 27.1 -> 26.1; fms-fsdp's checkpointed
  // blocks recomputed: fsdp 26.1 -> 24.4; fms-fsdp's network as its README gives it, 400 and
  // 800 Gbps a node: 24.4 -> 23.8; each overlapped tensor-parallel collective behind the GEMM
  // it feeds or drains rather than the whole layer's: megatron 20.8 -> 20.3)
  CHECK(100 * median(errors["megatron"]) == Approx(20.3).margin(0.5));
  // (Megatron-DeepSpeed's 2022 attention without FlashAttention: 18.7 -> 15.0)
  CHECK(100 * median(errors["megatron_deepspeed"]) == Approx(15.0).margin(0.5));
  // (FlashAttention-2's H100 rates on the rows whose sources ran it: fsdp 23.8 -> 20.6;
  // torchtitan's runs without torch.compile priced as its module code runs op by op: 18.8;
  // torchtitan's H100s held at 500 W, their arithmetic at 86 %: 16.2; the two rows priced with
  // the torchtitan recipe counted under it: 16.7)
  CHECK(100 * median(errors["fsdp"]) == Approx(16.7).margin(0.5));
  // (its complex RoPE, three kernels each way instead of the rotate-half chain: 5.0 -> 7.9)
  CHECK(100 * median(errors["torchtitan"]) == Approx(7.9).margin(0.5));
  // (BigScience's DeepSpeed checkpoints to the host, the Trainer without autocast: 58.1 -> 56.7;
  // attention without FlashAttention: 55.6)
  CHECK(100 * median(errors["deepspeed"]) == Approx(55.6).margin(0.5));
  // (DeepSpeed's optimizer buffers, the CUDA context BigScience measured: 17.8 -> 11.8;
  // update_hp_grads's fp32 copy of a gradient: 11.5)
  CHECK(100 * median(errors["memory"]) == Approx(11.5).margin(0.5));
}

TEST_CASE("published runs: the simulator agrees with the closed form") {
  // One answer (issue 40): the simulator runs each plan with the closed form's assumptions and
  // the two agree.
  // - FSDP and DeepSpeed reduce-scatter each unit's gradients as its backward ends, beside the
  //   next gathers (sim/transformer.hpp `reduce_layer`); the closed form hides that traffic
  //   behind the backward but for one layer's share. Within 2 % on the ZeRO-3 rows (before:
  //   2-32 % slower).
  // - ZeRO-0/1 reduce in the plan's buckets (`data.bucket`), each chunk's once its last backward
  //   on the stage ends, and ZeRO-1/2 gather the updated weights bucket by bucket beside the
  //   first forwards (Megatron-Core's --overlap-param-gather); the closed form hides both behind
  //   the chunks that come before (`data_parallel::behind_chunks`). Before, the simulator
  //   exposed the gather after the optimizer step and released the buckets in the stage's last
  //   unit: Megatron's rows came out 2.6-11 % slower. Within 2 % on the unpipelined rows; on
  //   the interleaved ones the simulator is up to 3.4 % faster (MLPerf GPT-3 on 2,560-2,688
  //   GPUs, Llama-3.1 405B): stage 0's late chunks wait for their weights in the warm-up,
  //   where the schedule has slack, and the closed form charges that wait in full.
  int rows = 0, sharded = 0;
  for (const auto& r : rows_of_csv()) {
    const std::string metric = r.at("metric");
    if (metric == "oom" || metric == "peak_mem_gib") continue;
    const row_plan p = plan_of(r);
    if (!p.why.empty()) continue;
    INFO(r.at("source") << " " << r.at("model") << " " << r.at("stage_or_mode"));
    double closed = 0;
    try {
      closed = analytic::evaluate(p.m, p.s, p.c, p.tr, p.prof).iteration_time().count();
    } catch (const plan_error&) {
      continue;  // the row the test above skips (OPT-175B's batch over 124 replicas)
    }
    const double run = sim::simulate(p.m, p.s, p.c, p.tr, p.prof).iteration.count();
    // measured: -0.4 to +0.7 % on every row but fms-fsdp's 7B HSDP on H100s (+1.8 %: its
    // replicas' all-reduce over the 800 Gbps network) (issue 40 asks 2 %). The interleaved rows
    // differed by up to 3.2 % until the closed form priced Megatron-Core's overlapped sends
    // (`recipe::overlap_p2p`) and the simulator made a layer wait for the last bucket of its
    // updated weights, not the first (`fresh_bucket`)
    CHECK(std::abs(run / closed - 1) <= 0.02);
    ++rows;
    sharded += p.s.data.zero == 3 ? 1 : 0;
  }
  CHECK(rows == 85);
  CHECK(sharded == 39);
}

}  // namespace validation_published_frameworks
