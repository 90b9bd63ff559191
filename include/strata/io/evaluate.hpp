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
#include "strata/io/dlrm_scenario.hpp"
#include "strata/io/model_list.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/step_scenario.hpp"
#include "strata/io/transformer_request.hpp"
#include "strata/io/transformer_scenario.hpp"

namespace strata::io {

/// A report as JSON (the schema in docs/cli.md) or as a table for people.
enum class report_format { json, table };

/// How to evaluate: the format, what a parameter-server search reports of its progress (false:
/// stop it), whether the caller set a time limit (only a parameter-server search takes one), and
/// how errors name these options ("--" on the command line, "" in Python).
struct evaluate_request {
  report_format format = report_format::json;
  std::function<bool(double)> progress{};
  bool time_limit = false;
  std::string names = "--";
};

/// One evaluated scenario: `report` for JSON, `table` for a table.
struct scenario_evaluation {
  nlohmann::json report;
  std::string table;
};

/// The kinds of scenario, told apart by their keys.
enum class scenario_kind { cnn, transformer, dlrm, step };

[[nodiscard]] inline scenario_kind kind_of(const nlohmann::json& j) {
  if (j.is_object() && j.contains("dlrm")) return scenario_kind::dlrm;
  if (j.is_object() && j.contains("step")) return scenario_kind::step;
  if (is_transformer_scenario(j)) return scenario_kind::transformer;
  return scenario_kind::cnn;
}

/// Evaluates scenario `j` (`shipped`: the text of the H100 profile that "auto" names).
inline scenario_evaluation evaluate_scenario(const nlohmann::json& j, const evaluate_request& o,
                                             std::string_view shipped) {
  const std::string& n = o.names;
  const bool table = o.format == report_format::table;
  const auto no_limit = [&](const char* what) {
    if (o.time_limit)
      throw plan_error(n + "time-limit: stops a parameter-server search, not " + what);
  };
  scenario_evaluation out;
  // a scenario for the other command, named as such (not as an "unknown field")
  if (j.is_object() && j.contains("strategy_tree"))
    throw plan_error(
        "scenario: this is a strategy-tree (Proteus) scenario: run it with `strata simulate`");
  switch (kind_of(j)) {
    case scenario_kind::dlrm:
    case scenario_kind::step: {
      const bool dlrm = kind_of(j) == scenario_kind::dlrm;
      if (table)
        throw plan_error(n + "format: a " + (dlrm ? "DLRM" : "step") +
                         " scenario's report is JSON only (" + n + "format json)");
      no_limit(dlrm ? "a DLRM scenario" : "a step scenario");
      out.report = dlrm ? run_dlrm_scenario(j, shipped) : step_report_json(j, shipped);
      return out;
    }
    case scenario_kind::transformer: {
      no_limit("a transformer scenario");
      const transformer_request r = parse_transformer_request(j, shipped);
      if (table)
        out.table = transformer_request_table(r);
      else
        out.report = transformer_request_json(r);
      return out;
    }
    case scenario_kind::cnn:
      break;
  }
  detail::check_model_name(j);
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

}  // namespace strata::io
