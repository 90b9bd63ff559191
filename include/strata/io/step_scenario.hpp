#pragma once
/// @file io/step_scenario.hpp
/// @brief A single-GPU training step as a scenario: `{"step": {"model": "gpt2" | "resnet50" |
/// "vgg16", "device": ..., ...}, "profile": ...}` (docs/cli.md), a shorthand for the one-GPU
/// plan of that model in PyTorch eager (`analytic::gpt2_model`, `gpt2_training`,
/// `gpt2_strategy`: the same lowering a one-GPU transformer scenario runs), reported kernel by
/// kernel (`analytic/step.hpp`). `"device"` and `"profile"` mean what they mean in every
/// scenario. The command line and the Python module both call it.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/analytic/step.hpp"
#include "strata/io/cluster.hpp"
#include "strata/io/human.hpp"
#include "strata/io/profile.hpp"
#include "strata/io/profile_choice.hpp"
#include "strata/io/validation.hpp"
#include "strata/model/zoo.hpp"

namespace strata::io {

/// The report of a single-GPU step scenario `{"step": {...}, "profile": ...}` (docs/cli.md);
/// `shipped` is the text of the H100 profile that "h100" names.
inline nlohmann::json step_report_json(const nlohmann::json& j, std::string_view shipped) {
  using json = nlohmann::json;
  namespace d = detail;
  d::only_keys(j, "scenario", {"step", "profile"});
  const json& st = d::require(j, "scenario", "step");
  d::only_keys(st, "step",
               {"model", "device", "layers", "hidden", "heads", "sequence", "batch", "vocabulary",
                "precision", "checkpoint", "keep_logits"});
  const std::string model = d::str_field(st, "step", "model", nullptr);
  if (model != "gpt2" && model != "resnet50" && model != "vgg16")
    d::fail("step.model", "unknown model \"" + model + "\" (known: gpt2, resnet50, vgg16)");
  const bool cnn = model != "gpt2";
  if (cnn)
    for (const char* k :
         {"layers", "hidden", "heads", "sequence", "vocabulary", "checkpoint", "keep_logits"})
      if (st.contains(k)) d::fail(std::string("step.") + k, "does not apply to " + model);
  analytic::gpt2_config c;  // the CNNs read only batch and precision
  c.layers = d::int_field(st, "step", "layers", 1, 100000, 12, !cnn);
  c.hidden = d::int_field(st, "step", "hidden", 1, 1 << 20, 768, !cnn);
  c.heads = d::int_field(st, "step", "heads", 1, 1 << 16, 12, !cnn);
  c.sequence = d::int_field(st, "step", "sequence", 1, 1 << 24, 1024, !cnn);
  c.batch = d::int_field(st, "step", "batch", 1, 1 << 20, 1, true);
  c.vocabulary = d::int_field(st, "step", "vocabulary", 1, 1 << 24, 50304);
  const std::string prec = d::str_field(st, "step", "precision", "bf16");
  if (prec == "bf16")
    c.precision = dtype::bf16;
  else if (prec == "fp32")
    c.precision = dtype::fp32;
  else
    d::fail("step.precision", "must be \"bf16\" (autocast) or \"fp32\"");
  if (st.contains("checkpoint")) {
    if (!st["checkpoint"].is_boolean()) d::fail("step.checkpoint", "must be true or false");
    c.checkpoint = st["checkpoint"].get<bool>();
  }
  if (st.contains("keep_logits")) {
    if (!st["keep_logits"].is_boolean()) d::fail("step.keep_logits", "must be true or false");
    c.keep_logits = st["keep_logits"].get<bool>();
  }
  // the GPU (a name, a datasheet or a device file, as a cluster's "device") and "profile" in
  // the one grammar of every scenario (io/profile_choice.hpp; default "auto": the shipped H100
  // fit on an H100, the fitted-GEMM datasheet profile on any other GPU)
  const device dev = st.contains("device") ? d::parse_device(st["device"], "step.device")
                                           : presets::h100_sxm5_80gb;
  if (j.contains("profile") && j["profile"].is_object())
    d::fail("profile",
            "a step names its GPU in \"step.device\" (a name, a datasheet or a device file) "
            "and its profile as every scenario does: \"auto\", \"fitted-gemm\", "
            "\"datasheet\", \"h100\" or a file");
  const chosen_profile prof =
      choose_profile(j.contains("profile") ? j["profile"] : json(), dev, shipped, "auto", "step");
  // the model's lowering, kernel by kernel (analytic/step.hpp)
  const auto step = analytic::named_step(model, c, prof.profile);
  const auto mem = analytic::named_step_memory(model, c);
  const double params = model == "resnet50" ? total_params(zoo::resnet50().view())
                        : model == "vgg16"  ? total_params(zoo::vgg16().view())
                                            : analytic::gpt2_parameters(c);
  json out{{"model", model},
           {"device", std::string(dev.name)},
           {"capacity_bytes", dev.memory.count()},
           {"batch", c.batch},
           {"precision", prec},
           // the profile and where its efficiencies come from, given or defaulted
           {"profile", prof.name},
           {"efficiencies", prof.efficiencies},
           {"parameters", params},
           {"step_time_s", step.time()},
           {"kernel_time_s", step.kernel_time()},
           {"host_time_s", step.host_time()},
           {"kernels", step.kernels.size()},
           {"memory_bytes",
            {{"peak", mem.peak},
             {"between_steps", mem.between_steps},
             {"parameters", mem.parameters},
             {"optimizer_states", mem.optimizer_states},
             {"gradients", mem.gradients},
             {"weight_casts", mem.weight_casts},
             {"activations", mem.activations},
             {"logits", mem.logits},
             {"batch", mem.batch},
             {"workspace", mem.workspace}}}};
  if (!cnn) {
    out["sequence"] = c.sequence;
    // the GPT-2 steps measured on an H100 (test/data/h100_steps_gpt2.csv) are PyTorch eager's
    out["validation"] = detail::band_json("pytorch", false, false);
  }
  return out;
}

/// A step's report (`step_report_json`) as a table for people: the inputs, the step's time
/// (the GPU's kernels against the host's dispatch) and its memory at the peak.
inline std::string step_table(const nlohmann::json& j) {
  std::string out;
  char line[256];
  const std::string seq =
      j.contains("sequence") ? " x sequence " + human_count(j["sequence"].get<double>()) : "";
  std::snprintf(line, sizeof line, "%s (%s parameters), one training step on one %s\n",
                j["model"].get<std::string>().c_str(),
                human_count(j["parameters"].get<double>()).c_str(),
                j["device"].get<std::string>().c_str());
  out += line;
  std::snprintf(line, sizeof line, "batch %s%s; %s; profile: %s\n",
                human_count(j["batch"].get<double>()).c_str(), seq.c_str(),
                j["precision"].get<std::string>().c_str(),
                j["efficiencies"].get<std::string>().c_str());
  out += line;
  out += "time per step\n";
  out += table_row("kernels (GPU)", human_duration(j["kernel_time_s"].get<double>()),
                   human_count(j["kernels"].get<double>()) + " kernels");
  out += table_row("host dispatch", human_duration(j["host_time_s"].get<double>()));
  out += table_row("step", human_duration(j["step_time_s"].get<double>()),
                   "host and GPU overlapped, kernel by kernel");
  out += "memory\n";
  const nlohmann::json& m = j["memory_bytes"];
  for (const char* k : {"parameters", "gradients", "optimizer_states", "weight_casts",
                        "activations", "logits", "batch", "workspace", "peak", "between_steps"}) {
    const double v = m[k].get<double>();
    if (v <= 0 && std::string_view(k) != "peak") continue;
    out += table_row(human_label(k), human_bytes(v));
  }
  const double cap = j["capacity_bytes"].get<double>();
  out += table_row("capacity", human_bytes(cap),
                   m["peak"].get<double>() <= cap ? "the peak fits" : "the peak does NOT fit");
  if (j.contains("validation")) out += detail::band_line(j["validation"]);
  return out;
}

}  // namespace strata::io
