#pragma once
/// @file io/proteus_tree.hpp
/// @brief Proteus scenarios as JSON: a transformer, a cluster, the training setup and a
/// strategy tree (Duan et al. §IV), written out node by node or as DP x MP x PP(n_micro_batch);
/// the HTAE report as JSON; HTAE timelines as Chrome-trace / Perfetto JSON with the three queues
/// of every device. Errors name the JSON path of the field, and a tree that breaks a rule gets the
/// tree check's sentence, which names the node. Schema: docs/cli.md ("strata simulate with a
/// strategy tree").
/// @code
/// auto s = strata::io::parse_proteus_scenario(nlohmann::json::parse(R"({
///   "model": "gpt2-124m", "cluster": "hc2",
///   "training": {"batch": 64, "precision": "fp32", "flash_attention": false},
///   "strategy_tree": {"dp": 8, "mp": 2}})"));
/// auto run = strata::proteus::execute(strata::proteus::compile(s.net, s.tree, s.machine,
///                                                              s.setup, s.profile), s.machine);
/// @endcode

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/io/cnn_zoo.hpp"
#include "strata/io/simulation.hpp"
#include "strata/io/transformer_scenario.hpp"
#include "strata/proteus/htae.hpp"

namespace strata::io {

/// A parsed Proteus scenario.
struct proteus_scenario {
  transformer net;
  std::vector<layer> cnn;  ///< a zoo CNN's layers, one leaf each (empty: the transformer `net`)
  proteus::cnn_setup cnn_setup{};
  std::string name;
  cluster machine;
  training setup;
  device_profile profile;
  proteus::strategy_tree tree;
  double gamma = 0;
  std::vector<double> gamma_per_level{};  ///< per class of device pair (`htae_options`)
};

namespace detail {

inline proteus::schedule_config parse_schedule(const json& j, const std::string& p) {
  proteus::schedule_config s;
  if (!j.is_object()) fail(p, "must be an object");
  only_keys(j, p, {"n_micro_batch", "max_ongoing_micro_batch", "recomputation"});
  s.n_micro_batch = int_field(j, p, "n_micro_batch", 1, 1 << 20, 0);
  s.max_ongoing_micro_batch = int_field(j, p, "max_ongoing_micro_batch", 1, 1 << 20, 0);
  if (j.contains("recomputation")) s.recomputation = flag_field(j, p, "recomputation", false);
  return s;
}

/// A node (and its subtree) under `parent`; "module": "blocks" with "first" and "count" adds
/// one leaf per block with the same configs. `leaves_left`: the model's modules not yet given a
/// leaf (a tree may name each once), checked before a leaf is made so that a small file cannot
/// expand into millions of leaves (issue 39: a 24 KB tree reached 5.7 GB).
inline void parse_tree_node(const json& j, const std::string& p, proteus::strategy_tree& t,
                            int parent, long long& leaves_left, bool cnn = false) {
  if (!j.is_object()) fail(p, "must be an object (a tree node)");
  const std::string name = str_field(j, p, "name", nullptr);
  if (j.contains("children")) {
    only_keys(j, p, {"name", "schedule", "children"});
    const int id =
        t.add_node(parent, name,
                   j.contains("schedule") ? parse_schedule(j["schedule"], p + ".schedule")
                                          : proteus::schedule_config{});
    const json& cs = j["children"];
    if (!cs.is_array() || cs.empty()) fail(p + ".children", "must be a non-empty array of nodes");
    for (std::size_t i = 0; i < cs.size(); ++i)
      parse_tree_node(cs[i], p + ".children[" + std::to_string(i) + "]", t, id, leaves_left, cnn);
    return;
  }
  if (cnn)  // a CNN layer splits its batch only
    only_keys(j, p, {"name", "module", "index", "first", "count", "batch", "devices"});
  else
    only_keys(j, p,
              {"name", "module", "index", "first", "count", "batch", "hidden", "sequence_parallel",
               "devices", "zero"});
  const std::string module = str_field(j, p, "module", nullptr);
  proteus::compute_config c;
  c.batch = int_field(j, p, "batch", 1, max_degree, 1);
  c.hidden = int_field(j, p, "hidden", 1, max_degree, 1);
  c.sequence_parallel = flag_field(j, p, "sequence_parallel", false);
  const json& d = require(j, p, "devices");
  if (!d.is_array() || d.empty()) fail(p + ".devices", "must be a non-empty array of device ids");
  for (std::size_t i = 0; i < d.size(); ++i)
    c.devices.push_back(get_int(d[i], p + ".devices[" + std::to_string(i) + "]", 0, max_degree));
  const proteus::memory_config mem{int_field(j, p, "zero", 0, 3, 0)};
  const auto take = [&](long long n) {
    if (n > leaves_left)
      fail(p, cnn ? "the tree names more layers than the model has (one leaf each)"
                  : "the tree names more modules than the model has (the embedding, each block "
                    "and the head, one leaf each)");
    leaves_left -= n;
  };
  // a CNN's leaves are its layers ("layer", "layers"), a transformer's its embedding, blocks
  // ("block", "blocks") and head
  const std::string one = cnn ? "layer" : "block", many = one + "s";
  const auto kind = cnn ? proteus::module_kind::cnn_layer : proteus::module_kind::block;
  if (!cnn && (module == "embedding" || module == "head")) {
    take(1);
    t.add_leaf(parent, name,
               module == "head" ? proteus::module_kind::head : proteus::module_kind::embedding, 0,
               c, mem);
  } else if (module == one) {
    take(1);
    t.add_leaf(parent, name, kind, int_field(j, p, "index", 0, 1 << 20, 0, true), c, mem);
  } else if (module == many) {
    const int first = int_field(j, p, "first", 0, 1 << 20, 0, true);
    const int count = int_field(j, p, "count", 1, 1 << 20, 0, true);
    take(count);
    for (int k = first; k < first + count; ++k)
      t.add_leaf(parent, name + "." + std::to_string(k), kind, k, c, mem);
  } else {
    fail(p + ".module",
         cnn ? "must be \"layer\" or \"layers\" for a CNN (got \"" + cut(module) + "\")"
             : "must be one of \"embedding\", \"block\", \"blocks\", \"head\" (got \"" +
                   cut(module) + "\")");
  }
}

inline proteus::strategy_tree parse_strategy_tree(const json& j, const transformer& m) {
  const std::string p = "strategy_tree";
  if (!j.is_object()) fail(p, "must be an object");
  if (!j.contains("children")) {  // DP x MP x PP(n_micro_batch)
    only_keys(j, p,
              {"dp", "mp", "pp", "n_micro_batch", "max_ongoing_micro_batch", "recomputation",
               "sequence_parallel", "zero", "mp_innermost"});
    proteus::dp_mp_pp_config c;
    c.dp = int_field(j, p, "dp", 1, max_degree, 1);
    c.mp = int_field(j, p, "mp", 1, max_degree, 1);
    c.pp = int_field(j, p, "pp", 1, max_degree, 1);
    c.n_micro_batch = int_field(j, p, "n_micro_batch", 1, 1 << 20, 1);
    c.max_ongoing_micro_batch = int_field(j, p, "max_ongoing_micro_batch", 0, 1 << 20, 0);
    c.recomputation = flag_field(j, p, "recomputation", false);
    c.sequence_parallel = flag_field(j, p, "sequence_parallel", false);
    c.zero = int_field(j, p, "zero", 0, 3, 0);
    c.mp_innermost = flag_field(j, p, "mp_innermost", true);
    return proteus::dp_mp_pp(m, c);
  }
  only_keys(j, p, {"name", "schedule", "children"});
  proteus::strategy_tree t(str_field(j, p, "name", "model"),
                           j.contains("schedule") ? parse_schedule(j["schedule"], p + ".schedule")
                                                  : proteus::schedule_config{});
  const json& cs = j["children"];
  if (!cs.is_array() || cs.empty()) fail(p + ".children", "must be a non-empty array of nodes");
  long long leaves_left = static_cast<long long>(m.layers) + 2;
  for (std::size_t i = 0; i < cs.size(); ++i)
    parse_tree_node(cs[i], p + ".children[" + std::to_string(i) + "]", t, 0, leaves_left);
  return t;
}

/// A Proteus scenario's "profile" (io/profile_choice.hpp; "datasheet" by default: Proteus
/// prices its operators from the device's datasheet), "gamma" and "gamma_per_level".
inline void proteus_profile_and_gamma(const nlohmann::json& j, proteus_scenario& s,
                                      std::string_view shipped) {
  namespace d = detail;
  s.profile = choose_profile(j.contains("profile") ? j["profile"] : nlohmann::json(), s.machine.dev,
                             shipped, "datasheet")
                  .profile;
  s.gamma = d::num_field(j, "scenario", "gamma", 0.0, 100.0, 0.0);
  if (j.contains("gamma_per_level")) {
    const auto& g = j.at("gamma_per_level");
    if (!g.is_array() || g.size() > static_cast<std::size_t>(s.machine.depth))
      d::fail("scenario.gamma_per_level",
              "must be an array of at most " + std::to_string(s.machine.depth) +
                  " overlap factors, one per cluster level, innermost first");
    for (std::size_t k = 0; k < g.size(); ++k) {
      if (!g[k].is_number() || !(g[k].get<double>() >= 0) || !(g[k].get<double>() <= 100))
        d::fail("scenario.gamma_per_level[" + std::to_string(k) + "]",
                "must be a number in [0, 100]");
      s.gamma_per_level.push_back(g[k].get<double>());
    }
  }
}

/// A CNN's tree: {"dp": N, "n_micro_batch": k} (data parallelism, one leaf per layer) or nodes
/// whose leaves are "layer" (an "index") or "layers" ("first", "count").
inline proteus::strategy_tree parse_cnn_strategy_tree(const json& j, const std::string& name,
                                                      int layers) {
  const std::string p = "strategy_tree";
  if (!j.is_object()) fail(p, "must be an object");
  if (!j.contains("children")) {
    for (const char* k : {"mp", "pp", "sequence_parallel", "zero", "recomputation"})
      if (j.contains(k))
        fail(p + "." + k,
             "not modelled for a CNN's strategy tree: its layers split the batch only "
             "(data parallelism, micro-batches)");
    only_keys(j, p, {"dp", "n_micro_batch"});
    return proteus::data_parallel_cnn(name, layers, int_field(j, p, "dp", 1, max_degree, 1),
                                      int_field(j, p, "n_micro_batch", 1, 1 << 20, 1));
  }
  only_keys(j, p, {"name", "schedule", "children"});
  proteus::strategy_tree t(str_field(j, p, "name", name.c_str()),
                           j.contains("schedule") ? parse_schedule(j["schedule"], p + ".schedule")
                                                  : proteus::schedule_config{});
  const json& cs = j["children"];
  if (!cs.is_array() || cs.empty()) fail(p + ".children", "must be a non-empty array of nodes");
  long long leaves_left = layers;
  for (std::size_t i = 0; i < cs.size(); ++i)
    parse_tree_node(cs[i], p + ".children[" + std::to_string(i) + "]", t, 0, leaves_left, true);
  return t;
}

/// A CNN tree's "training": "batch" (required) and "precision" ("fp32", the default: TF32
/// convolutions where the device has them; "bf16" or "fp16": autocast).
inline proteus::cnn_setup parse_cnn_tree_training(const json& j) {
  const std::string p = "training";
  if (!j.is_object()) fail(p, "must be an object");
  only_keys(j, p, {"batch", "precision"});
  proteus::cnn_setup su;
  su.batch = int_field(j, p, "batch", 1, 1 << 30, 0, true);
  su.precision = compute_type(j, p, "precision", p + ".precision");
  return su;
}

}  // namespace detail

/// Parses a Proteus scenario: "model" (or "transformer"), "cluster", "training", "strategy_tree",
/// and optionally "profile" (io/profile_choice.hpp; "datasheet" by default), "gamma" and
/// "gamma_per_level" (one overlap factor per cluster level, innermost first).
inline proteus_scenario parse_proteus_scenario(const nlohmann::json& j,
                                               std::string_view shipped = {}) {
  namespace d = detail;
  d::only_keys(j, "scenario",
               {"model", "transformer", "cluster", "training", "strategy_tree", "profile", "gamma",
                "gamma_per_level"});
  proteus_scenario s;
  const bool cnn = j.contains("model") && j["model"].is_string() &&
                   d::is_cnn_name(j["model"].get<std::string>());
  if (cnn) {
    s.name = j["model"].get<std::string>();
    s.cnn = d::zoo_model(s.name, "model");
    s.cnn_setup = d::parse_cnn_tree_training(d::require(j, "scenario", "training"));
    s.setup.batch = s.cnn_setup.batch;
    s.machine = d::parse_cluster(d::require(j, "scenario", "cluster"));
    d::proteus_profile_and_gamma(j, s, shipped);
    s.tree = d::parse_cnn_strategy_tree(d::require(j, "scenario", "strategy_tree"), s.name,
                                        static_cast<int>(s.cnn.size()));
    s.tree.check_cnn(static_cast<int>(s.cnn.size()), s.cnn_setup.batch, s.machine.devices());
    return s;
  }
  const char* key = d::transformer_key(j);
  if (!key) d::fail("model", "must name a transformer (a zoo name or its dimensions) or a zoo CNN");
  s.net = d::parse_transformer(d::require(j, "scenario", key), s.name, key);
  s.net.name = s.name;
  s.machine = d::parse_cluster(d::require(j, "scenario", "cluster"));
  const nlohmann::json& tj = d::require(j, "scenario", "training");
  // what a strategy tree does not model is refused, not ignored: its nodes shard and schedule,
  // and its memory is every device's own states and activations
  if (tj.is_object())
    for (const char* k : {"engine", "offload_optimizer", "offload_parameters", "reserved_GiB",
                          "runtime", "tp_comm_overlap", "lora", "tf32"})
      if (tj.contains(k))
        d::fail(std::string("training.") + k,
                "not modelled for a strategy tree (its nodes set sharding and schedule); "
                "use a transformer scenario with \"parallel\"");
  s.setup = d::parse_transformer_training(tj);
  d::proteus_profile_and_gamma(j, s, shipped);
  s.tree = d::parse_strategy_tree(d::require(j, "scenario", "strategy_tree"), s.net);
  s.tree.check(s.net, s.setup, s.machine.devices());
  return s;
}

/// HTAE's report: iteration time, throughput, peak memory per device, the out-of-memory verdict.
inline nlohmann::json proteus_report_json(const proteus_scenario& s,
                                          const proteus::execution_graph& g,
                                          const proteus::htae_run& r) {
  constexpr double gib = 1024.0 * 1024 * 1024;
  nlohmann::json peaks = nlohmann::json::array();
  double peak = 0;
  for (double b : r.peak_memory) {
    peaks.push_back(b / gib);
    peak = std::max(peak, b);
  }
  nlohmann::json j{{"model", s.name},
                   {"cluster", std::string(s.machine.name)},
                   {"devices", s.tree.device_count()},
                   {"stages", g.stages},
                   {"n_micro_batch", g.n_micro_batch},
                   {"operations", g.ops.size()},
                   {"iteration_time_s", r.iteration},
                   {"samples_per_s", s.setup.batch / r.iteration},
                   {"peak_memory_GiB", peak / gib},
                   {"peak_memory_GiB_per_device", peaks},
                   {"capacity_GiB", s.machine.dev.memory.count() / gib},
                   {"gamma", s.gamma}};
  if (!s.gamma_per_level.empty()) j["gamma_per_level"] = s.gamma_per_level;
  if (r.oom)
    j["out_of_memory"] = {
        {"device", r.oom->device}, {"operation", r.oom->op}, {"GiB", r.oom->bytes / gib}};
  return j;
}

/// The HTAE timeline as Chrome-trace JSON: one process per device, three threads (compute,
/// feature communication, gradient communication, §VI-B), one event per operation; times in us.
inline nlohmann::json proteus_trace(const proteus::execution_graph& g, const proteus::htae_run& r) {
  check_trace_size(g.ops.size());
  nlohmann::json events = nlohmann::json::array();
  std::vector<bool> used(static_cast<std::size_t>(g.devices), false);
  for (const auto& op : g.ops)
    for (int d : op.devices) used[static_cast<std::size_t>(d)] = true;
  for (int d = 0; d < g.devices; ++d) {
    if (!used[static_cast<std::size_t>(d)]) continue;
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", d},
                      {"args", {{"name", "gpu " + std::to_string(d)}}}});
    for (int q = 0; q < 3; ++q)
      events.push_back(
          {{"ph", "M"},
           {"name", "thread_name"},
           {"pid", d},
           {"tid", q},
           {"args", {{"name", std::string(to_string(static_cast<proteus::queue>(q)))}}}});
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    const auto& sp = r.spans[i];
    for (int d : op.devices)
      events.push_back({{"ph", "X"},
                        {"name", op.name},
                        {"cat", std::string(to_string(op.q))},
                        {"pid", d},
                        {"tid", static_cast<int>(op.q)},
                        {"ts", sp.start * 1e6},
                        {"dur", (sp.end - sp.start) * 1e6},
                        {"args", {{"op", static_cast<int>(i)}, {"devices", op.devices}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace strata::io
