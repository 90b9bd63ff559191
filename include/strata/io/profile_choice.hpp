#pragma once
/// @file io/profile_choice.hpp
/// @brief A scenario's `"profile"`, one grammar for every scenario that prices kernels on a
/// cluster's device (transformer plans and searches, Proteus strategy trees): where the kernel
/// efficiencies come from and how they reach the device.
///
/// - `"auto"`: the shipped H100 fit on an H100 SXM, `"fitted-gemm"` on any other device;
/// - `"fitted-gemm"`: the device's datasheet peaks with the GEMM efficiency fitted on the H100;
/// - `"datasheet"`: the datasheet peaks with default efficiencies;
/// - `"h100"`: the shipped H100 fit, carried to the device (its rates keep their fraction of the
///   peaks, `rescale_profile`);
/// - any other string: a profile file (`strata calibrate --output`) measured on the device itself
///   (or on one that differs only in memory size, as V100 16 and 32 GB do); one measured on
///   another device is refused, never carried silently.
/// A scenario kind names its default (transformer scenarios `"auto"`, strategy trees
/// `"datasheet"`, Proteus's own setting).
/// @code
/// const auto p = strata::io::choose_profile(j["profile"], cluster.dev, shipped_h100_text);
/// // p.profile prices the kernels; p.efficiencies says where they come from
/// @endcode

#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/hardware/device.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/device_file.hpp"
#include "strata/io/json.hpp"
#include "strata/io/profile.hpp"

namespace strata::io {

/// The profile a scenario chose: the profile itself, its name as the report gives it, and where
/// its efficiencies come from.
struct chosen_profile {
  device_profile profile;
  std::string name;
  std::string efficiencies;
};

/// Resolves `"profile"` (`pj`; null: `fallback`) for device `dev`, the device of `owner` (a
/// "cluster", or a "step"); `shipped` is the text of the shipped H100 profile (empty: none in this
/// build).
inline chosen_profile choose_profile(const nlohmann::json& pj, const device& dev,
                                     std::string_view shipped, std::string_view fallback = "auto",
                                     const std::string& owner = "cluster") {
  namespace d = detail;
  const nlohmann::json given = pj.is_null() ? nlohmann::json(std::string(fallback)) : pj;
  if (!given.is_string())
    d::fail("profile", "must be \"auto\", \"fitted-gemm\", \"datasheet\", \"h100\" or a file");
  std::string pn = given.get<std::string>();
  if (dev.sms < 1) d::fail(owner + ".device", "has no SM count: transformer plans need a GPU");
  if (pn == "auto")
    pn = dev.name == presets::h100_sxm5_80gb.name && !shipped.empty() ? "h100" : "fitted-gemm";
  chosen_profile out;
  out.name = pn;
  const std::string on = std::string(dev.name);
  // a power limit changes every arithmetic rate: the report says so
  const double share = power_clock_share(dev);
  const auto held = [&](chosen_profile c) {
    if (share == 1.0) return c;
    char note[160];
    std::snprintf(note, sizeof note,
                  "; held at %.0f W of its rated %.0f W: arithmetic at %.1f %% of its rates",
                  dev.power_limit_w, dev.power_w, 100 * share);
    c.efficiencies += note;
    return c;
  };
  if (pn == "fitted-gemm") {
    out.profile = datasheet_profile(dev, h100_fitted_gemm);
    out.efficiencies = "datasheet of " + on + ", GEMM efficiency fitted on H100-SXM5-80GB";
    return held(out);
  }
  if (pn == "datasheet") {
    out.profile = datasheet_profile(dev);
    out.efficiencies = "datasheet of " + on + ", default efficiencies";
    return held(out);
  }
  std::string text;
  if (pn == "h100") {
    if (shipped.empty()) d::fail("profile", "no shipped H100 profile in this build");
    text = shipped;
  } else {
    text = d::read_file(pn, "profile", "profile file");
  }
  const stored_profile sp = profile_from_text(text);
  const device_profile& p = sp.profile;
  const bool same = same_figures(p.dev, dev);
  // The same GPU with more or less memory (V100 16 and 32 GB) runs its kernels at the same
  // rates: its profile serves, and capacity comes from the cluster's device
  device other_memory = p.dev;
  other_memory.memory = dev.memory;
  const bool same_rates = same_figures(other_memory, dev);
  // A profile file describes the device it was measured on: capacity, the fit verdict and MFU
  // come from the cluster's device, so a file for another device is refused, never carried
  // silently (the shipped "h100" fit is carried on purpose, and says so).
  if (pn != "h100" && !same_rates)
    d::fail("profile", "'" + d::cut(pn) + "' describes \"" + d::cut(sp.name) + "\" (" +
                           describe_figures(p.dev) + ") but the " + owner + "'s device is \"" + on +
                           "\" (" + describe_figures(dev) + "): give the " + owner +
                           " that device (a name, a datasheet or its .json file) or a profile "
                           "measured on its own");
  out.profile = p.dev.name == dev.name ? at_power_limit(p, dev) : rescale_profile(p, dev);
  out.efficiencies =
      "fitted on " + sp.name +
      (same         ? std::string(" (profile ") + (pn == "h100" ? "h100" : "file") + ")"
       : same_rates ? " (profile file; the same rates, the memory of " + on + ")"
                    : ", rescaled to " + on + " (rates keep their fraction of the peaks)");
  return held(out);
}

}  // namespace strata::io
