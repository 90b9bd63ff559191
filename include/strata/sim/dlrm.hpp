#pragma once
/// @file sim/dlrm.hpp
/// @brief A DLRM plan (Lin et al. §V-B1, `analytic::dlrm_plan`) simulated event by event: the
/// closed form's lowering (`analytic::lower_dlrm`) run as tasks on the executor. Every rank is
/// simulated (their tables differ): each has a compute stream and a communication stream, and
/// every rank's part of a collective starts when the last rank is ready (inter-rank
/// synchronization, Lin et al. §IV-B), so all parts end together.
/// Under `dlrm_loop::eager` each rank's host is a stream of its own that issues the rank's
/// phases (`analytic::dlrm_host`). Without contention the simulation is the closed form's
/// critical path; its timeline shows where each rank waits. Each rank holds the closed form's
/// memory (`dlrm_rank::memory`) from its first operation on.
/// @code
/// auto run = strata::sim::simulate_dlrm(model, {.batch = 4096}, owners, 8, cluster, profile,
///                                       strata::h100_embedding_bag);
/// run.iteration();  // s, == run.report.iteration_time
/// @endcode

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/analytic/dlrm.hpp"
#include "strata/lower/ops.hpp"
#include "strata/sim/core.hpp"
#include "strata/sim/executor.hpp"

namespace strata::sim {

/// One simulated DLRM iteration.
struct dlrm_run {
  analytic::dlrm_report report;  ///< the closed form of the same plan
  simulator graph;
  result run;
  [[nodiscard]] double iteration() const { return run.makespan; }
};

/// Simulates the plan `analytic::dlrm_plan` prices with the same arguments.
inline dlrm_run simulate_dlrm(const dlrm& model, const analytic::dlrm_setup& setup,
                              const std::vector<int>& owner, int ranks, const cluster& machine,
                              const device_profile& prof, const embedding_bag_model& el) {
  auto [report, split] =
      analytic::detail::price_dlrm(model, setup, owner, ranks, machine, prof, el);
  dlrm_run out{std::move(report), {}, {}};
  executor ex(out.graph);
  for (int k = 0; k < ranks; ++k) ex.add_device(k, "rank " + std::to_string(k));
  // memory: each rank's (`dlrm_rank::memory`: tables, MLP states, activations, buffers) from
  // its first operation on, the closed form's peak. A collective is a task on every rank's
  // communication stream, each after every rank's inputs; a rank's later operations wait for
  // its own part (the lowering names the collective by its rank-0 part's id).
  struct visitor {
    executor& ex;
    const analytic::dlrm_report& r;
    std::vector<int> streams, hosts;
    std::vector<bool> started;
    std::map<int, std::vector<int>> parts;  ///< a collective's id -> its part on each rank
    [[nodiscard]] std::vector<int> on_rank(std::size_t k, std::vector<int> deps) const {
      for (int& d : deps)
        if (const auto it = parts.find(d); it != parts.end()) d = it->second[k];
      return deps;
    }
    int compute(int rank, const char* name, double seconds, const std::vector<int>& deps) {
      const auto k = static_cast<std::size_t>(rank);
      std::vector<int> held;
      if (!started[k])
        held.push_back(
            ex.tensor(rank, "tables, MLP states, activations, buffers", r.ranks[k].memory));
      started[k] = true;
      return ex.kernels(rank, name, lower::span::kernel(0, seconds), on_rank(k, deps),
                        task_class::compute, std::move(held));
    }
    int host(int rank, const char* name, double seconds, const std::vector<int>& deps) {
      const auto k = static_cast<std::size_t>(rank);
      return ex.on_stream(hosts[k], rank, std::string(name) + " (host)", seconds, on_rank(k, deps),
                          task_class::other);
    }
    int collective(const char* name, double seconds, const std::vector<int>& deps) {
      std::vector<int> ids;
      for (std::size_t k = 0; k < streams.size(); ++k)
        ids.push_back(ex.on_stream(streams[k], static_cast<int>(k), name, seconds, on_rank(k, deps),
                                   task_class::communication));
      parts[ids.front()] = ids;
      return ids.front();
    }
  } v{ex, out.report, {}, {}, std::vector<bool>(static_cast<std::size_t>(ranks), false), {}};
  for (int k = 0; k < ranks; ++k) {
    v.streams.push_back(ex.add_stream(k, "rank " + std::to_string(k) + " collectives"));
    v.hosts.push_back(ex.add_stream(k, "rank " + std::to_string(k) + " host"));
  }
  analytic::lower_dlrm(out.report, split, v);
  out.run = out.graph.run();
  return out;
}

}  // namespace strata::sim
