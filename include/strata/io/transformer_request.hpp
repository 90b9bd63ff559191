#pragma once
/// @file io/transformer_request.hpp
/// @brief A transformer scenario with an optional training budget, and its report with the
/// search's Pareto front and cost. The CLI, the Python module and strata-mpi all read and
/// report transformer scenarios through here, so their reports agree.
///
/// `"cost": {"tokens": N, "price_per_gpu_hour": P}` (both optional) beside the scenario's
/// fields asks for the GPU-hours and money of training N tokens (`search::cost_of`). A search
/// report lists the `best` plans and the `pareto` front (time, memory, GPU-hours; the plans
/// that fit and that no other plan beats on all three), each with its cost.
/// @code
/// auto r = strata::io::parse_transformer_request(nlohmann::json::parse(R"({
///   "model": "gpt3-175b", "cluster": {"preset": "dgx-a100", "devices": 1024},
///   "training": {"batch": 1536}, "search": true,
///   "cost": {"tokens": 300e9, "price_per_gpu_hour": 2.0}})"));
/// nlohmann::json report = strata::io::transformer_request_json(r);
/// @endcode

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/io/transformer_scenario.hpp"
#include "strata/search/pareto.hpp"
#include "strata/search/transformer_sweep.hpp"

namespace strata::io {

/// The training budget a report prices plans for (0: not given).
struct cost_request {
  double tokens = 0;              ///< tokens to train
  double price_per_gpu_hour = 0;  ///< money per GPU-hour
  bool given = false;             ///< the scenario had a "cost" object
};

struct transformer_request {
  transformer_scenario scenario;
  cost_request cost;
};

/// Parses a transformer scenario (`parse_transformer_scenario`) and its "cost" object.
inline transformer_request parse_transformer_request(nlohmann::json j,
                                                     std::string_view h100_profile = {}) {
  namespace d = detail;
  transformer_request r;
  if (j.is_object() && j.contains("cost")) {
    const nlohmann::json c = j["cost"];
    d::only_keys(c, "cost", {"tokens", "price_per_gpu_hour"});
    r.cost.tokens = d::num_field(c, "cost", "tokens", 0, 1e18, 0);
    r.cost.price_per_gpu_hour = d::num_field(c, "cost", "price_per_gpu_hour", 0, 1e9, 0);
    if (r.cost.price_per_gpu_hour > 0 && !(r.cost.tokens > 0))
      d::fail("cost.price_per_gpu_hour", "prices the GPU-hours of cost.tokens: give tokens too");
    r.cost.given = true;
    j.erase("cost");
  }
  r.scenario = parse_transformer_scenario(j, h100_profile);
  return r;
}

namespace detail {
inline double tokens_per_iteration(const transformer_scenario& s) {
  return s.setup.batch * static_cast<double>(s.setup.sequence_or(s.net.sequence));
}
/// A ranked plan as the search report lists it.
inline nlohmann::json ranked_json(const transformer_request& r,
                                  const search::ranked_transformer_plan& p) {
  const transformer_scenario& s = r.scenario;
  const double t = p.time.total().count();
  const auto cost = search::cost_of(s.machine.devices(), t, tokens_per_iteration(s), r.cost.tokens,
                                    r.cost.price_per_gpu_hour);
  nlohmann::json j{{"parallel", nd_json(p.strategy)},
                   {"iteration_s", t},
                   {"tokens_per_s", tokens_per_iteration(s) / t},
                   {"memory_GiB", to_gib(p.memory)},
                   {"gpu_hours_per_iteration", cost.gpu_hours_per_iteration}};
  if (r.cost.tokens > 0) j["gpu_hours"] = cost.gpu_hours;
  if (r.cost.tokens > 0 && r.cost.price_per_gpu_hour > 0) j["cost"] = cost.money;
  return j;
}
inline nlohmann::json cost_json(const cost_request& c) {
  return {{"tokens", c.tokens}, {"price_per_gpu_hour", c.price_per_gpu_hour}};
}
}  // namespace detail

/// The report of a search from its (possibly merged) sweep result `r`.
inline nlohmann::json search_report_json(const transformer_request& q,
                                         const search::transformer_sweep_result& r) {
  const transformer_scenario& s = q.scenario;
  nlohmann::json j{{"model", s.name},
                   {"parameters", s.net.parameters()},
                   {"cluster", std::string(s.machine.name)},
                   {"devices", s.machine.devices()},
                   {"profile", s.profile_name},
                   {"candidates", r.candidates},
                   {"fitting", r.fitting}};
  nlohmann::json best = nlohmann::json::array(), front = nlohmann::json::array();
  for (const auto& p : r.best) best.push_back(detail::ranked_json(q, p));
  for (const auto& e : r.pareto.entries) front.push_back(detail::ranked_json(q, e.item));
  j["best"] = best;
  j["pareto"] = front;
  if (q.cost.given) j["cost"] = detail::cost_json(q.cost);
  return j;
}

/// The report of a request: a plan's report (`transformer_report_json`, with its "cost" when
/// asked), or a search's (`search_report_json` over one sweep of the whole space).
inline nlohmann::json transformer_request_json(const transformer_request& q) {
  const transformer_scenario& s = q.scenario;
  if (s.search)
    return search_report_json(q, search::sweep(s.net, s.machine, s.setup, s.profile, s.space));
  nlohmann::json j = transformer_report_json(s);
  if (q.cost.given) {
    const double t = j["iteration_time_s"].get<double>();
    const auto c = search::cost_of(s.machine.devices(), t, detail::tokens_per_iteration(s),
                                   q.cost.tokens, q.cost.price_per_gpu_hour);
    nlohmann::json cj = detail::cost_json(q.cost);
    cj["gpu_hours_per_iteration"] = c.gpu_hours_per_iteration;
    cj["iterations"] = c.iterations;
    cj["gpu_hours"] = c.gpu_hours;
    cj["money"] = c.money;
    j["cost"] = cj;
  }
  return j;
}

}  // namespace strata::io
