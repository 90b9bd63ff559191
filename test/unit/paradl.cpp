// ParaDL's equations worked by hand on small cases. Cluster "toy": 4 devices per node,
// alpha = 1 us, bandwidth 1 GB/s inside a node; 2 nodes, alpha = 2 us, 0.5 GB/s between them.
#include <catch2/catch.hpp>
#include <strata/strata.hpp>

namespace unit_paradl {

using namespace strata;

namespace {
const cluster toy = make_cluster("toy", presets::v100_sxm2_16gb,
                                 {level{"node", 4, interconnect{1_us, 1_GBps}},
                                  level{"cluster", 2, interconnect{2_us, 0.5_GBps}}});
// MLP: 784 -> 128 -> relu -> 10. |w| = 100480 + 0 + 1290 = 101770;
// sum(|x| + |y|) = (784 + 128) + (128 + 128) + (128 + 10) = 1306.
constexpr auto mlp =
    sequential("mlp", shape{.c = 784}, linear{.features = 128}, relu{}, linear{.features = 10});
// Profiled times (ParaDL §IV) for an exact check: FW = 1 ms, BW = 2 ms per sample, WU = 0.5 ms.
const std::vector<layer_time> times(3, layer_time{1_ms, 2_ms, 0.5_ms});
}  // namespace

TEST_CASE("serial, eqs. (3) and (4)") {
  const report r =
      analytic::evaluate(mlp.view(), parallel::serial{}, toy, {.batch = 8, .dataset = 80}, times);
  // per iteration: B sum(FW + BW) + sum WU = 8 x 3 x 3 ms + 3 x 0.5 ms = 73.5 ms; D/B = 10
  CHECK(r.iteration_time().count() == Approx(73.5e-3));
  CHECK(r.epoch_time().count() == Approx(0.735));
  // M = 2 delta sum(B(|x| + |y|) + |w|) = 2 x 4 x (8 x 1306 + 101770) = 897,744 B
  CHECK(r.memory.total().count() == 897'744.0);
}

TEST_CASE("data parallelism, eqs. (5)-(7)") {
  const report r = analytic::evaluate(mlp.view(), parallel::data{.p = 2}, toy, {.batch = 8}, times);
  // compute: (B/p) sum(FW + BW) + sum WU = 4 x 9 ms + 1.5 ms = 37.5 ms
  CHECK(r.time.compute().count() == Approx(37.5e-3));
  // all-reduce in one node: 2 (p-1)(alpha + delta sum|w| beta / p)
  //   = 2 (1 us + 4 x 101770 / 2 / 1e9 s) = 2 (1 us + 203.54 us) = 409.08 us
  CHECK(r.time.data_comm.count() == Approx(409.08e-6));
  // memory: 2 delta sum((B/p)(|x| + |y|) + |w|) = 8 (4 x 1306 + 101770) = 855,952 B
  CHECK(r.memory.total().count() == 855'952.0);
  CHECK(r.memory.weights.count() == 407'080.0);
  CHECK(r.memory.activations.count() == 2.0 * 4 * 4 * 1306);
}

TEST_CASE("data parallelism on ResNet-50 with ABCI's parameters") {
  const auto net = zoo::resnet50();
  const report r =
      analytic::evaluate(net.view(), parallel::data{.p = 16}, presets::abci(16), {.batch = 256});
  // 4 nodes, one rack: alpha = 20 us + 2 x 110 ns + 90 ns = 20.31 us, beta = 1 / 12.5 GB/s.
  // m = 4 x 25,557,032 B; 2 (16 - 1)(20.31 us + m / 16 / 12.5e9) = 30 x 531.4506 us = 15.9435 ms
  CHECK(r.time.data_comm.count() == Approx(15.94352e-3).epsilon(1e-6));
  // compute from FLOPs at 50% of 15.7 TFLOP/s: 16 samples x (fw + bw FLOPs) / 7.85e12
  const double flops = 16.0 * (net.fw_flops() + net.bw_flops());
  CHECK((r.time.forward + r.time.backward).count() == Approx(flops / 7.85e12));
}

TEST_CASE("spatial halo exchange, eq. (10)") {
  // conv 3x3 on 2 x 8 x 8 -> 4 x 8 x 8, split ph = 2: one halo row per neighbour:
  // halo(|x|) = 1 x 8 x 2 = 16 elements, halo(|dL/dy|) = 1 x 8 x 4 = 32 elements.
  constexpr auto net =
      sequential("c", shape{.c = 2, .h = 8, .w = 8}, conv{.filters = 4, .kernel = 3, .padding = 1});
  const parallel::spatial sp{.ph = 2};
  CHECK(sp.halo(net.layers[0].in, 3) == 16.0);
  CHECK(sp.halo(net.layers[0].out, 3) == 32.0);
  const report r = analytic::evaluate(net.view(), sp, toy, {.batch = 2});
  // 2 [T_p2p(B 16 delta) + T_p2p(B 32 delta)] = 2 [(1 us + 128 ns) + (1 us + 256 ns)] = 4.768 us
  CHECK(r.time.context_comm.count() == Approx(4.768e-6));
  // memory eq. (8): 2 delta (B (|x| + |y|)/p + |w|) = 8 (2 x 384 / 2 + 72) = 3,648 B
  CHECK(r.memory.total().count() == 3'648.0);
}

TEST_CASE("filter and channel parallelism, eqs. (15)-(19)") {
  const report f =
      analytic::evaluate(mlp.view(), parallel::filter{.p = 2}, toy, {.batch = 4}, times);
  // weighted layers except the last: only 784->128 (|y| = 128); the ReLU works on the
  // partitioned channels without a collective:
  // 3 (p-1) (alpha + B |y| delta beta / p) = 3 x (1 us + 4 x 128 x 4 / 2 ns) = 6.072 us
  CHECK(f.time.tensor_comm.count() == Approx(6.072e-6));
  // compute eq. (18): (B/p) sum(FW+BW) + sum WU / p = 2 x 9 ms + 0.75 ms
  CHECK(f.time.compute().count() == Approx(18.75e-3));
  // memory eq. (16): 2 delta sum(B(|x|+|y|) + |w|/p) = 8 (4 x 1306 + 50885) = 448,872 B
  CHECK(f.memory.total().count() == 448'872.0);
  const report c =
      analytic::evaluate(mlp.view(), parallel::channel{.p = 2}, toy, {.batch = 4}, times);
  // ParaDL gives channel parallelism the same equations: the split input channels' partial
  // outputs are all-reduced where filter parallelism all-gathers, the same volume per layer
  CHECK(c.time.tensor_comm.count() == Approx(6.072e-6));
  CHECK(c.time.compute().count() == Approx(18.75e-3));
  CHECK(c.memory.total().count() == 448'872.0);
}

TEST_CASE("pipeline, eqs. (12)-(14)") {
  // 4 layers 8 -> 8 (|w| = 72, |y| = 8), p = 2 stages of 2, S = 2 segments, B = 4.
  constexpr auto net = sequential("p", shape{.c = 8}, linear{.features = 8}, linear{.features = 8},
                                  linear{.features = 8}, linear{.features = 8});
  const std::vector<layer_time> t4(4, layer_time{1_ms, 2_ms, 0.5_ms});
  const report r = analytic::evaluate(net.view(), parallel::pipeline{.p = 2, .segments = 2}, toy,
                                      {.batch = 4}, t4);
  // forward (p+S-1)(B/S) max FW_Gi = 3 x 2 x 2 ms = 12 ms; backward 3 x 2 x 4 ms = 24 ms
  CHECK(r.time.forward.count() == Approx(12e-3));
  CHECK(r.time.backward.count() == Approx(24e-3));
  CHECK(r.time.optimizer.count() == Approx(1e-3));
  // 2 (p+S-2) (alpha + (B/S)|y| delta beta) = 4 (1 us + 2 x 8 x 4 ns) = 4.256 us
  CHECK(r.time.pipeline_p2p.count() == Approx(4.256e-6));
  // memory of a stage: 2 delta sum(B(|x|+|y|) + |w|) = 8 (2 x (4 x 16 + 72)) = 2,176 B
  CHECK(r.memory.total().count() == 2'176.0);
}

TEST_CASE("pipeline stages balance the layers") {
  const auto net = zoo::vgg16();
  const context c = make_context(net.view(), presets::abci(4), {.batch = 8});
  int stages = 0;
  std::size_t covered = 0;
  parallel::pipeline{.p = 4, .segments = 4}.for_each_stage(c, [&](parallel::stage s) {
    CHECK(s.first == covered);
    covered = s.last + 1;
    ++stages;
  });
  CHECK(stages == 4);
  CHECK(covered == net.size());
}

TEST_CASE("data + filter, eqs. (20)-(22)") {
  // p1 = 2 groups (across the two nodes), p2 = 2 filter devices inside each.
  const report r = analytic::evaluate(mlp.view(), parallel::data_filter{.p1 = 2, .p2 = 2}, toy,
                                      {.batch = 4}, times);
  // in-group, first layer only: 3 (p2-1)(alpha + B|y| delta beta / p) = 3 x (1 us + 4 x 128 x 4/4
  // ns)
  //   = 4.536 us
  CHECK(r.time.tensor_comm.count() == Approx(4.536e-6));
  // between groups, ranks 0 and 2 share a node here: 2 (p1-1)(alpha + delta sum|w| beta / p)
  //   = 2 (1 us + 4 x 101770 / 4 ns) = 205.54 us
  CHECK(r.time.data_comm.count() == Approx(205.54e-6));
  // memory eq. (20): 2 delta sum((B/p1)(|x|+|y|) + |w|/p2) = 8 (2 x 1306 + 50885) = 427,976 B
  CHECK(r.memory.total().count() == 427'976.0);
  // compute eq. (21): (B/p) sum(FW+BW) + sum WU / p2 = 9 ms + 0.75 ms
  CHECK(r.time.compute().count() == Approx(9.75e-3));
}

TEST_CASE("Table III limits are errors that name the limit") {
  const auto net = zoo::vgg16();
  const cluster abci = presets::abci(256);
  CHECK_THROWS_WITH(analytic::evaluate(net.view(), parallel::data{.p = 64}, abci, {.batch = 32}),
                    Catch::Contains("must not exceed the mini-batch B"));
  CHECK_THROWS_WITH(analytic::evaluate(net.view(), parallel::filter{.p = 128}, abci, {.batch = 32}),
                    Catch::Contains("fewest filters F_l"));
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::channel{.p = 128}, abci, {.batch = 32}),
      Catch::Contains("fewest input channels C_l"));
  // VGG16's last feature maps are 14 x 14 = 196
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::spatial{.ph = 16, .pw = 16}, abci, {.batch = 32}),
      Catch::Contains("smallest spatial extent W_l x H_l"));
  CHECK_NOTHROW(
      analytic::evaluate(net.view(), parallel::spatial{.ph = 14, .pw = 14}, abci, {.batch = 32}));
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::pipeline{.p = 39}, abci, {.batch = 32}),
      Catch::Contains("number of layers G"));
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::data_filter{.p1 = 64, .p2 = 2}, abci, {.batch = 32}),
      Catch::Contains("mini-batch B"));
  CHECK_THROWS_WITH(analytic::evaluate(net.view(), parallel::data{.p = 0}, abci, {.batch = 32}),
                    Catch::Contains("at least 1"));
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::data{.p = 8}, presets::abci(4), {.batch = 32}),
      Catch::Contains("more devices than the cluster has"));
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::data{.p = 8}, abci, {.batch = 32, .efficiency = 0}),
      Catch::Contains("efficiency"));
}

TEST_CASE("a power limit slows ParaDL's compute, not its weight update") {
  // an A100 held at 200 W of its rated 400 W: (1/2)^0.445 = e^(-0.693147 x 0.445) = e^-0.308450 =
  // 0.734585 of its arithmetic; FW_l and BW_l stretch by 1 / 0.734585, WU_l (memory-bound) does not
  cluster held = presets::abci(4);
  held.dev = presets::a100_sxm4_80gb;
  cluster rated = held;
  held.dev.power_limit_w = 200;
  const auto net = zoo::vgg16();
  const context a = make_context(net.view(), rated, {.batch = 8});
  const context b = make_context(net.view(), held, {.batch = 8});
  CHECK(b.time(0).fw.count() == Approx(a.time(0).fw.count() / 0.734585).epsilon(1e-5));
  CHECK(b.time(0).bw.count() == Approx(a.time(0).bw.count() / 0.734585).epsilon(1e-5));
  CHECK(b.time(0).wu.count() == a.time(0).wu.count());
}

}  // namespace unit_paradl
