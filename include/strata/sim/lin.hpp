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
/// the same order.
/// @code
/// strata::sim::lin_trace t{.ranks = {...}, .overheads = {.t1 = 5e-6, ...}};
/// const auto r = strata::sim::replay(t);
/// @endcode

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "strata/error.hpp"

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

/// Lin et al. Algorithm 1.
[[nodiscard]] inline lin_result replay(const lin_trace& t) {
  detail::validate(t);
  const std::size_t n = t.ranks.size();
  const lin_overheads& o = t.overheads;
  struct state {
    double cpu = 0, cp = 0, cm = 0, gpu = 0;
    std::string last_comm;
    std::size_t next = 0;
  };
  std::vector<state> st(n);
  lin_result out;
  // Advance one rank through its ops up to and including its next collective's kernels; returns
  // false when the rank has no ops left.
  auto advance = [&](std::size_t r, bool& at_collective) {
    at_collective = false;
    state& s = st[r];
    const auto& ops = t.ranks[r];
    while (s.next < ops.size()) {
      const lin_op& op = ops[s.next];
      const bool is_comm = op.on == stream::communication;
      const bool after_comm = !s.last_comm.empty() && std::find(op.deps.begin(), op.deps.end(),
                                                                s.last_comm) != op.deps.end();
      if (after_comm || is_comm) {  // intra-rank synchronization
        s.last_comm.clear();
        s.cp = s.cm = std::max(s.cp, s.cm);
      }
      s.cpu += o.t1;
      if (!op.kernels.empty()) {
        s.cpu += o.t2;
        double& ts = is_comm ? s.cm : s.cp;
        for (std::size_t k = 0; k < op.kernels.size(); ++k) {
          const double start = std::max(ts + (ts > 0 ? o.kernel_gap : 0.0), s.cpu + o.t4 / 2);
          ts = start + op.kernels[k];
          s.gpu += op.kernels[k];
          out.events.push_back({static_cast<int>(r), op.on, op.id, start, ts});
          s.cpu += o.t4;
          if (k + 1 < op.kernels.size()) s.cpu += o.t5;
        }
        if (is_comm) {  // inter-rank synchronization happens in the caller
          at_collective = true;
          ++s.next;
          s.last_comm = op.id;
          return true;
        }
        s.cpu += o.t3;
      } else {
        s.cpu += o.t5;
      }
      ++s.next;
    }
    return false;
  };
  while (true) {
    std::size_t waiting = 0;
    for (std::size_t r = 0; r < n; ++r) {
      bool at = false;
      advance(r, at);
      waiting += at ? 1 : 0;
    }
    if (waiting == 0) break;
    if (waiting != n) throw plan_error("collectives do not match across ranks");
    double end = 0;
    for (const state& s : st) end = std::max(end, s.cm);
    for (std::size_t r = 0; r < n; ++r) {
      // the collective's kernels on every rank end together
      for (auto it = out.events.rbegin(); it != out.events.rend(); ++it)
        if (it->rank == static_cast<int>(r) && it->on == stream::communication) {
          it->end = end;
          break;
        }
      st[r].cm = end;
      st[r].cpu += o.t3;
    }
  }
  for (const state& s : st) {
    const double rt = std::max({s.cm, s.cp, s.cpu});
    out.rank_time.push_back(rt);
    out.gpu_time.push_back(s.gpu);
    out.time = std::max(out.time, rt);
  }
  return out;
}

}  // namespace strata::sim
