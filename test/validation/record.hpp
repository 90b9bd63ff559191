#pragma once
// What a validation test compared, for the docs: when STRATA_VALIDATION_OUT names a directory,
// `record(table, header, values...)` appends a row to <dir>/<table>.csv (the header once per
// run). tools/figures.py runs the validation tests this way, writes docs/data/validation/ and
// the tables of docs/validation.md from the rows, and draws the figures; `--check` fails when the
// committed copies are stale. Without the variable nothing is written.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace strata_test {

inline std::string cell(const std::string& s) { return s; }
inline std::string cell(const char* s) { return s; }
inline std::string cell(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}
inline std::string cell(int x) { return std::to_string(x); }

// The tables written in this run: one set for every `record` instantiation (a table's rows may
// come from calls with different value types).
inline std::set<std::string>& started_tables() {
  static std::set<std::string> started;
  return started;
}

template <class... T>
void record(const std::string& table, const std::string& header, const T&... values) {
  const char* dir = std::getenv("STRATA_VALIDATION_OUT");
  if (dir == nullptr || *dir == '\0') return;
  const std::string path = std::string(dir) + "/" + table + ".csv";
  const bool first = started_tables().insert(table).second;
  std::ofstream out(path, first ? std::ios::trunc : std::ios::app);
  if (first) out << header << '\n';
  std::ostringstream row;
  bool comma = false;
  ((row << (comma ? "," : "") << cell(values), comma = true), ...);
  out << row.str() << '\n';
}

}  // namespace strata_test
