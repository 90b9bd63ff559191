#pragma once
/// @file io/csv.hpp
/// @brief Any report as CSV for a spreadsheet (`--format csv`): a search's ranked plans one row
/// each (the `best` list of a transformer search, the `candidates` of a DLRM sharding search, the
/// `gpus` of `strata fit`), every other report as `field,value` rows. Nested fields are flattened
/// to dotted paths ("time.forward_s", "ranks.1.memory_bytes"); the numbers are JSON's, unrounded.
/// @code
/// std::cout << strata::io::csv_of(strata::io::evaluate_scenario(j, {}, profile).report);
/// @endcode

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::io {

namespace detail {
/// A CSV field: quoted when it holds a comma, a quote or a line break (quotes doubled).
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}
/// A leaf's text: strings as they are, numbers and booleans as JSON writes them.
inline std::string csv_value(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump();
}
/// Every leaf of `j` under `path`, in JSON's key order, as (dotted path, text).
inline void flatten(const nlohmann::json& j, const std::string& path,
                    std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object() || j.is_array()) {
    std::size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      const std::string key = j.is_object() ? it.key() : std::to_string(i);
      flatten(*it, path.empty() ? key : path + "." + key, out);
    }
    if (j.empty() && !path.empty()) out.emplace_back(path, "");
    return;
  }
  out.emplace_back(path, csv_value(j));
}
/// The ranked rows a search report lists, or null for a single plan's report.
inline const nlohmann::json* ranked_rows(const nlohmann::json& j) {
  for (const char* key : {"best", "candidates", "gpus"})
    if (j.is_object() && j.contains(key) && j[key].is_array() && !j[key].empty() &&
        j[key][0].is_object())
      return &j[key];
  return nullptr;
}
}  // namespace detail

/// `report` as CSV: a header and one row per ranked plan (or per GPU of `strata fit`), else
/// `field,value` rows.
inline std::string csv_of(const nlohmann::json& report) {
  std::string out;
  if (const nlohmann::json* rows = detail::ranked_rows(report)) {
    // the columns: every field any row has, in the first row's order, then the others'
    std::vector<std::string> columns;
    std::vector<std::vector<std::pair<std::string, std::string>>> cells;
    for (const auto& r : *rows) {
      cells.emplace_back();
      detail::flatten(r, "", cells.back());
      for (const auto& [k, v] : cells.back()) {
        bool seen = false;
        for (const auto& c : columns) seen = seen || c == k;
        if (!seen) columns.push_back(k);
      }
    }
    out += "rank";
    for (const auto& c : columns) (out += ',') += detail::csv_field(c);
    out += "\n";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out += std::to_string(i + 1);
      for (const auto& c : columns) {
        std::string v;
        for (const auto& [k, x] : cells[i])
          if (k == c) v = x;
        (out += ',') += detail::csv_field(v);
      }
      out += "\n";
    }
    return out;
  }
  std::vector<std::pair<std::string, std::string>> leaves;
  detail::flatten(report, "", leaves);
  out += "field,value\n";
  for (const auto& [k, v] : leaves) out += detail::csv_field(k) + "," + detail::csv_field(v) + "\n";
  return out;
}

}  // namespace strata::io
