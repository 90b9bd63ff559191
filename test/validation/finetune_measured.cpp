// LoRA and QLoRA steps this project measured on one H200 (test/data/h200_finetune_steps.csv,
// tools/measure/finetune_steps.py; test/data/README.md gives the setup): Qwen2.5-0.5B and
// Llama-3.2-1B from their shipped configs, PEFT r = 16 on every linear layer (fp32 adapters), a
// bf16 base or bitsandbytes 0.49.2's NF4 with double quantization (then PEFT's
// prepare_model_for_kbit_training), with and without gradient checkpointing, the loss under bf16
// autocast, fused AdamW. Each row is predicted from the row alone with the `huggingface` recipe
// on the `h200` preset; nothing is fitted to them. Memory is the peak of
// torch.cuda.max_memory_allocated (the same in both measurement runs); GPU time is the profiler's
// sum of the step's kernels, compared with strata's kernels (forward, backward, recomputation and
// optimizer step); the step time itself depends on the host as well, which moved by up to 35 %
// between the two runs on the same machine (h200_finetune_steps_run1.csv), so it is recorded,
// not pinned.
#include <catch2/catch.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/io/transformer_scenario.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include "record.hpp"

namespace validation_finetune_measured {

namespace {

using json = nlohmann::json;

json scenario_of(const std::map<std::string, std::string>& r) {
  json lora{{"rank", std::stoi(r.at("rank"))}, {"targets", "all_linear"}, {"base", r.at("base")}};
  if (r.at("base") == "nf4") lora["double_quant"] = true;
  json parallel{{"micro_batch", std::stoi(r.at("micro_batch"))}};
  if (r.at("ckpt") == "1") parallel["recompute"] = "full";
  return json{{"model", {{"hf_id", r.at("hf_id")}}},
              {"cluster",
               {{"name", "one H200"},
                {"device", "h200"},
                {"levels", json::array({{{"fanout", 1}, {"bandwidth_GBps", 450}}})}}},
              {"parallel", parallel},
              {"training",
               {{"batch", std::stoi(r.at("micro_batch"))},
                {"sequence", std::stoi(r.at("seq"))},
                {"framework", "huggingface"},
                {"optimizer", "adamw"},
                {"lora", lora}}}};
}

}  // namespace

TEST_CASE("LoRA and QLoRA steps measured on an H200: memory and GPU time") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/h200_finetune_steps.csv");
  REQUIRE(in);
  const auto table = strata::calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 8);
  std::map<std::string, double> worst_memory, worst_gpu;  // by base: the largest |error|, %
  for (const auto& r : table.rows) {
    const json report =
        strata::io::transformer_report_json(strata::io::parse_transformer_scenario(scenario_of(r)));
    const json& t = report["time"];
    const double gib = 1024.0 * 1024 * 1024;
    const double peak = report["memory_GiB"]["peak"].get<double>() * gib;
    const double gpu = (t["forward_s"].get<double>() + t["backward_s"].get<double>() +
                        t["recompute_s"].get<double>() + t["optimizer_s"].get<double>()) *
                       1e3;
    const double step = report["iteration_time_s"].get<double>() * 1e3;
    const double memory_error = 100 * (peak / std::stod(r.at("peak_bytes")) - 1);
    const double gpu_error = 100 * (gpu / std::stod(r.at("kernel_ms")) - 1);
    const double step_error = 100 * (step / std::stod(r.at("step_ms")) - 1);
    CHECK(std::isfinite(step_error));
    // the model without its adapters: PEFT's count less r (n + k) per adapted n x k weight
    // (NF4 packs two weights in each counted byte)
    if (r.at("base") == "bf16")
      CHECK(report["parameters"].get<double>() ==
            std::stod(r.at("params")) - std::stod(r.at("trainable")));
    const std::string base = r.at("base");
    worst_memory[base] = std::max(worst_memory[base], std::abs(memory_error));
    worst_gpu[base] = std::max(worst_gpu[base], std::abs(gpu_error));
    strata_test::record("finetune_measured",
                        "model,base,checkpointing,measured_GiB,predicted_GiB,memory_error_pct,"
                        "kernel_ms,predicted_gpu_ms,gpu_error_pct,step_ms,predicted_step_ms,"
                        "step_error_pct",
                        r.at("model"), base, r.at("ckpt") == "1" ? "yes" : "no",
                        std::stod(r.at("peak_bytes")) / gib, peak / gib, memory_error,
                        std::stod(r.at("kernel_ms")), gpu, gpu_error, std::stod(r.at("step_ms")),
                        step, step_error);
  }
  // measured here: memory within +2.9 % (bf16) and +0.3 % (NF4), the GPU's time within 2.2 %
  // and -8.1 %. Before PEFT's casts, scaling and sum were lowered and bitsandbytes' fp32
  // outputs kept, the same rows were off by up to +5.1 % / -12.8 % and -24 % / -43 %.
  CHECK(worst_memory["bf16"] < 3.5);
  CHECK(worst_memory["nf4"] < 1.0);
  CHECK(worst_gpu["bf16"] < 3.0);
  CHECK(worst_gpu["nf4"] < 9.0);
}

}  // namespace validation_finetune_measured
