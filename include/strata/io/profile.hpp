#pragma once
/// @file io/profile.hpp
/// @brief Device profiles (`hardware/kernels.hpp`) as JSON, and the calibration report.
///
/// Schema (docs/calibration.md): {"device": {name, fp32, tf32, fp16, bf16, fp8 (FLOP/s), memory
/// (B), memory_bandwidth (B/s)}, "sms", "gemm": {"bf16": {...}, "fp32": {...}}, "stream": {"copy",
/// "host_to_device", "device_to_host", "gelu", "dropout", "layer_norm", "softmax": {bandwidth,
/// floor}}, "attention": {forward_rate, training_rate, ramp, floor}, "attention_fp32" (optional,
/// the same fields), "dispatch" (optional):
/// {per_kernel, per_checkpoint, per_tensor, kernel_floor}, "winograd" (optional, false: whether
/// cuDNN runs 3 x 3 stride-1 convolutions as Winograd transforms)}. Times in seconds, rates in
/// per-second units.

#include <string>

#include <nlohmann/json.hpp>

#include "strata/calibrate/measurement.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/io/json.hpp"

namespace strata::io {

/// A profile owns its device name (the `device` struct holds a view).
struct stored_profile {
  std::string name;
  device_profile profile;
};

namespace detail {
inline nlohmann::json profile_fields(const device_profile& p) {
  auto gemm = [](const gemm_model& g) {
    return nlohmann::json{{"peak", g.peak},           {"efficiency", g.efficiency},
                          {"half_area", g.half_area}, {"floor", g.floor},
                          {"wave", g.wave},           {"bandwidth", g.bandwidth},
                          {"element", g.element},     {"sms", g.sms},
                          {"blend", g.blend}};
  };
  auto stream = [](const stream_model& s) {
    return nlohmann::json{{"bandwidth", s.bandwidth}, {"floor", s.floor}};
  };
  const device& d = p.dev;
  return {
      {"device",
       {{"name", std::string(d.name)},
        {"fp32", d.fp32.count()},
        {"tf32", d.tf32.count()},
        {"fp16", d.fp16.count()},
        {"bf16", d.bf16.count()},
        {"fp8", d.fp8.count()},
        {"memory", d.memory.count()},
        {"memory_bandwidth", d.memory_bandwidth.count()}}},
      {"sms", p.sms},
      {"gemm", {{"bf16", gemm(p.bf16)}, {"fp32", gemm(p.fp32)}, {"fp32_ieee", gemm(p.fp32_ieee)}}},
      {"stream",
       {{"copy", stream(p.copy)},
        {"host_to_device", stream(p.host_to_device)},
        {"device_to_host", stream(p.device_to_host)},
        {"gelu", stream(p.gelu)},
        {"dropout", stream(p.dropout)},
        {"layer_norm", stream(p.layer_norm)},
        {"softmax", stream(p.softmax)}}},
      {"attention",
       {{"forward_rate", p.attention.forward_rate},
        {"training_rate", p.attention.training_rate},
        {"ramp", p.attention.ramp},
        {"floor", p.attention.floor}}},
      {"attention_fp32",
       {{"forward_rate", p.attention_fp32.forward_rate},
        {"training_rate", p.attention_fp32.training_rate},
        {"ramp", p.attention_fp32.ramp},
        {"floor", p.attention_fp32.floor}}},
      {"dispatch",
       {{"per_kernel", p.dispatch.per_kernel},
        {"per_checkpoint", p.dispatch.per_checkpoint},
        {"per_tensor", p.dispatch.per_tensor},
        {"kernel_floor", p.dispatch.kernel_floor}}}};
}
}  // namespace detail

/// The profile as JSON (`profile_from_json` reads it back).
inline nlohmann::json to_json(const device_profile& p) {
  nlohmann::json j = detail::profile_fields(p);
  if (p.winograd) j["winograd"] = true;  // written only when set: older profiles stay as they were
  return j;
}

/// Reads a profile; errors name the field.
inline stored_profile profile_from_json(const nlohmann::json& j) {
  using detail::num_field;
  using detail::require;
  stored_profile out;
  detail::only_keys(
      j, "profile",
      {"device", "sms", "gemm", "stream", "attention", "attention_fp32", "dispatch", "winograd"});
  const auto& d = require(j, "profile", "device");
  detail::only_keys(d, "profile.device",
                    {"name", "fp32", "tf32", "fp16", "bf16", "fp8", "memory", "memory_bandwidth"});
  out.name = detail::str_field(d, "profile.device", "name", nullptr);
  // Bounds (so that no prediction overflows or divides by zero): rates (FLOP/s, B/s) in
  // [1e3, 1e20] (an optional datasheet rate may be 0: not supported), times in [0, 1e3] s.
  auto rate = [&](const nlohmann::json& o, const std::string& path, const char* k, bool required) {
    if (required && !o.contains(k)) detail::fail(path + "." + k, "missing (required)");
    const double v = num_field(o, path, k, 0.0, 1e20, 0.0);
    if (v != 0 && v < 1e3) detail::fail(path + "." + k, "must be 0 or lie in [1e3, 1e20]");
    if (required && v == 0) detail::fail(path + "." + k, "must lie in [1e3, 1e20]");
    return v;
  };
  device& dev = out.profile.dev;
  dev.fp32 = flop_rate{rate(d, "profile.device", "fp32", true)};
  dev.tf32 = flop_rate{rate(d, "profile.device", "tf32", false)};
  dev.fp16 = flop_rate{rate(d, "profile.device", "fp16", false)};
  dev.bf16 = flop_rate{rate(d, "profile.device", "bf16", false)};
  dev.fp8 = flop_rate{rate(d, "profile.device", "fp8", false)};
  dev.memory = bytes{rate(d, "profile.device", "memory", true)};
  dev.memory_bandwidth = byte_rate{rate(d, "profile.device", "memory_bandwidth", true)};
  auto speed = [&](const nlohmann::json& o, const std::string& path, const char* k) {
    if (!o.contains(k)) detail::fail(path + "." + k, "missing (required)");
    return num_field(o, path, k, 1e3, 1e20, 0.0);
  };
  auto duration = [&](const nlohmann::json& o, const std::string& path, const char* k) {
    if (!o.contains(k)) detail::fail(path + "." + k, "missing (required)");
    return num_field(o, path, k, 0.0, 1e3, 0.0);
  };
  out.profile.sms = detail::int_field(j, "profile", "sms", 1, 100000, 1, true);
  auto positive = [&](const nlohmann::json& o, const std::string& path, const char* k) {
    if (!o.contains(k)) detail::fail(path + "." + k, "missing (required)");
    const double v = num_field(o, path, k, 0.0, 1e20, 0.0);
    return v;
  };
  auto gemm = [&](const nlohmann::json& o, const std::string& path) {
    detail::only_keys(o, path,
                      {"peak", "efficiency", "half_area", "floor", "wave", "bandwidth", "element",
                       "sms", "blend"});
    gemm_model g{speed(o, path, "peak"),
                 num_field(o, path, "efficiency", 1e-6, 10.0, positive(o, path, "efficiency")),
                 positive(o, path, "half_area"),
                 duration(o, path, "floor"),
                 duration(o, path, "wave"),
                 speed(o, path, "bandwidth"),
                 num_field(o, path, "element", 0.125, 64.0, positive(o, path, "element")),
                 detail::int_field(o, path, "sms", 1, 100000, 1, true),
                 o.contains("blend") ? num_field(o, path, "blend", 1.0, 16.0, 4.0) : 4.0};
    if (!(g.peak > 0 && g.efficiency > 0 && g.bandwidth > 0 && g.element > 0))
      detail::fail(path, "peak, efficiency, bandwidth and element must be positive");
    return g;
  };
  const auto& g = require(j, "profile", "gemm");
  detail::only_keys(g, "profile.gemm", {"bf16", "fp32", "fp32_ieee"});
  out.profile.bf16 = gemm(require(g, "profile.gemm", "bf16"), "profile.gemm.bf16");
  out.profile.fp32 = gemm(require(g, "profile.gemm", "fp32"), "profile.gemm.fp32");
  // older profiles have no fp32 GEMMs without TF32: the datasheet default for the device
  out.profile.fp32_ieee = g.contains("fp32_ieee")
                              ? gemm(g["fp32_ieee"], "profile.gemm.fp32_ieee")
                              : datasheet_profile(dev, out.profile.sms).fp32_ieee;
  const auto& st = require(j, "profile", "stream");
  detail::only_keys(
      st, "profile.stream",
      {"copy", "host_to_device", "device_to_host", "gelu", "dropout", "layer_norm", "softmax"});
  auto stream = [&](const char* k) {
    const std::string path = std::string("profile.stream.") + k;
    const auto& o = require(st, "profile.stream", k);
    detail::only_keys(o, path, {"bandwidth", "floor"});
    const stream_model m{speed(o, path, "bandwidth"), duration(o, path, "floor")};
    if (!(m.bandwidth > 0)) detail::fail(path + ".bandwidth", "must be positive");
    return m;
  };
  out.profile.copy = stream("copy");
  out.profile.host_to_device = stream("host_to_device");
  out.profile.device_to_host = stream("device_to_host");
  out.profile.gelu = stream("gelu");
  out.profile.dropout = stream("dropout");
  out.profile.layer_norm = stream("layer_norm");
  out.profile.softmax = stream("softmax");
  auto attention = [&](const nlohmann::json& a, const std::string& path) {
    detail::only_keys(a, path, {"forward_rate", "training_rate", "ramp", "floor"});
    const attention_model m{speed(a, path, "forward_rate"), speed(a, path, "training_rate"),
                            positive(a, path, "ramp"), duration(a, path, "floor")};
    if (!(m.forward_rate > 0 && m.training_rate > 0)) detail::fail(path, "rates must be positive");
    return m;
  };
  out.profile.attention = attention(require(j, "profile", "attention"), "profile.attention");
  // older profiles have no fp32 attention: the datasheet default for the device
  out.profile.attention_fp32 = j.contains("attention_fp32")
                                   ? attention(j["attention_fp32"], "profile.attention_fp32")
                                   : datasheet_profile(dev, out.profile.sms).attention_fp32;
  if (j.contains("winograd")) {
    if (!j["winograd"].is_boolean()) detail::fail("profile.winograd", "must be true or false");
    out.profile.winograd = j["winograd"].get<bool>();
  }
  if (j.contains("dispatch")) {  // older profiles have none: no host model
    const auto& h = j["dispatch"];
    const char* path = "profile.dispatch";
    detail::only_keys(h, path, {"per_kernel", "per_checkpoint", "per_tensor", "kernel_floor"});
    out.profile.dispatch = {duration(h, path, "per_kernel"), duration(h, path, "per_checkpoint"),
                            duration(h, path, "per_tensor"), duration(h, path, "kernel_floor")};
  }
  return out;
}

inline stored_profile profile_from_text(std::string_view text) {
  const nlohmann::json j = detail::parse_json(text);
  return profile_from_json(j);
}

/// The calibration report: errors per op class, on all points and held out.
inline nlohmann::json to_json(const std::vector<calibrate::class_report>& report) {
  nlohmann::json r = nlohmann::json::array();
  for (const auto& c : report)
    r.push_back({{"op", c.op},
                 {"points", c.all.points},
                 {"mape", c.all.mape},
                 {"gmae", c.all.gmae},
                 {"held_out_points", c.held_out.points},
                 {"held_out_mape", c.held_out.mape},
                 {"held_out_gmae", c.held_out.gmae}});
  return r;
}

}  // namespace strata::io
