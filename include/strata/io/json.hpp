#pragma once
/// @file io/json.hpp
/// @brief The JSON toolkit every scenario reader shares: bounded parsing and file reading, and
/// field readers whose errors name the field ("strategy.p: must be an integer in [1, 16777216]").
///
/// Depends on nlohmann/json and `strata/error.hpp` only, so a reader of one scenario family pulls
/// in no other family's model.
/// @code
/// using namespace strata::io::detail;
/// const json j = parse_json(R"({"p": 4})");
/// const int p = int_field(j, "strategy", "p", 1, max_degree, 1, true);
/// @endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <ios>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"

namespace strata::io::detail {

using json = nlohmann::json;

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw plan_error(path + ": " + what);
}

/// The deepest nesting of arrays and objects a JSON input may have (nlohmann's parser is
/// iterative, but destroying and printing a value recurse once per level).
inline constexpr int max_json_depth = 256;
/// The largest input file (or standard input) `read_file` accepts.
inline constexpr std::size_t max_input_bytes = std::size_t{256} << 20;

/// At most `n` characters of `text`, cut at a UTF-8 boundary and marked with "..." (error
/// messages echo user input: a 10 MB name must not become a 10 MB error line).
inline std::string cut(std::string_view text, std::size_t n = 60) {
  if (text.size() <= n) return std::string(text);
  std::size_t k = n;
  while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
  return std::string(text.substr(0, k)) + "...";
}

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
inline std::string json_what(const std::exception& e) {
  std::string w = e.what();
  if (w.rfind("[json.exception.", 0) == 0) {
    const auto close = w.find("] ");
    if (close != std::string::npos) w = w.substr(close + 2);
  }
  return w;
}

/// Parses JSON text; malformed input becomes a plan_error "malformed JSON: ..." carrying
/// nlohmann's position. Nesting deeper than `max_json_depth` is refused before parsing.
inline json parse_json(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_json_depth)
        throw plan_error("malformed JSON: nested deeper than " + std::to_string(max_json_depth) +
                         " levels (at byte " + std::to_string(i) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw plan_error("malformed JSON: " + cut(json_what(e), 200));
  }
}

/// Reads a whole file ("-": standard input) for the input named `field`; a missing file, a
/// directory, a read error or more than `max_input_bytes` is a plan_error naming `field`.
inline std::string read_file(const std::string& path, const std::string& field,
                             const char* what = "file") {
  std::istream* in = nullptr;
  std::ifstream f;
  if (path == "-") {
#if defined(__linux__) || defined(__APPLE__)
    // a directory redirected to standard input reads as nothing at all
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/stdin", ec))
      throw plan_error(field + ": standard input is a directory, not a " + what);
#endif
    in = &std::cin;
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw plan_error(field + ": '" + cut(path) + "' is a directory, not a " + what);
    f.open(path, std::ios::binary);
    if (!f)
      throw plan_error(field + ": cannot open " + (what == std::string_view("file") ? "" : what) +
                       (what == std::string_view("file") ? "'" : " '") + cut(path) + "'");
    in = &f;
  }
  std::string out;
  try {
    char buf[1 << 16];
    while (in->read(buf, sizeof buf) || in->gcount() > 0) {
      out.append(buf, static_cast<std::size_t>(in->gcount()));
      if (out.size() > max_input_bytes)
        throw plan_error(field + ": '" + cut(path) + "' is larger than " +
                         std::to_string(max_input_bytes >> 20) + " MiB");
      if (!*in) break;
    }
    if (in->bad()) throw plan_error(field + ": cannot read '" + cut(path) + "'");
  } catch (const std::ios_base::failure&) {
    throw plan_error(field + ": cannot read '" + cut(path) + "'");
  }
  if (path == "-" && out.empty()) throw plan_error(field + ": standard input is empty");
  return out;
}

/// A name as compared with the names an input may give: lower case, '-', '.' and ' ' as '_'.
inline std::string spelling(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == '-' || c == ' ' || c == '.') c = '_';
  }
  return out;
}

/// The edit distance between `a` and `b`: insertions, deletions, substitutions and swaps of
/// two neighbouring letters ("bf61" is one from "bf16"; the optimal-string-alignment distance).
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> d((n + 1) * (m + 1));
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
  for (std::size_t i = 0; i <= n; ++i) at(i, 0) = i;
  for (std::size_t j = 0; j <= m; ++j) at(0, j) = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      at(i, j) = std::min(
          {at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
    }
  return at(n, m);
}

/// The name among `names` closest to `s` in spelling (`spelling`, `edit_distance`), when it is
/// close enough to be what was meant (at most a third of the longer name's letters, and 3), or
/// the one `s` starts or ends with; "" otherwise.
template <class Names>
std::string closest_name(std::string_view s, const Names& names) {
  const std::string want = spelling(s.substr(0, 64));
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  for (const auto& n : names) {
    const std::string have = spelling(std::string_view(n));
    const std::size_t d = edit_distance(want, have);
    const std::size_t room = std::min<std::size_t>(3, std::max(want.size(), have.size()) / 3);
    const bool part =
        have.size() >= 4 && (want.rfind(have, 0) == 0 ||
                             (want.size() >= have.size() &&
                              want.compare(want.size() - have.size(), have.size(), have) == 0));
    if ((d <= room || part) && d < best_d) {
      best = std::string(std::string_view(n));
      best_d = d;
    }
  }
  return best;
}

/// "; did you mean \"x\"?" for the closest of `names`, or "".
template <class Names>
std::string did_you_mean(std::string_view s, const Names& names) {
  const std::string c = closest_name(s, names);
  return c.empty() ? std::string() : "; did you mean \"" + c + "\"?";
}

inline std::string show(const json& j) {
  if (j.is_string()) return json(cut(j.get_ref<const std::string&>(), 37)).dump();
  std::string s = j.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

/// A boolean field: `fallback` when absent, an error naming the field when not true/false.
inline bool flag_field(const json& obj, const std::string& path, const char* key, bool fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_boolean()) fail(path + "." + key, "must be true or false (got " + show(*it) + ")");
  return it->get<bool>();
}

/// A field naming one of `values`: `fallback` when absent, an error listing them otherwise.
template <class E>
E enum_field(const json& obj, const std::string& path, const char* key, E fallback,
             std::initializer_list<std::pair<const char*, E>> values) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  std::string known;
  std::vector<std::string_view> names;
  if (it->is_string()) {
    // the value as written, in any case and with '-' for '_' ("AdamW", "paged-adamw"), or a
    // common name of a number format ("bfloat16", "float16", "float32", as torch spells them)
    std::string got = spelling(it->get<std::string>());
    if (got.rfind("torch_", 0) == 0) got = got.substr(6);
    static constexpr std::pair<const char*, const char*> aliases[] = {
        {"bfloat16", "bf16"}, {"float16", "fp16"}, {"half", "fp16"},
        {"float32", "fp32"},  {"float", "fp32"},   {"float8", "fp8"}};
    for (const auto& [alias, name] : aliases)
      if (got == alias) got = name;
    for (const auto& [n, v] : values)
      if (got == spelling(n)) return v;
  }
  for (const auto& [n, v] : values) {
    known += (known.empty() ? "\"" : ", \"") + std::string(n) + "\"";
    names.push_back(n);
  }
  fail(path + "." + key,
       "must be one of " + known + " (got " + show(*it) +
           (it->is_string() ? did_you_mean(it->get<std::string>(), names) : std::string()) + ")");
}

inline const json& require(const json& obj, const std::string& path, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(path + "." + key, "missing (required)");
  return *it;
}

inline void only_keys(const json& obj, const std::string& path,
                      std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) fail(path, "must be a JSON object (got " + show(obj) + ")");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      const std::string hint = closest_name(it.key(), allowed);
      fail(path + "." + cut(it.key()),
           "unknown field" + (hint.empty() ? std::string() : " (did you mean \"" + hint + "\"?)"));
    }
  }
}

inline int get_int(const json& v, const std::string& path, long long lo, long long hi) {
  if (!v.is_number()) fail(path, "must be a number (got " + show(v) + ")");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d))
    fail(path, "must be an integer (got " + show(v) + ")");
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
    fail(path, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "] (got " + show(v) + ")");
  return static_cast<int>(d);
}

inline int int_field(const json& obj, const std::string& path, const char* key, long long lo,
                     long long hi, int fallback, bool required = false) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) fail(path + "." + key, "missing (required)");
    return fallback;
  }
  return get_int(*it, path + "." + key, lo, hi);
}

inline double num_field(const json& obj, const std::string& path, const char* key, double lo,
                        double hi, double fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_number() || !std::isfinite(it->get<double>()))
    fail(path + "." + key, "must be a number (got " + show(*it) + ")");
  const double d = it->get<double>();
  if (d < lo || d > hi)
    fail(path + "." + key,
         "must lie in [" + json(lo).dump() + ", " + json(hi).dump() + "] (got " + show(*it) + ")");
  return d;
}

inline std::string str_field(const json& obj, const std::string& path, const char* key,
                             const char* fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (fallback == nullptr) fail(path + "." + key, "missing (required)");
    return fallback;
  }
  if (!it->is_string()) fail(path + "." + key, "must be a string (got " + show(*it) + ")");
  return it->get<std::string>();
}

/// One copy, for the life of the program, of a name read from an input: the library's value
/// types (`device`, `transformer`) hold views of their names. Equal names share one copy.
inline std::string_view intern(const std::string& name) {
  static std::mutex m;
  static std::set<std::string, std::less<>> names;
  const std::lock_guard<std::mutex> lock(m);
  return *names.insert(name).first;
}

/// The largest parallel degree or device count a scenario may give (2^24, as `max_devices`).
inline constexpr long long max_degree = 1 << 24;

}  // namespace strata::io::detail
