#pragma once
/// @file sim/executor.hpp
/// @brief The executor every plan's lowered operations run on: a simulated device's streams
/// (its compute stream, and for an eager host the host that issues its kernels), kernels as
/// tasks on them, collectives and sends as flows over fair-share links, transfers taking turns
/// on round-robin channels, tensors, and the walk that turns the stages' pipeline programs into
/// tasks.
///
/// A model family's simulator is a lowering onto this executor: ParaDL's strategies
/// (`sim/paradl.hpp`, from `lower::cnn_rank` and `lower::cnn_stages`), transformer plans
/// (`sim/transformer.hpp`, from `lower::layer` priced by `analytic::lower_layer`), DLRM
/// (`sim/dlrm.hpp`), Proteus's execution graphs (`proteus/htae.hpp`), PyTorch op traces
/// (`sim/op_trace.hpp`) and Li et al.'s parameter server (`sim/ps.hpp`: its HTTP/2 schedulers
/// as round-robin channels whose turns cross the NICs' fair-share links) say which operations a
/// rank runs and in which order; how an operation becomes tasks, and how a host issues kernels
/// ahead of the GPU, is said here once.
/// @code
/// strata::sim::simulator g;
/// strata::sim::executor ex(g);
/// ex.add_device(0, "rank 0");
/// const int f = ex.kernels(0, "forward", strata::lower::span::kernel(0, 1e-3), {});
/// const int link = ex.shared_link(0, 12.5e9);
/// ex.flow(0, "all-reduce", {link}, 25e6, 20e-6, {f});  // 20 us of start-up, then 2 ms of bytes
/// @endcode

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "strata/error.hpp"
#include "strata/lower/ops.hpp"
#include "strata/parallel/pipeline.hpp"
#include "strata/sim/core.hpp"

namespace strata::sim {

/// Calls `lower(stage, k, unit)` for unit k of every stage's program in program order, sweeping
/// the stages again and again: a stage goes on until `lower` answers false (its input is not
/// sent yet). Throws when a sweep makes no progress before every program is done. The programs
/// are the pipeline policy's (`parallel::pipeline_parallel::program`, one 1F1B / GPipe /
/// interleaved order for the closed form, the simulators and Proteus).
template <class Lower>
void lower_programs(const std::vector<std::vector<parallel::pipeline_unit>>& programs,
                    Lower&& lower) {
  std::vector<std::size_t> next(programs.size(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; i < programs.size(); ++i)
      while (next[i] < programs[i].size() && lower(i, next[i], programs[i][next[i]])) {
        ++next[i];
        progress = true;
      }
  }
  for (std::size_t i = 0; i < programs.size(); ++i)
    if (next[i] < programs[i].size()) throw plan_error("the pipeline schedule deadlocks");
}

/// Lowered operations to tasks on the event core (`simulator`), one simulated device (a rank, a
/// pipeline stage) at a time.
class executor {
 public:
  explicit executor(simulator& g) : g_(&g) {}

  [[nodiscard]] simulator& graph() const { return *g_; }

  /// Device d's compute stream (fifo), named `name` followed by `suffix`.
  int add_device(int d, const std::string& name, const char* suffix = " compute") {
    return at(d).compute = g_->add_resource({name + suffix, discipline::fifo, 1, 0, d});
  }

  /// Device d's eager host: the host that issues every kernel, and the lead it needs before a
  /// kernel can start (`lower::span`). Without it a kernel runs as soon as its inputs are ready.
  void add_host(int d, const std::string& name) {
    at(d).host = g_->add_resource({name + " host", discipline::fifo, 1, 0, d});
    at(d).issue = g_->add_resource({name + " issue lead", discipline::fifo, 1, 0, d});
  }

  /// Device d's compute stream.
  [[nodiscard]] int compute_stream(int d) const {
    return devices_.at(static_cast<std::size_t>(d)).compute;
  }

  /// A fifo stream of device d other than its compute stream (a communication stream).
  int add_stream(int d, const std::string& name) {
    return g_->add_resource({name, discipline::fifo, 1, 0, d});
  }

  /// A fair-share link of `bandwidth` bytes/s owned by device d (-1: shared).
  int add_link(int d, const std::string& name, double bandwidth) {
    return g_->add_resource({name, discipline::fair_share, bandwidth, 0, d});
  }

  /// The shared fair-share link "link (level N)" of network level `level` at `bandwidth`, made on
  /// first use: the flows of every group whose ring spans that level share it.
  int shared_link(int level, double bandwidth) {
    for (const auto& [key, id] : links_)
      if (key.first == level && key.second == bandwidth) return id;
    const int id = g_->add_resource(
        {"link (level " + std::to_string(level) + ")", discipline::fair_share, bandwidth, 0, 0});
    links_.push_back({{level, bandwidth}, id});
    return id;
  }

  /// A tensor of `bytes` on device d.
  int tensor(int d, const std::string& name, double bytes) {
    return g_->add_tensor({name, d, bytes});
  }

  /// Kernels of span `t` on device d's compute stream after `deps`; with an eager host, after
  /// the host has issued them (the task's kernels start `t.first.time - t.first.gpu` after the
  /// host finished issuing the previous task's). A span with a synchronization runs as two tasks:
  /// up to the host and GPU meeting at its last synchronization, then the rest, issued from
  /// there.
  int kernels(int d, const std::string& name, const lower::span& t, std::vector<int> deps,
              task_class cls = task_class::compute, std::vector<int> produces = {},
              std::vector<int> consumes = {}) {
    device& x = at(d);
    if (x.host < 0 || t.host <= 0)
      return g_->add_task({.name = name,
                           .resources = {x.compute},
                           .work = t.gpu,
                           .deps = std::move(deps),
                           .cls = cls,
                           .device = d,
                           .produces = std::move(produces),
                           .consumes = std::move(consumes)});
    const std::vector<int> after_host =
        x.last_host >= 0 ? std::vector<int>{x.last_host} : std::vector<int>{};
    deps.push_back(issue_lead(d, name, " (issued)", t.first.time - t.first.gpu, after_host));
    if (!t.synced) issue(d, name, t.host, after_host);
    const double work = t.synced ? t.first.gpu + t.middle : t.gpu;
    const int task = g_->add_task({.name = name,
                                   .resources = {x.compute},
                                   .work = work,
                                   .deps = std::move(deps),
                                   .cls = cls,
                                   .device = d,
                                   .produces = std::move(produces),
                                   .consumes = t.synced ? std::vector<int>{} : consumes});
    if (!t.synced) return task;
    issue(d, name, t.last.host, {task});
    const int second =
        issue_lead(d, name, " (issued after sync)", t.last.time - t.last.gpu, {task});
    return g_->add_task({.name = name + " (after sync)",
                         .resources = {x.compute},
                         .work = t.last.gpu,
                         .deps = {task, second},
                         .cls = cls,
                         .device = d,
                         .consumes = std::move(consumes)});
  }

  /// `seconds_` of work on fifo stream `stream` of device d after `deps`.
  int on_stream(int stream, int d, const std::string& name, double seconds_, std::vector<int> deps,
                task_class cls, std::vector<int> produces = {}, std::vector<int> consumes = {}) {
    return g_->add_task({.name = name,
                         .resources = {stream},
                         .work = seconds_,
                         .deps = std::move(deps),
                         .cls = cls,
                         .device = d,
                         .produces = std::move(produces),
                         .consumes = std::move(consumes)});
  }

  /// A flow of device d moving `bytes` over `links` after `deps`: it waits `latency` (the
  /// start-ups, holding no link), then shares each link fairly with the flows on it, so alone it
  /// takes latency + bytes / the narrowest link.
  /// `gamma`: the overlap factor its service imposes on device d's compute (Proteus §VI-C);
  /// negative: the simulator's.
  int flow(int d, const std::string& name, std::vector<int> links, double bytes, double latency,
           std::vector<int> deps, double gamma = -1) {
    return g_->add_task({.name = name,
                         .resources = std::move(links),
                         .work = bytes,
                         .deps = std::move(deps),
                         .cls = task_class::communication,
                         .device = d,
                         .latency = latency,
                         .gamma = gamma});
  }

  /// A round-robin channel of device d (-1: shared) sending `bandwidth` bytes/s: the transfers
  /// queued on it take turns of at most `window` bytes, in the order they became ready (an
  /// infinite window: each whole, one after another). With `window_once` only a transfer's first
  /// turn stops at the window and its second runs to completion: the streams of one HTTP/2
  /// connection under gRPC's flow-control window WIN (Li et al. §3.2.2).
  int add_channel(int d, const std::string& name, double bandwidth, double window,
                  bool window_once = false) {
    return g_->add_resource({name, discipline::round_robin, bandwidth, window, d, window_once});
  }

  /// The dependencies of the next task `turn` or the unnamed `on_stream` adds, filled in place:
  /// a list the executor keeps and empties as that task is added, so that a lowering adding
  /// many tasks (every step of every worker) allocates nothing once the list has grown.
  [[nodiscard]] std::vector<int>& next_deps() { return spec_.deps; }

  /// A transfer of device d moving `bytes` over round-robin channel `channel` after
  /// `next_deps()`, each of its turns also a flow over the fair-share `links`: a turn runs at the
  /// channel's bandwidth or its max-min share of those links, whichever is less, so that a
  /// connection's streams take turns while connections share the NICs (Li et al. Algorithm 3.1,
  /// Share(r, active) of §3.1). Unnamed.
  int turn(int d, int channel, std::span<const int> links, double bytes) {
    task_spec& t = spec_;
    t.resources.resize(links.size() + 1);  // resized in place: cheaper than insert's general path
    t.resources[0] = channel;
    std::copy(links.begin(), links.end(), t.resources.begin() + 1);
    t.work = bytes;
    t.cls = task_class::communication;
    t.device = d;
    return add_kept();
  }

  /// `seconds_` of work on fifo stream `stream` of device d after `next_deps()`, unnamed.
  int on_stream(int stream, int d, double seconds_, task_class cls = task_class::compute) {
    task_spec& t = spec_;
    t.resources.assign(1, stream);
    t.work = seconds_;
    t.cls = cls;
    t.device = d;
    return add_kept();
  }

  /// Adds a copy of tasks [first, first + count), as if each were lowered again in order (a
  /// repeated step): dependencies inside the range go to the copies, one outside it to the task
  /// `remap` pairs it with (itself when none). Returns the first copy's id
  /// (`simulator::repeat_tasks`: a few stores per task).
  int repeat(int first, int count, std::span<const std::pair<int, int>> remap = {}) {
    return g_->repeat_tasks(first, count, remap);
  }

 private:
  struct device {
    int compute = -1, host = -1, issue = -1;
    int last_host = -1;  ///< the host's latest task
  };

  /// Adds the kept task spec as a task and empties its dependencies (also when it is refused).
  int add_kept() {
    struct empty_deps {
      std::vector<int>& deps;
      ~empty_deps() { deps.clear(); }
    } guard{spec_.deps};
    return g_->add_task(spec_);
  }

  device& at(int d) {
    const auto D = static_cast<std::size_t>(d);
    if (devices_.size() <= D) devices_.resize(D + 1);
    return devices_[D];
  }

  /// The lead of `seconds_` device d's host needs before a task's kernels can start.
  int issue_lead(int d, const std::string& name, const char* what, double seconds_,
                 std::vector<int> after) {
    return on_stream(at(d).issue, d, name + what, seconds_, std::move(after), task_class::other);
  }

  /// Device d's host issuing a task's kernels for `seconds_`: the host's latest task.
  void issue(int d, const std::string& name, double seconds_, std::vector<int> after) {
    at(d).last_host =
        on_stream(at(d).host, d, name + " (host)", seconds_, std::move(after), task_class::other);
  }

  simulator* g_;
  task_spec spec_;  ///< kept for `turn` and the unnamed `on_stream`: its name stays empty
  std::vector<device> devices_;
  std::vector<std::pair<std::pair<int, double>, int>> links_;
};

}  // namespace strata::sim
