#pragma once
/// @file io/validation.hpp
/// @brief A report's validation band (`validation_bands`, generated from docs/data/validation):
/// how far strata was from measured and published runs like the one reported, as JSON
/// (`band_json`) and as the table's closing line (`band_line`).
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/io/validation_bands.hpp"

namespace strata::io::detail {

/// How far runs like this one were from strata (`validation_bands`): `of` says which runs;
/// `time` and `memory` each give `rows`, `median_pct` and `within_pct` (90 % of |error|), or are
/// absent where no such run was checked.
inline nlohmann::json band_json(std::string_view framework, bool many, bool lora) {
  nlohmann::json j{{"of", std::string(lora ? "LoRA fine-tuning runs of " : "runs of ") +
                              std::string(framework) +
                              (many ? " on several GPUs" : " on one GPU")}};
  for (const validation_band& b : validation_bands)
    if (b.framework == framework && b.many_gpus == many && b.lora == lora)
      j[std::string(b.metric)] = {
          {"rows", b.rows}, {"median_pct", b.median_pct}, {"within_pct", b.within_pct}};
  return j;
}

/// The report's validation band as one line (`band_json`), or that no such run was checked.
inline std::string band_line(const nlohmann::json& v) {
  std::string band = "checked against " + v["of"].get<std::string>() + ":";
  bool any = false;
  char line[160];
  for (const char* metric : {"time", "memory"}) {
    if (!v.contains(metric)) continue;
    const nlohmann::json& b = v[metric];
    std::snprintf(line, sizeof line, "%s %s median %+.1f %%, 90 %% within %.1f %% (%d runs)",
                  any ? ";" : "", metric, b["median_pct"].get<double>(),
                  b["within_pct"].get<double>(), b["rows"].get<int>());
    band += line;
    any = true;
  }
  return "  " + (any ? band : "no " + v["of"].get<std::string>() + " were checked") + "\n";
}

}  // namespace strata::io::detail
