#pragma once
/// @file io/simulation.hpp
/// @brief What a simulation shows a person: a Chrome-trace / Perfetto timeline (one process per
/// rank, one thread per stream, memory as a counter track), per-stream utilization, exposed
/// communication and the critical path.
/// @code
/// const auto run = strata::sim::simulate(...);
/// std::ofstream("trace.json") << strata::io::chrome_trace(run.graph, run.run).dump();
/// @endcode

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"
#include "strata/sim/core.hpp"

namespace strata::io {

/// The most events a timeline holds. A timeline is built as JSON in memory at 3-4.4 KB an event
/// (issue 39: GPT-3 at batch 98,304, 2.56 M tasks, ran out of 8 GiB with `--trace`), so a
/// quarter of a million events is about 1 GB; the simulations themselves take up to 4 million
/// tasks without a trace.
inline constexpr std::size_t max_trace_events = 250'000;

/// Refuses a timeline of `events` events above `max_trace_events`, before it is built.
inline void check_trace_size(std::size_t events) {
  if (events <= max_trace_events) return;
  throw plan_error("trace: the timeline would hold " + std::to_string(events) + " events (about " +
                   std::to_string(events * 4 / 1000000) +
                   " GB as JSON); a trace holds at most 250,000: simulate fewer micro-batches, "
                   "layers, workers or steps");
}

/// Chrome trace event format ("X" complete events, "C" counters, "M" names); times in us.
inline nlohmann::json chrome_trace(const sim::simulator& g, const sim::result& r) {
  check_trace_size(g.tasks().size());
  nlohmann::json events = nlohmann::json::array();
  const auto& res = g.resources();
  auto pid_of = [&](int resource) {
    const int d = res[static_cast<std::size_t>(resource)].device;
    return d < 0 ? 1000000 : d;
  };
  std::vector<int> pids;
  for (std::size_t i = 0; i < res.size(); ++i) {
    const int pid = pid_of(static_cast<int>(i));
    if (std::find(pids.begin(), pids.end(), pid) == pids.end()) {
      pids.push_back(pid);
      events.push_back(
          {{"ph", "M"},
           {"name", "process_name"},
           {"pid", pid},
           {"args", {{"name", pid == 1000000 ? "shared" : "rank " + std::to_string(pid)}}}});
    }
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", pid},
                      {"tid", static_cast<int>(i)},
                      {"args", {{"name", res[i].name}}}});
  }
  for (std::size_t i = 0; i < g.tasks().size(); ++i) {
    const auto& t = g.tasks()[i];
    const auto& rec = r.tasks[i];
    const int resource = t.resources.front();
    events.push_back(
        {{"ph", "X"},
         {"name", t.name},
         {"cat", t.cls == sim::task_class::communication ? "communication" : "compute"},
         {"pid", pid_of(resource)},
         {"tid", resource},
         {"ts", rec.start * 1e6},
         {"dur", (rec.end - rec.start) * 1e6},
         {"args", {{"ready_us", rec.ready * 1e6}, {"task", static_cast<int>(i)}}}});
  }
  for (const auto& m : r.memory)
    events.push_back({{"ph", "C"},
                      {"name", "memory"},
                      {"pid", m.device},
                      {"ts", m.time * 1e6},
                      {"args", {{"bytes", m.bytes}}}});
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

/// The tasks on the longest chain that ends last: from the last task back through whichever
/// dependency or stream predecessor held it up. Each task appears at most once (zero-length
/// tasks that end where they start cannot make the walk loop); O(n log n).
inline std::vector<int> critical_path(const sim::simulator& g, const sim::result& r) {
  const auto& tasks = g.tasks();
  if (tasks.empty()) return {};
  // per stream (first resource), its tasks by end time; ties: the lower index last, so that a
  // backward walk meets it first
  std::vector<std::vector<int>> by_stream(g.resources().size());
  for (std::size_t i = 0; i < tasks.size(); ++i)
    by_stream[static_cast<std::size_t>(tasks[i].resources.front())].push_back(static_cast<int>(i));
  auto end_of = [&](int i) { return r.tasks[static_cast<std::size_t>(i)].end; };
  for (auto& v : by_stream)
    std::sort(v.begin(), v.end(),
              [&](int a, int b) { return end_of(a) != end_of(b) ? end_of(a) < end_of(b) : a > b; });
  int cur = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (r.tasks[i].end > r.tasks[static_cast<std::size_t>(cur)].end) cur = static_cast<int>(i);
  std::vector<bool> seen(tasks.size(), false);
  seen[static_cast<std::size_t>(cur)] = true;
  std::vector<int> path{cur};
  while (true) {
    const auto& t = tasks[static_cast<std::size_t>(cur)];
    const auto& rec = r.tasks[static_cast<std::size_t>(cur)];
    int best = -1;
    double best_end = -1;
    for (int d : t.deps)
      if (!seen[static_cast<std::size_t>(d)] && end_of(d) > best_end) {
        best = d;
        best_end = end_of(d);
      }
    if (rec.start > rec.ready + 1e-15) {  // waited for its stream: the task served before it
      const auto& v = by_stream[static_cast<std::size_t>(t.resources.front())];
      const double bound = rec.start + 1e-15;
      auto it = std::upper_bound(v.begin(), v.end(), bound,
                                 [&](double x, int j) { return x < end_of(j); });
      while (it != v.begin()) {
        const int j = *--it;
        if (!(end_of(j) > best_end)) break;
        if (seen[static_cast<std::size_t>(j)]) continue;
        best = j;
        best_end = end_of(j);
        break;
      }
    }
    if (best < 0) break;
    seen[static_cast<std::size_t>(best)] = true;
    path.push_back(best);
    cur = best;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

/// Per device: time a communication task ran while no compute task did.
inline std::vector<double> exposed_communication(const sim::simulator& g, const sim::result& r) {
  int devices = 0;
  for (const auto& t : g.tasks()) devices = std::max(devices, t.device + 1);
  std::vector<double> out(static_cast<std::size_t>(devices), 0.0);
  for (int d = 0; d < devices; ++d) {
    std::vector<std::pair<double, int>> edges;  // +1/-1 for comm (0) and compute (1)
    for (std::size_t i = 0; i < g.tasks().size(); ++i) {
      const auto& t = g.tasks()[i];
      if (t.device != d || r.tasks[i].end <= r.tasks[i].start) continue;
      const int kind = t.cls == sim::task_class::communication ? 0 : 2;
      edges.push_back({r.tasks[i].start, kind + 1});
      edges.push_back({r.tasks[i].end, kind});
    }
    std::sort(edges.begin(), edges.end());
    int comm = 0, compute = 0;
    double last = 0;
    for (const auto& [time, code] : edges) {
      if (comm > 0 && compute == 0) out[static_cast<std::size_t>(d)] += time - last;
      last = time;
      const int delta = (code % 2 == 1) ? 1 : -1;
      (code / 2 == 0 ? comm : compute) += delta;
    }
  }
  return out;
}

/// A summary for reports: makespan, exposed communication per device, peak memory per device
/// and, with `details`, per-stream utilization and the critical path's task names.
inline nlohmann::json summary(const sim::simulator& g, const sim::result& r, bool details = true) {
  nlohmann::json j{{"iteration_time_s", r.makespan},
                   {"events", r.events},
                   {"tasks", g.tasks().size()},
                   {"exposed_communication_s", exposed_communication(g, r)},
                   {"peak_memory_bytes", r.peak_memory}};
  if (!details) return j;
  nlohmann::json util = nlohmann::json::array();
  for (std::size_t i = 0; i < g.resources().size(); ++i)
    util.push_back({{"stream", g.resources()[i].name},
                    {"rank", g.resources()[i].device},
                    {"utilization", r.makespan > 0 ? r.busy[i] / r.makespan : 0.0}});
  nlohmann::json path = nlohmann::json::array();
  for (int i : critical_path(g, r)) path.emplace_back(g.tasks()[static_cast<std::size_t>(i)].name);
  j["utilization"] = util;
  j["critical_path"] = path;
  return j;
}

}  // namespace strata::io
