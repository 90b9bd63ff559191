#pragma once
/// @file io/simulate.hpp
/// @brief `strata simulate` as one function: a scenario — ParaDL, transformer, DLRM, or a
/// Proteus strategy tree — simulated event by event, with its report and what the timeline and the
/// pictures are drawn from. The command line and the Python module both call it, so their
/// reports and their error sentences cannot differ.
/// @code
/// const auto sim = strata::io::simulate_scenario(json, {.overlap = true}, shipped_profile);
/// std::cout << sim.report.dump(2);   // sim.trace when `trace` was asked for
/// @endcode

#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/io/csv.hpp"
#include "strata/io/dlrm_scenario.hpp"
#include "strata/io/human.hpp"
#include "strata/io/model_list.hpp"
#include "strata/io/proteus_tree.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/simulation.hpp"
#include "strata/io/transformer_scenario.hpp"
#include "strata/proteus/compile.hpp"
#include "strata/proteus/htae.hpp"
#include "strata/sim/dlrm.hpp"
#include "strata/sim/paradl.hpp"
#include "strata/sim/transformer.hpp"

namespace strata::io {

/// The simulator's options (not given: no in-flight limit, gamma 0, GPipe; a transformer plan's
/// own overlap and gradient buckets, as the closed form prices them, and one bucket otherwise).
/// Given ones a scenario kind has no use for are refused. `names` is how errors name them: "--"
/// on the command line, "" in Python.
struct simulate_request {
  bool overlap = false;
  std::optional<int> buckets;
  std::optional<int> max_in_flight;
  std::optional<double> gamma;
  std::optional<std::string> schedule;  ///< ParaDL pipelines: "gpipe" (default) or "1f1b"
  bool trace = false;                   ///< build the Chrome/Perfetto timeline
  /// report each stream's utilization and the critical path (ParaDL and transformer plans)
  bool details = false;
  std::string names = "--";
};

/// One simulated scenario.
struct scenario_simulation {
  nlohmann::json report;  ///< the events' summary, the closed form's time, the simulated ranks
  nlohmann::json trace;   ///< the timeline (null unless asked for)
  /// ParaDL and transformer scenarios: the task graph and its run (what pictures are drawn from)
  std::optional<sim::simulator> graph;
  sim::result run{};
  std::optional<transformer_scenario> transformer;  ///< set for a transformer scenario
};

namespace detail {
/// A DLRM plan: every rank simulated (`sim::simulate_dlrm`).
inline scenario_simulation simulate_dlrm_scenario(const nlohmann::json& j,
                                                  const simulate_request& o,
                                                  std::string_view shipped) {
  if (o.schedule || o.max_in_flight || o.overlap || o.buckets || o.gamma)
    throw plan_error(o.names + "schedule, " + o.names + "max-in-flight, " + o.names + "overlap, " +
                     o.names + "buckets and " + o.names +
                     "gamma: a DLRM plan's schedule is fixed (Lin et al. §V-B1)");
  const dlrm_scenario d = parse_dlrm_scenario(j, shipped);
  auto run = sim::simulate_dlrm(d.model, d.setup, d.owner, d.gpus, d.machine, d.profile, d.el);
  scenario_simulation out;
  out.report = summary(run.graph, run.run, o.details);
  out.report["closed_form_iteration_time_s"] = run.report.iteration_time;
  out.report["simulated_ranks"] = d.gpus;
  out.report["model"] = "DLRM";
  out.report["cluster"] = std::string(d.machine.name);
  out.report["devices"] = d.gpus;
  if (d.head.contains("sharding")) out.report["sharding"] = d.head["sharding"];
  if (d.head.contains("chosen")) out.report["sharding"] = d.head["chosen"];
  if (o.trace) out.trace = chrome_trace(run.graph, run.run);
  out.graph = std::move(run.graph);
  out.run = std::move(run.run);
  return out;
}
}  // namespace detail

/// Simulates scenario `j` (`shipped`: the text of the H100 profile a transformer scenario's
/// "auto" means, as `parse_transformer_scenario` takes it).
inline scenario_simulation simulate_scenario(const nlohmann::json& j, const simulate_request& o,
                                             std::string_view shipped) {
  const std::string& n = o.names;
  scenario_simulation out;
  if (j.is_object() && j.contains("strategy_tree")) {
    // Proteus: the tree's nodes carry the schedule (n_micro_batch, max_ongoing_micro_batch)
    if (o.schedule || o.max_in_flight || o.overlap || o.buckets)
      throw plan_error(n + "schedule, " + n + "max-in-flight, " + n + "overlap and " + n +
                       "buckets: a strategy tree sets its schedule in its nodes' schedule "
                       "configs");
    auto ps = parse_proteus_scenario(j, shipped);
    if (o.gamma) ps.gamma = *o.gamma;
    const auto g = ps.cnn.empty()
                       ? proteus::compile(ps.net, ps.tree, ps.machine, ps.setup, ps.profile)
                       : proteus::compile(std::span<const layer>(ps.cnn), ps.tree, ps.machine,
                                          ps.cnn_setup, ps.profile);
    const auto run =
        proteus::execute(g, ps.machine, {.gamma = ps.gamma, .gamma_per_level = ps.gamma_per_level});
    out.report = proteus_report_json(ps, g, run);
    if (o.trace) out.trace = proteus_trace(g, run);
    return out;
  }
  if (j.is_object() && j.contains("dlrm")) return detail::simulate_dlrm_scenario(j, o, shipped);
  // a scenario for the other command, named as such (not as an "unknown field")
  if (j.is_object() && (j.contains("step") || j.contains("embedding_bag")))
    throw plan_error(std::string("scenario: this is a ") +
                     (j.contains("step") ? "one-GPU step" : "single embedding-bag") +
                     " scenario: evaluate it with `strata FILE`, not `strata simulate`");
  if (is_transformer_scenario(j)) {
    if (o.schedule)
      throw plan_error(n + "schedule: a transformer scenario sets its schedule in " +
                       "parallel.schedule");
    transformer_scenario ts = parse_transformer_scenario(j, shipped);
    if (ts.search) throw plan_error("search: simulate runs one plan, not a search");
    const parallel::nd& st = ts.strategy;  // sim::simulate's condition for bucketed reductions
    if (o.buckets && !(!st.data.sharding().shards_gradients() &&
                       st.data.shards() * st.expert.degree * st.context.degree > 1))
      throw plan_error(n + "buckets: only ZeRO-0/1 data parallelism reduces gradients in " +
                       "buckets (this plan's reductions follow its ZeRO stage, or it has none)");
    // the plan's own assumptions unless given, so that the closed form beside it prices the same
    // iteration: its overlap (all or nothing in events) and its buckets (`data.bucket`)
    const double ov = st.data.overlap;
    if (!o.overlap && ov > 0 && ov < 1)
      throw plan_error("parallel.overlap " + std::to_string(ov).substr(0, 4) +
                       ": the simulator runs a data-parallel collective beside the compute or "
                       "after it; give 0 or 1 (or " +
                       n + "overlap) to simulate this plan");
    const sim::transformer_options opt{.overlap = o.overlap || ov > 0,
                                       .buckets = o.buckets.value_or(0),
                                       .max_in_flight = o.max_in_flight.value_or(0),
                                       .gamma = o.gamma.value_or(0.0)};
    auto run = sim::simulate(ts.net, ts.strategy, ts.machine, ts.setup, ts.profile, opt);
    out.report = summary(run.graph, run.run, o.details);
    out.report["closed_form_iteration_time_s"] =
        analytic::evaluate(ts.net, ts.strategy, ts.machine, ts.setup, ts.profile)
            .iteration_time()
            .count();
    out.report["simulated_ranks"] = run.simulated_ranks;
    out.report["model"] = ts.name;
    out.report["cluster"] = std::string(ts.machine.name);
    out.report["devices"] = ts.machine.devices();
    if (run.run.oom)
      out.report["out_of_memory"] = {
          {"stage", run.run.oom->device},
          {"task", run.graph.tasks()[static_cast<std::size_t>(run.run.oom->task)].name},
          {"GiB", run.run.oom->bytes / (1024.0 * 1024 * 1024)}};
    if (o.trace) out.trace = chrome_trace(run.graph, run.run);
    out.graph = std::move(run.graph);
    out.run = std::move(run.run);
    out.transformer = std::move(ts);
    return out;
  }
  detail::check_model_name(j);
  const scenario s = parse_scenario(j);
  if (s.ps) throw plan_error("strategy: simulate runs the ParaDL strategies");
  // what each strategy's graph has: micro-batches (pipeline), a gradient all-reduce in buckets
  // (the data-parallel kinds), communication that may overlap (both)
  const bool pipeline = std::holds_alternative<parallel::pipeline>(s.strategy);
  const bool gradients = std::holds_alternative<parallel::data>(s.strategy) ||
                         std::holds_alternative<parallel::spatial>(s.strategy) ||
                         std::holds_alternative<parallel::data_filter>(s.strategy) ||
                         std::holds_alternative<parallel::data_spatial>(s.strategy);
  if (!pipeline && (o.schedule || o.max_in_flight))
    throw plan_error(n + (o.schedule ? "schedule" : "max-in-flight") +
                     ": only a pipeline strategy has micro-batches to schedule");
  if (!gradients && o.buckets)
    throw plan_error(n + "buckets: this strategy all-reduces no gradients");
  if (!gradients && !pipeline && o.overlap)
    throw plan_error(n + "overlap: this strategy has no communication that could overlap");
  sim::plan_options opt{.overlap = o.overlap,
                        .buckets = o.buckets.value_or(1),
                        .gamma = o.gamma.value_or(0.0),
                        .max_in_flight = o.max_in_flight.value_or(0)};
  if (o.schedule) {
    if (*o.schedule == "1f1b")
      opt.schedule = sim::pipeline_schedule::one_f_one_b;
    else if (*o.schedule != "gpipe")
      throw plan_error(n + "schedule: must be \"gpipe\" or \"1f1b\"");
  }
  auto run = sim::simulate(s.layers, s.strategy, s.machine, s.setup, opt);
  out.report = summary(run.graph, run.run, o.details);
  out.report["closed_form_iteration_time_s"] = evaluate(s).iteration_time().count();
  out.report["simulated_ranks"] = run.simulated_ranks;
  out.report["model"] = s.model_name;
  out.report["cluster"] = std::string(s.machine.name);
  out.report["devices"] = s.machine.devices();
  if (o.trace) out.trace = chrome_trace(run.graph, run.run);
  out.graph = std::move(run.graph);
  out.run = std::move(run.run);
  return out;
}

/// A simulation's report (`simulate_scenario`) as a table for people: the simulated iteration
/// against the closed form first, then each rank's peak memory and exposed communication, then
/// (when the report has them: `simulate_request::details`) the streams' utilization and the
/// critical path.
inline std::string simulation_table(const nlohmann::json& r) {
  std::string out;
  char line[256];
  const double t = r["iteration_time_s"].get<double>();
  if (r.contains("stages")) {  // a Proteus strategy tree
    std::snprintf(line, sizeof line, "%s on %s (%d devices), %d stages x %d micro-batches\n",
                  r["model"].get<std::string>().c_str(), r["cluster"].get<std::string>().c_str(),
                  r["devices"].get<int>(), r["stages"].get<int>(), r["n_micro_batch"].get<int>());
    out += line;
    std::snprintf(line, sizeof line, "simulated iteration %s, %s samples/s (%s operations)\n",
                  human_duration(t).c_str(), human_count(r["samples_per_s"].get<double>()).c_str(),
                  human_count(r["operations"].get<double>()).c_str());
    out += line;
    const double gib = 1024.0 * 1024 * 1024;
    out += table_row("peak memory", human_bytes(r["peak_memory_GiB"].get<double>() * gib));
    out += table_row("capacity", human_bytes(r["capacity_GiB"].get<double>() * gib));
  } else {
    std::snprintf(line, sizeof line, "%s on %s (%d devices)\n",
                  r["model"].get<std::string>().c_str(), r["cluster"].get<std::string>().c_str(),
                  r["devices"].get<int>());
    out += line;
    const double cf = r["closed_form_iteration_time_s"].get<double>();
    const int ranks = r["simulated_ranks"].get<int>();
    std::snprintf(line, sizeof line,
                  "simulated iteration %s; closed form %s (%+.1f %%)\n%d rank%s simulated: %s "
                  "tasks, %s events\n",
                  human_duration(t).c_str(), human_duration(cf).c_str(),
                  cf > 0 ? 100 * (t - cf) / cf : 0.0, ranks, ranks == 1 ? "" : "s",
                  human_count(r["tasks"].get<double>()).c_str(),
                  human_count(r["events"].get<double>()).c_str());
    out += line;
    std::snprintf(line, sizeof line, "  %4s %14s %14s\n", "rank", "peak memory", "exposed comm");
    out += line;
    const auto& mem = r["peak_memory_bytes"];
    const auto& comm = r["exposed_communication_s"];
    for (std::size_t i = 0; i < mem.size(); ++i) {
      std::snprintf(line, sizeof line, "  %4zu %14s %14s\n", i,
                    human_bytes(mem[i].get<double>()).c_str(),
                    i < comm.size() ? human_duration(comm[i].get<double>()).c_str() : "-");
      out += line;
    }
  }
  if (r.contains("out_of_memory")) {
    const auto& o = r["out_of_memory"];
    std::snprintf(line, sizeof line, "OUT OF MEMORY at %s (%.2f GiB)\n",
                  (o.contains("task") ? o["task"] : o["operation"]).dump().c_str(),
                  o["GiB"].get<double>());
    out += line;
  }
  if (r.contains("utilization")) {
    out += "utilization\n";
    for (const auto& u : r["utilization"]) {
      std::snprintf(line, sizeof line, "  rank %-4d %-28s %5.1f %%\n", u["rank"].get<int>(),
                    u["stream"].get<std::string>().c_str(), 100 * u["utilization"].get<double>());
      out += line;
    }
  }
  if (r.contains("critical_path")) {
    out += "critical path (" + human_count(static_cast<double>(r["critical_path"].size())) +
           " tasks)\n";
    for (const auto& name : r["critical_path"]) out += "  " + name.get<std::string>() + "\n";
  } else if (!r.contains("stages")) {
    out += "(--details adds each stream's utilization and the critical path)\n";
  }
  return out;
}

}  // namespace strata::io
