// strata fit, replay, replay-ps and calibrate: which GPUs a scenario fits on, trace replays
// (Lin et al.; Li et al.'s parameter server) and device profiles fitted to microbenchmarks.
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "common.hpp"
#include "replay_ps.hpp"
#include "shipped_profiles.hpp"
#include "strata/calibrate/calibration.hpp"
#include "strata/calibrate/step_fit.hpp"
#include "strata/io/csv.hpp"
#include "strata/io/device_file.hpp"
#include "strata/io/fit.hpp"
#include "strata/io/lin_trace.hpp"
#include "strata/io/profile.hpp"
#include "strata/io/simulation.hpp"

namespace strata_cli {
namespace {

// ---- strata fit: which GPUs the scenario fits on (io/fit.hpp) ------------------------------
struct fit_options {
  std::string input, format = "json";
};

CLI::App* add_fit(CLI::App& app, fit_options& o) {
  auto* fit_cmd = app.add_subcommand(
      "fit", "evaluate a transformer scenario on every device preset: which GPUs it fits on");
  fit_cmd->add_option("scenario", o.input, "scenario JSON file, or - for standard input")
      ->required();
  fit_cmd
      ->add_option("--format", o.format,
                   "report format: json, table (one row per device) or csv (the same rows)")
      ->check(CLI::IsMember({"json", "table", "csv"}));
  return fit_cmd;
}

// The scenario on every device preset, as JSON or a table.
int run_fit(const fit_options& o) {
  std::string text;
  if (!read_text(o.input, text)) return 2;
  return guarded("scenario", [&] {
    const auto f =
        strata::io::which_gpus(strata::io::detail::parse_json(text), strata_cli::h100_sxm_profile);
    if (o.format == "table")
      print_table(strata::io::fit_report_table(f));
    else if (o.format == "csv")
      print_table(strata::io::csv_of(strata::io::fit_report_json(f)));
    else
      print_json(strata::io::fit_report_json(f));
    return 0;
  });
}

// ---- strata replay: Lin et al.'s Algorithm 1 over per-rank operation traces ----------------
struct replay_options {
  std::string input, trace;
};

CLI::App* add_replay(CLI::App& app, replay_options& o) {
  auto* replay_cmd = app.add_subcommand("replay", "replay per-rank operation traces (Lin et al.)");
  replay_cmd->add_option("trace", o.input, "trace JSON file, or - for standard input")->required();
  replay_cmd->add_option("--trace", o.trace, "write a Chrome-trace / Perfetto timeline");
  return replay_cmd;
}

int run_replay(const replay_options& o) {
  std::string text;
  if (!read_text(o.input, text, "trace")) return 2;
  return guarded("trace", [&] {
    const auto r = strata::sim::replay(strata::io::parse_lin_trace(text));
    const nlohmann::json report = strata::io::to_json(r);
    check_finite(report, "");
    if (!o.trace.empty()) write_json("--trace", o.trace, strata::io::chrome_trace(r), -1);
    print_json(report);
    return 0;
  });
}

// ---- strata replay-ps: Li et al.'s parameter-server simulator (tools/cli/replay_ps.hpp) ------
int run_replay_ps(const CLI::App& rps_cmd, const strata_cli::replay_ps_options& rps) {
  try {
    strata_cli::check_replay_ps(rps_cmd, rps);
  } catch (const std::exception& e) {
    return error_line("replay-ps", e.what());
  }
  std::string text, sizes;
  if (rps.model.empty() && !read_text(rps.input, text, "trace")) return 2;
  if (!rps.tensorflow.empty() && !read_text(rps.tensorflow, sizes, "--tensorflow")) return 2;
  return guarded("trace", [&] {
    nlohmann::json timeline, saved;
    const auto report =
        strata_cli::run_replay_ps(rps, text, rps.timeline.empty() ? nullptr : &timeline,
                                  rps.save_trace.empty() ? nullptr : &saved, sizes);
    check_finite(report, "");
    if (!rps.timeline.empty()) write_json("--trace", rps.timeline, timeline, -1);
    if (!rps.save_trace.empty()) write_json("--save-trace", rps.save_trace, saved, 1);
    print_json(report);
    return 0;
  });
}

// ---- strata calibrate: fit a device profile to microbenchmarks ------------------------------
struct calibrate_options {
  std::vector<std::string> gemm, steps;
  std::string membound, attention, attention_fp32, conv, device = "h100", output;
  int sms = 0;  // 0: the device's
  double gemm_min_side = 0;
};

CLI::App* add_calibrate(CLI::App& app, calibrate_options& o) {
  auto* cal_cmd = app.add_subcommand("calibrate", "fit a device profile to microbenchmark CSVs");
  cal_cmd
      ->add_option("--gemm", o.gemm,
                   "GEMM timings (dtype,M,N,K,ms; dtype bfloat16 or float16, float32 with TF32 "
                   "allowed or float32-ieee without); repeat for more files with the same "
                   "columns, whose rows are then numbered on from the previous file's")
      ->required();
  cal_cmd
      ->add_option("--gemm-min-side", o.gemm_min_side,
                   "fit only GEMMs whose M and N are at least this (default 0: all); "
                   "skinnier ones run kernels the tile model does not describe")
      ->check(CLI::Range(0.0, 1e7));
  cal_cmd->add_option("--membound", o.membound,
                      "memory-bound timings (op,bytes,ms); without: the datasheet defaults");
  cal_cmd->add_option("--attention", o.attention,
                      "flash-attention timings; without: the datasheet defaults");
  cal_cmd->add_option("--attention-fp32", o.attention_fp32,
                      "fp32 attention timings (the same columns)");
  cal_cmd->add_option("--conv", o.conv,
                      "convolution timings (tools/deepbench_csv.py's columns): predicted and "
                      "reported, not fitted; cuDNN's Winograd choices set the profile's winograd");
  cal_cmd->add_option("--steps", o.steps,
                      "whole training steps (tools/measure/h100_steps.py) to fit the framework's "
                      "dispatch costs; repeatable");
  cal_cmd->add_option("--device", o.device,
                      "datasheet device the profile starts from (a scenario's device names)");
  cal_cmd->add_option("--sms", o.sms, "streaming multiprocessors (default: the device's)")
      ->check(CLI::Range(1, 100000));
  cal_cmd->add_option("--output", o.output, "write the profile (JSON) here");
  return cal_cmd;
}

// The --gemm files' rows as one table under the first file's header (each file read whole
// first: a directory, a read error or an oversized file names its option).
std::string merged_gemm_files(const std::vector<std::string>& paths) {
  namespace d = strata::io::detail;
  std::string gemm_text;
  for (const auto& path : paths) {
    std::string text = d::read_file(path, "--gemm");
    if (gemm_text.empty()) {
      gemm_text = std::move(text);
      continue;
    }
    auto header = [](const std::string& t) {
      std::string h = t.substr(0, t.find('\n'));
      if (!h.empty() && h.back() == '\r') h.pop_back();
      return h;
    };
    if (header(text) != header(gemm_text))
      throw strata::plan_error("--gemm: '" + path + "' has other columns than '" + paths.front() +
                               "'");
    if (gemm_text.back() != '\n') gemm_text += '\n';
    const auto end = text.find('\n');
    if (end != std::string::npos) gemm_text += text.substr(end + 1);
  }
  return gemm_text;
}

// The dispatch costs fitted on the --steps files with the fitted kernels.
void fit_steps(const calibrate_options& o, strata::calibrate::profile_fit& fit) {
  namespace d = strata::io::detail;
  std::vector<strata::calibrate::step_measurement> steps;
  for (const auto& path : o.steps) {
    std::istringstream f(d::read_file(path, "--steps"));
    const auto rows = strata::calibrate::detail::labelled(
        "--steps", [&] { return strata::calibrate::read_steps(f); });
    steps.insert(steps.end(), rows.begin(), rows.end());
  }
  const auto dispatch = strata::calibrate::detail::labelled(
      "--steps", [&] { return strata::calibrate::fit_dispatch(steps, fit.profile); });
  fit.profile.dispatch = dispatch.dispatch;
  fit.report.push_back(dispatch.report);
}

int run_calibrate(const calibrate_options& o) {
  return guarded("calibrate", [&] {
    namespace d = strata::io::detail;
    const strata::device dev =
        strata::io::detail::parse_device(nlohmann::json(o.device), "--device");
    const int n_sms = o.sms > 0 ? o.sms : dev.sms;
    if (n_sms <= 0)
      throw strata::plan_error("--sms: the device's SM count is not known; give --sms");
    std::istringstream g(merged_gemm_files(o.gemm)), m, a, a32, c;
    strata::calibrate::calibration_inputs in;
    in.gemm = &g;
    in.gemm_min_side = o.gemm_min_side;
    in.labels = {"--gemm", "--membound", "--attention", "--attention-fp32", "--conv"};
    auto optional = [&](const std::string& path, std::istringstream& s, const char* option) {
      if (path.empty()) return static_cast<std::istream*>(nullptr);
      s.str(d::read_file(path, option));
      return static_cast<std::istream*>(&s);
    };
    in.membound = optional(o.membound, m, "--membound");
    in.attention = optional(o.attention, a, "--attention");
    in.attention_fp32 = optional(o.attention_fp32, a32, "--attention-fp32");
    in.conv = optional(o.conv, c, "--conv");
    auto fit = strata::calibrate::fit_profile(dev, n_sms, in);
    if (!o.steps.empty()) fit_steps(o, fit);
    nlohmann::json report{{"report", strata::io::to_json(fit.report)}};
    if (!fit.defaults.empty()) report["datasheet_defaults"] = fit.defaults;
    if (fit.profile.winograd) report["winograd"] = true;
    check_finite(report, "");
    if (!o.output.empty()) write_json("--output", o.output, strata::io::to_json(fit.profile), 2);
    print_json(report);
    return 0;
  });
}

fit_options fit;
replay_options replay;
replay_ps_options rps;
calibrate_options cal;

}  // namespace

CLI::App* add_fit_command(CLI::App& app) { return add_fit(app, fit); }
int run_fit_command() { return run_fit(fit); }
CLI::App* add_replay_command(CLI::App& app) { return add_replay(app, replay); }
int run_replay_command() { return run_replay(replay); }
CLI::App* add_replay_ps_command(CLI::App& app) { return add_replay_ps(app, rps); }
int run_replay_ps_command(const CLI::App& rps_cmd) { return run_replay_ps(rps_cmd, rps); }
CLI::App* add_calibrate_command(CLI::App& app) { return add_calibrate(app, cal); }
int run_calibrate_command() { return run_calibrate(cal); }

}  // namespace strata_cli
