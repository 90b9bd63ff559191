#pragma once
/// @file io/model_list.hpp
/// @brief Every model a scenario can name (`strata --list-models`, `strata.list_models()`): the
/// zoo's transformers and CNNs by key, and the Hugging Face configs strata ships by model id
/// (docs/hf_configs.md), each with its parameter count.

#include <string>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/io/hf_config.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/transformer_scenario.hpp"
#include "strata/model/model.hpp"

namespace strata::io {

namespace detail {
/// Refuses a scenario whose "model" names no zoo model, listing both zoos and the closest name
/// (a zoo transformer, a CNN or a shipped Hugging Face id, which goes in {"hf_id": ...}).
inline void check_model_name(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_string()) return;
  const std::string name = j["model"].get<std::string>();
  std::vector<std::string> transformers, cnns;
  for (const zoo_entry& e : transformer_zoo) transformers.emplace_back(e.key);
  for (const char* c : cnn_zoo) cnns.emplace_back(c);
  for (const auto* zoo : {&transformers, &cnns})
    for (const std::string& k : *zoo)
      if (k == name) return;
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  std::vector<std::string> all = transformers;
  all.insert(all.end(), cnns.begin(), cnns.end());
  std::string hint = did_you_mean(name, all);
  if (hint.empty()) {
    const std::string id = closest_name(name, hf_shipped_ids());
    if (!id.empty()) hint = "; did you mean {\"hf_id\": \"" + id + "\"}?";
  }
  fail("model", "unknown model \"" + cut(name) + "\" (transformers: " + join(transformers) +
                    "; CNNs: " + join(cnns) + "; Hugging Face ids: strata --list-models" + hint +
                    ")");
}
}  // namespace detail

/// The models as JSON: [{"model", "kind" ("transformer", "cnn" or "hf_id"), "parameters"}],
/// zoo transformers first, then the CNNs, then the shipped Hugging Face ids (sorted). A shipped
/// config strata cannot count is "refused" with the reader's sentence; one it counts but cannot
/// plan yet (`transformer::check_lowered`) says why under "not_planned"; a sliding window (plans
/// train within it) is given as "sliding_window".
inline nlohmann::json model_catalogue_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const detail::zoo_entry& e : detail::transformer_zoo)
    out.push_back(
        {{"model", e.key}, {"kind", "transformer"}, {"parameters", e.make().parameters()}});
  for (const char* name : detail::cnn_zoo)
    out.push_back({{"model", name},
                   {"kind", "cnn"},
                   {"parameters", total_params(detail::zoo_model(name, "model"))}});
  for (const std::string& id : hf_shipped_ids()) {
    nlohmann::json row{{"model", id}, {"kind", "hf_id"}};
    try {
      const hf_model m = read_hf_config(hf_shipped_config(id), id);
      row["parameters"] = m.net.parameters();
      try {
        m.net.check_lowered();
      } catch (const plan_error& e) {
        row["not_planned"] = e.what();
      }
      if (m.sliding_window > 0) row["sliding_window"] = m.sliding_window;
    } catch (const plan_error& e) {
      row["refused"] = e.what();
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace strata::io
