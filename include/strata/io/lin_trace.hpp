#pragma once
/// @file io/lin_trace.hpp
/// @brief The JSON trace format for Lin et al.'s Algorithm 1 (`sim::replay`), its reader, and
/// the replay's report and timeline.
///
/// Format (docs/simulation.md):
/// @code{.json}
/// {"overheads_us": {"T1": 5, "T2": 10, "T3": 3, "T4": 6, "T5": 2, "kernel_gap": 1},
///  "cluster": {"preset": "dgx-a100", "devices": 8},          // only for ops given in bytes
///  "ops": [
///    {"id": "fc1", "rank": 0, "stream": "compute", "kind": "gemm", "duration_us": 120},
///    {"id": "ar1", "rank": 0, "stream": "communication", "kind": "all_reduce",
///     "bytes": 67108864, "deps": ["fc1"]}]}
/// @endcode
/// An op gives `duration_us` (one kernel), `kernels_us` (several), or, for a collective,
/// `bytes`: its time is then the ring algorithm over all ranks of the trace on `cluster`
/// (`kind` names the collective). Ops of a rank are listed in launch order.
/// An op of kind "embedding_bag" without a duration is priced with the EL model
/// (`model/embedding_bag.hpp`, Lin et al. §III-B) from its shape: "rows", "dim", "pooling",
/// "batch", optional "reuse" (17 counts, "uniform" or {"zipf": a}), "pass" ("forward",
/// "backward" or "update"; a forward op is the kernel alone, `forward_kernel`) and "gradient"
/// ("dense", "dense_accumulate" or "fused"); a top-level
/// "embedding_model" replaces fields of the H100 fit (docs/lin.md):
/// @code{.json}
/// {"id": "emb_fwd", "rank": 0, "kind": "embedding_bag", "rows": 1000000, "dim": 64,
///  "pooling": 20, "batch": 4096, "reuse": {"zipf": 1.05}}
/// @endcode

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/comm/collectives.hpp"
#include "strata/io/cluster.hpp"
#include "strata/io/simulation.hpp"
#include "strata/model/embedding_bag.hpp"
#include "strata/sim/lin.hpp"

namespace strata::io {

namespace detail {
inline comm::collective collective_named(const std::string& kind, const std::string& path) {
  if (kind == "all_reduce") return comm::collective::all_reduce;
  if (kind == "all_gather") return comm::collective::all_gather;
  if (kind == "reduce_scatter") return comm::collective::reduce_scatter;
  if (kind == "broadcast") return comm::collective::broadcast;
  if (kind == "reduce") return comm::collective::reduce;
  fail(path,
       "a collective given in bytes needs kind all_reduce, all_gather, reduce_scatter, "
       "broadcast or reduce (got \"" +
           kind + "\")");
}

/// A table's reuse factors: 17 counts, "uniform", or {"zipf": a}.
inline reuse_histogram parse_reuse(const json& j, const std::string& path, double rows,
                                   double lookups) {
  if (j.is_string()) {
    if (j.get<std::string>() == "uniform") return uniform_reuse(rows, lookups);
    fail(path, "must be 17 counts, \"uniform\" or {\"zipf\": exponent}");
  }
  if (j.is_object()) {
    only_keys(j, path, {"zipf"});
    if (!j.contains("zipf")) fail(path + ".zipf", "missing (required)");
    return zipf_reuse(rows, lookups, num_field(j, path, "zipf", 0.0, 10.0, 1.0));
  }
  if (!j.is_array()) fail(path, "must be 17 counts, \"uniform\" or {\"zipf\": exponent}");
  if (j.size() != static_cast<std::size_t>(reuse_bins))
    fail(path, "must hold 17 counts (got " + std::to_string(j.size()) + ")");
  reuse_histogram h;
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number() || !(j[i].get<double>() >= 0))
      fail(path + "[" + std::to_string(i) + "]", "must be a non-negative count");
    h.rows[i] = j[i].get<double>();
  }
  // the counts must describe these lookups: a row of bin i (k in (2^(i-1), 2^i], bin 0: k = 1,
  // bin 16: k > 2^15) was read at least 2^(i-1) + 1 and at most 2^i times, and no more rows
  // than the table holds were read
  double hit = 0, lo = 0, hi = 0;
  for (int i = 0; i < reuse_bins; ++i) {
    const double n = h.rows[static_cast<std::size_t>(i)], top = std::ldexp(1.0, i);
    hit += n;
    lo += n * (i == 0 ? 1.0 : top / 2 + 1);
    hi += i + 1 == reuse_bins && n > 0 ? std::numeric_limits<double>::infinity() : n * top;
  }
  auto num = [](double v) { return nlohmann::json(v).dump(); };
  if (hit > rows * (1 + 1e-9))
    fail(path, "counts " + num(hit) + " rows read, the table has " + num(rows));
  if (lookups < lo * (1 - 1e-9) || lookups > hi * (1 + 1e-9))
    fail(path, "the counts give " + num(lo) +
                   (hi < std::numeric_limits<double>::infinity() ? " to " + num(hi) : " or more") +
                   " lookups, and batch x pooling makes " + num(lookups));
  return h;
}

/// EL model parameters (docs/lin.md): the H100 fit with the given fields replaced.
inline embedding_bag_model parse_embedding_model(const json& j) {
  const std::string path = "embedding_model";
  only_keys(j, path,
            {"floor_forward_us", "floor_backward_us", "floor_update_us", "gather_bandwidth_GBps",
             "l2_bandwidth_GBps", "l2_MB", "per_lookup_ns", "contention_ns", "dense_bandwidth_GBps",
             "launch_us", "lookup_latency_ns"});
  embedding_bag_model m = h100_embedding_bag;
  m.floor_forward = num_field(j, path, "floor_forward_us", 0.0, 1e6, m.floor_forward * 1e6) * 1e-6;
  m.floor_backward =
      num_field(j, path, "floor_backward_us", 0.0, 1e6, m.floor_backward * 1e6) * 1e-6;
  m.floor_update = num_field(j, path, "floor_update_us", 0.0, 1e6, m.floor_update * 1e6) * 1e-6;
  m.gather_bandwidth =
      num_field(j, path, "gather_bandwidth_GBps", 1e-3, 1e6, m.gather_bandwidth * 1e-9) * 1e9;
  m.l2_bandwidth = num_field(j, path, "l2_bandwidth_GBps", 1e-3, 1e6, m.l2_bandwidth * 1e-9) * 1e9;
  m.l2_bytes = num_field(j, path, "l2_MB", 0.0, 1e6, m.l2_bytes * 1e-6) * 1e6;
  m.per_lookup = num_field(j, path, "per_lookup_ns", 0.0, 1e6, m.per_lookup * 1e9) * 1e-9;
  m.contention = num_field(j, path, "contention_ns", 0.0, 1e9, m.contention * 1e9) * 1e-9;
  m.dense_bandwidth =
      num_field(j, path, "dense_bandwidth_GBps", 1e-3, 1e6, m.dense_bandwidth * 1e-9) * 1e9;
  m.launch = num_field(j, path, "launch_us", 0.0, 1e6, m.launch * 1e6) * 1e-6;
  m.lookup_latency =
      num_field(j, path, "lookup_latency_ns", 0.0, 1e9, m.lookup_latency * 1e9) * 1e-9;
  return m;
}

}  // namespace detail

/// Reads a trace; every error names the op (or field) at fault.
inline sim::lin_trace parse_lin_trace(std::string_view text) {
  using detail::fail;
  const nlohmann::json j = detail::parse_json(text);
  detail::only_keys(j, "trace", {"overheads_us", "cluster", "ops", "embedding_model"});
  const embedding_bag_model el = j.contains("embedding_model")
                                     ? detail::parse_embedding_model(j["embedding_model"])
                                     : h100_embedding_bag;
  sim::lin_trace t;
  if (j.contains("overheads_us")) {
    const auto& o = j["overheads_us"];
    detail::only_keys(o, "overheads_us", {"T1", "T2", "T3", "T4", "T5", "kernel_gap"});
    auto us = [&](const char* k, double d) {
      return detail::num_field(o, "overheads_us", k, 0.0, 1e9, d) * 1e-6;
    };
    t.overheads = {us("T1", 0), us("T2", 0), us("T3", 0),
                   us("T4", 0), us("T5", 0), us("kernel_gap", 1)};
  }
  const auto& ops = detail::require(j, "trace", "ops");
  if (!ops.is_array() || ops.empty()) fail("ops", "must be a non-empty array");
  int ranks = 0;
  for (std::size_t i = 0; i < ops.size(); ++i)
    ranks = std::max(ranks, 1 + detail::int_field(ops[i], "ops[" + std::to_string(i) + "]", "rank",
                                                  0, 1 << 20, 0, true));
  std::optional<cluster> machine;
  if (j.contains("cluster")) machine = detail::parse_cluster(j["cluster"]);
  t.ranks.assign(static_cast<std::size_t>(ranks), {});
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& o = ops[i];
    const std::string path = "ops[" + std::to_string(i) + "]";
    detail::only_keys(o, path,
                      {"id", "rank", "stream", "kind", "duration_us", "kernels_us", "bytes", "deps",
                       "rows", "dim", "pooling", "batch", "reuse", "pass", "gradient"});
    sim::lin_op op;
    op.id = detail::str_field(o, path, "id", nullptr);
    const std::string who = path + " ('" + op.id + "')";
    const int rank = detail::int_field(o, path, "rank", 0, 1 << 20, 0, true);
    const std::string st = detail::str_field(o, path, "stream", "compute");
    if (st == "compute") {
      op.on = sim::stream::compute;
    } else if (st == "communication") {
      op.on = sim::stream::communication;
    } else {
      fail(who + ".stream", "must be \"compute\" or \"communication\"");
    }
    const std::string kind = detail::str_field(o, path, "kind", "");
    if (o.contains("duration_us") + o.contains("kernels_us") + o.contains("bytes") > 1)
      fail(who, "give one of duration_us, kernels_us or bytes");
    if (o.contains("duration_us")) {
      op.kernels.push_back(detail::num_field(o, who, "duration_us", 0.0, 1e12, 0) * 1e-6);
    } else if (o.contains("kernels_us")) {
      if (!o["kernels_us"].is_array()) fail(who + ".kernels_us", "must be an array of times");
      for (const auto& k : o["kernels_us"]) {
        if (!k.is_number() || k.get<double>() < 0)
          fail(who + ".kernels_us", "times must be non-negative numbers");
        op.kernels.push_back(k.get<double>() * 1e-6);
      }
    } else if (o.contains("bytes")) {
      if (op.on != sim::stream::communication)
        fail(who + ".bytes", "only communication ops may be given in bytes");
      if (!machine) fail("cluster", "ops given in bytes need a cluster to place them on");
      const double b = detail::num_field(o, who, "bytes", 0.0, 1e18, 0);
      const auto op_kind = detail::collective_named(kind, who + ".kind");
      op.kernels.push_back(comm::ring::time(op_kind, *machine, {0, ranks, 1}, bytes{b}).count());
    }
    if (kind == "embedding_bag" && op.kernels.empty()) {
      // priced with the EL model (Lin et al. §III-B) when no duration is given
      embedding_bag_shape s;
      for (const char* k : {"rows", "dim", "pooling", "batch"})
        if (!o.contains(k)) fail(who + "." + k, "missing (an embedding_bag op without a duration)");
      s.rows = detail::num_field(o, who, "rows", 1.0, 1e12, 1.0);
      s.dim = detail::num_field(o, who, "dim", 1.0, 1e6, 1.0);
      s.pooling = detail::num_field(o, who, "pooling", 0.0, 1e6, 1.0);
      s.batch = detail::num_field(o, who, "batch", 1.0, 1e9, 1.0);
      if (o.contains("reuse"))
        s.reuse = detail::parse_reuse(o["reuse"], who + ".reuse", s.rows, s.lookups());
      const std::string pass = detail::str_field(o, who, "pass", "forward");
      const std::string grad = detail::str_field(o, who, "gradient", "dense");
      embedding_gradient g = embedding_gradient::dense;
      if (grad == "dense_accumulate")
        g = embedding_gradient::dense_accumulate;
      else if (grad == "fused")
        g = embedding_gradient::fused;
      else if (grad != "dense")
        fail(who + ".gradient", "must be \"dense\", \"dense_accumulate\" or \"fused\"");
      // the forward kernel alone: the replay charges the op's host work as its overheads
      // (T1-T5), so the host floor of a timed call (`forward`) would count it twice
      if (pass == "forward")
        op.kernels.push_back(el.forward_kernel(s));
      else if (pass == "backward")
        op.kernels.push_back(el.backward(s, g));
      else if (pass == "update")
        op.kernels.push_back(el.update(s, g));
      else
        fail(who + ".pass", "must be \"forward\", \"backward\" or \"update\"");
    } else {
      for (const char* k : {"rows", "dim", "pooling", "batch", "reuse", "pass", "gradient"})
        if (o.contains(k))
          fail(who + "." + k, kind == "embedding_bag"
                                  ? "an embedding_bag op with a duration takes no shape"
                                  : "only embedding_bag ops take a shape");
    }
    if (o.contains("deps")) {
      if (!o["deps"].is_array()) fail(who + ".deps", "must be an array of op ids");
      for (const auto& d : o["deps"]) {
        if (!d.is_string()) fail(who + ".deps", "must be an array of op ids");
        op.deps.push_back(d.get<std::string>());
      }
    }
    t.ranks[static_cast<std::size_t>(rank)].push_back(std::move(op));
  }
  return t;
}

/// The replay's report.
inline nlohmann::json to_json(const sim::lin_result& r) {
  return {{"iteration_time_s", r.time}, {"rank_time_s", r.rank_time}, {"gpu_time_s", r.gpu_time}};
}

/// The replay's timeline as a Chrome trace: one process per rank, its two streams as threads.
inline nlohmann::json chrome_trace(const sim::lin_result& r) {
  check_trace_size(r.events.size());
  nlohmann::json ev = nlohmann::json::array();
  for (std::size_t i = 0; i < r.rank_time.size(); ++i) {
    ev.push_back({{"ph", "M"},
                  {"name", "process_name"},
                  {"pid", i},
                  {"args", {{"name", "rank " + std::to_string(i)}}}});
    ev.push_back({{"ph", "M"},
                  {"name", "thread_name"},
                  {"pid", i},
                  {"tid", 0},
                  {"args", {{"name", "compute"}}}});
    ev.push_back({{"ph", "M"},
                  {"name", "thread_name"},
                  {"pid", i},
                  {"tid", 1},
                  {"args", {{"name", "communication"}}}});
  }
  for (const auto& e : r.events)
    ev.push_back({{"ph", "X"},
                  {"name", e.op},
                  {"pid", e.rank},
                  {"tid", e.on == sim::stream::compute ? 0 : 1},
                  {"ts", e.start * 1e6},
                  {"dur", (e.end - e.start) * 1e6}});
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace strata::io
