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

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "strata/io/human.hpp"
#include "strata/io/transformer_scenario.hpp"
#include "strata/io/validation.hpp"
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
  /// a search's table also prints the breakdown of its `explain`-th best plan (1-based; 0: none)
  int explain = 0;
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
  // MFU: the model's FLOPs per iteration (SC'21 §5.1) over the devices' peak in that time
  const double model_flops =
      analytic::model_flops(s.net, s.setup.batch, analytic::detail::sequence_of(s.net, s.setup));
  const double peak = s.machine.dev.peak(s.setup.compute()).count();
  const auto cost = search::cost_of(s.machine.devices(), t, tokens_per_iteration(s), r.cost.tokens,
                                    r.cost.price_per_gpu_hour);
  nlohmann::json j{{"parallel", nd_json(p.strategy)},
                   {"iteration_s", t},
                   {"tokens_per_s", tokens_per_iteration(s) / t},
                   {"mfu", model_flops / (t * s.machine.devices() * peak)},
                   {"peak_GiB", to_gib(p.memory)},
                   {"required_GiB", to_gib(p.required)},
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
                   {"efficiencies", s.efficiencies},
                   {"candidates", r.candidates},
                   {"fitting", r.fitting}};
  if (!s.defaults.empty()) j["defaults"] = s.defaults;
  // the requested values no plan could use, said rather than dropped
  if (const auto unused = search::unused_values(s.space, r.usage); !unused.empty())
    j["unused"] = unused;
  nlohmann::json best = nlohmann::json::array(), front = nlohmann::json::array();
  for (const auto& p : r.best) best.push_back(detail::ranked_json(q, p));
  for (const auto& e : r.pareto.entries) front.push_back(detail::ranked_json(q, e.item));
  j["best"] = best;
  j["pareto"] = front;
  if (q.cost.given) j["cost"] = detail::cost_json(q.cost);
  j["validation"] =
      detail::band_json(s.setup.framework.name, s.machine.devices() > 1, s.setup.lora.on());
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
    cj["time_s"] = c.iterations * t;  // the wall-clock time of the budget's iterations
    j["cost"] = cj;
  }
  return j;
}

namespace detail {
/// A plan's degrees (`nd_json`) as "t=4+sp c=1 e=1 p=2 v=1 d=8 zero=1 b=2 recompute=none"
/// (`recompute=full:3` when 3 layers of each chunk are checkpointed).
inline std::string plan_text(const nlohmann::json& x) {
  char plan[160];
  std::snprintf(plan, sizeof plan, "t=%d%s c=%d e=%d p=%d v=%d d=%d zero=%d b=%d recompute=%s",
                x["tensor"].get<int>(), x["sequence_parallel"].get<bool>() ? "+sp" : "",
                x["context"].get<int>(), x["expert"].get<int>(), x["pipeline"].get<int>(),
                x["virtual_stages"].get<int>(), x["data"].get<int>(), x["zero"].get<int>(),
                x["micro_batch"].get<int>(), x["recompute"].get<std::string>().c_str());
  if (x.contains("recompute_layers"))
    return std::string(plan) + ":" + std::to_string(x["recompute_layers"].get<int>());
  return plan;
}

/// A search's ranked plans (`search_report_json`): one row a plan, the columns aligned whatever
/// the degrees' digits; a cost column when the scenario gives a budget.
inline std::string search_rows(const nlohmann::json& j, bool money) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "  %3s  %-60s %12s %12s %6s %10s %13s%s\n", "#",
                "plan: t c e p v d zero b recompute", "iteration", "tokens/s", "MFU", "peak GiB",
                "required GiB", money ? "          cost" : "");
  out += line;
  int rank = 0;
  for (const auto& p : j["best"]) {
    std::snprintf(
        line, sizeof line, "  %3d  %-60s %12s %12s %5.1f%% %10.1f %13.1f", ++rank,
        plan_text(p["parallel"]).c_str(), human_duration(p["iteration_s"].get<double>()).c_str(),
        human_count(p["tokens_per_s"].get<double>()).c_str(), 100 * p["mfu"].get<double>(),
        p["peak_GiB"].get<double>(), p["required_GiB"].get<double>());
    out += line;
    if (money && p.contains("cost")) {
      std::snprintf(line, sizeof line, " %13s",
                    ("$" + human_count(p["cost"].get<double>())).c_str());
      out += line;
    }
    out += "\n";
  }
  return out;
}

/// A plan's time terms (the zero ones left out; JSON keeps every term), in words.
inline std::string time_lines(const nlohmann::json& t) {
  static constexpr std::pair<const char*, const char*> times[] = {
      {"forward_s", "forward"},
      {"backward_s", "backward"},
      {"recompute_s", "recomputation"},
      {"tensor_comm_s", "tensor-parallel comm"},
      {"context_comm_s", "context-parallel comm"},
      {"expert_comm_s", "expert all-to-all"},
      {"pipeline_bubble_s", "pipeline bubble"},
      {"pipeline_p2p_s", "pipeline sends"},
      {"data_comm_s", "data-parallel comm"},
      {"optimizer_s", "optimizer step"},
      {"host_s", "host (GPU waiting)"}};
  std::string out = "time per iteration\n";
  char line[128];
  for (const auto& [key, label] : times) {
    if (t[key].get<double>() <= 0) continue;
    std::snprintf(line, sizeof line, "  %-22s %12s\n", label,
                  human_duration(t[key].get<double>()).c_str());
    out += line;
  }
  return out;
}

/// A plan's memory terms at its peak (the zero ones left out but the totals), then the verdict.
inline std::string memory_lines(const nlohmann::json& j) {
  const auto& m = j["memory_GiB"];
  constexpr double gib = 1024.0 * 1024 * 1024;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "memory per GPU (stage %d at its peak: %s)\n",
                m["stage"].get<int>(), m["moment"].get<std::string>().c_str());
  out += line;
  for (const char* k :
       {"weights", "gradients", "optimizer_states", "activations", "embedding_activations",
        "weight_casts", "logits", "batch", "workspace", "buffers", "other", "peak", "context",
        "communicators", "fragmentation", "required", "capacity"}) {
    const double v = m[k].get<double>();
    const std::string_view key = k;
    if (v <= 0 && key != "peak" && key != "required" && key != "capacity") continue;
    out += table_row(human_label(key), human_bytes(v * gib));
  }
  if (m["paged_optimizer_states"].get<double>() > 0)
    out += table_row("paged optimizer states",
                     human_bytes(m["paged_optimizer_states"].get<double>() * gib),
                     "unified memory, not in required");
  if (m.contains("first_step"))
    out += table_row("first step", human_bytes(m["first_step"].get<double>() * gib),
                     "peak of the first step; the previous step's graph not yet held");
  const std::string verdict = j["verdict"].get<std::string>();
  const double margin = m["margin"].get<double>() * gib;
  if (verdict == "tight")
    return out +
           "  tight: fits only if the caching allocator gives back its cached blocks (margin " +
           human_bytes(margin) + ", " +
           human_bytes(margin + m["fragmentation"].get<double>() * gib) + " without the slack)\n";
  return out + "  " + (verdict == "fits" ? "fits" : "does NOT fit") + " (margin " +
         human_bytes(margin) + ")\n";
}
}  // namespace detail

namespace detail {
/// A plan's report (`transformer_report_json`) as a table: the plan as evaluated, its time and
/// memory terms, how far runs like it were.
inline std::string plan_table(const transformer_scenario& s, const nlohmann::json& j) {
  std::string out;
  char line[384];
  std::snprintf(line, sizeof line, "plan: %s; batch %s x sequence %s; %s; profile %s\n",
                plan_text(j["parallel"]).c_str(), human_count(s.setup.batch).c_str(),
                human_count(s.setup.sequence_or(s.net.sequence)).c_str(),
                j["framework"].get<std::string>().c_str(), s.profile_name.c_str());
  out += line;
  std::snprintf(line, sizeof line,
                "iteration %s, %s tokens/s, %.1f TFLOP/s per device, MFU %.1f %%\n",
                human_duration(j["iteration_time_s"].get<double>()).c_str(),
                human_count(j["tokens_per_s"].get<double>()).c_str(),
                j["tflops_per_device"].get<double>(), 100 * j["mfu"].get<double>());
  out += line;
  return out + time_lines(j["time"]) + memory_lines(j);
}
}  // namespace detail

/// A request's report (`transformer_request_json`) as a table for people. Memory columns say
/// which figure they show: `peak`, the tensors at the fullest stage's peak, or `required`, that
/// plus the runtime's headroom, on which "fits" is judged. Both end with the validation band. A
/// search with `explain` = N also prints its N-th plan's breakdown.
inline std::string transformer_request_table(const transformer_request& q) {
  const transformer_scenario& s = q.scenario;
  std::string out;
  char line[384];
  std::snprintf(line, sizeof line, "%s (%.2fB parameters) on %d x %s\n", s.name.c_str(),
                s.net.parameters() / 1e9, s.machine.devices(),
                std::string(s.machine.dev.name).c_str());
  out += line;
  for (const auto& d : s.defaults) out += "  default " + d + "\n";
  if (!s.search) {
    const nlohmann::json j = transformer_request_json(q);
    out += detail::plan_table(s, j);
    if (j.contains("cost") && j["cost"]["tokens"].get<double>() > 0) {
      const nlohmann::json& c = j["cost"];
      std::snprintf(line, sizeof line, "training %s tokens: %s iterations, %s, %s GPU-hours",
                    human_count(c["tokens"].get<double>()).c_str(),
                    human_count(c["iterations"].get<double>()).c_str(),
                    human_duration(c["time_s"].get<double>()).c_str(),
                    human_count(c["gpu_hours"].get<double>()).c_str());
      out += line;
      if (c["price_per_gpu_hour"].get<double>() > 0)
        out += ", $" + human_count(c["money"].get<double>()) + " at $" +
               nlohmann::json(c["price_per_gpu_hour"].get<double>()).dump() + " per GPU-hour";
      out += "\n";
    }
    // how far runs like this one were (io/validation_bands.hpp), or that none was checked
    return out + detail::band_line(j["validation"]);
  }
  const auto r = search::sweep(s.net, s.machine, s.setup, s.profile, s.space);
  const nlohmann::json j = search_report_json(q, r);
  std::snprintf(line, sizeof line, "%lld candidates, %lld fit\n", j["candidates"].get<long long>(),
                j["fitting"].get<long long>());
  out += line;
  if (j.contains("unused"))
    for (const auto& u : j["unused"]) out += "  not used: " + u.get<std::string>() + "\n";
  out += detail::search_rows(j, q.cost.given && q.cost.tokens > 0 && q.cost.price_per_gpu_hour > 0);
  out += detail::band_line(j["validation"]);
  if (q.explain > 0) {
    if (static_cast<std::size_t>(q.explain) > r.best.size())
      throw plan_error("explain: plan " + std::to_string(q.explain) + " asked, the search ranks " +
                       std::to_string(r.best.size()));
    transformer_scenario one = s;
    one.search = false;
    one.strategy = r.best[static_cast<std::size_t>(q.explain - 1)].strategy;
    std::snprintf(line, sizeof line, "\nplan %d of the search:\n", q.explain);
    out += line + detail::plan_table(one, transformer_report_json(one));
  }
  return out;
}

}  // namespace strata::io
