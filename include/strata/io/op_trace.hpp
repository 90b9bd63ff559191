#pragma once
/// @file io/op_trace.hpp
/// @brief Readers and writers of strata's operation trace (`sim::op_trace`): its own JSON form,
/// PyTorch profiler Chrome traces, and the synthetic multi-worker timeline of Li et al.'s
/// simulator as a Chrome / Perfetto trace. docs/li.md documents the format and the inference.
///
/// The JSON form uses the vocabulary of Lin's replay traces (io/lin_trace.hpp) plus a start:
/// @code{.json}
/// {"ops": [
///   {"id": "down conv1", "stream": "downlink", "kind": "downlink", "start_us": 0,
///    "duration_us": 7.5, "bytes": 37632, "tensor": "conv1.weight"},
///   {"id": "fwd conv1", "stream": "worker", "kind": "compute", "start_us": 8,
///    "duration_us": 310, "deps": ["down conv1"]}]}
/// @endcode
/// Optional per op: "name", "bytes", "tensor", "deps" (ids of ops listed before it), "step"
/// (profiled step, default 0), "server" (parameter server, default 0). Streams whose names start
/// with "cpu" are host threads; "downlink", "uplink" and "ps" are Li et al.'s resources. An
/// optional "gradients" array lists the gradients the backward pass made ready, in that order:
/// {"time_us", "bytes" (optional: not recorded), "stream" (optional: the host thread)}.
///
/// PyTorch profiler traces (`torch.profiler` export_chrome_trace): GPU kernels, memsets and copies
/// (`cat` kernel / gpu_memset / gpu_memcpy) become ops on "gpu <device> stream <id>", CUDA runtime
/// and driver calls ops on "cpu <thread>", "[memory]" instant events memory samples; CPU operator
/// events (`cpu_op`, nested Python and ATen calls) are not ops: their time is the host time
/// between runtime calls. Inferred dependencies (the profiler records only the launch links):
/// - a GPU op waits for its launch (the runtime call with the same `correlation`); the launch is
///   split where the GPU op could begin (its recorded start, at most the call's end), so the
///   trace replays onto itself;
/// - ops of one stream or thread run in trace order;
/// - a synchronising call (`*Synchronize`, a blocking `cudaMemcpy`) waits for the last GPU op
///   of every stream launched before it began;
/// - a host thread that starts after another thread's call ended, with nothing of its own in
///   between, waits for that call (the autograd thread takes over from the main thread in
///   backward and hands back before the optimizer).
/// Gradients (`op_trace::gradients`): every `torch::autograd::AccumulateGrad` CPU op, ready at the
/// end of the autograd engine's call around it (`evaluate_function: ...AccumulateGrad`, where
/// the parameter's hooks, DDP's among them, run), with the bytes of its input (`Input Dims` and
/// `Input type`, recorded with `record_shapes=True`; otherwise unknown).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/analytic/step.hpp"
#include "strata/io/json.hpp"
#include "strata/io/simulation.hpp"
#include "strata/sim/op_trace.hpp"
#include "strata/sim/ps.hpp"

namespace strata::io {

/// Reads strata's JSON operation trace; errors name the op and field.
inline sim::op_trace parse_op_trace(std::string_view text) {
  using detail::fail;
  const nlohmann::json j = detail::parse_json(text);
  detail::only_keys(j, "trace", {"ops", "gradients"});
  const auto& ops = detail::require(j, "trace", "ops");
  if (!ops.is_array() || ops.empty()) fail("ops", "must be a non-empty array");
  sim::op_trace t;
  std::map<std::string, int> stream_of, index_of;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& o = ops[i];
    const std::string path = "ops[" + std::to_string(i) + "]";
    detail::only_keys(o, path,
                      {"id", "name", "stream", "kind", "start_us", "duration_us", "bytes", "tensor",
                       "deps", "step", "server"});
    sim::trace_op op;
    op.id = detail::str_field(o, path, "id", nullptr);
    const std::string who = path + " ('" + detail::cut(op.id) + "')";
    if (index_of.count(op.id)) fail(who + ".id", "is used twice");
    op.name = detail::str_field(o, who, "name", "");
    const std::string st = detail::str_field(o, who, "stream", nullptr);
    auto [it, fresh] = stream_of.try_emplace(st, static_cast<int>(t.streams.size()));
    if (fresh) t.streams.push_back(st);
    op.stream = it->second;
    op.kind = detail::str_field(o, who, "kind", "");
    op.start = detail::num_field(o, who, "start_us", 0.0, 1e15, 0.0) * 1e-6;
    if (!o.contains("duration_us") && st != "downlink" && st != "uplink")
      fail(who + ".duration_us", "missing (required except for transfers)");
    op.duration = detail::num_field(o, who, "duration_us", 0.0, 1e12, 0.0) * 1e-6;
    op.bytes = detail::num_field(o, who, "bytes", 0.0, 1e18, 0.0);
    if ((st == "downlink" || st == "uplink") && !o.contains("bytes"))
      fail(who + ".bytes", "missing (a transfer needs its size)");
    op.tensor = detail::str_field(o, who, "tensor", "");
    op.step = detail::int_field(o, who, "step", 0, 1 << 20, 0);
    op.server = detail::int_field(o, who, "server", 0, 63, 0);
    if (o.contains("deps")) {
      if (!o["deps"].is_array()) fail(who + ".deps", "must be an array of op ids");
      for (const auto& d : o["deps"]) {
        if (!d.is_string()) fail(who + ".deps", "must be an array of op ids");
        const auto f = index_of.find(d.get<std::string>());
        if (f == index_of.end())
          fail(who + ".deps",
               "'" + detail::cut(d.get<std::string>()) + "' is not an op listed before this one");
        op.deps.push_back(f->second);
      }
    }
    index_of[op.id] = static_cast<int>(t.ops.size());
    t.ops.push_back(std::move(op));
  }
  if (j.contains("gradients")) {
    const auto& gs = j["gradients"];
    if (!gs.is_array()) fail("gradients", "must be an array");
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const std::string path = "gradients[" + std::to_string(i) + "]";
      detail::only_keys(gs[i], path, {"time_us", "bytes", "stream"});
      sim::trace_gradient g;
      if (!gs[i].contains("time_us")) fail(path + ".time_us", "missing (required)");
      g.time = detail::num_field(gs[i], path, "time_us", 0.0, 1e15, 0.0) * 1e-6;
      if (!t.gradients.empty() && g.time < t.gradients.back().time)
        fail(path + ".time_us", "comes before the gradient listed before it");
      g.bytes = detail::num_field(gs[i], path, "bytes", 0.0, 1e18, -1.0);
      if (gs[i].contains("stream")) {
        const std::string st = detail::str_field(gs[i], path, "stream", nullptr);
        const auto f = stream_of.find(st);
        if (f == stream_of.end())
          fail(path + ".stream", "'" + detail::cut(st) + "' is no op's stream");
        g.stream = f->second;
      }
      t.gradients.push_back(g);
    }
  }
  return t;
}

/// Writes an operation trace in strata's JSON form.
inline nlohmann::json to_json(const sim::op_trace& t) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : t.ops) {
    nlohmann::json j{{"id", o.id},
                     {"stream", t.streams[static_cast<std::size_t>(o.stream)]},
                     {"kind", o.kind},
                     {"start_us", o.start * 1e6},
                     {"duration_us", o.duration * 1e6}};
    if (!o.name.empty()) j["name"] = o.name;
    if (o.bytes > 0) j["bytes"] = o.bytes;
    if (!o.tensor.empty()) j["tensor"] = o.tensor;
    if (o.step != 0) j["step"] = o.step;
    if (o.server != 0) j["server"] = o.server;
    if (!o.deps.empty()) {
      nlohmann::json d = nlohmann::json::array();
      for (int k : o.deps) d.push_back(t.ops[static_cast<std::size_t>(k)].id);
      j["deps"] = d;
    }
    ops.push_back(std::move(j));
  }
  nlohmann::json out{{"ops", ops}};
  if (!t.gradients.empty()) {
    nlohmann::json gs = nlohmann::json::array();
    for (const auto& g : t.gradients) {
      nlohmann::json j{{"time_us", g.time * 1e6}};
      if (g.bytes >= 0) j["bytes"] = g.bytes;
      if (g.stream >= 0) j["stream"] = t.streams[static_cast<std::size_t>(g.stream)];
      gs.push_back(std::move(j));
    }
    out["gradients"] = std::move(gs);
  }
  return out;
}

namespace detail {
/// An AccumulateGrad call of a PyTorch trace: its thread, begin and end (seconds), gradient bytes.
struct accumulated {
  std::string thread;
  double ts = 0, end = 0, bytes = -1;
};
/// The bytes of the gradient an AccumulateGrad call received: its first input's dims and type.
inline double gradient_bytes(const nlohmann::json& args, const std::string& who) {
  const auto& dims = args["Input Dims"];
  if (!dims.is_array() || dims.empty() || !dims[0].is_array())
    fail(who + ".args.Input Dims", "must be a list of shapes (got " + show(dims) + ")");
  double n = 1;
  for (const auto& d : dims[0]) {
    if (!d.is_number_integer() || d.get<long long>() < 0)
      fail(who + ".args.Input Dims", "must hold non-negative integers (got " + show(d) + ")");
    n *= static_cast<double>(d.get<long long>());
  }
  const nlohmann::json* type = args.contains("Input type") ? &args["Input type"] : nullptr;
  if (!type || !type->is_array() || type->empty() || !(*type)[0].is_string())
    fail(who + ".args.Input type", "missing (the gradient's element type)");
  const std::string ty = (*type)[0].get<std::string>();
  const std::pair<const char*, double> sizes[] = {{"float", 4},
                                                  {"double", 8},
                                                  {"c10::Half", 2},
                                                  {"c10::BFloat16", 2},
                                                  {"c10::Float8_e4m3fn", 1},
                                                  {"c10::Float8_e5m2", 1}};
  for (const auto& [k, b] : sizes)
    if (ty == k) return n * b;
  fail(who + ".args.Input type", "'" + cut(ty) + "' is not a floating-point type strata knows");
}

/// A CUDA kernel, memset, copy or runtime call of a PyTorch trace: where it sits in
/// `traceEvents`, its stream, kind, start and duration (seconds), bytes and launch link, and its
/// start and end in whole nanoseconds (`pytorch_ns`), which order the ops.
struct raw_event {
  std::size_t index;  // in traceEvents
  std::string name, stream, kind;
  double ts, dur, bytes = 0;
  long long correlation = -1;
  bool gpu = false;
  double ts_ns = 0, end_ns = 0;
};

/// A time of a PyTorch trace, in microseconds, as whole nanoseconds (an integer-valued double).
/// Kineto writes every `ts` and `dur` as integer nanoseconds printed as microseconds with three
/// decimals (libkineto/src/output_json.cpp, `"ts": {}.{:03}`), so rounding the parsed value to
/// the nearest nanosecond recovers the written one while a double resolves a nanosecond (below
/// 2^43 us, about 100 days of the profiler's clock), and sums and comparisons of these are exact
/// (below 2^53 ns). Seconds are not: `ts * 1e-6 + dur * 1e-6` of one call and `ts * 1e-6` of the
/// call that starts at its end can round either way. The integer part is split off first so that
/// its product by 1000 is exact and only the fraction rounds.
inline double pytorch_ns(double us) {
  const double whole = std::floor(us);
  return whole * 1e3 + std::nearbyint((us - whole) * 1e3);
}

/// What the scan of a PyTorch trace's events collects besides memory samples.
struct pytorch_events {
  std::vector<raw_event> raw;  // GPU ops and CUDA runtime calls, in trace order
  std::vector<accumulated> accumulations, engine_calls;  // AccumulateGrad, and its calls
  std::map<std::string, std::string> thread_label;  // host stream -> the profiler's thread name
};

/// The non-negative number `obj[key]` of the event at `at` (required).
inline double pytorch_number(const nlohmann::json& obj, const char* key, const std::string& at) {
  if (!obj.contains(key)) fail(at + "." + key, "missing (required)");
  const auto& v = obj[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    fail(at + "." + key, "must be a non-negative number (got " + show(v) + ")");
  return v.get<double>();
}

/// The host stream of a thread id: "cpu <tid>".
inline std::string pytorch_host_stream(const nlohmann::json& tid) {
  return "cpu " + (tid.is_string() ? tid.get<std::string>() : tid.dump());
}

/// An AccumulateGrad CPU op (`name`), or the autograd engine's call around one, into `ev`.
inline void pytorch_accumulate(const nlohmann::json& e, const std::string& name,
                               const std::string& who, pytorch_events& ev) {
  if (!e.contains("tid")) fail(who + ".tid", "missing (required)");
  const double ts = pytorch_number(e, "ts", who) * 1e-6,
               end = ts + pytorch_number(e, "dur", who) * 1e-6;
  const std::string thread = pytorch_host_stream(e["tid"]);
  if (name.front() == 'a') {  // the autograd engine's call, which also runs the hooks
    ev.engine_calls.push_back({thread, ts, end});
    return;
  }
  accumulated g{thread, ts, end, -1};
  const nlohmann::json args = e.contains("args") ? e["args"] : nlohmann::json::object();
  if (args.is_object() && args.contains("Input Dims")) g.bytes = gradient_bytes(args, who);
  ev.accumulations.push_back(std::move(g));
}

/// A GPU op (`gpu`: kernel, memset, copy, on "gpu <device> stream <id>") or a CUDA runtime call
/// (on its host thread; "sync" when it synchronises) of event `i`, category `cat`.
inline raw_event pytorch_raw_event(const nlohmann::json& e, std::size_t i, const std::string& cat,
                                   const std::string& name, const std::string& who, bool gpu) {
  const double ts_us = pytorch_number(e, "ts", who), dur_us = pytorch_number(e, "dur", who);
  raw_event r{i, name, "", "", ts_us * 1e-6, dur_us * 1e-6};
  r.gpu = gpu;
  r.ts_ns = pytorch_ns(ts_us);
  r.end_ns = r.ts_ns + pytorch_ns(dur_us);
  const nlohmann::json args = e.contains("args") ? e["args"] : nlohmann::json::object();
  if (!args.is_object()) fail(who + ".args", "must be a JSON object");
  if (args.contains("correlation")) {
    const auto& c = args["correlation"];
    if (!c.is_number_integer()) fail(who + ".args.correlation", "must be an integer");
    r.correlation = c.get<long long>();
  }
  auto id_text = [&](const char* key) {
    const nlohmann::json* v = args.contains(key)  ? &args[key]
                              : e.contains(key)   ? &e[key]
                              : e.contains("tid") ? &e["tid"]
                                                  : nullptr;
    if (v == nullptr) fail(who + ".args." + key, "missing (a GPU op names its device and stream)");
    return v->is_string() ? v->get<std::string>() : v->dump();
  };
  if (gpu) {
    if (r.correlation < 0) fail(who + ".args.correlation", "missing (a GPU op needs its launch)");
    r.stream = "gpu " + id_text("device") + " stream " + id_text("stream");
    r.kind = cat == "kernel" ? "kernel" : cat == "gpu_memset" ? "memset" : "memcpy";
    if (args.contains("bytes")) r.bytes = pytorch_number(args, "bytes", who + ".args");
  } else {
    if (!e.contains("tid")) fail(who + ".tid", "missing (required)");
    r.stream = pytorch_host_stream(e["tid"]);
    r.kind =
        name.find("Synchronize") != std::string::npos || name == "cudaMemcpy" ? "sync" : "runtime";
  }
  return r;
}

/// Event `i` of a PyTorch trace: a thread name, a memory sample (into `t`), an AccumulateGrad
/// call, a GPU op or a CUDA runtime call (into `ev`); other events are skipped.
inline void pytorch_event(const nlohmann::json& e, std::size_t i, pytorch_events& ev,
                          sim::op_trace& t) {
  const std::string path = "traceEvents[" + std::to_string(i) + "]";
  if (!e.is_object()) fail(path, "must be a JSON object");
  const std::string ph = e.contains("ph") && e["ph"].is_string() ? e["ph"].get<std::string>() : "";
  const std::string cat =
      e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
  const std::string name =
      e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
  const std::string who = path + " ('" + cut(name) + "')";
  if (ph == "M" && name == "thread_name" && e.contains("tid") && e.contains("args") &&
      e["args"].is_object() && e["args"].contains("name") && e["args"]["name"].is_string()) {
    ev.thread_label[pytorch_host_stream(e["tid"])] = e["args"]["name"].get<std::string>();
    return;
  }
  if (ph == "i" && name == "[memory]") {
    if (!e.contains("args") || !e["args"].is_object()) fail(who + ".args", "missing (required)");
    t.memory.push_back({pytorch_number(e, "ts", who) * 1e-6,
                        pytorch_number(e["args"], "Total Allocated", who + ".args")});
    return;
  }
  if (ph != "X") return;
  if (cat == "cpu_op" &&
      (name == "torch::autograd::AccumulateGrad" || name == "autograd::engine::evaluate_function: "
                                                            "torch::autograd::AccumulateGrad")) {
    pytorch_accumulate(e, name, who, ev);
    return;
  }
  const bool gpu = cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy";
  const bool runtime = cat == "cuda_runtime" || cat == "cuda_driver";
  if (!gpu && !runtime) return;
  ev.raw.push_back(pytorch_raw_event(e, i, cat, name, who, gpu));
}

/// An op of a PyTorch trace before its stream and dependencies are known, with the key that
/// orders the ops (where it may begin; a synchronisation at its end) and its end, both in whole
/// nanoseconds of the trace's clock (`pytorch_ns`), so that equal times compare equal.
struct pytorch_pending {
  sim::trace_op op;
  double key, end;
  int order;       // host before GPU at equal keys
  long long wait;  // GPU op: its launch's part 1 (raw index); sync: -2
  std::size_t raw_index;
};

/// The ops, times from `t0`: GPU ops, and each runtime call (launches split where their GPU op
/// may begin), in the order they may begin: host before GPU at equal keys, then the one that
/// ends first (a synchronisation, listed at its end, before the call that starts there), then
/// trace order.
inline std::vector<pytorch_pending> pytorch_pending_ops(const std::vector<raw_event>& raw,
                                                        double t0) {
  // launches: correlation -> runtime call
  std::map<long long, std::size_t> launch_of;
  for (std::size_t k = 0; k < raw.size(); ++k)
    if (!raw[k].gpu && raw[k].correlation >= 0) launch_of[raw[k].correlation] = k;
  std::vector<pytorch_pending> ps;
  std::map<long long, double> split;     // correlation -> where the launch's first part ends
  std::map<long long, double> split_ns;  // the same point in time, in nanoseconds (`pytorch_ns`)
  for (const auto& r : raw)
    if (r.gpu) {
      const auto l = launch_of.find(r.correlation);
      if (l == launch_of.end()) continue;  // launched before the trace began: no dependency
      const auto& c = raw[l->second];
      split[r.correlation] = std::clamp(r.ts - c.ts, 0.0, c.dur);
      split_ns[r.correlation] = std::clamp(r.ts_ns, c.ts_ns, c.end_ns);
    }
  for (std::size_t k = 0; k < raw.size(); ++k) {
    const auto& r = raw[k];
    sim::trace_op op;
    op.name = r.name;
    op.kind = r.kind;
    op.bytes = r.bytes;
    op.start = r.ts - t0;
    op.duration = r.dur;
    op.id = "traceEvents[" + std::to_string(r.index) + "]";
    if (r.gpu) {
      const auto l = launch_of.find(r.correlation);
      double key = r.ts_ns;
      long long wait = -1;
      if (l != launch_of.end()) {  // not before its launch's first part ends
        key = std::max(key, split_ns[r.correlation]);
        wait = static_cast<long long>(l->second);
      }
      ps.push_back({std::move(op), key, r.end_ns, 1, wait, k});
      continue;
    }
    const auto sp = split.find(r.correlation);
    if (sp != split.end()) {  // a launch: the part before its GPU op may begin, then the rest
      sim::trace_op rest = op;
      op.kind = "launch";
      op.duration = sp->second;
      rest.id += " return";
      rest.start = op.start + sp->second;
      rest.duration = r.dur - sp->second;
      const double at = split_ns[r.correlation];
      ps.push_back({std::move(op), r.ts_ns, at, 0, -1, k});
      ps.push_back({std::move(rest), at, r.end_ns, 0, -1, k});
    } else {
      // a synchronisation is listed at its end, after the GPU ops it waited for
      const bool sync = r.kind == "sync";
      ps.push_back({std::move(op), sync ? r.end_ns : r.ts_ns, r.end_ns, 0, sync ? -2 : -1, k});
    }
  }
  // exact comparisons of whole nanoseconds: a call that starts where a synchronisation ends ties
  // with it and follows it (it ends later), whatever their order in traceEvents
  std::stable_sort(ps.begin(), ps.end(), [](const pytorch_pending& a, const pytorch_pending& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.order != b.order) return a.order < b.order;
    return a.end < b.end;
  });
  return ps;
}

/// Appends the ops `ps` to `t` in their order, each on its stream (numbered in order of first
/// use), a GPU op after its launch's first part, a synchronisation after the last op of each
/// GPU stream launched before it; returns the stream numbers by name.
inline std::map<std::string, int> pytorch_place_ops(std::vector<pytorch_pending>& ps,
                                                    const std::vector<raw_event>& raw, double t0,
                                                    sim::op_trace& t) {
  std::map<std::string, int> stream_of;
  std::map<std::size_t, int> launch_op;  // raw index of a launch -> op index of its first part
  struct gpu_seen {
    int op;
    double launched;
  };
  // the GPU ops placed so far, per stream in placement order
  std::map<int, std::vector<gpu_seen>> gpu_ops;
  for (auto& p : ps) {
    auto [it, fresh] =
        stream_of.try_emplace(raw[p.raw_index].stream, static_cast<int>(t.streams.size()));
    if (fresh) t.streams.push_back(raw[p.raw_index].stream);
    p.op.stream = it->second;
    const int me = static_cast<int>(t.ops.size());
    if (p.op.kind == "launch") launch_op[p.raw_index] = me;
    if (p.wait >= 0) {
      const auto f = launch_op.find(static_cast<std::size_t>(p.wait));
      if (f != launch_op.end()) p.op.deps.push_back(f->second);
      gpu_ops[p.op.stream].push_back({me, raw[static_cast<std::size_t>(p.wait)].ts - t0});
    } else if (raw[p.raw_index].gpu) {
      gpu_ops[p.op.stream].push_back({me, p.op.start});
    }
    if (p.wait == -2) {
      // a synchronisation: the last op placed on each GPU stream that was launched before it,
      // found from each stream's end (almost always its last op: linear in the trace, where a
      // scan of every op placed so far made 60,000 synchronising copies take 23 s, issue 39)
      for (const auto& [stream, ops] : gpu_ops)
        for (auto g = ops.rbegin(); g != ops.rend(); ++g)
          if (g->launched < p.op.start) {
            p.op.deps.push_back(g->op);
            break;
          }
    }
    t.ops.push_back(std::move(p.op));
  }
  return stream_of;
}

/// The gradients, in time order: each accumulation ends with the engine call around it (DDP's
/// hook runs there), on the stream of its thread.
inline void pytorch_gradients(pytorch_events& ev, const std::map<std::string, int>& stream_of,
                              double t0, sim::op_trace& t) {
  auto& calls = ev.engine_calls;
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  for (const auto& g : ev.accumulations) {
    double end = g.end;
    auto it = std::upper_bound(calls.begin(), calls.end(), g.ts,
                               [](double x, const auto& c) { return x < c.ts; });
    while (it != calls.begin()) {  // the latest call that began on its thread
      --it;
      if (it->thread == g.thread) {
        if (it->end >= g.end) end = it->end;
        break;
      }
    }
    const auto s = stream_of.find(g.thread);
    t.gradients.push_back(
        {std::max(0.0, end - t0), g.bytes, s == stream_of.end() ? -1 : s->second});
  }
  std::stable_sort(t.gradients.begin(), t.gradients.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
}
}  // namespace detail

/// Reads a PyTorch profiler Chrome trace (one step); errors name the event.
inline sim::op_trace parse_pytorch_trace(std::string_view text) {
  using detail::fail;
  const nlohmann::json j = detail::parse_json(text);
  const nlohmann::json* events = &j;
  if (j.is_object()) {
    if (!j.contains("traceEvents"))
      fail("trace", "a Chrome trace needs \"traceEvents\" (is this a PyTorch profiler trace?)");
    events = &j["traceEvents"];
  }
  if (!events->is_array()) fail("traceEvents", "must be an array of events");
  detail::pytorch_events ev;
  sim::op_trace t;
  for (std::size_t i = 0; i < events->size(); ++i) detail::pytorch_event((*events)[i], i, ev, t);
  if (ev.raw.empty()) fail("traceEvents", "holds no GPU kernels and no CUDA runtime calls");
  double t0 = std::numeric_limits<double>::infinity();
  for (const auto& r : ev.raw) t0 = std::min(t0, r.ts);
  // ops: GPU ops, and each runtime call (launches split where their GPU op may begin)
  auto ps = detail::pytorch_pending_ops(ev.raw, t0);
  const auto stream_of = detail::pytorch_place_ops(ps, ev.raw, t0, t);
  for (const auto& sn : t.streams) {
    const auto f = ev.thread_label.find(sn);
    t.labels.push_back(f == ev.thread_label.end() ? std::string() : f->second);
  }
  // gradients: each accumulation ends with the engine call around it (DDP's hook runs there)
  detail::pytorch_gradients(ev, stream_of, t0, t);
  return t;
}

/// Reads the tensor sizes a TensorFlow timeline lacks: a JSON object of tensor names (or parts of
/// node names) and their bytes, `{"conv0/kernel": 37632, ...}`, ordered longest name first, so
/// that `parse_tensorflow_timeline` gives a transfer the longest name its node name contains.
inline std::vector<std::pair<std::string, double>> parse_tensor_sizes(std::string_view text) {
  using detail::fail;
  const nlohmann::json j = detail::parse_json(text);
  if (!j.is_object() || j.empty())
    fail("sizes", "must be a non-empty JSON object of tensor names and their bytes");
  std::vector<std::pair<std::string, double>> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string at = "sizes." + detail::cut(it.key());
    if (it.key().empty()) fail("sizes", "a tensor name is empty");
    if (!it->is_number() || !(it->get<double>() >= 0) || !(it->get<double>() < 1e18))
      fail(at, "must be a number of bytes, >= 0 (got " + detail::show(*it) + ")");
    out.emplace_back(it.key(), it->get<double>());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return out;
}

/// Converts a TensorFlow step timeline (the Chrome trace of `tensorflow.python.client.timeline`
/// for one distributed step, Li et al.'s input) into strata's operation trace. Processes named
/// "/job:ps..." are the parameter server, "/job:worker..." the worker; an event's args carry the
/// node `name`, the `op` type and its inputs (`input0`, `input1`, ...). On the worker, a receive
/// (`_Recv`, `_HostRecv`, `RecvTensor`) is a downlink and a send (`_Send`, `_HostSend`) an uplink;
/// the parameter server's own sends and receives are the other ends of those transfers and are
/// dropped; its other ops (the updates) go to "ps"; the worker's other ops to "worker". The
/// timeline records no sizes: a transfer's bytes are those of the first `tensor_bytes` key its node
/// name contains (an error names a transfer none matches). Dependencies are the inputs that name
/// an op listed earlier (":0" output suffixes and "^" control marks dropped), plus, for an update
/// on the server, the uplink of its tensor.
inline sim::op_trace parse_tensorflow_timeline(
    std::string_view text, const std::vector<std::pair<std::string, double>>& tensor_bytes) {
  using detail::fail;
  const nlohmann::json j = detail::parse_json(text);
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array())
    fail("trace", "a TensorFlow timeline needs a \"traceEvents\" array");
  const auto& events = j["traceEvents"];
  // a string field, or `fallback` where it is missing or not a string
  auto str = [](const nlohmann::json& o, const char* key, const std::string& fallback) {
    const auto f = o.find(key);
    return f != o.end() && f->is_string() ? f->get<std::string>() : fallback;
  };
  std::map<long long, std::string> process;  // pid -> its name
  for (const auto& e : events)
    if (e.is_object() && str(e, "ph", "") == "M" && str(e, "name", "") == "process_name" &&
        e.contains("pid") && e["pid"].is_number_integer() && e.contains("args") &&
        e["args"].is_object() && e["args"].contains("name") && e["args"]["name"].is_string())
      process[e["pid"].get<long long>()] = e["args"]["name"].get<std::string>();
  struct item {
    double ts;
    std::size_t index;
  };
  std::vector<item> order;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (!e.is_object()) fail("traceEvents[" + std::to_string(i) + "]", "must be a JSON object");
    if (str(e, "ph", "") != "X") continue;
    const std::string who = "traceEvents[" + std::to_string(i) + "]";
    if (!e.contains("ts") || !e["ts"].is_number() || !(e["ts"].get<double>() >= 0))
      fail(who + ".ts", "must be a non-negative number");
    order.push_back({e["ts"].get<double>(), i});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const item& a, const item& b) { return a.ts < b.ts; });
  sim::op_trace t;
  t.streams = {"downlink", "worker", "uplink", "ps"};
  t.labels.assign(4, "");
  std::map<std::string, int> by_name;
  auto base = [](std::string n) {
    if (!n.empty() && n[0] == '^') n.erase(0, 1);
    const auto colon = n.rfind(':');
    if (colon != std::string::npos && colon + 1 < n.size() &&
        n.find_first_not_of("0123456789", colon + 1) == std::string::npos)
      n.erase(colon);
    return n;
  };
  const double t0 = order.empty() ? 0.0 : order.front().ts;
  for (const auto& it : order) {
    const auto& e = events[it.index];
    const std::string path = "traceEvents[" + std::to_string(it.index) + "]";
    if (!e.contains("args") || !e["args"].is_object()) fail(path + ".args", "missing (required)");
    const auto& args = e["args"];
    const std::string name = str(args, "name", str(e, "name", ""));
    const std::string op = str(args, "op", str(e, "name", ""));
    const std::string who = path + " ('" + detail::cut(name) + "')";
    if (!e.contains("dur") || !e["dur"].is_number() || !(e["dur"].get<double>() >= 0))
      fail(who + ".dur", "must be a non-negative number");
    const long long pid =
        e.contains("pid") && e["pid"].is_number_integer() ? e["pid"].get<long long>() : -1;
    const auto pn = process.find(pid);
    if (pn == process.end()) fail(who + ".pid", "names no process of the timeline");
    const bool ps = pn->second.find("/job:ps") != std::string::npos;
    if (!ps && pn->second.find("/job:worker") == std::string::npos) continue;  // allocators, ...
    const bool recv = op == "_Recv" || op == "_HostRecv" || op == "RecvTensor";
    const bool send = op == "_Send" || op == "_HostSend";
    if (ps && (recv || send)) continue;  // the server's ends of the transfers
    sim::trace_op o;
    o.id = name.empty() ? path : name;
    if (by_name.count(o.id)) o.id += " (" + path + ")";
    o.name = op;
    o.start = (it.ts - t0) * 1e-6;
    o.duration = e["dur"].get<double>() * 1e-6;
    o.stream = ps ? 3 : recv ? 0 : send ? 2 : 1;
    o.kind = ps ? "ps" : recv ? "downlink" : send ? "uplink" : "compute";
    if (recv || send) {
      bool found = false;
      for (const auto& [key, b] : tensor_bytes)
        if (!found && name.find(key) != std::string::npos) {
          o.bytes = b;
          o.tensor = key;
          found = true;
        }
      if (!found) fail(who, "a transfer whose size is unknown (give its tensor's bytes)");
    }
    for (auto in = args.begin(); in != args.end(); ++in)
      if (in.key().rfind("input", 0) == 0 && in->is_string()) {
        const auto f = by_name.find(base(in->get<std::string>()));
        if (f != by_name.end()) o.deps.push_back(f->second);
      }
    if (ps)  // an update follows the uplink of a tensor its name mentions
      for (std::size_t k = 0; k < t.ops.size(); ++k)
        if (t.ops[k].stream == 2 && name.find(t.ops[k].tensor) != std::string::npos)
          o.deps.push_back(static_cast<int>(k));
    std::sort(o.deps.begin(), o.deps.end());
    o.deps.erase(std::unique(o.deps.begin(), o.deps.end()), o.deps.end());
    by_name[name] = static_cast<int>(t.ops.size());
    t.ops.push_back(std::move(o));
  }
  if (t.ops.empty()) fail("traceEvents", "holds no op of a /job:worker or /job:ps process");
  return t;
}

/// Options of `lowered_ps_trace`.
struct lowered_ps_options {
  int batch = 32;
  dtype precision = dtype::fp32;
  int servers = 1;
  double bytes_per_param = 4;  ///< fp32 parameters and gradients
  double update_rate = 10e9;   ///< bytes/s the server's SGD update streams (12 B per parameter)
  bool partition = false;      ///< every layer's tensors cut evenly over all servers (BytePS's
                               ///< summation servers) instead of whole layers per server
  int steps = 1;               ///< profiled steps to generate
  double variation = 0;        ///< step k's computations last 1 + u_k times longer, u_k uniform
                               ///< in [-variation, variation] (seeded), as profiled steps vary
  std::uint64_t seed = 7;
};

namespace detail {
/// A convolution or linear layer of `lowered_ps_trace` with the layers that ride with it up to
/// the next one: its first layer, parameters, forward and backward seconds for the batch.
struct ps_layer_group {
  std::size_t first;
  double params = 0, fwd = 0, bwd = 0;
};

/// What the steps of `lowered_ps_trace` share: the layers, the options, the layer groups and
/// their servers, the step being generated and the trace built so far.
struct lowered_ps_builder {
  std::span<const layer> layers;
  const lowered_ps_options& o;
  std::vector<ps_layer_group> g;
  std::vector<int> server{};  // per group: the server holding it (whole layers)
  sim::op_trace t{};
  int step = 0;
  std::string sfx{};  // " #<step>" when there are several steps

  /// The name of group `k`: its first layer's index and kind.
  [[nodiscard]] std::string label(std::size_t k) const {
    return std::to_string(g[k].first) + " " + std::string(to_string(layers[g[k].first].kind));
  }
  /// Appends `op` to the current step; returns its index.
  int add(sim::trace_op op) {
    op.step = step;
    op.id += sfx;
    t.ops.push_back(std::move(op));
    return static_cast<int>(t.ops.size()) - 1;
  }
};

/// The layer groups: a new one at every convolution or linear layer (and at the first layer),
/// with the parameters and the batch's forward and backward times of the layers it holds.
inline std::vector<ps_layer_group> lowered_ps_groups(std::span<const layer> layers,
                                                     const std::vector<layer_time>& times,
                                                     double N) {
  std::vector<ps_layer_group> g;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const bool weighted =
        layers[i].kind == layer_kind::conv || layers[i].kind == layer_kind::linear;
    if (weighted || g.empty()) g.push_back({i});
    g.back().params += layers[i].params;
    g.back().fwd += times[i].fw.count() * N;
    g.back().bwd += times[i].bw.count() * N;
  }
  return g;
}

/// The server of each group as TensorFlow places variables (Li et al. §5): each to the server
/// holding the fewest bytes so far.
inline std::vector<int> lowered_ps_servers(const std::vector<ps_layer_group>& g,
                                           const lowered_ps_options& o) {
  std::vector<double> load(static_cast<std::size_t>(o.servers), 0.0);
  std::vector<int> server(g.size(), 0);
  for (std::size_t k = 0; k < g.size(); ++k)
    if (g[k].params > 0) {
      const auto least = std::min_element(load.begin(), load.end()) - load.begin();
      server[k] = static_cast<int>(least);
      load[static_cast<std::size_t>(least)] += g[k].params * o.bytes_per_param;
    }
  return server;
}

/// The step's downlinks of the groups' parameters: one per group from its server, or with
/// `parts` > 1 one per part from every server (`down`: the first part, `more`: the others).
inline void lowered_ps_downlinks(lowered_ps_builder& b, int parts, std::vector<int>& down,
                                 std::vector<std::vector<int>>& more) {
  const auto& g = b.g;
  for (std::size_t k = 0; k < g.size(); ++k)
    if (g[k].params > 0 && parts > 1) {
      for (int i = 0; i < parts; ++i) {
        const int id = b.add({.id = "down " + b.label(k) + " part " + std::to_string(i),
                              .stream = 0,
                              .kind = "downlink",
                              .bytes = g[k].params * b.o.bytes_per_param / parts,
                              .tensor = b.label(k),
                              .server = i});
        if (i == 0)
          down[k] = id;
        else
          more[k].push_back(id);
      }
    } else if (g[k].params > 0)
      down[k] = b.add({.id = "down " + b.label(k),
                       .stream = 0,
                       .kind = "downlink",
                       .bytes = g[k].params * b.o.bytes_per_param,
                       .tensor = b.label(k),
                       .server = b.server[k]});
}

/// The step's forward pass on the worker (computations `scale` times as long), each group after
/// the previous one and its downlinks; returns the last group's op.
inline int lowered_ps_forward(lowered_ps_builder& b, const std::vector<int>& down,
                              const std::vector<std::vector<int>>& more, double scale) {
  const auto& g = b.g;
  std::vector<int> fwd(g.size(), -1);
  for (std::size_t k = 0; k < g.size(); ++k) {
    sim::trace_op f{
        .id = "fwd " + b.label(k), .stream = 1, .kind = "compute", .duration = g[k].fwd * scale};
    if (k > 0) f.deps.push_back(fwd[k - 1]);
    if (down[k] >= 0) f.deps.push_back(down[k]);
    for (int d : more[k]) f.deps.push_back(d);
    fwd[k] = b.add(std::move(f));
  }
  return fwd.back();
}

/// The step's backward pass after op `prev`, last group first, each group's gradient sent up
/// (in `parts` parts) once computed and applied by the server's update (SGD: read weights and
/// gradient, write weights, 12 B per fp32 parameter at `update_rate`).
inline void lowered_ps_backward(lowered_ps_builder& b, int prev, int parts, double scale) {
  const auto& g = b.g;
  for (std::size_t k = g.size(); k-- > 0;) {
    prev = b.add({.id = "bwd " + b.label(k),
                  .stream = 1,
                  .kind = "compute",
                  .duration = g[k].bwd * scale,
                  .deps = {prev}});
    if (!(g[k].params > 0)) continue;
    const double bytes = g[k].params * b.o.bytes_per_param / parts;
    for (int i = 0; i < parts; ++i) {
      const std::string part = parts > 1 ? " part " + std::to_string(i) : "";
      const int srv = parts > 1 ? i : b.server[k];
      const int up = b.add({.id = "up " + b.label(k) + part,
                            .stream = 2,
                            .kind = "uplink",
                            .bytes = bytes,
                            .tensor = b.label(k),
                            .server = srv,
                            .deps = {prev}});
      b.add({.id = "update " + b.label(k) + part,
             .stream = 3,
             .kind = "ps",
             .duration = 3 * bytes / b.o.update_rate,
             .server = srv,
             .deps = {up}});
    }
  }
}

/// The starts of the step's ops (from op `first` on): those of one worker alone
/// (`sim::simulate_ps` with `bandwidth`) after `offset`, transfers lasting as simulated; returns
/// the step's end.
inline double lowered_ps_starts(lowered_ps_builder& b, std::size_t first, double offset,
                                double bandwidth) {
  const auto one = sim::simulate_ps(
      {.steps = {sim::to_ps_step(b.t, b.step)}, .servers = b.o.servers},
      {.workers = 1, .bandwidth = bandwidth, .steps = 1, .warmup = 0, .timeline = true});
  for (const auto& e : one.events) {
    if (e.parse) continue;
    auto& op = b.t.ops[first + static_cast<std::size_t>(e.op)];
    op.start = offset + e.start;
    if (op.stream == 0 || op.stream == 2) op.duration = e.end - e.start;
  }
  return offset + one.step_end[0][0];
}
}  // namespace detail

/// A profiled step of asynchronous PS training generated from strata's own lowering (the trace
/// Li et al. would record with one worker): for every convolution or linear layer, a downlink of
/// its parameters, its forward and backward on the worker (`analytic::cnn_layer_times` on
/// `profile`; the layers after it up to the next convolution ride with it, batch norm's scale
/// and shift travel in its message), an uplink of its
/// gradient and the server's update (SGD: read weights and gradient, write weights, 12 B per
/// fp32 parameter at `update_rate`). Layers go to servers as TensorFlow places variables (Li et
/// al. §5): each to the server holding the fewest bytes so far; with `partition` (BytePS) every
/// layer's tensors are cut into one part per server instead. Starts are those of one worker
/// alone (`sim::simulate_ps` with `bandwidth`), step after step.
inline sim::op_trace lowered_ps_trace(std::span<const layer> layers, const device_profile& profile,
                                      const lowered_ps_options& o, double bandwidth = 1.25e9) {
  if (!(o.update_rate > 0)) throw plan_error("the server's update rate must be positive");
  if (o.servers < 1 || o.servers > 64)
    throw plan_error("the number of parameter servers must lie in [1, 64]");
  if (o.steps < 1 || o.steps > 1000) throw plan_error("profiled steps must lie in [1, 1000]");
  if (!(o.variation >= 0) || !(o.variation < 1))
    throw plan_error("the step-to-step variation must lie in [0, 1)");
  const auto times =
      analytic::cnn_layer_times(layers, {.batch = o.batch, .precision = o.precision}, profile);
  const double N = o.batch;
  detail::lowered_ps_builder b{layers, o, detail::lowered_ps_groups(layers, times, N)};
  b.t.streams = {"downlink", "worker", "uplink", "ps"};
  b.server = detail::lowered_ps_servers(b.g, o);
  sim::detail::splitmix64 rng{o.seed};
  double offset = 0;
  for (int step = 0; step < o.steps; ++step) {
    const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;  // [0, 1)
    const double scale = 1 + o.variation * (2 * u - 1);
    const std::size_t first = b.t.ops.size();
    b.step = step;
    b.sfx = o.steps > 1 ? " #" + std::to_string(step) : "";
    const int parts = o.partition ? o.servers : 1;
    std::vector<int> down(b.g.size(), -1);
    std::vector<std::vector<int>> more(b.g.size());  // partitioned: downlinks of parts 1..
    detail::lowered_ps_downlinks(b, parts, down, more);
    detail::lowered_ps_backward(b, detail::lowered_ps_forward(b, down, more, scale), parts, scale);
    // starts: one worker alone
    offset = detail::lowered_ps_starts(b, first, offset, bandwidth);
  }
  return std::move(b.t);
}

/// Li et al.'s profiled job from a trace: every step of it (`sim::to_ps_step`).
inline sim::ps_job to_ps_job(const sim::op_trace& t, double batch, int servers = 1) {
  return {.steps = sim::to_ps_steps(t), .batch = batch, .servers = servers};
}

/// The synthetic multi-worker trace of Li et al.'s simulator (Algorithm 3.1 returns it) as a
/// Chrome / Perfetto timeline: one process per worker, one thread per resource (a downlink's
/// parsing on a thread of its own, whether it ran on WORKER or the host CPU).
inline nlohmann::json chrome_trace(const sim::ps_job& job, const sim::ps_result& r) {
  check_trace_size(r.events.size());
  nlohmann::json ev = nlohmann::json::array();
  const int W = static_cast<int>(r.step_end.size());
  const char* names[] = {"downlink", "worker", "uplink", "ps", "parsing (downlinks)"};
  for (int w = 0; w < W; ++w) {
    ev.push_back({{"ph", "M"},
                  {"name", "process_name"},
                  {"pid", w},
                  {"args", {{"name", "worker " + std::to_string(w)}}}});
    for (int k = 0; k < 5; ++k)
      ev.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", w},
                    {"tid", k},
                    {"args", {{"name", names[k]}}}});
  }
  for (const auto& e : r.events) {
    const auto& op =
        job.steps[static_cast<std::size_t>(e.sampled)].ops[static_cast<std::size_t>(e.op)];
    int tid = static_cast<int>(op.res);
    if (e.parse) tid = op.res == sim::ps_resource::downlink ? 4 : 3;
    ev.push_back({{"ph", "X"},
                  {"name", e.parse ? "parse " + op.id : op.id},
                  {"pid", e.worker},
                  {"tid", tid},
                  {"ts", e.start * 1e6},
                  {"dur", (e.end - e.start) * 1e6},
                  {"args", {{"step", e.step}, {"profiled_step", e.sampled}}}});
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace strata::io
