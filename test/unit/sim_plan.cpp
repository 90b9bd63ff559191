// The plan executor against the closed form: equal with overlap off (issue 6's standing test),
// between the bounds with overlap on.
#include <algorithm>
#include <catch2/catch.hpp>
#include <strata/sim/paradl.hpp>
#include <strata/strata.hpp>

namespace unit_sim_plan {

using namespace strata;

namespace {
template <class S>
void check_equal(std::span<const layer> net, const S& s, const cluster& c, const training& t) {
  const report closed = analytic::evaluate(net, s, c, t);
  const sim::plan_run run = sim::simulate(net, s, c, t);
  INFO(S::name << " on " << s.devices() << " devices, batch " << t.batch);
  CHECK(run.iteration.count() == Approx(closed.iteration_time().count()).epsilon(1e-3));
  CHECK(run.run.peak_memory[0] == Approx(closed.memory.total().count()).epsilon(1e-9));
  // overlap: no slower than the same buckets without it, no faster than perfect overlap
  const sim::plan_options on{.overlap = true, .buckets = 4};
  const sim::plan_options off{.overlap = false, .buckets = 4};
  const double with = sim::simulate(net, s, c, t, on).iteration.count();
  const double without = sim::simulate(net, s, c, t, off).iteration.count();
  const double perfect =
      std::max(closed.time.compute() + closed.time.tensor_comm + closed.time.context_comm,
               closed.time.data_comm)
          .count();
  CHECK(with <= without * (1 + 1e-12));
  CHECK(with >= perfect * (1 - 1e-12));
}
}  // namespace

TEST_CASE("simulator equals the closed form with overlap off, over a grid of plans") {
  const auto resnet = zoo::resnet50();
  const auto vgg = zoo::vgg16();
  const cluster abci = presets::abci(128);
  for (int p : {2, 8, 32}) {
    check_equal(resnet.view(), parallel::data{p}, abci, {.batch = 8 * p});
    check_equal(vgg.view(), parallel::data{p}, abci,
                {.batch = 4 * p, .optim = optimizer::momentum});
    check_equal(resnet.view(), parallel::filter{p}, abci, {.batch = 16});
    check_equal(vgg.view(), parallel::channel{p}, abci, {.batch = 8});
    check_equal(resnet.view(), parallel::spatial{p > 7 ? 7 : p, 1, 1}, abci, {.batch = 4});
    check_equal(resnet.view(), parallel::data_filter{p, 4}, abci, {.batch = 8 * p});
    check_equal(vgg.view(), parallel::data_spatial{p, {2, 2, 1}}, abci, {.batch = 4 * p});
  }
  check_equal(resnet.view(), parallel::serial{}, abci, {.batch = 8});
}

TEST_CASE("GPipe: equal to eqs. (12)-(13) for balanced stages, faster for unbalanced ones") {
  // 8 identical layers on 4 stages of 2: every stage costs the same, the closed form's max is
  // every stage's cost.
  constexpr auto even =
      sequential("even", shape{.c = 256}, linear{.features = 256}, linear{.features = 256},
                 linear{.features = 256}, linear{.features = 256}, linear{.features = 256},
                 linear{.features = 256}, linear{.features = 256}, linear{.features = 256});
  const cluster c = presets::abci(8);
  for (int segments : {1, 4, 16}) {
    const parallel::pipeline pp{4, segments};
    const training t{.batch = 64};
    const double closed = analytic::evaluate(even.view(), pp, c, t).iteration_time().count();
    const auto run = sim::simulate(even.view(), pp, c, t);
    CHECK(run.simulated_ranks == 4);
    CHECK(run.iteration.count() == Approx(closed).epsilon(1e-9));
    // non-blocking sends hide some of the transfer
    CHECK(sim::simulate(even.view(), pp, c, t, {.overlap = true}).iteration.count() <= closed);
  }
  const auto vgg = zoo::vgg16();
  const parallel::pipeline pp{4, 8};
  const training t{.batch = 64};
  CHECK(sim::simulate(vgg.view(), pp, presets::abci(4), t).iteration.count() <=
        analytic::evaluate(vgg.view(), pp, presets::abci(4), t).iteration_time().count());
}

TEST_CASE("plan simulation is bit-identical and checks the plan") {
  const auto vgg = zoo::vgg16();
  const auto a = sim::simulate(vgg.view(), parallel::data_filter{4, 2}, presets::abci(8),
                               {.batch = 32}, {.overlap = true, .buckets = 3, .gamma = 0.2});
  const auto b = sim::simulate(vgg.view(), parallel::data_filter{4, 2}, presets::abci(8),
                               {.batch = 32}, {.overlap = true, .buckets = 3, .gamma = 0.2});
  CHECK(a.iteration == b.iteration);
  CHECK_THROWS_WITH(
      sim::simulate(vgg.view(), parallel::filter{128}, presets::abci(128), {.batch = 32}),
      Catch::Contains("fewest filters"));
  CHECK_THROWS_WITH(
      sim::simulate(vgg.view(), parallel::data{4}, presets::abci(4), {.batch = 32}, {.buckets = 0}),
      Catch::Contains("at least one bucket"));
}

TEST_CASE("1F1B and the in-flight limit") {
  constexpr auto even =
      sequential("even", shape{.c = 256}, linear{.features = 256}, linear{.features = 256},
                 linear{.features = 256}, linear{.features = 256});
  const cluster c = presets::abci(4);
  const parallel::pipeline pp{4, 8};
  const training t{.batch = 64};
  const auto gpipe = sim::simulate(even.view(), pp, c, t);
  const auto ofob =
      sim::simulate(even.view(), pp, c, t, {.schedule = sim::pipeline_schedule::one_f_one_b});
  // the same work; 1F1B starts the backward passes earlier, so it is never slower here
  CHECK(ofob.iteration <= gpipe.iteration);
  CHECK(ofob.run.tasks.size() == gpipe.run.tasks.size());
  // GPipe keeps all 8 micro-batches' activations on stage 0, 1F1B only p = 4 of them
  const double act = 2.0 * 4 * (64.0 / 8) * 2 * 256;  // 2 delta (B/S)(|x| + |y|), one layer
  CHECK(gpipe.run.peak_memory[0] - ofob.run.peak_memory[0] == Approx(4 * act));
  // at most one micro-batch in flight: the stages run one after another
  const auto one = sim::simulate(
      even.view(), pp, c, t, {.schedule = sim::pipeline_schedule::one_f_one_b, .max_in_flight = 1});
  CHECK(one.iteration > ofob.iteration);
  CHECK(one.run.peak_memory[0] - ofob.run.peak_memory[0] == Approx(-3 * act));
  CHECK_THROWS_WITH(sim::simulate(even.view(), pp, c, t, {.max_in_flight = 2}),
                    Catch::Contains("needs the 1F1B schedule"));
}

TEST_CASE("overlapping collectives share their link") {
  // Spatial parallelism inside one node, gradient buckets overlapping backward: the halo
  // exchanges of the backward pass and the gradient all-reduces run on the same NVLink, so some
  // halo transfer takes longer than it would alone; no byte is lost.
  const auto net = zoo::resnet50();
  const auto run = sim::simulate(net.view(), parallel::spatial{4, 1, 1}, presets::abci(4),
                                 {.batch = 16}, {.overlap = true, .buckets = 8});
  const double bw = 50e9;  // ABCI NVLink
  bool slowed = false;
  double wire = 0;
  for (std::size_t i = 0; i < run.graph.tasks().size(); ++i) {
    const auto& t = run.graph.tasks()[i];
    if (t.cls != sim::task_class::communication) continue;
    wire += t.work;
    const auto& r = run.run.tasks[i];
    if (t.name.rfind("halo dy", 0) == 0 && r.end - r.start > t.work / bw * (1 + 1e-9))
      slowed = true;
  }
  CHECK(slowed);
  double link_busy = 0;
  for (std::size_t k = 0; k < run.graph.resources().size(); ++k)
    if (run.graph.resources()[k].kind == sim::discipline::fair_share) link_busy += run.run.busy[k];
  CHECK(link_busy * bw >= wire * (1 - 1e-9));  // the link was busy long enough for every byte
}

TEST_CASE("each ParaDL strategy says what one rank runs; lower::cnn_rank lowers it") {
  // data+filter on 4 x 2 devices, B = 64: B/p1 = 16 samples, compute and update split 2 ways, the
  // layer-wise collectives inside a group of 2, 1/2 of the gradient all-reduced across 4 groups
  // at stride 2 (ParaDL eqs. (20)-(22))
  const rank_shape r = parallel::data_filter{.p1 = 4, .p2 = 2}.rank(64);
  CHECK(r.samples == 16);
  CHECK(r.split == 2);
  CHECK(r.wu_share == 0.5);
  CHECK(r.layerwise);
  CHECK(r.lgroup.size == 2);
  CHECK(r.gradients);
  CHECK(r.ggroup.size == 4);
  CHECK(r.ggroup.stride == 2);
  CHECK(r.gshare == 0.5);
  // spatial 2 x 2: every sample, compute and activations split 4 ways, its own tiles for the halo
  const parallel::spatial sp{.ph = 2, .pw = 2};
  const rank_shape t = sp.rank(32);
  CHECK(t.tiles == &sp);
  CHECK(t.act_split == 4);
  CHECK(t.hgroup.size == 4);
  CHECK_FALSE(t.layerwise);

  // data parallelism over 8 on ResNet-50, two buckets: the lowering's operations in order
  const auto net = zoo::resnet50();
  const context c = make_context(net.view(), presets::abci(8), {.batch = 64});
  struct counter {
    double state = 0, activations = 0, forward = 0, backward = 0, update = 0, gradient_bytes = 0;
    int computes = 0, comms = 0, gradients = 0;
    std::size_t last_backward = 99;
  } n;
  struct visitor {
    counter& n;
    void state(double b) { n.state += b; }
    void activation(std::size_t, double b) { n.activations += b; }
    void compute(lower::phase ph, std::size_t l, double t) {
      ++n.computes;
      (ph == lower::phase::forward ? n.forward : n.backward) += t;
      if (ph == lower::phase::backward) n.last_backward = l;
    }
    void comm(lower::cnn_comm, std::string_view, std::size_t, group, double) { ++n.comms; }
    void gradient(std::size_t, std::size_t, group g, double b) {
      ++n.gradients;
      n.gradient_bytes += b;
      CHECK(g.size == 8);
    }
    void update(double t) { n.update += t; }
  } v{n};
  lower::cnn_rank(c, parallel::data{.p = 8}.rank(64), 2, v);
  const double L = static_cast<double>(c.size());
  CHECK(n.computes == 2 * L);  // a forward and a backward per layer
  CHECK(n.comms == 0);         // data parallelism has no layer-wise collective nor halo
  CHECK(n.gradients == 2);     // two buckets
  CHECK(n.last_backward == 0);
  // 8 samples of sum FW_l and sum BW_l; the whole update; 4-byte gradients of every weight
  CHECK(n.forward == Approx(8 * c.sum_fw.count()));
  CHECK(n.backward == Approx(8 * c.sum_bw.count()));
  CHECK(n.update == Approx(c.sum_wu.count()));
  CHECK(n.gradient_bytes == Approx(4 * c.sum_w));
  // ParaDL eq. (7): 2 delta (B/p) sum(|x_l| + |y_l|) of activations; the weights, their
  // gradients and the optimizer's states all iteration
  CHECK(n.activations == Approx(2 * 4 * 8 * c.sum_xy));
  CHECK(n.state ==
        Approx(c.memory(1.0, 8, 1.0).weights.count() + c.memory(1.0, 8, 1.0).gradients.count() +
               c.memory(1.0, 8, 1.0).optimizer_states.count()));
}

TEST_CASE("the transformer policies add their terms to an iteration") {
  // Narayanan et al. SC'21 §2.2: p = 4 stages of 10 ms each, m = 8 micro-batches, v = 1: the
  // bubble is the other three stages' 30 ms; 2 (v m + p - 1) = 22 sends of 1 ms
  const parallel::pipeline_parallel pp{.degree = 4};
  const auto t = pp.time(seconds{0.040}, seconds{0.010}, 8, seconds{0.001});
  CHECK(t.bubble.count() == Approx(0.030));
  CHECK(t.sends.count() == Approx(0.022));
  // interleaved over v = 2: the bubble halves, the sends are 2 (2 x 8 + 3) = 38
  const parallel::pipeline_parallel iv{
      .degree = 4, .virtual_stages = 2, .kind = parallel::schedule::interleaved};
  const auto ti = iv.time(seconds{0.040}, seconds{0.010}, 8, seconds{0.001});
  CHECK(ti.bubble.count() == Approx(0.015));
  CHECK(ti.sends.count() == Approx(0.038));
  // 8 micro-batches x 12 layers of 1 ms forward and 2 ms backward collectives
  CHECK(parallel::tensor_parallel{.degree = 8}.time(96, seconds{1e-3}, seconds{2e-3}).count() ==
        Approx(0.288));
  CHECK(parallel::context_parallel{.degree = 2}.time(96, seconds{1e-3}, seconds{0}).count() ==
        Approx(0.096));
  // dispatch and combine in both passes: 2 x 96 x 0.5 ms
  CHECK(parallel::expert_parallel{.degree = 4}.time(96, seconds{5e-4}).count() == Approx(0.096));
}

}  // namespace unit_sim_plan
