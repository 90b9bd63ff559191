// Published LoRA and QLoRA fine-tuning runs on one GPU (test/data/finetune_published.csv, 99
// rows from LitGPT, torchtune, PEFT, Answer.AI and LLaMA-Factory; test/data/README.md names each
// source and how it measured), each predicted from its row alone: the Hugging Face config the
// row names, the framework's recipe (litgpt, torchtune; PEFT's benchmark on transformers), the
// LoRA setup, the optimizer and the GPU. Nothing is fitted to these rows. A row is predicted and
// recorded (docs/finetuning.md lists them) or skipped with its reason; the test pins the error
// statistics so that a change that moves them is seen.
#include <catch2/catch.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/io/transformer_scenario.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "record.hpp"

namespace validation_finetune_published {

namespace {

using row = std::map<std::string, std::string>;
using json = nlohmann::json;

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

/// The shipped config for the row's checkpoint: Instruct and re-uploaded checkpoints share their
/// base model's shape.
std::string model_of(const std::string& id) {
  static const std::map<std::string, std::string> same{
      {"meta-llama/Meta-Llama-3-8B-Instruct", "meta-llama/Meta-Llama-3-8B"},
      {"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"},
      {"meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B"},
      {"unsloth/Mistral-7B-v0.2", "mistralai/Mistral-7B-v0.1"},
      {"TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
       "TinyLlama/TinyLlama-1.1B-Chat-v1.0"}};
  const auto it = same.find(id);
  return it == same.end() ? id : it->second;
}

/// The row as a scenario, or the reason it cannot be one.
struct mapped {
  json scenario;
  std::string why;
};

mapped scenario_of(const row& r) {
  const std::string& src = r.at("source_id");
  const std::string& method = r.at("method");
  if (r.at("gpus") != "1") return {{}, "more than one GPU"};
  if (method != "lora" && method != "qlora") return {{}, "full fine-tuning"};
  if (r.at("grad_checkpointing") == "unknown") return {{}, "checkpointing not stated"};
  const std::string fw = starts(src, "litgpt")      ? "litgpt"
                         : starts(src, "torchtune") ? "torchtune"
                         : starts(src, "peft")      ? "huggingface"
                                                    : "";
  if (fw.empty()) return {{}, "framework settings not stated"};
  // the adapted layers; "+head" (LoRA on the output projection) is not modelled: its adapters
  // are 0.1-0.3 % of the trained parameters
  static const std::map<std::string, std::string> targets{{"qv", "query_value"},
                                                          {"qkvo+mlp", "all_linear"},
                                                          {"all_linear", "all_linear"},
                                                          {"all_linear+head", "all_linear"},
                                                          {"qkvo+mlp+head", "all_linear"}};
  const auto t = targets.find(r.at("lora_targets"));
  if (t == targets.end()) return {{}, "targets " + r.at("lora_targets") + " not expressible"};
  json lora{{"rank", std::stoi(r.at("lora_rank"))}, {"targets", t->second}};
  const std::string& base = r.at("base_dtype");
  lora["base"] = starts(base, "nf4") ? "nf4" : base;
  if (base == "nf4_dq") lora["double_quant"] = true;
  // LitGPT pinned bitsandbytes 0.42.0 (0.41 for the 2023 tables) at every commit these rows
  // come from: each quantized layer keeps its input on its autograd node
  // (test/data/finetune_published.md, appendix §0)
  if (fw == "litgpt" && starts(base, "nf4")) lora["keeps_inputs"] = true;
  // LoRA's dropout as each source's configs set it: LitGPT's config hub 0.05 (0.1 for Gemma),
  // torchtune's Llama-2 and Llama-3 builders 0.05 (0.0 from Llama 3.1), PEFT's default 0.0
  const std::string& id = r.at("model_hf_id");
  double dropout = 0;
  if (fw == "litgpt") dropout = has(id, "gemma") ? 0.1 : 0.05;
  if (fw == "torchtune" && (has(id, "Llama-2") || has(id, "Meta-Llama-3"))) dropout = 0.05;
  if (dropout > 0) lora["dropout"] = dropout;
  json training{{"batch", std::stoi(r.at("micro_batch"))},
                {"sequence", std::stoi(r.at("seq_len"))},
                {"framework", fw}};
  // torchtune's configs before its 2024-09 README: `self.output(h).float()` and
  // `torch.nn.CrossEntropyLoss` over the whole logits (CEWithChunkedOutputLoss came later)
  if (fw == "torchtune" && !starts(src, "torchtune_readme_2024_09") &&
      !starts(src, "torchtune_readme_2024_11"))
    training["loss"] = "cross_entropy";
  if (fw == "huggingface") {  // PEFT's benchmark: a bf16 model, fp32 adapters, no autocast
    training["model_dtype"] = "bf16";
    lora["adapters"] = "fp32";
  }
  training["lora"] = lora;
  const std::string& opt = r.at("optimizer");
  if (has(opt, "PagedAdamW8bit"))
    training["optimizer"] = "paged_adamw_8bit";
  else if (has(opt, "PagedAdamW"))
    training["optimizer"] = "paged_adamw";
  json parallel{{"micro_batch", std::stoi(r.at("micro_batch"))}};
  if (r.at("grad_checkpointing") == "yes") parallel["recompute"] = "full";
  static const std::vector<std::pair<std::string, std::string>> devices{
      {"A10G", "a10g"},       {"A100-SXM4-40", "a100-40gb"},
      {"RTX4090", "rtx4090"}, {"A100", "a100-80gb"},
      {"L40S", "l40s"},       {"A6000", "rtx-a6000"}};
  std::string device = "a100-80gb";  // where the source names none (memory only)
  for (const auto& [name, key] : devices)
    if (starts(r.at("gpu"), name.c_str())) {
      device = key;
      break;
    }
  return {json{{"model", {{"hf_id", model_of(r.at("model_hf_id"))}}},
               {"cluster",
                {{"name", "one GPU"},
                 {"device", device},
                 {"levels", json::array({{{"fanout", 1}, {"bandwidth_GBps", 100}}})}}},
               {"training", training},
               {"parallel", parallel}},
          ""};
}

/// What the row's measurement counts, from the report: the tensors (max_memory_allocated, and
/// where a source does not say), with the allocator's slack (max_memory_reserved).
/// LitGPT's 2023 resource tables put the longest sample in the first step only (later steps
/// draw shorter ones): their peak is the first step's, before any earlier graph is held.
double predicted_bytes(const json& report, const std::string& kind, bool first_step) {
  const json& m = report["memory_GiB"];
  const double peak = first_step && m.contains("first_step") ? m["first_step"].get<double>()
                                                             : m["peak"].get<double>();
  const double gib = peak + (kind == "max_reserved" ? m["fragmentation"].get<double>() : 0.0);
  return gib * 1024 * 1024 * 1024;
}

double mean(const std::vector<double>& x) {
  double s = 0;
  for (const double v : x) s += v;
  return s / static_cast<double>(x.size());
}

}  // namespace

TEST_CASE("published LoRA and QLoRA runs: every row predicted or skipped with a reason") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/finetune_published.csv");
  REQUIRE(in);
  const auto table = strata::calibrate::read_csv(in);
  REQUIRE(table.rows.size() == 99);
  std::map<std::string, std::vector<double>> errors;  // signed, by method and by source group
  int skipped = 0;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const row& r = table.rows[i];
    mapped m = scenario_of(r);
    json report;
    if (m.why.empty()) {
      try {
        report =
            strata::io::transformer_report_json(strata::io::parse_transformer_scenario(m.scenario));
      } catch (const strata::plan_error& e) {
        m.why = e.what();
      }
    }
    if (!m.why.empty()) {
      ++skipped;
      strata_test::record("finetune_skipped", "row,source,model,method,why", static_cast<int>(i),
                          r.at("source_id"), r.at("model_hf_id"), r.at("method"), m.why);
      continue;
    }
    const double measured = std::stod(r.at("peak_memory_GB")) * 1e9;
    const double predicted =
        predicted_bytes(report, r.at("memory_kind"), r.at("source_id") == "litgpt_resource_tables");
    const double err = predicted / measured - 1;
    INFO(i << " " << r.at("source_id") << " " << r.at("model_hf_id") << " " << r.at("method"));
    CHECK(std::isfinite(err));
    errors[r.at("method")].push_back(err);
    errors[r.at("source_id").substr(0, r.at("source_id").find('_')) + " " + r.at("method")]
        .push_back(err);
    // tokens/s where the source gives it (torchtune's READMEs): listed, not pinned
    const std::string& tps = r.at("tokens_per_s");
    const double tokens = tps.empty() ? 0.0 : std::stod(tps);
    if (tokens > 0) errors["tokens/s"].push_back(report["tokens_per_s"].get<double>() / tokens - 1);
    strata_test::record("finetune",
                        "row,source,model,method,base,rank,gpu,sequence,micro_batch,"
                        "checkpointing,metric,measured_gb,predicted_gb,error_pct,"
                        "measured_tokens_per_s,predicted_tokens_per_s",
                        static_cast<int>(i), r.at("source_id"), r.at("model_hf_id"), r.at("method"),
                        r.at("base_dtype"), r.at("lora_rank"), r.at("gpu"), r.at("seq_len"),
                        r.at("micro_batch"), r.at("grad_checkpointing"), r.at("memory_kind"),
                        measured / 1e9, predicted / 1e9, 100 * err, tokens,
                        report["tokens_per_s"].get<double>());
  }
  std::map<std::string, double> mean_abs;
  for (const auto& [k, v] : errors) {
    std::vector<double> a;
    for (const double e : v) a.push_back(std::abs(e));
    mean_abs[k] = 100 * mean(a);
    WARN(k << ": " << v.size() << " rows, mean error " << 100 * mean(v) << " %, mean |error| "
           << mean_abs[k] << " %");
  }
  // the statistics as they stand (docs/finetuning.md discusses them); a change that moves one
  // by more than half a point is seen here
  CHECK(errors["lora"].size() == 23);
  CHECK(errors["qlora"].size() == 20);
  CHECK(skipped == 56);
  CHECK(mean_abs["lora"] == Approx(2.3).margin(0.5));
  CHECK(mean_abs["peft lora"] == Approx(4.2).margin(0.5));
  // QLoRA: LitGPT's rows within 1.2 % on average (Gemma 2's too, its soft-capped attention
  // written out: 8 B kept a score) with bitsandbytes 0.42's kept inputs, its quantized head and
  // its held logits;
  // torchtune's three are off by 16-45 % (torchao's quantization at load and torch.compile are
  // not modelled; docs/finetuning.md)
  CHECK(mean_abs["qlora"] == Approx(5.2).margin(0.5));
  CHECK(mean_abs["litgpt qlora"] == Approx(1.2).margin(0.5));
  CHECK(mean_abs["litgpt lora"] == Approx(0.2).margin(0.5));
  CHECK(mean_abs["torchtune lora"] == Approx(5.9).margin(0.5));
}

}  // namespace validation_finetune_published
