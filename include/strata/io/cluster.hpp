#pragma once
/// @file io/cluster.hpp
/// @brief A scenario's `"cluster"`: a preset sized by its device count, or levels of links over a
/// named device, with the node's host for offloading. The schema is in docs/cli.md.
/// @code
/// const strata::cluster c = strata::io::detail::parse_cluster(
///     nlohmann::json::parse(R"({"preset": "dgx-h100", "devices": 64})"));
/// @endcode

#include <string>
#include <string_view>

#include "strata/hardware/cluster.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/device_file.hpp"
#include "strata/io/json.hpp"

namespace strata::io::detail {

/// The known device names, for errors.
inline std::string known_devices() {
  std::string known;
  for (const auto& e : presets::device_catalogue)
    known += (known.empty() ? "" : ", ") + std::string(e.key);
  return known;
}

/// A scenario's `"device"`: a preset's name (`presets::device_catalogue`), a datasheet object, or
/// the path of a datasheet file (a string ending in ".json", relative to the working folder); the
/// datasheet's schema is in `io/device_file.hpp` and docs/devices.md.
/// The compute type field `key` of object `j` (at `path`) names, fp32 by default: "fp32" (TF32
/// where the device allows it), "bf16" or "fp16" (autocast), as DLRM scenarios and CNN strategy
/// trees take it; anything else is an error at `error_path`.
inline dtype compute_type(const json& j, const std::string& path, const char* key,
                          const std::string& error_path) {
  const std::string prec = str_field(j, path, key, "fp32");
  if (prec == "fp32") return dtype::fp32;
  if (prec == "bf16") return dtype::bf16;
  if (prec == "fp16") return dtype::fp16;
  fail(error_path, "must be \"fp32\", \"bf16\" or \"fp16\" (got \"" + cut(prec) + "\")");
}

inline device parse_device(const json& j, const std::string& path) {
  if (j.is_object()) return device_from_json(j, path);
  if (!j.is_string())
    fail(path, "must be a device name (got " + show(j) +
                   ") or a datasheet (an object, or the path of a .json file)");
  const std::string name = j.get<std::string>();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0)
    return device_from_file(name, path);
  if (const auto* e = presets::find_device(name)) return *e->dev;
  fail(path, "unknown device \"" + cut(name) + "\" (known: " + known_devices() +
                 "; or a datasheet: an object, or the path of a .json file)");
}

/// `"power_limit_W"` of cluster `j`: every GPU held at that power (`nvidia-smi -pl`), which lowers
/// its arithmetic rates (`power_clock_share`).
inline void hold_at_power_limit(const json& j, cluster& c) {
  if (!j.contains("power_limit_W")) return;
  c.dev.power_limit_w = num_field(j, "cluster", "power_limit_W", 1.0, 1e5, 0.0);
  try {
    (void)power_clock_share(c.dev);
  } catch (const plan_error& e) {
    fail("cluster.power_limit_W", e.what());
  }
}

/// The names `{"preset": ...}` takes (`strata --list-presets`).
inline constexpr std::string_view cluster_presets[] = {
    "abci",     "hc1",      "hc2",      "hc3",       "dgx1-v100", "dgx-a100", "dgx-a100-40gb",
    "dgx-h100", "dgx-h200", "dgx-b200", "mi300x-x8", "l40s-x8",   "gh200-x4", "yan-e5-2450"};

/// `{"preset": name, "devices": n}` as the preset builds it.
inline cluster preset_cluster(const json& j) {
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
  std::string list;
  for (const std::string_view k : cluster_presets)
    list += (list.empty() ? "" : ", ") + std::string(k);
  fail("cluster.preset", "unknown preset \"" + cut(p) + "\" (known: " + list +
                             did_you_mean(p, cluster_presets) + ")");
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
    only_keys(j, "cluster", {"preset", "devices", "device", "power_limit_W"});
    cluster c = preset_cluster(j);
    // another device in the preset's nodes (an RTX 4090 server on the L40S server's PCIe)
    if (j.contains("device")) {
      c.dev = parse_device(j["device"], "cluster.device");
      c.name = intern_device_name(std::string(c.name) + " with " + std::string(c.dev.name));
    }
    hold_at_power_limit(j, c);
    return c;
  }
  only_keys(j, "cluster", {"name", "device", "levels", "host", "power_limit_W"});
  const std::string dpath = "cluster.device";
  const device dev = parse_device(require(j, "cluster", "device"), dpath);
  const json& lv = require(j, "cluster", "levels");
  if (!lv.is_array() || lv.empty() || lv.size() > max_levels)
    fail("cluster.levels", "must be an array of 1 to 5 levels");
  cluster c{intern(str_field(j, "cluster", "name", "custom")), dev, {}, 0};
  long long total = 1;  // devices so far: each fan-out is at most 2^24, so no overflow
  for (std::size_t i = 0; i < lv.size(); ++i) {
    const std::string path = "cluster.levels[" + std::to_string(i) + "]";
    only_keys(lv[i], path,
              {"name", "fanout", "alpha_us", "bandwidth_GBps", "oversubscription", "rails", "kind",
               "switch_reduction"});
    level l;
    l.name = intern(str_field(lv[i], path, "name", "level"));
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
    // left out: the host's memory is not checked; given, it must hold something
    if (h->contains("dram_GiB") && !(num_field(*h, path, "dram_GiB", 0.0, 1e7, 0.0) > 0))
      fail(path + ".dram_GiB",
           "must be a positive number of GiB (leave it out to skip the host-memory check)");
    c.host.capacity = bytes{num_field(*h, path, "dram_GiB", 0.0, 1e7, 0.0) * 1024.0 * 1024 * 1024};
  }
  hold_at_power_limit(j, c);
  return c;
}

}  // namespace strata::io::detail
