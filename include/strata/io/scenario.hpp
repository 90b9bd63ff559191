#pragma once
/// @file io/scenario.hpp
/// @brief CNN scenarios as JSON (a model of layers, a cluster, a ParaDL strategy or a parameter
/// server, training) and their reports as JSON or a table.
///
/// Needs nlohmann/json (target `strata::io`). Every error is a `plan_error` whose message starts
/// with the path of the offending field, e.g. "strategy.p: must be an integer >= 1 (got 0)".
/// The schema is documented in docs/cli.md.
/// @code
/// auto s = strata::io::parse_scenario(nlohmann::json::parse(R"({"model": "resnet50",
///   "cluster": {"preset": "abci", "devices": 16}, "parallel": {"kind": "data", "p": 16},
///   "training": {"batch": 256}})"));
/// auto r = strata::io::evaluate(s);
/// @endcode

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/analytic/evaluate.hpp"
#include "strata/error.hpp"
#include "strata/io/cluster.hpp"
#include "strata/io/cnn_zoo.hpp"
#include "strata/io/human.hpp"
#include "strata/io/json.hpp"
#include "strata/io/ps_scenario.hpp"
#include "strata/model/model.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/training.hpp"

namespace strata::io {

/// A parsed scenario; owns its layers.
struct scenario {
  std::string model_name;
  std::vector<layer> layers;
  cluster machine;
  parallel::any_strategy strategy;
  training setup;
  std::vector<layer_time> profiled;  ///< optional per-layer FW/BW/WU times
  std::optional<ps_request> ps;      ///< set for the parameter-server strategies
};

namespace detail {

inline layer parse_layer(const json& j, const std::string& path, shape in) {
  const std::string type = str_field(j, path, "type", nullptr);
  constexpr long long big = 1 << 30;
  if (type == "conv") {
    only_keys(j, path, {"type", "filters", "kernel", "stride", "padding", "bias"});
    conv c{int_field(j, path, "filters", 1, big, 1, true),
           int_field(j, path, "kernel", 1, 4096, 1, true), int_field(j, path, "stride", 1, 4096, 1),
           int_field(j, path, "padding", -1, 4096, -1), flag_field(j, path, "bias", false)};
    return c.apply(in);
  }
  if (type == "linear") {
    only_keys(j, path, {"type", "features", "bias"});
    return linear{int_field(j, path, "features", 1, big, 1, true),
                  flag_field(j, path, "bias", true)}
        .apply(in);
  }
  if (type == "max_pool" || type == "pool") {
    only_keys(j, path, {"type", "kernel", "stride", "padding"});
    const int k = int_field(j, path, "kernel", 1, 4096, 2, true);
    return max_pool{k, int_field(j, path, "stride", 1, 4096, k),
                    int_field(j, path, "padding", 0, 4096, 0)}
        .apply(in);
  }
  if (type == "global_avg_pool") {
    only_keys(j, path, {"type"});
    return global_avg_pool{}.apply(in);
  }
  if (type == "batch_norm") {
    only_keys(j, path, {"type"});
    return batch_norm{}.apply(in);
  }
  if (type == "layer_norm") {
    only_keys(j, path, {"type"});
    return layer_norm{}.apply(in);
  }
  if (type == "relu" || type == "elementwise") {
    only_keys(j, path, {"type", "flops_per_element"});
    return elementwise{num_field(j, path, "flops_per_element", 0.0, 1e6, 1.0)}.apply(in);
  }
  fail(path + ".type", "unknown layer type \"" + cut(type) +
                           "\" (known: conv, linear, max_pool, global_avg_pool, batch_norm, "
                           "layer_norm, relu, elementwise)");
}

inline void parse_model(const json& j, scenario& s) {
  if (j.is_string()) {
    s.model_name = j.get<std::string>();
    s.layers = zoo_model(s.model_name, "model");
    return;
  }
  only_keys(j, "model", {"name", "zoo", "input", "layers"});
  if (j.contains("zoo")) {
    if (j.contains("layers")) fail("model", "give either \"zoo\" or \"layers\", not both");
    s.model_name = str_field(j, "model", "zoo", nullptr);
    s.layers = zoo_model(s.model_name, "model.zoo");
    return;
  }
  s.model_name = str_field(j, "model", "name", "custom");
  const json& in = require(j, "model", "input");
  shape cur;
  if (!in.is_object()) fail("model.input", "must be an object {\"c\", \"d\", \"h\", \"w\"}");
  only_keys(in, "model.input", {"c", "d", "h", "w"});
  constexpr long long big = 1 << 30;
  cur = {int_field(in, "model.input", "c", 1, big, 1, true),
         int_field(in, "model.input", "d", 1, big, 1), int_field(in, "model.input", "h", 1, big, 1),
         int_field(in, "model.input", "w", 1, big, 1)};
  const json& ls = require(j, "model", "layers");
  if (!ls.is_array() || ls.empty()) fail("model.layers", "must be a non-empty array");
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const std::string path = "model.layers[" + std::to_string(i) + "]";
    try {
      s.layers.push_back(parse_layer(ls[i], path, cur));
    } catch (const plan_error& e) {
      const std::string what = e.what();
      if (what.rfind("model.", 0) == 0) throw;
      fail(path, what);
    }
    cur = s.layers.back().out;
  }
}

/// `path`: the scenario key the strategy was given under ("parallel" or "strategy").
inline parallel::any_strategy parse_strategy(const json& j, const std::string& path = "strategy") {
  if (!j.is_object()) fail(path, "must be an object with a \"kind\"");
  const std::string kind = str_field(j, path, "kind", nullptr);
  auto deg = [&](const char* key) { return int_field(j, path, key, 1, max_degree, 1, true); };
  auto opt = [&](const char* key) { return int_field(j, path, key, 1, max_degree, 1); };
  if (kind == "serial") {
    only_keys(j, path, {"kind"});
    return parallel::serial{};
  }
  if (kind == "data") {
    only_keys(j, path, {"kind", "p"});
    return parallel::data{deg("p")};
  }
  if (kind == "filter") {
    only_keys(j, path, {"kind", "p"});
    return parallel::filter{deg("p")};
  }
  if (kind == "channel") {
    only_keys(j, path, {"kind", "p"});
    return parallel::channel{deg("p")};
  }
  if (kind == "pipeline") {
    only_keys(j, path, {"kind", "p", "segments"});
    return parallel::pipeline{deg("p"), opt("segments")};
  }
  if (kind == "spatial") {
    only_keys(j, path, {"kind", "p", "ph", "pw", "pd"});
    if (j.contains("p") && (j.contains("ph") || j.contains("pw") || j.contains("pd")))
      fail(path, "give either \"p\" (split the height) or \"ph\"/\"pw\"/\"pd\", not both");
    if (j.contains("p")) return parallel::spatial{deg("p"), 1, 1};
    return parallel::spatial{opt("ph"), opt("pw"), opt("pd")};
  }
  if (kind == "data+filter") {
    only_keys(j, path, {"kind", "p1", "p2"});
    return parallel::data_filter{deg("p1"), deg("p2")};
  }
  if (kind == "data+spatial") {
    only_keys(j, path, {"kind", "p1", "p2", "ph", "pw", "pd"});
    if (j.contains("p2") && (j.contains("ph") || j.contains("pw") || j.contains("pd")))
      fail(path, "give either \"p2\" (split the height) or \"ph\"/\"pw\"/\"pd\", not both");
    if (j.contains("p2")) return parallel::data_spatial{deg("p1"), {deg("p2"), 1, 1}};
    return parallel::data_spatial{deg("p1"), {opt("ph"), opt("pw"), opt("pd")}};
  }
  fail(path + ".kind", "unknown strategy \"" + cut(kind) +
                           "\" (known: serial, data, spatial, pipeline, filter, channel, "
                           "data+filter, data+spatial, parameter-server, "
                           "parameter-server-search)");
}

inline training parse_training(const json& j, bool needs_batch = true) {
  only_keys(j, "training", {"batch", "dataset", "precision", "optimizer", "efficiency"});
  training t;
  t.batch = int_field(j, "training", "batch", 1, 1LL << 30, 1, needs_batch);
  t.dataset = num_field(j, "training", "dataset", 0.0, 1e15, 0.0);
  const std::string prec = str_field(j, "training", "precision", "fp32");
  if (prec == "fp32")
    t.precision = precision_mode::fp32;
  else if (prec == "tf32")
    t.precision = precision_mode::tf32;
  else if (prec == "fp16")
    t.precision = precision_mode::fp16;
  else if (prec == "bf16")
    t.precision = precision_mode::bf16;
  else if (prec == "fp8")
    t.precision = precision_mode::fp8;
  else
    fail("training.precision",
         "unknown precision \"" + cut(prec) + "\" (known: fp32, tf32, fp16, bf16, fp8)");
  const std::string opt = str_field(j, "training", "optimizer", "sgd");
  if (opt == "sgd")
    t.optim = optimizer::sgd;
  else if (opt == "momentum")
    t.optim = optimizer::momentum;
  else if (opt == "adam")
    t.optim = optimizer::adam;
  else
    fail("training.optimizer",
         "unknown optimizer \"" + cut(opt) + "\" (known: sgd, momentum, adam)");
  t.efficiency = num_field(j, "training", "efficiency", 1e-6, 1.0, 0.5);
  return t;
}

/// The longest profiled per-layer time: 1e6 s (so that no sum over a batch overflows).
inline constexpr double max_layer_time = 1e6;

inline std::vector<layer_time> parse_times(const json& j, std::size_t n) {
  if (!j.is_array()) fail("layer_times", "must be an array of [fw_s, bw_s, wu_s] per layer");
  if (j.size() != n)
    fail("layer_times", "has " + std::to_string(j.size()) + " entries but the model has " +
                            std::to_string(n) + " layers");
  std::vector<layer_time> v;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string path = "layer_times[" + std::to_string(i) + "]";
    const json& e = j[i];
    if (!e.is_array() || e.size() != 3) fail(path, "must be [fw_s, bw_s, wu_s]");
    double t[3];
    for (int k = 0; k < 3; ++k) {
      if (!e[k].is_number() || !std::isfinite(e[k].get<double>()) || e[k].get<double>() < 0 ||
          e[k].get<double>() > max_layer_time)
        fail(path, "times must be numbers of seconds in [0, 1e6]");
      t[k] = e[k].get<double>();
    }
    v.push_back({seconds{t[0]}, seconds{t[1]}, seconds{t[2]}});
  }
  return v;
}

}  // namespace detail

/// Reads a scenario; throws `plan_error` naming the field on any mistake.
inline scenario parse_scenario(const nlohmann::json& j) {
  using detail::require;
  detail::only_keys(j, "scenario",
                    {"model", "cluster", "parallel", "strategy", "training", "layer_times"});
  scenario s;
  detail::parse_model(require(j, "scenario", "model"), s);
  s.machine = detail::parse_cluster(require(j, "scenario", "cluster"));
  // "parallel" as every scenario says it; "strategy" is the older spelling
  if (j.contains("parallel") && j.contains("strategy"))
    detail::fail("scenario",
                 "give the strategy once: \"parallel\" (or the older spelling \"strategy\")");
  const std::string sk = j.contains("strategy") ? "strategy" : "parallel";
  const nlohmann::json& st = require(j, "scenario", sk.c_str());
  const std::string kind = st.is_object() && st.contains("kind") && st["kind"].is_string()
                               ? st["kind"].get<std::string>()
                               : std::string();
  if (kind == "parameter-server" || kind == "parameter-server-search") {
    s.ps = detail::parse_ps(st, kind == "parameter-server-search", sk);
    if (s.machine.name != presets::yan_cluster().name)
      detail::fail("cluster",
                   "parameter-server strategies use Yan et al.'s CPU cost model: use "
                   "{\"preset\": \"yan-e5-2450\", \"devices\": N}");
    if (!s.ps->layers.empty() && s.ps->layers.size() != yan::fold(s.layers).size())
      detail::fail(sk + ".layers", "needs one entry per weighted layer of the model (" +
                                       std::to_string(yan::fold(s.layers).size()) + ")");
  } else {
    s.strategy = detail::parse_strategy(st, sk);
  }
  const nlohmann::json& t = require(j, "scenario", "training");
  if (!t.is_object()) detail::fail("training", "must be a JSON object");
  s.setup = detail::parse_training(t, !s.ps);
  if (s.ps && !(s.setup.dataset > 0))
    detail::fail("training.dataset", "parameter-server scenarios need the samples per epoch");
  if (j.contains("layer_times"))
    s.profiled = detail::parse_times(j["layer_times"], s.layers.size());
  return s;
}

/// Parses JSON text; malformed JSON becomes a `plan_error` with nlohmann's position.
inline scenario parse_scenario_text(std::string_view text) {
  return parse_scenario(detail::parse_json(text));
}

/// Evaluates a parsed scenario with the closed-form (ParaDL) model.
inline report evaluate(const scenario& s) {
  return analytic::evaluate(s.layers, s.strategy, s.machine, s.setup, s.profiled);
}

/// The report as JSON; the schema is in docs/cli.md.
inline nlohmann::json to_json(const scenario& s, const report& r) {
  const time_breakdown& t = r.time;
  const memory_breakdown& m = r.memory;
  nlohmann::json j;
  j["model"] = s.model_name;
  j["cluster"] = std::string(s.machine.name);
  j["device"] = std::string(s.machine.dev.name);
  j["strategy"] = std::string(r.strategy);
  j["devices"] = r.devices;
  j["batch"] = r.batch;
  j["iteration_time_s"] = r.iteration_time().count();
  if (s.setup.dataset > 0) {
    j["iterations_per_epoch"] = r.iterations;
    j["epoch_time_s"] = r.epoch_time().count();
  }
  j["throughput_samples_per_s"] = r.throughput();
  j["time_s"] = {{"forward", t.forward.count()},
                 {"backward", t.backward.count()},
                 {"weight_update", t.optimizer.count()},
                 {"gradient_exchange", t.data_comm.count()},
                 {"layer_collectives", t.tensor_comm.count()},
                 {"halo_exchange", t.context_comm.count()},
                 {"pipeline_p2p", t.pipeline_p2p.count()},
                 {"compute", t.compute().count()},
                 {"communication", t.communication().count()}};
  j["memory_bytes"] = {{"weights", m.weights.count()},
                       {"gradients", m.gradients.count()},
                       {"optimizer_states", m.optimizer_states.count()},
                       {"activations", m.activations.count()},
                       {"other", m.other.count()},
                       {"peak", m.total().count()},
                       {"capacity", r.capacity.count()}};
  j["fits"] = r.fits();
  j["verdict"] = to_string(r.verdict());
  return j;
}

/// Evaluates the parameter-server strategy of `s` (Yan et al.) and returns its report as JSON.
inline nlohmann::json parameter_server_json(const scenario& s) {
  return parameter_server_json(*s.ps, s.model_name, s.layers, s.machine, s.setup.dataset);
}

/// The report of any scenario as JSON.
inline nlohmann::json report_json(const scenario& s) {
  if (s.ps) return parameter_server_json(s);
  return to_json(s, evaluate(s));
}

/// The report as an aligned table for people.
inline std::string to_table(const scenario& s, const report& r) {
  std::string out;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s on %s (%d x %s), %s parallelism, batch %s\n",
                s.model_name.c_str(), std::string(s.machine.name).c_str(), r.devices,
                std::string(s.machine.dev.name).c_str(), std::string(r.strategy).c_str(),
                human_count(r.batch).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "iteration %s, %s samples/s",
                human_duration(r.iteration_time().count()).c_str(),
                human_count(r.throughput()).c_str());
  out += buf;
  if (s.setup.dataset > 0)
    out += ", epoch " + human_duration(r.epoch_time().count()) + " (" + human_count(r.iterations) +
           " iterations)";
  out += "\ntime per iteration\n";
  const time_breakdown& t = r.time;
  const std::pair<const char*, seconds> terms[] = {{"forward", t.forward},
                                                   {"backward", t.backward},
                                                   {"weight update", t.optimizer},
                                                   {"gradient exchange", t.data_comm},
                                                   {"layer collectives", t.tensor_comm},
                                                   {"halo exchange", t.context_comm},
                                                   {"pipeline p2p", t.pipeline_p2p}};
  for (const auto& [label, v] : terms)
    if (v.count() > 0) out += table_row(label, human_duration(v.count()));
  out += "memory per device\n";
  const memory_breakdown& m = r.memory;
  const std::pair<const char*, bytes> mem[] = {{"weights", m.weights},
                                               {"gradients", m.gradients},
                                               {"optimizer states", m.optimizer_states},
                                               {"activations", m.activations},
                                               {"other", m.other}};
  for (const auto& [label, v] : mem)
    if (v.count() > 0) out += table_row(label, human_bytes(v.count()));
  out += table_row("peak", human_bytes(m.total().count()));
  out += table_row("capacity", human_bytes(r.capacity.count()), r.fits() ? "fits" : "does NOT fit");
  return out;
}

/// The report of any scenario as a table.
inline std::string report_table(const scenario& s) {
  if (!s.ps) return to_table(s, evaluate(s));
  const nlohmann::json j = parameter_server_json(s);
  const auto& cfg = j["configuration"];
  char buf[200];
  std::string out;
  std::snprintf(buf, sizeof buf,
                "%s on %s (%d machines), %s: %d workers x %d replicas + %d servers\n",
                s.model_name.c_str(), std::string(s.machine.name).c_str(), j["machines"].get<int>(),
                j["strategy"].get<std::string>().c_str(), cfg["workers"].get<int>(),
                cfg["replicas"].get<int>(), cfg["servers"].get<int>());
  out += buf;
  std::snprintf(buf, sizeof buf, "epoch %s, %s samples/s\ntime per epoch\n",
                human_duration(j["epoch_time_s"].get<double>()).c_str(),
                human_count(j["throughput_samples_per_s"].get<double>()).c_str());
  out += buf;
  for (const auto& [key, label] : {std::pair<const char*, const char*>{"compute", "compute"},
                                   {"communication", "communication"},
                                   {"weight_reads", "weight reads"}})
    out += table_row(label, human_duration(j["time_s"][key].get<double>()));
  return out;
}

}  // namespace strata::io
