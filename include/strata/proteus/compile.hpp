#pragma once
/// @file proteus/compile.hpp
/// @brief Proteus's execution-graph compiler (Duan et al. §V): a strategy tree and a model
/// become per-device operations. Computation is the one lowering (`lower::layer`, `embedding`,
/// `head` for the shard each leaf's partition gives a device); communication is inserted
/// where a tensor's layout as its producer leaves it differs from what its consumer needs
/// (§V-A "strategy transformation"), chosen by pattern matching on the two layouts (§V-B);
/// control dependencies follow the schedule configs (micro-batches, the in-flight limit,
/// recomputation right before the backward).
///
/// Layouts. The activation between modules (b x s x h per batch part) lives on a leaf's devices
/// as a grid of `batch` x `hidden` parts, hidden innermost, in one of three states: replicated
/// over the hidden group, split along the sequence over it (sequence parallelism), or partial
/// sums (the output of a row-split projection). Transformations on one device set:
/// partial -> replicated: all-reduce; partial -> sequence-split: reduce-scatter;
/// sequence-split -> replicated: all-gather, each over the hidden groups; a coarser batch
/// partition: all-gather over the devices whose parts make one new part; a finer one: a local
/// slice; anything else: all-to-all over the devices. Between disjoint device sets (a pipeline
/// boundary): a send/recv per receiving device from the device that holds its part (with equal
/// hidden groups each hidden rank sends 1/t and the receivers all-gather, Megatron's
/// scatter/gather). Device groups are split as the layout dictates: one collective per group.
///
/// A transformer block with a hidden partition is two Megatron segments (attention, MLP), each a
/// column-split projection that needs its input replicated and a row-split one that leaves
/// partial sums (Shoeybi et al. §3): forward the compiler inserts T(R -> replicated) before and
/// T(partial -> R) after each segment (R: the residual layout); backward the row projection
/// needs dY replicated and the column one leaves dX partial, so the same two transformations
/// run again. For R replicated that is two all-reduces per pass, for R sequence-split two
/// all-gathers and two reduce-scatters (Korthikanti §4.2.2): the collectives
/// `lower::layer_collectives` lists for a `parallel::nd` plan, here derived from layouts.
/// Weights are replicated over a leaf's batch group: their gradients are all-reduced (memory
/// config ZeRO-0), reduce-scattered with the updated weights all-gathered after the step
/// (ZeRO-1/2), or reduce-scattered with the weights all-gathered before every forward and
/// backward (ZeRO-3), on the gradient queue.
/// @code
/// auto t = strata::proteus::dp_mp_pp(strata::zoo::gpt2_124m(), {.dp = 8});
/// auto g = strata::proteus::compile(strata::zoo::gpt2_124m(), t, strata::presets::hc1(),
///                                   {.batch = 8}, profile);
/// @endcode

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "strata/analytic/price.hpp"
#include "strata/comm/collectives.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/lower/cnn.hpp"
#include "strata/lower/transformer.hpp"
#include "strata/proteus/tree.hpp"

namespace strata::proteus {

/// The three queues of an executor (§VI-B).
enum class queue { compute, feature, gradient };
enum class op_kind { forward, backward, recompute, optimizer, collective };

[[nodiscard]] constexpr std::string_view to_string(queue q) {
  switch (q) {
    case queue::compute:
      return "compute";
    case queue::feature:
      return "feature communication";
    case queue::gradient:
      return "gradient communication";
  }
  return "compute";
}

/// One leaf lowered for one device's shard: its kernels, kept tensors and priced times.
struct lowered_leaf {
  module_kind kind = module_kind::block;
  lower::shard shard{};
  std::vector<lower::kernel_op> forward{}, backward{};
  double forward_s = 0, backward_s = 0;  ///< GPU time (the profile's queued kernels)
  double kept = 0;                       ///< bytes kept from forward to backward
  double recomputed = 0;                 ///< under recomputation: bytes the recompute rebuilds
  double parameters = 0;                 ///< on one device, before ZeRO sharding
};

/// One operation of the execution graph.
struct exec_op {
  std::string name;
  op_kind kind = op_kind::forward;
  queue q = queue::compute;
  std::vector<int> devices{};  ///< compute: one; communication: its group
  int leaf = -1;               ///< position among the tree's leaves (-1: none)
  int micro_batch = -1;
  int lowered = -1;  ///< compute: `execution_graph::lowered` entry
  double seconds = 0;
  lower::collective_op coll{};  ///< communication: operation, S (nccl-tests convention), pass
  double keeps = 0;             ///< bytes this op allocates per device, until `freed_by` ends
  int freed_by = -1;
  std::vector<int> deps{};  ///< data and control dependencies (earlier ops)
};

/// The distributed execution graph.
struct execution_graph {
  int devices = 0;
  std::vector<exec_op> ops;
  std::vector<lowered_leaf> lowered;
  std::vector<std::string> leaf_names;
  std::vector<double> states;  ///< per device: weights, gradients, optimizer states (bytes)
  int stages = 1;
  int n_micro_batch = 1;

  /// The operations touching device `d`, in creation (a topological) order.
  [[nodiscard]] std::vector<int> ops_of(int d) const {
    std::vector<int> out;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (std::find(ops[i].devices.begin(), ops[i].devices.end(), d) != ops[i].devices.end())
        out.push_back(static_cast<int>(i));
    return out;
  }
};

/// Bytes each rank puts on the wire for collective `op` of S bytes over p ranks (ring):
/// all-reduce 2 (p - 1) / p S, all-gather / reduce-scatter / all-to-all (p - 1) / p S, a
/// send S.
[[nodiscard]] constexpr double wire_bytes(comm::collective op, int p, double s) {
  return comm::busbw_factor(op, p) * s;
}

/// Latency steps of a ring collective: all-reduce 2 (p - 1), the others p - 1, a send 1.
[[nodiscard]] constexpr int ring_steps(comm::collective op, int p) {
  if (op == comm::collective::send_recv) return 1;
  if (op == comm::collective::all_reduce) return 2 * (p - 1);
  return p - 1;
}

namespace detail {

/// A tensor's layout: a batch x hidden grid of parts on `devices` (hidden innermost).
enum class lstate { replicated, sequence_split, partial };
struct layout {
  std::vector<int> devices;
  int batch = 1, hidden = 1;
  lstate state = lstate::replicated;
  /// Batch interval [lo, hi) of device position k, in units of 1 / (batch x 1).
  [[nodiscard]] int part_of(std::size_t k) const { return static_cast<int>(k) / hidden; }
  [[nodiscard]] std::vector<std::vector<int>> hidden_groups() const {
    std::vector<std::vector<int>> g(static_cast<std::size_t>(batch));
    for (std::size_t k = 0; k < devices.size(); ++k)
      g[static_cast<std::size_t>(part_of(k))].push_back(devices[k]);
    return g;
  }
};

/// A collective to insert: operation, groups, S per group.
struct transfer {
  comm::collective op;
  std::vector<std::vector<int>> groups;
  double bytes;
  std::string what;
};

/// Strategy transformation (§V-B) of a b_total x s x h activation of `full` bytes (the whole
/// global micro-batch) from layout `a` to layout `z`, by pattern matching.
inline std::vector<transfer> transform(const layout& a, const layout& z, double full);

/// The transfers across a pipeline boundary (`a` and `z` on disjoint devices): a send/recv per
/// receiving device, after reducing partial sums (§V-B).
inline void pipeline_transfers(const layout& a, const layout& z, double full,
                               std::vector<transfer>& out) {
  layout src = a;
  // partial sums are reduced first; sequence slices travel as they are when the hidden groups
  // match (each rank sends its slice), otherwise they are gathered first
  const bool slices =
      a.state == lstate::sequence_split && a.hidden == z.hidden && a.batch == z.batch;
  if (a.state == lstate::partial || (a.state == lstate::sequence_split && !slices)) {
    auto pre = transform(a, layout{a.devices, a.batch, a.hidden, lstate::replicated}, full);
    out.insert(out.end(), pre.begin(), pre.end());
    src.state = lstate::replicated;
  }
  if (z.batch % src.batch != 0)
    throw plan_error(
        "strategy transformation: across a pipeline boundary the batch may only be "
        "split further (" +
        std::to_string(src.batch) + " parts -> " + std::to_string(z.batch) + " parts)");
  const int ratio = z.batch / src.batch;
  const double piece = full / z.batch;
  const bool scatter = src.hidden == z.hidden && z.hidden > 1 && ratio == 1;
  for (std::size_t k = 0; k < z.devices.size(); ++k) {
    const int zp = z.part_of(k), t = static_cast<int>(k) % z.hidden;
    const int ap = zp / ratio;
    const int from = src.devices[static_cast<std::size_t>(ap * src.hidden + t % src.hidden)];
    out.push_back({comm::collective::send_recv,
                   {{from, z.devices[k]}},
                   scatter ? piece / z.hidden : piece,
                   "pipeline send"});
  }
  // receivers that need the whole part gather the 1/t pieces; sequence-split ones keep theirs
  if (scatter && z.state != lstate::sequence_split)
    out.push_back({comm::collective::all_gather, z.hidden_groups(), piece, "pipeline all-gather"});
}

/// The collective that changes only the state of a layout on one grid (§V-B): all-reduce,
/// reduce-scatter, all-gather over the hidden groups, or nothing.
inline void state_transfers(const layout& a, const layout& z, double full,
                            std::vector<transfer>& out) {
  const double part_a = full / a.batch;  // bytes of one batch part of `a`
  if (a.state == z.state) return;
  if (a.state == lstate::partial && z.state == lstate::replicated)
    out.push_back({comm::collective::all_reduce, a.hidden_groups(), part_a, "all-reduce"});
  else if (a.state == lstate::partial && z.state == lstate::sequence_split)
    out.push_back({comm::collective::reduce_scatter, a.hidden_groups(), part_a, "reduce-scatter"});
  else if (a.state == lstate::sequence_split && z.state == lstate::replicated)
    out.push_back({comm::collective::all_gather, a.hidden_groups(), part_a, "all-gather"});
  else if (z.state == lstate::partial)
    throw plan_error("strategy transformation: a consumer cannot need partial sums");
  // replicated -> sequence-split: each device keeps its slice
}

/// The batch interval [lo, hi) device `dev` holds in layout `l`, in units of 1/`units` of the
/// batch.
[[gnu::always_inline]] [[nodiscard]] inline std::pair<int, int> batch_interval(const layout& l,
                                                                               int dev, int units) {
  const auto it = std::find(l.devices.begin(), l.devices.end(), dev);
  const int p = l.part_of(static_cast<std::size_t>(it - l.devices.begin()));
  const int w = units / l.batch;
  return std::pair<int, int>{p * w, (p + 1) * w};
}

/// For a coarser batch partition: the all-gather groups over the devices that need one interval
/// of `z`, one member per interval they hold in `src`; false unless the held intervals tile
/// every needed one.
inline bool coarser_gather_groups(const layout& src, const layout& z, int units,
                                  std::vector<std::vector<int>>& groups) {
  std::map<std::pair<int, int>, std::vector<int>> by_need;
  for (int d : z.devices) by_need[batch_interval(z, d, units)].push_back(d);
  bool gather = true;
  for (auto& [need, devs] : by_need) {
    std::vector<std::pair<int, int>> held;
    for (int d : devs) held.push_back(batch_interval(src, d, units));
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    int at = need.first;
    for (const auto& h : held) {
      if (h.first != at) gather = false;
      at = h.second;
    }
    if (at != need.second) gather = false;
    // one member per held interval forms the gathering group; replicas gather alike
    const int members = static_cast<int>(held.size());
    if (members < 2 || static_cast<int>(devs.size()) % members != 0) gather = false;
    if (gather) {
      const int reps = static_cast<int>(devs.size()) / members;
      for (int r = 0; r < reps; ++r) {
        std::vector<int> g;
        for (const auto& h : held) {
          int seen = 0;
          for (int d : devs)
            if (batch_interval(src, d, units) == h && seen++ == r) g.push_back(d);
        }
        groups.push_back(std::move(g));
      }
    }
  }
  return gather;
}

/// The transfers between two grids on one device set `sz` (sorted) (§V-B): a local slice for a
/// finer batch partition, an all-gather for a coarser one, otherwise an all-to-all.
inline void regrid_transfers(const layout& a, const layout& z, double full,
                             const std::vector<int>& sz, std::vector<transfer>& out) {
  // different grids on one device set: first make the source whole on its hidden groups
  layout src = a;
  if (a.state != lstate::replicated) {
    auto pre = transform(a, layout{a.devices, a.batch, a.hidden, lstate::replicated}, full);
    out.insert(out.end(), pre.begin(), pre.end());
    src.state = lstate::replicated;
  }
  // which batch interval each device holds (src) and needs (z), in units of 1/L of the batch
  const int L = std::max(src.batch, z.batch) *
                (std::max(src.batch, z.batch) % std::min(src.batch, z.batch) == 0
                     ? 1
                     : std::min(src.batch, z.batch));
  bool local = true;
  for (int d : z.devices) {
    const auto need = batch_interval(z, d, L), have = batch_interval(src, d, L);
    if (need.first < have.first || need.second > have.second) local = false;
  }
  if (local) {
    if (z.state == lstate::partial)
      throw plan_error("strategy transformation: a consumer cannot need partial sums");
    return;  // a finer partition: each device slices what it holds
  }
  // a coarser partition: all-gather over the devices that need the same interval, if their
  // held intervals tile it
  std::vector<std::vector<int>> groups;
  if (coarser_gather_groups(src, z, L, groups) && !groups.empty()) {
    out.push_back({comm::collective::all_gather, std::move(groups), full / z.batch, "all-gather"});
    return;
  }
  out.push_back({comm::collective::all_to_all, {sz}, full, "all-to-all"});
}

/// Strategy transformation (§V-B), declared above: a pipeline boundary, a change of state on one
/// grid, or a change of grid on one device set.
inline std::vector<transfer> transform(const layout& a, const layout& z, double full) {
  std::vector<transfer> out;
  const auto sorted = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto sa = sorted(a.devices), sz = sorted(z.devices);
  std::vector<int> both;
  std::set_intersection(sa.begin(), sa.end(), sz.begin(), sz.end(), std::back_inserter(both));
  if (both.empty()) {  // pipeline boundary: send/recv
    pipeline_transfers(a, z, full, out);
    return out;
  }
  if (sa != sz)
    throw plan_error(
        "strategy transformation: consecutive modules share some devices but not "
        "all; their device groups must be equal or disjoint");
  const bool same_grid = a.batch == z.batch && a.hidden == z.hidden && a.devices == z.devices;
  if (same_grid)
    state_transfers(a, z, full, out);
  else
    regrid_transfers(a, z, full, sz, out);
  return out;
}

/// Collects kernels and kept bytes from a lowering.
struct collector {
  std::vector<lower::kernel_op>* kernels;
  double kept = 0;
  void kernel(const lower::kernel_op& k) { kernels->push_back(k); }
  void save(const lower::saved_tensor& t) {
    if (t.kind != lower::keep_kind::graph) kept += t.bytes;  // graph: counted as activation too
  }
};

}  // namespace detail

namespace detail {

/// The most operations one execution graph may hold (the event core's task budget).
inline constexpr double max_operations = 4e6;

/// Bytes per parameter of the model states and of the optimizer step's traffic.
struct state_bytes {
  double weight = 4, gradient = 4, optimizer = 8, update = 28;
};

/// The part of the compiler that every model shares, as one build: the lowered leaves of `g`,
/// the tree, and what the per-device operations are being chained by.
struct graph_scheduler {
  execution_graph& g;
  const strategy_tree& t;
  const std::vector<int>& leaf_lowered;
  const std::vector<bool>& leaf_recompute;
  const std::vector<double>& out_bytes;
  const state_bytes& sb;
  const device_profile& prof;
  std::vector<int> leaves;
  int L;
  resolved_schedule sched;
  int nmb;
  // stages: runs of leaves on one device set
  std::vector<std::vector<int>> stage_leaves{}, stage_devices{};
  int P = 0;
  // per device: the last operation of the unit being built (data dependencies)
  std::vector<int> chain{};
  // per device: control dependencies the next operation there takes on
  std::vector<std::vector<int>> extra{};
  // forward op ids per (leaf, mb, device position) to wire the kept tensors
  std::vector<std::vector<std::vector<int>>> fwd{};
  std::vector<std::vector<int>> last_bwd{};  // per leaf: backward ops of the last micro-batch
  // per stage and micro-batch: the chain at the end of its forward / backward unit
  std::vector<std::vector<std::vector<int>>> fchain{}, bchain{};
  std::vector<std::vector<int>> first_bwd{};  // control deps
  std::vector<std::vector<int>> gradient_ops{};

  /// Reads the leaves and the schedule their first one resolves to.
  graph_scheduler(execution_graph& graph, const strategy_tree& tree,
                  const std::vector<int>& lowered, const std::vector<bool>& recompute,
                  const std::vector<double>& out, const state_bytes& bytes,
                  const device_profile& profile)
      : g(graph),
        t(tree),
        leaf_lowered(lowered),
        leaf_recompute(recompute),
        out_bytes(out),
        sb(bytes),
        prof(profile),
        leaves(t.leaves()),
        L(static_cast<int>(leaves.size())),
        sched(t.schedule_of(leaves.front())),
        nmb(sched.n_micro_batch) {}

  /// Refuses a graph that cannot be built before building it: per micro-batch and leaf, a
  /// forward and a backward on each of its devices and up to 8 collectives per group.
  void check_size() const {
    double ops = 0;
    for (int l : leaves) ops += 4.0 * static_cast<double>(t.node(l).compute.devices.size());
    ops *= nmb;
    if (ops > max_operations)
      throw plan_error("proteus: the execution graph needs about " +
                       std::to_string(static_cast<long long>(ops)) +
                       " operations, more than the 4 million one simulation may hold (use fewer "
                       "micro-batches, devices or modules)");
  }

  /// Groups the leaves into pipeline stages (runs of leaves on one device set), refusing a
  /// stage that returns to an earlier stage's devices.
  void find_stages() {
    auto devset = [&](int k) {
      auto d = t.node(leaves[static_cast<std::size_t>(k)]).compute.devices;
      std::sort(d.begin(), d.end());
      return d;
    };
    std::vector<int> stage_of(static_cast<std::size_t>(L));
    for (int k = 0; k < L; ++k) {
      if (k == 0 || devset(k) != devset(k - 1)) {
        const auto d = devset(k);
        for (const auto& e : stage_devices)
          for (int x : d)
            if (std::find(e.begin(), e.end(), x) != e.end())
              throw plan_error("strategy tree node '" + g.leaf_names[static_cast<std::size_t>(k)] +
                               "': it returns to devices an earlier pipeline stage used (device " +
                               std::to_string(x) + "); stages need disjoint device groups");
        stage_leaves.emplace_back();
        stage_devices.push_back(d);
      }
      stage_of[static_cast<std::size_t>(k)] = static_cast<int>(stage_leaves.size()) - 1;
      stage_leaves.back().push_back(k);
    }
    P = static_cast<int>(stage_leaves.size());
    g.stages = P;
  }

  /// The tree node of leaf `k`.
  [[gnu::always_inline]] [[nodiscard]] const tree_node& node_of(int k) const {
    return t.node(leaves[static_cast<std::size_t>(k)]);
  }
  /// The lowered leaf that leaf `k` runs.
  [[gnu::always_inline]] [[nodiscard]] const lowered_leaf& lowered_of(int k) const {
    return g.lowered[static_cast<std::size_t>(leaf_lowered[static_cast<std::size_t>(k)])];
  }
  /// The residual layout between the modules of leaf `k`.
  [[gnu::always_inline]] [[nodiscard]] layout residual(int k) const {
    const auto& n = node_of(k);
    return layout{n.compute.devices, n.compute.batch, n.compute.hidden,
                  n.compute.sequence_parallel ? lstate::sequence_split : lstate::replicated};
  }
  /// Layout `l` in state `s`.
  [[gnu::always_inline]] [[nodiscard]] static layout with_state(layout l, lstate s) {
    l.state = s;
    return l;
  }
  /// The layout leaf `k` leaves its output in: the vocabulary-split embedding leaves partial sums.
  [[gnu::always_inline]] [[nodiscard]] layout leaf_output(int k) const {
    const auto& n = node_of(k);
    const layout R = residual(k);
    return n.kind == module_kind::embedding && n.compute.hidden > 1 ? with_state(R, lstate::partial)
                                                                    : R;
  }
  /// Weight replicas (gradient synchronization, ZeRO gathers): the batch groups of a leaf
  /// (devices with one hidden index).
  [[nodiscard]] static std::vector<std::vector<int>> batch_groups(const tree_node& n) {
    std::vector<std::vector<int>> gs(static_cast<std::size_t>(n.compute.hidden));
    for (std::size_t k = 0; k < n.compute.devices.size(); ++k)
      gs[k % static_cast<std::size_t>(n.compute.hidden)].push_back(n.compute.devices[k]);
    return gs;
  }

  /// Adds each device's model states (weights, gradients, optimizer states after ZeRO).
  void add_model_states() {
    for (int k = 0; k < L; ++k) {
      const auto& n = node_of(k);
      const auto& lw = lowered_of(k);
      const double shards = n.compute.batch;
      const parallel::sharded_states x = parallel::zero_states(
          lw.parameters, shards, n.memory.zero, sb.weight, sb.gradient, sb.optimizer);
      for (int d : n.compute.devices)
        g.states[static_cast<std::size_t>(d)] += x.weights + x.gradients + x.optimizer;
    }
  }

  /// Sizes the per-device, per-leaf and per-stage bookkeeping of the units.
  void start_units() {
    chain.assign(static_cast<std::size_t>(g.devices), -1);
    extra.assign(static_cast<std::size_t>(g.devices), {});
    const auto ku = static_cast<std::size_t>(L);
    const auto mbu = static_cast<std::size_t>(nmb);
    fwd.assign(ku, std::vector<std::vector<int>>(mbu));
    last_bwd.assign(ku, {});
    fchain.assign(static_cast<std::size_t>(P), std::vector<std::vector<int>>(mbu));
    bchain = fchain;
    first_bwd.assign(static_cast<std::size_t>(P), std::vector<int>(mbu, -1));
    gradient_ops.assign(static_cast<std::size_t>(g.devices), {});
  }

  /// Appends `op` to the graph and returns its id.
  [[gnu::always_inline]] int add(exec_op op) {
    g.ops.push_back(std::move(op));
    return static_cast<int>(g.ops.size()) - 1;
  }
  /// The dependencies of an operation on `devs`: their chains and pending control dependencies
  /// (which it consumes), sorted and unique.
  [[gnu::always_inline]] std::vector<int> deps_of(const std::vector<int>& devs) {
    std::vector<int> d;
    for (int x : devs) {
      const auto ux = static_cast<std::size_t>(x);
      if (chain[ux] >= 0) d.push_back(chain[ux]);
      d.insert(d.end(), extra[ux].begin(), extra[ux].end());
      extra[ux].clear();
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
  }
  /// Adds one collective per group of each transfer in `xs`, chained on its devices.
  void insert(const std::vector<transfer>& xs, queue q, lower::phase ph, int leaf, int mb,
              const std::string& where) {
    for (const auto& x : xs)
      for (const auto& grp : x.groups) {
        exec_op op;
        op.name = where + " " + x.what;
        op.kind = op_kind::collective;
        op.q = q;
        op.devices = grp;
        op.leaf = leaf;
        op.micro_batch = mb;
        op.coll = {"", x.op, lower::comm_axis::tensor, x.bytes, ph, 1};
        op.deps = deps_of(grp);
        const int id = add(std::move(op));
        for (int d : grp) chain[static_cast<std::size_t>(d)] = id;
      }
  }
  /// The collectives of the Megatron segments of a block with a hidden partition (see the file
  /// comment).
  void block_collectives(int k, int mb, lower::phase ph, const std::string& who) {
    const auto& n = node_of(k);
    if (n.kind != module_kind::block || n.compute.hidden < 2) return;
    const layout R = residual(k);
    const layout rep = with_state(R, lstate::replicated), part = with_state(R, lstate::partial);
    const auto uk = static_cast<std::size_t>(k);
    for (int seg = 0; seg < 2; ++seg) {
      const std::string what =
          who + (seg == 0 ? (ph == lower::phase::forward ? " attention" : " MLP")
                          : (ph == lower::phase::forward ? " MLP" : " attention"));
      if (ph == lower::phase::forward) {
        insert(transform(R, rep, out_bytes[uk]), queue::feature, ph, k, mb, what + " input");
        insert(transform(part, R, out_bytes[uk]), queue::feature, ph, k, mb, what + " output");
      } else {  // dY of the row projection replicated; dX of the column one partial
        insert(transform(R, rep, out_bytes[uk]), queue::feature, ph, k, mb, what + " dY");
        insert(transform(part, R, out_bytes[uk]), queue::feature, ph, k, mb, what + " dX");
      }
    }
  }
  /// Adds leaf `k`'s forward, backward or recompute of micro-batch `mb` on device `d`.
  [[gnu::always_inline]] int compute(int k, int mb, op_kind kind, int d) {
    const auto& lw = lowered_of(k);
    exec_op op;
    const char* what = kind == op_kind::forward    ? "forward"
                       : kind == op_kind::backward ? "backward"
                                                   : "recompute";
    op.name = g.leaf_names[static_cast<std::size_t>(k)] + " " + what + " mb" + std::to_string(mb);
    op.kind = kind;
    op.devices = {d};
    op.leaf = k;
    op.micro_batch = mb;
    op.lowered = leaf_lowered[static_cast<std::size_t>(k)];
    op.seconds = kind == op_kind::backward ? lw.backward_s : lw.forward_s;
    op.deps = deps_of({d});
    const int id = add(std::move(op));
    chain[static_cast<std::size_t>(d)] = id;
    return id;
  }
  /// Under ZeRO-3 (weights sharded over a batch group): the all-gather of leaf `k`'s weights
  /// before its forward or backward.
  void gather_weights(int k, int mb, lower::phase ph, const std::string& who) {
    const auto& n = node_of(k);
    if (parallel::zero_stage{n.memory.zero}.shards_weights() && n.compute.batch > 1)
      insert({{comm::collective::all_gather, batch_groups(n), lowered_of(k).parameters * sb.weight,
               "weights all-gather"}},
             queue::feature, ph, k, mb, who);
  }

  /// Starts stage `st`'s forward of micro-batch `mb`: after what the previous stage sent, and
  /// (the in-flight limit) after the backward of mb - max_ongoing (§V-A).
  void start_forward(int st, int mb) {
    chain.assign(chain.size(), -1);
    if (st > 0)  // what the previous stage sent (its forward unit inserted the sends)
      for (int d : stage_devices[static_cast<std::size_t>(st)])
        chain[static_cast<std::size_t>(d)] =
            fchain[static_cast<std::size_t>(st - 1)][static_cast<std::size_t>(mb)]
                  [static_cast<std::size_t>(d)];
    // the in-flight limit: this forward waits for the backward of mb - max_ongoing (§V-A)
    const int k_lim = sched.max_ongoing_micro_batch;
    if (mb - k_lim >= 0) {
      const int ctl = first_bwd[static_cast<std::size_t>(st)][static_cast<std::size_t>(mb - k_lim)];
      for (int d : stage_devices[static_cast<std::size_t>(st)])
        extra[static_cast<std::size_t>(d)].push_back(ctl);
    }
  }

  /// Stage `st`'s forward unit of micro-batch `mb`: each leaf's input transformation, weight
  /// gather, forwards and block collectives, then the send to the next stage.
  void forward_unit(int st, int mb) {
    start_forward(st, mb);
    const auto& ls = stage_leaves[static_cast<std::size_t>(st)];
    for (std::size_t i = 0; i < ls.size(); ++i) {
      const int k = ls[i];
      const auto& n = node_of(k);
      const std::string who =
          g.leaf_names[static_cast<std::size_t>(k)] + " mb" + std::to_string(mb);
      if (i > 0)
        insert(transform(leaf_output(ls[i - 1]), residual(k),
                         out_bytes[static_cast<std::size_t>(ls[i - 1])]),
               queue::feature, lower::phase::forward, ls[i - 1], mb, who + " input");
      gather_weights(k, mb, lower::phase::forward, who);
      auto& f = fwd[static_cast<std::size_t>(k)][static_cast<std::size_t>(mb)];
      for (int d : n.compute.devices) f.push_back(compute(k, mb, op_kind::forward, d));
      block_collectives(k, mb, lower::phase::forward, who);
    }
    if (st + 1 < P)  // send to the next stage, from this unit's feature queue
      insert(transform(leaf_output(ls.back()),
                       residual(stage_leaves[static_cast<std::size_t>(st + 1)].front()),
                       out_bytes[static_cast<std::size_t>(ls.back())]),
             queue::feature, lower::phase::forward, ls.back(), mb,
             "mb" + std::to_string(mb) + " stage" + std::to_string(st) + "->" +
                 std::to_string(st + 1));
    fchain[static_cast<std::size_t>(st)][static_cast<std::size_t>(mb)] = chain;
  }

  /// Starts stage `st`'s backward of micro-batch `mb`: after the gradient the next stage sent
  /// and this stage's own forward of mb.
  void start_backward(int st, int mb) {
    chain.assign(chain.size(), -1);
    for (int d : stage_devices[static_cast<std::size_t>(st)]) {
      const auto ud = static_cast<std::size_t>(d);
      if (st + 1 < P)
        chain[ud] = bchain[static_cast<std::size_t>(st + 1)][static_cast<std::size_t>(mb)][ud];
      const int f = fchain[static_cast<std::size_t>(st)][static_cast<std::size_t>(mb)][ud];
      if (chain[ud] < 0)
        chain[ud] = f;
      else if (f >= 0)
        extra[ud].push_back(f);
    }
  }

  /// Memory of one leaf and micro-batch: each forward keeps its saved tensors until the
  /// recompute (which keeps the rebuilt set until the backward) or the backward frees them.
  void wire_kept(const lowered_leaf& lw, const std::vector<int>& fw, const std::vector<int>& rec,
                 const std::vector<int>& bw) {
    for (std::size_t j = 0; j < bw.size(); ++j) {
      auto& f = g.ops[static_cast<std::size_t>(fw[j])];
      f.keeps = lw.kept;
      if (!rec.empty()) {
        f.freed_by = rec[j];
        auto& r = g.ops[static_cast<std::size_t>(rec[j])];
        r.keeps = lw.recomputed;
        r.freed_by = bw[j];
      } else {
        f.freed_by = bw[j];
      }
    }
  }

  /// Gradient synchronization of leaf `k` once the last micro-batch's backwards `bw` are done:
  /// an all-reduce per batch group, or a reduce-scatter under ZeRO-1/2/3.
  void sync_gradients(int k, const std::vector<int>& bw) {
    const auto& n = node_of(k);
    const auto& lw = lowered_of(k);
    const bool z = parallel::zero_stage{n.memory.zero}.shards_optimizer();
    const double pbytes = lw.parameters * sb.gradient;
    const auto groups = batch_groups(n);
    for (const auto& grp : groups) {
      exec_op op;
      op.name = g.leaf_names[static_cast<std::size_t>(k)] +
                (z ? " gradient reduce-scatter" : " gradient all-reduce");
      op.kind = op_kind::collective;
      op.q = queue::gradient;
      op.devices = grp;
      op.leaf = k;
      op.coll = {"",
                 z ? comm::collective::reduce_scatter : comm::collective::all_reduce,
                 lower::comm_axis::tensor,
                 pbytes,
                 lower::phase::backward,
                 1};
      for (int d : grp) {
        const auto pos = static_cast<std::size_t>(
            std::find(n.compute.devices.begin(), n.compute.devices.end(), d) -
            n.compute.devices.begin());
        op.deps.push_back(bw[pos]);
      }
      const int id = add(std::move(op));
      for (int d : grp) gradient_ops[static_cast<std::size_t>(d)].push_back(id);
    }
  }

  /// Leaf `k`'s part of stage `st`'s backward unit of micro-batch `mb` (`after`: the leaf after
  /// it in the stage, -1 for the stage's last): the output gradient's transformation, weight
  /// gather, recompute, backwards, block collectives and gradient synchronization.
  void backward_leaf(int st, int mb, int k, int after) {
    const auto& n = node_of(k);
    const std::string who = g.leaf_names[static_cast<std::size_t>(k)] + " mb" + std::to_string(mb);
    if (after >= 0)  // dX of the leaf after it, into this leaf's layout
      insert(transform(residual(after), residual(k), out_bytes[static_cast<std::size_t>(k)]),
             queue::feature, lower::phase::backward, after, mb, who + " output gradient");
    gather_weights(k, mb, lower::phase::backward, who);
    const auto& fw = fwd[static_cast<std::size_t>(k)][static_cast<std::size_t>(mb)];
    const auto& lw = lowered_of(k);
    std::vector<int> rec;
    if (leaf_recompute[static_cast<std::size_t>(k)] && n.kind == module_kind::block) {
      // the recompute subgraph runs right before the backward (§V-A)
      for (int d : n.compute.devices) rec.push_back(compute(k, mb, op_kind::recompute, d));
      block_collectives(k, mb, lower::phase::forward, who + " recompute");
    }
    std::vector<int> bw;
    for (int d : n.compute.devices) bw.push_back(compute(k, mb, op_kind::backward, d));
    if (after < 0)
      first_bwd[static_cast<std::size_t>(st)][static_cast<std::size_t>(mb)] = bw.front();
    wire_kept(lw, fw, rec, bw);
    block_collectives(k, mb, lower::phase::backward, who);
    if (mb == nmb - 1) last_bwd[static_cast<std::size_t>(k)] = bw;
    // gradient synchronization once the last micro-batch's backward is done
    if (mb == nmb - 1 && n.compute.batch > 1) sync_gradients(k, bw);
  }

  /// Stage `st`'s backward unit of micro-batch `mb`: its leaves in reverse, then the input
  /// gradient back to the previous stage.
  void backward_unit(int st, int mb) {
    start_backward(st, mb);
    const auto& ls = stage_leaves[static_cast<std::size_t>(st)];
    for (auto it = ls.rbegin(); it != ls.rend(); ++it)
      backward_leaf(st, mb, *it, it != ls.rbegin() ? *(it - 1) : -1);
    if (st > 0)  // the input gradient back to the previous stage, in its layout
      insert(transform(residual(ls.front()),
                       residual(stage_leaves[static_cast<std::size_t>(st - 1)].back()),
                       out_bytes[static_cast<std::size_t>(ls.front() - 1)]),
             queue::feature, lower::phase::backward, ls.front(), mb,
             "mb" + std::to_string(mb) + " stage" + std::to_string(st) + "->" +
                 std::to_string(st - 1) + " gradient");
    bchain[static_cast<std::size_t>(st)][static_cast<std::size_t>(mb)] = chain;
  }

  /// Each stage's program, (forward?, micro-batch) per unit: the pipeline policy's (§VI-B's
  /// scheduler prefers the forward that enables a backward): with max_ongoing_micro_batch below
  /// the micro-batches, 1F1B with at most that many in flight (min(limit, P - st) forwards
  /// before the first backward); otherwise every forward first (GPipe).
  [[nodiscard]] std::vector<std::vector<std::pair<bool, int>>> programs() const {
    const int lim = sched.max_ongoing_micro_batch;
    const parallel::pipeline_parallel schedule{
        .degree = P,
        .kind = lim >= nmb ? parallel::schedule::gpipe : parallel::schedule::one_f_one_b};
    std::vector<std::vector<std::pair<bool, int>>> prog(static_cast<std::size_t>(P));
    for (int st = 0; st < P; ++st)
      for (const parallel::pipeline_unit& u : schedule.program(nmb, st, lim >= nmb ? 0 : lim))
        prog[static_cast<std::size_t>(st)].push_back({u.forward, u.micro});
    return prog;
  }

  /// Creates the units of the stages' programs `prog` in an order that respects the
  /// cross-stage dependencies (see below), refusing a schedule that deadlocks.
  void create_units(const std::vector<std::vector<std::pair<bool, int>>>& prog) {
    // HTAE serves each device's communication queues in creation order, so a unit that sends
    // to another stage is created, where the schedules allow it, only once the receiving stage
    // has created every unit its program runs before the receiving one: the transfer then sits
    // in the receiver's feature queue where its program posts it, behind that stage's earlier
    // collectives and ahead of its later ones (§VI-B: each executor's queues take operators in
    // its own schedule's order). A unit created before its receiver got there (greedy stages
    // first) would put, e.g., the gradient of micro-batch 1 ahead of micro-batch 0's
    // tensor-parallel all-reduces in the previous stage's queue, holding them until the next
    // stage's backward of micro-batch 1 ends. Where the receiving stage cannot get there first
    // (schedules whose stages wait on each other's sends, e.g. 1F1B steady states), a unit is
    // created anyway, as before.
    const auto mbu = static_cast<std::size_t>(nmb);
    std::vector<std::size_t> at(static_cast<std::size_t>(P), 0);
    std::vector<std::vector<char>> fdone(static_cast<std::size_t>(P), std::vector<char>(mbu, 0)),
        bdone = fdone;
    std::size_t left = 0;
    for (const auto& pr : prog) left += pr.size();
    // true once stage `st`'s program has created every unit before (is_fwd, mb)
    auto reached = [&](int st, bool is_fwd, int mb) {
      const auto& pr = prog[static_cast<std::size_t>(st)];
      const std::size_t i = at[static_cast<std::size_t>(st)];
      return i >= pr.size() || (pr[i].first == is_fwd && pr[i].second == mb) ||
             (is_fwd ? fdone : bdone)[static_cast<std::size_t>(st)][static_cast<std::size_t>(mb)];
    };
    bool strict = true;
    while (left > 0) {
      bool progress = false;
      for (int st = 0; st < P; ++st) {
        auto& i = at[static_cast<std::size_t>(st)];
        while (i < prog[static_cast<std::size_t>(st)].size()) {
          const auto [is_fwd, mb] = prog[static_cast<std::size_t>(st)][i];
          const auto um = static_cast<std::size_t>(mb);
          if (is_fwd && st > 0 && !fdone[static_cast<std::size_t>(st - 1)][um]) break;
          if (!is_fwd && st + 1 < P && !bdone[static_cast<std::size_t>(st + 1)][um]) break;
          if (strict && is_fwd && st + 1 < P && !reached(st + 1, true, mb)) break;
          if (strict && !is_fwd && st > 0 && !reached(st - 1, false, mb)) break;
          strict = true;
          if (is_fwd) {
            forward_unit(st, mb);
            fdone[static_cast<std::size_t>(st)][um] = 1;
          } else {
            backward_unit(st, mb);
            bdone[static_cast<std::size_t>(st)][um] = 1;
          }
          ++i;
          --left;
          progress = true;
        }
      }
      if (!progress && strict) {
        strict = false;  // no receiver can get there first: let one unit go ahead
        continue;
      }
      if (!progress)
        throw plan_error("the schedule deadlocks: max_ongoing_micro_batch is too small for " +
                         std::to_string(P) + " pipeline stages");
    }
  }

  /// The optimizer step per device, after its gradient synchronization and last backwards.
  void add_optimizer_steps() {
    for (int d = 0; d < g.devices; ++d) {
      double params = 0;
      bool used = false;
      std::vector<int> deps = gradient_ops[static_cast<std::size_t>(d)];
      for (int k = 0; k < L; ++k) {
        const auto& n = node_of(k);
        const auto& devs = n.compute.devices;
        const auto it = std::find(devs.begin(), devs.end(), d);
        if (it == devs.end()) continue;
        used = true;
        const auto& lw = lowered_of(k);
        params += lw.parameters /
                  (parallel::zero_stage{n.memory.zero}.shards_optimizer() ? n.compute.batch : 1);
        deps.push_back(
            last_bwd[static_cast<std::size_t>(k)][static_cast<std::size_t>(it - devs.begin())]);
      }
      if (!used) continue;
      exec_op op;
      op.name = "optimizer step";
      op.kind = op_kind::optimizer;
      op.devices = {d};
      op.seconds = prof.queued(prof.copy).time(sb.update * params);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      op.deps = std::move(deps);
      add(std::move(op));
    }
  }

  /// ZeRO-1/2's all-gather of the updated weights over each batch group, after the optimizer
  /// steps.
  void add_weight_gathers() {
    std::vector<int> opt_of(static_cast<std::size_t>(g.devices), -1);
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      if (g.ops[i].kind == op_kind::optimizer)
        opt_of[static_cast<std::size_t>(g.ops[i].devices.front())] = static_cast<int>(i);
    for (int k = 0; k < L; ++k) {
      const auto& n = node_of(k);
      if (!parallel::zero_stage{n.memory.zero}.gathers_updated_weights() || n.compute.batch < 2)
        continue;
      const auto& lw = lowered_of(k);
      for (const auto& grp : batch_groups(n)) {
        exec_op op;
        op.name = g.leaf_names[static_cast<std::size_t>(k)] + " weights all-gather";
        op.kind = op_kind::collective;
        op.q = queue::gradient;
        op.devices = grp;
        op.leaf = k;
        op.coll = {"",
                   comm::collective::all_gather,
                   lower::comm_axis::tensor,
                   lw.parameters * sb.weight,
                   lower::phase::backward,
                   1};
        for (int d : grp) op.deps.push_back(opt_of[static_cast<std::size_t>(d)]);
        add(std::move(op));
      }
    }
  }
};

/// The part of the compiler that every model shares: stages, layouts, transformations,
/// micro-batch programs, gradient synchronization and the optimizer step. `g` holds the
/// lowered leaves; `out_bytes[k]` is leaf k's output activation for one micro-batch of the
/// whole model.
inline execution_graph schedule_graph(execution_graph g, const strategy_tree& t,
                                      const std::vector<int>& leaf_lowered,
                                      const std::vector<bool>& leaf_recompute,
                                      const std::vector<double>& out_bytes, const state_bytes& sb,
                                      const device_profile& prof) {
  graph_scheduler s(g, t, leaf_lowered, leaf_recompute, out_bytes, sb, prof);
  s.check_size();
  s.find_stages();
  s.add_model_states();
  // ---- operations: the micro-batch units of every stage's program ----
  s.start_units();
  s.create_units(s.programs());
  // ---- optimizer step per device, then ZeRO-1/2's weight all-gather ----
  s.add_optimizer_steps();
  s.add_weight_gathers();
  return g;
}

}  // namespace detail

/// Compiles a transformer under strategy tree `t` on cluster `c` (checked first).
[[nodiscard]] inline execution_graph compile(const transformer& m, const strategy_tree& t,
                                             const cluster& c, const training& tr,
                                             const device_profile& prof) {
  using detail::layout;
  using detail::lstate;
  t.check(m, tr, c.devices());
  const auto leaves = t.leaves();
  const int L = static_cast<int>(leaves.size());
  const resolved_schedule sched = t.schedule_of(leaves.front());
  const int nmb = sched.n_micro_batch;
  const double seq = tr.sequence_or(m.sequence), act = tr.activation_bytes();
  const double B = tr.batch;
  // the activation of one micro-batch of the whole model: B / nmb sequences
  const double full = B / nmb * seq * m.hidden * act;
  execution_graph g;
  g.devices = c.devices();
  g.n_micro_batch = nmb;
  g.states.assign(static_cast<std::size_t>(g.devices), 0.0);

  // ---- lower each leaf once per distinct shard ----
  std::map<std::tuple<int, double, int, bool, int>, int> cache;
  std::vector<int> leaf_lowered(static_cast<std::size_t>(L));
  std::vector<bool> leaf_recompute(static_cast<std::size_t>(L));
  for (int k = 0; k < L; ++k) {
    const tree_node& n = t.node(leaves[static_cast<std::size_t>(k)]);
    g.leaf_names.push_back(n.name);
    const resolved_schedule s = t.schedule_of(leaves[static_cast<std::size_t>(k)]);
    leaf_recompute[static_cast<std::size_t>(k)] = s.recomputation;
    const double b = B / n.compute.batch / nmb;
    const lower::shard x{b,
                         seq,
                         seq,
                         n.compute.hidden,
                         n.compute.sequence_parallel,
                         1,
                         1,
                         s.recomputation ? parallel::recompute::full : parallel::recompute::none};
    const auto key = std::tuple{static_cast<int>(n.kind), b, x.tp, x.sp, s.recomputation ? 1 : 0};
    if (auto it = cache.find(key); it != cache.end()) {
      leaf_lowered[static_cast<std::size_t>(k)] = it->second;
      continue;
    }
    lowered_leaf lw;
    lw.kind = n.kind;
    lw.shard = x;
    const analytic::layer_compute lc = analytic::lower_layer(m, prof, tr, x);
    detail::collector f{&lw.forward}, bw{&lw.backward};
    const double tp = n.compute.hidden;
    switch (n.kind) {
      case module_kind::embedding:
        lower::embedding(m, x, tr, lower::phase::forward, f);
        lower::embedding(m, x, tr, lower::phase::backward, bw);
        lw.forward_s = lc.embedding_forward.gpu;
        lw.backward_s = lc.embedding_backward.gpu;
        lw.parameters = m.embedding_parameters() / tp;
        break;
      case module_kind::head:
        lower::head(m, x, tr, lower::phase::forward, f);
        lower::head(m, x, tr, lower::phase::backward, bw);
        lw.forward_s = lc.head_forward.gpu;
        lw.backward_s = lc.head_backward.gpu;
        // a tied projection on a separate stage keeps its own copy of the embedding matrix
        lw.parameters = (m.head_parameters() +
                         (m.tied && t.node(leaves.front()).compute.devices != n.compute.devices
                              ? static_cast<double>(m.vocabulary) * m.hidden
                              : 0.0)) /
                        tp;
        break;
      case module_kind::block:
      case module_kind::cnn_layer:
        lower::layer(m, x, tr, lower::phase::forward, f);
        lower::layer(m, x, tr, lower::phase::backward, bw);
        lw.forward_s = lc.forward.gpu;
        lw.backward_s = lc.backward.gpu;
        lw.parameters = m.layer_parameters() / tp;
        break;
    }
    lw.kept = f.kept;
    if (s.recomputation && n.kind == module_kind::block) {
      lower::shard y = x;
      y.recompute = parallel::recompute::none;
      // what the recompute rebuilds and the backward frees: the layer's full saved set
      double rebuilt = 0;
      lower::layer(m, y, tr, lower::phase::forward,
                   lower::on_save{[&](const auto& st) { rebuilt += st.bytes; }});
      lw.recomputed = rebuilt;
    }
    g.lowered.push_back(std::move(lw));
    const int id = static_cast<int>(g.lowered.size()) - 1;
    cache[key] = id;
    leaf_lowered[static_cast<std::size_t>(k)] = id;
  }

  std::vector<double> out_bytes(static_cast<std::size_t>(L), full);
  return detail::schedule_graph(
      std::move(g), t, leaf_lowered, leaf_recompute, out_bytes,
      {tr.weight_bytes(), tr.gradient_bytes(), tr.optimizer_bytes(), tr.update_bytes()}, prof);
}

/// How a CNN trains: samples per iteration and the arithmetic type (fp32: TF32 convolutions where
/// the device has them; bf16/fp16: autocast). SGD with momentum, as ParaDL and Proteus train
/// them.
struct cnn_setup {
  int batch = 32;
  dtype precision = dtype::fp32;
};

/// Compiles a CNN (`model<N>::view()`) under strategy tree `t`: each leaf is one layer,
/// lowered by `lower::cnn_layer` for its batch part of one micro-batch; the loss's softmax rides
/// with the last layer (as `analytic::cnn_layer_times`).
[[nodiscard]] inline execution_graph compile(std::span<const layer> layers, const strategy_tree& t,
                                             const cluster& c, const cnn_setup& su,
                                             const device_profile& prof) {
  t.check_cnn(static_cast<int>(layers.size()), su.batch, c.devices());
  const auto leaves = t.leaves();
  const int L = static_cast<int>(leaves.size());
  const int nmb = t.schedule_of(leaves.front()).n_micro_batch;
  const bool autocast = su.precision != dtype::fp32;
  const double act = autocast ? 2.0 : 4.0, B = su.batch;
  const device_profile q = prof.queued();
  const gemm_model& gm = q.gemm(su.precision);
  execution_graph g;
  g.devices = c.devices();
  g.n_micro_batch = nmb;
  g.states.assign(static_cast<std::size_t>(g.devices), 0.0);
  std::vector<int> leaf_lowered(static_cast<std::size_t>(L));
  std::vector<bool> leaf_recompute(static_cast<std::size_t>(L), false);
  std::vector<double> out_bytes(static_cast<std::size_t>(L));
  struct priced {
    std::vector<lower::kernel_op>* kernels;
    const device_profile& q;
    const gemm_model& g;
    double t = 0, kept = 0;
    void kernel(const lower::kernel_op& k) {
      kernels->push_back(k);
      t += lower::gpu_time(k, q, g, false);
    }
    void save(const lower::saved_tensor& s) {
      if (s.kind != lower::keep_kind::graph) kept += s.bytes;
    }
  };
  for (int k = 0; k < L; ++k) {
    const tree_node& n = t.node(leaves[static_cast<std::size_t>(k)]);
    const auto i = static_cast<std::size_t>(n.index);
    g.leaf_names.push_back(n.name);
    const double N = B / n.compute.batch / nmb;
    lowered_leaf lw;
    lw.kind = n.kind;
    lw.shard.b = N;
    priced f{&lw.forward, q, gm}, b{&lw.backward, q, gm};
    lower::cnn_layer(layers, i, N, autocast, lower::phase::forward, f);
    lower::cnn_layer(layers, i, N, autocast, lower::phase::backward, b);
    if (i + 1 == layers.size()) f.t += q.softmax.time(4 * N * layers.back().y() * 4);
    lw.forward_s = f.t;
    lw.backward_s = b.t;
    lw.kept = f.kept;
    lw.parameters = layers[i].params;
    g.lowered.push_back(std::move(lw));
    leaf_lowered[static_cast<std::size_t>(k)] = static_cast<int>(g.lowered.size()) - 1;
    out_bytes[static_cast<std::size_t>(k)] = B / nmb * layers[i].y() * act;
  }
  // SGD with momentum on fp32 parameters: weight, gradient, momentum; the step reads the
  // gradient and reads and writes weight and momentum (20 B per parameter)
  return detail::schedule_graph(std::move(g), t, leaf_lowered, leaf_recompute, out_bytes,
                                {4, 4, 4, 20}, prof);
}

}  // namespace strata::proteus
