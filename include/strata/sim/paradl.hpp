#pragma once
/// @file sim/paradl.hpp
/// @brief ParaDL plans simulated: a plan lowered by `lower::cnn_rank` / `lower::cnn_stages` (each
/// strategy says what one of its ranks runs, `Strategy::rank`) onto the executor
/// (`sim/executor.hpp`), which runs it as tasks on the event core.
///
/// Each simulated rank has a compute stream (fifo); its communication runs as flows on
/// fair-share links, one per level its groups span, so collectives that overlap share bandwidth.
/// Per layer: forward and backward tasks; blocking layer-wise collectives (filter, channel,
/// data+filter) and halo exchanges (spatial, data+spatial) between them; the gradient all-reduce
/// (data, spatial, hybrids) in `buckets` buckets, one after another, overlapping the rest of the
/// backward pass when `overlap` is on; the weight update last. Pipelines run the pipeline
/// policy's program (`parallel::pipeline_parallel::program`): GPipe or 1F1B (with an optional
/// limit on micro-batches in flight per stage, Proteus's max_ongoing_micro_batch), with the
/// activation (gradient) sends blocking the sending stage unless `overlap` is on. Collective and
/// send times come from `comm` (ParaDL's alpha-beta ring on the group's placement). Memory:
/// weights, gradients and optimizer states live through the iteration; each layer's activations
/// from its forward to its backward task (ParaDL's 2 delta B (|x| + |y|)).
///
/// Ranks that are identical by symmetry (every rank of data, spatial, filter and channel
/// parallelism and of the hybrids; the replicas of a stage) are simulated once.
///
/// With overlap off the iteration equals the closed form (`analytic::evaluate`); with overlap on
/// it lies between the closed form and its perfect-overlap bound.
/// @code
/// const auto net = strata::zoo::resnet50();
/// const auto run = strata::sim::simulate(net.view(), strata::parallel::data{.p = 16},
///                                        strata::presets::abci(16), {.batch = 256},
///                                        {.overlap = true, .buckets = 8});
/// @endcode

#include <algorithm>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/limits.hpp"
#include "strata/lower/cnn.hpp"
#include "strata/parallel/pipeline.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/sim/core.hpp"
#include "strata/sim/executor.hpp"

namespace strata::sim {

enum class pipeline_schedule { gpipe, one_f_one_b };

struct plan_options {
  bool overlap = false;  ///< gradient all-reduce overlaps backward; pipeline sends do not block
  int buckets = 1;       ///< gradient all-reduce buckets (by parameter bytes, last layer first)
  double gamma = 0;      ///< Proteus's overlap slowdown of compute under communication
  pipeline_schedule schedule = pipeline_schedule::gpipe;
  int max_in_flight = 0;  ///< Proteus's max_ongoing_micro_batch per stage (0: no limit)
};

/// The most tasks one simulated plan may hold (about 1 GB of task graph): larger plans are
/// refused before any task is built.
inline constexpr double max_tasks = 4e6;

struct plan_run {
  simulator graph;
  result run;
  seconds iteration{};  ///< the makespan of one iteration
  int simulated_ranks = 1;
};

namespace detail {

/// The lowering of one ParaDL rank (`lower::cnn_rank`) onto the executor: each operation becomes
/// a task on the rank's compute stream, one after another, or a flow on the links its group
/// crosses. Communication runs as flows on one fair-share link per (level, bandwidth) a group
/// spans, so concurrent collectives on the same link share it: a collective of `steps`
/// alpha-beta steps moving `wire` bytes per rank waits steps x alpha, then streams its bytes;
/// alone on its link that is exactly the closed form.
struct rank_lowering {
  const context& c;
  const plan_options& o;
  executor ex;
  int weights = -1;
  std::vector<int> acts;
  int prev = -1;
  std::vector<int> backward_of;  ///< each layer's backward task
  std::vector<int> exchanges;

  rank_lowering(const context& ctx, const plan_options& opts, simulator& graph)
      : c(ctx), o(opts), ex(graph), acts(ctx.size()), backward_of(ctx.size(), -1) {
    graph.set_overlap_factor(o.gamma);
    ex.add_device(0, "compute", "");
  }

  [[nodiscard]] std::vector<int> after() const {
    return prev < 0 ? std::vector<int>{} : std::vector<int>{prev};
  }
  int task(const std::string& name, double t, std::vector<int> deps, std::vector<int> produces = {},
           std::vector<int> consumes = {}) {
    return ex.on_stream(ex.compute_stream(0), 0, name, t, std::move(deps), task_class::compute,
                        std::move(produces), std::move(consumes));
  }
  // ParaDL §IV's ring and p2p, split into start-ups and bytes on the wire.
  int flow(const std::string& name, lower::cnn_comm op, group g, double m, std::vector<int> deps) {
    const double p = g.size;
    double steps = 1, wire = m;
    if (op == lower::cnn_comm::all_gather) steps = p - 1, wire = m * (p - 1) / p;
    if (op == lower::cnn_comm::all_reduce) steps = 2 * (p - 1), wire = 2 * m * (p - 1) / p;
    const comm::group_view v = comm::view(c.machine, g);
    return ex.flow(0, name, {ex.shared_link(v.top, v.ring.bandwidth.count())}, wire,
                   steps * v.ring.alpha.count(), std::move(deps));
  }

  void state(double b) { weights = ex.tensor(0, "weights, gradients, optimizer states", b); }
  void activation(std::size_t l, double b) {
    acts[l] = ex.tensor(0, "activations " + std::to_string(l), b);
  }
  void compute(lower::phase ph, std::size_t l, double t) {
    if (ph == lower::phase::forward) {
      std::vector<int> produces{acts[l]};
      if (l == 0) produces.push_back(weights);
      prev = task("forward " + std::to_string(l), t, after(), produces);
    } else {
      prev = task("backward " + std::to_string(l), t, after(), {}, {acts[l]});
      backward_of[l] = prev;
    }
  }
  void comm(lower::cnn_comm op, std::string_view what, std::size_t l, group g, double b) {
    prev = flow(std::string(what) + " " + std::to_string(l), op, g, b, after());
  }
  // gradient all-reduce per bucket, in bucket order (one stream): right after its last backward
  // task when overlapping, after the whole backward pass otherwise
  void gradient(std::size_t k, std::size_t l, group g, double b) {
    std::vector<int> deps{o.overlap ? backward_of[l] : prev};
    if (!exchanges.empty()) deps.push_back(exchanges.back());
    exchanges.push_back(flow("gradient all-reduce " + std::to_string(k),
                             lower::cnn_comm::all_reduce, g, b, std::move(deps)));
  }
  void update(double t) {
    std::vector<int> before_update{prev};
    for (int e : exchanges) before_update.push_back(e);
    task("weight update", t, before_update, {}, {weights});
  }
};

inline plan_run execute_rank(const context& c, const rank_shape& rp, const plan_options& o) {
  plan_run out;
  rank_lowering e(c, o, out.graph);
  lower::cnn_rank(c, rp, o.buckets, e);
  return out;
}

/// Each of `p` stages' program for `S` micro-batches, as the pipeline policy orders them
/// (`parallel::pipeline_parallel::program`).
inline std::vector<std::vector<parallel::pipeline_unit>> stage_programs(int p, int S,
                                                                        const plan_options& o) {
  const parallel::pipeline_parallel schedule{.degree = p,
                                             .kind = o.schedule == pipeline_schedule::gpipe
                                                         ? parallel::schedule::gpipe
                                                         : parallel::schedule::one_f_one_b};
  std::vector<std::vector<parallel::pipeline_unit>> order;
  for (int i = 0; i < p; ++i) order.push_back(schedule.program(S, i, o.max_in_flight));
  return order;
}

/// ParaDL's lowered pipeline stages (`lower::cnn_stages`) onto the executor, under the pipeline
/// policy's program: each stage sends its micro-batch's output (forward) or input gradient
/// (backward) to its neighbour, blocking the sender unless overlapping; weight update after the
/// stage's last backward.
inline plan_run execute_pipeline(const context& c, const parallel::pipeline& pp,
                                 const plan_options& o) {
  plan_run out;
  out.graph.set_overlap_factor(o.gamma);
  executor ex(out.graph);
  const std::vector<lower::cnn_stage> sc = lower::cnn_stages(c, pp);
  const int p = static_cast<int>(sc.size()), S = pp.segments;
  out.simulated_ranks = p;
  std::vector<int> comm_stream;
  for (int i = 0; i < p; ++i) {
    ex.add_device(i, "compute", "");
    comm_stream.push_back(ex.add_stream(i, "communication"));
  }
  auto send_time = [&](int i) {  // stage i <-> i + 1
    return comm::p2p(bytes{sc[static_cast<std::size_t>(i)].send}, c.machine.between(i, i + 1))
        .count();
  };
  // Each stream runs its tasks in program order (micro-batch by micro-batch), not in the order
  // they happen to become ready.
  std::vector<int> last_compute(static_cast<std::size_t>(p), -1),
      last_comm(static_cast<std::size_t>(p), -1);
  auto task = [&](int i, bool on_comm, const std::string& name, double t, std::vector<int> deps,
                  std::vector<int> produces = {}, std::vector<int> consumes = {}) {
    const auto I = static_cast<std::size_t>(i);
    int& last = on_comm ? last_comm[I] : last_compute[I];
    if (last >= 0) deps.push_back(last);
    last = ex.on_stream(on_comm ? comm_stream[I] : ex.compute_stream(i), i, name, t,
                        std::move(deps), on_comm ? task_class::communication : task_class::compute,
                        std::move(produces), std::move(consumes));
    return last;
  };
  std::vector<int> weights(static_cast<std::size_t>(p));
  std::vector<std::vector<int>> acts(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const auto& x = sc[static_cast<std::size_t>(i)];
    weights[static_cast<std::size_t>(i)] = ex.tensor(i, "weights " + std::to_string(i), x.state);
    for (int j = 0; j < S; ++j)
      acts[static_cast<std::size_t>(i)].push_back(ex.tensor(i, "activations", x.activations));
  }
  // Program order of each stage: the pipeline policy's (GPipe: every forward, then every
  // backward; 1F1B: p - i - 1 forwards, fewer under an in-flight limit, then alternating, then
  // the drain), as the transformer simulator and Proteus's compiler run it.
  const auto order = stage_programs(p, S, o);
  const std::size_t P = static_cast<std::size_t>(p), SS = static_cast<std::size_t>(S);
  std::vector<std::vector<int>> fwd(P, std::vector<int>(SS, -1)),
      fsend(P, std::vector<int>(SS, -1)), bsend(P, std::vector<int>(SS, -1));
  std::vector<std::vector<int>> bws(P);
  // Tasks in an order that respects the cross-stage dependencies (`lower_programs`).
  lower_programs(order, [&](std::size_t I, std::size_t, const parallel::pipeline_unit& u) {
    const int i = static_cast<int>(I), j = u.micro;
    const auto J = static_cast<std::size_t>(j);
    if (u.forward) {
      if (i > 0 && fsend[I - 1][J] < 0) return false;
      std::vector<int> deps;
      if (i > 0) deps.push_back(fsend[I - 1][J]);
      std::vector<int> produces{acts[I][J]};
      if (j == 0) produces.push_back(weights[I]);
      fwd[I][J] = task(i, false, "forward mb " + std::to_string(j), sc[I].forward, deps, produces);
      if (i + 1 < p)
        fsend[I][J] = task(i, o.overlap, "send activations mb " + std::to_string(j), send_time(i),
                           {fwd[I][J]});
      return true;
    }
    if (i + 1 < p && bsend[I + 1][J] < 0) return false;
    std::vector<int> deps{fwd[I][J]};
    if (i + 1 < p) deps.push_back(bsend[I + 1][J]);
    const int bw =
        task(i, false, "backward mb " + std::to_string(j), sc[I].backward, deps, {}, {acts[I][J]});
    bws[I].push_back(bw);
    if (i > 0)
      bsend[I][J] =
          task(i, o.overlap, "send gradients mb " + std::to_string(j), send_time(i - 1), {bw});
    return true;
  });
  for (int i = 0; i < p; ++i) {
    std::vector<int> deps = bws[static_cast<std::size_t>(i)];
    for (int j = 0; j < S; ++j)
      if (bsend[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] >= 0)
        deps.push_back(bsend[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
    task(i, false, "weight update", sc[static_cast<std::size_t>(i)].update, deps, {},
         {weights[static_cast<std::size_t>(i)]});
  }
  return out;
}

}  // namespace detail

/// Simulates one iteration of `strategy`. Checks the plan like `analytic::evaluate`.
template <Strategy S>
[[nodiscard]] plan_run simulate(std::span<const layer> layers, const S& strategy,
                                const cluster& machine, const training& setup,
                                const plan_options& o = {}) {
  if (o.buckets < 1) throw plan_error("the gradient all-reduce needs at least one bucket");
  if (o.max_in_flight < 0) throw plan_error("max_in_flight must not be negative");
  const context c = make_context(layers, machine, setup);
  strategy.check(c);
  if (strategy.devices() > machine.devices()) throw plan_error(limits::plan_exceeds_cluster);
  {  // refuse a graph that cannot be built before building it
    const double L = static_cast<double>(layers.size());
    double tasks = 6 * L + o.buckets + 16;
    if constexpr (std::is_same_v<S, parallel::pipeline>)
      tasks = 4.0 * strategy.segments * (L + strategy.p) + L + strategy.p;
    if (tasks > max_tasks)
      throw plan_error("simulation: the plan needs about " +
                       std::to_string(static_cast<long long>(tasks)) +
                       " tasks, more than the 4 million one simulation may hold (use fewer "
                       "micro-batches, buckets or layers)");
  }
  plan_run out;
  if constexpr (std::is_same_v<S, parallel::pipeline>) {
    if (o.max_in_flight > 0 && o.schedule == pipeline_schedule::gpipe &&
        o.max_in_flight < strategy.segments)
      throw plan_error(
          "a limit on in-flight micro-batches needs the 1F1B schedule: GPipe runs every forward "
          "before any backward");
    out = detail::execute_pipeline(c, strategy, o);
  } else {
    static_assert(RankStrategy<S>,
                  "a ParaDL strategy other than the pipeline says what one "
                  "rank runs: rank_shape rank(double batch) const");
    out = detail::execute_rank(c, strategy.rank(c.batch()), o);
  }
  out.run = out.graph.run();
  out.iteration = seconds{out.run.makespan};
  return out;
}

/// The same for a strategy chosen at run time.
[[nodiscard]] inline plan_run simulate(std::span<const layer> layers,
                                       const parallel::any_strategy& strategy,
                                       const cluster& machine, const training& setup,
                                       const plan_options& o = {}) {
  return std::visit([&](const auto& st) { return simulate(layers, st, machine, setup, o); },
                    strategy);
}

}  // namespace strata::sim
