#pragma once
/// @file sim/paradl.hpp
/// @brief The plan executor: a ParaDL plan, lowered by `lower::cnn_rank` / `lower::cnn_stages`
/// (each strategy says what one of its ranks runs, `Strategy::rank`), run as tasks on the event
/// core.
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
#include "strata/sim/program.hpp"

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

struct streams {
  int compute, comm, device;
};

/// The fair-share link resource of group view `v`: one per (level, bandwidth), made on first use.
inline int link_resource(simulator& s, std::vector<std::pair<std::pair<int, double>, int>>& links,
                         const comm::group_view& v) {
  const std::pair<int, double> key{v.top, v.ring.bandwidth.count()};
  int res = -1;
  for (const auto& [k, id] : links)
    if (k == key) res = id;
  if (res < 0) {
    res = s.add_resource({"link (level " + std::to_string(v.top) + ")", discipline::fair_share,
                          v.ring.bandwidth.count(), 0, 0});
    links.push_back({key, res});
  }
  return res;
}

/// The executor of one lowered ParaDL rank (`lower::cnn_rank`): each operation becomes a task on
/// the rank's compute stream, one after another, or a flow on the links its group crosses.
/// Communication runs as flows on one fair-share link per (level, bandwidth) a group spans, so
/// concurrent collectives on the same link share it: a collective of `steps` alpha-beta steps
/// moving `wire` bytes per rank waits steps x alpha, then streams its bytes; alone on its link
/// that is exactly the closed form.
struct rank_executor {
  const context& c;
  const plan_options& o;
  simulator& s;
  int compute_stream = -1;
  int weights = -1;
  std::vector<int> acts;
  std::vector<std::pair<std::pair<int, double>, int>> links;
  int prev = -1;
  std::vector<int> backward_of;  ///< each layer's backward task
  std::vector<int> exchanges;

  rank_executor(const context& ctx, const plan_options& opts, simulator& graph)
      : c(ctx), o(opts), s(graph), acts(ctx.size()), backward_of(ctx.size(), -1) {
    s.set_overlap_factor(o.gamma);
    compute_stream = s.add_resource({"compute", discipline::fifo, 1, 0, 0});
  }

  [[nodiscard]] std::vector<int> after() const {
    return prev < 0 ? std::vector<int>{} : std::vector<int>{prev};
  }
  int task(const std::string& name, double t, std::vector<int> deps, std::vector<int> produces = {},
           std::vector<int> consumes = {}) {
    return s.add_task({.name = name,
                       .resources = {compute_stream},
                       .work = t,
                       .deps = std::move(deps),
                       .cls = task_class::compute,
                       .device = 0,
                       .produces = std::move(produces),
                       .consumes = std::move(consumes)});
  }
  // ParaDL §IV's ring and p2p, split into start-ups and bytes on the wire.
  int flow(const std::string& name, lower::cnn_comm op, group g, double m, std::vector<int> deps) {
    const double p = g.size;
    double steps = 1, wire = m;
    if (op == lower::cnn_comm::all_gather) steps = p - 1, wire = m * (p - 1) / p;
    if (op == lower::cnn_comm::all_reduce) steps = 2 * (p - 1), wire = 2 * m * (p - 1) / p;
    const comm::group_view v = comm::view(c.machine, g);
    const int res = link_resource(s, links, v);
    return s.add_task({.name = name,
                       .resources = {res},
                       .work = wire,
                       .deps = std::move(deps),
                       .cls = task_class::communication,
                       .device = 0,
                       .latency = steps * v.ring.alpha.count()});
  }

  void state(double b) { weights = s.add_tensor({"weights, gradients, optimizer states", 0, b}); }
  void activation(std::size_t l, double b) {
    acts[l] = s.add_tensor({"activations " + std::to_string(l), 0, b});
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
  rank_executor e(c, o, out.graph);
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

/// The executor of ParaDL's lowered pipeline stages (`lower::cnn_stages`) under the pipeline
/// policy's program: each stage sends its micro-batch's output (forward) or input gradient
/// (backward) to its neighbour, blocking the sender unless overlapping; weight update after the
/// stage's last backward.
inline plan_run execute_pipeline(const context& c, const parallel::pipeline& pp,
                                 const plan_options& o) {
  plan_run out;
  simulator& s = out.graph;
  s.set_overlap_factor(o.gamma);
  const std::vector<lower::cnn_stage> sc = lower::cnn_stages(c, pp);
  const int p = static_cast<int>(sc.size()), S = pp.segments;
  out.simulated_ranks = p;
  std::vector<streams> r;
  for (int i = 0; i < p; ++i)
    r.push_back({s.add_resource({"compute", discipline::fifo, 1, 0, i}),
                 s.add_resource({"communication", discipline::fifo, 1, 0, i}), i});
  auto send_time = [&](int i) {  // stage i <-> i + 1
    return comm::p2p(bytes{sc[static_cast<std::size_t>(i)].send}, c.machine.between(i, i + 1))
        .count();
  };
  // Each stream runs its tasks in program order (micro-batch by micro-batch), not in the order
  // they happen to become ready.
  std::vector<int> last_compute(static_cast<std::size_t>(p), -1),
      last_comm(static_cast<std::size_t>(p), -1);
  auto task = [&](int i, bool comm_stream, const std::string& name, double t, std::vector<int> deps,
                  std::vector<int> produces = {}, std::vector<int> consumes = {}) {
    const auto& rs = r[static_cast<std::size_t>(i)];
    int& last = comm_stream ? last_comm[static_cast<std::size_t>(i)]
                            : last_compute[static_cast<std::size_t>(i)];
    if (last >= 0) deps.push_back(last);
    last = s.add_task({.name = name,
                       .resources = {comm_stream ? rs.comm : rs.compute},
                       .work = t,
                       .deps = std::move(deps),
                       .cls = comm_stream ? task_class::communication : task_class::compute,
                       .device = i,
                       .produces = std::move(produces),
                       .consumes = std::move(consumes)});
    return last;
  };
  std::vector<int> weights(static_cast<std::size_t>(p));
  std::vector<std::vector<int>> acts(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const auto& x = sc[static_cast<std::size_t>(i)];
    weights[static_cast<std::size_t>(i)] =
        s.add_tensor({"weights " + std::to_string(i), i, x.state});
    for (int j = 0; j < S; ++j)
      acts[static_cast<std::size_t>(i)].push_back(s.add_tensor({"activations", i, x.activations}));
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
