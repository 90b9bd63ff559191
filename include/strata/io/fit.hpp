#pragma once
/// @file io/fit.hpp
/// @brief Which GPUs fit: one transformer scenario evaluated once per device preset
/// (`presets::device_catalogue`), each time with the scenario's cluster device replaced by that
/// preset, answering for a model, a training method and a sequence length on which GPUs it fits,
/// with how much to spare and how fast it would run (`strata fit`, `strata.which_gpus`).
///
/// - The GPU count stays the scenario's (one GPU when it gives no cluster); so do its links: a
///   `{"preset": ..., "devices": N}` cluster gets `"device"` beside the preset, a cluster of
///   `"levels"` a new `"device"`. Step times of multi-GPU plans therefore assume the scenario's
///   interconnect on every device.
/// - Rows are sorted by memory capacity, smallest first (ties in catalogue order): read down to
///   the first row that fits for the smallest card that holds the plan.
/// - Each row carries the profile and the `efficiencies` its times were priced with: the fit
///   measured on the H100 SXM for that device, the datasheet and the H100's GEMM efficiency
///   elsewhere (docs/devices.md), so no number is carried to another device without saying so.
/// - Refused, each with a sentence: scenarios other than a transformer's, a `"search"` (fit
///   compares one plan across devices), a profile file (it describes one device), `"cost"`
///   (a price per GPU-hour belongs to one device) and a cluster's `"power_limit_W"` (watts of
///   one device).
/// @code
/// const auto f = strata::io::which_gpus(nlohmann::json::parse(R"({
///   "model": "llama3-8b", "training": {"batch": 1, "sequence": 4096,
///                                     "lora": {"rank": 16}}})"), shipped_profile);
/// for (const auto& r : f.rows) std::cout << r.device << (r.fits ? " fits\n" : " does not\n");
/// @endcode

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/evaluate.hpp"
#include "strata/io/human.hpp"
#include "strata/io/json.hpp"
#include "strata/io/transformer_scenario.hpp"

namespace strata::io {

/// One device preset's answer: its memory, what the plan needs on it, and its speed there.
struct fit_row {
  std::string device;        ///< the preset's key (`strata --list-gpus`): "rtx4090"
  std::string name;          ///< its datasheet name: "RTX-4090-24GB"
  double capacity_GiB = 0;   ///< the memory a process can use
  double required_GiB = 0;   ///< tensors at their peak plus the runtime's headroom
  double peak_GiB = 0;       ///< tensors only, at the fullest stage's peak
  double margin_GiB = 0;     ///< capacity - required; negative when out of memory
  bool fits = false;         ///< required <= capacity
  std::string verdict;       ///< "fits", "tight" or "does not fit" (`memory_verdict`)
  double iteration_s = 0;    ///< the step time the plan takes (would take, when it does not fit)
  double tokens_per_s = 0;   ///< tokens per second over all the plan's GPUs
  double mfu = 0;            ///< model FLOP utilisation
  std::string profile;       ///< the device profile: "h100", "fitted-gemm", "datasheet"
  std::string efficiencies;  ///< where the profile's efficiencies come from (docs/devices.md)
};

/// The answer for every device preset, smallest memory first.
struct fit_report {
  std::string model;
  double parameters = 0;
  int devices = 1;  ///< GPUs per plan: the scenario's, or 1 without a cluster
  int batch = 0;
  int sequence = 0;
  std::string framework;
  std::vector<std::string> defaults;  ///< the scenario's defaults that change its answer
  std::vector<fit_row> rows;
};

namespace detail {

/// A one-GPU cluster of `device` (a scenario without a cluster; one GPU has no links to price).
inline json one_gpu_cluster(std::string_view device) {
  return {{"device", std::string(device)},
          {"levels", json::array({{{"fanout", 1}, {"bandwidth_GBps", 1}}})}};
}

/// The scenario's cluster with its device replaced by the preset `device`, the GPU count and
/// links kept.
inline json cluster_with(const json& cluster, std::string_view device) {
  if (cluster.is_null()) return one_gpu_cluster(device);
  json c = cluster.is_string() ? json{{"preset", cluster}} : cluster;
  if (c.is_object()) c["device"] = std::string(device);  // anything else: parse_cluster names it
  return c;
}

/// The refusals: what `which_gpus` cannot compare across devices, each with its sentence.
inline void check_fit_scenario(const json& j) {
  switch (kind_of(j)) {
    case scenario_kind::transformer:
      break;
    case scenario_kind::cnn:
    case scenario_kind::dlrm:
    case scenario_kind::embedding_bag:
    case scenario_kind::step: {
      const scenario_kind k = kind_of(j);
      fail("model", std::string("fit compares GPUs for transformer scenarios (\"model\": a zoo "
                                "transformer such as \"llama3-8b\", its dimensions, or a Hugging "
                                "Face {\"hf_id\"} or {\"hf_config\"}); this is a ") +
                        (k == scenario_kind::dlrm            ? "DLRM"
                         : k == scenario_kind::embedding_bag ? "single embedding-bag"
                         : k == scenario_kind::step          ? "single-GPU step"
                                                             : "CNN or parameter-server") +
                        " scenario");
    }
  }
  if (j.contains("search"))
    fail("search",
         "fit evaluates the scenario's one plan on every device: give \"parallel\" "
         "(or nothing, for one GPU) instead of a search");
  if (j.contains("cluster") && j["cluster"].is_object() && j["cluster"].contains("power_limit_W"))
    fail("cluster.power_limit_W",
         "holds one device at a limit in watts; fit compares every preset at its rated power "
         "(run the scenario on the device you hold at that limit)");
  if (j.contains("cost"))
    fail("cost",
         "prices one device's GPU-hours; fit compares devices (run the scenario on the "
         "device you choose for its cost)");
  if (j.contains("profile")) {
    const json& p = j["profile"];
    const std::string n = p.is_string() ? p.get<std::string>() : std::string();
    if (p.is_string() && n != "auto" && n != "fitted-gemm" && n != "datasheet" && n != "h100")
      fail("profile",
           "a profile file describes the one device it was measured on; fit compares "
           "every preset: give \"auto\", \"fitted-gemm\", \"datasheet\" or \"h100\"");
  }
}

/// One device's row from its report (`transformer_report_json`).
inline fit_row fit_row_of(const presets::named_device& e, const json& r) {
  const json& m = r.at("memory_GiB");
  fit_row row;
  row.device = std::string(e.key);
  row.name = std::string(e.dev->name);
  row.capacity_GiB = m.at("capacity").get<double>();
  row.required_GiB = m.at("required").get<double>();
  row.peak_GiB = m.at("peak").get<double>();
  row.margin_GiB = m.at("margin").get<double>();
  row.fits = r.at("fits").get<bool>();
  row.verdict = r.at("verdict").get<std::string>();
  row.iteration_s = r.at("iteration_time_s").get<double>();
  row.tokens_per_s = r.at("tokens_per_s").get<double>();
  row.mfu = r.at("mfu").get<double>();
  row.profile = r.at("profile").get<std::string>();
  row.efficiencies = r.at("efficiencies").get<std::string>();
  return row;
}

}  // namespace detail

/// Evaluates transformer scenario `j` on every device preset (`shipped`: the text of the H100
/// profile that "auto" names). An error of the scenario itself is the sentence `strata
/// SCENARIO` gives; one that only a preset meets names it: "fit: on rtx3090: ...".
[[nodiscard]] inline fit_report which_gpus(const nlohmann::json& j, std::string_view shipped) {
  namespace d = detail;
  using json = nlohmann::json;
  d::check_fit_scenario(j);
  const json cluster = j.contains("cluster") ? j["cluster"] : json();
  // the scenario as given (or on one H100): its own mistakes keep their own sentences
  json own = j;
  if (cluster.is_null()) own["cluster"] = d::one_gpu_cluster("h100");
  const transformer_scenario s = [&] {
    try {
      return parse_transformer_scenario(own, shipped);
    } catch (const plan_error& x) {
      const std::string what = x.what();
      if (cluster.is_null() && what.find("cluster's device count") != std::string::npos)
        throw plan_error(what + " (without a \"cluster\", fit plans on one GPU: give one)");
      throw;
    }
  }();
  const json first = transformer_report_json(s);
  fit_report out;
  out.model = s.name;
  out.parameters = s.net.parameters();
  out.devices = s.machine.devices();
  out.batch = s.setup.batch;
  out.sequence = s.setup.sequence_or(s.net.sequence);
  out.framework = first.value("framework", std::string());
  out.defaults = s.defaults;
  for (const presets::named_device& e : presets::device_catalogue) {
    json on = j;
    on["cluster"] = d::cluster_with(cluster, e.key);
    try {
      out.rows.push_back(
          d::fit_row_of(e, transformer_report_json(parse_transformer_scenario(on, shipped))));
    } catch (const plan_error& x) {
      throw plan_error("fit: on " + std::string(e.key) + ": " + x.what());
    }
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const fit_row& a, const fit_row& b) {
    return a.capacity_GiB < b.capacity_GiB;
  });
  return out;
}

/// The rows as JSON: [{"device", "name", "capacity_GiB", "required_GiB", "peak_GiB",
/// "margin_GiB", "fits", "verdict", "iteration_s", "tokens_per_s", "mfu", "profile",
/// "efficiencies"}].
[[nodiscard]] inline nlohmann::json fit_rows_json(const fit_report& f) {
  nlohmann::json rows = nlohmann::json::array();
  for (const fit_row& r : f.rows)
    rows.push_back({{"device", r.device},
                    {"name", r.name},
                    {"capacity_GiB", r.capacity_GiB},
                    {"required_GiB", r.required_GiB},
                    {"peak_GiB", r.peak_GiB},
                    {"margin_GiB", r.margin_GiB},
                    {"fits", r.fits},
                    {"verdict", r.verdict},
                    {"iteration_s", r.iteration_s},
                    {"tokens_per_s", r.tokens_per_s},
                    {"mfu", r.mfu},
                    {"profile", r.profile},
                    {"efficiencies", r.efficiencies}});
  return rows;
}

/// The report as JSON: the scenario's `model`, `parameters`, `devices` (GPUs per plan),
/// `batch`, `sequence`, `framework`, `defaults`, `order`, `fits_on` (the keys of the devices that
/// fit), `tight_on` (those it fits only without the allocator's slack) and `gpus`
/// (`fit_rows_json`).
[[nodiscard]] inline nlohmann::json fit_report_json(const fit_report& f) {
  nlohmann::json fits_on = nlohmann::json::array(), tight_on = nlohmann::json::array();
  for (const fit_row& r : f.rows) {
    if (r.fits) fits_on.push_back(r.device);
    if (r.verdict == "tight") tight_on.push_back(r.device);
  }
  nlohmann::json j{{"model", f.model},
                   {"parameters", f.parameters},
                   {"devices", f.devices},
                   {"batch", f.batch},
                   {"sequence", f.sequence},
                   {"framework", f.framework},
                   {"order", "capacity_GiB, smallest first"},
                   {"fits_on", fits_on},
                   {"tight_on", tight_on},
                   {"gpus", fit_rows_json(f)}};
  if (!f.defaults.empty()) j["defaults"] = f.defaults;
  return j;
}

/// The report as a table for people: one row per device, "tight" where only the allocator's
/// slack does not fit; the step time and tokens/s of a plan that does not fit are "-"
/// (`fit_report_json` keeps them).
[[nodiscard]] inline std::string fit_report_table(const fit_report& f) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "%s (%.2fB parameters), batch %d x sequence %d, %s, on %d GPU%s of each kind\n",
                f.model.c_str(), f.parameters / 1e9, f.batch, f.sequence, f.framework.c_str(),
                f.devices, f.devices == 1 ? "" : "s");
  out += line;
  if (!f.defaults.empty()) out += "defaults the scenario left out:\n";
  for (const std::string& d : f.defaults) out += "  " + d + "\n";
  std::snprintf(line, sizeof line, "%-15s %11s %13s %11s %5s %9s %10s  %s\n", "device",
                "memory GiB", "required GiB", "margin GiB", "fits", "step s", "tokens/s",
                "profile");
  out += line;
  std::vector<std::string> profiles;
  for (const fit_row& r : f.rows) {
    char step[32] = "-", rate[32] = "-";
    const bool tight = r.verdict == "tight";
    if (r.fits || tight) {
      std::snprintf(step, sizeof step, "%.3f", r.iteration_s);
      std::snprintf(rate, sizeof rate, "%s", human_count(r.tokens_per_s).c_str());
    }
    std::snprintf(line, sizeof line, "%-15s %11.2f %13.2f %11.2f %5s %9s %10s  %s\n",
                  r.device.c_str(), r.capacity_GiB, r.required_GiB, r.margin_GiB,
                  r.fits  ? "yes"
                  : tight ? "tight"
                          : "NO",
                  step, rate, r.profile.c_str());
    out += line;
    if (std::find(profiles.begin(), profiles.end(), r.profile) == profiles.end())
      profiles.push_back(r.profile);
  }
  // what each profile's step times rest on (docs/devices.md), so none is carried silently
  for (const std::string& p : profiles) {
    const char* why =
        p == "h100"          ? "the fit measured on H100-SXM5-80GB (rescaled to the peaks of any "
                               "other device)"
        : p == "fitted-gemm" ? "each device's datasheet peaks, GEMM efficiency fitted on "
                               "H100-SXM5-80GB: not measured on the device"
        : p == "datasheet"   ? "each device's datasheet peaks, default efficiencies: not "
                               "measured on the device"
                             : "see --format json's efficiencies";
    out += "profile " + p + ": " + why + "\n";
  }
  out +=
      "required: the tensors' peak plus the runtime's context, communicator buffers and "
      "allocator slack\n";
  if (std::any_of(f.rows.begin(), f.rows.end(),
                  [](const fit_row& r) { return r.verdict == "tight"; }))
    out +=
        "tight: all but the allocator slack fits; it runs if the caching allocator gives back "
        "its cached blocks\n";
  return out;
}

}  // namespace strata::io
