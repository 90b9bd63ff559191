#pragma once
/// @file io/ps_scenario.hpp
/// @brief Parameter-server scenarios (Yan et al.): a strategy of kind `"parameter-server"` (one
/// configuration) or `"parameter-server-search"` (the optimizer's best), and their report.
/// A scenario names it as its strategy (`io/scenario.hpp`); the schema is in docs/cli.md.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/analytic/yan.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/io/json.hpp"
#include "strata/model/layer.hpp"
#include "strata/search/yan_optimizer.hpp"

namespace strata::io {

/// A parameter-server scenario (Yan et al.): one configuration, or a search for the best.
struct ps_request {
  bool search = false;
  yan::system system;
  int threads = 16;
  std::vector<yan::layer_split> layers;  ///< empty: every layer on all workers
  search::yan_space space;
};

namespace detail {

inline ps_request parse_ps(const json& j, bool search, const std::string& path = "strategy") {
  ps_request r;
  r.search = search;
  if (search) {
    only_keys(j, path, {"kind", "threads", "replicate_layers", "read_period", "write_period"});
    if (j.contains("threads")) {
      const json& t = j["threads"];
      if (!t.is_array() || t.empty()) fail(path + ".threads", "must be a non-empty array");
      r.space.threads.clear();
      for (std::size_t i = 0; i < t.size(); ++i)
        r.space.threads.push_back(
            get_int(t[i], path + ".threads[" + std::to_string(i) + "]", 1, 1024));
    }
    if (j.contains("replicate_layers")) {
      if (!j["replicate_layers"].is_boolean())
        fail(path + ".replicate_layers", "must be true or false");
      r.space.replicate_layers = j["replicate_layers"].get<bool>();
    }
    r.space.read_period = int_field(j, path, "read_period", 1, 1 << 30, 70);
    r.space.write_period = int_field(j, path, "write_period", 1, 1 << 30, 40);
    return r;
  }
  only_keys(j, path,
            {"kind", "servers", "replicas", "workers", "threads", "read_period", "write_period",
             "layers"});
  r.system = {int_field(j, path, "servers", 1, max_degree, 1, true),
              int_field(j, path, "replicas", 1, max_degree, 1, true),
              int_field(j, path, "workers", 1, max_degree, 1, true),
              int_field(j, path, "read_period", 1, 1 << 30, 70),
              int_field(j, path, "write_period", 1, 1 << 30, 40)};
  r.threads = int_field(j, path, "threads", 1, 1024, 16);
  if (j.contains("layers")) {
    const json& ls = j["layers"];
    if (!ls.is_array() || ls.empty()) fail(path + ".layers", "must be a non-empty array");
    for (std::size_t i = 0; i < ls.size(); ++i) {
      const std::string lp = path + ".layers[" + std::to_string(i) + "]";
      only_keys(ls[i], lp, {"partitions", "threads", "replicas"});
      r.layers.push_back({int_field(ls[i], lp, "partitions", 1, max_degree, 1),
                          int_field(ls[i], lp, "threads", 1, 1024, r.threads),
                          int_field(ls[i], lp, "replicas", 1, max_degree, 1)});
    }
  }
  return r;
}

}  // namespace detail

/// Evaluates a parameter-server scenario (Yan et al.) on `layers` with `machines` CPU nodes and
/// returns its report as JSON.
inline nlohmann::json parameter_server_json(const ps_request& r, const std::string& model,
                                            const std::vector<layer>& layers,
                                            const cluster& machine, double dataset) {
  const auto net = yan::fold(layers);
  const yan::costs c = yan::e5_2450();
  const int machines = machine.devices();
  yan::system sys = r.system;
  std::vector<yan::layer_split> split = r.layers;
  if (r.search) {
    search::yan_space space = r.space;
    space.machines = machines;
    const auto best = [&] {
      try {
        return search::optimize_yan(net, c, space, dataset);
      } catch (const plan_error& e) {
        const std::string what = e.what();
        if (what.rfind("--", 0) == 0) throw;  // a caller's own message (a time limit)
        throw plan_error("strategy: " + what);
      }
    }();
    sys = best.system;
    split = best.split;
  } else if (split.empty()) {
    split = yan::uniform(net, sys, r.threads);
  }
  const auto e = yan::evaluate(net, sys, split, c, dataset, machines);
  nlohmann::json j;
  j["model"] = model;
  j["cluster"] = std::string(machine.name);
  j["device"] = std::string(machine.dev.name);
  j["strategy"] = r.search ? "parameter-server-search" : "parameter-server";
  j["machines"] = machines;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& l : split)
    rows.push_back(
        {{"partitions", l.partitions}, {"threads", l.threads}, {"replicas", l.replicas}});
  j["configuration"] = {{"servers", sys.servers},           {"replicas", sys.replicas},
                        {"workers", sys.workers},           {"read_period", sys.read_period},
                        {"write_period", sys.write_period}, {"layers", rows}};
  j["samples_per_epoch"] = dataset;
  j["epoch_time_s"] = e.epoch();
  j["throughput_samples_per_s"] = dataset / e.epoch();
  j["time_s"] = {
      {"compute", e.compute}, {"communication", e.communication}, {"weight_reads", e.weight_reads}};
  return j;
}

}  // namespace strata::io
