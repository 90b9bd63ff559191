#pragma once
/// @file io/messages.hpp
/// @brief The checks and the wording every front end (the CLI, the Python module, strata-mpi)
/// shares: a report holds only finite numbers, and an error is one line "<field>: <what>".
/// @code
/// strata::io::check_finite(report, "");  // throws plan_error naming the first non-finite field
/// std::string line = strata::io::error_text("scenario", e.what());
/// @endcode

#include <cctype>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/io/json.hpp"

namespace strata::io {

/// Every number in a report is finite: the first that is not is a plan_error naming its field
/// (`path` prefixes the field names; "" is the report itself).
inline void check_finite(const nlohmann::json& j, const std::string& path) {
  if (j.is_number_float() && !std::isfinite(j.get<double>()))
    throw plan_error((path.empty() ? std::string("report") : path) +
                     ": the prediction is not a finite number (the inputs are too extreme)");
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      check_finite(*it, path.empty() ? it.key() : path + "." + it.key());
  if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i)
      check_finite(j[i], path + "[" + std::to_string(i) + "]");
}

/// A report table holds no "inf" or "nan" (printf's spelling of non-finite numbers) as a word.
inline void check_finite_text(const std::string& text) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const char* bad : {"inf", "nan"})
    for (auto at = text.find(bad); at != std::string::npos; at = text.find(bad, at + 1))
      if ((at == 0 || !word(text[at - 1])) && (at + 3 >= text.size() || !word(text[at + 3])))
        throw plan_error(
            "report: the prediction is not a finite number (the inputs are too extreme)");
}

/// The one error sentence for an exception's message: nlohmann's "[json.exception...]" prefix
/// goes, control characters become spaces, a message without a leading "field: " gets
/// `fallback`, and the line is cut at 400 bytes (messages echo input).
inline std::string error_text(const std::string& fallback, std::string msg) {
  msg = detail::json_what(std::runtime_error(msg));
  for (char& c : msg)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  const auto colon = msg.find(':');
  const bool has_field = colon != std::string::npos && colon > 0 && colon <= 100 &&
                         colon + 2 < msg.size() && msg[colon + 1] == ' ' && msg[0] != ' ';
  if (!has_field) msg = fallback + ": " + msg;
  return detail::cut(msg, 400);
}

/// The sentence a search stopped at its time limit ends with: `option` as the caller spells it
/// ("--time-limit", "time_limit"), the limit in seconds and the share of the space done.
inline std::string search_stopped(const std::string& option, double limit_s, double done) {
  return option + ": the search stopped after " + nlohmann::json(limit_s).dump() + " s, " +
         std::to_string(static_cast<int>(done * 100)) + " % done";
}

}  // namespace strata::io
