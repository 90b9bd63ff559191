// strata: evaluate a training scenario (JSON) and print its time and memory report.
// Usage: strata [FILE | -] [--format json|table]. Without FILE it runs a built-in scenario.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "replay_ps.hpp"
#include "shipped_profiles.hpp"
#include "strata/analytic/step.hpp"
#include "strata/calibrate/step_fit.hpp"
#include "strata/io/device_file.hpp"
#include "strata/io/dlrm_scenario.hpp"
#include "strata/io/evaluate.hpp"
#include "strata/io/fit.hpp"
#include "strata/io/lin_trace.hpp"
#include "strata/io/messages.hpp"
#include "strata/io/model_list.hpp"
#include "strata/io/profile.hpp"
#include "strata/io/proteus_tree.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/simulate.hpp"
#include "strata/io/simulation.hpp"
#include "strata/io/step_scenario.hpp"
#include "strata/io/svg.hpp"
#include "strata/io/transformer_request.hpp"
#include "strata/io/transformer_scenario.hpp"
#include "strata/model/zoo.hpp"
#include "strata/sim/paradl.hpp"
#include "strata/sim/transformer.hpp"
#include "strata/version.hpp"

namespace {
using json = nlohmann::json;

// Every number in a report is finite (io/messages.hpp).
void check_finite(const json& j, const std::string& path) { strata::io::check_finite(j, path); }

// A table holds no "inf" or "nan" (io/messages.hpp).
void check_finite_table(const std::string& text) { strata::io::check_finite_text(text); }

// Writes `j` to `path` for the option `option`; a path that cannot be opened or written
// (a full disk, /dev/full) is a plan_error.
void write_json(const std::string& option, const std::string& path, const json& j, int indent) {
  check_finite(j, option);
  std::ofstream out(path);
  if (!out) throw strata::plan_error(option + ": cannot write '" + path + "'");
  out << j.dump(indent) << '\n';
  out.flush();
  out.close();
  if (out.fail()) throw strata::plan_error(option + ": cannot write '" + path + "'");
}

// Writes a picture to `path` for the option `option` (docs/cli.md, "Pictures").
void write_text(const std::string& option, const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw strata::plan_error(option + ": cannot write '" + path + "'");
  out << text;
  out.flush();
  out.close();
  if (out.fail()) throw strata::plan_error(option + ": cannot write '" + path + "'");
}

// Prints a report: JSON after checking every number is finite, and checks standard output
// took it.
void print_json(const json& j) {
  check_finite(j, "");
  std::cout << j.dump(2) << '\n';
}
void print_table(const std::string& text) {
  check_finite_table(text);
  std::cout << text;
}

// The one error line: "strata: error: <field>: <what>". A message without a leading field gets
// `fallback`; nlohmann's "[json.exception...]" prefix goes; control characters become spaces and
// the line is cut at 400 bytes (error messages echo input).
int error_line(const std::string& fallback, std::string msg) {
  msg = strata::io::error_text(fallback, msg);  // io/messages.hpp: the Python module's too
  std::cout.flush();
  if (isatty(2) != 0) std::cerr << "\r\033[K";  // clear a progress bar
  std::cerr << "strata: error: " << msg << '\n';
  return 2;
}

// Runs `body` (which returns an exit code), turning every exception into one error line.
template <class F>
int guarded(const std::string& field, F&& body) {
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

// strata fit: the scenario on every device preset (io/fit.hpp), as JSON or a table.
int print_fit(const std::string& text, const std::string& format) {
  const auto f =
      strata::io::which_gpus(strata::io::detail::parse_json(text), strata_cli::h100_sxm_profile);
  if (format == "table")
    print_table(strata::io::fit_report_table(f));
  else
    print_json(strata::io::fit_report_json(f));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata: predict iteration time and per-device memory of distributed training"};
  std::string input;
  std::string format = "json";
  bool print_default = false;
  app.add_option("scenario", input, "scenario JSON file, or - for standard input")
      ->option_text("FILE|-");
  app.add_option("--format", format, "report format")->check(CLI::IsMember({"json", "table"}));
  app.add_flag("--print-default", print_default, "print the built-in scenario and exit");
  bool list_gpus = false, list_models = false;
  app.add_flag("--list-gpus", list_gpus,
               "list the device presets (a table; --format json: their datasheets) and exit");
  app.add_flag("--list-models", list_models,
               "list the models a scenario can name: zoo transformers and CNNs, shipped Hugging "
               "Face ids (a table; --format json) and exit");
  double time_limit = 0;
  app.add_option("--time-limit", time_limit,
                 "stop a parameter-server search after this many seconds (0: no limit)")
      ->check(CLI::Range(0.0, 1e9));
  // strata simulate: the same scenario, event by event.
  auto* sim_cmd = app.add_subcommand("simulate", "simulate one iteration event by event");
  std::string sim_input, trace_path;
  bool overlap = false;
  int buckets = 1;
  double gamma = 0;
  sim_cmd->add_option("scenario", sim_input, "scenario JSON file, or - for standard input")
      ->required();
  sim_cmd->add_option("--trace", trace_path, "write a Chrome-trace / Perfetto JSON timeline");
  std::string svg_path, memory_svg_path;
  sim_cmd->add_option("--svg", svg_path, "write the timeline as a self-contained SVG picture");
  sim_cmd->add_option("--memory-svg", memory_svg_path,
                      "write each pipeline stage's memory against the device as an SVG bar chart");
  sim_cmd->add_flag("--overlap", overlap,
                    "overlap data-parallel collectives with compute (the gradient all-reduce with "
                    "backward; ZeRO-2/3's reductions with the next micro-batch; ZeRO-3's gathers "
                    "one layer ahead)");
  sim_cmd->add_option("--buckets", buckets, "gradient all-reduce buckets")
      ->check(CLI::Range(1, 1 << 20));
  sim_cmd->add_option("--gamma", gamma, "compute slowdown while communicating (Proteus)")
      ->check(CLI::Range(0.0, 100.0));
  std::string schedule = "gpipe";
  int max_in_flight = 0;
  sim_cmd->add_option("--schedule", schedule, "pipeline schedule")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
  sim_cmd
      ->add_option("--max-in-flight", max_in_flight,
                   "micro-batches in flight per pipeline stage (0: no limit)")
      ->check(CLI::Range(0, 1 << 20));
  // strata fit: which GPUs the scenario fits on (io/fit.hpp)
  auto* fit_cmd = app.add_subcommand(
      "fit", "evaluate a transformer scenario on every device preset: which GPUs it fits on");
  std::string fit_input, fit_format = "json";
  fit_cmd->add_option("scenario", fit_input, "scenario JSON file, or - for standard input")
      ->required();
  fit_cmd->add_option("--format", fit_format, "report format: JSON or one row per device")
      ->check(CLI::IsMember({"json", "table"}));
  // strata replay: Lin et al.'s Algorithm 1 over per-rank operation traces.
  auto* replay_cmd = app.add_subcommand("replay", "replay per-rank operation traces (Lin et al.)");
  std::string replay_input, replay_trace;
  replay_cmd->add_option("trace", replay_input, "trace JSON file, or - for standard input")
      ->required();
  replay_cmd->add_option("--trace", replay_trace, "write a Chrome-trace / Perfetto timeline");
  // strata replay-ps: Li et al.'s parameter-server simulator (issue 16; tools/cli/replay_ps.hpp)
  strata_cli::replay_ps_options rps;
  auto* rps_cmd = strata_cli::add_replay_ps(app, rps);
  // strata calibrate: fit a device profile to microbenchmarks.
  auto* cal_cmd = app.add_subcommand("calibrate", "fit a device profile to microbenchmark CSVs");
  std::string membound_csv, attention_csv, cal_device = "h100", profile_out;
  std::vector<std::string> gemm_csvs;
  int sms = 0;  // 0: the device's
  cal_cmd
      ->add_option("--gemm", gemm_csvs,
                   "GEMM timings (dtype,M,N,K,ms; dtype bfloat16, float32 with TF32 allowed or "
                   "float32-ieee without); repeat for more files with the same columns, whose "
                   "rows are then numbered on from the previous file's")
      ->required();
  cal_cmd->add_option("--membound", membound_csv, "memory-bound timings (op,bytes,ms)")->required();
  cal_cmd->add_option("--attention", attention_csv, "flash-attention timings")->required();
  std::string attention_fp32_csv;
  std::vector<std::string> step_csvs;
  cal_cmd->add_option("--attention-fp32", attention_fp32_csv,
                      "fp32 attention timings (the same columns)");
  cal_cmd->add_option("--steps", step_csvs,
                      "whole training steps (tools/measure/h100_steps.py) to fit the framework's "
                      "dispatch costs; repeatable");
  cal_cmd->add_option("--device", cal_device,
                      "datasheet device the profile starts from (a scenario's device names)");
  cal_cmd->add_option("--sms", sms, "streaming multiprocessors (default: the device's)")
      ->check(CLI::Range(1, 100000));
  cal_cmd->add_option("--output", profile_out, "write the profile (JSON) here");
  app.set_version_flag("--version", std::to_string(STRATA_VERSION_MAJOR) + "." +
                                        std::to_string(STRATA_VERSION_MINOR) + "." +
                                        std::to_string(STRATA_VERSION_PATCH));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // CLI11's text as one line: "<option>: <what>"; "X is required" names X
    std::string what = e.what();
    const auto req = what.find(" is required");
    if (req != std::string::npos && req > 0 && what.find(' ') == req)
      what = what.substr(0, req) + ": missing (required)";
    return error_line("command line", what);
  }
  // CLI11's range checks pass NaN (every comparison with it is false)
  if (!std::isfinite(gamma)) return error_line("--gamma", "must be a number in [0, 100]");
  if (!std::isfinite(time_limit)) return error_line("--time-limit", "must be a number of seconds");
  if (print_default) {
    std::cout << strata::io::default_scenario << '\n';
    return 0;
  }
  if (list_models) {  // io/model_list.hpp
    const nlohmann::json models = strata::io::model_catalogue_json();
    if (app.count("--format") > 0 && format == "json") {
      std::cout << models.dump(2) << '\n';
      return 0;
    }
    std::printf("%-40s %-12s %16s  %s\n", "model", "kind", "parameters", "note");
    for (const auto& m : models) {
      std::string note;
      if (m.contains("refused")) note = m["refused"].get<std::string>();
      if (m.contains("not_planned"))
        note = "counted, not planned: " + m["not_planned"][0].get<std::string>();
      if (m.contains("sliding_window"))
        note = "sliding window " + std::to_string(m["sliding_window"].get<int>());
      const std::string params =
          m.contains("parameters")
              ? std::to_string(static_cast<long long>(m["parameters"].get<double>()))
              : std::string("-");
      std::printf("%-40s %-12s %16s  %s\n", m["model"].get<std::string>().c_str(),
                  m["kind"].get<std::string>().c_str(), params.c_str(), note.c_str());
    }
    return 0;
  }
  if (list_gpus) {  // docs/devices.md
    if (app.count("--format") > 0 && format == "json") {
      std::cout << strata::io::device_catalogue_json().dump(2) << '\n';
      return 0;
    }
    std::printf("%-15s %-18s %8s %9s %12s  %s\n", "device", "name", "GiB", "TB/s", "bf16 TFLOP/s",
                "source");
    for (const auto& e : strata::presets::device_catalogue) {
      const strata::device& d = *e.dev;
      std::printf("%-15s %-18s %8.2f %9.3f %12.1f  %s\n", std::string(e.key).c_str(),
                  std::string(d.name).c_str(), d.memory.count() / 1073741824.0,
                  d.memory_bandwidth.count() / 1e12, d.peak(strata::dtype::bf16).count() / 1e12,
                  std::string(e.source).c_str());
    }
    return 0;
  }
  // the main command's options and scenario do nothing for a subcommand: refused, not ignored
  for (const CLI::App* sub : app.get_subcommands()) {
    const std::string name = sub->get_name();
    if (app.count("--format") > 0)
      return error_line("--format", name == "fit"
                                        ? "give it after fit (strata fit FILE --format table)"
                                        : "sets a scenario's report; " + name + " prints JSON");
    if (app.count("--time-limit") > 0)
      return error_line("--time-limit", "stops a parameter-server search, not " + name);
    if (!input.empty())
      return error_line("scenario", "'" + input + "' comes before the " + name +
                                        " subcommand, which takes its own input");
  }
  const bool limit_given = app.count("--time-limit") > 0;
  auto read_text = [](const std::string& path, std::string& out, const char* field = "scenario") {
    namespace d = strata::io::detail;
    return guarded(field, [&] {
             const std::string f = field;
             out = d::read_file(path, field,
                                f == "trace"          ? "trace file"
                                : f == "--tensorflow" ? "tensor sizes file"
                                                      : "scenario file");
             return 0;
           }) == 0;
  };
  if (cal_cmd->parsed()) {
    return guarded("calibrate", [&] {
      namespace d = strata::io::detail;
      // whole files first: a directory, a read error or an oversized file names its option
      std::string gemm_text;  // the files' rows in one table, under the first file's header
      for (const auto& path : gemm_csvs) {
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
          throw strata::plan_error("--gemm: '" + path + "' has other columns than '" +
                                   gemm_csvs.front() + "'");
        if (gemm_text.back() != '\n') gemm_text += '\n';
        const auto end = text.find('\n');
        if (end != std::string::npos) gemm_text += text.substr(end + 1);
      }
      std::istringstream g(gemm_text), m(d::read_file(membound_csv, "--membound")),
          a(d::read_file(attention_csv, "--attention"));
      const strata::device dev =
          strata::io::detail::parse_device(nlohmann::json(cal_device), "--device");
      std::istringstream a32;
      if (!attention_fp32_csv.empty())
        a32.str(d::read_file(attention_fp32_csv, "--attention-fp32"));
      const int n_sms = sms > 0 ? sms : dev.sms;
      if (n_sms <= 0)
        throw strata::plan_error("--sms: the device's SM count is not known; give --sms");
      auto fit = strata::calibrate::fit_profile(
          dev, n_sms, g, m, a, attention_fp32_csv.empty() ? nullptr : &a32,
          {"--gemm", "--membound", "--attention", "--attention-fp32"});
      if (!step_csvs.empty()) {
        std::vector<strata::calibrate::step_measurement> steps;
        for (const auto& path : step_csvs) {
          std::istringstream f(d::read_file(path, "--steps"));
          const auto rows = strata::calibrate::detail::labelled(
              "--steps", [&] { return strata::calibrate::read_steps(f); });
          steps.insert(steps.end(), rows.begin(), rows.end());
        }
        const auto d = strata::calibrate::fit_dispatch(steps, fit.profile);
        fit.profile.dispatch = d.dispatch;
        fit.report.push_back(d.report);
      }
      const nlohmann::json report{{"report", strata::io::to_json(fit.report)}};
      check_finite(report, "");
      if (!profile_out.empty())
        write_json("--output", profile_out, strata::io::to_json(fit.profile), 2);
      print_json(report);
      return 0;
    });
  }
  if (fit_cmd->parsed()) {
    std::string text;
    if (!read_text(fit_input, text)) return 2;
    return guarded("scenario", [&] { return print_fit(text, fit_format); });
  }
  if (replay_cmd->parsed()) {
    std::string text;
    if (!read_text(replay_input, text, "trace")) return 2;
    return guarded("trace", [&] {
      const auto r = strata::sim::replay(strata::io::parse_lin_trace(text));
      const nlohmann::json report = strata::io::to_json(r);
      check_finite(report, "");
      if (!replay_trace.empty())
        write_json("--trace", replay_trace, strata::io::chrome_trace(r), -1);
      print_json(report);
      return 0;
    });
  }
  if (rps_cmd->parsed()) {
    try {
      strata_cli::check_replay_ps(*rps_cmd, rps);
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
  if (sim_cmd->parsed()) {
    std::string text;
    if (!read_text(sim_input, text)) return 2;
    return guarded("scenario", [&] {
      strata::io::simulate_request req;
      req.overlap = overlap;
      req.trace = !trace_path.empty();
      if (sim_cmd->count("--buckets") > 0) req.buckets = buckets;
      if (sim_cmd->count("--max-in-flight") > 0) req.max_in_flight = max_in_flight;
      if (sim_cmd->count("--gamma") > 0) req.gamma = gamma;
      if (sim_cmd->count("--schedule") > 0) req.schedule = schedule;
      const nlohmann::json tj = strata::io::detail::parse_json(text);
      if (!memory_svg_path.empty() && !strata::io::is_transformer_scenario(tj))
        throw strata::plan_error(
            "--memory-svg: draws the pipeline stages of a transformer scenario; use --svg for "
            "this one");
      if (!svg_path.empty() && tj.is_object() && tj.contains("strategy_tree"))
        throw strata::plan_error("--svg: a strategy tree's timeline is written by --trace");
      if (!memory_svg_path.empty() && tj.is_object() && tj.contains("strategy_tree"))
        throw strata::plan_error(
            "--memory-svg: a strategy tree's report gives its peak memory per device; the "
            "stage bars are drawn for transformer plans");
      const auto sim = strata::io::simulate_scenario(tj, req, strata_cli::h100_sxm_profile);
      check_finite(sim.report, "");
      if (!trace_path.empty()) write_json("--trace", trace_path, sim.trace, -1);
      if (sim.transformer) {
        const auto& ts = *sim.transformer;
        const auto& q = ts.strategy;
        const std::string title = ts.name + ": t=" + std::to_string(q.tensor.degree) +
                                  " p=" + std::to_string(q.pipeline.degree) +
                                  " v=" + std::to_string(q.pipeline.virtual_stages) +
                                  " d=" + std::to_string(q.data.degree) + ", " +
                                  std::string(to_string(q.pipeline.kind)) + ", " +
                                  std::to_string(q.micro_batches(ts.setup)) + " micro-batches";
        if (!svg_path.empty())
          write_text("--svg", svg_path,
                     strata::io::timeline_svg(*sim.graph, sim.run,
                                              {.title = title + " (one rank per stage)"}));
        if (!memory_svg_path.empty()) {
          auto bars = strata::io::stage_memory_bars(ts.net, ts.strategy, ts.setup);
          for (std::size_t i = 0; i < bars.size() && i < sim.run.peak_memory.size(); ++i)
            bars[i].marker = sim.run.peak_memory[i];
          write_text("--memory-svg", memory_svg_path,
                     strata::io::memory_bars_svg(bars, ts.machine.dev.memory.count(),
                                                 title + ": memory per stage", "simulated peak"));
        }
      } else if (!svg_path.empty()) {
        write_text("--svg", svg_path, strata::io::timeline_svg(*sim.graph, sim.run));
      }
      print_json(sim.report);
      return 0;
    });
  }
  std::string text;
  if (input.empty()) {
    text = strata::io::default_scenario;
  } else if (!read_text(input, text)) {
    return 2;
  }
  return guarded("scenario", [&] {
    // io/evaluate.hpp: every kind of scenario, as Python and the MPI search evaluate it
    strata::io::evaluate_request req{.format = format == "table" ? strata::io::report_format::table
                                                                 : strata::io::report_format::json,
                                     .time_limit = limit_given};
    auto bar = std::make_shared<progress_bar>();  // a long search: progress on a terminal
    bar->limit_s = time_limit;
    req.progress = [bar](double f) {
      if (!(*bar)(f))
        throw strata::plan_error("--time-limit: the search stopped after " +
                                 nlohmann::json(bar->limit_s).dump() + " s, " +
                                 std::to_string(static_cast<int>(f * 100)) + " % done");
      return true;
    };
    const auto r = strata::io::evaluate_scenario(strata::io::detail::parse_json(text), req,
                                                 strata_cli::h100_sxm_profile);
    if (req.format == strata::io::report_format::table)
      print_table(r.table);
    else
      print_json(r.report);
    return 0;
  });
}
