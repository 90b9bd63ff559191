#pragma once
/// @file io/one_line.hpp
/// @brief A transformer question in one line (`strata --model llama3-8b --gpus 8xh100 --batch 64
/// --seq 4096 --zero 3`): the flags build the scenario JSON a file would hold, so both take the
/// same path (`io::evaluate_scenario`) and `--print-scenario` shows the file to keep.
///
/// - `--gpus N x DEVICE` (a `strata --list-gpus` key) puts N GPUs in DEVICE's node preset (DGX
///   A100/H100/H200/B200, the MI300X and L40S platforms, the GH200 quad, DGX-1 V100); one GPU of
///   any other device stands alone; several of a device without a node of its own sit in the
///   L40S server's PCIe nodes, which `notes` says; `--power-limit W` holds them at W watts.
/// - Without any parallel flag on more than one GPU the scenario searches every plan; with some,
///   the data-parallel degree fills the GPUs the others leave (named in `notes`).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/error.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/json.hpp"

namespace strata::io {

/// The flags of a one-line question; 0 (-1 for `zero`) or empty: not given.
struct one_line {
  std::string model{}, gpus{}, framework{}, recompute{}, precision{};
  int batch = 0, sequence = 0, tensor = 0, pipeline = 0, data = 0, zero = -1, micro_batch = 0;
  int lora = 0;         ///< LoRA rank
  int power_limit = 0;  ///< watts every GPU is held at (`nvidia-smi -pl`)
  bool search = false;
  /// Whether any flag of the question was given (else the CLI reads a scenario file).
  [[nodiscard]] bool given() const {
    return !model.empty() || !gpus.empty() || !framework.empty() || !recompute.empty() ||
           !precision.empty() || batch > 0 || sequence > 0 || tensor > 0 || pipeline > 0 ||
           data > 0 || zero >= 0 || micro_batch > 0 || lora > 0 || power_limit > 0 || search;
  }
};

/// The scenario the flags describe and what it chose that the flags did not say.
struct one_line_scenario {
  nlohmann::json scenario;
  std::vector<std::string> notes;
};

namespace detail {
/// The node preset holding `device` (a `--list-gpus` key), or empty.
inline std::string_view node_preset(std::string_view device) {
  static constexpr std::pair<std::string_view, std::string_view> nodes[] = {
      {"v100-16gb", "dgx1-v100"}, {"a100-80gb", "dgx-a100"}, {"a100-40gb", "dgx-a100-40gb"},
      {"h100", "dgx-h100"},       {"h200", "dgx-h200"},      {"b200", "dgx-b200"},
      {"mi300x", "mi300x-x8"},    {"l40s", "l40s-x8"},       {"gh200", "gh200-x4"}};
  for (const auto& [dev, preset] : nodes)
    if (dev == device) return preset;
  return {};
}

/// `--gpus`: "N x DEVICE" (also "NxDEVICE") as a cluster.
inline nlohmann::json one_line_cluster(const std::string& gpus, std::vector<std::string>& notes) {
  const std::size_t x = gpus.find('x');
  const auto bad = [&] {
    throw plan_error(
        "--gpus: give a count and a device, e.g. 8xh100 or 1xrtx4090 (strata "
        "--list-gpus names the devices; got \"" +
        gpus + "\")");
  };
  if (x == std::string::npos || x == 0 || x + 1 >= gpus.size()) bad();
  int n = 0;
  for (std::size_t i = 0; i < x; ++i) {
    if (gpus[i] < '0' || gpus[i] > '9' || n > 1'000'000) bad();
    n = 10 * n + (gpus[i] - '0');
  }
  if (n < 1) bad();
  const std::string device = gpus.substr(x + 1);
  std::vector<std::string_view> keys;
  for (const auto& e : presets::device_catalogue) keys.push_back(e.key);
  if (std::find(keys.begin(), keys.end(), device) == keys.end())
    throw plan_error("--gpus: unknown device \"" + device + "\" (strata --list-gpus lists them" +
                     did_you_mean(device, keys) + ")");
  const std::string_view preset = node_preset(device);
  if (!preset.empty()) return {{"preset", preset}, {"devices", n}};
  if (n == 1)
    return {{"name", "one " + device},
            {"device", device},
            {"levels", nlohmann::json::array({{{"fanout", 1}, {"bandwidth_GBps", 32}}})}};
  notes.push_back("--gpus " + gpus + ": no node preset holds " + device +
                  "; they sit in the L40S server's PCIe nodes (write a \"cluster\" for other "
                  "links; --print-scenario gives the file)");
  return {{"preset", "l40s-x8"}, {"devices", n}, {"device", device}};
}
}  // namespace detail

/// The scenario of a one-line question; a missing or malformed flag is a `plan_error` naming it.
[[nodiscard]] inline one_line_scenario scenario_from_flags(const one_line& f) {
  one_line_scenario out;
  if (f.model.empty())
    throw plan_error("--model: name the model (strata --list-models), e.g. --model llama3-8b");
  if (f.gpus.empty()) throw plan_error("--gpus: give a count and a device, e.g. --gpus 8xh100");
  if (f.batch < 1) throw plan_error("--batch: give the global batch in sequences, e.g. --batch 64");
  nlohmann::json& s = out.scenario;
  // a Hugging Face id has an owner: "meta-llama/Llama-3.1-8B"
  s["model"] = f.model.find('/') != std::string::npos ? nlohmann::json{{"hf_id", f.model}}
                                                      : nlohmann::json(f.model);
  s["cluster"] = detail::one_line_cluster(f.gpus, out.notes);
  if (f.power_limit > 0) s["cluster"]["power_limit_W"] = f.power_limit;
  nlohmann::json training{{"batch", f.batch}};
  if (f.sequence > 0) training["sequence"] = f.sequence;
  if (!f.framework.empty()) training["framework"] = f.framework;
  if (!f.precision.empty()) training["precision"] = f.precision;
  if (f.lora > 0) training["lora"] = {{"rank", f.lora}};
  s["training"] = training;
  const int n = s["cluster"].contains("devices") ? s["cluster"]["devices"].get<int>() : 1;
  const bool degrees = f.tensor > 0 || f.pipeline > 0 || f.data > 0 || f.zero >= 0 ||
                       f.micro_batch > 0 || !f.recompute.empty();
  if (f.search || (!degrees && n > 1)) {
    if (degrees)
      throw plan_error(
          "--search: searches every plan; leave out --tp, --pp, --dp, --zero, "
          "--micro-batch and --recompute, or leave out --search");
    s["search"] = true;
    if (!f.search)
      out.notes.push_back("no parallel flag on " + std::to_string(n) +
                          " GPUs: searching every plan (give --tp, --pp or --dp for one)");
    return out;
  }
  nlohmann::json p = nlohmann::json::object();
  const int t = f.tensor > 0 ? f.tensor : 1, pp = f.pipeline > 0 ? f.pipeline : 1;
  if (f.tensor > 0) p["tensor"] = f.tensor;
  if (f.pipeline > 0) p["pipeline"] = f.pipeline;
  if (f.data > 0) {
    p["data"] = f.data;
  } else if (n % (t * pp) == 0 && n / (t * pp) > 1) {
    p["data"] = n / (t * pp);
    out.notes.push_back("--dp " + std::to_string(n / (t * pp)) +
                        ": the GPUs that tensor x pipeline (" + std::to_string(t * pp) + ") leave");
  }
  if (f.zero >= 0) p["zero"] = f.zero;
  if (f.micro_batch > 0) p["micro_batch"] = f.micro_batch;
  if (!f.recompute.empty()) p["recompute"] = f.recompute;
  s["parallel"] = p;
  return out;
}

}  // namespace strata::io
