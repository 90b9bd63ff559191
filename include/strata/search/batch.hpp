#pragma once
/// @file search/batch.hpp
/// @brief Evaluates many transformer plans at once: the plans are grouped by the layer they
/// lower to (tensor degree, sequence parallelism, context, expert, micro-batch, recomputation:
/// `lower::shard_of`), each group is lowered and priced once (`analytic::lower_layer`,
/// `analytic::keeps_of`, the layer's collectives: `analytic::collectives_memo`; the data-parallel
/// traffic once per distinct traffic: `analytic::data_collectives_memo`), the closed form
/// (`analytic::iteration`, `analytic::peak_stage_memory`) runs per plan on the shared lowering, and
/// the results land in Eigen arrays, one column per quantity (structure of arrays), from which the
/// totals, throughput, MFU, GPU-hours and the memory check are computed column-wise. Groups are
/// spread over threads.
///
/// Every number equals `analytic::evaluate` of the same plan (the same functions on the same
/// lowering); only the order of the work differs.
/// @code
/// std::vector<strata::parallel::nd> plans = ...;
/// const auto r = strata::search::evaluate_batch(m, c, setup, profile, plans);
/// // r.iteration_s(i), r.memory_bytes(i), r.fits(i) for plans[i]
/// @endcode

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Core>

#include "strata/analytic/flops.hpp"
#include "strata/analytic/iteration.hpp"
#include "strata/analytic/memory.hpp"
#include "strata/analytic/price.hpp"
#include "strata/error.hpp"

namespace strata::search {

/// The columns of a batch: row i is plan i.
struct batch_report {
  /// The time terms of `time_breakdown`, one column each, in the order of
  /// `batch_time_terms`.
  Eigen::Array<double, Eigen::Dynamic, 11> time;
  Eigen::ArrayXd iteration_s;                  ///< the sum of each row of `time`
  Eigen::ArrayXd memory_bytes;                 ///< peak memory of the fullest stage
  Eigen::ArrayXd required_bytes;               ///< that plus the headroom (`memory_headroom`)
  Eigen::ArrayXd tokens_per_s;                 ///< global batch x sequence / iteration time
  Eigen::ArrayXd mfu;                          ///< model FLOP/s per device over the dense peak
  Eigen::ArrayXd gpu_hours_per_iteration;      ///< devices x iteration time / 3600 s
  Eigen::Array<bool, Eigen::Dynamic, 1> fits;  ///< required memory within the device's
  long long groups = 0;                        ///< layers lowered (plans sharing one count once)
  [[nodiscard]] Eigen::Index size() const { return iteration_s.size(); }
};

/// The names of `batch_report::time`'s columns.
inline constexpr std::array<const char*, 11> batch_time_terms{
    "forward_s",     "backward_s",        "recompute_s",    "tensor_comm_s", "context_comm_s",
    "expert_comm_s", "pipeline_bubble_s", "pipeline_p2p_s", "data_comm_s",   "optimizer_s",
    "host_s"};

struct batch_options {
  int threads = 0;  ///< 0: one per hardware thread (at most one per group)
};

/// Evaluates every plan of `plans` for `m` on `c` (each is checked first: a plan that breaks a
/// limit is a plan_error "plans[i]: <the limit's sentence>").
[[nodiscard]] inline batch_report evaluate_batch(const transformer& m, const cluster& c,
                                                 const training& tr, const device_profile& prof,
                                                 std::span<const parallel::nd> plans,
                                                 batch_options opt = {}) {
  if (opt.threads < 0)
    throw plan_error("batch evaluation: threads must be 0 (one per hardware thread) or more");
  m.check_lowered();
  tr.check_transformer();
  const auto n = static_cast<Eigen::Index>(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    try {
      plans[i].check(m, tr, c.devices());
    } catch (const std::exception& e) {
      throw plan_error("plans[" + std::to_string(i) + "]: " + e.what());
    }
  }
  // group the plans by their lowering: sort their indices by key, cut where the key changes
  std::vector<std::array<int, 6>> keys(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) keys[i] = lower::shard_key(plans[i]);
  std::vector<std::size_t> order(plans.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  std::vector<std::size_t> starts;  // where each group begins in `order`
  for (std::size_t k = 0; k < order.size(); ++k)
    if (k == 0 || keys[order[k]] != keys[order[k - 1]]) starts.push_back(k);
  starts.push_back(order.size());

  batch_report r;
  r.time.resize(n, Eigen::NoChange);
  r.iteration_s.resize(n);
  r.memory_bytes.resize(n);
  r.required_bytes.resize(n);
  r.groups = static_cast<long long>(starts.size()) - 1;
  // one group: lower once, then the closed form per plan on the shared lowering
  auto run_groups = [&](std::size_t g0, std::size_t g1) {
    analytic::data_collectives_memo data;  // shared by the groups: it keys on what it reads
    for (std::size_t g = g0; g < g1; ++g) {
      const parallel::nd& first = plans[order[starts[g]]];
      const analytic::layer_compute lc =
          analytic::lower_layer(m, prof, tr, lower::shard_of(m, first, tr));
      const analytic::plan_keeps keeps = analytic::keeps_of(m, first, tr);
      analytic::collectives_memo collectives;
      for (std::size_t k = starts[g]; k < starts[g + 1]; ++k) {
        const auto i = static_cast<Eigen::Index>(order[k]);
        const parallel::nd& s = plans[order[k]];
        const time_breakdown t =
            analytic::iteration(m, s, c, tr, prof, lc, collectives(m, s, c, tr, lc), &data);
        r.time.row(i) << t.forward.count(), t.backward.count(), t.recompute.count(),
            t.tensor_comm.count(), t.context_comm.count(), t.expert_comm.count(),
            t.pipeline_bubble.count(), t.pipeline_p2p.count(), t.data_comm.count(),
            t.optimizer.count(), t.host.count();
        r.iteration_s(i) = t.total().count();  // the same sum as `evaluate`'s
        const bytes mem = analytic::peak_stage_memory(m, s, tr, keeps).total();
        r.memory_bytes(i) = mem.count();
        r.required_bytes(i) = (mem + analytic::headroom_of(s, tr.runtime, mem).total()).count();
      }
    }
  };
  const std::size_t groups = starts.size() - 1;
  std::size_t threads = opt.threads > 0 ? static_cast<std::size_t>(opt.threads)
                                        : std::max(1U, std::thread::hardware_concurrency());
  threads = std::min(threads, std::max<std::size_t>(groups, 1));
  if (threads <= 1) {
    run_groups(0, groups);
  } else {
    // contiguous runs of groups with about equal numbers of plans; rows are disjoint
    std::vector<std::size_t> cut{0};
    for (std::size_t g = 0, th = 1; g < groups && th < threads; ++g)
      if (starts[g + 1] * threads >= th * order.size()) cut.push_back(g + 1), ++th;
    cut.push_back(groups);
    std::vector<std::exception_ptr> errors(cut.size() - 1);
    std::vector<std::thread> pool;
    for (std::size_t w = 0; w + 1 < cut.size(); ++w)
      pool.emplace_back([&, w] {
        try {
          run_groups(cut[w], cut[w + 1]);
        } catch (...) {
          errors[w] = std::current_exception();
        }
      });
    for (auto& th : pool) th.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

  // the columns every plan shares a formula for, computed column-wise
  const double seq = tr.sequence_or(m.sequence);
  const double tokens = tr.batch * seq;
  const double devices = c.devices();
  r.tokens_per_s = tokens / r.iteration_s;
  r.mfu = analytic::model_flops(m, tr.batch, seq) / devices / c.dev.peak(tr.compute()).count() /
          r.iteration_s;
  r.gpu_hours_per_iteration = devices / 3600.0 * r.iteration_s;
  r.fits = r.required_bytes <= c.dev.memory.count();
  return r;
}

}  // namespace strata::search
