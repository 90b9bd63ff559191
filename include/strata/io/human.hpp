#pragma once
/// @file io/human.hpp
/// @brief Numbers for people: durations in the unit that reads best (us, ms, s, min, h, days)
/// and counts with thousands separators, sizes in KiB, MiB or GiB, and a table's "label  value"
/// rows. The tables use them; JSON keeps plain numbers.
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace strata::io {

/// `s` seconds as "850 us", "12.3 ms", "2.851 s", "4.2 min", "3.5 h" or "2.1 days".
[[nodiscard]] inline std::string human_duration(double s) {
  char buf[48];
  const double a = std::fabs(s);
  if (a == 0)
    std::snprintf(buf, sizeof buf, "0 s");
  else if (a < 1e-3)
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (a < 1)
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else if (a < 120)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (a < 2 * 3600)
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else if (a < 2 * 86400)
    std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  else
    std::snprintf(buf, sizeof buf, "%.1f days", s / 86400);
  return buf;
}

/// `x` rounded to a whole number with a comma every three digits: 1463441 -> "1,463,441".
[[nodiscard]] inline std::string human_count(double x) {
  if (!std::isfinite(x)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f", std::fabs(x));
  const std::string digits = buf;
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (x < 0 && out != "0" ? "-" : "") + out;
}

/// `b` bytes as "512 B", "12.0 KiB", "340.5 MiB" or "12.34 GiB".
[[nodiscard]] inline std::string human_bytes(double b) {
  char buf[48];
  const double a = std::fabs(b);
  if (a < 1024)
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  else if (a < 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else if (a < 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

/// A JSON key as a table's label: "optimizer_states" -> "optimizer states".
[[nodiscard]] inline std::string human_label(std::string_view key) {
  std::string label(key);
  for (char& c : label)
    if (c == '_') c = ' ';
  return label;
}

/// One row of a report table: the label in a 22-wide column, the value right-aligned in 12,
/// then an optional note ("  iteration                 12.3 ms  (note)").
[[nodiscard]] inline std::string table_row(std::string_view label, const std::string& value,
                                           std::string_view note = {}) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %-22.*s %12s", static_cast<int>(label.size()), label.data(),
                value.c_str());
  std::string out = buf;
  if (!note.empty()) (out += "  ") += note;
  return out + "\n";
}

}  // namespace strata::io
