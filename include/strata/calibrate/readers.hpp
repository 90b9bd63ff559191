#pragma once
/// @file calibrate/readers.hpp
/// @brief Readers for collective benchmarks: nccl-tests output as it prints it, and CSV tables.
///
/// Every malformed input is a `plan_error` that names the line (and the column where it helps);
/// nothing is skipped silently except comment lines.
/// @code
/// std::ifstream f("all_reduce_perf.txt");
/// auto run = strata::calibrate::read_nccl_tests(f);   // run.out_of_place, run.in_place
/// @endcode

#include <cctype>
#include <charconv>
#include <cmath>
#include <istream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "strata/calibrate/measurement.hpp"
#include "strata/error.hpp"

namespace strata::calibrate {

namespace detail {
inline std::vector<std::string> split_ws(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string tok; in >> tok;) out.push_back(tok);
  return out;
}
inline double number(const std::string& tok, const std::string& where) {
  double v = 0;
  const char* first = tok.data();
  const char* last = tok.data() + tok.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc{} || ptr != last || !std::isfinite(v))
    throw plan_error(where + ": '" + tok + "' is not a number");
  return v;
}
inline std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}
}  // namespace detail

/// The largest message size a reader accepts: 1e15 bytes.
inline constexpr double max_message_bytes = 1e15;

/// One nccl-tests run: its collective (from the "Collective test starting" line, when present),
/// its rank count (from the "#  Rank" lines) and both result columns.
struct nccl_tests_run {
  std::string collective;  ///< e.g. "all_reduce_perf"; empty when the output does not say
  int ranks = 0;           ///< devices listed in the header; 0 when the output does not say
  std::vector<measurement> out_of_place;
  std::vector<measurement> in_place;
};

/// Reads nccl-tests output: "size count type redop root time algbw busbw #wrong time algbw busbw
/// #wrong" (13 columns) or the same without `root` (12, older versions). Sizes in bytes, times
/// in microseconds, bandwidths in GB/s; `#wrong` may be "N/A".
inline nccl_tests_run read_nccl_tests(std::istream& in) {
  nccl_tests_run run;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = "nccl-tests line " + std::to_string(number);
    const std::string t = detail::trim(line);
    if (t.empty()) continue;
    if (t[0] == '#') {
      if (t.find("Collective test starting:") != std::string::npos)
        run.collective = detail::trim(t.substr(t.find(':') + 1));
      const auto toks = detail::split_ws(t);
      if (toks.size() >= 3 && toks[0] == "#" && toks[1] == "Rank") ++run.ranks;
      continue;
    }
    const auto tok = detail::split_ws(t);
    if (tok.size() != 13 && tok.size() != 12)
      throw plan_error(where +
                       ": expected 12 or 13 columns (size count type redop [root] time "
                       "algbw busbw #wrong time algbw busbw #wrong), found " +
                       std::to_string(tok.size()));
    const std::size_t o = tok.size() == 13 ? 5 : 4;  // first time column
    const double size = detail::number(tok[0], where + " column size");
    if (size < 0) throw plan_error(where + " column size: negative size");
    if (size > max_message_bytes) throw plan_error(where + " column size: larger than 1e15 bytes");
    auto read = [&](std::size_t c) {
      // time in us, bandwidths in GB/s: non-negative and at most 1e12 us / 1e9 GB/s
      auto bounded = [&](std::size_t col, const char* name, double hi) {
        const double v = detail::number(tok[col], where + " column " + name);
        if (v < 0) throw plan_error(where + " column " + name + ": must not be negative");
        if (v > hi) throw plan_error(where + " column " + name + ": implausibly large");
        return v;
      };
      measurement m;
      m.size = bytes{size};
      m.time = seconds{bounded(c, "time", 1e12) * 1e-6};
      (void)bounded(c + 1, "algbw", 1e9);
      m.busbw = byte_rate{bounded(c + 2, "busbw", 1e9) * 1e9};
      return m;
    };
    run.out_of_place.push_back(read(o));
    run.in_place.push_back(read(o + 4));
  }
  if (run.out_of_place.empty()) throw plan_error("nccl-tests output contains no result rows");
  return run;
}

/// Parses a size such as "1048576", "64KB", "1.5 MiB", "8G". Binary suffixes (KiB...) are powers
/// of 1024, decimal ones (KB, K...) powers of 1000; with `snap` the result is rounded to the
/// nearest power of two, for tables that label 2^16 as "65KB".
inline bytes parse_size(std::string_view text, bool snap, const std::string& where) {
  std::string s = detail::trim(std::string(text));
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) throw plan_error(where + ": '" + s + "' is not a size");
  double v = detail::number(s.substr(0, i), where);
  std::string unit = detail::trim(s.substr(i));
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  static const std::map<std::string, double> units{{"", 1},
                                                   {"B", 1},
                                                   {"K", 1e3},
                                                   {"KB", 1e3},
                                                   {"M", 1e6},
                                                   {"MB", 1e6},
                                                   {"G", 1e9},
                                                   {"GB", 1e9},
                                                   {"T", 1e12},
                                                   {"TB", 1e12},
                                                   {"KIB", 1024.0},
                                                   {"MIB", 1048576.0},
                                                   {"GIB", 1073741824.0},
                                                   {"TIB", 1099511627776.0}};
  const auto u = units.find(unit);
  if (u == units.end()) throw plan_error(where + ": unknown size unit '" + unit + "'");
  v *= u->second;
  if (snap && v > 0) v = std::exp2(std::round(std::log2(v)));
  return bytes{v};
}

/// A CSV table as rows of named fields (RFC 4180 quoting).
struct csv_table {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

inline csv_table read_csv(std::istream& in) {
  auto parse_line = [](const std::string& line, int number) {
    std::vector<std::string> fields;
    std::string cur;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          cur += c;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        fields.push_back(cur);
        cur.clear();
      } else if (c != '\r') {
        cur += c;
      }
    }
    if (quoted) throw plan_error("CSV line " + std::to_string(number) + ": unterminated quote");
    fields.push_back(cur);
    return fields;
  };
  csv_table t;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (detail::trim(line).empty()) continue;
    auto fields = parse_line(line, number);
    if (t.header.empty()) {
      t.header = fields;
      continue;
    }
    if (fields.size() != t.header.size())
      throw plan_error("CSV line " + std::to_string(number) + ": " + std::to_string(fields.size()) +
                       " fields, the header has " + std::to_string(t.header.size()));
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < fields.size(); ++i) row[t.header[i]] = fields[i];
    t.rows.push_back(std::move(row));
  }
  if (t.header.empty()) throw plan_error("CSV input is empty");
  return t;
}

/// Measurements from CSV rows that pass `keep`: the size from `message_size`, `size` or `bytes`;
/// the bus bandwidth from `busbw_GBps` or `busbw`; the time from `time_us` if present, else
/// derived from the bus bandwidth for `op` on `ranks` devices.
template <class Keep>
std::vector<measurement> measurements_from_csv(const csv_table& t, comm::collective op, int ranks,
                                               Keep&& keep, bool snap_sizes = false) {
  auto column = [&](std::initializer_list<const char*> names) -> std::string {
    for (const char* n : names)
      for (const auto& h : t.header)
        if (h == n) return h;
    return {};
  };
  const std::string size_col = column({"message_size", "size", "bytes"});
  const std::string bw_col = column({"busbw_GBps", "busbw"});
  const std::string time_col = column({"time_us"});
  if (size_col.empty()) throw plan_error("CSV: no size column (message_size, size or bytes)");
  if (bw_col.empty() && time_col.empty())
    throw plan_error("CSV: no busbw_GBps, busbw or time_us column");
  std::vector<measurement> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    if (!keep(row)) continue;
    const std::string where = "CSV row " + std::to_string(i + 2);
    measurement m{};
    m.size = parse_size(row.at(size_col), snap_sizes, where + " column " + size_col);
    if (!bw_col.empty() && !row.at(bw_col).empty())
      m.busbw = byte_rate{detail::number(row.at(bw_col), where + " column " + bw_col) * 1e9};
    if (!time_col.empty() && !row.at(time_col).empty())
      m.time = seconds{detail::number(row.at(time_col), where + " column " + time_col) * 1e-6};
    if (!(m.size > bytes{0}))
      throw plan_error(where + " column " + size_col + ": size must be positive");
    if (m.size.count() > max_message_bytes)
      throw plan_error(where + " column " + size_col + ": larger than 1e15 bytes");
    if (m.busbw < byte_rate{0} || m.busbw.count() > 1e18)
      throw plan_error(where + " column " + bw_col + ": must lie in [0, 1e9] GB/s");
    if (m.time < seconds{0} || m.time.count() > 1e6)
      throw plan_error(where + " column " + time_col + ": must lie in [0, 1e12] us");
    out.push_back(complete(m, op, ranks));
  }
  return out;
}

}  // namespace strata::calibrate
