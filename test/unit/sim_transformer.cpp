// The transformer plan executor against the closed form: equal where the closed form's
// assumptions hold (one stage, no overlap), close under 1F1B, and the in-flight activations of
// each schedule emerge from the schedule itself.
#include <catch2/catch.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>

namespace unit_sim_transformer {

using namespace strata;
using namespace strata::literals;
using parallel::recompute;
using parallel::schedule;

namespace {
const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
}  // namespace

TEST_CASE("one stage, no overlap: the simulation equals the closed form over a grid") {
  const sim::transformer_options off{.overlap = false, .buckets = 1};
  for (const transformer& m : {zoo::gpt2_355m(), zoo::llama2_7b()})
    for (const int t : {1, 2, 8})
      for (const int d : {1, 2})
        for (const auto rc : {recompute::none, recompute::selective, recompute::full})
          for (const bool sp : {false, true}) {
            if (sp && t == 1) continue;
            const parallel::nd s{.tensor = {.degree = t, .sequence = sp},
                                 .data = {.degree = d, .overlap = 0},
                                 .recomputation = rc,
                                 .micro_batch = 2};
            const cluster c = presets::dgx_a100(2);
            const cluster used =
                make_cluster("part", c.dev, {level{"node", t * d, c.levels[0].pair}});
            const training tr{.batch = 8, .sequence = 1024};
            const auto run = sim::simulate(m, s, used, tr, a100, off);
            const auto cf = analytic::evaluate(m, s, used, tr, a100);
            INFO(m.name << " t=" << t << " d=" << d << " sp=" << sp);
            CHECK(run.iteration.count() == Approx(cf.iteration_time().count()).epsilon(1e-9));
            CHECK(run.run.peak_memory[0] == Approx(cf.memory.total().count()).epsilon(1e-9));
          }
}

TEST_CASE("overlap hides gradient buckets behind the last backward") {
  const transformer m = zoo::gpt2_355m();
  const parallel::nd s{.data = {.degree = 16, .overlap = 0}, .micro_batch = 4};
  const training tr{.batch = 64};
  const cluster c = presets::dgx_a100(2);
  const auto off = sim::simulate(m, s, c, tr, a100, {.overlap = false, .buckets = 1});
  const auto on = sim::simulate(m, s, c, tr, a100, {.overlap = true, .buckets = 8});
  const auto cf = analytic::evaluate(m, s, c, tr, a100);
  const seconds compute = cf.time.forward + cf.time.backward + cf.time.optimizer;
  CHECK(on.iteration < off.iteration);
  CHECK(on.iteration > compute);  // the last bucket and the step cannot hide
  CHECK(off.iteration.count() == Approx(cf.iteration_time().count()).epsilon(1e-9));
}

TEST_CASE("1F1B on 1024 GPUs: the simulated pipeline agrees with the closed form") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  const training tr{.batch = 1024, .sequence = 2048};
  parallel::nd s{.tensor = {.degree = 8},
                 .pipeline = {.degree = 8},
                 .data = {.degree = 16},
                 .recomputation = recompute::full,
                 .micro_batch = 1};
  const auto run = sim::simulate(m, s, c, tr, a100);
  const auto cf = analytic::evaluate(m, s, c, tr, a100);
  CHECK(run.simulated_ranks == 8);
  CHECK(run.iteration.count() == Approx(cf.iteration_time().count()).epsilon(0.002));  // 0.07 %
  // the first stage holds p = 8 micro-batches at its fullest, exactly the closed form's count
  CHECK(run.run.peak_memory[0] == Approx(cf.memory.total().count()).epsilon(1e-9));
  CHECK_FALSE(run.run.oom);
  // interleaving (v = 2) shortens the iteration; its in-flight memory is Korthikanti's factor
  s.pipeline.virtual_stages = 2;
  s.pipeline.kind = schedule::interleaved;
  const auto v2 = sim::simulate(m, s, c, tr, a100);
  CHECK(v2.iteration < run.iteration);
  CHECK(v2.run.peak_memory[0] ==
        Approx(analytic::stage_memory(m, s, tr, 0).total().count()).epsilon(0.001));
  // GPipe holds all 64 micro-batches: 83.5 GiB does not fit, and the simulator says where
  s.pipeline.virtual_stages = 1;
  s.pipeline.kind = schedule::gpipe;
  const auto gp = sim::simulate(m, s, c, tr, a100);
  REQUIRE(gp.run.oom);
  CHECK(gp.run.oom->device == 0);
  CHECK(gp.graph.tasks()[static_cast<std::size_t>(gp.run.oom->task)].name.rfind("forward", 0) == 0);
  // runs are bit-identical
  const auto again = sim::simulate(m, s, c, tr, a100);
  CHECK(again.iteration == gp.iteration);
  CHECK(again.run.events == gp.run.events);
}

TEST_CASE("checkpointing 3 of each stage's 12 layers: the simulator recomputes those three") {
  // GPT-3 175B, t = 8, 8 stages, 16 replicas; Megatron-LM's --recompute-method block
  // --recompute-num-layers 3: the first three layers of each stage recompute, the other nine
  // keep their tensors
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  const training tr{.batch = 1024, .sequence = 2048};
  parallel::nd s{.tensor = {.degree = 8},
                 .pipeline = {.degree = 8},
                 .data = {.degree = 16},
                 .recomputation = recompute::full,
                 .recompute_layers = 3,
                 .micro_batch = 1};
  const auto run = sim::simulate(m, s, c, tr, a100);
  const auto cf = analytic::evaluate(m, s, c, tr, a100);
  CHECK(run.iteration.count() == Approx(cf.iteration_time().count()).epsilon(0.002));
  CHECK(run.run.peak_memory[0] == Approx(cf.memory.total().count()).epsilon(1e-9));
  // a quarter of full recomputation's work: between none and full
  parallel::nd all = s, none = s;
  all.recompute_layers = 0;
  none.recomputation = recompute::none;
  none.recompute_layers = 0;
  const double t_all = sim::simulate(m, all, c, tr, a100).iteration.count();
  const double t_none = sim::simulate(m, none, c, tr, a100).iteration.count();
  CHECK(run.iteration.count() == Approx(t_none + (t_all - t_none) / 4).epsilon(0.01));
}

TEST_CASE("an embedding/loss-aware interleaved split: simulation and closed form agree") {
  // GPT-2 355M's 24 layers + embedding + loss = 26: no multiple of p v = 4 x 2 = 8. 22 layers
  // + 2 = 24 are: 3 per chunk, the first stage's first chunk and the last stage's last hold 2.
  transformer m = zoo::gpt2_355m();
  m.layers = 22;
  const cluster c = presets::dgx_a100(1);
  const training tr{.batch = 16, .sequence = 1024};
  parallel::nd s{.tensor = {.degree = 2},
                 .pipeline = {.degree = 4,
                              .virtual_stages = 2,
                              .kind = schedule::interleaved,
                              .account_for_embedding = true,
                              .account_for_loss = true},
                 .micro_batch = 2};
  CHECK(s.stage_layers(m, 0) == 5);
  CHECK(s.stage_layers(m, 1) == 6);
  CHECK(s.stage_layers(m, 3) == 5);
  const auto run = sim::simulate(m, s, c, tr, a100);
  const auto cf = analytic::evaluate(m, s, c, tr, a100);
  // the simulator runs each chunk's own layers; the closed form prices the slowest stage (6
  // layers) and the fill and drain of the others, as for even stages
  CHECK(run.iteration.count() == Approx(cf.iteration_time().count()).epsilon(0.05));
  std::size_t forwards = 0;
  for (const auto& t : run.graph.tasks())
    if (t.name.rfind("forward layer", 0) == 0) ++forwards;
  CHECK(forwards == 22u * 8u);  // every layer once per micro-batch (16 / 2 = 8)
}

TEST_CASE("interleaved sends: blocking (before 2023) or beside the compute (Megatron-Core)") {
  // GPT-2 355M, t = 2, p = 4, v = 2, m = 16 / 2 = 8 micro-batches on one DGX A100. Each send
  // moves b s h x 2 bytes / t = 2 x 1024 x 1024 x 2 / 2 = 2 MiB over NVLink (300 GB/s, 5 us):
  // 12.0 us. Blocking, a stage waits for 2 (v m + p - 1) = 38 of them (0.46 ms); overlapped
  // (`recipe::overlap_p2p`), for the first micro-batch's 2 (p v - 1) = 14 (0.17 ms).
  const transformer m = zoo::gpt2_355m();
  const cluster c = presets::dgx_a100(1);
  training tr{.batch = 16, .sequence = 1024};
  const parallel::nd s{
      .tensor = {.degree = 2},
      .pipeline = {.degree = 4, .virtual_stages = 2, .kind = schedule::interleaved},
      .micro_batch = 2};
  const double send = 5e-6 + 2.0 * 1024 * 1024 * 2 / 2 / 300e9;
  const auto overlapped = analytic::evaluate(m, s, c, tr, a100);
  CHECK(overlapped.time.pipeline_p2p.count() == Approx(14 * send));
  const double sim_overlapped = sim::simulate(m, s, c, tr, a100).iteration.count();
  tr.framework.overlap_p2p = false;
  const auto blocking = analytic::evaluate(m, s, c, tr, a100);
  CHECK(blocking.time.pipeline_p2p.count() == Approx(38 * send));
  const double sim_blocking = sim::simulate(m, s, c, tr, a100).iteration.count();
  // the simulator makes each stage wait for its sends only when they block
  CHECK(sim_blocking > sim_overlapped);
  CHECK(sim_overlapped == Approx(overlapped.iteration_time().count()).epsilon(0.02));
  CHECK(sim_blocking == Approx(blocking.iteration_time().count()).epsilon(0.02));
}

TEST_CASE("a pipeline send alone on its wire takes alpha + bytes / bandwidth") {
  const transformer m = zoo::gpt2_355m();
  const cluster c = presets::dgx_a100(2);
  // two stages on two nodes (tensor 8 fills each node): sends cross InfiniBand, 25 GB/s
  const parallel::nd s{.tensor = {.degree = 8}, .pipeline = {.degree = 2}, .micro_batch = 1};
  const training tr{.batch = 1};
  const auto run = sim::simulate(m, s, c, tr, a100);
  const double bytes_sent = 1024.0 * 1024 * 2 / 8;  // b s h x 2 bytes / t
  int sends = 0;
  for (std::size_t i = 0; i < run.graph.tasks().size(); ++i)
    if (run.graph.tasks()[i].name.rfind("send", 0) == 0) {
      ++sends;
      const auto& rec = run.run.tasks[i];
      CHECK(rec.end - rec.start == Approx(bytes_sent / 25e9));
      CHECK(rec.start - rec.ready == Approx(10e-6));
    }
  CHECK(sends == 2);  // activations forward, gradients back
}

TEST_CASE("a limit on in-flight micro-batches trades memory for bubble") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  const training tr{.batch = 1024, .sequence = 2048};
  const parallel::nd s{.tensor = {.degree = 8},
                       .pipeline = {.degree = 8},
                       .data = {.degree = 16},
                       .recomputation = recompute::full,
                       .micro_batch = 1};
  const auto free = sim::simulate(m, s, c, tr, a100);
  const auto two = sim::simulate(m, s, c, tr, a100, {.max_in_flight = 2});
  // stage 0 keeps 2 micro-batches instead of 8: six units of 12 layer inputs (2 s b h each,
  // full recomputation) and the embedding's dropout mask (s b h: the output is whole on every
  // tensor-parallel rank after its all-reduce) fewer
  const double sbh = 2048.0 * 12288;
  CHECK(free.run.peak_memory[0] - two.run.peak_memory[0] == Approx(6 * (12 * 2 * sbh + sbh)));
  CHECK(two.iteration > free.iteration);
  CHECK_THROWS_WITH(sim::simulate(m,
                                  parallel::nd{s.tensor,
                                               s.context,
                                               s.expert,
                                               {.degree = 8, .kind = schedule::gpipe},
                                               s.data,
                                               s.recomputation,
                                               1},
                                  c, tr, a100, {.max_in_flight = 2}),
                    Catch::Contains("needs a 1F1B schedule"));
}

TEST_CASE("an interleaved schedule needs at least p micro-batches in flight") {
  // p = 2, v = 2: stage 1's first backward (micro-batch 0, chunk 1) follows its forwards of
  // micro-batches 0 and 1 on chunk 0, so a cap of one micro-batch cannot run
  const transformer m = zoo::gpt2_124m();
  const parallel::nd s{
      .pipeline = {.degree = 2, .virtual_stages = 2, .kind = parallel::schedule::interleaved},
      .micro_batch = 1};
  const training tr{.batch = 8, .sequence = 1024};
  const cluster used = make_cluster("two", presets::a100_sxm4_80gb,
                                    {level{"node", 2, interconnect{5_us, 300_GBps}}});
  CHECK_THROWS_WITH(sim::simulate(m, s, used, tr, a100, {.max_in_flight = 1}),
                    Catch::Contains("at least p (the pipeline degree)"));
  const auto two = sim::simulate(m, s, used, tr, a100, {.max_in_flight = 2});
  const auto free = sim::simulate(m, s, used, tr, a100);
  CHECK(two.iteration.count() >= free.iteration.count());
}

TEST_CASE("interleaved data-parallel traffic hides behind the chunks before it") {
  // `data_parallel::behind_chunks` worked by hand: 1.2 s of traffic beside 0.2 s of work per
  // micro-batch, p = 4, v = 3. Chunk 0's third (0.4 s) against its own pass (0.2 / 3 s) leaves
  // 0.333 s; all of it against the (2 * 4 + 1) / 3 = 3 micro-batches before the last chunk's
  // point leaves 1.2 - 0.6 = 0.6 s, the larger. Without interleaving, 1.2 - 0.2 = 1.0 s.
  using parallel::data_parallel;
  CHECK(data_parallel::behind_chunks(1.2_s, 0.2_s, 0.01, 4, 3).count() == Approx(0.6));
  CHECK(data_parallel::behind_chunks(1.2_s, 0.2_s, 0.01, 4, 1).count() == Approx(1.0));
  // 1.0 s of work: 0.4 - 0.333 = 0.067 s, but one bucket (a tenth, 0.12 s) never hides
  CHECK(data_parallel::behind_chunks(1.2_s, 1.0_s, 0.1, 4, 3).count() == Approx(0.12));

  // the simulator: Megatron-Core reduces a chunk's buckets once its last micro-batch's backward
  // on the stage ends and gathers the updated weights before each layer's first forward
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(32);
  const training tr{.batch = 64, .sequence = 2048};
  const parallel::nd s{
      .tensor = {.degree = 8},
      .pipeline = {.degree = 4, .virtual_stages = 2, .kind = schedule::interleaved},
      .data = {.degree = 8, .zero = 1},
      .micro_batch = 1};
  const auto run = sim::simulate(m, s, c, tr, a100);
  const auto& g = run.graph;
  auto first = [&](std::string_view name, int device) {
    for (std::size_t k = 0; k < g.tasks().size(); ++k)
      if (g.task(k).name == name && g.task(k).device == device) return k;
    FAIL("no task " << name);
    return std::size_t{0};
  };
  const auto& at = run.run.tasks;
  // stage 0's chunk 1 ends its last backward (micro-batch 7) before chunk 0's: its buckets go
  // out while chunk 0 still runs the last p micro-batches' backward
  const auto bucket0 = first("reduce gradients bucket 0", 0);
  const auto last_unit = first("backward layer 11 mb 7.0 @0", 0);
  CHECK(at[bucket0].ready < at[last_unit].start);
  // the weights' first bucket is gathered from the start; layer 0's forward waits for it
  const auto gather0 = first("all-gather updated weights bucket 0", 0);
  CHECK(at[gather0].ready == 0);
  CHECK(at[first("forward layer 0 mb 0.0 @0", 0)].start >= at[gather0].end);
  // no gather after the optimizer step, and the closed form prices the same iteration
  int after_step = 0;
  for (const auto& t : g.tasks()) after_step += t.name == "all-gather updated weights" ? 1 : 0;
  CHECK(after_step == 0);
  const auto cf = analytic::evaluate(m, s, c, tr, a100);
  CHECK(run.iteration.count() == Approx(cf.iteration_time().count()).epsilon(0.02));
  // Megatron-LM 2021 (no distributed optimizer: zero 0) released them all in the stage's last
  // unit, today's chunk by chunk
  parallel::nd s0 = s;
  s0.data.zero = 0;
  training old = tr;
  old.framework = frameworks::megatron_2021;
  auto bucket0_ready = [&](const training& t) {
    const auto r = sim::simulate(m, s0, c, t, a100);
    for (std::size_t k = 0; k < r.graph.tasks().size(); ++k)
      if (r.graph.task(k).name == "reduce gradients bucket 0" && r.graph.task(k).device == 0)
        return r.run.tasks[k].ready;
    FAIL("no bucket");
    return 0.0;
  };
  CHECK(bucket0_ready(old) > bucket0_ready(tr));
  CHECK_THROWS_WITH(sim::simulate(m, s, c, old, a100), Catch::Contains("megatron-2021"));
}

}  // namespace unit_sim_transformer
