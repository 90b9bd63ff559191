#pragma once
/// @file sim/lin.hpp
/// @brief Lin et al.'s Algorithm 1: critical-path replay of per-rank operation traces on a
/// single-node multi-GPU platform, with intra-rank and inter-rank synchronization.
///
/// Every rank has a CPU thread that launches its ops in trace order and two GPU streams, compute
/// (cp) and communication (cm). Per op (Lin et al. Algorithm 1, overheads T1-T5 in seconds):
/// - intra-rank synchronization: when the op depends on the last communication op, or is one,
///   T_cm and T_cp of the rank are both set to their maximum (lines 12-15);
/// - the CPU spends T1, then T2 before the first kernel; each kernel starts at
///   max(T_s + gap, cpu_time + T4 / 2) and runs its predicted time; the CPU spends T4 per launch
///   and T5 between kernels; an op without kernels costs T5 (lines 16-35);
/// - inter-rank synchronization: a communication op's stream time T_cm becomes the maximum over
///   all ranks when it ends, since collectives finish together (lines 29-31), then the CPU
///   spends T3;
/// - the rank's time is max(T_cm, T_cp, cpu_time); the iteration time is the maximum over ranks
///   (lines 40-41).
/// The ranks run in lockstep between collectives: every rank must issue the same collectives in
/// the same order. The trace is lowered onto the executor every simulator shares
/// (`sim/executor.hpp`), one task per overhead, launch, kernel and gap, and runs on the event
/// core, so its kernels' times are the algorithm's (`replay`).
/// @code
/// strata::sim::lin_trace t{.ranks = {...}, .overheads = {.t1 = 5e-6, ...}};
/// const auto r = strata::sim::replay(t);
/// @endcode

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/sim/core.hpp"
#include "strata/sim/executor.hpp"

namespace strata::sim {

enum class stream { compute, communication };

struct lin_op {
  std::string id;
  stream on = stream::compute;
  std::vector<double> kernels;    ///< predicted kernel times (s); empty: a CPU-only op
  std::vector<std::string> deps;  ///< ids of earlier ops of the same rank it reads
};

/// CPU overheads of Lin et al. (per op: T1 before, T2 before the kernels, T3 after, T4 per
/// launch, T5 between kernels or for an op without kernels) and the minimum gap between two
/// kernels of a stream.
struct lin_overheads {
  double t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0;
  double kernel_gap = 1e-6;
};

struct lin_trace {
  std::vector<std::vector<lin_op>> ranks;  ///< ops of each rank in launch order
  lin_overheads overheads;
};

/// One kernel on the timeline.
struct lin_event {
  int rank = 0;
  stream on = stream::compute;
  std::string op;
  double start = 0, end = 0;
};

struct lin_result {
  double time = 0;                ///< predicted iteration time (max over ranks)
  std::vector<double> rank_time;  ///< max(T_cm, T_cp, cpu_time) per rank
  std::vector<double> gpu_time;   ///< kernel time per rank
  std::vector<lin_event> events;
};

namespace detail {
inline void validate(const lin_trace& t) {
  if (t.ranks.empty()) throw plan_error("the trace has no ranks");
  const auto& o = t.overheads;
  if (o.t1 < 0 || o.t2 < 0 || o.t3 < 0 || o.t4 < 0 || o.t5 < 0 || o.kernel_gap < 0)
    throw plan_error("CPU overheads T1-T5 and the kernel gap must not be negative");
  std::vector<std::size_t> comms;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    std::map<std::string, std::size_t> seen;
    std::size_t ncomm = 0;
    for (std::size_t i = 0; i < t.ranks[r].size(); ++i) {
      const lin_op& op = t.ranks[r][i];
      const std::string who = "op '" + op.id + "' on rank " + std::to_string(r);
      if (op.id.empty()) throw plan_error("an op on rank " + std::to_string(r) + " has no id");
      if (seen.count(op.id)) throw plan_error(who + ": the id is used twice on this rank");
      for (double k : op.kernels)
        if (!(k >= 0)) throw plan_error(who + ": a kernel time is negative");
      for (const std::string& d : op.deps)
        if (!seen.count(d)) {
          bool later = false;
          for (std::size_t j = i; j < t.ranks[r].size(); ++j)
            later = later || t.ranks[r][j].id == d;
          throw plan_error(who + (later ? ": depends on '" + d +
                                              "', which comes later (a cycle, or the trace is "
                                              "not in launch order)"
                                        : ": depends on unknown op '" + d + "'"));
        }
      if (op.on == stream::communication) {
        if (op.kernels.empty()) throw plan_error(who + ": a communication op needs a kernel");
        ++ncomm;
      }
      seen[op.id] = i;
    }
    comms.push_back(ncomm);
  }
  for (std::size_t r = 1; r < comms.size(); ++r)
    if (comms[r] != comms[0])
      throw plan_error("rank " + std::to_string(r) + " issues " + std::to_string(comms[r]) +
                       " collectives, rank 0 issues " + std::to_string(comms[0]) +
                       ": collectives must match across ranks");
}
}  // namespace detail

namespace detail {
/// Algorithm 1's trace as tasks on the executor (`replay`): per rank a CPU, a launch lead, the
/// compute and communication streams, and a gap stream beside each.
class lin_lowering {
 public:
  explicit lin_lowering(const lin_trace& t) : t_(t), o_(t.overheads), ex_(g_), st_(t.ranks.size()) {
    out_.gpu_time.assign(st_.size(), 0.0);
    for (std::size_t r = 0; r < st_.size(); ++r) {
      rank_state& s = st_[r];
      const int d = static_cast<int>(r);
      const std::string name = "rank " + std::to_string(r);
      s.stream = {ex_.add_device(d, name), ex_.add_stream(d, name + " communication")};
      s.gap = {ex_.add_stream(d, name + " compute gap"),
               ex_.add_stream(d, name + " communication gap")};
      s.cpu = ex_.add_stream(d, name + " CPU");
      s.lead = ex_.add_stream(d, name + " launch lead");
    }
  }

  /// Lowers rank r's ops up to and including its next collective's kernels; true if it stopped
  /// at a collective.
  bool advance(std::size_t r) {
    rank_state& s = st_[r];
    const auto& ops = t_.ranks[r];
    for (; s.next < ops.size(); ++s.next) {
      const lin_op& op = ops[s.next];
      const bool is_comm = op.on == stream::communication;
      const bool after_comm = !s.last_comm.empty() && std::find(op.deps.begin(), op.deps.end(),
                                                                s.last_comm) != op.deps.end();
      if (after_comm || is_comm) {  // intra-rank synchronization: T_cp = T_cm = their maximum
        s.last_comm.clear();
        s.ready[0].insert(s.ready[0].end(), s.ready[1].begin(), s.ready[1].end());
        s.ready[1] = s.ready[0];
      }
      cpu(r, op.id + " (T1)", o_.t1);
      if (op.kernels.empty()) {
        cpu(r, op.id + " (T5)", o_.t5);
        continue;
      }
      cpu(r, op.id + " (T2)", o_.t2);
      for (std::size_t k = 0; k < op.kernels.size(); ++k) {
        const int kernel = launch(r, op, op.kernels[k]);
        cpu(r, op.id + " (T4)", o_.t4);
        if (k + 1 < op.kernels.size()) {
          cpu(r, op.id + " (T5)", o_.t5);
          stream_after(r, is_comm ? 1 : 0, kernel);
        } else if (is_comm) {  // the collective's end comes from every rank (`collective`)
          s.comm_kernel = kernel;
          s.last_comm = op.id;
          ++s.next;
          return true;
        } else {
          stream_after(r, 0, kernel);
        }
      }
      cpu(r, op.id + " (T3)", o_.t3);
    }
    return false;
  }

  /// Inter-rank synchronization: every rank's kernels of the collective end together, when the
  /// last of them does; then each CPU spends T3.
  void collective() {
    std::vector<int> kernels;
    for (const rank_state& s : st_) kernels.push_back(s.comm_kernel);
    if (collectives_ < 0) collectives_ = ex_.add_stream(-1, "collectives");
    const int end = ex_.on_stream(collectives_, -1, "collective", 0, kernels, task_class::other);
    for (std::size_t r = 0; r < st_.size(); ++r) {
      for (std::size_t e = out_.events.size(); e-- > 0;)
        if (kernel_of_[e] == st_[r].comm_kernel) {
          end_of_[e] = end;
          break;
        }
      stream_after(r, 1, end);
      cpu(r, "collective (T3)", o_.t3);
    }
  }

  /// Runs the tasks: the kernels' times, and each rank's max(T_cm, T_cp, cpu_time) (its streams'
  /// times are its kernels' ends).
  lin_result run() && {
    const result run = g_.run();
    const auto record = [&](int task) { return run.tasks[static_cast<std::size_t>(task)]; };
    out_.rank_time.assign(st_.size(), 0.0);
    for (std::size_t r = 0; r < st_.size(); ++r)
      if (st_[r].last_cpu >= 0) out_.rank_time[r] = record(st_[r].last_cpu).end;
    for (std::size_t e = 0; e < out_.events.size(); ++e) {
      lin_event& ev = out_.events[e];
      ev.start = record(kernel_of_[e]).start;
      ev.end = record(end_of_[e]).end;
      double& rt = out_.rank_time[static_cast<std::size_t>(ev.rank)];
      rt = std::max(rt, ev.end);
    }
    for (double rt : out_.rank_time) out_.time = std::max(out_.time, rt);
    return std::move(out_);
  }

 private:
  struct rank_state {
    int cpu = -1, lead = -1;
    std::array<int, 2> stream{-1, -1}, gap{-1, -1};  // compute, communication
    int last_cpu = -1;                               // the CPU's latest task (-1: time 0)
    std::array<std::vector<int>, 2> ready;           // what a stream's next kernel waits for
    int comm_kernel = -1;                            // the collective's last kernel
    std::string last_comm;
    std::size_t next = 0;
  };

  static std::vector<int> after(int task) {
    return task >= 0 ? std::vector<int>{task} : std::vector<int>{};
  }

  /// The CPU of rank r spends `seconds_` (no task for 0 s: adding 0 changes no time).
  void cpu(std::size_t r, const std::string& what, double seconds_) {
    rank_state& s = st_[r];
    if (seconds_ > 0)
      s.last_cpu = ex_.on_stream(s.cpu, static_cast<int>(r), what, seconds_, after(s.last_cpu),
                                 task_class::other);
  }

  /// Stream x of rank r is busy until `task` ends: its next kernel starts a gap later.
  void stream_after(std::size_t r, std::size_t x, int task) {
    rank_state& s = st_[r];
    s.ready[x] = {o_.kernel_gap > 0 ? ex_.on_stream(s.gap[x], static_cast<int>(r), "gap",
                                                    o_.kernel_gap, {task}, task_class::other)
                                    : task};
  }

  /// One kernel of op on its stream: after the stream's previous kernel and gap, and T4 / 2
  /// after the CPU reaches its launch.
  int launch(std::size_t r, const lin_op& op, double seconds_) {
    rank_state& s = st_[r];
    const std::size_t x = op.on == stream::communication ? 1 : 0;
    std::vector<int> deps = s.ready[x];
    const int lead = o_.t4 > 0 ? ex_.on_stream(s.lead, static_cast<int>(r), op.id + " (launch)",
                                               o_.t4 / 2, after(s.last_cpu), task_class::other)
                               : s.last_cpu;
    if (lead >= 0) deps.push_back(lead);
    const int kernel =
        ex_.on_stream(s.stream[x], static_cast<int>(r), op.id, seconds_, std::move(deps),
                      x == 1 ? task_class::communication : task_class::compute);
    out_.events.push_back({static_cast<int>(r), op.on, op.id, 0, 0});
    kernel_of_.push_back(kernel);
    end_of_.push_back(kernel);
    out_.gpu_time[r] += seconds_;
    return kernel;
  }

  const lin_trace& t_;
  const lin_overheads& o_;
  simulator g_;
  executor ex_;
  std::vector<rank_state> st_;
  int collectives_ = -1;
  lin_result out_;
  std::vector<int> kernel_of_, end_of_;  // per event: its kernel task, the task it ends with
};
}  // namespace detail

/// Lin et al. Algorithm 1, lowered onto the executor (`sim/executor.hpp`) and run on the event
/// core. The CPU never waits for the GPU, so its overheads are a chain of tasks; a kernel waits
/// for its launch lead (T4 / 2 after the CPU reaches the launch) and for the stream's previous
/// kernel plus the kernel gap (after an intra-rank synchronization, for both streams'); a
/// collective ends with a task that waits for every rank's kernels of it. Every task ends at its
/// start plus its work, in the algorithm's order of additions, so the times are the algorithm's
/// up to rounding (the gap applies between kernels: a stream whose kernels all ended at time 0
/// is one the algorithm would treat as idle).
[[nodiscard]] inline lin_result replay(const lin_trace& t) {
  detail::validate(t);
  detail::lin_lowering l(t);
  while (true) {
    std::size_t waiting = 0;
    for (std::size_t r = 0; r < t.ranks.size(); ++r) waiting += l.advance(r) ? 1 : 0;
    if (waiting == 0) break;
    if (waiting != t.ranks.size()) throw plan_error("collectives do not match across ranks");
    l.collective();
  }
  return std::move(l).run();
}

}  // namespace strata::sim
