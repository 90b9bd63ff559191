#pragma once
// What every strata subcommand shares: reading inputs, printing and writing reports, one error
// line per failure (tools/cli/main.cpp, simulate.cpp, tools.cpp).
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <new>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/io/json.hpp"
#include "strata/io/messages.hpp"

namespace strata_cli {
using json = nlohmann::json;

// Every number in a report is finite (io/messages.hpp).
inline void check_finite(const json& j, const std::string& path) {
  strata::io::check_finite(j, path);
}

// A table holds no "inf" or "nan" (io/messages.hpp).
inline void check_finite_table(const std::string& text) { strata::io::check_finite_text(text); }

// Writes `j` to `path` for the option `option`; a path that cannot be opened or written
// (a full disk, /dev/full) is a plan_error.
inline void write_json(const std::string& option, const std::string& path, const json& j,
                       int indent) {
  check_finite(j, option);
  std::ofstream out(path);
  if (!out) throw strata::plan_error(option + ": cannot write '" + path + "'");
  out << j.dump(indent) << '\n';
  out.flush();
  out.close();
  if (out.fail()) throw strata::plan_error(option + ": cannot write '" + path + "'");
}

// Writes a picture to `path` for the option `option` (docs/cli.md, "Pictures").
inline void write_text(const std::string& option, const std::string& path,
                       const std::string& text) {
  std::ofstream out(path);
  if (!out) throw strata::plan_error(option + ": cannot write '" + path + "'");
  out << text;
  out.flush();
  out.close();
  if (out.fail()) throw strata::plan_error(option + ": cannot write '" + path + "'");
}

// Prints a report: JSON after checking every number is finite, and checks standard output
// took it.
inline void print_json(const json& j) {
  check_finite(j, "");
  std::cout << j.dump(2) << '\n';
}
inline void print_table(const std::string& text) {
  check_finite_table(text);
  std::cout << text;
}

// The one error line: "strata: error: <field>: <what>". A message without a leading field gets
// `fallback`; nlohmann's "[json.exception...]" prefix goes; control characters become spaces and
// the line is cut at 400 bytes (error messages echo input).
inline int error_line(const std::string& fallback, std::string msg) {
  msg = strata::io::error_text(fallback, msg);  // io/messages.hpp: the Python module's too
  std::cout.flush();
  if (isatty(2) != 0) std::cerr << "\r\033[K";  // clear a progress bar
  std::cerr << "strata: error: " << msg << '\n';
  return 2;
}

// Runs `body` (which returns an exit code), turning every exception into one error line.
template <class F>
inline int guarded(const std::string& field, F&& body) {
  try {
    const int rc = body();
    std::cout.flush();
    if (rc == 0 && !std::cout)
      return error_line("output", "cannot write the report to standard output");
    return rc;
  } catch (const std::bad_alloc&) {
    return error_line(field, "out of memory: the input is too large to evaluate");
  } catch (const std::ios_base::failure& e) {
    std::string why = e.what();  // libstdc++: "basic_filebuf::underflow ...: Is a directory"
    const auto colon = why.rfind(": ");
    why = colon == std::string::npos ? std::string("a read error") : why.substr(colon + 2);
    return error_line(field, field + ": cannot read an input file (" + why + ")");
  } catch (const std::exception& e) {
    return error_line(field, e.what());
  }
}

// A progress bar on standard error while a long search runs (only on a terminal), and an
// optional time limit: returns false once `limit_s` (> 0) seconds have passed.
struct progress_bar {
  double limit_s = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int shown = -1;
  bool tty = isatty(2) != 0;
  bool operator()(double fraction) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int pct = static_cast<int>(fraction * 100);
    if (tty && pct != shown && elapsed > 0.5) {
      shown = pct;
      std::cerr << "\rsearching: " << pct << " % (" << static_cast<int>(elapsed) << " s)"
                << std::flush;
    }
    return !(limit_s > 0 && elapsed > limit_s);
  }
  ~progress_bar() {
    if (tty && shown >= 0) std::cerr << "\r\033[K" << std::flush;
  }
};

// Reads `path` (or standard input for "-") into `out`; a failure prints its sentence (naming
// `field`) and returns false.
inline bool read_text(const std::string& path, std::string& out, const char* field = "scenario") {
  namespace d = strata::io::detail;
  return guarded(field, [&] {
           const std::string f = field;
           out = d::read_file(path, field,
                              f == "trace"          ? "trace file"
                              : f == "--tensorflow" ? "tensor sizes file"
                                                    : "scenario file");
           return 0;
         }) == 0;
}

}  // namespace strata_cli
