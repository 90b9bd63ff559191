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
#include <vector>

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
#include "strata/io/one_line.hpp"
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

// Reads `path` (or standard input for "-") into `out`; a failure prints its sentence (naming
// `field`) and returns false.
bool read_text(const std::string& path, std::string& out, const char* field = "scenario") {
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

// ---- strata [FILE | -]: evaluate a scenario, or list what a scenario can name ----------------
struct main_options {
  std::string input, format = "json";
  bool print_default = false, list_gpus = false, list_models = false, list_presets = false,
       print_scenario = false;
  double time_limit = 0;
  strata::io::one_line question;  // the one-line flags (io/one_line.hpp)
};

void add_main_options(CLI::App& app, main_options& o) {
  app.add_option("scenario", o.input, "scenario JSON file, or - for standard input")
      ->option_text("FILE|-");
  app.add_option("--format", o.format, "report format")->check(CLI::IsMember({"json", "table"}));
  app.add_flag("--print-default", o.print_default, "print the built-in scenario and exit");
  app.add_flag("--list-gpus", o.list_gpus,
               "list the device presets (a table; --format json: their datasheets) and exit");
  app.add_flag("--list-presets", o.list_presets,
               "list the cluster presets (node device, GPUs per node, links) and exit");
  app.add_flag("--list-models", o.list_models,
               "list the models a scenario can name: zoo transformers and CNNs, shipped Hugging "
               "Face ids (a table; --format json) and exit");
  app.add_option("--time-limit", o.time_limit,
                 "stop a parameter-server search after this many seconds (0: no limit)")
      ->check(CLI::Range(0.0, 1e9));
  // a transformer question in one line (io/one_line.hpp): the scenario a file would hold
  strata::io::one_line& q = o.question;
  const char* one = "One-line question (instead of a scenario file)";
  app.add_option("--model", q.model, "a zoo transformer or a Hugging Face id (--list-models)")
      ->group(one);
  app.add_option("--gpus", q.gpus, "N x a device preset, e.g. 8xh100 (--list-gpus)")->group(one);
  app.add_option("--batch", q.batch, "global batch, sequences")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_option("--seq", q.sequence, "sequence length, tokens")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_option("--tp", q.tensor, "tensor-parallel degree")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_option("--pp", q.pipeline, "pipeline-parallel degree")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_option("--dp", q.data, "data-parallel degree (default: the GPUs --tp x --pp leave)")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_option("--zero", q.zero, "ZeRO stage")->group(one)->check(CLI::Range(0, 3));
  app.add_option("--micro-batch", q.micro_batch, "sequences per micro-batch")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_option("--recompute", q.recompute, "none, selective or full")->group(one);
  app.add_option("--framework", q.framework, "megatron, huggingface, deepspeed, fsdp, ...")
      ->group(one);
  app.add_option("--precision", q.precision, "bf16, fp16, fp8, fp32, ...")->group(one);
  app.add_option("--lora", q.lora, "LoRA rank (adapters on every linear layer)")
      ->group(one)
      ->check(CLI::PositiveNumber);
  app.add_flag("--search", q.search,
               "search every plan (the default on several GPUs without "
               "--tp/--pp/--dp)")
      ->group(one);
  app.add_flag("--print-scenario", o.print_scenario,
               "print the scenario the flags build (a file to keep) and exit")
      ->group(one);
}

// --list-models (io/model_list.hpp): a table, or JSON.
int list_models(bool as_json) {
  const nlohmann::json models = strata::io::model_catalogue_json();
  if (as_json) {
    std::cout << models.dump(2) << '\n';
    return 0;
  }
  std::printf("%-40s %-12s %16s  %s\n", "model", "kind", "parameters", "note");
  for (const auto& m : models) {
    std::string note;
    if (m.contains("refused")) note = m["refused"].get<std::string>();
    if (m.contains("not_planned"))
      note = "counted, not planned: " + m["not_planned"].get<std::string>();
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

// --list-gpus (docs/devices.md): a table, or the datasheets as JSON.
int list_gpus(bool as_json) {
  if (as_json) {
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

// --list-presets: the cluster presets (`{"preset": name, "devices": n}`), one node of each: its
// device, GPUs per node and the bandwidth a pair sees inside the node and across nodes.
int list_presets() {
  namespace io = strata::io;
  std::printf("%-15s %-20s %9s %14s %14s\n", "preset", "device", "per node", "in-node GB/s",
              "across GB/s");
  for (const std::string_view p : io::detail::cluster_presets) {
    const bool fixed = p == "hc1" || p == "hc2" || p == "hc3";
    nlohmann::json j{{"preset", p}};
    if (!fixed) j["devices"] = p == "abci" || p == "gh200-x4" ? 8 : p == "yan-e5-2450" ? 20 : 16;
    const strata::cluster c = io::detail::parse_cluster(j);
    const auto bw = [](const strata::level& l) { return l.pair.bandwidth.count() / 1e9; };
    char across[32] = "-";
    if (c.depth > 1) std::snprintf(across, sizeof across, "%.1f", bw(c.levels[1]));
    std::printf("%-15s %-20s %9d %14.1f %14s\n", std::string(p).c_str(),
                std::string(c.dev.name).c_str(), c.levels[0].fanout, bw(c.levels[0]), across);
  }
  return 0;
}

// The main command's options and scenario do nothing for a subcommand: refused, not ignored
// (0 when none was given).
int refuse_main_options(const CLI::App& app, const main_options& o) {
  for (const CLI::App* sub : app.get_subcommands()) {
    const std::string name = sub->get_name();
    if (app.count("--format") > 0)
      return error_line("--format", name == "fit"
                                        ? "give it after fit (strata fit FILE --format table)"
                                        : "sets a scenario's report; " + name + " prints JSON");
    if (app.count("--time-limit") > 0)
      return error_line("--time-limit", "stops a parameter-server search, not " + name);
    if (!o.input.empty())
      return error_line("scenario", "'" + o.input + "' comes before the " + name +
                                        " subcommand, which takes its own input");
    if (o.question.given() || o.print_scenario)
      return error_line("--model", "the one-line flags ask the main command; " + name +
                                       " takes a scenario file (--print-scenario writes one)");
  }
  return 0;
}

// The scenario (or the built-in one) through io/evaluate.hpp, as Python and the MPI search
// evaluate it; a long parameter-server search shows its progress and honours --time-limit.
int run_scenario(const main_options& o, bool limit_given) {
  std::string text;
  if (o.question.given() || o.print_scenario) {
    if (!o.input.empty())
      return error_line("scenario",
                        "give a scenario file or the one-line flags (--model, "
                        "--gpus, ...), not both");
    strata::io::one_line_scenario q;
    if (guarded("scenario", [&] {
          q = strata::io::scenario_from_flags(o.question);
          return 0;
        }) != 0)
      return 2;
    for (const std::string& n : q.notes) std::cerr << "strata: note: " << n << '\n';
    if (o.print_scenario) {
      std::cout << q.scenario.dump(2) << '\n';
      return 0;
    }
    text = q.scenario.dump();
  } else if (o.input.empty()) {
    text = strata::io::default_scenario;
  } else if (!read_text(o.input, text)) {
    return 2;
  }
  return guarded("scenario", [&] {
    strata::io::evaluate_request req{.format = o.format == "table"
                                                   ? strata::io::report_format::table
                                                   : strata::io::report_format::json,
                                     .time_limit = limit_given};
    auto bar = std::make_shared<progress_bar>();  // a long search: progress on a terminal
    bar->limit_s = o.time_limit;
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

// ---- strata simulate: the same scenario, event by event -----------------------------------
struct simulate_options {
  std::string input, trace, svg, memory_svg, schedule = "gpipe";
  bool overlap = false;
  int buckets = 1, max_in_flight = 0;
  double gamma = 0;
};

CLI::App* add_simulate(CLI::App& app, simulate_options& o) {
  auto* sim_cmd = app.add_subcommand("simulate", "simulate one iteration event by event");
  sim_cmd->add_option("scenario", o.input, "scenario JSON file, or - for standard input")
      ->required();
  sim_cmd->add_option("--trace", o.trace, "write a Chrome-trace / Perfetto JSON timeline");
  sim_cmd->add_option("--svg", o.svg, "write the timeline as a self-contained SVG picture");
  sim_cmd->add_option("--memory-svg", o.memory_svg,
                      "write each pipeline stage's memory against the device as an SVG bar chart");
  sim_cmd->add_flag("--overlap", o.overlap,
                    "overlap data-parallel collectives with compute (the gradient all-reduce with "
                    "backward; ZeRO-2/3's reductions with the next micro-batch; ZeRO-3's gathers "
                    "one layer ahead)");
  sim_cmd->add_option("--buckets", o.buckets, "gradient all-reduce buckets")
      ->check(CLI::Range(1, 1 << 20));
  sim_cmd->add_option("--gamma", o.gamma, "compute slowdown while communicating (Proteus)")
      ->check(CLI::Range(0.0, 100.0));
  sim_cmd->add_option("--schedule", o.schedule, "pipeline schedule")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
  sim_cmd
      ->add_option("--max-in-flight", o.max_in_flight,
                   "micro-batches in flight per pipeline stage (0: no limit)")
      ->check(CLI::Range(0, 1 << 20));
  return sim_cmd;
}

// The pictures a transformer plan's simulation draws: its timeline and its stages' memory.
void write_transformer_pictures(const strata::io::scenario_simulation& sim,
                                const simulate_options& o) {
  const auto& ts = *sim.transformer;
  const auto& q = ts.strategy;
  const std::string title = ts.name + ": t=" + std::to_string(q.tensor.degree) +
                            " p=" + std::to_string(q.pipeline.degree) +
                            " v=" + std::to_string(q.pipeline.virtual_stages) +
                            " d=" + std::to_string(q.data.degree) + ", " +
                            std::string(to_string(q.pipeline.kind)) + ", " +
                            std::to_string(q.micro_batches(ts.setup)) + " micro-batches";
  if (!o.svg.empty())
    write_text(
        "--svg", o.svg,
        strata::io::timeline_svg(*sim.graph, sim.run, {.title = title + " (one rank per stage)"}));
  if (!o.memory_svg.empty()) {
    auto bars = strata::io::stage_memory_bars(ts.net, ts.strategy, ts.setup);
    for (std::size_t i = 0; i < bars.size() && i < sim.run.peak_memory.size(); ++i)
      bars[i].marker = sim.run.peak_memory[i];
    write_text("--memory-svg", o.memory_svg,
               strata::io::memory_bars_svg(bars, ts.machine.dev.memory.count(),
                                           title + ": memory per stage", "simulated peak"));
  }
}

int run_simulate(const CLI::App& sim_cmd, const simulate_options& o) {
  std::string text;
  if (!read_text(o.input, text)) return 2;
  return guarded("scenario", [&] {
    strata::io::simulate_request req;
    req.overlap = o.overlap;
    req.trace = !o.trace.empty();
    if (sim_cmd.count("--buckets") > 0) req.buckets = o.buckets;
    if (sim_cmd.count("--max-in-flight") > 0) req.max_in_flight = o.max_in_flight;
    if (sim_cmd.count("--gamma") > 0) req.gamma = o.gamma;
    if (sim_cmd.count("--schedule") > 0) req.schedule = o.schedule;
    const nlohmann::json tj = strata::io::detail::parse_json(text);
    if (!o.memory_svg.empty() && !strata::io::is_transformer_scenario(tj))
      throw strata::plan_error(
          "--memory-svg: draws the pipeline stages of a transformer scenario; use --svg for "
          "this one");
    if (!o.svg.empty() && tj.is_object() && tj.contains("strategy_tree"))
      throw strata::plan_error("--svg: a strategy tree's timeline is written by --trace");
    if (!o.memory_svg.empty() && tj.is_object() && tj.contains("strategy_tree"))
      throw strata::plan_error(
          "--memory-svg: a strategy tree's report gives its peak memory per device; the "
          "stage bars are drawn for transformer plans");
    const auto sim = strata::io::simulate_scenario(tj, req, strata_cli::h100_sxm_profile);
    check_finite(sim.report, "");
    if (!o.trace.empty()) write_json("--trace", o.trace, sim.trace, -1);
    if (sim.transformer)
      write_transformer_pictures(sim, o);
    else if (!o.svg.empty())
      write_text("--svg", o.svg, strata::io::timeline_svg(*sim.graph, sim.run));
    print_json(sim.report);
    return 0;
  });
}

// ---- strata fit: which GPUs the scenario fits on (io/fit.hpp) ------------------------------
struct fit_options {
  std::string input, format = "json";
};

CLI::App* add_fit(CLI::App& app, fit_options& o) {
  auto* fit_cmd = app.add_subcommand(
      "fit", "evaluate a transformer scenario on every device preset: which GPUs it fits on");
  fit_cmd->add_option("scenario", o.input, "scenario JSON file, or - for standard input")
      ->required();
  fit_cmd->add_option("--format", o.format, "report format: JSON or one row per device")
      ->check(CLI::IsMember({"json", "table"}));
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
  std::string membound, attention, attention_fp32, device = "h100", output;
  int sms = 0;  // 0: the device's
};

CLI::App* add_calibrate(CLI::App& app, calibrate_options& o) {
  auto* cal_cmd = app.add_subcommand("calibrate", "fit a device profile to microbenchmark CSVs");
  cal_cmd
      ->add_option("--gemm", o.gemm,
                   "GEMM timings (dtype,M,N,K,ms; dtype bfloat16, float32 with TF32 allowed or "
                   "float32-ieee without); repeat for more files with the same columns, whose "
                   "rows are then numbered on from the previous file's")
      ->required();
  cal_cmd->add_option("--membound", o.membound, "memory-bound timings (op,bytes,ms)")->required();
  cal_cmd->add_option("--attention", o.attention, "flash-attention timings")->required();
  cal_cmd->add_option("--attention-fp32", o.attention_fp32,
                      "fp32 attention timings (the same columns)");
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

int run_calibrate(const calibrate_options& o) {
  return guarded("calibrate", [&] {
    namespace d = strata::io::detail;
    std::istringstream g(merged_gemm_files(o.gemm)), m(d::read_file(o.membound, "--membound")),
        a(d::read_file(o.attention, "--attention"));
    const strata::device dev =
        strata::io::detail::parse_device(nlohmann::json(o.device), "--device");
    std::istringstream a32;
    if (!o.attention_fp32.empty()) a32.str(d::read_file(o.attention_fp32, "--attention-fp32"));
    const int n_sms = o.sms > 0 ? o.sms : dev.sms;
    if (n_sms <= 0)
      throw strata::plan_error("--sms: the device's SM count is not known; give --sms");
    auto fit = strata::calibrate::fit_profile(
        dev, n_sms, g, m, a, o.attention_fp32.empty() ? nullptr : &a32,
        {"--gemm", "--membound", "--attention", "--attention-fp32"});
    if (!o.steps.empty()) {
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
    const nlohmann::json report{{"report", strata::io::to_json(fit.report)}};
    check_finite(report, "");
    if (!o.output.empty()) write_json("--output", o.output, strata::io::to_json(fit.profile), 2);
    print_json(report);
    return 0;
  });
}

// CLI11's parse error as one line, "<option>: <what>" ("X is required" names X); --help and
// --version print and exit 0.
int parse_error(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);
  std::string what = e.what();
  const auto req = what.find(" is required");
  if (req != std::string::npos && req > 0 && what.find(' ') == req)
    what = what.substr(0, req) + ": missing (required)";
  return error_line("command line", what);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata: predict iteration time and per-device memory of distributed training"};
  main_options opt;
  add_main_options(app, opt);
  simulate_options sim;
  CLI::App* sim_cmd = add_simulate(app, sim);
  fit_options fit;
  CLI::App* fit_cmd = add_fit(app, fit);
  replay_options replay;
  CLI::App* replay_cmd = add_replay(app, replay);
  strata_cli::replay_ps_options rps;
  CLI::App* rps_cmd = strata_cli::add_replay_ps(app, rps);
  calibrate_options cal;
  CLI::App* cal_cmd = add_calibrate(app, cal);
  app.set_version_flag("--version", std::to_string(STRATA_VERSION_MAJOR) + "." +
                                        std::to_string(STRATA_VERSION_MINOR) + "." +
                                        std::to_string(STRATA_VERSION_PATCH));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e);
  }
  // CLI11's range checks pass NaN (every comparison with it is false)
  if (!std::isfinite(sim.gamma)) return error_line("--gamma", "must be a number in [0, 100]");
  if (!std::isfinite(opt.time_limit))
    return error_line("--time-limit", "must be a number of seconds");
  const bool as_json = app.count("--format") > 0 && opt.format == "json";
  if (opt.print_default) {
    std::cout << strata::io::default_scenario << '\n';
    return 0;
  }
  if (opt.list_models) return list_models(as_json);
  if (opt.list_gpus) return list_gpus(as_json);
  if (opt.list_presets) return list_presets();
  if (const int rc = refuse_main_options(app, opt); rc != 0) return rc;
  if (cal_cmd->parsed()) return run_calibrate(cal);
  if (fit_cmd->parsed()) return run_fit(fit);
  if (replay_cmd->parsed()) return run_replay(replay);
  if (rps_cmd->parsed()) return run_replay_ps(*rps_cmd, rps);
  if (sim_cmd->parsed()) return run_simulate(*sim_cmd, sim);
  return run_scenario(opt, app.count("--time-limit") > 0);
}
