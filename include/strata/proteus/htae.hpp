#pragma once
/// @file proteus/htae.hpp
/// @brief Proteus's hierarchical topology-aware executor, HTAE (Duan et al. §VI): a compiled
/// execution graph lowered onto strata's executor (`sim/executor.hpp`) and its event core.
///
/// Each device has a compute queue, a feature-communication queue and a gradient-communication
/// queue (§VI-B); the three run concurrently, each queue in order. A communication operation
/// becomes flows on the physical links of the cluster's hierarchy (§VI-C, Fig. 7): every member
/// of a group with a partner under the same level-0 switch drives its own port (NVLink, or PCIe
/// under a socket's switch), and for each higher level the group spans, every level-below
/// group holding members drives its uplink at that level (a socket switch's uplink towards the
/// other socket, the NIC between nodes) with the ring's per-rank bytes (`wire_bytes`), after the
/// ring's start-ups
/// (`ring_steps` x alpha). Flows on one link share it max-min fairly and re-rate when others
/// start or end, so gradient groups that cross one NIC, or feature and gradient traffic that
/// meet on it, slow each other exactly where they overlap. Where the level-0 links form a mesh
/// (`level::links`, HC2's NVLink cube-mesh), a group inside one node gets the channels a ring
/// search finds over its members' links (§VII, NCCL's topology detection), shared by the
/// operations of that group. The overlap factor gamma (§VI-C) makes a compute operation
/// 1 + gamma times slower while its device communicates, per class of device pair
/// (`htae_options::gamma_per_level`). Memory (§VI-B):
/// each device's model states live all iteration; a forward keeps its saved tensors until the
/// backward (or the recompute) that frees them; the first allocation past the device's memory is
/// the out-of-memory verdict, naming the operation.
/// @code
/// auto run = strata::proteus::execute(graph, strata::presets::hc2(), {.gamma = 0.1});
/// // run.iteration, run.oom
/// @endcode

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/hardware/cluster.hpp"
#include "strata/proteus/compile.hpp"
#include "strata/sim/executor.hpp"

namespace strata::proteus {

struct htae_options {
  double gamma = 0;               ///< overlap factor (§VI-C)
  bool bandwidth_sharing = true;  ///< false: every flow gets its link alone ("Plain", Fig. 9)
  bool track_memory = true;
  /// The overlap factor per class of device pair, by the cluster level a communication group
  /// spans up to: entry k applies while such a communication is in service (HC1: 0 PCIe under
  /// one socket's switch, 1 across the sockets; HC2: 0 NVLink inside a node, 1 InfiniBand
  /// across nodes); levels without an entry take `gamma`. Proteus profiles gamma once per
  /// machine and model (`overlap_factor`); profiling it with groups of one class gives that
  /// class's entry.
  std::vector<double> gamma_per_level{};
};

/// Proteus §VI-C's profiling of gamma: the backward pass of data-parallel training timed with
/// its gradient communication overlapping (`overlapped_s`) and without (`alone_s`); gamma is the
/// increase ratio, overlapped / alone - 1 (0.1 for 110 ms against 100 ms).
[[nodiscard]] inline double overlap_factor(double overlapped_s, double alone_s) {
  if (!(alone_s > 0) || !(overlapped_s >= alone_s) || !(overlapped_s < 101 * alone_s))
    throw plan_error(
        "overlap_factor: the overlapped backward must take between 1 and 101 times the backward "
        "alone, both positive");
  return overlapped_s / alone_s - 1;
}

/// Where and when an operation ran.
struct op_span {
  int op = 0;
  double start = 0, end = 0;
};

/// The out-of-memory verdict.
struct oom_verdict {
  int device = 0;
  std::string op;  ///< the operation whose allocation crossed the limit
  double bytes = 0;
  double capacity = 0;
};

struct htae_run {
  sim::simulator graph;
  sim::result run;
  double iteration = 0;
  std::vector<op_span> spans;  ///< per exec_op
  std::vector<double> peak_memory;
  std::optional<oom_verdict> oom;
};

namespace detail {

/// Refuses overlap factors outside [0, 100], more per-level factors than the cluster has
/// levels, and a graph on more devices than the cluster has.
inline void check_htae(const execution_graph& g, const cluster& c, const htae_options& o) {
  if (!(o.gamma >= 0) || !(o.gamma <= 100))
    throw plan_error("htae: the overlap factor gamma must lie in [0, 100]");
  for (double x : o.gamma_per_level)
    if (!(x >= 0) || !(x <= 100))
      throw plan_error("htae: every per-level overlap factor gamma must lie in [0, 100]");
  if (o.gamma_per_level.size() > static_cast<std::size_t>(c.depth))
    throw plan_error("htae: " + std::to_string(o.gamma_per_level.size()) +
                     " per-level overlap factors for a cluster of " + std::to_string(c.depth) +
                     " levels");
  if (g.devices > c.devices())
    throw plan_error("htae: the execution graph uses more devices than the cluster has");
}

/// How one communication operation runs (§VI-C): its task dependencies, sorted members, the
/// highest level it spans, the ring's per-rank bytes and start-ups, and its overlap factor.
struct comm_shape {
  std::vector<int> deps;
  std::vector<int> members;
  int top = -1;
  double w = 0, lat = 0, gamma = 0;
};

/// One HTAE build of graph `g` on cluster `c` into simulator `s`: the devices' queues and
/// ports, the links the hierarchy's levels share, and the tasks of each operation.
struct htae_builder {
  struct dev_res {
    int compute, feature, gradient, port;
  };
  const execution_graph& g;
  const cluster& c;
  const htae_options& o;
  sim::simulator& s;
  sim::executor ex{s};
  int n;
  const level& l0;
  double port_bw;
  std::vector<dev_res> res;
  // uplinks: (level k >= 1, index of the level-(k-1) group) -> resource
  std::map<std::pair<int, int>, int> uplinks{};
  std::map<std::vector<int>, double> channel_bw{};  // local member set -> bandwidth
  std::map<std::pair<int, std::vector<int>>, int> channel_links{};
  // memory: the model states of each device, allocated by a zero-length task at the start
  std::vector<int> states_tensor, start_task;
  std::vector<int> opt_task;
  // tensors kept by an op, read by the op that frees them
  std::vector<std::vector<int>> frees;
  std::vector<int> kept_tensor;
  std::vector<int> done;                // the task consumers wait for
  std::vector<std::vector<int>> flows;  // communication: its flows
  std::vector<std::vector<int>> joins;
  // queue order of communication: the previous op of the same queue on each device
  std::vector<int> last_compute;
  std::vector<int> last_feature, last_gradient;

  /// Sizes the per-device and per-operation bookkeeping; adds nothing to the simulator yet.
  htae_builder(const execution_graph& graph, const cluster& cl, const htae_options& opts,
               sim::simulator& simulator)
      : g(graph),
        c(cl),
        o(opts),
        s(simulator),
        n(g.devices),
        l0(c.levels[0]),
        port_bw(l0.pair.bandwidth.count() * l0.rails),
        res(static_cast<std::size_t>(n)),
        states_tensor(static_cast<std::size_t>(n), -1),
        start_task(static_cast<std::size_t>(n), -1),
        opt_task(static_cast<std::size_t>(n), -1),
        frees(g.ops.size()),
        kept_tensor(g.ops.size(), -1),
        done(g.ops.size(), -1),
        flows(g.ops.size()),
        joins(g.ops.size()),
        last_compute(static_cast<std::size_t>(n), -1),
        last_feature(static_cast<std::size_t>(n), -1),
        last_gradient(static_cast<std::size_t>(n), -1) {}

  /// Each device's three queues (§VI-B), its level-0 port and its memory capacity.
  void add_devices() {
    for (int d = 0; d < n; ++d) {
      const std::string who = "gpu" + std::to_string(d);
      auto& r = res[static_cast<std::size_t>(d)];
      r.compute = ex.add_device(d, who);
      r.feature = ex.add_stream(d, who + " feature comm");
      r.gradient = ex.add_stream(d, who + " gradient comm");
      r.port = ex.add_link(d, who + " " + std::string(l0.name) + " port", port_bw);
      if (o.track_memory) s.set_memory_capacity(d, c.dev.memory.count());
    }
  }

  /// The uplink at level `k` of level-(k-1) group `grp`, made on first use.
  int uplink(int k, int grp) {
    const auto key = std::pair{k, grp};
    if (auto it = uplinks.find(key); it != uplinks.end()) return it->second;
    const level& l = c.levels[static_cast<std::size_t>(k)];
    const std::string name = std::string(c.levels[static_cast<std::size_t>(k - 1)].name) + " " +
                             std::to_string(grp) + " uplink (" + std::string(l.name) + ")";
    const int id = ex.add_link(-1, name, l.pair.bandwidth.count() * l.rails / l.oversubscription);
    uplinks[key] = id;
    return id;
  }

  // Where the level-0 group's links are a mesh (HC2's NVLink cube-mesh), the members of one
  // communication group inside one level-0 group reach one another over their channels only
  // (§VII: the bandwidth of a group is the sum of the channels NCCL's topology search finds): a
  // link per (level-0 group, member set) of that bandwidth per member, which every flow of the
  // set crosses besides its device's port, so operations of one set share its channels.

  /// The per-member bandwidth of the channels of level-0 member set `local` (§VII).
  double channels(const std::vector<int>& local) {
    // a whole node rings at the level's own pair bandwidth (the port); a smaller set's channel
    // search is exhaustive over ring orders, so it runs once per set and run
    if (static_cast<int>(local.size()) == l0.links->gpus) return port_bw;
    auto bw = channel_bw.find(local);
    if (bw == channel_bw.end()) {
      const double b =
          ring_bandwidth(submesh(*l0.links, local.data(), static_cast<int>(local.size()))).count();
      bw = channel_bw.emplace(local, std::min(b, port_bw)).first;
    }
    return bw->second;
  }
  /// The link of the channels of member set `local` in level-0 group `grp`, made on first use.
  int channel_link(int grp, const std::vector<int>& local) {
    const auto key = std::pair{grp, local};
    if (auto it = channel_links.find(key); it != channel_links.end()) return it->second;
    std::string name = std::string(l0.name) + " " + std::to_string(grp) + " channels {";
    for (std::size_t j = 0; j < local.size(); ++j)
      name += (j ? ", " : "") + std::to_string(local[j]);
    const int id = ex.add_link(-1, name + "}", channels(local) * static_cast<double>(local.size()));
    channel_links[key] = id;
    return id;
  }
  /// Without bandwidth sharing ("Plain", Fig. 9): a link of its own for one flow.
  int fresh(double capacity, int d) { return ex.add_link(d, "private link", capacity); }

  /// Memory (§VI-B): each device's model states, allocated by a zero-length task at the start.
  void add_model_states() {
    if (o.track_memory)
      for (int d = 0; d < n; ++d) {
        if (!(g.states[static_cast<std::size_t>(d)] > 0)) continue;
        states_tensor[static_cast<std::size_t>(d)] =
            ex.tensor(d, "model states", g.states[static_cast<std::size_t>(d)]);
        start_task[static_cast<std::size_t>(d)] =
            ex.on_stream(res[static_cast<std::size_t>(d)].compute, d, "model states", 0, {},
                         sim::task_class::compute, {states_tensor[static_cast<std::size_t>(d)]});
      }
  }
  /// Memory (§VI-B): the tensors each operation keeps, read by the operation that frees them.
  void add_kept_tensors() {
    if (o.track_memory)
      for (std::size_t i = 0; i < g.ops.size(); ++i) {
        const auto& op = g.ops[i];
        if (op.keeps > 0 && op.freed_by >= 0) {
          kept_tensor[i] = ex.tensor(op.devices.front(), op.name, op.keeps);
          frees[static_cast<std::size_t>(op.freed_by)].push_back(kept_tensor[i]);
        }
      }
  }

  /// Compute (or optimizer) operation `i` as a task on its device's compute queue.
  [[gnu::always_inline]] void add_compute(std::size_t i, std::vector<int> deps) {
    const exec_op& op = g.ops[i];
    const int d = op.devices.front();
    if (start_task[static_cast<std::size_t>(d)] >= 0)
      deps.push_back(start_task[static_cast<std::size_t>(d)]);
    // the compute queue runs in program order (the scheduler dispatches one subgraph at a
    // time, §VI-B), not in the order operations become ready
    if (last_compute[static_cast<std::size_t>(d)] >= 0)
      deps.push_back(last_compute[static_cast<std::size_t>(d)]);
    std::vector<int> produces, consumes = frees[i];
    if (kept_tensor[i] >= 0) produces.push_back(kept_tensor[i]);
    if (op.kind == op_kind::optimizer && states_tensor[static_cast<std::size_t>(d)] >= 0)
      consumes.push_back(states_tensor[static_cast<std::size_t>(d)]);
    done[i] = ex.on_stream(res[static_cast<std::size_t>(d)].compute, d, op.name, op.seconds,
                           std::move(deps), sim::task_class::compute, std::move(produces),
                           std::move(consumes));
    last_compute[static_cast<std::size_t>(d)] = done[i];
  }

  /// One flow of communication operation `i` over `links`, driven by `device`.
  [[gnu::always_inline]] void flow(std::size_t i, const comm_shape& cs, std::vector<int> links,
                                   int device) {
    flows[i].push_back(
        ex.flow(device, g.ops[i].name, std::move(links), cs.w, cs.lat, cs.deps, cs.gamma));
  }
  /// Level 0 (§VI-C, Fig. 7): members with a partner under the same switch drive their ports
  /// (and, on a mesh, their set's channels).
  [[gnu::always_inline]] void add_port_flows(std::size_t i, const comm_shape& cs) {
    const int span0 = c.span(0);
    for (int d : cs.members) {
      std::vector<int> local;
      for (int x : cs.members)
        if (x / span0 == d / span0) local.push_back(x % span0);
      if (local.size() < 2 && cs.top > 0) continue;
      // a set whose channels match the port needs no link of its own (a whole node)
      const bool mesh = l0.links != nullptr && local.size() > 1 && channels(local) < port_bw;
      if (!o.bandwidth_sharing)
        flow(i, cs, {fresh(mesh ? channels(local) : port_bw, d)}, d);
      else if (mesh)
        flow(i, cs, {res[static_cast<std::size_t>(d)].port, channel_link(d / span0, local)}, d);
      else
        flow(i, cs, {res[static_cast<std::size_t>(d)].port}, d);
    }
  }
  /// Every higher level the group spans (§VI-C): one flow per level-below group on its uplink.
  [[gnu::always_inline]] void add_uplink_flows(std::size_t i, const comm_shape& cs) {
    for (int k = 1; k <= cs.top; ++k) {
      const int below = c.span(k - 1);
      int prev = -1;
      for (int d : cs.members)
        if (d / below != prev) {
          prev = d / below;
          const level& l = c.levels[static_cast<std::size_t>(k)];
          flow(i, cs,
               {o.bandwidth_sharing ? uplink(k, prev)
                                    : fresh(l.pair.bandwidth.count() * l.rails, d)},
               d);
        }
    }
  }

  /// Communication operation `i` (§VI-C): flows on the hierarchy's links after the ring's
  /// start-ups, then a join on each member's feature or gradient queue, in queue order.
  [[gnu::always_inline]] void add_communication(std::size_t i, std::vector<int> deps) {
    const exec_op& op = g.ops[i];
    auto& last = op.q == queue::gradient ? last_gradient : last_feature;
    for (int d : op.devices)
      if (last[static_cast<std::size_t>(d)] >= 0)
        deps.push_back(done[static_cast<std::size_t>(last[static_cast<std::size_t>(d)])]);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    comm_shape cs{std::move(deps), op.devices};
    std::sort(cs.members.begin(), cs.members.end());
    const int p = static_cast<int>(cs.members.size());
    cs.w = p > 1 ? wire_bytes(op.coll.op, p, op.coll.bytes) : 0.0;
    cs.top = p > 1 ? c.common_level(cs.members.front(), cs.members.back()) : -1;
    const double alpha =
        cs.top >= 0 ? c.levels[static_cast<std::size_t>(cs.top)].pair.alpha.count() : 0.0;
    cs.lat = p > 1 ? ring_steps(op.coll.op, p) * alpha : 0.0;
    cs.gamma = cs.top >= 0 && static_cast<std::size_t>(cs.top) < o.gamma_per_level.size()
                   ? o.gamma_per_level[static_cast<std::size_t>(cs.top)]
                   : o.gamma;
    if (cs.w > 0) {
      add_port_flows(i, cs);
      add_uplink_flows(i, cs);
    }
    std::vector<int> jdeps = flows[i].empty() ? cs.deps : flows[i];
    for (int d : cs.members) {
      const auto& r = res[static_cast<std::size_t>(d)];
      joins[i].push_back(ex.on_stream(op.q == queue::gradient ? r.gradient : r.feature, d, op.name,
                                      0, jdeps, sim::task_class::other));
    }
    done[i] = joins[i].front();
    for (int d : op.devices) last[static_cast<std::size_t>(d)] = static_cast<int>(i);
  }

  /// Operation `i`, after the tasks of its dependencies.
  [[gnu::always_inline]] void add_op(std::size_t i) {
    const exec_op& op = g.ops[i];
    std::vector<int> deps;
    for (int d : op.deps) deps.push_back(done[static_cast<std::size_t>(d)]);
    if (op.kind != op_kind::collective)
      add_compute(i, std::move(deps));
    else
      add_communication(i, std::move(deps));
  }

  /// Each operation's span (from its first flow's start to its task's end), the peak memory and
  /// the out-of-memory verdict of run `out.run`.
  void collect(htae_run& out) const {
    out.iteration = out.run.makespan;
    out.spans.resize(g.ops.size());
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      auto& sp = out.spans[i];
      sp.op = static_cast<int>(i);
      const auto& rec = out.run.tasks[static_cast<std::size_t>(done[i])];
      sp.end = rec.end;
      sp.start = rec.start;
      for (int f : flows[i])
        sp.start = std::min(sp.start, out.run.tasks[static_cast<std::size_t>(f)].start);
    }
    out.peak_memory = out.run.peak_memory;
    if (out.run.oom) {
      const auto& t = s.tasks()[static_cast<std::size_t>(out.run.oom->task)];
      out.oom = oom_verdict{out.run.oom->device, std::string(t.name), out.run.oom->bytes,
                            c.dev.memory.count()};
    }
  }
};

}  // namespace detail

/// Runs one iteration of `g` on cluster `c`.
[[nodiscard]] inline htae_run execute(const execution_graph& g, const cluster& c,
                                      const htae_options& o = {}) {
  detail::check_htae(g, c, o);
  htae_run out;
  sim::simulator& s = out.graph;
  s.set_overlap_factor(o.gamma);
  detail::htae_builder b(g, c, o, s);
  b.add_devices();
  b.add_model_states();
  b.add_kept_tensors();
  for (std::size_t i = 0; i < g.ops.size(); ++i) b.add_op(i);
  out.run = s.run();
  b.collect(out);
  return out;
}

}  // namespace strata::proteus
