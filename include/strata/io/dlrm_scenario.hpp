#pragma once
/// @file io/dlrm_scenario.hpp
/// @brief DLRM scenarios as JSON (docs/cli.md, "DLRM"): a single-GPU step, a multi-GPU plan
/// with a sharder or an explicit sharding, or Lin et al.'s sharder selection (Table IV).
///
/// Every error is a `plan_error` whose message starts with the path of the offending field,
/// e.g. "dlrm.tables[2].reuse: must hold 17 counts (got 16)".
/// @code
/// const auto report = strata::io::run_dlrm_scenario(nlohmann::json::parse(R"({
///   "dlrm": {"generate": {"count": 52, "mix": "heavy"}}, "batch": 4096,
///   "cluster": {"preset": "dgx-h100", "devices": 4}, "sharding": "search"})"));
/// @endcode

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/analytic/dlrm.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/cluster.hpp"
#include "strata/io/human.hpp"
#include "strata/io/lin_trace.hpp"
#include "strata/io/profile.hpp"
#include "strata/io/profile_choice.hpp"
#include "strata/model/dlrm.hpp"
#include "strata/search/sharders.hpp"

namespace strata::io {

/// The most GPUs a DLRM plan may use: its report lists every rank (2^16 ranks are about 17 MB
/// of JSON and under a second; 2^20 were 279 MB and 2.4 GB of memory).
inline constexpr int max_dlrm_gpus = 1 << 16;

namespace detail {

inline std::vector<int> widths(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) fail(path, "must be a non-empty array of layer widths");
  std::vector<int> out;
  for (std::size_t i = 0; i < j.size(); ++i)
    out.push_back(get_int(j[i], path + "[" + std::to_string(i) + "]", 1, 1 << 24));
  return out;
}

/// One embedding table at `tp`: `name` (default `fallback`), `rows`, `dim` (default `dim`; 0:
/// required), `pooling`, `reuse` (the 17 counts of `batch` samples, "uniform" or {"zipf": a}).
inline embedding_table parse_table(const json& j, const std::string& tp,
                                   const std::string& fallback, int dim, double batch) {
  only_keys(j, tp, {"name", "rows", "dim", "pooling", "reuse"});
  embedding_table t;
  t.name = str_field(j, tp, "name", fallback.c_str());
  if (!j.contains("rows")) fail(tp + ".rows", "missing (required)");
  t.rows = num_field(j, tp, "rows", 1.0, 1e12, 1.0);
  t.dim = int_field(j, tp, "dim", 1, 1 << 16, dim, dim < 1);
  if (!j.contains("pooling")) fail(tp + ".pooling", "missing (required)");
  t.pooling = num_field(j, tp, "pooling", 0.0, 1e6, 1.0);
  if (j.contains("reuse")) {
    t.reuse = parse_reuse(j["reuse"], tp + ".reuse", t.rows, batch * t.pooling);
    if (t.reuse.unique() > t.rows + 0.5)
      fail(tp + ".reuse", "counts more distinct rows than the table has");
  }
  return t;
}

inline dlrm parse_dlrm(const json& j, double batch) {
  const std::string path = "dlrm";
  only_keys(j, path,
            {"dense_features", "bottom_mlp", "top_mlp", "interaction", "tables", "generate"});
  dlrm m;
  m.dense_features = int_field(j, path, "dense_features", 1, 1 << 24, 13);
  if (j.contains("bottom_mlp")) m.bottom = widths(j["bottom_mlp"], path + ".bottom_mlp");
  if (j.contains("top_mlp")) m.top = widths(j["top_mlp"], path + ".top_mlp");
  const std::string op = str_field(j, path, "interaction", "dot");
  if (op == "dot")
    m.op = interaction::dot;
  else if (op == "concat")
    m.op = interaction::concat;
  else
    fail(path + ".interaction", "must be \"dot\" or \"concat\" (got \"" + op + "\")");
  if (j.contains("tables") == j.contains("generate"))
    fail(path, "give either \"tables\" or \"generate\"");
  if (j.contains("generate")) {
    const json& g = j["generate"];
    const std::string gp = path + ".generate";
    only_keys(g, gp, {"count", "mix", "dim", "seed"});
    const int count = int_field(g, gp, "count", 1, 100000, 0, true);
    const std::string mix = str_field(g, gp, "mix", "normal");
    if (mix != "heavy" && mix != "normal")
      fail(gp + ".mix", "must be \"heavy\" or \"normal\" (got \"" + mix + "\")");
    const int dim = int_field(g, gp, "dim", 1, 1 << 16, m.bottom.back());
    const int seed = int_field(g, gp, "seed", 0, 1 << 30, 1);
    m.tables = generate_tables(count, mix == "heavy" ? table_mix::heavy : table_mix::normal, dim,
                               static_cast<std::uint64_t>(seed), batch);
  } else {
    const json& ts = j["tables"];
    if (!ts.is_array() || ts.empty()) fail(path + ".tables", "must be a non-empty array");
    for (std::size_t i = 0; i < ts.size(); ++i)
      m.tables.push_back(parse_table(ts[i], path + ".tables[" + std::to_string(i) + "]",
                                     "table" + std::to_string(i), m.bottom.back(), batch));
  }
  try {
    m.validate();
  } catch (const plan_error& e) {
    fail(path, std::string(e.what()).substr(std::string("DLRM: ").size()));
  }
  return m;
}

inline json plan_json(const dlrm& m, const analytic::dlrm_report& r) {
  json ranks = json::array();
  for (const auto& rk : r.ranks) {
    json names = json::array();
    for (std::size_t i : rk.tables) names.push_back(m.tables[i].name);
    ranks.push_back({{"tables", names},
                     {"embedding_forward_s", rk.embedding_forward},
                     // the tables' backward with their optimizer update (fused or not)
                     {"embedding_backward_update_s", rk.embedding_backward},
                     {"all_to_all_sent_bytes", rk.sent},
                     {"all_to_all_received_bytes", rk.received},
                     {"table_bytes", rk.table_bytes},
                     {"memory_bytes", rk.memory}});
  }
  return {{"iteration_time_s", r.iteration_time},
          {"breakdown_s",
           {{"bottom_mlp_forward", r.bottom_forward},
            {"bottom_mlp_backward", r.bottom_backward},
            {"interaction_top_mlp_forward", r.top_forward},
            {"interaction_top_mlp_backward", r.top_backward},
            {"embedding_forward_busiest", r.embedding_forward},
            {"embedding_backward_update_busiest", r.embedding_backward},
            {"all_to_all_forward", r.all_to_all_forward},
            {"all_to_all_backward", r.all_to_all_backward},
            {"all_reduce", r.all_reduce},
            {"exposed_communication", r.exposed_communication},
            {"optimizer", r.optimizer},
            // `"loop": "eager"`: the busiest rank's host issuing its operators, and its inputs'
            // copy to the GPU
            {"host_busiest", r.host},
            {"input_copy_busiest", r.input_copy}}},
          {"all_to_all_bytes", r.all_to_all_bytes},
          {"busiest_rank", r.busiest_rank},
          {"peak_memory_bytes", r.peak_memory()},
          {"ranks", ranks}};
}

/// The profile a DLRM plan is priced with and its name: `profile_text` (a stored profile)
/// carried to `dev` with `rescale_profile`, or the device's datasheet profile when empty.
inline std::pair<device_profile, std::string> dlrm_profile(const device& dev,
                                                           std::string_view profile_text) {
  if (profile_text.empty())
    return {datasheet_profile(dev, dev.sms), "datasheet " + std::string(dev.name)};
  const stored_profile sp = profile_from_text(profile_text);
  return {rescale_profile(sp.profile, dev), sp.name};
}
}  // namespace detail

/// A DLRM scenario read: the plan it describes with its sharding chosen, and the report's
/// fields but the plan's (`run_dlrm_scenario` prices it, `simulate_scenario` simulates it).
struct dlrm_scenario {
  dlrm model;
  analytic::dlrm_setup setup;
  cluster machine;
  int gpus = 1;
  device_profile profile;
  embedding_bag_model el;
  std::vector<int> owner;  ///< table -> rank (empty: one GPU)
  nlohmann::json head;
};

namespace detail {
/// The sharding a scenario asks for (a sharder's name, "search", or one rank per table) into
/// `d.owner`, and what the report says of it into `d.head`.
inline void choose_sharding(const nlohmann::json& j, dlrm_scenario& d, double fraction, int seed) {
  const dlrm& m = d.model;
  const int gpus = d.gpus;
  const json sj = j.contains("sharding") ? j["sharding"] : json("size_lookup_greedy");
  if (sj.is_string() && sj.get<std::string>() == "search") {
    search::sharding_selection sel;
    try {
      sel = search::select_sharder(m, d.setup, gpus, d.machine, d.profile, d.el, fraction,
                                   static_cast<std::uint64_t>(seed));
    } catch (const plan_error& e) {
      fail("sharding", e.what());
    }
    json cands = json::array();
    for (const auto& c : sel.candidates) {
      json cj{{"sharder", std::string(search::to_string(c.which))}};
      if (c.feasible)
        cj["iteration_time_s"] = c.report.iteration_time;
      else
        cj["error"] = c.error;
      cands.push_back(cj);
    }
    const auto& best = sel.candidates[static_cast<std::size_t>(sel.best)];
    d.head["candidates"] = cands;
    d.head["chosen"] = std::string(search::to_string(best.which));
    d.head["spread"] = sel.spread();
    d.owner = best.owner;
    return;
  }
  const auto sizes = search::table_bytes(m, d.setup);
  const double capacity =
      search::table_capacity(m, d.setup, gpus, d.machine, d.profile, d.el, fraction);
  if (sj.is_array()) {
    if (sj.size() != m.tables.size())
      fail("sharding", "names " + std::to_string(sj.size()) + " ranks, the model has " +
                           std::to_string(m.tables.size()) + " tables");
    for (std::size_t i = 0; i < sj.size(); ++i)
      d.owner.push_back(get_int(sj[i], "sharding[" + std::to_string(i) + "]", 0, gpus - 1));
    try {
      search::check_sharding(m.tables, d.owner, gpus, sizes, capacity);
    } catch (const plan_error& e) {
      fail("sharding", e.what());
    }
    d.head["sharding"] = "explicit";
  } else if (sj.is_string()) {
    search::sharder s{};
    try {
      s = search::sharder_named(sj.get<std::string>());
    } catch (const plan_error& e) {
      fail("sharding", std::string(e.what()) + ", or \"search\"");
    }
    try {
      d.owner = search::shard(m.tables, gpus, s, sizes, capacity, static_cast<std::uint64_t>(seed));
    } catch (const plan_error& e) {
      fail("sharding", e.what());
    }
    d.head["sharding"] = std::string(search::to_string(s));
  } else {
    fail("sharding", "must be a sharder's name, \"search\" or one rank per table");
  }
}
}  // namespace detail

/// Reads DLRM scenario `j` and chooses its sharding. Its `"profile"` (io/profile_choice.hpp: a
/// profile file measured on the cluster's device, `"h100"`, `"fitted-gemm"`, `"datasheet"`)
/// prices the GEMMs and memory-bound kernels; without one, `profile_text` (a stored device
/// profile, io/profile.hpp) carried to the cluster's device with `rescale_profile`, or when
/// that is empty the device's datasheet profile.
inline dlrm_scenario parse_dlrm_scenario(const nlohmann::json& j,
                                         std::string_view profile_text = {}) {
  using namespace detail;
  only_keys(j, "scenario",
            {"dlrm", "batch", "precision", "gradient", "cluster", "gpus", "sharding",
             "memory_fraction", "seed", "embedding_model", "profile", "loop"});
  analytic::dlrm_setup setup;
  setup.batch = int_field(j, "scenario", "batch", 1, 1 << 30, 0, true);
  setup.precision = compute_type(j, "scenario", "precision", "precision");
  const std::string grad = str_field(j, "scenario", "gradient", "fused");
  if (grad == "fused")
    setup.gradient = embedding_gradient::fused;
  else if (grad == "dense")
    setup.gradient = embedding_gradient::dense;
  else if (grad == "dense_accumulate")
    setup.gradient = embedding_gradient::dense_accumulate;
  else
    fail("gradient", "must be \"fused\", \"dense\" or \"dense_accumulate\" (got \"" + grad + "\")");
  const std::string loop = str_field(j, "scenario", "loop", "eager");
  if (loop == "kernels")
    setup.loop = analytic::dlrm_loop::kernels;
  else if (loop != "eager")
    fail("loop", "must be \"eager\" or \"kernels\" (got \"" + loop + "\")");
  const dlrm m = parse_dlrm(require(j, "scenario", "dlrm"), setup.batch);
  const cluster machine = j.contains("cluster")
                              ? parse_cluster(j["cluster"])
                              : parse_cluster(json{{"preset", "dgx-h100"}, {"devices", 1}});
  // Lin et al.'s DLRM model prices GPU kernels (SM-count waves, HBM): a CPU-only server is
  // refused as transformer plans refuse it
  if (machine.dev.sms < 1) fail("cluster.device", "has no SM count: DLRM plans need a GPU");
  // a preset rounds up to whole nodes: by default use the devices asked for
  int asked = j.contains("cluster") ? machine.devices() : 1;
  if (j.contains("cluster") && j["cluster"].is_object() && j["cluster"].contains("devices"))
    asked = std::min(asked, get_int(j["cluster"]["devices"], "cluster.devices", 1, max_degree));
  const int gpus = int_field(j, "scenario", "gpus", 1, max_dlrm_gpus, asked);
  if (gpus > max_dlrm_gpus)  // from cluster.devices: the report lists every rank
    fail("cluster.devices", "a DLRM plan covers at most 65536 GPUs (got " + std::to_string(gpus) +
                                "; give \"gpus\" to use part of the cluster)");
  if (gpus > machine.devices())
    fail("gpus",
         std::to_string(gpus) + " GPUs, the cluster has " + std::to_string(machine.devices()));
  if (setup.batch < gpus) fail("batch", "must give every GPU at least one sample");
  const double fraction = num_field(j, "scenario", "memory_fraction", 0.01, 1.0, 0.8);
  const int seed = int_field(j, "scenario", "seed", 0, 1 << 30, 0);
  // the EL model: given, or the H100 fit carried to the cluster's GPU (its memory-bound rates by
  // the HBM bandwidth, its L2), named in the report either way
  const device& h100 = presets::h100_sxm5_80gb;
  const bool carried = !j.contains("embedding_model") && machine.dev.name != h100.name;
  const embedding_bag_model el =
      j.contains("embedding_model") ? parse_embedding_model(j["embedding_model"])
      : carried ? h100_embedding_bag.carried(machine.dev.memory_bandwidth / h100.memory_bandwidth,
                                             machine.dev.l2.count())
                : h100_embedding_bag;
  const std::string el_name = j.contains("embedding_model") ? "given"
                              : carried ? "H100 fit carried to " + std::string(machine.dev.name)
                                        : "H100 fit";
  auto [prof, profile_name] =
      j.contains("profile")
          ? [&] {
              chosen_profile c = choose_profile(j["profile"], machine.dev, profile_text);
              return std::pair{std::move(c.profile), std::move(c.name)};
            }()
          : dlrm_profile(machine.dev, profile_text);
  dlrm_scenario d{m, setup, machine, gpus, std::move(prof), el, {}, json{}};
  d.head = json{{"model",
                 {{"tables", m.tables.size()},
                  {"dense_parameters", m.dense_parameters()},
                  {"embedding_parameters", m.embedding_parameters()}}},
                {"batch", static_cast<long long>(setup.batch)},
                {"gpus", gpus},
                {"gradient", grad},
                {"loop", loop == "eager" ? "eager: dlrm_s_pytorch.py's host, Lin et al.'s PyTorch "
                                           "1.x overheads per operator"
                                         : "kernels: back to back, no host"},
                {"profile", profile_name},
                {"embedding_model", el_name},
                {"device", std::string(machine.dev.name)},
                {"capacity_bytes", machine.dev.memory.count()}};
  choose_sharding(j, d, fraction, seed);
  return d;
}

/// Evaluates DLRM scenario `j`: its report as JSON.
inline nlohmann::json run_dlrm_scenario(const nlohmann::json& j,
                                        std::string_view profile_text = {}) {
  dlrm_scenario d = parse_dlrm_scenario(j, profile_text);
  d.head["plan"] = detail::plan_json(
      d.model, analytic::dlrm_plan(d.model, d.setup, d.owner, d.gpus, d.machine, d.profile, d.el));
  return d.head;
}

/// One embedding bag on one GPU, as Lin et al.'s EL model prices it (`embedding_bag_model`): a
/// scenario whose top-level object has the key "embedding_bag" (`{"embedding_bag": {"rows",
/// "dim", "pooling", "reuse"}, "batch", "precision", "embedding_model"}`). The report names what
/// each time includes: the forward call as CUDA events time it (host floor or kernel), the
/// forward kernel alone (a profiler's view), the backward without and with the fused optimizer,
/// the dense gradient's SGD step, and the whole step each way.
inline nlohmann::json run_embedding_bag_scenario(const nlohmann::json& j) {
  using namespace detail;
  only_keys(j, "scenario", {"embedding_bag", "batch", "precision", "embedding_model"});
  const double batch = int_field(j, "scenario", "batch", 1, 1 << 30, 0, true);
  const dtype precision = compute_type(j, "scenario", "precision", "precision");
  const embedding_table t =
      parse_table(require(j, "scenario", "embedding_bag"), "embedding_bag", "table", 0, batch);
  const embedding_bag_model el = j.contains("embedding_model")
                                     ? parse_embedding_model(j["embedding_model"])
                                     : h100_embedding_bag;
  const embedding_bag_shape s = t.shape(batch, size_of(precision));
  const reuse_histogram h = s.effective_reuse();
  using g = embedding_gradient;
  return json{{"embedding_bag",
               {{"rows", t.rows},
                {"dim", t.dim},
                {"pooling", t.pooling},
                {"batch", batch},
                {"precision", std::string(to_string(precision))}}},
              {"embedding_model", j.contains("embedding_model") ? "given" : "H100 fit"},
              {"lookups", s.lookups()},
              {"unique_rows", h.unique()},
              {"forward_call_s", el.forward(s)},
              {"forward_kernel_s", el.forward_kernel(s)},
              {"backward_dense_s", el.backward(s, g::dense)},
              {"backward_dense_accumulate_s", el.backward(s, g::dense_accumulate)},
              {"sgd_update_dense_s", el.update(s, g::dense)},
              {"backward_fused_update_s", el.backward(s, g::fused)},
              {"step_dense_s", el.step(s, g::dense)},
              {"step_fused_s", el.step(s, g::fused)}};
}

/// A DLRM report (`run_dlrm_scenario`) as a table for people: the inputs, the iteration and its
/// terms on the busiest rank, each rank's tables, memory and all-to-all, and for a sharding
/// search every sharder's time.
inline std::string dlrm_table(const nlohmann::json& j) {
  using json = nlohmann::json;
  const json& p = j["plan"];
  const json& mj = j["model"];
  std::string out;
  char line[256];
  std::snprintf(
      line, sizeof line, "DLRM, %d tables (%s embedding and %s dense parameters) on %d x %s\n",
      mj["tables"].get<int>(), human_count(mj["embedding_parameters"].get<double>()).c_str(),
      human_count(mj["dense_parameters"].get<double>()).c_str(), j["gpus"].get<int>(),
      j["device"].get<std::string>().c_str());
  out += line;
  std::snprintf(
      line, sizeof line, "batch %s; gradient %s; sharding %s; profile %s; embedding model %s\n",
      human_count(j["batch"].get<double>()).c_str(), j["gradient"].get<std::string>().c_str(),
      (j.contains("chosen") ? j["chosen"] : j["sharding"]).get<std::string>().c_str(),
      j["profile"].get<std::string>().c_str(), j["embedding_model"].get<std::string>().c_str());
  out += line;
  out += "loop " + j["loop"].get<std::string>() + "\n";
  std::snprintf(line, sizeof line, "iteration %s (rank %d is the busiest)\n",
                human_duration(p["iteration_time_s"].get<double>()).c_str(),
                p["busiest_rank"].get<int>());
  out += line;
  out += "time terms (the busiest rank)\n";
  static constexpr std::pair<const char*, const char*> terms[] = {
      {"bottom_mlp_forward", "bottom MLP forward"},
      {"embedding_forward_busiest", "embedding forward"},
      {"all_to_all_forward", "all-to-all forward"},
      {"interaction_top_mlp_forward", "top MLP forward"},
      {"interaction_top_mlp_backward", "top MLP backward"},
      {"all_to_all_backward", "all-to-all backward"},
      {"embedding_backward_update_busiest", "embedding bwd + update"},
      {"bottom_mlp_backward", "bottom MLP backward"},
      {"all_reduce", "dense all-reduce"},
      {"exposed_communication", "exposed comm"},
      {"optimizer", "optimizer step"},
      {"host_busiest", "host (issuing)"},
      {"input_copy_busiest", "input copies"}};
  for (const auto& [key, label] : terms)
    if (p["breakdown_s"][key].get<double>() > 0)
      out += table_row(label, human_duration(p["breakdown_s"][key].get<double>()));
  out += "memory per GPU\n";
  const double peak = p["peak_memory_bytes"].get<double>(), cap = j["capacity_bytes"].get<double>();
  out += table_row("peak (busiest)", human_bytes(peak));
  out += table_row("capacity", human_bytes(cap), peak <= cap ? "fits" : "does NOT fit");
  std::snprintf(line, sizeof line, "  %4s %6s %12s %12s %12s %12s %12s\n", "rank", "tables",
                "tables", "memory", "emb fwd", "emb bwd+upd", "a2a sent");
  out += line;
  int r = 0;
  for (const json& rk : p["ranks"]) {
    std::snprintf(line, sizeof line, "  %4d %6zu %12s %12s %12s %12s %12s\n", r++,
                  rk["tables"].size(), human_bytes(rk["table_bytes"].get<double>()).c_str(),
                  human_bytes(rk["memory_bytes"].get<double>()).c_str(),
                  human_duration(rk["embedding_forward_s"].get<double>()).c_str(),
                  human_duration(rk["embedding_backward_update_s"].get<double>()).c_str(),
                  human_bytes(rk["all_to_all_sent_bytes"].get<double>()).c_str());
    out += line;
  }
  if (j.contains("candidates")) {
    out += "sharders tried\n";
    for (const json& c : j["candidates"]) {
      const std::string name = c["sharder"].get<std::string>();
      out += c.contains("iteration_time_s")
                 ? table_row(name, human_duration(c["iteration_time_s"].get<double>()),
                             name == j["chosen"].get<std::string>() ? "chosen" : "")
                 : table_row(name, "-", c["error"].get<std::string>());
    }
  }
  return out;
}

/// An "embedding_bag" scenario's report as a table for people.
inline std::string embedding_bag_table(const nlohmann::json& j) {
  const nlohmann::json& b = j["embedding_bag"];
  std::string out;
  char line[256];
  std::snprintf(
      line, sizeof line, "embedding bag: %s rows x %d, pooling %g, batch %s, %s; EL model: %s\n",
      human_count(b["rows"].get<double>()).c_str(), b["dim"].get<int>(), b["pooling"].get<double>(),
      human_count(b["batch"].get<double>()).c_str(), b["precision"].get<std::string>().c_str(),
      j["embedding_model"].get<std::string>().c_str());
  out += line;
  std::snprintf(line, sizeof line, "%s lookups over %s distinct rows\n",
                human_count(j["lookups"].get<double>()).c_str(),
                human_count(j["unique_rows"].get<double>()).c_str());
  out += line;
  struct term {
    const char *key, *label, *note;
  };
  static constexpr term terms[] = {
      {"forward_call_s", "forward call", "CUDA events: host floor or kernel"},
      {"forward_kernel_s", "forward kernel", "the kernel alone (a profiler's view)"},
      {"backward_dense_s", "backward", "a new dense gradient, no optimizer"},
      {"backward_dense_accumulate_s", "backward, accumulated", "into an existing dense gradient"},
      {"sgd_update_dense_s", "SGD step", "over the dense gradient"},
      {"backward_fused_update_s", "fused backward + SGD", "FBGEMM TBE: the touched rows updated"},
      {"step_dense_s", "step, dense", "forward + backward + SGD"},
      {"step_fused_s", "step, fused", "forward + fused backward"}};
  for (const term& t : terms)
    out += table_row(t.label, human_duration(j[t.key].get<double>()), t.note);
  return out;
}

}  // namespace strata::io
