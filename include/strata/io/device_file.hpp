#pragma once
/// @file io/device_file.hpp
/// @brief A device datasheet as JSON: what `"device"` accepts besides a preset's name (inline, or
/// a `.json` file's path), what `tools/devices/*.json` hold and `strata --list-gpus` prints.
///
/// Schema (docs/devices.md): {"name": "RTX-4090-24GB", "memory_GiB": 24 (or "memory_GB", or
/// "memory_bytes"; exactly one), "memory_bandwidth_GBps": 1008, "tflops": {"fp32": 82.6 (required),
/// "tf32", "fp16", "bf16", "fp8", "int8" (dense; 0 or absent: no fast path)}, "sms": 128,
/// "compute_capability": "8.9", "clock_MHz": 2520, "l2_MiB": 72, "link_GBps": 32, "key" and
/// "source" (text, kept for people)}. Every error names the field and why, e.g.
/// `cluster.device.tflops.bf16: must lie in [0, 1e+06] TFLOP/s (got -1)`.
/// @code
/// const strata::device d = strata::io::device_from_json(nlohmann::json::parse(
///     R"({"name": "my-gpu", "memory_GiB": 24, "memory_bandwidth_GBps": 1008,
///         "tflops": {"fp32": 82.6, "bf16": 165.2}, "sms": 128})"), "device");
/// @endcode

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/hardware/device.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/json.hpp"

namespace strata::io {

/// A device name read at run time, kept for the program's life (`detail::intern`): a `device`
/// (and a `cluster`) holds a view of its name.
inline std::string_view intern_device_name(const std::string& name) { return detail::intern(name); }

namespace detail {
inline constexpr double bytes_per_gib = 1073741824.0;
inline constexpr double bytes_per_mib = 1048576.0;

/// A number field of a datasheet in [lo, hi]; `fallback` when absent and not `required`.
inline double sheet_number(const json& o, const std::string& path, const char* key, double lo,
                           double hi, const char* unit, double fallback, bool required = false) {
  const auto it = o.find(key);
  const std::string at = path + "." + key;
  if (it == o.end()) {
    if (required) fail(at, "missing (required)");
    return fallback;
  }
  if (!it->is_number() || !std::isfinite(it->get<double>()))
    fail(at, std::string("must be a number of ") + unit + " (got " + show(*it) + ")");
  const double v = it->get<double>();
  if (v < lo || v > hi)
    fail(at, "must lie in [" + json(lo).dump() + ", " + json(hi).dump() + "] " + unit + " (got " +
                 show(*it) + ")");
  return v;
}

/// "8.9" or 8.9 -> 89; an error naming the field otherwise.
inline int compute_capability(const json& v, const std::string& at) {
  const std::string why =
      "must be a CUDA compute capability \"major.minor\" such as \"8.9\" (got " + show(v) + ")";
  double x = 0;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const auto dot = s.find('.');
    if (s.empty() || s.size() > 5 || dot == std::string::npos || dot == 0 || dot + 2 != s.size())
      fail(at, why);
    for (std::size_t i = 0; i < s.size(); ++i)
      if (i != dot && (s[i] < '0' || s[i] > '9')) fail(at, why);
    x = std::stoi(s.substr(0, dot)) * 10 + (s[dot + 1] - '0');
  } else if (v.is_number() && std::isfinite(v.get<double>())) {
    x = std::round(v.get<double>() * 10);
    if (std::abs(x - v.get<double>() * 10) > 1e-6) fail(at, why);
  } else {
    fail(at, why);
  }
  if (x < 10 || x > 199) fail(at, why);
  return static_cast<int>(x);
}
}  // namespace detail

/// Reads a datasheet object; `path` names it in errors ("cluster.device").
inline device device_from_json(const nlohmann::json& j, const std::string& path) {
  namespace d = detail;
  d::only_keys(j, path,
               {"name", "key", "source", "memory_GiB", "memory_GB", "memory_bytes",
                "memory_bandwidth_GBps", "tflops", "sms", "compute_capability", "clock_MHz",
                "l2_MiB", "link_GBps", "power_W", "power_limit_W"});
  device dev;
  const std::string name = d::str_field(j, path, "name", nullptr);
  if (name.empty() || name.size() > 64) d::fail(path + ".name", "must have 1 to 64 characters");
  dev.name = intern_device_name(name);
  if (j.contains("key")) (void)d::str_field(j, path, "key", "");
  if (j.contains("source")) (void)d::str_field(j, path, "source", "");
  const int given = static_cast<int>(j.contains("memory_GiB")) +
                    static_cast<int>(j.contains("memory_GB")) +
                    static_cast<int>(j.contains("memory_bytes"));
  if (given != 1)
    d::fail(path + ".memory_GiB",
            given == 0 ? "missing (required: memory_GiB, memory_GB or memory_bytes)"
                       : "give the memory once: memory_GiB, memory_GB or memory_bytes");
  if (j.contains("memory_GiB"))
    dev.memory =
        bytes{d::sheet_number(j, path, "memory_GiB", 1e-3, 1e6, "GiB", 0) * d::bytes_per_gib};
  else if (j.contains("memory_GB"))
    dev.memory = bytes{d::sheet_number(j, path, "memory_GB", 1e-3, 1e6, "GB", 0) * 1e9};
  else
    dev.memory = bytes{d::sheet_number(j, path, "memory_bytes", 1e6, 1e15, "bytes", 0)};
  dev.memory_bandwidth = byte_rate{
      d::sheet_number(j, path, "memory_bandwidth_GBps", 1e-3, 1e6, "GB/s", 0, true) * 1e9};
  const nlohmann::json& t = d::require(j, path, "tflops");
  const std::string tp = path + ".tflops";
  d::only_keys(t, tp, {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"});
  auto rate = [&](const char* k, bool required) {
    const double lo = required ? 1e-6 : 0.0;
    return flop_rate{d::sheet_number(t, tp, k, lo, 1e6, "TFLOP/s", 0, required) * 1e12};
  };
  dev.fp32 = rate("fp32", true);
  dev.tf32 = rate("tf32", false);
  dev.fp16 = rate("fp16", false);
  dev.bf16 = rate("bf16", false);
  dev.fp8 = rate("fp8", false);
  dev.int8 = rate("int8", false);
  dev.sms = d::int_field(j, path, "sms", 0, 100000, 0);
  if (j.contains("compute_capability"))
    dev.arch = d::compute_capability(j["compute_capability"], path + ".compute_capability");
  dev.clock_mhz = d::sheet_number(j, path, "clock_MHz", 0, 1e5, "MHz", 0);
  dev.l2 = bytes{d::sheet_number(j, path, "l2_MiB", 0, 1e6, "MiB", 0) * d::bytes_per_mib};
  dev.link = byte_rate{d::sheet_number(j, path, "link_GBps", 0, 1e6, "GB/s", 0) * 1e9};
  dev.power_w = d::sheet_number(j, path, "power_W", 0, 1e5, "W", 0);
  dev.power_limit_w = d::sheet_number(j, path, "power_limit_W", 0, 1e5, "W", 0);
  try {
    (void)power_clock_share(dev);
  } catch (const plan_error& e) {
    d::fail(path + ".power_limit_W", e.what());
  }
  return dev;
}

/// Reads a datasheet file; errors name `path` and the file ("cluster.device: 'gpu.json': ...").
inline device device_from_file(const std::string& file, const std::string& path) {
  const std::string text = detail::read_file(file, path, "device file");
  try {
    return device_from_json(detail::parse_json(text), "device");
  } catch (const plan_error& e) {
    detail::fail(path + ": '" + detail::cut(file) + "'", e.what());
  }
}

/// A datasheet as JSON (the schema `device_from_json` reads; `key` and `source` when given).
/// Rates are written in the units the schema names, rounded to 1e-6 of them.
inline nlohmann::json device_to_json(const device& dev, std::string_view key = {},
                                     std::string_view source = {}) {
  const auto round6 = [](double v) { return std::round(v * 1e6) / 1e6; };
  nlohmann::json j;
  j["name"] = std::string(dev.name);
  if (!key.empty()) j["key"] = std::string(key);
  const double m = dev.memory.count();
  if (m / detail::bytes_per_gib == std::floor(m / detail::bytes_per_gib))
    j["memory_GiB"] = m / detail::bytes_per_gib;
  else if (m / 1e9 == std::floor(m / 1e9) && std::floor(m / 1e9) * 1e9 == m)
    j["memory_GB"] = m / 1e9;
  else
    j["memory_bytes"] = m;
  j["memory_bandwidth_GBps"] = round6(dev.memory_bandwidth.count() / 1e9);
  nlohmann::json t;
  t["fp32"] = round6(dev.fp32.count() / 1e12);
  const std::pair<const char*, flop_rate> optional[] = {{"tf32", dev.tf32},
                                                        {"fp16", dev.fp16},
                                                        {"bf16", dev.bf16},
                                                        {"fp8", dev.fp8},
                                                        {"int8", dev.int8}};
  for (const auto& [k, v] : optional)
    if (v.count() > 0) t[k] = round6(v.count() / 1e12);
  j["tflops"] = t;
  if (dev.sms > 0) j["sms"] = dev.sms;
  if (dev.arch > 0)
    j["compute_capability"] = std::to_string(dev.arch / 10) + "." + std::to_string(dev.arch % 10);
  if (dev.clock_mhz > 0) j["clock_MHz"] = dev.clock_mhz;
  if (dev.l2.count() > 0) j["l2_MiB"] = round6(dev.l2.count() / detail::bytes_per_mib);
  if (dev.link.count() > 0) j["link_GBps"] = round6(dev.link.count() / 1e9);
  if (dev.power_w > 0) j["power_W"] = dev.power_w;
  if (dev.power_limit_w > 0) j["power_limit_W"] = dev.power_limit_w;
  if (!source.empty()) j["source"] = std::string(source);
  return j;
}

/// Whether two devices have the same datasheet figures a prediction reads (memory, its
/// bandwidth, the dense peaks), up to rounding: what a profile's device is compared by.
inline bool same_figures(const device& a, const device& b) {
  const auto same = [](double x, double y) {
    return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y));
  };
  return same(a.memory.count(), b.memory.count()) &&
         same(a.memory_bandwidth.count(), b.memory_bandwidth.count()) &&
         same(a.fp32.count(), b.fp32.count()) && same(a.tf32.count(), b.tf32.count()) &&
         same(a.fp16.count(), b.fp16.count()) && same(a.bf16.count(), b.bf16.count()) &&
         same(a.fp8.count(), b.fp8.count());
}

/// "24.00 GiB, 1008 GB/s, 165.2 TFLOP/s bf16": the figures `same_figures` compares, for errors.
inline std::string describe_figures(const device& d) {
  char line[160];
  std::snprintf(line, sizeof line, "%.2f GiB, %.0f GB/s, %.1f TFLOP/s bf16",
                d.memory.count() / detail::bytes_per_gib, d.memory_bandwidth.count() / 1e9,
                d.peak(dtype::bf16).count() / 1e12);
  return line;
}

/// The device presets as datasheets, in `presets::device_catalogue`'s order.
inline nlohmann::json device_catalogue_json() {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : presets::device_catalogue)
    a.push_back(device_to_json(*e.dev, e.key, e.source));
  return a;
}

}  // namespace strata::io
