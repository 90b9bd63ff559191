// strata: evaluate a training scenario (JSON) and print its time and memory report.
// Usage: strata [FILE | -] [--format json|table|csv]. Without FILE it runs a built-in scenario.
#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "common.hpp"
#include "shipped_profiles.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/evaluate.hpp"
#include "strata/io/model_list.hpp"
#include "strata/io/one_line.hpp"
#include "strata/version.hpp"

namespace {
using namespace strata_cli;

// ---- strata [FILE | -]: evaluate a scenario, or list what a scenario can name ----------------
struct main_options {
  std::string input, format = "json";
  bool print_default = false, list_gpus = false, list_models = false, list_presets = false,
       print_scenario = false;
  double time_limit = 0;
  int explain = 0;
  strata::io::one_line question;  // the one-line flags (io/one_line.hpp)
};

void add_main_options(CLI::App& app, main_options& o) {
  app.add_option("scenario", o.input, "scenario JSON file, or - for standard input")
      ->option_text("FILE|-");
  app.add_option("--format", o.format,
                 "report format: json, table (for people) or csv (a search's plans a row each, "
                 "else field,value rows)")
      ->check(CLI::IsMember({"json", "table", "csv"}));
  app.add_option("--explain", o.explain,
                 "with a transformer search's table: also print the N-th plan's breakdown")
      ->check(CLI::Range(1, 1 << 30));
  app.add_flag("--print-default", o.print_default, "print the built-in scenario and exit");
  app.add_flag("--list-gpus", o.list_gpus,
               "list the device presets (a table; --format json: their datasheets) and exit");
  app.add_flag("--list-presets", o.list_presets,
               "list the cluster presets (node device, GPUs per node, links) and exit");
  app.add_flag("--list-models", o.list_models,
               "list the models a scenario can name: zoo transformers and CNNs, shipped Hugging "
               "Face ids (a table; --format json) and exit");
  app.add_option("--time-limit", o.time_limit,
                 "stop a search (a transformer's plans, a parameter-server system) after this "
                 "many seconds (0: no limit)")
      ->check(CLI::Range(0.0, 1e9));
  // a transformer question in one line (io/one_line.hpp): the scenario a file would hold
  strata::io::one_line& q = o.question;
  const char* one = "One-line question (instead of a scenario file)";
  app.add_option("--model", q.model, "a zoo transformer or a Hugging Face id (--list-models)")
      ->group(one);
  app.add_option("--gpus", q.gpus, "N x a device preset, e.g. 8xh100 (--list-gpus)")->group(one);
  app.add_option("--power-limit", q.power_limit,
                 "watts each GPU is held at (nvidia-smi -pl; default: its rated power)")
      ->group(one)
      ->check(CLI::Range(1, 100000));
  app.add_option("--batch", q.batch, "global batch, sequences")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--seq", q.sequence, "sequence length, tokens")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--tp", q.tensor, "tensor-parallel degree")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--pp", q.pipeline, "pipeline-parallel degree")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--dp", q.data, "data-parallel degree (default: the GPUs --tp x --pp leave)")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--zero", q.zero, "ZeRO stage")->group(one)->check(CLI::Range(0, 3));
  app.add_option("--micro-batch", q.micro_batch, "sequences per micro-batch")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--recompute", q.recompute, "none, selective or full")->group(one);
  app.add_option("--framework", q.framework, "megatron, huggingface, deepspeed, fsdp, ...")
      ->group(one);
  app.add_option("--precision", q.precision, "bf16, fp16, fp8, fp32, ...")->group(one);
  app.add_option("--lora", q.lora, "LoRA rank (adapters on every linear layer)")
      ->group(one)
      ->check(CLI::Range(1, 1 << 30));
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
      return error_line("--format",
                        name == "fit" || name == "simulate"
                            ? "give it after " + name + " (strata " + name + " FILE --format table)"
                            : "sets a scenario's report; " + name + " prints JSON");
    if (app.count("--explain") > 0)
      return error_line("--explain", "explains a plan of the main command's search, not " + name);
    if (app.count("--time-limit") > 0)
      return error_line("--time-limit", "stops a search, not " + name);
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
// evaluate it; a long search (a transformer's plans, a parameter-server system) shows its
// progress and honours --time-limit.
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
    strata::io::evaluate_request req{
        .format = o.format == "table" ? strata::io::report_format::table
                  : o.format == "csv" ? strata::io::report_format::csv
                                      : strata::io::report_format::json,
        .time_limit = limit_given,
        .explain = o.explain};
    auto bar = std::make_shared<progress_bar>();  // a long search: progress on a terminal
    bar->limit_s = o.time_limit;
    req.progress = [bar](double f) {
      if (!(*bar)(f))
        throw strata::plan_error(strata::io::search_stopped("--time-limit", bar->limit_s, f));
      return true;
    };
    const auto r = strata::io::evaluate_scenario(strata::io::detail::parse_json(text), req,
                                                 strata_cli::h100_sxm_profile);
    if (req.format != strata::io::report_format::json)
      print_table(r.table);
    else
      print_json(r.report);
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
  CLI::App* sim_cmd = add_simulate_command(app);
  CLI::App* fit_cmd = add_fit_command(app);
  CLI::App* replay_cmd = add_replay_command(app);
  CLI::App* rps_cmd = add_replay_ps_command(app);
  CLI::App* cal_cmd = add_calibrate_command(app);
  app.set_version_flag("--version", std::to_string(STRATA_VERSION_MAJOR) + "." +
                                        std::to_string(STRATA_VERSION_MINOR) + "." +
                                        std::to_string(STRATA_VERSION_PATCH));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e);
  }
  // CLI11's range checks pass NaN (every comparison with it is false)
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
  if (cal_cmd->parsed()) return run_calibrate_command();
  if (fit_cmd->parsed()) return run_fit_command();
  if (replay_cmd->parsed()) return run_replay_command();
  if (rps_cmd->parsed()) return run_replay_ps_command(*rps_cmd);
  if (sim_cmd->parsed()) return run_simulate_command(*sim_cmd);
  return run_scenario(opt, app.count("--time-limit") > 0);
}
