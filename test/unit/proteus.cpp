// Proteus (Duan et al.): strategy tree checks and propagation (§IV, §VII), the compiler's
// strategy transformations (§V), agreement with the Megatron-style `parallel::nd` lowering, and
// HTAE's queues, bandwidth sharing and out-of-memory verdicts (§VI).
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/analytic/transformer.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/proteus_tree.hpp"
#include "strata/model/transformer_zoo.hpp"
#include "strata/model/zoo.hpp"
#include "strata/proteus/htae.hpp"

namespace unit_proteus {

using namespace strata;
using Catch::Matchers::Contains;

namespace {
training fp32(int batch) {
  training t{.batch = batch, .precision = precision_mode::fp32};
  t.flash_attention = false;
  return t;
}
}  // namespace

TEST_CASE("proteus tree: schedule configs propagate top-down unless a node sets its own",
          "[proteus]") {
  proteus::strategy_tree t("m", {.n_micro_batch = 4, .max_ongoing_micro_batch = 2});
  const int a = t.add_node(0, "a", {.recomputation = true});
  const int b = t.add_node(a, "b", {.max_ongoing_micro_batch = 3});
  const int leaf = t.add_leaf(b, "h.0", proteus::module_kind::block, 0, {1, 1, false, {0}});
  const auto s = t.schedule_of(leaf);
  CHECK(s.n_micro_batch == 4);            // from the root
  CHECK(s.max_ongoing_micro_batch == 3);  // b's own
  CHECK(s.recomputation);                 // from a
  CHECK(t.devgroup(0) == std::vector<int>{0});
}

TEST_CASE("proteus tree: a bad tree names the node and the mistake", "[proteus]") {
  const auto m = zoo::gpt2_124m();
  const auto tr = fp32(8);
  // hidden 5 does not divide GPT-2's 768
  CHECK_THROWS_WITH(proteus::dp_mp_pp(m, {.dp = 1, .mp = 5}).check(m, tr, 8),
                    Contains("node 'embedding'") && Contains("does not divide the hidden size"));
  // 16 devices on the 8 of HC1
  CHECK_THROWS_WITH(proteus::dp_mp_pp(m, {.dp = 16}).check(m, tr, 8),
                    Contains("device 8 lies outside the cluster"));
  // batch 3 does not divide 8
  CHECK_THROWS_WITH(proteus::dp_mp_pp(m, {.dp = 3}).check(m, tr, 8),
                    Contains("batch partition 3 does not divide the global batch of 8"));
  // 8 / 2 = 4 sequences per part, 3 micro-batches do not divide them
  CHECK_THROWS_WITH(proteus::dp_mp_pp(m, {.dp = 2, .n_micro_batch = 3}).check(m, tr, 8),
                    Contains("n_micro_batch 3 does not divide the 4 sequences"));
  // two stages that share device 3 but not all devices
  proteus::strategy_tree t;
  const int s0 = t.add_node(0, "stage0"), s1 = t.add_node(0, "stage1");
  t.add_leaf(s0, "embedding", proteus::module_kind::embedding, 0, {1, 4, false, {0, 1, 2, 3}});
  t.add_leaf(s1, "head", proteus::module_kind::head, 0, {1, 4, false, {3, 4, 5, 6}});
  CHECK_THROWS_WITH(t.check_structure(8), Contains("node 'model': children 'stage0' and "
                                                   "'stage1' share some devices but not all"));
  // a partition whose parts and devices differ
  proteus::strategy_tree u;
  u.add_leaf(0, "h.0", proteus::module_kind::block, 0, {2, 2, false, {0, 1, 2}});
  CHECK_THROWS_WITH(u.check_structure(8), Contains("node 'h.0': the partition makes 4 parts "
                                                   "but 3 devices are mapped"));
  // a graph too large to build is refused before it is built: 2^20 micro-batches x 14 leaves
  const auto big = proteus::dp_mp_pp(m, {.n_micro_batch = 1 << 20});
  CHECK_THROWS_WITH(
      proteus::compile(m, big, presets::hc1(), fp32(1 << 20), datasheet_profile(presets::titan_xp)),
      Contains("the execution graph needs about 58720256 operations"));
}

TEST_CASE("proteus compiler: strategy transformations by pattern matching", "[proteus]") {
  using proteus::detail::layout;
  using proteus::detail::lstate;
  const double S = 1000;  // bytes of the whole activation
  // 2 batch parts x 2 hidden: partial sums -> replicated is an all-reduce per hidden group of
  // one batch part (S / 2 each)
  const layout p{{0, 1, 2, 3}, 2, 2, lstate::partial}, r{{0, 1, 2, 3}, 2, 2, lstate::replicated};
  auto x = proteus::detail::transform(p, r, S);
  REQUIRE(x.size() == 1);
  CHECK(x[0].op == comm::collective::all_reduce);
  CHECK(x[0].groups == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  CHECK(x[0].bytes == 500);
  // sequence-split -> replicated: all-gather; partial -> sequence-split: reduce-scatter
  const layout q{{0, 1, 2, 3}, 2, 2, lstate::sequence_split};
  CHECK(proteus::detail::transform(q, r, S)[0].op == comm::collective::all_gather);
  CHECK(proteus::detail::transform(p, q, S)[0].op == comm::collective::reduce_scatter);
  // batch 4 -> batch 2 on the same devices: devices {0,1} and {2,3} all-gather their halves
  const layout b4{{0, 1, 2, 3}, 4, 1, lstate::replicated},
      b2{{0, 1, 2, 3}, 2, 2, lstate::replicated};
  x = proteus::detail::transform(b4, b2, S);
  REQUIRE(x.size() == 1);
  CHECK(x[0].op == comm::collective::all_gather);
  CHECK(x[0].groups == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  // the reverse is a local slice: nothing moves
  CHECK(proteus::detail::transform(b2, b4, S).empty());
  // disjoint devices: a pipeline boundary; equal hidden groups scatter 1/t and all-gather
  const layout s1{{4, 5, 6, 7}, 2, 2, lstate::replicated};
  x = proteus::detail::transform(r, s1, S);
  REQUIRE(x.size() == 5);
  CHECK(x[0].op == comm::collective::send_recv);
  CHECK(x[0].groups == std::vector<std::vector<int>>{{0, 4}});
  CHECK(x[0].bytes == 250);  // (S / 2 batch parts) / 2 hidden ranks
  CHECK(x[3].groups == std::vector<std::vector<int>>{{3, 7}});
  CHECK(x[4].op == comm::collective::all_gather);
  CHECK(x[4].groups == std::vector<std::vector<int>>{{4, 5}, {6, 7}});
  // sequence-split on both sides: each rank sends its slice, nobody gathers
  x = proteus::detail::transform(q, layout{{4, 5, 6, 7}, 2, 2, lstate::sequence_split}, S);
  REQUIRE(x.size() == 4);
  CHECK(x[3].op == comm::collective::send_recv);
  CHECK(x[3].bytes == 250);
}

namespace {
// The collectives of leaf `leaf`, micro-batch 0, on device 0: (operation, S, pass) -> count.
std::map<std::tuple<comm::collective, double, lower::phase>, int> collectives_on_device0(
    const proteus::execution_graph& g, int leaf) {
  std::map<std::tuple<comm::collective, double, lower::phase>, int> out;
  for (int i : g.ops_of(0)) {
    const auto& op = g.ops[static_cast<std::size_t>(i)];
    if (op.kind == proteus::op_kind::collective && op.leaf == leaf && op.micro_batch == 0)
      ++out[{op.coll.op, op.coll.bytes, op.coll.when}];
  }
  return out;
}
}  // namespace

TEST_CASE("proteus: a Megatron-style plan's tree compiles to parallel::nd's operations",
          "[proteus]") {
  const auto m = zoo::gpt2_124m();
  const auto c = presets::hc2();
  const auto tr = fp32(64);
  const auto prof = datasheet_profile(c.dev);
  for (const bool sp : {false, true}) {
    // t = 4 (tensor innermost), d = 2, p = 2 (outermost): 16 GPUs, 64 / 2 = 32 sequences per
    // replica in 8 micro-batches of 4
    const parallel::nd s{
        .tensor = {.degree = 4, .sequence = sp},
        .pipeline = {.degree = 2, .kind = parallel::schedule::one_f_one_b},
        .data = {.degree = 2},
        .micro_batch = 4,
        .order = {parallel::axis::tensor, parallel::axis::context, parallel::axis::expert,
                  parallel::axis::data, parallel::axis::pipeline}};
    s.check(m, tr, 16);
    const auto tree = proteus::from_nd(m, s, tr);
    const auto g = proteus::compile(m, tree, c, tr, prof);
    CHECK(g.stages == 2);
    CHECK(g.n_micro_batch == 8);
    // block h.0 (leaf 1): the same kernels as lower::layer on nd's shard
    const lower::shard x = lower::shard_of(m, s, tr);
    std::vector<lower::kernel_op> fw, bw;
    struct collect {
      std::vector<lower::kernel_op>& v;
      void kernel(const lower::kernel_op& k) { v.push_back(k); }
    };
    lower::layer(m, x, tr, lower::phase::forward, collect{fw});
    lower::layer(m, x, tr, lower::phase::backward, collect{bw});
    int checked = 0;
    for (const auto& op : g.ops)
      if (op.kind == proteus::op_kind::forward && op.leaf == 1 && op.devices.front() == 0 &&
          op.micro_batch == 0) {
        const auto& l = g.lowered[static_cast<std::size_t>(op.lowered)];
        REQUIRE(l.forward.size() == fw.size());
        REQUIRE(l.backward.size() == bw.size());
        for (std::size_t i = 0; i < fw.size(); ++i) {
          CHECK(l.forward[i].what == fw[i].what);
          CHECK(l.forward[i].flops() == fw[i].flops());
          CHECK(l.forward[i].bytes == fw[i].bytes);
        }
        for (std::size_t i = 0; i < bw.size(); ++i) CHECK(l.backward[i].flops() == bw[i].flops());
        // and the closed form's layer time is the sum the compiler priced
        const auto lc = analytic::lower_layer(m, prof, tr, x);
        CHECK(op.seconds == lc.forward.gpu);
        ++checked;
      }
    CHECK(checked == 1);
    // the collectives the compiler inferred from layouts are lower::layer_collectives' list
    std::map<std::tuple<comm::collective, double, lower::phase>, int> want;
    struct count {
      std::map<std::tuple<comm::collective, double, lower::phase>, int>& m;
      void collective(const lower::collective_op& c) { ++m[{c.op, c.bytes, c.when}]; }
    };
    lower::layer_collectives(m, x, tr, lower::phase::forward, count{want});
    lower::layer_collectives(m, x, tr, lower::phase::backward, count{want});
    CHECK(collectives_on_device0(g, 1) == want);
    // b s h = 4 x 1024 x 768 x 4 B = 12,582,912 B; no sp: 2 all-reduces per pass
    if (!sp) CHECK(want.at({comm::collective::all_reduce, 12582912.0, lower::phase::forward}) == 2);
    // the pipeline send: b s h / t per tensor rank, as analytic::iteration's p2p
    int sends = 0;
    for (const auto& op : g.ops)
      if (op.coll.op == comm::collective::send_recv && op.kind == proteus::op_kind::collective &&
          op.micro_batch == 0 && op.devices.front() == 0) {
        CHECK(op.coll.bytes == 12582912.0 / 4);
        ++sends;
      }
    CHECK(sends == 1);
  }
}

TEST_CASE("proteus HTAE: one GPU runs its compute queue back to back", "[proteus]") {
  const auto m = zoo::gpt2_124m();
  const auto c = presets::hc1();
  const auto tr = fp32(2);
  const auto g = proteus::compile(m, proteus::dp_mp_pp(m, {}), c, tr, datasheet_profile(c.dev));
  double sum = 0;
  for (const auto& op : g.ops) sum += op.seconds;
  const auto run = proteus::execute(g, c);
  CHECK(run.iteration == Approx(sum).epsilon(1e-12));
  // 14 leaves forward and backward, one optimizer step, nothing to communicate
  CHECK(g.ops.size() == 29);
  CHECK_FALSE(run.oom);
}

TEST_CASE("proteus HTAE: gradient groups crossing one NIC share it fairly", "[proteus]") {
  // HC2: node uplink 100 Gb/s = 12.5 GB/s, 10 us start-up. An all-reduce of S = 1.25 GB over
  // {0, 8} puts 2 (p - 1) / p S = S on the wire of each node: alone S / 12.5 GB/s = 0.1 s,
  // plus 2 (p - 1) = 2 start-ups. Two such groups ({0, 8} and {1, 9}) at once share node 0's
  // NIC: 6.25 GB/s each, 0.2 s.
  const auto c = presets::hc2();
  auto make = [](std::vector<std::vector<int>> groups) {
    proteus::execution_graph g;
    g.devices = 16;
    g.states.assign(16, 0.0);
    for (auto& grp : groups) {
      proteus::exec_op op;
      op.name = "all-reduce";
      op.kind = proteus::op_kind::collective;
      op.q = proteus::queue::gradient;
      op.devices = grp;
      op.coll = {"",     comm::collective::all_reduce, lower::comm_axis::tensor,
                 1.25e9, lower::phase::backward,       1};
      g.ops.push_back(op);
    }
    return g;
  };
  CHECK(proteus::execute(make({{0, 8}}), c).iteration == Approx(0.1 + 2 * 10e-6));
  CHECK(proteus::execute(make({{0, 8}, {1, 9}}), c).iteration == Approx(0.2 + 2 * 10e-6));
  // without sharing ("Plain") each keeps the whole link
  CHECK(proteus::execute(make({{0, 8}, {1, 9}}), c, {.bandwidth_sharing = false}).iteration ==
        Approx(0.1 + 2 * 10e-6));
  // inside a node a group has its members' NVLinks (HC2's cube-mesh, §VII's channel sum): 0-1
  // is one link, 25 GB/s each way, so the 2-GPU all-reduce (S on each rank's wire) takes
  // 1.25 GB / 25 GB/s = 0.05 s plus 2 start-ups of 5 us; 2-3 has two links, 0.025 s; the two
  // groups do not meet
  CHECK(proteus::execute(make({{0, 1}}), c).iteration == Approx(0.05 + 2 * 5e-6));
  CHECK(proteus::execute(make({{2, 3}}), c).iteration == Approx(0.025 + 2 * 5e-6));
  CHECK(proteus::execute(make({{0, 1}, {2, 3}}), c).iteration == Approx(0.05 + 2 * 5e-6));
  // a feature and a gradient all-reduce of one group at once share its channels: 0.1 s;
  // without sharing, 0.05 s each (two in one queue would run one after the other)
  auto two = make({{0, 1}, {0, 1}});
  two.ops[1].q = proteus::queue::feature;
  CHECK(proteus::execute(two, c).iteration == Approx(0.1 + 2 * 5e-6));
  CHECK(proteus::execute(two, c, {.bandwidth_sharing = false}).iteration ==
        Approx(0.05 + 2 * 5e-6));
  // the whole node rings at the port's 150 GB/s: 2 x 7/8 x 1.25 GB / 150 GB/s + 14 start-ups
  CHECK(proteus::execute(make({{0, 1, 2, 3, 4, 5, 6, 7}}), c).iteration ==
        Approx(2.0 * 7 / 8 * 1.25e9 / 150e9 + 14 * 5e-6));
}

TEST_CASE("proteus HTAE: gamma slows compute that overlaps gradient communication", "[proteus]") {
  // a 1 s compute op on device 0 and a 0.1 s all-reduce of device 0 at once: with gamma = 0.5
  // the compute runs at 1 / 1.5 for 0.1 s (0.0667 s of work), then alone.
  const auto c = presets::hc2();
  proteus::execution_graph g;
  g.devices = 16;
  g.states.assign(16, 0.0);
  proteus::exec_op comp;
  comp.name = "compute";
  comp.devices = {0};
  comp.seconds = 1;
  g.ops.push_back(comp);
  proteus::exec_op ar;
  ar.name = "all-reduce";
  ar.kind = proteus::op_kind::collective;
  ar.q = proteus::queue::gradient;
  ar.devices = {0, 8};
  ar.coll = {"",     comm::collective::all_reduce, lower::comm_axis::tensor,
             1.25e9, lower::phase::backward,       1};
  g.ops.push_back(ar);
  const auto run = proteus::execute(g, c, {.gamma = 0.5});
  // the compute runs alone during the 2 x 10 us start-ups too
  const double comm_end = 0.1 + 2 * 10e-6;
  CHECK(run.spans[0].end == Approx(comm_end + (1 - 2 * 10e-6 - 0.1 / 1.5)).epsilon(1e-9));
  // gamma per class of device pair: {0, 8} spans HC2's level 1 (InfiniBand), so its entry applies
  // and the NVLink entry does not
  CHECK(proteus::execute(g, c, {.gamma_per_level = {0.0, 0.5}}).spans[0].end ==
        Approx(run.spans[0].end).epsilon(1e-12));
  CHECK(proteus::execute(g, c, {.gamma = 0.5, .gamma_per_level = {0.5, 0.0}}).spans[0].end ==
        Approx(1.0).epsilon(1e-12));
  // the same all-reduce inside a node, {0, 1} (25 GB/s: 0.05 s + 10 us), takes the NVLink entry
  g.ops[1].devices = {0, 1};
  CHECK(proteus::execute(g, c, {.gamma_per_level = {0.5}}).spans[0].end ==
        Approx(0.05 + 2 * 5e-6 + (1 - 2 * 5e-6 - 0.05 / 1.5)).epsilon(1e-9));
  CHECK_THROWS_WITH(proteus::execute(g, c, {.gamma_per_level = {0.1, 0.1, 0.1}}),
                    Catch::Contains("3 per-level overlap factors for a cluster of 2 levels"));
  // Proteus's profiling: a backward of 110 ms overlapped against 100 ms alone gives 0.1
  CHECK(proteus::overlap_factor(0.110, 0.100) == Approx(0.1));
  CHECK_THROWS_WITH(proteus::overlap_factor(0.09, 0.1), Catch::Contains("between 1 and 101"));
}

TEST_CASE("proteus: a pipeline's transfers sit in each stage's feature queue in its own order",
          "[proteus]") {
  // HC1 2x2x2 with 2 micro-batches (GPipe): stage 0 runs F0 F1 B0 B1. Its feature queue must
  // hold micro-batch 0's tensor-parallel dX all-reduces ahead of micro-batch 1's incoming
  // gradient, which stage 1 sends only after its backward of micro-batch 1: each all-reduce
  // starts as soon as its backward ends (its 2 start-ups of 10 us after), not after that
  // transfer. The compiler once created stage 1's whole program first, queueing the transfer
  // ahead: the dX all-reduce of h.5 waited 69 ms and the iteration took 0.391 s.
  const auto m = zoo::gpt2_124m();
  const auto c = presets::hc1();
  const auto g =
      proteus::compile(m, proteus::dp_mp_pp(m, {.dp = 2, .mp = 2, .pp = 2, .n_micro_batch = 2}), c,
                       fp32(8), datasheet_profile(c.dev));
  const auto run = proteus::execute(g, c);
  auto find = [&](const std::string& name) {
    for (int i : g.ops_of(0))
      if (g.ops[static_cast<std::size_t>(i)].name == name) return i;
    FAIL("no operation " << name << " on device 0");
    return -1;
  };
  const int bw = find("h.5 backward mb0"), ar = find("h.5 mb0 MLP dX all-reduce"),
            recv = find("mb1 stage1->0 gradient pipeline send");
  CHECK(run.spans[static_cast<std::size_t>(ar)].start -
            run.spans[static_cast<std::size_t>(bw)].end <
        2 * 10e-6 + 1e-7);
  CHECK(run.spans[static_cast<std::size_t>(ar)].end <
        run.spans[static_cast<std::size_t>(recv)].start);
}

TEST_CASE("proteus HTAE: out of memory names the device and the operation", "[proteus]") {
  // GPT-2 124M in fp32 with Adam on a 12 GiB TITAN Xp: 16 B x 124.4 M = 1.99 GB of states;
  // 64 sequences per device (batch 512 over 8) keep about 64 x 0.66 GB per block of unfused
  // attention scores and activations: the forward of an early block crosses 12 GiB.
  const auto m = zoo::gpt2_124m();
  const auto c = presets::hc1();
  const auto tr = fp32(512);
  const auto g =
      proteus::compile(m, proteus::dp_mp_pp(m, {.dp = 8}), c, tr, datasheet_profile(c.dev));
  const auto run = proteus::execute(g, c);
  REQUIRE(run.oom);
  CHECK(run.oom->device == 0);
  CHECK_THAT(run.oom->op, Contains("forward mb0"));
  CHECK(run.oom->bytes > run.oom->capacity);
  // the batch of Table V (8 over 8 devices) fits
  const auto ok = proteus::execute(
      proteus::compile(m, proteus::dp_mp_pp(m, {.dp = 8}), c, fp32(8), datasheet_profile(c.dev)),
      c);
  CHECK_FALSE(ok.oom);
}

TEST_CASE("proteus: a tree as a type is checked at compile time", "[proteus]") {
  // 2 stages of 2 x 2 on 8 devices, GPT-2's 12 blocks and heads, batch 8 in 2 micro-batches
  using tree =
      proteus::static_tree<8, 12, 12, 8, 2, proteus::stage<0, 2, 2>, proteus::stage<4, 2, 2>>;
  static_assert(tree::stages == 2);
  const auto t = tree::make(zoo::gpt2_124m());
  t.check(zoo::gpt2_124m(), fp32(8), 8);
  CHECK(t.leaves().size() == 14);
  CHECK(t.devgroup(0).size() == 8);
}

TEST_CASE("proteus JSON: trees from scenarios, errors with the path or the node", "[proteus]") {
  const auto j = nlohmann::json::parse(R"({
    "transformer": "gpt2-124m", "cluster": "hc2",
    "training": {"global_batch": 64, "precision": "fp32", "flash_attention": false},
    "strategy_tree": {"name": "gpt2", "schedule": {"n_micro_batch": 2}, "children": [
      {"name": "s0", "children": [
        {"name": "embedding", "module": "embedding", "batch": 2, "hidden": 4,
         "devices": [0, 1, 2, 3, 4, 5, 6, 7]},
        {"name": "h", "module": "blocks", "first": 0, "count": 6, "batch": 2, "hidden": 4,
         "devices": [0, 1, 2, 3, 4, 5, 6, 7]}]},
      {"name": "s1", "children": [
        {"name": "h", "module": "blocks", "first": 6, "count": 6, "batch": 2, "hidden": 4,
         "devices": [8, 9, 10, 11, 12, 13, 14, 15]},
        {"name": "head", "module": "head", "batch": 2, "hidden": 4,
         "devices": [8, 9, 10, 11, 12, 13, 14, 15]}]}]}})");
  const auto s = io::parse_proteus_scenario(j);
  CHECK(s.tree.leaves().size() == 14);
  CHECK(s.tree.node(s.tree.leaves()[7]).name == "h.6");
  const auto g = proteus::compile(s.net, s.tree, s.machine, s.setup, s.profile);
  CHECK(g.stages == 2);
  const auto run = proteus::execute(g, s.machine);
  // the timeline: every one of the 16 GPUs has its three queues
  const auto trace = io::proteus_trace(g, run);
  std::map<int, std::vector<std::string>> threads;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      threads[e["pid"].get<int>()].push_back(e["args"]["name"].get<std::string>());
  CHECK(threads.size() == 16);
  CHECK(threads[9] ==
        std::vector<std::string>{"compute", "feature communication", "gradient communication"});
  int gradient_events = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == 2 && e["pid"] == 9) ++gradient_events;
  CHECK(gradient_events == 7);  // h.6 ... h.11 and the head: one all-reduce each
  const auto report = io::proteus_report_json(s, g, run);
  CHECK(report["iteration_time_s"].get<double>() == Approx(run.iteration));
  // gamma per class of device pair (HC2: NVLink, InfiniBand)
  auto per_level = j;
  per_level["gamma_per_level"] = nlohmann::json::array({0.05, 0.2});
  CHECK(io::parse_proteus_scenario(per_level).gamma_per_level == std::vector<double>{0.05, 0.2});
  per_level["gamma_per_level"] = nlohmann::json::array({0.05, 0.2, 0.1});
  CHECK_THROWS_WITH(io::parse_proteus_scenario(per_level),
                    Contains("scenario.gamma_per_level: must be an array of at most 2"));
  per_level["gamma_per_level"] = nlohmann::json::array({0.05, -1});
  CHECK_THROWS_WITH(io::parse_proteus_scenario(per_level),
                    Contains("scenario.gamma_per_level[1]: must be a number in [0, 100]"));
  // a typo in a leaf names its JSON path
  auto bad = j;
  bad["strategy_tree"]["children"][1]["children"][1]["hiden"] = 4;
  CHECK_THROWS_WITH(io::parse_proteus_scenario(bad),
                    Contains("strategy_tree.children[1].children[1].hiden: unknown field"));
  // a rule the tree breaks names the node
  bad = j;
  bad["strategy_tree"]["children"][1]["children"][1]["devices"] =
      nlohmann::json::array({7, 9, 10, 11, 12, 13, 14, 15});
  CHECK_THROWS_WITH(io::parse_proteus_scenario(bad),
                    Contains("children 's0' and 's1' share some devices but not all"));
  // "profile" reads as every scenario's (io/profile_choice.hpp): "datasheet" by default,
  // "fitted-gemm" the datasheet with the H100's GEMM efficiency, and one sentence for the rest
  auto fitted = j;
  fitted["profile"] = "fitted-gemm";
  const auto f = io::parse_proteus_scenario(fitted);
  CHECK(f.profile.bf16.efficiency == h100_fitted_gemm.efficiency);
  CHECK(io::parse_proteus_scenario(j).profile.bf16.efficiency !=
        Approx(h100_fitted_gemm.efficiency));
  fitted["profile"] = "h100";
  CHECK_THROWS_WITH(io::parse_proteus_scenario(fitted),
                    Contains("profile: no shipped H100 profile in this build"));
  fitted["profile"] = 3;
  CHECK_THROWS_WITH(io::parse_proteus_scenario(fitted),
                    Contains("profile: must be \"auto\", \"fitted-gemm\", \"datasheet\""));
}

TEST_CASE("proteus OOM: GPT-1.5B data parallelism needs ZeRO and recomputation (§VIII-B)",
          "[proteus]") {
  // Proteus's S1 for GPT-1.5B "combines memory optimization (ZeRO) and recomputation" to train
  // it data-parallel. One sequence of 1024 per GPU, fp32 with Adam: the states alone are
  // 16 B x 1.56 G = 23.2 GiB, above a TITAN Xp's 12 GiB; unfused attention keeps about
  // 0.4 GB per block, so 48 blocks also overflow a 32 GiB V100 after the states.
  const auto m = zoo::gpt2_1_5b();
  auto run = [&](const cluster& c, int zero, bool rc) {
    const int n = c.devices() >= 16 ? 16 : 8;
    return proteus::execute(
        proteus::compile(m, proteus::dp_mp_pp(m, {.dp = n, .recomputation = rc, .zero = zero}), c,
                         fp32(n), datasheet_profile(c.dev)),
        c);
  };
  const auto hc1 = presets::hc1(), hc2 = presets::hc2();
  auto plain = run(hc1, 0, false);
  REQUIRE(plain.oom);
  CHECK(plain.oom->op == "model states");
  auto zero_only = run(hc1, 3, false);
  REQUIRE(zero_only.oom);
  CHECK_THAT(zero_only.oom->op, Contains("forward mb0"));
  CHECK_FALSE(run(hc1, 3, true).oom);  // Proteus's S1
  auto plain2 = run(hc2, 0, false);
  REQUIRE(plain2.oom);
  CHECK_THAT(plain2.oom->op, Contains("forward mb0"));
  CHECK_FALSE(run(hc2, 0, true).oom);
  CHECK_FALSE(run(hc2, 3, true).oom);
}

TEST_CASE("proteus schedule: the in-flight limit and recomputation lower the peak memory",
          "[proteus]") {
  // GPT-2 on HC2, 8 x 1 x 2 (8): GPipe keeps 8 micro-batches of activations on stage 0 at once,
  // max_ongoing_micro_batch = 2 at most 2; recomputation keeps only each block's input
  const auto m = zoo::gpt2_124m();
  const auto c = presets::hc2();
  const auto prof = datasheet_profile(c.dev);
  auto peak0 = [&](proteus::dp_mp_pp_config cfg) {
    const auto run =
        proteus::execute(proteus::compile(m, proteus::dp_mp_pp(m, cfg), c, fp32(64), prof), c);
    return run.peak_memory[0];
  };
  const double gpipe = peak0({.dp = 8, .pp = 2, .n_micro_batch = 8});
  const double limited =
      peak0({.dp = 8, .pp = 2, .n_micro_batch = 8, .max_ongoing_micro_batch = 2});
  const double rc = peak0({.dp = 8, .pp = 2, .n_micro_batch = 8, .recomputation = true});
  CHECK(rc < gpipe);
  // each micro-batch in flight keeps one micro-batch of stage 0's activations (0.99 GB here):
  // one in flight keeps one less than two, GPipe's eight keep six more
  const double one = peak0({.dp = 8, .pp = 2, .n_micro_batch = 8, .max_ongoing_micro_batch = 1});
  const double per_micro_batch = limited - one;
  CHECK(per_micro_batch == Approx(0.9917e9).epsilon(1e-3));
  CHECK(gpipe - limited == Approx(6 * per_micro_batch).epsilon(1e-9));
  // a limit of p = 2 stages or more is 1F1B, whose warm-up never has more than p - stage in
  // flight: 3 keeps what 2 keeps
  CHECK(peak0({.dp = 8, .pp = 2, .n_micro_batch = 8, .max_ongoing_micro_batch = 3}) == limited);
  // the forward of micro-batch 2 on stage 0 waits for the backward of micro-batch 0 there
  const auto g = proteus::compile(
      m, proteus::dp_mp_pp(m, {.dp = 8, .pp = 2, .n_micro_batch = 8, .max_ongoing_micro_batch = 2}),
      c, fp32(64), prof);
  int f2 = -1, b0 = -1;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.devices.front() != 0) continue;
    if (op.name == "embedding forward mb2") f2 = static_cast<int>(i);
    if (op.name == "h.0 backward mb0") b0 = static_cast<int>(i);
  }
  REQUIRE(f2 >= 0);
  REQUIRE(b0 >= 0);
  const auto run = proteus::execute(g, c);
  CHECK(run.spans[static_cast<std::size_t>(f2)].start >=
        run.spans[static_cast<std::size_t>(b0)].start);
}

TEST_CASE("proteus ablation (§VIII-D): data parallelism shares no link, hybrids do", "[proteus]") {
  // "As there is no bandwidth sharing in data parallelism training, prediction error of VGG19
  // keeps after adding bandwidth sharing. In contrast, GPT-2 is more sensitive to bandwidth
  // sharing": on HC2 a 16-GPU data-parallel group puts one flow on each node's NIC, while
  // 8 x 2 puts two data-parallel groups through each NIC.
  const auto c = presets::hc2();
  const auto prof = datasheet_profile(c.dev);
  const auto net = zoo::vgg19();
  const auto vgg = proteus::compile(net.view(), proteus::data_parallel_cnn("vgg19", 44, 16), c,
                                    {.batch = 512}, prof);
  CHECK(proteus::execute(vgg, c).iteration ==
        proteus::execute(vgg, c, {.bandwidth_sharing = false}).iteration);
  // VGG19 is sensitive to the overlap: gamma = 0.1 slows it
  CHECK(proteus::execute(vgg, c, {.gamma = 0.1}).iteration >
        1.01 * proteus::execute(vgg, c).iteration);
  const auto m = zoo::gpt2_124m();
  auto both = [&](proteus::dp_mp_pp_config cfg) {
    const auto g = proteus::compile(m, proteus::dp_mp_pp(m, cfg), c, fp32(64), prof);
    return std::pair{proteus::execute(g, c).iteration,
                     proteus::execute(g, c, {.bandwidth_sharing = false}).iteration};
  };
  const auto dp = both({.dp = 16});
  CHECK(dp.first == dp.second);
  const auto hybrid = both({.dp = 8, .mp = 2});
  CHECK(hybrid.first > 1.02 * hybrid.second);
}

}  // namespace unit_proteus
