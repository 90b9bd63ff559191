#pragma once
/// @file proteus/tree.hpp
/// @brief Proteus's strategy tree (Duan et al. §IV): the model's module hierarchy with a
/// computation and memory config on every leaf (how its operators' dimensions are partitioned
/// and on which devices the parts live) and a schedule config on non-leaf nodes
/// (n_micro_batch, max_ongoing_micro_batch, recomputation), propagated top-down (§VII).
///
/// A leaf is one module of the model: the token embedding, one transformer block, the head, or
/// one CNN layer. Its computation config partitions the batch and the hidden dimension (the
/// heads and the MLP's inner width: Megatron's column/row split, "op shard" in Proteus), and may
/// keep the residual stream split along the sequence over the hidden group (sequence
/// parallelism); the parts are laid out on `devices` row-major, hidden innermost: part
/// (b, t) runs on devices[b * hidden + t]. The memory config shards the leaf's weights,
/// gradients and optimizer states over its batch group (ZeRO stage 1-3). Data, tensor,
/// pipeline and ZeRO plans and their hybrids are all trees: `dp_mp_pp` builds Proteus §VIII-C's
/// DP x MP x PP(n_micro_batch) family, `from_nd` a Megatron-style `parallel::nd` plan, and
/// `add_leaf` / `add_node` anything else.
///
/// `check` names the node and the mistake: a partition that does not divide, devices outside
/// the cluster or listed twice, sibling device groups that overlap without being equal (a
/// subgraph either shares all of a sibling's devices or none, §V-A), a schedule that does not
/// divide the batch. `static_tree` is the same check at compile time for trees that are types.
/// @code
/// auto t = strata::proteus::dp_mp_pp(strata::zoo::gpt2_124m(), {.dp = 4, .mp = 2, .pp = 1});
/// t.check(strata::zoo::gpt2_124m(), {.batch = 8}, 8);
/// @endcode

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/error.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/training.hpp"

namespace strata::proteus {

/// What a leaf computes.
enum class module_kind { embedding, block, head, cnn_layer };

/// Computation config of a leaf (§IV-B): the degree of each partitioned dimension and the map
/// of the parts to devices.
struct compute_config {
  int batch = 1;                   ///< sequences (samples) split over this many parts
  int hidden = 1;                  ///< heads / MLP width / vocabulary split (op shard)
  bool sequence_parallel = false;  ///< residual stream split along the sequence over `hidden`
  std::vector<int> devices{};      ///< batch x hidden devices, hidden innermost
  [[nodiscard]] int parts() const { return batch * hidden; }
};

/// Memory config of a leaf (§IV-B): where its model states live. `zero` = 0 keeps a full copy
/// per batch part; 1 shards optimizer states, 2 also gradients, 3 also weights over the batch
/// group (Rajbhandari et al.'s stages, which Proteus expresses as memory configs).
struct memory_config {
  int zero = 0;
};

/// Schedule config of a non-leaf node (§IV-B); 0 / unset means inherited from the parent.
struct schedule_config {
  int n_micro_batch = 0;
  int max_ongoing_micro_batch = 0;
  std::optional<bool> recomputation{};
};

/// One node: a leaf (a module, with compute and memory configs) or a subgraph (children and a
/// schedule config).
struct tree_node {
  std::string name;
  int parent = -1;
  std::vector<int> children{};
  bool leaf = false;
  module_kind kind = module_kind::block;
  int index = 0;  ///< block or CNN layer index
  compute_config compute{};
  memory_config memory{};
  schedule_config schedule{};
};

/// The schedule a leaf runs under after propagation.
struct resolved_schedule {
  int n_micro_batch = 1;
  int max_ongoing_micro_batch = 1;
  bool recomputation = false;
};

/// A strategy tree. Node 0 is the root.
class strategy_tree {
 public:
  explicit strategy_tree(std::string root_name = "model", schedule_config root = {}) {
    nodes_.push_back({std::move(root_name), -1, {}, false, module_kind::block, 0, {}, {}, root});
  }

  /// A subgraph under `parent`.
  int add_node(int parent, std::string name, schedule_config s = {}) {
    check_parent(parent, name);
    nodes_.push_back({std::move(name), parent, {}, false, module_kind::block, 0, {}, {}, s});
    const int id = static_cast<int>(nodes_.size()) - 1;
    nodes_[static_cast<std::size_t>(parent)].children.push_back(id);
    return id;
  }
  /// A module under `parent`.
  int add_leaf(int parent, std::string name, module_kind kind, int index, compute_config c,
               memory_config mem = {}) {
    check_parent(parent, name);
    nodes_.push_back({std::move(name), parent, {}, true, kind, index, std::move(c), mem, {}});
    const int id = static_cast<int>(nodes_.size()) - 1;
    nodes_[static_cast<std::size_t>(parent)].children.push_back(id);
    return id;
  }

  [[nodiscard]] const std::vector<tree_node>& nodes() const { return nodes_; }
  [[nodiscard]] const tree_node& node(int i) const {
    return nodes_.at(static_cast<std::size_t>(i));
  }
  tree_node& node(int i) { return nodes_.at(static_cast<std::size_t>(i)); }

  /// The leaves in model order (depth first, children in order).
  [[nodiscard]] std::vector<int> leaves() const {
    std::vector<int> out, stack{0};
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      const auto& n = nodes_[static_cast<std::size_t>(i)];
      if (n.leaf) out.push_back(i);
      for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) stack.push_back(*it);
    }
    return out;
  }

  /// Schedule configs propagated top-down (§VII, "inherited from its parent node unless
  /// explicitly defined"); the root's defaults are one micro-batch, as many in flight,
  /// no recomputation.
  [[nodiscard]] resolved_schedule schedule_of(int i) const {
    resolved_schedule r;
    std::vector<int> path;
    for (int k = i; k >= 0; k = nodes_[static_cast<std::size_t>(k)].parent) path.push_back(k);
    bool max_set = false;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const auto& s = nodes_[static_cast<std::size_t>(*it)].schedule;
      if (s.n_micro_batch > 0) r.n_micro_batch = s.n_micro_batch;
      if (s.max_ongoing_micro_batch > 0) {
        r.max_ongoing_micro_batch = s.max_ongoing_micro_batch;
        max_set = true;
      }
      if (s.recomputation) r.recomputation = *s.recomputation;
    }
    if (!max_set) r.max_ongoing_micro_batch = r.n_micro_batch;
    return r;
  }

  /// DevGroup of a node (§V-A): the union of its leaves' devices, sorted.
  [[nodiscard]] std::vector<int> devgroup(int i) const {
    const auto& n = nodes_.at(static_cast<std::size_t>(i));
    std::vector<int> out;
    if (n.leaf) {
      out = n.compute.devices;
    } else {
      for (int c : n.children) {
        auto d = devgroup(c);
        out.insert(out.end(), d.begin(), d.end());
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  /// Every device the tree uses.
  [[nodiscard]] int device_count() const { return static_cast<int>(devgroup(0).size()); }

  /// Checks the tree against a transformer, its training and a cluster of `devices` devices.
  void check(const transformer& m, const training& tr, int devices) const {
    m.check_lowered();
    // its compiler prices one kind of block (`compile.hpp`)
    if (m.dense_layers > 0 || m.mla())
      throw plan_error(
          "strategy tree: Proteus's compiler prices one kind of block with multi-head (or "
          "grouped-query) attention; dense first layers and latent attention (DeepSeek's) need "
          "a parallel plan (\"strategy\")");
    tr.check_transformer();
    check_structure(devices);
    // every module exactly once, in model order
    const auto ls = leaves();
    const std::size_t expected = static_cast<std::size_t>(m.layers) + 2;
    if (ls.size() != expected)
      throw plan_error("strategy tree: " + std::to_string(ls.size()) + " leaves for a model of " +
                       std::to_string(expected) +
                       " modules (the embedding, each block, the head): every module needs "
                       "exactly one leaf");
    const int seq = tr.sequence_or(m.sequence);
    for (std::size_t k = 0; k < ls.size(); ++k) {
      const auto& n = nodes_[static_cast<std::size_t>(ls[k])];
      const std::string who = "strategy tree node '" + n.name + "'";
      const module_kind want = k == 0               ? module_kind::embedding
                               : k + 1 == ls.size() ? module_kind::head
                                                    : module_kind::block;
      if (n.kind != want || (want == module_kind::block && n.index != static_cast<int>(k) - 1))
        throw plan_error(who + ": leaves must follow the model's order (embedding, blocks 0.." +
                         std::to_string(m.layers - 1) + ", head)");
      const auto& c = n.compute;
      if (c.hidden > 1) {
        // Proteus splits the projections' output and reduction dimensions, which must divide;
        // the heads may split unevenly (GPT-2's 12 over 8 devices, Table V): the attention
        // core is then priced at the mean heads / t per device
        if (m.hidden % c.hidden != 0)
          throw plan_error(who + ": hidden partition " + std::to_string(c.hidden) +
                           " does not divide the hidden size " + std::to_string(m.hidden));
        if (static_cast<long long>(m.ffn_size()) % c.hidden != 0 ||
            static_cast<long long>(m.kv_width()) % c.hidden != 0)
          throw plan_error(who + ": hidden partition " + std::to_string(c.hidden) +
                           " does not divide the MLP width or the key/value width");
        if (c.sequence_parallel && seq % c.hidden != 0)
          throw plan_error(who +
                           ": sequence parallelism needs the hidden partition to divide "
                           "the sequence");
      }
      const resolved_schedule s = schedule_of(ls[k]);
      if (tr.batch % c.batch != 0)
        throw plan_error(who + ": batch partition " + std::to_string(c.batch) +
                         " does not divide the global batch of " + std::to_string(tr.batch));
      if ((tr.batch / c.batch) % s.n_micro_batch != 0)
        throw plan_error(who + ": n_micro_batch " + std::to_string(s.n_micro_batch) +
                         " does not divide the " + std::to_string(tr.batch / c.batch) +
                         " sequences of one batch part");
    }
  }

  /// Checks the tree against a CNN of `layers` layers (one leaf each, in order) trained with
  /// `global_batch` samples per iteration on `devices` devices.
  void check_cnn(int layers, int global_batch, int devices) const {
    check_structure(devices);
    const auto ls = leaves();
    if (static_cast<int>(ls.size()) != layers)
      throw plan_error("strategy tree: " + std::to_string(ls.size()) + " leaves for a CNN of " +
                       std::to_string(layers) + " layers: every layer needs exactly one leaf");
    for (std::size_t k = 0; k < ls.size(); ++k) {
      const auto& n = nodes_[static_cast<std::size_t>(ls[k])];
      const std::string who = "strategy tree node '" + n.name + "'";
      if (n.kind != module_kind::cnn_layer || n.index != static_cast<int>(k))
        throw plan_error(who + ": leaves must be the CNN's layers in order");
      const resolved_schedule s = schedule_of(ls[k]);
      if (global_batch % (n.compute.batch * s.n_micro_batch) != 0)
        throw plan_error(who + ": batch partition " + std::to_string(n.compute.batch) + " x " +
                         std::to_string(s.n_micro_batch) +
                         " micro-batches does not divide the global batch of " +
                         std::to_string(global_batch));
    }
  }

  /// The checks that need no model: configs, devices, overlapping groups.
  void check_structure(int devices) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const auto& n = nodes_[i];
      const std::string who = "strategy tree node '" + n.name + "'";
      if (!n.leaf && n.children.empty()) throw plan_error(who + ": a subgraph needs children");
      const auto& s = n.schedule;
      if (s.n_micro_batch < 0 || s.max_ongoing_micro_batch < 0)
        throw plan_error(who + ": n_micro_batch and max_ongoing_micro_batch must be positive");
      if (n.leaf) {
        const auto& c = n.compute;
        if (c.batch < 1 || c.hidden < 1)
          throw plan_error(who + ": every partition degree must be at least 1");
        if (static_cast<int>(c.devices.size()) != c.parts())
          throw plan_error(who + ": the partition makes " + std::to_string(c.parts()) +
                           " parts but " + std::to_string(c.devices.size()) +
                           " devices are mapped (one device per part)");
        auto d = c.devices;
        std::sort(d.begin(), d.end());
        if (std::adjacent_find(d.begin(), d.end()) != d.end())
          throw plan_error(who + ": a device is mapped twice");
        for (int x : d)
          if (x < 0 || x >= devices)
            throw plan_error(who + ": device " + std::to_string(x) + " lies outside the cluster (" +
                             std::to_string(devices) + " devices)");
        if (!parallel::zero_stage{n.memory.zero}.valid())
          throw plan_error(who + ": memory.zero must be 0, 1, 2 or 3");
        if (c.sequence_parallel && c.hidden < 2)
          throw plan_error(who + ": sequence parallelism needs a hidden partition above 1");
        if (n.kind == module_kind::cnn_layer && c.hidden > 1)
          throw plan_error(who + ": CNN layers are partitioned along the batch only");
      }
    }
    // siblings: device groups equal or disjoint. Each child's group once; equal groups are one;
    // a device in two different groups breaks the rule. Linear in the devices named (a pairwise
    // check took 575 s for 100,000 blocks, issue 39).
    for (const auto& n : nodes_) {
      if (n.leaf) continue;
      std::map<std::vector<int>, std::size_t> distinct;  // a group -> the first child with it
      std::map<int, std::size_t> owner;  // a device -> the first child whose group holds it
      for (std::size_t b = 0; b < n.children.size(); ++b) {
        const auto [it, fresh] = distinct.try_emplace(devgroup(n.children[b]), b);
        if (!fresh) continue;
        for (const int d : it->first) {
          const auto [o, first] = owner.try_emplace(d, b);
          if (!first)
            throw plan_error("strategy tree node '" + n.name + "': children '" +
                             node(n.children[o->second]).name + "' and '" +
                             node(n.children[b]).name +
                             "' share some devices but not all (device " + std::to_string(d) +
                             "): device groups at one level must be equal or disjoint");
        }
      }
    }
    auto s0 = schedule_of(0);
    for (int l : leaves()) {
      const auto s = schedule_of(l);
      if (s.max_ongoing_micro_batch > s.n_micro_batch)
        throw plan_error("strategy tree node '" + node(l).name +
                         "': max_ongoing_micro_batch exceeds n_micro_batch");
      if (s.n_micro_batch != s0.n_micro_batch)
        throw plan_error("strategy tree node '" + node(l).name +
                         "': every subgraph of one model must consume the same n_micro_batch");
    }
  }

 private:
  void check_parent(int parent, const std::string& name) const {
    if (parent < 0 || static_cast<std::size_t>(parent) >= nodes_.size())
      throw plan_error("strategy tree node '" + name + "': its parent does not exist");
    if (nodes_[static_cast<std::size_t>(parent)].leaf)
      throw plan_error("strategy tree node '" + name + "': a leaf cannot have children");
  }
  std::vector<tree_node> nodes_;
};

/// Proteus §VIII-C's DP x MP x PP(n_micro_batch) family.
struct dp_mp_pp_config {
  int dp = 1, mp = 1, pp = 1;
  int n_micro_batch = 1;
  int max_ongoing_micro_batch = 0;  ///< 0: all micro-batches (GPipe)
  bool recomputation = false;
  bool sequence_parallel = false;
  int zero = 0;
  int first_device = 0;
  /// Model parallelism innermost (an op-shard group on neighbouring devices, Megatron's
  /// layout); false puts data parallelism innermost, so each model-parallel group spans the
  /// stage's device range with stride dp.
  bool mp_innermost = true;
};

/// Devices of stage `st`, replica `d`, shard `t`: stages are contiguous device ranges (a
/// stage's subgraph owns its devices, §V-A), model parallelism innermost so an op-shard group
/// shares a node.
[[nodiscard]] inline int dp_mp_pp_device(const dp_mp_pp_config& c, int st, int d, int t) {
  return c.first_device + st * c.dp * c.mp + (c.mp_innermost ? d * c.mp + t : t * c.dp + d);
}

/// The tree of a DP x MP x PP(n) plan of a transformer: root (the schedule) -> one subgraph per
/// stage -> leaves; blocks split evenly over the stages (earlier stages take the remainder),
/// the embedding on the first, the head on the last.
[[nodiscard]] inline strategy_tree dp_mp_pp(const transformer& m, const dp_mp_pp_config& c) {
  if (c.dp < 1 || c.mp < 1 || c.pp < 1 || c.n_micro_batch < 1)
    throw plan_error("dp_mp_pp: every degree and n_micro_batch must be at least 1");
  if (c.pp > m.layers)
    throw plan_error("dp_mp_pp: more pipeline stages (" + std::to_string(c.pp) + ") than blocks (" +
                     std::to_string(m.layers) + ")");
  strategy_tree t(std::string(m.name),
                  {c.n_micro_batch, c.max_ongoing_micro_batch, c.recomputation});
  auto config = [&](int st) {
    compute_config cc{c.dp, c.mp, c.sequence_parallel, {}};
    for (int d = 0; d < c.dp; ++d)
      for (int k = 0; k < c.mp; ++k) cc.devices.push_back(dp_mp_pp_device(c, st, d, k));
    return cc;
  };
  int block = 0;
  for (int st = 0; st < c.pp; ++st) {
    const int node = t.add_node(0, "stage" + std::to_string(st));
    const int n = m.layers / c.pp + (st < m.layers % c.pp ? 1 : 0);
    if (st == 0) t.add_leaf(node, "embedding", module_kind::embedding, 0, config(st), {c.zero});
    for (int k = 0; k < n; ++k, ++block)
      t.add_leaf(node, "h." + std::to_string(block), module_kind::block, block, config(st),
                 {c.zero});
    if (st == c.pp - 1) t.add_leaf(node, "head", module_kind::head, 0, config(st), {c.zero});
  }
  return t;
}

/// The tree of a Megatron-style `parallel::nd` plan (tensor, pipeline, data, ZeRO,
/// recomputation; no context or expert axes), with ranks laid out as `dp_mp_pp`: the plan's
/// order must be tensor innermost and pipeline outermost.
[[nodiscard]] inline strategy_tree from_nd(const transformer& m, const parallel::nd& s,
                                           const training& tr) {
  using parallel::axis;
  if (s.context.degree != 1 || s.expert.degree != 1)
    throw plan_error("from_nd: the strategy tree has no context or expert axis yet");
  if (s.pipeline.virtual_stages != 1)
    throw plan_error("from_nd: interleaved pipeline chunks have no strategy tree yet");
  if (s.order[0] != axis::tensor ||
      s.group_of(axis::pipeline).stride != s.tensor.degree * s.data.degree)
    throw plan_error(
        "from_nd: the plan's rank order must put the tensor axis innermost and the pipeline "
        "axis outermost (each stage a contiguous device range)");
  if (s.recomputation == parallel::recompute::selective)
    throw plan_error("from_nd: the strategy tree recomputes whole subgraphs (full), not selective");
  return dp_mp_pp(
      m, {s.data.degree, s.tensor.degree, s.pipeline.degree, s.micro_batches(tr),
          s.pipeline.kind == parallel::schedule::gpipe ? 0 : s.pipeline.degree,
          s.recomputation == parallel::recompute::full, s.tensor.sequence, s.data.zero, 0});
}

/// Data parallelism over `dp` devices for a CNN of `layers` layers: the root holds one leaf per
/// layer, each splitting the batch over devices first_device ... first_device + dp - 1.
[[nodiscard]] inline strategy_tree data_parallel_cnn(std::string name, int layers, int dp,
                                                     int n_micro_batch = 1, int first_device = 0) {
  if (dp < 1 || n_micro_batch < 1)
    throw plan_error("data_parallel_cnn: the degree and n_micro_batch must be at least 1");
  strategy_tree t(std::move(name), {n_micro_batch, 0, {}});
  compute_config cc{dp, 1, false, {}};
  for (int d = 0; d < dp; ++d) cc.devices.push_back(first_device + d);
  for (int i = 0; i < layers; ++i)
    t.add_leaf(0, "layer" + std::to_string(i), module_kind::cnn_layer, i, cc);
  return t;
}

// ---- trees as types: the same rules at compile time ---------------------------------------

/// A stage of a type-level DP x MP tree: devices [First, First + DP x MP).
template <int First, int DP, int MP>
struct stage {
  static constexpr int first = First, dp = DP, mp = MP, size = DP * MP;
  static_assert(DP >= 1 && MP >= 1, "proteus::stage: every partition degree must be at least 1");
  static_assert(First >= 0, "proteus::stage: device ids start at 0");
};

/// A pipeline of stages over a cluster of `Devices` devices with `Layers` blocks, `Heads`
/// attention heads, global batch `Batch` and `Micro` micro-batches; a violated rule is a
/// compile error naming it.
template <int Devices, int Layers, int Heads, int Batch, int Micro, class... Stages>
struct static_tree {
  static constexpr int stages = sizeof...(Stages);
  static_assert(stages >= 1, "proteus::static_tree: a tree needs at least one stage");
  static_assert(stages <= Layers,
                "proteus::static_tree: more pipeline stages than blocks to place on them");
  static_assert(((Stages::first + Stages::size <= Devices) && ...),
                "proteus::static_tree: a stage maps devices outside the cluster");
  static_assert(((Heads % Stages::mp == 0) && ...),
                "proteus::static_tree: a hidden (op-shard) partition does not divide the heads");
  static_assert(((Batch % (Stages::dp * Micro) == 0) && ...),
                "proteus::static_tree: batch partition x n_micro_batch does not divide the "
                "global batch");
  static constexpr bool disjoint() {
    constexpr std::array<int, stages> f{Stages::first...}, n{Stages::size...};
    for (int a = 0; a < stages; ++a)
      for (int b = a + 1; b < stages; ++b) {
        const bool apart = f[static_cast<std::size_t>(a)] + n[static_cast<std::size_t>(a)] <=
                               f[static_cast<std::size_t>(b)] ||
                           f[static_cast<std::size_t>(b)] + n[static_cast<std::size_t>(b)] <=
                               f[static_cast<std::size_t>(a)];
        if (!apart) return false;
      }
    return true;
  }
  static_assert(disjoint(),
                "proteus::static_tree: two stages overlap: pipeline stages need disjoint "
                "device groups");

  /// The run-time tree of this type (blocks split evenly, earlier stages take the remainder).
  [[nodiscard]] static strategy_tree make(const transformer& m) {
    if (m.layers != Layers || m.heads != Heads)
      throw plan_error("proteus::static_tree: the model's blocks or heads differ from the type's");
    strategy_tree t(std::string(m.name), {Micro, 0, {}});
    constexpr std::array<int, stages> f{Stages::first...}, dp{Stages::dp...}, mp{Stages::mp...};
    int block = 0;
    for (int st = 0; st < stages; ++st) {
      const auto u = static_cast<std::size_t>(st);
      compute_config cc{dp[u], mp[u], false, {}};
      for (int k = 0; k < dp[u] * mp[u]; ++k) cc.devices.push_back(f[u] + k);
      const int node = t.add_node(0, "stage" + std::to_string(st));
      const int n = Layers / stages + (st < Layers % stages ? 1 : 0);
      if (st == 0) t.add_leaf(node, "embedding", module_kind::embedding, 0, cc);
      for (int k = 0; k < n; ++k, ++block)
        t.add_leaf(node, "h." + std::to_string(block), module_kind::block, block, cc);
      if (st == stages - 1) t.add_leaf(node, "head", module_kind::head, 0, cc);
    }
    return t;
  }
};

}  // namespace strata::proteus
