#pragma once
/// @file sim/paradl.hpp
/// @brief The plan executor: a ParaDL plan lowered to per-rank tasks on the event core.
///
/// Each simulated rank has a compute stream (fifo); its communication runs as flows on
/// fair-share links, one per level its groups span, so collectives that overlap share bandwidth.
/// Per layer: forward and backward tasks; blocking layer-wise collectives (filter, channel,
/// data+filter) and halo exchanges (spatial, data+spatial) between them; the gradient all-reduce
/// (data, spatial, hybrids) in `buckets` buckets, one after another, overlapping the rest of the
/// backward pass when `overlap` is on; the weight update last. Pipelines run GPipe: S
/// micro-batches forward through the stages, then backward, or 1F1B (with an optional limit on
/// micro-batches in flight per stage, Proteus's max_ongoing_micro_batch), with the activation
/// (gradient) sends blocking the sending stage unless `overlap` is on. Collective and send times
/// come from `comm` (ParaDL's alpha-beta ring on the group's placement). Memory: weights, gradients
/// and optimizer states live through the iteration; each layer's activations from its forward to
/// its backward task (ParaDL's 2 delta B (|x| + |y|)).
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
#include "strata/parallel/pipeline.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/sim/core.hpp"

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

/// One rank of the non-pipeline strategies: `samples` samples, compute divided `split` ways,
/// the layer-wise collectives on `lgroup`, halo on `hgroup` with tile `tiles`, the gradient
/// all-reduce over `ggroup` of `gshare` of the weights.
struct rank_plan {
  double samples = 1;
  double split = 1;      ///< compute divided this many ways
  double act_split = 1;  ///< activations divided this many ways (spatial tiles)
  double wu_share = 1;
  bool layerwise = false;
  group lgroup{};
  const parallel::spatial* tiles = nullptr;
  group hgroup{};
  bool gradients = false;
  group ggroup{};
  double gshare = 1;
};

/// Where the gradient buckets of `buckets` (at least 1) about equal shares of the weights close,
/// going backward: bucket k closes after the backward of layer `[k]` (the last one after layer 0).
inline std::vector<std::size_t> gradient_bucket_ends(const context& c, int buckets) {
  std::vector<std::size_t> bucket_end;
  const std::size_t L = c.size();
  const int nb = std::max(1, buckets);
  const double per = c.sum_w / nb;
  double acc = 0;
  for (std::size_t l = L; l-- > 0;) {
    acc += c.layers[l].params;
    if (acc >= per * (static_cast<double>(bucket_end.size()) + 1) - 1e-9 &&
        static_cast<int>(bucket_end.size()) < nb - 1)
      bucket_end.push_back(l);
  }
  bucket_end.push_back(0);
  return bucket_end;
}

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

inline plan_run lower_rank(const context& c, const rank_plan& rp, const plan_options& o) {
  plan_run out;
  simulator& s = out.graph;
  s.set_overlap_factor(o.gamma);
  const int compute_stream = s.add_resource({"compute", discipline::fifo, 1, 0, 0});
  const double d = c.delta();
  const std::size_t L = c.size();
  const int states = states_per_param(c.setup.cnn_optimizer());
  const int weights = s.add_tensor(
      {"weights, gradients, optimizer states", 0, c.sum_w * rp.wu_share * d * (2 + states)});
  std::vector<int> acts(L);
  for (std::size_t l = 0; l < L; ++l)
    acts[l] =
        s.add_tensor({"activations " + std::to_string(l), 0,
                      2.0 * d * rp.samples * (c.layers[l].x() + c.layers[l].y()) / rp.act_split});
  std::size_t last_weighted = L;
  for (std::size_t l = 0; l < L; ++l)
    if (c.layers[l].has_weights()) last_weighted = l;
  auto compute = [&](const std::string& name, double t, std::vector<int> deps,
                     std::vector<int> produces = {}, std::vector<int> consumes = {}) {
    return s.add_task({.name = name,
                       .resources = {compute_stream},
                       .work = t,
                       .deps = std::move(deps),
                       .cls = task_class::compute,
                       .device = 0,
                       .produces = std::move(produces),
                       .consumes = std::move(consumes)});
  };
  // Communication runs as flows on the links it crosses, one fair-share link per (level,
  // bandwidth) a group spans: concurrent collectives on the same link share it. A collective of
  // `steps` alpha-beta steps moving `wire` bytes per rank waits steps x alpha, then streams its
  // bytes; alone on its link that is exactly the closed form.
  std::vector<std::pair<std::pair<int, double>, int>> links;
  auto flow = [&](const std::string& name, group g, double steps, double wire,
                  std::vector<int> deps) {
    const comm::group_view v = comm::view(c.machine, g);
    const int res = link_resource(s, links, v);
    return s.add_task({.name = name,
                       .resources = {res},
                       .work = wire,
                       .deps = std::move(deps),
                       .cls = task_class::communication,
                       .device = 0,
                       .latency = steps * v.ring.alpha.count()});
  };
  // ParaDL §IV's ring and p2p, split into start-ups and bytes on the wire.
  auto all_gather = [&](const std::string& name, group g, double m, std::vector<int> deps) {
    const double p = g.size;
    return flow(name, g, p - 1, m * (p - 1) / p, std::move(deps));
  };
  auto all_reduce = [&](const std::string& name, group g, double m, std::vector<int> deps) {
    const double p = g.size;
    return flow(name, g, 2 * (p - 1), 2 * m * (p - 1) / p, std::move(deps));
  };
  auto send = [&](const std::string& name, group g, double m, std::vector<int> deps) {
    return flow(name, g, 1, m, std::move(deps));
  };
  int prev = -1;
  auto after = [&]() { return prev < 0 ? std::vector<int>{} : std::vector<int>{prev}; };
  // ParaDL eq. (10): a tile sends floor(K/2) rows of `sh` to each of its two neighbours.
  auto halo = [&](const shape& sh, int kernel, const std::string& name) {
    if (!rp.tiles) return;
    const double h = rp.tiles->halo(sh, kernel);
    if (h > 0)
      for (int k = 0; k < 2; ++k) prev = send(name, rp.hgroup, rp.samples * h * d, after());
  };
  // forward
  for (std::size_t l = 0; l < L; ++l) {
    const layer& ly = c.layers[l];
    halo(ly.in, ly.kernel, "halo x " + std::to_string(l));
    std::vector<int> produces{acts[l]};
    if (l == 0) produces.push_back(weights);
    prev = compute("forward " + std::to_string(l), rp.samples * c.time(l).fw.count() / rp.split,
                   after(), produces);
    if (rp.layerwise && ly.has_weights() && l < last_weighted)
      prev = all_gather("all-gather y " + std::to_string(l), rp.lgroup, rp.samples * ly.y() * d,
                        after());
  }
  // backward, with the gradient buckets
  const std::vector<std::size_t> bucket_end = gradient_bucket_ends(c, o.buckets);
  struct bucket {
    double weights;
    int after;  // the backward task that completes it
  };
  std::vector<bucket> buckets;
  double bucket_w = 0;
  std::size_t next_bucket = 0;
  for (std::size_t l = L; l-- > 0;) {
    const layer& ly = c.layers[l];
    halo(ly.out, ly.kernel, "halo dy " + std::to_string(l));
    prev = compute("backward " + std::to_string(l), rp.samples * c.time(l).bw.count() / rp.split,
                   after(), {}, {acts[l]});
    const int bw = prev;
    if (rp.layerwise && ly.has_weights() && l < last_weighted)
      prev = all_reduce("all-reduce dx " + std::to_string(l), rp.lgroup, rp.samples * ly.y() * d,
                        after());
    bucket_w += ly.params;
    if (next_bucket < bucket_end.size() && l == bucket_end[next_bucket]) {
      buckets.push_back({bucket_w, bw});
      bucket_w = 0;
      ++next_bucket;
    }
  }
  // Gradient all-reduce per bucket, in bucket order (one stream): right after its last backward
  // task when overlapping, after the whole backward pass otherwise.
  std::vector<int> exchanges;
  if (rp.gradients)
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      std::vector<int> deps{o.overlap ? buckets[k].after : prev};
      if (!exchanges.empty()) deps.push_back(exchanges.back());
      exchanges.push_back(all_reduce("gradient all-reduce " + std::to_string(k), rp.ggroup,
                                     buckets[k].weights * rp.gshare * d, std::move(deps)));
    }
  std::vector<int> before_update{prev};
  for (int e : exchanges) before_update.push_back(e);
  compute("weight update", c.sum_wu.count() * rp.wu_share, before_update, {}, {weights});
  return out;
}

/// One pipeline stage's per-sample forward, backward and update times, weights and kept
/// elements (the sums over its layers).
struct stage_cost {
  double fw = 0, bw = 0, wu = 0, w = 0, xy = 0;
};
inline std::vector<stage_cost> stage_costs(const context& c,
                                           const std::vector<parallel::stage>& stages) {
  std::vector<stage_cost> sc(stages.size());
  for (std::size_t i = 0; i < stages.size(); ++i)
    for (std::size_t l = stages[i].first; l <= stages[i].last; ++l) {
      auto& x = sc[i];
      const layer_time t = c.time(l);
      x.fw += t.fw.count();
      x.bw += t.bw.count();
      x.wu += t.wu.count();
      x.w += c.layers[l].params;
      x.xy += c.layers[l].x() + c.layers[l].y();
    }
  return sc;
}

/// Each of `p` stages' program of (forward?, micro-batch) units for `S` micro-batches, as the
/// pipeline policy orders them (`parallel::pipeline_parallel::program`).
inline std::vector<std::vector<std::pair<bool, int>>> stage_programs(int p, int S,
                                                                     const plan_options& o) {
  const parallel::pipeline_parallel schedule{.degree = p,
                                             .kind = o.schedule == pipeline_schedule::gpipe
                                                         ? parallel::schedule::gpipe
                                                         : parallel::schedule::one_f_one_b};
  std::vector<std::vector<std::pair<bool, int>>> order(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i)
    for (const parallel::pipeline_unit& u : schedule.program(S, i, o.max_in_flight))
      order[static_cast<std::size_t>(i)].push_back({u.forward, u.micro});
  return order;
}

/// GPipe over the stages of `pp`: S micro-batches forward through every stage, then backward;
/// each stage sends its micro-batch's output (forward) or input gradient (backward) to the next
/// one, blocking the sender unless overlapping; weight update after the stage's last backward.
inline plan_run lower_pipeline(const context& c, const parallel::pipeline& pp,
                               const plan_options& o) {
  plan_run out;
  simulator& s = out.graph;
  s.set_overlap_factor(o.gamma);
  const double d = c.delta(), mb = c.batch() / pp.segments;
  std::vector<parallel::stage> stages;
  pp.for_each_stage(c, [&](parallel::stage st) { stages.push_back(st); });
  const int p = static_cast<int>(stages.size()), S = pp.segments;
  out.simulated_ranks = p;
  std::vector<streams> r;
  for (int i = 0; i < p; ++i)
    r.push_back({s.add_resource({"compute", discipline::fifo, 1, 0, i}),
                 s.add_resource({"communication", discipline::fifo, 1, 0, i}), i});
  const std::vector<stage_cost> sc = stage_costs(c, stages);
  auto send_time = [&](int i) {  // stage i <-> i + 1
    const bytes m{mb * c.layers[stages[static_cast<std::size_t>(i)].last].y() * d};
    return comm::p2p(m, c.machine.between(i, i + 1)).count();
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
  const int states = states_per_param(c.setup.cnn_optimizer());
  std::vector<int> weights(static_cast<std::size_t>(p));
  std::vector<std::vector<int>> acts(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const auto& x = sc[static_cast<std::size_t>(i)];
    weights[static_cast<std::size_t>(i)] =
        s.add_tensor({"weights " + std::to_string(i), i, x.w * d * (2 + states)});
    for (int j = 0; j < S; ++j)
      acts[static_cast<std::size_t>(i)].push_back(
          s.add_tensor({"activations", i, 2.0 * d * mb * x.xy}));
  }
  // Program order of each stage: the pipeline policy's (GPipe: every forward, then every
  // backward; 1F1B: p - i - 1 forwards, fewer under an in-flight limit, then alternating, then
  // the drain), as the transformer simulator and Proteus's compiler run it.
  const auto order = stage_programs(p, S, o);
  const std::size_t P = static_cast<std::size_t>(p), SS = static_cast<std::size_t>(S);
  std::vector<std::vector<int>> fwd(P, std::vector<int>(SS, -1)),
      fsend(P, std::vector<int>(SS, -1)), bsend(P, std::vector<int>(SS, -1));
  std::vector<std::vector<int>> bws(P);
  std::vector<std::size_t> next(P, 0);
  // Create tasks in an order that respects the cross-stage dependencies.
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < p; ++i) {
      const auto I = static_cast<std::size_t>(i);
      while (next[I] < order[I].size()) {
        const auto [forward, j] = order[I][next[I]];
        const auto J = static_cast<std::size_t>(j);
        if (forward) {
          if (i > 0 && fsend[I - 1][J] < 0) break;
          std::vector<int> deps;
          if (i > 0) deps.push_back(fsend[I - 1][J]);
          std::vector<int> produces{acts[I][J]};
          if (j == 0) produces.push_back(weights[I]);
          fwd[I][J] =
              task(i, false, "forward mb " + std::to_string(j), mb * sc[I].fw, deps, produces);
          if (i + 1 < p)
            fsend[I][J] = task(i, o.overlap, "send activations mb " + std::to_string(j),
                               send_time(i), {fwd[I][J]});
        } else {
          if (i + 1 < p && bsend[I + 1][J] < 0) break;
          std::vector<int> deps{fwd[I][J]};
          if (i + 1 < p) deps.push_back(bsend[I + 1][J]);
          const int bw = task(i, false, "backward mb " + std::to_string(j), mb * sc[I].bw, deps, {},
                              {acts[I][J]});
          bws[I].push_back(bw);
          if (i > 0)
            bsend[I][J] = task(i, o.overlap, "send gradients mb " + std::to_string(j),
                               send_time(i - 1), {bw});
        }
        ++next[I];
        progress = true;
      }
    }
  }
  for (std::size_t i = 0; i < P; ++i)
    if (next[i] < order[i].size()) throw plan_error("the pipeline schedule deadlocks");
  for (int i = 0; i < p; ++i) {
    std::vector<int> deps = bws[static_cast<std::size_t>(i)];
    for (int j = 0; j < S; ++j)
      if (bsend[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] >= 0)
        deps.push_back(bsend[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
    task(i, false, "weight update", sc[static_cast<std::size_t>(i)].wu, deps, {},
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
  detail::rank_plan rp;
  const double B = c.batch();
  if constexpr (std::is_same_v<S, parallel::pipeline>) {
    if (o.max_in_flight > 0 && o.schedule == pipeline_schedule::gpipe &&
        o.max_in_flight < strategy.segments)
      throw plan_error(
          "a limit on in-flight micro-batches needs the 1F1B schedule: GPipe runs every forward "
          "before any backward");
    out = detail::lower_pipeline(c, strategy, o);
    out.run = out.graph.run();
    out.iteration = seconds{out.run.makespan};
    return out;
  } else {
    if constexpr (std::is_same_v<S, parallel::serial>) {
      rp.samples = B;
    } else if constexpr (std::is_same_v<S, parallel::data>) {
      rp.samples = B / strategy.p;
      rp.gradients = true;
      rp.ggroup = {0, strategy.p, 1};
    } else if constexpr (std::is_same_v<S, parallel::spatial>) {
      rp.samples = B;
      rp.split = strategy.devices();
      rp.act_split = strategy.devices();
      rp.tiles = &strategy;
      rp.hgroup = {0, strategy.devices(), 1};
      rp.gradients = true;
      rp.ggroup = rp.hgroup;
    } else if constexpr (std::is_same_v<S, parallel::filter> ||
                         std::is_same_v<S, parallel::channel>) {
      rp.samples = B;
      rp.split = strategy.p;
      rp.wu_share = 1.0 / strategy.p;
      rp.layerwise = true;
      rp.lgroup = {0, strategy.p, 1};
    } else if constexpr (std::is_same_v<S, parallel::data_filter>) {
      rp.samples = B / strategy.p1;
      rp.split = strategy.p2;
      rp.wu_share = 1.0 / strategy.p2;
      rp.layerwise = true;
      rp.lgroup = {0, strategy.p2, 1};
      rp.gradients = true;
      rp.ggroup = {0, strategy.p1, strategy.p2};
      rp.gshare = 1.0 / strategy.p2;
    } else if constexpr (std::is_same_v<S, parallel::data_spatial>) {
      rp.samples = B / strategy.p1;
      rp.split = strategy.inner.devices();
      rp.act_split = strategy.inner.devices();
      rp.tiles = &strategy.inner;
      rp.hgroup = {0, strategy.inner.devices(), 1};
      rp.gradients = true;
      rp.ggroup = {0, strategy.devices(), 1};
    }
    out = detail::lower_rank(c, rp, o);
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
