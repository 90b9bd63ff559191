#pragma once
/// @file io/scenario.hpp
/// @brief Scenarios as JSON (model, cluster, strategy, training) and reports as JSON or a table.
///
/// Needs nlohmann/json (target `strata::io`). Every error is a `plan_error` whose message starts
/// with the path of the offending field, e.g. "strategy.p: must be an integer >= 1 (got 0)".
/// The schema is documented in docs/cli.md.
/// @code
/// auto s = strata::io::parse_scenario(nlohmann::json::parse(R"({"model": "resnet50",
///   "cluster": {"preset": "abci", "devices": 16}, "parallel": {"kind": "data", "p": 16},
///   "training": {"batch": 256}})"));
/// auto r = strata::io::evaluate(s);
/// @endcode

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <ios>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/analytic/evaluate.hpp"
#include "strata/analytic/yan.hpp"
#include "strata/error.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/model/model.hpp"
#include "strata/model/zoo.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/search/yan_optimizer.hpp"
#include "strata/training.hpp"

namespace strata::io {

/// A parameter-server scenario (Yan et al.): one configuration, or a search for the best.
struct ps_request {
  bool search = false;
  yan::system system;
  int threads = 16;
  std::vector<yan::layer_split> layers;  ///< empty: every layer on all workers
  search::yan_space space;
};

/// A parsed scenario; owns its layers.
struct scenario {
  std::string model_name;
  std::vector<layer> layers;
  cluster machine;
  parallel::any_strategy strategy;
  training setup;
  std::vector<layer_time> profiled;  ///< optional per-layer FW/BW/WU times
  std::optional<ps_request> ps;      ///< set for the parameter-server strategies
};

/// The scenario `strata` runs when given no input: ResNet-50, data parallelism on 64 ABCI GPUs,
/// 16 samples per GPU, one ImageNet epoch.
inline constexpr std::string_view default_scenario = R"({
  "model": "resnet50",
  "cluster": {"preset": "abci", "devices": 64},
  "parallel": {"kind": "data", "p": 64},
  "training": {"batch": 1024, "dataset": 1281167, "precision": "fp32", "optimizer": "sgd",
               "efficiency": 0.5}
})";

namespace detail {

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
  return out;
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
  if (it->is_string())
    for (const auto& [n, v] : values)
      if (it->get<std::string>() == n) return v;
  for (const auto& [n, v] : values)
    known += (known.empty() ? "\"" : ", \"") + std::string(n) + "\"";
  fail(path + "." + key, "must be one of " + known + " (got " + show(*it) + ")");
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
    if (!ok) fail(path + "." + cut(it.key()), "unknown field");
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

constexpr long long max_degree = 1 << 24;  // 16M devices

template <std::size_t N>
std::vector<layer> to_vector(const model<N>& m) {
  return {m.layers.begin(), m.layers.end()};
}

inline std::vector<layer> zoo_model(const std::string& name, const std::string& path) {
  if (name == "resnet50") return to_vector(zoo::resnet50());
  if (name == "resnet152") return to_vector(zoo::resnet152());
  if (name == "vgg16") return to_vector(zoo::vgg16());
  if (name == "cosmoflow") return to_vector(zoo::cosmoflow());
  if (name == "megatron-2.5b") return to_vector(zoo::megatron_2_5b());
  if (name == "mnist-adam") return to_vector(zoo::mnist_adam());
  if (name == "imagenet22k-adam") return to_vector(zoo::imagenet22k_adam());
  fail(path, "unknown model \"" + cut(name) +
                 "\" (known CNNs: resnet50, resnet152, vgg16, cosmoflow, megatron-2.5b, "
                 "mnist-adam, imagenet22k-adam; transformers: docs/cli.md, e.g. gpt3-175b)");
}

inline layer parse_layer(const json& j, const std::string& path, shape in) {
  const std::string type = str_field(j, path, "type", nullptr);
  constexpr long long big = 1 << 30;
  if (type == "conv") {
    only_keys(j, path, {"type", "filters", "kernel", "stride", "padding", "bias"});
    conv c{int_field(j, path, "filters", 1, big, 1, true),
           int_field(j, path, "kernel", 1, 4096, 1, true), int_field(j, path, "stride", 1, 4096, 1),
           int_field(j, path, "padding", -1, 4096, -1), flag_field(j, path, "bias", false)};
    return c.apply(in);
  }
  if (type == "linear") {
    only_keys(j, path, {"type", "features", "bias"});
    return linear{int_field(j, path, "features", 1, big, 1, true),
                  flag_field(j, path, "bias", true)}
        .apply(in);
  }
  if (type == "max_pool" || type == "pool") {
    only_keys(j, path, {"type", "kernel", "stride", "padding"});
    const int k = int_field(j, path, "kernel", 1, 4096, 2, true);
    return max_pool{k, int_field(j, path, "stride", 1, 4096, k),
                    int_field(j, path, "padding", 0, 4096, 0)}
        .apply(in);
  }
  if (type == "global_avg_pool") {
    only_keys(j, path, {"type"});
    return global_avg_pool{}.apply(in);
  }
  if (type == "batch_norm") {
    only_keys(j, path, {"type"});
    return batch_norm{}.apply(in);
  }
  if (type == "layer_norm") {
    only_keys(j, path, {"type"});
    return layer_norm{}.apply(in);
  }
  if (type == "relu" || type == "elementwise") {
    only_keys(j, path, {"type", "flops_per_element"});
    return elementwise{num_field(j, path, "flops_per_element", 0.0, 1e6, 1.0)}.apply(in);
  }
  fail(path + ".type", "unknown layer type \"" + cut(type) +
                           "\" (known: conv, linear, max_pool, global_avg_pool, batch_norm, "
                           "layer_norm, relu, elementwise)");
}

inline void parse_model(const json& j, scenario& s) {
  if (j.is_string()) {
    s.model_name = j.get<std::string>();
    s.layers = zoo_model(s.model_name, "model");
    return;
  }
  only_keys(j, "model", {"name", "zoo", "input", "layers"});
  if (j.contains("zoo")) {
    if (j.contains("layers")) fail("model", "give either \"zoo\" or \"layers\", not both");
    s.model_name = str_field(j, "model", "zoo", nullptr);
    s.layers = zoo_model(s.model_name, "model.zoo");
    return;
  }
  s.model_name = str_field(j, "model", "name", "custom");
  const json& in = require(j, "model", "input");
  shape cur;
  if (!in.is_object()) fail("model.input", "must be an object {\"c\", \"d\", \"h\", \"w\"}");
  only_keys(in, "model.input", {"c", "d", "h", "w"});
  constexpr long long big = 1 << 30;
  cur = {int_field(in, "model.input", "c", 1, big, 1, true),
         int_field(in, "model.input", "d", 1, big, 1), int_field(in, "model.input", "h", 1, big, 1),
         int_field(in, "model.input", "w", 1, big, 1)};
  const json& ls = require(j, "model", "layers");
  if (!ls.is_array() || ls.empty()) fail("model.layers", "must be a non-empty array");
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const std::string path = "model.layers[" + std::to_string(i) + "]";
    try {
      s.layers.push_back(parse_layer(ls[i], path, cur));
    } catch (const plan_error& e) {
      const std::string what = e.what();
      if (what.rfind("model.", 0) == 0) throw;
      fail(path, what);
    }
    cur = s.layers.back().out;
  }
}

inline device parse_device(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "must be a device name (got " + show(j) + ")");
  const std::string name = j.get<std::string>();
  if (name == "v100-16gb") return presets::v100_sxm2_16gb;
  if (name == "v100-32gb") return presets::v100_sxm2_32gb;
  if (name == "a100-40gb") return presets::a100_sxm4_40gb;
  if (name == "a100-80gb") return presets::a100_sxm4_80gb;
  if (name == "h100") return presets::h100_sxm5_80gb;
  if (name == "h200") return presets::h200_sxm_141gb;
  if (name == "titan-xp") return presets::titan_xp;
  if (name == "l40s") return presets::l40s_48gb;
  if (name == "gh200") return presets::gh200_96gb;
  if (name == "b200") return presets::b200_180gb;
  if (name == "mi300x") return presets::mi300x_192gb;
  fail(path, "unknown device \"" + cut(name) +
                 "\" (known: v100-16gb, v100-32gb, a100-40gb, a100-80gb, h100, h200, titan-xp, "
                 "l40s, gh200, b200, mi300x)");
}

inline cluster parse_cluster(const json& j) {
  if (j.is_string()) {
    const std::string p = j.get<std::string>();
    if (p == "hc1") return presets::hc1();
    if (p == "hc2") return presets::hc2();
    if (p == "hc3") return presets::hc3();
    fail("cluster", "\"" + cut(p) + "\" needs a device count: use {\"preset\": \"" + cut(p) +
                        "\", \"devices\": N} (presets without one: hc1, hc2, hc3)");
  }
  if (!j.is_object()) fail("cluster", "must be a preset name or an object");
  if (j.contains("preset")) {
    only_keys(j, "cluster", {"preset", "devices"});
    const std::string p = str_field(j, "cluster", "preset", nullptr);
    if (p == "hc1" || p == "hc2" || p == "hc3") {  // fixed sizes: a count given must match
      const cluster c = p == "hc1" ? presets::hc1() : p == "hc2" ? presets::hc2() : presets::hc3();
      const int n = int_field(j, "cluster", "devices", 1, max_degree, c.devices());
      if (n != c.devices())
        fail("cluster.devices", "preset \"" + p + "\" has " + std::to_string(c.devices()) +
                                    " GPUs (got " + std::to_string(n) + ")");
      return c;
    }
    const int n = int_field(j, "cluster", "devices", 1, max_degree, 0, true);
    if (p == "abci") return presets::abci(n);
    if (p == "yan-e5-2450") return presets::yan_cluster(n);
    // Node presets: `n` GPUs fill whole nodes; fewer than one node's worth use part of one node
    // (its fan-out shrinks); more must be a whole number of nodes, never rounded up silently.
    const auto nodes_of = [&](int per_node) {
      if (n > per_node && n % per_node != 0)
        fail("cluster.devices", "preset \"" + p + "\" has " + std::to_string(per_node) +
                                    " GPUs per node: devices must be at most " +
                                    std::to_string(per_node) + " or a multiple of it (got " +
                                    std::to_string(n) + ")");
      return n < per_node ? 1 : n / per_node;
    };
    const auto sized = [&](cluster c) {
      if (n < c.levels[0].fanout) c.levels[0].fanout = n;
      return c;
    };
    if (p == "dgx1-v100") return sized(presets::dgx1_v100(nodes_of(8)));
    if (p == "dgx-a100") return sized(presets::dgx_a100(nodes_of(8)));
    if (p == "dgx-a100-40gb") return sized(presets::dgx_a100_40gb(nodes_of(8)));
    if (p == "dgx-h100") return sized(presets::dgx_h100(nodes_of(8)));
    if (p == "dgx-h200") return sized(presets::dgx_h200(nodes_of(8)));
    if (p == "dgx-b200") return sized(presets::dgx_b200(nodes_of(8)));
    if (p == "mi300x-x8") return sized(presets::mi300x_platform(nodes_of(8)));
    if (p == "l40s-x8") return sized(presets::l40s_server(nodes_of(8)));
    if (p == "gh200-x4") return sized(presets::gh200_quad(nodes_of(4)));
    fail("cluster.preset", "unknown preset \"" + cut(p) +
                               "\" (known: abci, hc1, hc2, hc3, dgx1-v100, dgx-a100, "
                               "dgx-a100-40gb, dgx-h100, dgx-h200, dgx-b200, mi300x-x8, l40s-x8, "
                               "gh200-x4, yan-e5-2450)");
  }
  only_keys(j, "cluster", {"name", "device", "levels", "host"});
  const std::string dpath = "cluster.device";
  const json& d = require(j, "cluster", "device");
  if (!d.is_string()) fail(dpath, "must be a device name");
  const device dev = parse_device(d, dpath);
  const json& lv = require(j, "cluster", "levels");
  if (!lv.is_array() || lv.empty() || lv.size() > max_levels)
    fail("cluster.levels", "must be an array of 1 to 5 levels");
  cluster c{"custom", dev, {}, 0};
  long long total = 1;  // devices so far: each fan-out is at most 2^24, so no overflow
  for (std::size_t i = 0; i < lv.size(); ++i) {
    const std::string path = "cluster.levels[" + std::to_string(i) + "]";
    only_keys(lv[i], path,
              {"name", "fanout", "alpha_us", "bandwidth_GBps", "oversubscription", "rails", "kind",
               "switch_reduction"});
    level l;
    l.name = "level";
    l.fanout = int_field(lv[i], path, "fanout", 1, max_degree, 1, true);
    l.pair.alpha = seconds{num_field(lv[i], path, "alpha_us", 0.0, 1e6, 0.0) * 1e-6};
    if (!lv[i].contains("bandwidth_GBps")) fail(path + ".bandwidth_GBps", "missing (required)");
    l.pair.bandwidth = byte_rate{num_field(lv[i], path, "bandwidth_GBps", 1e-6, 1e6, 1.0) * 1e9};
    l.oversubscription = num_field(lv[i], path, "oversubscription", 1.0, 1e3, 1.0);
    // what NCCL's tuner reads (comm/nccl.hpp): the link kind of the node level, the parallel
    // links (NICs) a group drives across a level, NVLink SHARP in the switch
    l.rails = int_field(lv[i], path, "rails", 1, 64, 1);
    l.kind = enum_field(lv[i], path, "kind", i == 0 ? link_kind::nvlink : link_kind::network,
                        {{"nvlink", link_kind::nvlink},
                         {"pcie", link_kind::pcie},
                         {"network", link_kind::network}});
    l.switch_reduction = flag_field(lv[i], path, "switch_reduction", false);
    if (l.switch_reduction && l.kind != link_kind::nvlink)
      fail(path + ".switch_reduction", "needs an NVLink switch (kind \"nvlink\")");
    total *= l.fanout;
    if (total > max_devices)
      fail(path + ".fanout",
           "the cluster would hold more than 2^24 devices (the product of the fan-outs)");
    c.levels[i] = l;
    ++c.depth;
  }
  if (auto h = j.find("host"); h != j.end()) {
    // the node's host, for ZeRO-Offload and ZeRO-Infinity (`host_side`)
    const std::string path = "cluster.host";
    if (!h->is_object()) fail(path, "must be an object (got " + show(*h) + ")");
    only_keys(*h, path, {"pcie_GBps", "cpu_adam_params_per_s", "nvme_GBps", "dram_GiB"});
    c.host.pcie = byte_rate{num_field(*h, path, "pcie_GBps", 0.0, 1e4, 0.0) * 1e9};
    c.host.optimizer = num_field(*h, path, "cpu_adam_params_per_s", 0.0, 1e15,
                                 h->contains("pcie_GBps") ? cpu_adam_rate : 0.0);
    c.host.nvme = byte_rate{num_field(*h, path, "nvme_GBps", 0.0, 1e4, 0.0) * 1e9};
    c.host.capacity = bytes{num_field(*h, path, "dram_GiB", 0.0, 1e7, 0.0) * 1024.0 * 1024 * 1024};
  }
  return c;
}

inline ps_request parse_ps(const json& j, bool search, const std::string& path = "strategy") {
  ps_request r;
  r.search = search;
  if (search) {
    only_keys(j, path, {"kind", "threads", "replicate_layers", "read_period", "write_period"});
    if (j.contains("threads")) {
      const json& t = j["threads"];
      if (!t.is_array() || t.empty()) fail(path + ".threads", "must be a non-empty array");
      r.space.threads.clear();
      for (std::size_t i = 0; i < t.size(); ++i)
        r.space.threads.push_back(
            get_int(t[i], path + ".threads[" + std::to_string(i) + "]", 1, 1024));
    }
    if (j.contains("replicate_layers")) {
      if (!j["replicate_layers"].is_boolean())
        fail(path + ".replicate_layers", "must be true or false");
      r.space.replicate_layers = j["replicate_layers"].get<bool>();
    }
    r.space.read_period = int_field(j, path, "read_period", 1, 1 << 30, 70);
    r.space.write_period = int_field(j, path, "write_period", 1, 1 << 30, 40);
    return r;
  }
  only_keys(j, path,
            {"kind", "servers", "replicas", "workers", "threads", "read_period", "write_period",
             "layers"});
  r.system = {int_field(j, path, "servers", 1, max_degree, 1, true),
              int_field(j, path, "replicas", 1, max_degree, 1, true),
              int_field(j, path, "workers", 1, max_degree, 1, true),
              int_field(j, path, "read_period", 1, 1 << 30, 70),
              int_field(j, path, "write_period", 1, 1 << 30, 40)};
  r.threads = int_field(j, path, "threads", 1, 1024, 16);
  if (j.contains("layers")) {
    const json& ls = j["layers"];
    if (!ls.is_array() || ls.empty()) fail(path + ".layers", "must be a non-empty array");
    for (std::size_t i = 0; i < ls.size(); ++i) {
      const std::string lp = path + ".layers[" + std::to_string(i) + "]";
      only_keys(ls[i], lp, {"partitions", "threads", "replicas"});
      r.layers.push_back({int_field(ls[i], lp, "partitions", 1, max_degree, 1),
                          int_field(ls[i], lp, "threads", 1, 1024, r.threads),
                          int_field(ls[i], lp, "replicas", 1, max_degree, 1)});
    }
  }
  return r;
}

/// `path`: the scenario key the strategy was given under ("parallel" or "strategy").
inline parallel::any_strategy parse_strategy(const json& j, const std::string& path = "strategy") {
  if (!j.is_object()) fail(path, "must be an object with a \"kind\"");
  const std::string kind = str_field(j, path, "kind", nullptr);
  auto deg = [&](const char* key) { return int_field(j, path, key, 1, max_degree, 1, true); };
  auto opt = [&](const char* key) { return int_field(j, path, key, 1, max_degree, 1); };
  if (kind == "serial") {
    only_keys(j, path, {"kind"});
    return parallel::serial{};
  }
  if (kind == "data") {
    only_keys(j, path, {"kind", "p"});
    return parallel::data{deg("p")};
  }
  if (kind == "filter") {
    only_keys(j, path, {"kind", "p"});
    return parallel::filter{deg("p")};
  }
  if (kind == "channel") {
    only_keys(j, path, {"kind", "p"});
    return parallel::channel{deg("p")};
  }
  if (kind == "pipeline") {
    only_keys(j, path, {"kind", "p", "segments"});
    return parallel::pipeline{deg("p"), opt("segments")};
  }
  if (kind == "spatial") {
    only_keys(j, path, {"kind", "p", "ph", "pw", "pd"});
    if (j.contains("p") && (j.contains("ph") || j.contains("pw") || j.contains("pd")))
      fail(path, "give either \"p\" (split the height) or \"ph\"/\"pw\"/\"pd\", not both");
    if (j.contains("p")) return parallel::spatial{deg("p"), 1, 1};
    return parallel::spatial{opt("ph"), opt("pw"), opt("pd")};
  }
  if (kind == "data+filter") {
    only_keys(j, path, {"kind", "p1", "p2"});
    return parallel::data_filter{deg("p1"), deg("p2")};
  }
  if (kind == "data+spatial") {
    only_keys(j, path, {"kind", "p1", "p2", "ph", "pw", "pd"});
    if (j.contains("p2") && (j.contains("ph") || j.contains("pw") || j.contains("pd")))
      fail(path, "give either \"p2\" (split the height) or \"ph\"/\"pw\"/\"pd\", not both");
    if (j.contains("p2")) return parallel::data_spatial{deg("p1"), {deg("p2"), 1, 1}};
    return parallel::data_spatial{deg("p1"), {opt("ph"), opt("pw"), opt("pd")}};
  }
  fail(path + ".kind", "unknown strategy \"" + cut(kind) +
                           "\" (known: serial, data, spatial, pipeline, filter, channel, "
                           "data+filter, data+spatial, parameter-server, "
                           "parameter-server-search)");
}

inline training parse_training(const json& j, bool needs_batch = true) {
  only_keys(j, "training", {"batch", "dataset", "precision", "optimizer", "efficiency"});
  training t;
  t.batch = int_field(j, "training", "batch", 1, 1LL << 30, 1, needs_batch);
  t.dataset = num_field(j, "training", "dataset", 0.0, 1e15, 0.0);
  const std::string prec = str_field(j, "training", "precision", "fp32");
  if (prec == "fp32")
    t.precision = precision_mode::fp32;
  else if (prec == "tf32")
    t.precision = precision_mode::tf32;
  else if (prec == "fp16")
    t.precision = precision_mode::fp16;
  else if (prec == "bf16")
    t.precision = precision_mode::bf16;
  else if (prec == "fp8")
    t.precision = precision_mode::fp8;
  else
    fail("training.precision",
         "unknown precision \"" + cut(prec) + "\" (known: fp32, tf32, fp16, bf16, fp8)");
  const std::string opt = str_field(j, "training", "optimizer", "sgd");
  if (opt == "sgd")
    t.optim = optimizer::sgd;
  else if (opt == "momentum")
    t.optim = optimizer::momentum;
  else if (opt == "adam")
    t.optim = optimizer::adam;
  else
    fail("training.optimizer",
         "unknown optimizer \"" + cut(opt) + "\" (known: sgd, momentum, adam)");
  t.efficiency = num_field(j, "training", "efficiency", 1e-6, 1.0, 0.5);
  return t;
}

/// The longest profiled per-layer time: 1e6 s (so that no sum over a batch overflows).
inline constexpr double max_layer_time = 1e6;

inline std::vector<layer_time> parse_times(const json& j, std::size_t n) {
  if (!j.is_array()) fail("layer_times", "must be an array of [fw_s, bw_s, wu_s] per layer");
  if (j.size() != n)
    fail("layer_times", "has " + std::to_string(j.size()) + " entries but the model has " +
                            std::to_string(n) + " layers");
  std::vector<layer_time> v;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string path = "layer_times[" + std::to_string(i) + "]";
    const json& e = j[i];
    if (!e.is_array() || e.size() != 3) fail(path, "must be [fw_s, bw_s, wu_s]");
    double t[3];
    for (int k = 0; k < 3; ++k) {
      if (!e[k].is_number() || !std::isfinite(e[k].get<double>()) || e[k].get<double>() < 0 ||
          e[k].get<double>() > max_layer_time)
        fail(path, "times must be numbers of seconds in [0, 1e6]");
      t[k] = e[k].get<double>();
    }
    v.push_back({seconds{t[0]}, seconds{t[1]}, seconds{t[2]}});
  }
  return v;
}

}  // namespace detail

/// Reads a scenario; throws `plan_error` naming the field on any mistake.
inline scenario parse_scenario(const nlohmann::json& j) {
  using detail::require;
  detail::only_keys(j, "scenario",
                    {"model", "cluster", "parallel", "strategy", "training", "layer_times"});
  scenario s;
  detail::parse_model(require(j, "scenario", "model"), s);
  s.machine = detail::parse_cluster(require(j, "scenario", "cluster"));
  // "parallel" as every scenario says it; "strategy" is the older spelling
  if (j.contains("parallel") && j.contains("strategy"))
    detail::fail("scenario",
                 "give the strategy once: \"parallel\" (or the older spelling \"strategy\")");
  const std::string sk = j.contains("strategy") ? "strategy" : "parallel";
  const nlohmann::json& st = require(j, "scenario", sk.c_str());
  const std::string kind = st.is_object() && st.contains("kind") && st["kind"].is_string()
                               ? st["kind"].get<std::string>()
                               : std::string();
  if (kind == "parameter-server" || kind == "parameter-server-search") {
    s.ps = detail::parse_ps(st, kind == "parameter-server-search", sk);
    if (s.machine.name != presets::yan_cluster().name)
      detail::fail("cluster",
                   "parameter-server strategies use Yan et al.'s CPU cost model: use "
                   "{\"preset\": \"yan-e5-2450\", \"devices\": N}");
    if (!s.ps->layers.empty() && s.ps->layers.size() != yan::fold(s.layers).size())
      detail::fail(sk + ".layers", "needs one entry per weighted layer of the model (" +
                                       std::to_string(yan::fold(s.layers).size()) + ")");
  } else {
    s.strategy = detail::parse_strategy(st, sk);
  }
  const nlohmann::json& t = require(j, "scenario", "training");
  if (!t.is_object()) detail::fail("training", "must be a JSON object");
  s.setup = detail::parse_training(t, !s.ps);
  if (s.ps && !(s.setup.dataset > 0))
    detail::fail("training.dataset", "parameter-server scenarios need the samples per epoch");
  if (j.contains("layer_times"))
    s.profiled = detail::parse_times(j["layer_times"], s.layers.size());
  return s;
}

/// Parses JSON text; malformed JSON becomes a `plan_error` with nlohmann's position.
inline scenario parse_scenario_text(std::string_view text) {
  return parse_scenario(detail::parse_json(text));
}

/// Evaluates a parsed scenario with the closed-form (ParaDL) model.
inline report evaluate(const scenario& s) {
  return analytic::evaluate(s.layers, s.strategy, s.machine, s.setup, s.profiled);
}

/// The report as JSON; the schema is in docs/cli.md.
inline nlohmann::json to_json(const scenario& s, const report& r) {
  const time_breakdown& t = r.time;
  const memory_breakdown& m = r.memory;
  nlohmann::json j;
  j["model"] = s.model_name;
  j["cluster"] = std::string(s.machine.name);
  j["device"] = std::string(s.machine.dev.name);
  j["strategy"] = std::string(r.strategy);
  j["devices"] = r.devices;
  j["batch"] = r.batch;
  j["iteration_time_s"] = r.iteration_time().count();
  if (s.setup.dataset > 0) {
    j["iterations_per_epoch"] = r.iterations;
    j["epoch_time_s"] = r.epoch_time().count();
  }
  j["throughput_samples_per_s"] = r.throughput();
  j["time_s"] = {{"forward", t.forward.count()},
                 {"backward", t.backward.count()},
                 {"weight_update", t.optimizer.count()},
                 {"gradient_exchange", t.data_comm.count()},
                 {"layer_collectives", t.tensor_comm.count()},
                 {"halo_exchange", t.context_comm.count()},
                 {"pipeline_p2p", t.pipeline_p2p.count()},
                 {"compute", t.compute().count()},
                 {"communication", t.communication().count()}};
  j["memory_bytes"] = {{"weights", m.weights.count()},
                       {"gradients", m.gradients.count()},
                       {"optimizer_states", m.optimizer_states.count()},
                       {"activations", m.activations.count()},
                       {"other", m.other.count()},
                       {"peak", m.total().count()},
                       {"capacity", r.capacity.count()}};
  j["fits"] = r.fits();
  return j;
}

/// Evaluates a parameter-server scenario (Yan et al.) and returns its report as JSON.
inline nlohmann::json parameter_server_json(const scenario& s) {
  const ps_request& r = *s.ps;
  const auto net = yan::fold(s.layers);
  const yan::costs c = yan::e5_2450();
  const int machines = s.machine.devices();
  yan::system sys = r.system;
  std::vector<yan::layer_split> split = r.layers;
  if (r.search) {
    search::yan_space space = r.space;
    space.machines = machines;
    const auto best = [&] {
      try {
        return search::optimize_yan(net, c, space, s.setup.dataset);
      } catch (const plan_error& e) {
        const std::string what = e.what();
        if (what.rfind("--", 0) == 0) throw;  // a caller's own message (a time limit)
        throw plan_error("strategy: " + what);
      }
    }();
    sys = best.system;
    split = best.split;
  } else if (split.empty()) {
    split = yan::uniform(net, sys, r.threads);
  }
  const auto e = yan::evaluate(net, sys, split, c, s.setup.dataset, machines);
  nlohmann::json j;
  j["model"] = s.model_name;
  j["cluster"] = std::string(s.machine.name);
  j["device"] = std::string(s.machine.dev.name);
  j["strategy"] = r.search ? "parameter-server-search" : "parameter-server";
  j["machines"] = machines;
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : split)
    layers.push_back(
        {{"partitions", l.partitions}, {"threads", l.threads}, {"replicas", l.replicas}});
  j["configuration"] = {{"servers", sys.servers},           {"replicas", sys.replicas},
                        {"workers", sys.workers},           {"read_period", sys.read_period},
                        {"write_period", sys.write_period}, {"layers", layers}};
  j["samples_per_epoch"] = s.setup.dataset;
  j["epoch_time_s"] = e.epoch();
  j["throughput_samples_per_s"] = s.setup.dataset / e.epoch();
  j["time_s"] = {
      {"compute", e.compute}, {"communication", e.communication}, {"weight_reads", e.weight_reads}};
  return j;
}

/// The report of any scenario as JSON.
inline nlohmann::json report_json(const scenario& s) {
  if (s.ps) return parameter_server_json(s);
  return to_json(s, evaluate(s));
}

/// The report as an aligned table for people.
inline std::string to_table(const scenario& s, const report& r) {
  std::string out;
  char buf[160];
  auto row = [&](const char* k, double v, const char* unit) {
    std::snprintf(buf, sizeof buf, "  %-22s %14.6g %s\n", k, v, unit);
    out += buf;
  };
  std::snprintf(buf, sizeof buf, "%s on %s (%d x %s), %s parallelism, batch %d\n",
                s.model_name.c_str(), std::string(s.machine.name).c_str(), r.devices,
                std::string(s.machine.dev.name).c_str(), std::string(r.strategy).c_str(), r.batch);
  out += buf;
  out += "time per iteration\n";
  const time_breakdown& t = r.time;
  row("forward", t.forward.count(), "s");
  row("backward", t.backward.count(), "s");
  row("weight update", t.optimizer.count(), "s");
  row("gradient exchange", t.data_comm.count(), "s");
  row("layer collectives", t.tensor_comm.count(), "s");
  row("halo exchange", t.context_comm.count(), "s");
  row("pipeline p2p", t.pipeline_p2p.count(), "s");
  row("iteration", r.iteration_time().count(), "s");
  if (s.setup.dataset > 0) row("epoch", r.epoch_time().count(), "s");
  row("throughput", r.throughput(), "samples/s");
  out += "memory per device\n";
  const memory_breakdown& m = r.memory;
  row("weights", to_gib(m.weights), "GiB");
  row("gradients", to_gib(m.gradients), "GiB");
  row("optimizer states", to_gib(m.optimizer_states), "GiB");
  row("activations", to_gib(m.activations), "GiB");
  row("other", to_gib(m.other), "GiB");
  row("peak", to_gib(m.total()), "GiB");
  std::snprintf(buf, sizeof buf, "  %-22s %14.6g GiB (%s)\n", "capacity", to_gib(r.capacity),
                r.fits() ? "fits" : "DOES NOT FIT");
  out += buf;
  return out;
}

/// The report of any scenario as a table.
inline std::string report_table(const scenario& s) {
  if (!s.ps) return to_table(s, evaluate(s));
  const nlohmann::json j = parameter_server_json(s);
  const auto& cfg = j["configuration"];
  char buf[200];
  std::string out;
  std::snprintf(buf, sizeof buf,
                "%s on %s (%d machines), %s: %d workers x %d replicas + %d servers\n",
                s.model_name.c_str(), std::string(s.machine.name).c_str(), j["machines"].get<int>(),
                j["strategy"].get<std::string>().c_str(), cfg["workers"].get<int>(),
                cfg["replicas"].get<int>(), cfg["servers"].get<int>());
  out += buf;
  for (const char* k : {"compute", "communication", "weight_reads"}) {
    std::snprintf(buf, sizeof buf, "  %-22s %14.6g s\n", k, j["time_s"][k].get<double>());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "  %-22s %14.6g s\n  %-22s %14.6g samples/s\n", "epoch",
                j["epoch_time_s"].get<double>(), "throughput",
                j["throughput_samples_per_s"].get<double>());
  out += buf;
  return out;
}

}  // namespace strata::io
