#pragma once
/// @file sim/transformer.hpp
/// @brief The plan executor for transformer strategies (`parallel::nd`): one representative
/// rank per pipeline stage (the ranks of a tensor, context, expert or data group are alike by
/// symmetry), lowered to tasks on the event core.
///
/// Per stage: a compute stream (fifo) runs, in the schedule's order, each (micro-batch, chunk)
/// forward and backward layer by layer (with the recomputation), each layer followed by its
/// blocking tensor-, context- and expert-parallel collectives (`analytic::iteration`'s per-layer
/// costs). Schedules: GPipe (every forward, then every backward), 1F1B (p - i - 1 warm-up forwards,
/// then one forward one backward, then the drain) and Megatron's interleaved 1F1B with v chunks per
/// stage
/// ((p - i - 1) 2 + (v - 1) p warm-up units; unit k runs chunk (k / p) mod v of micro-batch
/// (k / pv) p + k mod p), optionally capped at `max_in_flight` micro-batches (Proteus's
/// max_ongoing_micro_batch). Activations and gradients travel between stages as flows: each
/// crosses its sender's and receiver's NIC (fair-share links, so sends that meet on a wire share
/// it) and a cap at the pair's bandwidth. Data-parallel traffic runs as flows on the same NICs:
/// ZeRO-0/1 reduce the stage's gradients in `buckets` buckets as the last backward proceeds
/// (after it, without overlap); ZeRO-2/3 reduce-scatter after every micro-batch, ZeRO-3 also
/// all-gathers each layer's weights before its forward and backward, one layer ahead; the
/// optimizer step ends the iteration. Memory: model states all iteration, each unit's
/// activations from its forward to its backward.
///
/// With one stage and no data parallelism the iteration equals the closed form; with a
/// pipeline the bubble, sends and their sharing come from the schedule itself.
/// @code
/// const auto run = strata::sim::simulate(strata::zoo::gpt3_175b(), plan, cluster, setup, profile);
/// // run.iteration, run.run.peak_memory[stage]
/// @endcode

#include <algorithm>
#include <string>
#include <vector>

#include "strata/analytic/transformer.hpp"
#include "strata/comm/collectives.hpp"
#include "strata/sim/core.hpp"

namespace strata::sim {

struct transformer_options {
  bool overlap = true;    ///< data-parallel reduction during the last backward
  int buckets = 4;        ///< gradient buckets (ZeRO-0/1)
  int max_in_flight = 0;  ///< micro-batches in flight per stage (0: the schedule's own)
  double gamma = 0;       ///< Proteus's overlap slowdown of compute under communication
};

struct transformer_run {
  simulator graph;
  result run;
  seconds iteration{};
  int simulated_ranks = 1;  ///< one per pipeline stage
};

namespace detail {

/// One (micro-batch, chunk) unit of a stage's program, forward or backward.
struct unit {
  bool forward;
  int micro;
  int chunk;
};

/// The program of stage i (Megatron's schedules).
inline std::vector<unit> stage_program(parallel::schedule kind, int p, int v, int m, int i,
                                       int limit) {
  std::vector<unit> out;
  const int total = m * v;
  auto micro_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  auto fwd = [&](int k) { return unit{true, micro_of(k), (k / p) % v}; };
  auto bwd = [&](int k) { return unit{false, micro_of(k), v - 1 - (k / p) % v}; };
  if (kind == parallel::schedule::gpipe) {
    for (int k = 0; k < total; ++k) out.push_back(fwd(k));
    for (int k = 0; k < total; ++k) out.push_back(bwd(k));
    return out;
  }
  int warm = v == 1 ? p - i - 1 : (p - i - 1) * 2 + (v - 1) * p;
  if (limit > 0) warm = std::min(warm, limit * v - 1);
  warm = std::min(warm, total);
  int f = 0, b = 0;
  for (; f < warm; ++f) out.push_back(fwd(f));
  for (; f < total; ++f, ++b) {
    out.push_back(fwd(f));
    out.push_back(bwd(b));
  }
  for (; b < total; ++b) out.push_back(bwd(b));
  return out;
}

}  // namespace detail

/// Simulates one iteration of a transformer plan. Checks it like `analytic::evaluate`.
[[nodiscard]] inline transformer_run simulate(const transformer& m, const parallel::nd& s,
                                              const cluster& c, const transformer_training& tr,
                                              const device_profile& prof,
                                              const transformer_options& o = {}) {
  using parallel::axis;
  s.check(m, tr, c.devices());
  if (o.buckets < 1) throw plan_error("the gradient reduction needs at least one bucket");
  if (o.max_in_flight < 0) throw plan_error("max_in_flight must not be negative");
  const int p = s.pipeline.degree, v = s.pipeline.virtual_stages, mb = s.micro_batches(tr);
  if (o.max_in_flight > 0 && s.pipeline.kind == parallel::schedule::gpipe && o.max_in_flight < mb)
    throw plan_error(
        "a limit on in-flight micro-batches needs a 1F1B schedule: GPipe runs every forward "
        "before any backward");
  const analytic::layer_compute lc =
      analytic::lower_layer(m, prof, tr, s.tensor.degree, s.tensor.sequence, s.context.degree,
                            s.expert.degree, s.micro_batch);
  // the per-layer collectives of the closed form
  const double seq = analytic::detail::sequence_of(m, tr);
  const double b = s.micro_batch, sl = seq / s.context.degree, h = m.hidden;
  const double act = tr.activation_bytes();
  const int tp = s.tensor.degree;
  const analytic::layer_collectives lcoll = analytic::collectives_of(m, s, c, tr, lc);
  const seconds comm_fwd = lcoll.forward(), comm_bwd = lcoll.backward();
  const parallel::recompute rc = s.recomputation;
  const double recompute = rc == parallel::recompute::full        ? lc.forward
                           : rc == parallel::recompute::selective ? lc.attention
                                                                  : 0.0;

  transformer_run out;
  out.simulated_ranks = p;
  simulator& g = out.graph;
  g.set_overlap_factor(o.gamma);
  // resources: per stage a compute stream, a NIC out and in (shared wires), a cap on its
  // pipeline sends and one on its data-parallel flows
  const group pg = s.group_of(axis::pipeline);
  const interconnect pipe_link = p > 1 ? c.between(0, pg.stride) : c.levels[0].pair;
  const comm::group_view dv = comm::view(c, {0, s.data.degree, s.group_of(axis::data).stride});
  const double nic = std::max(pipe_link.bandwidth.count(), dv.ring.bandwidth.count());
  struct stage_res {
    int compute, out, in, pcap, dcap;
  };
  std::vector<stage_res> res(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const std::string n = "stage " + std::to_string(i);
    auto& r = res[static_cast<std::size_t>(i)];
    r.compute = g.add_resource({n + " compute", discipline::fifo, 1, 0, i});
    r.out = g.add_resource({n + " NIC out", discipline::fair_share, nic, 0, i});
    r.in = g.add_resource({n + " NIC in", discipline::fair_share, nic, 0, i});
    r.pcap = g.add_resource(
        {n + " pipeline sends", discipline::fair_share, pipe_link.bandwidth.count(), 0, i});
    r.dcap = g.add_resource(
        {n + " data-parallel", discipline::fair_share, dv.ring.bandwidth.count(), 0, i});
  }
  // memory
  std::vector<int> states(static_cast<std::size_t>(p));
  std::vector<std::vector<int>> acts(static_cast<std::size_t>(p));
  std::vector<int> working;
  const double per_layer = analytic::layer_activation_bytes(m, sl, b, tp, s.tensor.sequence, rc,
                                                            tr.flash_attention, act);
  for (int i = 0; i < p; ++i) {
    const auto mem = analytic::stage_memory(m, s, tr, i);
    g.set_memory_capacity(i, c.dev.memory.count());
    states[static_cast<std::size_t>(i)] =
        g.add_tensor({"model states", i, mem.model_states().count() + mem.buffers.count()});
    const int layers = s.stage_layers(m, i) / v;
    // each unit's layers, plus the embedding's dropout mask (first virtual stage) or the output
    // layer's inputs and fp32 logits (last), as in `analytic::stage_memory`
    for (int j = 0; j < mb * v; ++j) {
      const int gs = (j % v) * p + i;
      double x = layers * per_layer;
      if (gs == 0) x += analytic::input_embedding_bytes(m, s, tr);
      if (gs == p * v - 1) x += analytic::output_layer_bytes(m, s, tr);
      acts[static_cast<std::size_t>(i)].push_back(g.add_tensor({"activations", i, x}));
    }
    // full recomputation rebuilds one layer in full during each backward
    working.push_back(g.add_tensor(
        {"recomputed layer", i,
         rc == parallel::recompute::full
             ? analytic::layer_activation_bytes(m, sl, b, tp, s.tensor.sequence,
                                                parallel::recompute::none, tr.flash_attention, act)
             : 0.0}));
  }
  auto act_of = [&](int i, int micro, int chunk) {
    return acts[static_cast<std::size_t>(i)][static_cast<std::size_t>(micro * v + chunk)];
  };
  // data-parallel collectives of a stage: a flow of `wire` bytes after `steps` start-ups
  const double shards = static_cast<double>(s.data.degree) * s.expert.degree * s.context.degree;
  const double dsteps = shards - 1;
  auto dp_flow = [&](int i, const std::string& name, double wire, double steps,
                     std::vector<int> deps) {
    const auto& r = res[static_cast<std::size_t>(i)];
    return g.add_task({.name = name,
                       .resources = {r.dcap, r.out, r.in},
                       .work = wire,
                       .deps = std::move(deps),
                       .cls = task_class::communication,
                       .device = i,
                       .latency = steps * dv.ring.alpha.count()});
  };
  auto compute_task = [&](int i, const std::string& name, double t, std::vector<int> deps,
                          task_class cls = task_class::compute, std::vector<int> produces = {},
                          std::vector<int> consumes = {}) {
    return g.add_task({.name = name,
                       .resources = {res[static_cast<std::size_t>(i)].compute},
                       .work = t,
                       .deps = std::move(deps),
                       .cls = cls,
                       .device = i,
                       .produces = std::move(produces),
                       .consumes = std::move(consumes)});
  };
  const double send_bytes = b * sl * h * act / tp;
  auto send = [&](int from, int to, const std::string& name, int after) {
    const auto& a = res[static_cast<std::size_t>(from)];
    const auto& z = res[static_cast<std::size_t>(to)];
    return g.add_task({.name = name,
                       .resources = {a.pcap, a.out, z.in},
                       .work = send_bytes,
                       .deps = {after},
                       .cls = task_class::communication,
                       .device = from,
                       .latency = pipe_link.alpha.count()});
  };

  // programs and task creation in an order that respects the cross-stage dependencies
  std::vector<std::vector<detail::unit>> prog(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i)
    prog[static_cast<std::size_t>(i)] =
        detail::stage_program(s.pipeline.kind, p, v, mb, i, o.max_in_flight);
  // by virtual stage (chunk * p + i) and micro-batch: the send that delivers its input
  std::vector<std::vector<int>> fsend(static_cast<std::size_t>(p * v),
                                      std::vector<int>(static_cast<std::size_t>(mb), -1));
  std::vector<std::vector<int>> bsend = fsend, fdone = fsend;
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<int> last(static_cast<std::size_t>(p), -1);  // the stage's previous compute task
  std::vector<int> prev_dp(static_cast<std::size_t>(p), -1);
  std::vector<std::vector<int>> pending(static_cast<std::size_t>(p));  // what the update waits on
  std::vector<int> remaining_bwd(static_cast<std::size_t>(p * mb), v);
  const int zero = s.data.zero;
  const bool has_dp = shards > 1;
  const auto np = [&](int i) { return analytic::parameters_on(m, s, i); };
  const double gb = tr.gradient_bytes(), wb = tr.weight_bytes();
  auto wire_of = [&](double bytes_total, bool reduce_and_gather) {
    const double f = (shards - 1) / shards;
    return (reduce_and_gather ? 2 : 1) * f * bytes_total;
  };
  const int vp = p * v;
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < p; ++i) {
      const auto I = static_cast<std::size_t>(i);
      const auto n = np(i);
      const int layers = s.stage_layers(m, i) / v;
      // ZeRO-3 gathers one layer's weights at a time, one layer ahead of the compute
      const double layer_gather = wire_of((n.dense + n.expert) * wb / (layers * v), false);
      auto gather = [&](const std::string& name, int two_back) {
        std::vector<int> d;
        if (prev_dp[I] >= 0) d.push_back(prev_dp[I]);
        if (two_back >= 0) d.push_back(two_back);
        prev_dp[I] = dp_flow(i, name, layer_gather, dsteps, d);
        return prev_dp[I];
      };
      while (next[I] < prog[I].size()) {
        const detail::unit u = prog[I][next[I]];
        const int gs = u.chunk * p + i;  // virtual stage
        const auto GS = static_cast<std::size_t>(gs), J = static_cast<std::size_t>(u.micro);
        std::vector<int> deps;
        if (last[I] >= 0) deps.push_back(last[I]);
        const std::string tag =
            std::to_string(u.micro) + "." + std::to_string(u.chunk) + " @" + std::to_string(i);
        const bool gathers = zero >= 3 && has_dp;
        if (u.forward) {
          if (gs > 0 && fsend[GS - 1][J] < 0) break;
          if (gs > 0) deps.push_back(fsend[GS - 1][J]);
          int task = -1, before = -1;
          for (int l = 0; l < layers; ++l) {
            const std::string lt = " layer " + std::to_string(l) + " mb " + tag;
            std::vector<int> d = l == 0 ? deps : std::vector<int>{task};
            if (gathers) d.push_back(gather("all-gather weights" + lt, before));
            double t = lc.forward;
            if (l == 0 && gs == 0) t += lc.embedding_forward;
            if (l + 1 == layers && gs == vp - 1) t += lc.head_forward;
            std::vector<int> produces;
            if (l == 0) produces.push_back(act_of(i, u.micro, u.chunk));
            if (l == 0 && next[I] == 0) produces.push_back(states[I]);
            before = task;
            task = compute_task(i, "forward" + lt, t, std::move(d), task_class::compute,
                                std::move(produces));
            if (comm_fwd > seconds{})
              task = compute_task(i, "collectives" + lt, comm_fwd.count(), {task},
                                  task_class::communication);
          }
          fdone[GS][J] = task;
          last[I] = task;
          if (gs + 1 < vp) fsend[GS][J] = send(i, (gs + 1) % p, "send activations " + tag, task);
        } else {
          if (gs + 1 < vp && bsend[GS + 1][J] < 0) break;
          if (gs + 1 < vp) deps.push_back(bsend[GS + 1][J]);
          deps.push_back(fdone[GS][J]);
          // ZeRO-0/1: the stage's last backward releases the gradient buckets layer group by
          // layer group (all of them after it, without overlap)
          const bool reduce_here = next[I] + 1 == prog[I].size() && zero <= 1 && has_dp;
          const double bucket = (n.dense + n.expert) * gb / o.buckets;
          int released = 0;
          auto reduce_bucket = [&](int after) {
            std::vector<int> d{after};
            if (prev_dp[I] >= 0) d.push_back(prev_dp[I]);
            prev_dp[I] = dp_flow(i, "reduce gradients bucket " + std::to_string(released++),
                                 wire_of(bucket, zero == 0), dsteps * (zero == 0 ? 2 : 1), d);
            pending[I].push_back(prev_dp[I]);
          };
          int task = -1, before = -1;
          for (int l = layers - 1; l >= 0; --l) {
            const std::string lt = " layer " + std::to_string(l) + " mb " + tag;
            std::vector<int> d = l == layers - 1 ? deps : std::vector<int>{task};
            if (gathers) d.push_back(gather("all-gather weights (backward)" + lt, before));
            double t = lc.backward + recompute;
            if (rc == parallel::recompute::full) t += comm_fwd.count();
            if (l == 0 && gs == 0) t += lc.embedding_backward;
            if (l + 1 == layers && gs == vp - 1) t += lc.head_backward;
            before = task;
            task = compute_task(
                i, "backward" + lt, t, std::move(d), task_class::compute, {working[I]},
                l == 0 ? std::vector<int>{act_of(i, u.micro, u.chunk)} : std::vector<int>{});
            if (comm_bwd > seconds{})
              task = compute_task(i, "collectives (backward)" + lt, comm_bwd.count(), {task},
                                  task_class::communication);
            // bucket k closes once (k + 1) / buckets of the layers are done
            if (reduce_here && o.overlap)
              while (released < o.buckets - 1 &&
                     (layers - l) * o.buckets >= (released + 1) * layers)
                reduce_bucket(task);
          }
          if (reduce_here)
            while (released < o.buckets) reduce_bucket(task);
          last[I] = task;
          if (gs > 0) bsend[GS][J] = send(i, (gs - 1) % p, "send gradients " + tag, task);
          if (gs > 0) pending[I].push_back(bsend[GS][J]);
          const auto MB = static_cast<std::size_t>(i * mb + u.micro);
          if (--remaining_bwd[MB] == 0 && zero >= 2 && has_dp) {  // micro-batch done here
            std::vector<int> d{task};
            if (prev_dp[I] >= 0) d.push_back(prev_dp[I]);
            const int r = dp_flow(i, "reduce-scatter gradients " + std::to_string(u.micro),
                                  wire_of((n.dense + n.expert) * gb, false), dsteps, d);
            prev_dp[I] = r;
            pending[I].push_back(r);
          }
        }
        ++next[I];
        progress = true;
      }
    }
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(p); ++i)
    if (next[i] < prog[i].size()) throw plan_error("the pipeline schedule deadlocks");
  // the optimizer step, then (ZeRO-1/2) the updated weights gathered back
  for (int i = 0; i < p; ++i) {
    const auto I = static_cast<std::size_t>(i);
    std::vector<int> deps = pending[I];
    deps.push_back(last[I]);
    const auto n = np(i);
    const double sh_dense = zero >= 1 ? shards : 1.0;
    const double sh_expert =
        zero >= 1 ? static_cast<double>(s.data.degree) * s.context.degree : 1.0;
    const int upd = compute_task(
        i, "optimizer step",
        prof.copy.time(tr.update_bytes() * (n.dense / sh_dense + n.expert / sh_expert)), deps,
        task_class::compute, {}, {states[I]});
    if ((zero == 1 || zero == 2) && has_dp)
      dp_flow(i, "all-gather updated weights", wire_of((n.dense + n.expert) * wb, false), dsteps,
              {upd});
  }
  out.run = g.run();
  out.iteration = seconds{out.run.makespan};
  return out;
}

}  // namespace strata::sim
