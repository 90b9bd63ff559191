// strata simulate: a scenario event by event (io/simulate.hpp), with its timeline and pictures.
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "common.hpp"
#include "shipped_profiles.hpp"
#include "strata/io/simulate.hpp"
#include "strata/io/svg.hpp"
#include "strata/io/transformer_scenario.hpp"

namespace strata_cli {
namespace {

// ---- strata simulate: the same scenario, event by event -----------------------------------
struct simulate_options {
  std::string input, trace, svg, memory_svg, schedule = "gpipe", format = "json";
  bool overlap = false, details = false;
  int buckets = 1, max_in_flight = 0;
  double gamma = 0;
};

CLI::App* add_simulate(CLI::App& app, simulate_options& o) {
  auto* sim_cmd = app.add_subcommand("simulate", "simulate one iteration event by event");
  sim_cmd->add_option("scenario", o.input, "scenario JSON file, or - for standard input")
      ->required();
  sim_cmd->add_option("--format", o.format, "report format: json, table (for people) or csv")
      ->check(CLI::IsMember({"json", "table", "csv"}));
  sim_cmd->add_flag("--details", o.details,
                    "also report each stream's utilization and the critical path");
  sim_cmd->add_option("--trace", o.trace, "write a Chrome-trace / Perfetto JSON timeline");
  sim_cmd->add_option("--svg", o.svg, "write the timeline as a self-contained SVG picture");
  sim_cmd->add_option("--memory-svg", o.memory_svg,
                      "write each pipeline stage's memory against the device as an SVG bar chart");
  sim_cmd->add_flag("--overlap", o.overlap,
                    "overlap data-parallel collectives with compute (the gradient all-reduce with "
                    "backward; ZeRO-2/3's reductions with the next micro-batch; ZeRO-3's gathers "
                    "one layer ahead); a transformer plan overlaps unless its overlap is 0");
  sim_cmd
      ->add_option("--buckets", o.buckets,
                   "gradient all-reduce buckets (a transformer plan: its bucket_MB's)")
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
    req.details = o.details;
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
    if (o.format == "table")
      print_table(strata::io::simulation_table(sim.report));
    else if (o.format == "csv")
      print_table(strata::io::csv_of(sim.report));
    else
      print_json(sim.report);
    return 0;
  });
}

simulate_options options;

}  // namespace

CLI::App* add_simulate_command(CLI::App& app) { return add_simulate(app, options); }

int run_simulate_command(const CLI::App& sim_cmd) {
  // CLI11's range checks pass NaN (every comparison with it is false)
  if (!std::isfinite(options.gamma)) return error_line("--gamma", "must be a number in [0, 100]");
  return run_simulate(sim_cmd, options);
}

}  // namespace strata_cli
