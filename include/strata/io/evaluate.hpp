#pragma once
/// @file io/evaluate.hpp
/// @brief The front door: any scenario — ParaDL or a parameter server (`io/scenario.hpp`), a
/// transformer plan or search (`io/transformer_request.hpp`), a DLRM (`io/dlrm_scenario.hpp`) or
/// a single-GPU step (`io/step_scenario.hpp`) — evaluated by one function that the command line,
/// the Python module and the MPI search all call, so their reports and error sentences agree.
/// `io::simulate_scenario` (`io/simulate.hpp`) is its event-by-event twin.
/// @code
/// const auto r = strata::io::evaluate_scenario(json, {}, shipped_profile);
/// std::cout << r.report.dump(2);
/// @endcode

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/io/csv.hpp"
#include "strata/io/dlrm_scenario.hpp"
#include "strata/io/model_list.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/step_scenario.hpp"
#include "strata/io/transformer_request.hpp"
#include "strata/io/transformer_scenario.hpp"

namespace strata::io {

/// The scenario `strata` runs when given no input: Llama-3 8B on one DGX H100 node (8 GPUs),
/// Megatron-LM with tensor parallelism 2 (sequence-parallel) and 4-way data parallelism with a
/// distributed optimizer, 64 sequences of 8,192 tokens per iteration.
inline constexpr std::string_view default_scenario = R"({
  "model": "llama3-8b",
  "cluster": {"preset": "dgx-h100", "devices": 8},
  "parallel": {"tensor": 2, "sequence_parallel": true, "data": 4, "zero": 1, "micro_batch": 1,
               "recompute": "selective"},
  "training": {"batch": 64, "sequence": 8192}
})";

/// A report as JSON (the schema in docs/cli.md), as a table for people or as CSV for a
/// spreadsheet (`csv_of`).
enum class report_format { json, table, csv };

/// How to evaluate: the format, what a search (a transformer's plans or a parameter-server
/// system's) reports of its progress (false: stop it), whether the caller set a time limit (only
/// a search takes one), and how errors name these options ("--" on the command line, "" in
/// Python).
struct evaluate_request {
  report_format format = report_format::json;
  std::function<bool(double)> progress{};
  bool time_limit = false;
  std::string names = "--";
  /// a transformer search's table also explains its N-th best plan (1-based; 0: none)
  int explain = 0;
};

/// One evaluated scenario: `report` for JSON, `table` for a table or CSV.
struct scenario_evaluation {
  nlohmann::json report;
  std::string table;
};

/// The kinds of scenario, told apart by their keys.
enum class scenario_kind { cnn, transformer, dlrm, embedding_bag, step };

[[nodiscard]] inline scenario_kind kind_of(const nlohmann::json& j) {
  if (j.is_object() && j.contains("dlrm")) return scenario_kind::dlrm;
  if (j.is_object() && j.contains("embedding_bag")) return scenario_kind::embedding_bag;
  if (j.is_object() && j.contains("step")) return scenario_kind::step;
  if (is_transformer_scenario(j)) return scenario_kind::transformer;
  return scenario_kind::cnn;
}

namespace detail {
/// Evaluates scenario `j` as JSON, or as a table when `table` (`evaluate_scenario`).
inline scenario_evaluation evaluate_as(const nlohmann::json& j, const evaluate_request& o,
                                       std::string_view shipped, bool table) {
  const std::string& n = o.names;
  const auto no_limit = [&](const char* what) {
    if (o.time_limit)  // Python's keyword is time_limit
      throw plan_error((n.empty() ? std::string("time_limit") : n + "time-limit") +
                       ": stops a search, not " + what);
  };
  scenario_evaluation out;
  if (o.explain > 0 && !(kind_of(j) == scenario_kind::transformer && j.contains("search") && table))
    throw plan_error(n +
                     "explain: explains a plan of a transformer search's table (\"search\": "
                     "{...}, " +
                     n + "format table)");
  // a scenario for the other command, named as such (not as an "unknown field")
  if (j.is_object() && j.contains("strategy_tree"))
    throw plan_error(
        "scenario: this is a strategy-tree (Proteus) scenario: run it with `strata simulate`");
  switch (kind_of(j)) {
    case scenario_kind::dlrm:
      no_limit("a DLRM scenario");
      out.report = run_dlrm_scenario(j, shipped);
      if (table) out.table = dlrm_table(out.report);
      return out;
    case scenario_kind::embedding_bag:
      no_limit("an embedding-bag scenario");
      out.report = run_embedding_bag_scenario(j);
      if (table) out.table = embedding_bag_table(out.report);
      return out;
    case scenario_kind::step:
      no_limit("a step scenario");
      out.report = step_report_json(j, shipped);
      if (table) out.table = step_table(out.report);
      return out;
    case scenario_kind::transformer: {
      transformer_request r = parse_transformer_request(j, shipped);
      if (!r.scenario.search) no_limit("a transformer plan's evaluation");
      if (r.scenario.search && o.progress) r.scenario.space.progress = o.progress;
      r.explain = o.explain;
      if (table)
        out.table = transformer_request_table(r);
      else
        out.report = transformer_request_json(r);
      return out;
    }
    case scenario_kind::cnn:
      break;
  }
  check_model_name(j);
  scenario s = parse_scenario(j);
  const bool search = s.ps && s.ps->search;
  if (!search) no_limit("this scenario's evaluation");
  if (search && o.progress) s.ps->space.progress = o.progress;
  if (table)
    out.table = report_table(s);
  else
    out.report = report_json(s);
  return out;
}
}  // namespace detail

/// Evaluates scenario `j` (`shipped`: the text of the H100 profile that "auto" names): its
/// report as JSON, or in `table` as a table or CSV (`o.format`).
inline scenario_evaluation evaluate_scenario(const nlohmann::json& j, const evaluate_request& o,
                                             std::string_view shipped) {
  scenario_evaluation out = detail::evaluate_as(j, o, shipped, o.format == report_format::table);
  if (o.format == report_format::csv) out.table = csv_of(out.report);
  return out;
}

}  // namespace strata::io
