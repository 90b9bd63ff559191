// Transformers: parameter counts of the zoo, Narayanan's FLOPs, Korthikanti's activation terms,
// ZeRO's model states, the limits of parallel::nd and the composition of an iteration's time.
#include <catch2/catch.hpp>
#include <cmath>
#include <strata/strata.hpp>
#include <type_traits>

namespace unit_transformer {

using namespace strata;
using namespace strata::literals;
using parallel::axis;
using parallel::recompute;
using parallel::schedule;

TEST_CASE("zoo parameter counts equal the released checkpoints") {
  // GPT-2 small: 12 (12 h^2 + 13 h) + (50257 + 1024) h + 2 h, h = 768
  STATIC_REQUIRE(zoo::gpt2_124m().parameters() == 124'439'808);
  // Llama 2 7B: 32 (4 h^2 + 3 h f + 2 h) + 2 V h + h, h = 4096, f = 11008, V = 32000
  STATIC_REQUIRE(zoo::llama2_7b().parameters() == 6'738'415'616);
  CHECK(zoo::llama2_70b().parameters() == 68'976'648'192);
  CHECK(zoo::llama3_8b().parameters() == 8'030'261'248);
  CHECK(zoo::llama3_70b().parameters() == 70'553'706'496);
  CHECK(zoo::llama3_405b().parameters() == 405'853'388'800);
  // Mixtral: 46.7B stored, 12.9B active (two of eight experts)
  CHECK(zoo::mixtral_8x7b().parameters() == 46'702'792'704);
  CHECK(zoo::mixtral_8x7b().active_parameters() == 12'879'925'248);
  // GPT-3: 96 (12 h^2 + 13 h) + (50257 + 2048) h + 2 h, h = 12288
  CHECK(zoo::gpt3_175b().parameters() == 174'604'259'328);
  CHECK(zoo::gpt2_1_5b().parameters() == Approx(1.558e9).epsilon(0.001));
  CHECK(zoo::bert_large().parameters() == Approx(335e6).epsilon(0.01));
}

TEST_CASE("FLOPs equal Narayanan et al.'s closed forms") {
  const transformer m = zoo::gpt3_175b();
  const double B = 1536, s = 2048, l = m.layers, h = m.hidden, V = m.vocabulary;
  const double base = B * s * l * h * h;
  // SC'21 eq. (3): 72 B s l h^2 (1 + s/6h + V/12lh); with full recomputation 96 (... V/16lh)
  CHECK(analytic::model_flops(m, B, s) ==
        Approx(72 * base * (1 + s / (6 * h) + V / (12 * l * h))).epsilon(1e-12));
  CHECK(analytic::hardware_flops(m, B, s, recompute::full) ==
        Approx(96 * base * (1 + s / (6 * h) + V / (16 * l * h))).epsilon(1e-12));
  CHECK(analytic::hardware_flops(m, B, s, recompute::none) ==
        Approx(72 * base * (1 + s / (6 * h) + V / (12 * l * h))).epsilon(1e-12));
  // selective recomputation runs the attention core's forward again (Korthikanti et al. §5):
  // Q K^T and the weighted sum of V, 2 x 2 s h FLOPs per token and layer: + 4 B s^2 h l
  // = 4 x 1536 x 2048^2 x 12288 x 96 = 3.0399e16 on top of 72 B s l h^2 (...) = 3.3860e18
  CHECK(analytic::hardware_flops(m, B, s, recompute::selective) ==
        Approx(72 * base * (1 + s / (6 * h) + V / (12 * l * h)) + 4 * B * s * s * h * l)
            .epsilon(1e-12));
  CHECK(analytic::hardware_flops(m, B, s, recompute::selective) - analytic::model_flops(m, B, s) ==
        Approx(3.0399e16).epsilon(1e-4));
  // SwiGLU and GQA: Llama-2 70B forward per token and layer = 2 (h (2h + 2 kv d) + 3 h f) + 4 s h
  const transformer q = zoo::llama2_70b();
  CHECK(q.layer_forward_flops(4096) ==
        2.0 * (8192.0 * (2 * 8192 + 2 * 1024) + 3 * 8192.0 * 28672) + 4 * 4096.0 * 8192);
}

TEST_CASE("activation memory per layer follows Korthikanti et al. Table 2") {
  const transformer m = zoo::gpt3_175b();  // a = 96, h = 12288
  const double s = 2048, b = 1, sbh = s * b * 12288;
  using analytic::layer_activation_bytes;
  // no parallelism: s b h (34 + 5 a s / h) = (34 + 80) s b h
  CHECK(layer_activation_bytes(m, s, b, 1, false, recompute::none, false) == 114 * sbh);
  // tensor parallel, t = 8: s b h (10 + 24/t + 5 a s / (h t)) = (10 + 3 + 10) s b h
  CHECK(layer_activation_bytes(m, s, b, 8, false, recompute::none, false) == 23 * sbh);
  // + sequence parallelism: s b h (34/t + 5 a s / (h t))
  CHECK(layer_activation_bytes(m, s, b, 8, true, recompute::none, false) == (34.0 / 8 + 10) * sbh);
  // + selective recomputation: 34 s b h / t (flash attention drops the same term)
  CHECK(layer_activation_bytes(m, s, b, 8, true, recompute::selective, false) == 34.0 / 8 * sbh);
  CHECK(layer_activation_bytes(m, s, b, 8, true, recompute::none, true) == 34.0 / 8 * sbh);
  // full recomputation: the layer input, 2 s b h (2 s b h / t with sequence parallelism)
  CHECK(layer_activation_bytes(m, s, b, 8, false, recompute::full, false) == 2 * sbh);
  CHECK(layer_activation_bytes(m, s, b, 8, true, recompute::full, false) == 2 * sbh / 8);
  // Llama-2 70B (no dropout, kv width 1024, SwiGLU f = 28672), t = 8 with SP and selective:
  // replicated 4 + 2 + 2 = 8, sharded 2 + 4 x 1024/8192 + 2 + 6 x 28672/8192 = 25.5: 33.5/8
  const double sbh70 = s * b * 8192;
  CHECK(layer_activation_bytes(zoo::llama2_70b(), s, b, 8, true, recompute::selective, false) ==
        33.5 / 8 * sbh70);
}

TEST_CASE("ZeRO model states follow Rajbhandari et al. Fig. 1") {
  // Psi = 7.5B, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB
  CHECK(analytic::zero_model_states(7.5e9, 64, 0) == 120_GB);
  CHECK(analytic::zero_model_states(7.5e9, 64, 1).count() == 31.40625e9);
  CHECK(analytic::zero_model_states(7.5e9, 64, 2).count() == 16.640625e9);
  CHECK(analytic::zero_model_states(7.5e9, 64, 3).count() == 1.875e9);
  CHECK_THROWS_WITH(analytic::zero_model_states(1e9, 8, 4), "ZeRO stage must be 0, 1, 2 or 3");
}

TEST_CASE("model states of a plan: 18 B/param, 6 + 12/d with the distributed optimizer") {
  const transformer m = zoo::gpt_1_7b();
  const training t{.batch = 512, .precision = precision_mode::fp16_mixed};
  parallel::nd s{.data = {.degree = 32}, .micro_batch = 16};
  const double n = m.parameters();
  CHECK(analytic::stage_memory(m, s, t, 0).model_states().count() == Approx(18 * n));
  s.data.zero = 1;
  CHECK(analytic::stage_memory(m, s, t, 0).model_states().count() == Approx((6 + 12.0 / 32) * n));
  // DeepSpeed's recipe: fp16 gradients, ZeRO-3: 16 / d
  const training ds{
      .batch = 512, .precision = precision_mode::fp16_mixed, .gradients = dtype::fp16};
  s.data.zero = 3;
  CHECK(analytic::stage_memory(m, s, ds, 0).model_states().count() == Approx(16.0 / 32 * n));
}

TEST_CASE("ranks are laid out axis by axis, tensor innermost") {
  const parallel::nd s{.tensor = {.degree = 8}, .pipeline = {.degree = 4}, .data = {.degree = 16}};
  CHECK(s.devices() == 512);
  CHECK(s.group_of(axis::tensor).stride == 1);
  CHECK(s.group_of(axis::pipeline).stride == 8);
  CHECK(s.group_of(axis::data).stride == 32);
  CHECK(s.group_of(axis::data).size == 16);
  parallel::nd d = s;
  d.order = {axis::data, axis::tensor, axis::context, axis::expert, axis::pipeline};
  CHECK(d.group_of(axis::data).stride == 1);
  CHECK(d.group_of(axis::tensor).stride == 16);
}

TEST_CASE("misuse of a transformer plan names the mistake") {
  const transformer m = zoo::gpt2_124m();  // 12 heads, 12 layers
  const training t{.batch = 64};
  auto check = [&](parallel::nd s, int devices) { s.check(m, t, devices); };
  CHECK_THROWS_WITH(check({.tensor = {.degree = 5}}, 5), limits::tensor_degree_must_divide_heads);
  CHECK_THROWS_WITH(check({.tensor = {.degree = 2}}, 4),
                    Catch::StartsWith(limits::degrees_must_match_devices));
  CHECK_THROWS_WITH(check({.data = {.degree = 4}, .micro_batch = 3}, 4),
                    Catch::StartsWith(limits::micro_batch_must_divide_replica_batch));
  CHECK_THROWS_WITH(check({.data = {.degree = 3}}, 3),
                    Catch::StartsWith(limits::global_batch_must_divide_replicas));
  CHECK_THROWS_WITH(check({.pipeline = {.degree = 16}}, 16),
                    limits::pipeline_degree_exceeds_transformer_layers);
  CHECK_THROWS_WITH(check({.pipeline = {.degree = 5}}, 5),
                    limits::pipeline_layers_must_split_evenly);
  CHECK_THROWS_WITH(check({.pipeline = {.degree = 2, .virtual_stages = 2}}, 2),
                    limits::interleaving_needs_pipeline);
  CHECK_THROWS_WITH(
      check({.pipeline = {.degree = 3, .virtual_stages = 2, .kind = schedule::interleaved}}, 3),
      limits::interleaving_needs_micro_batch_multiple);
  CHECK_THROWS_WITH(check({.expert = {.degree = 2}}, 2), limits::expert_degree_must_divide_experts);
  CHECK_THROWS_WITH(check({.data = {.zero = 4}}, 1), limits::zero_stage_out_of_range);
  // uneven split: 12 layers as 2 + 5 + 5 is fine, 2 + 4 + 5 is not
  CHECK_NOTHROW(check({.pipeline = {.degree = 3, .first_stage_layers = 2}}, 3));
  CHECK_THROWS_WITH(check({.pipeline = {.degree = 3, .first_stage_layers = 3}}, 3),
                    limits::pipeline_layers_must_split_evenly);
  // Megatron-Core's embedding/loss-aware split: 12 + 2 = 14 layers do not fill 2 x 2 chunks
  const parallel::pipeline_parallel counted{.degree = 2,
                                            .virtual_stages = 2,
                                            .kind = schedule::interleaved,
                                            .account_for_embedding = true,
                                            .account_for_loss = true};
  CHECK_THROWS_WITH(counted.check(12, 4), limits::pipeline_layers_must_split_evenly);
  parallel::pipeline_parallel twice = counted;
  twice.first_stage_layers = 2;
  CHECK_THROWS_WITH(twice.check(14, 4), limits::pipeline_split_given_twice);
  // 6 + 2 = 8 layers over 2 x 4 chunks: the embedding's chunk would hold no transformer layer
  parallel::pipeline_parallel thin = counted;
  thin.virtual_stages = 4;
  CHECK_THROWS_WITH(thin.check(6, 4), limits::pipeline_chunk_without_layers);
}

TEST_CASE("the sends a pipeline stage waits for, blocking and overlapped") {
  // Megatron-Bridge's Llama-3.1 405B: p = 8, v = 8, m = 1536 / (8 x 1) = 192 micro-batches.
  // Blocking, every forward and backward step waits: 2 (v m + p - 1) = 2 (1536 + 7) = 3086.
  // Overlapped (overlap_p2p_comm): the first micro-batch's way through the 64 virtual stages and
  // back, 2 (64 - 1) = 126; 1F1B without interleaving waits for every send either way.
  const parallel::pipeline_parallel pp{
      .degree = 8, .virtual_stages = 8, .kind = schedule::interleaved};
  CHECK(pp.sends(192) == 3086);
  CHECK(pp.sends(192, true) == 126);
  const parallel::pipeline_parallel plain{.degree = 8};
  CHECK(plain.sends(192, true) == 2 * (192 + 7));
  CHECK(parallel::pipeline_parallel{}.sends(192, true) == 0);
  // 0.34 ms a send: 1.05 s of waits against 43 ms
  const auto t = pp.time(seconds{0}, seconds{0}, 192, seconds{0.34e-3}, true);
  CHECK(t.sends.count() == Approx(126 * 0.34e-3));
}

TEST_CASE("Llama-3.1 405B's split: 126 + 2 layers over 8 stages of 8 chunks") {
  // (126 + 2) / 64 = 2 per chunk; the first chunk of stage 0 and the last of stage 7 hold 1
  const parallel::pipeline_parallel pp{.degree = 8,
                                       .virtual_stages = 8,
                                       .kind = schedule::interleaved,
                                       .account_for_embedding = true,
                                       .account_for_loss = true};
  CHECK_NOTHROW(pp.check(126, 8));
  CHECK(pp.chunk_layers(126, 0, 0) == 1);
  CHECK(pp.chunk_layers(126, 0, 1) == 2);
  CHECK(pp.chunk_layers(126, 7, 7) == 1);
  CHECK(pp.chunk_layers(126, 7, 6) == 2);
  CHECK(pp.stage_layers(126, 0) == 15);
  CHECK(pp.stage_layers(126, 3) == 16);
  CHECK(pp.stage_layers(126, 7) == 15);
  int total = 0;
  for (int i = 0; i < 8; ++i) total += pp.stage_layers(126, i);
  CHECK(total == 126);
  // only the loss counted: 126 + 1 = 127 is no multiple of 64
  parallel::pipeline_parallel loss_only = pp;
  loss_only.account_for_embedding = false;
  CHECK_THROWS_WITH(loss_only.check(126, 8), limits::pipeline_layers_must_split_evenly);
}

namespace {
const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb);
const cluster one_a100 = make_cluster("one A100", presets::a100_sxm4_80gb,
                                      {level{"node", 1, interconnect{5_us, 300_GBps}}});
}  // namespace

TEST_CASE("one GPU: the iteration is micro-batches x (forward + backward) + the optimizer") {
  const transformer m = zoo::gpt2_124m();
  const training t{.batch = 32};
  const parallel::nd s{.micro_batch = 8};
  const auto r = analytic::evaluate(m, s, one_a100, t, a100);
  const auto lc = analytic::lower_layer(m, a100, t, 1, false, 1, 1, 8);
  const double per_mb = 12 * (lc.forward.gpu + lc.backward.gpu) + lc.embedding_forward.gpu +
                        lc.embedding_backward.gpu + lc.head_forward.gpu + lc.head_backward.gpu;
  CHECK(r.micro_batches == 4);
  CHECK(r.time.total().count() == Approx(4 * per_mb + r.time.optimizer.count()));
  CHECK(r.time.data_comm == seconds{});
  CHECK(r.time.pipeline_bubble == seconds{});
  // the optimizer reads the fp32 gradient (4), reads and writes master weight and moments
  // (2 x 12), writes the bf16 working copy (2): 30 B per parameter
  CHECK(r.time.optimizer.count() == Approx(a100.copy.time(30 * m.parameters())));
}

TEST_CASE("tensor-parallel all-reduces: four per layer and micro-batch when they block") {
  const transformer m = zoo::gpt2_355m();  // 24 layers, h = 1024
  // Megatron-LM of 2021: the backward's collectives block too (today's overlaps them with the
  // column-parallel GEMMs: test/unit/frameworks.cpp)
  const training t{.batch = 8, .framework = frameworks::megatron_2021};
  const parallel::nd s{.tensor = {.degree = 8}, .micro_batch = 2};
  const cluster c = presets::dgx_a100(1);
  const auto r = analytic::evaluate(m, s, c, t, a100);
  // b s h x 2 bytes = 2 x 1024 x 1024 x 2 = 4 MiB per all-reduce inside the node, each a call
  // as NCCL prices it: ring/LL128, (14 + 14 x 1.9) us of latency + 10 us of launch + 4 MiB /
  // (240 GB/s x 0.92 x 8 / 14) = 50.6 + 33.2 us (NCCL credits an A100 NVLink 20 of its 25 GB/s;
  // LL128 moves 120 of every 128 bytes; an all-reduce of 8 ranks takes 14 steps)
  const seconds ar = comm::nccl::time(comm::collective::all_reduce, c, {0, 8, 1}, 4_MiB);
  CHECK(ar.count() ==
        Approx((14 + 14 * 1.9 + 10) * 1e-6 + (4_MiB).count() / (240e9 * 0.92 * 8 / 14)));
  CHECK(r.time.tensor_comm.count() == Approx(4 * 24 * 4 * ar.count()));
  // sequence parallelism: each all-reduce becomes an all-gather and a reduce-scatter of the same
  // bytes, two calls that each pay their start-up
  parallel::nd sp = s;
  sp.tensor.sequence = true;
  const seconds ag = comm::nccl::time(comm::collective::all_gather, c, {0, 8, 1}, 4_MiB);
  const seconds rs = comm::nccl::time(comm::collective::reduce_scatter, c, {0, 8, 1}, 4_MiB);
  CHECK(analytic::evaluate(m, sp, c, t, a100).time.tensor_comm.count() ==
        Approx(4 * 24 * 4 * (ag + rs).count()));
}

TEST_CASE("sequence parallelism without tensor parallelism is a named mistake") {
  const parallel::nd s{.tensor = {.degree = 1, .sequence = true}, .data = {.degree = 8}};
  CHECK_THROWS_WITH(
      analytic::evaluate(zoo::gpt2_355m(), s, presets::dgx_a100(1), training{.batch = 8}, a100),
      Catch::Contains("sequence parallelism needs a tensor degree above 1"));
}

TEST_CASE("headroom: CUDA context, one NCCL communicator per axis, allocator slack") {
  // Llama-2 7B on 8 A100-80GB, t = 2, d = 4: a pair communicator (544 MB, tensor) and a group one
  // (688 MB, data) beside the 512 MiB context; 6.1 % of the tensors' peak left reserved-but-free.
  const transformer m = zoo::llama2_7b();
  const training t{.batch = 32, .sequence = 4096};
  const parallel::nd s{.tensor = {.degree = 2}, .data = {.degree = 4}, .micro_batch = 1};
  const auto r = analytic::evaluate(m, s, presets::dgx_a100(1), t, a100);
  CHECK(r.headroom.context.count() == 512.0 * 1024 * 1024);
  CHECK(r.headroom.communicators.count() == 544e6 + 688e6);
  CHECK(r.headroom.fragmentation.count() == Approx(0.061 * r.memory.total().count()));
  CHECK(r.required().count() ==
        Approx(1.061 * r.memory.total().count() + 512.0 * 1024 * 1024 + 1232e6));
  CHECK(r.margin().count() == Approx(80.0 * 1024 * 1024 * 1024 - r.required().count()));
  // a plan whose tensors alone fill 79.96 of 80 GiB does not fit
  report full = r;
  full.memory = {};
  full.memory.other = bytes{79.96 * 1024 * 1024 * 1024};
  full.headroom = analytic::headroom_of(s, t.runtime, full.memory.total());
  CHECK_FALSE(full.fits());
  // tensors only, as the formulas count them
  training bare = t;
  bare.runtime = runtime_memory::none();
  CHECK(analytic::evaluate(m, s, presets::dgx_a100(1), bare, a100).headroom.total().count() == 0);
}

TEST_CASE("pipeline bubble: (p - 1) / (v m), halved by two virtual stages") {
  const transformer m = zoo::gpt3_175b();
  const training t{.batch = 64};
  const cluster c = presets::dgx_a100(8);
  parallel::nd s{.tensor = {.degree = 8}, .pipeline = {.degree = 8}, .micro_batch = 1};
  const auto one = analytic::evaluate(m, s, c, t, a100);
  const double busy = (one.time.forward + one.time.backward + one.time.tensor_comm).count();
  CHECK(one.time.pipeline_bubble.count() / busy == Approx(7.0 / 64).epsilon(0.1));
  s.pipeline.virtual_stages = 2;
  s.pipeline.kind = schedule::interleaved;
  const auto two = analytic::evaluate(m, s, c, t, a100);
  CHECK(two.time.pipeline_bubble.count() == Approx(one.time.pipeline_bubble.count() / 2));
  // interleaving costs p2p: 2 (v m + p - 1) sends instead of 2 (m + p - 1) when each blocks
  // (Megatron-LM before 2023); overlapped (`recipe::overlap_p2p`, the default) only the first
  // micro-batch's 2 (p v - 1) = 30 wait
  CHECK(two.time.pipeline_p2p.count() / one.time.pipeline_p2p.count() ==
        Approx(30.0 / (2 * (64 + 7))));
  training blocking = t;
  blocking.framework.overlap_p2p = false;
  const auto two_blocking = analytic::evaluate(m, s, c, blocking, a100);
  CHECK(two_blocking.time.pipeline_p2p.count() / one.time.pipeline_p2p.count() ==
        Approx((2.0 * 64 + 7) / (64 + 7)));
  // and memory: the first stage holds 1 + (p - 1)/(p v) times the activations
  CHECK(two.memory.activations.count() / one.memory.activations.count() == Approx(1 + 7.0 / 16));
}

TEST_CASE("checkpointing some layers: Megatron's --recompute-num-layers, fms-fsdp's fraction") {
  // GPT-3 175B on t = 8 with sequence parallelism, 8 stages of 12 layers; full recomputation
  // of 3 of each stage's 12 layers (Megatron-LM: --recompute-method block
  // --recompute-num-layers 3; fms-fsdp: selective_checkpointing 1/4)
  const transformer m = zoo::gpt3_175b();
  const training t{.batch = 64};
  const cluster c = presets::dgx_a100(8);
  parallel::nd all{.tensor = {.degree = 8, .sequence = true},
                   .pipeline = {.degree = 8},
                   .recomputation = recompute::full,
                   .micro_batch = 1};
  parallel::nd some = all, none = all;
  some.recompute_layers = 3;
  none.recomputation = recompute::none;
  CHECK(some.checkpointed_layers(m, 0) == 3);
  const auto a = analytic::evaluate(m, all, c, t, a100),
             k = analytic::evaluate(m, some, c, t, a100);
  // a quarter of the layers run their forward again; nothing else changes
  CHECK(k.time.recompute.count() == Approx(a.time.recompute.count() / 4));
  CHECK(k.time.forward.count() == Approx(a.time.forward.count()));
  CHECK(k.time.backward.count() == Approx(a.time.backward.count()));
  // each checkpointed layer keeps its input, 2 s b h / t; the other nine what Korthikanti's
  // Table 2 gives with sequence parallelism and flash attention, 34 s b h / t: per layer
  // (3 x 2 + 9 x 34) / 12 / 8 = 3.25 s b h
  const double sbh = 2048.0 * 12288;
  const auto x = analytic::stage_terms(m, some, t, 0);
  CHECK(analytic::stage_terms(m, all, t, 0).saved == Approx(2 * sbh / 8));
  CHECK(analytic::stage_terms(m, none, t, 0).saved == Approx(34 * sbh / 8));
  CHECK(x.saved == Approx(3.25 * sbh));
  CHECK(x.rebuilt == Approx(analytic::stage_terms(m, none, t, 0).saved));  // one layer rebuilt
  // only with full recomputation, and a count
  parallel::nd bad = some;
  bad.recomputation = recompute::selective;
  CHECK_THROWS_WITH(analytic::evaluate(m, bad, c, t, a100),
                    Catch::Contains("recompute_layers") && Catch::Contains("full"));
  bad = some;
  bad.recompute_layers = -1;
  CHECK_THROWS_AS(analytic::evaluate(m, bad, c, t, a100), plan_error);
}

TEST_CASE("DeepSpeed's checkpoints split over the tensor ranks and kept in host memory") {
  // GPT-3 175B, t = 8 without sequence parallelism, b = 1, s = 2048, fp16, full recomputation:
  // each checkpoint is the layer input, 2048 x 12288 x 2 B = 50,331,648 B on every tensor rank;
  // Megatron-DeepSpeed's --partition-activations keeps 1/8 of it, --checkpoint-in-cpu none
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(8);
  training t{.batch = 64, .sequence = 2048, .precision = precision_mode::fp16_mixed};
  const parallel::nd s{.tensor = {.degree = 8},
                       .pipeline = {.degree = 8},
                       .recomputation = recompute::full,
                       .micro_batch = 1};
  const double input = 2048.0 * 12288 * 2;
  CHECK(analytic::stage_terms(m, s, t, 0).saved == Approx(input));
  CHECK(analytic::checkpoint_io(m, s, c, t).count() == 0);
  t.partition_activations = true;
  CHECK(analytic::stage_terms(m, s, t, 0).saved == Approx(input / 8));
  // before each recomputation the eight parts are gathered again
  const double gather =
      comm::nccl::time(comm::collective::all_gather, c, s.group_of(axis::tensor), bytes{input})
          .count();
  CHECK(analytic::checkpoint_io(m, s, c, t).count() == Approx(gather));
  t.checkpoint_in_cpu = true;
  CHECK(analytic::stage_terms(m, s, t, 0).saved == 0);
  // and the part goes to the host and back over the DGX A100's 32 GB/s PCIe (80 % of it):
  // 2 x 6,291,456 B / 25.6 GB/s = 0.49 ms a layer and micro-batch
  const double copies = 2 * input / 8 / (32e9 * 0.8);
  CHECK(analytic::checkpoint_io(m, s, c, t).count() == Approx(gather + copies));
  // in every checkpointed layer's recomputation: the critical stage's 12 layers in each of the
  // 64 micro-batches (batch 64 on one replica, b = 1)
  training plain = t;
  plain.partition_activations = plain.checkpoint_in_cpu = false;
  const auto a = analytic::evaluate(m, s, c, plain, a100), k = analytic::evaluate(m, s, c, t, a100);
  CHECK(k.time.recompute.count() - a.time.recompute.count() ==
        Approx(64 * 12 * (gather + copies)).epsilon(1e-6));
  CHECK(k.memory.activations < a.memory.activations);
}

TEST_CASE("data parallelism: overlap hides the all-reduce behind backward, up to a bucket") {
  const transformer m = zoo::gpt2_355m();
  const training t{.batch = 64};
  const cluster c = presets::dgx_a100(2);
  parallel::nd s{.data = {.degree = 16, .overlap = 0}, .micro_batch = 4};
  const auto exposed = analytic::evaluate(m, s, c, t, a100);
  // one NCCL all-reduce of every gradient in fp32 over the 16 ranks of two nodes
  const seconds ar =
      comm::nccl::time(comm::collective::all_reduce, c, {0, 16, 1}, bytes{4 * m.parameters()});
  CHECK(exposed.time.data_comm.count() == Approx(ar.count()));
  s.data.overlap = 1;
  const auto hidden = analytic::evaluate(m, s, c, t, a100);
  CHECK(hidden.time.data_comm < exposed.time.data_comm);
  CHECK(hidden.time.data_comm.count() >= Approx(ar.count() * 100e6 / (4 * m.parameters())));
}

TEST_CASE("ZeRO-3 gathers a layer per call: every call pays its start-up") {
  // Llama-2 7B over 16 A100s (two DGX nodes), no overlap: each micro-batch gathers the weights
  // layer by layer for the forward and again for the backward (32 calls of P / 32 bf16 weights
  // each), and reduce-scatters the fp32 gradients once: m (2 x 32 AG(2 P / 32) + RS(4 P)).
  const transformer m = zoo::llama2_7b();
  const training t{.batch = 32, .sequence = 4096};
  const cluster c = presets::dgx_a100(2);
  const parallel::nd s{.data = {.degree = 16, .zero = 3, .overlap = 0},
                       .recomputation = recompute::full,
                       .micro_batch = 1};
  const auto r = analytic::evaluate(m, s, c, t, a100);
  const double P = m.parameters();
  const group g{0, 16, 1};
  const seconds ag = comm::nccl::time(comm::collective::all_gather, c, g, bytes{2 * P / 32});
  const seconds rs = comm::nccl::time(comm::collective::reduce_scatter, c, g, bytes{4 * P});
  CHECK(r.time.data_comm.count() == Approx(2 * (2 * 32 * ag.count() + rs.count())));
  // 32 calls cost more than one whole-model gather: 31 more start-ups
  const seconds whole = comm::nccl::time(comm::collective::all_gather, c, g, bytes{2 * P});
  CHECK(32 * ag.count() > whole.count());
}

TEST_CASE("memory: ZeRO-3 shards everything, 1F1B keeps p micro-batches on the first stage") {
  const transformer m = zoo::llama2_7b();
  const training t{.batch = 64};
  parallel::nd s{
      .data = {.degree = 8, .zero = 3}, .recomputation = recompute::full, .micro_batch = 1};
  const auto mem = analytic::stage_memory(m, s, t, 0);
  CHECK(mem.model_states().count() == Approx(18.0 / 8 * m.parameters()));
  parallel::nd pp{.pipeline = {.degree = 4}, .data = {.degree = 2}, .micro_batch = 1};
  const auto first = analytic::stage_memory(m, pp, t, 0);
  const auto last = analytic::stage_memory(m, pp, t, 3);
  // 8 layers each; stage 0 holds 4 micro-batches, stage 3 one
  CHECK(first.activations.count() == Approx(4 * last.activations.count()));
  // the peak is the largest of stages 0, 1 and 3; asked to stop once a total is enough, it
  // looks no further than the first stage whose total is
  const auto keeps = analytic::keeps_of(m, pp, t);
  const auto peak = analytic::peak_stage_memory(m, pp, t, keeps);
  CHECK(peak.total() == first.total());  // the first stage, fullest here
  int asked = 0;
  const auto stopped = analytic::peak_stage_memory(m, pp, t, keeps, [&](bytes b) {
    ++asked;
    return b >= first.total();
  });
  CHECK(asked == 1);
  CHECK(stopped.stage == 0);
  int never = 0;
  const auto all = analytic::peak_stage_memory(m, pp, t, keeps, [&](bytes) { return ++never < 0; });
  CHECK(never == 2);  // stages 1 and 3 looked at too
  CHECK(all.total() == peak.total());
}

TEST_CASE("a plan is a constexpr value: Llama-2 7B with ZeRO-3 fits 8 x A100-40GB") {
  constexpr transformer_plan p{
      zoo::llama2_7b(), presets::dgx_a100_40gb(1),
      parallel::nd{
          .data = {.degree = 8, .zero = 3}, .recomputation = recompute::full, .micro_batch = 1},
      training{.batch = 64, .sequence = 4096}};
  STATIC_REQUIRE(peak_memory(p) <= 40_GiB);
  STATIC_REQUIRE(iteration_time(p) > 0_s);
}

TEST_CASE("one training struct: each family reads its fields and its conventions") {
  // left automatic, the precision and optimizer take the family's convention
  constexpr training t{.batch = 64};
  STATIC_REQUIRE(t.element_type() == dtype::fp32);  // ParaDL: every tensor fp32 ...
  STATIC_REQUIRE(t.delta() == 4);
  STATIC_REQUIRE(t.cnn_optimizer() == optimizer::sgd);           // ... and no optimizer state
  STATIC_REQUIRE(t.mode() == precision_mode::bf16_mixed);        // transformers: bf16 mixed ...
  STATIC_REQUIRE(t.transformer_optimizer() == optimizer::adam);  // ... with Adam
  // Megatron's mixed-precision Adam: fp32 master (4) + two fp32 moments (8) per parameter
  STATIC_REQUIRE(t.optimizer_bytes() == 12);

  // the same value sets up a CNN plan and a transformer plan
  constexpr plan cnn{zoo::resnet50(), presets::abci(4), parallel::data{.p = 4}, t};
  constexpr transformer_plan llm{zoo::gpt2_124m(), presets::dgx_a100(1),
                                 parallel::nd{.data = {.degree = 8}, .micro_batch = 8}, t};
  // ResNet-50 data parallelism: weights, gradients (2 x 4 B x 25.6 M), no optimizer states
  STATIC_REQUIRE(evaluate(cnn).memory.optimizer_states == bytes{0});
  CHECK(evaluate(cnn).memory.weights.count() == Approx(4.0 * zoo::resnet50().params()));
  STATIC_REQUIRE(iteration_time(llm) > 0_s);
  // ... and both evaluate to the one report; ParaDL's gradient exchange is its data_comm term,
  // and its model counts tensors only (no headroom)
  STATIC_REQUIRE(std::is_same_v<decltype(evaluate(cnn)), decltype(evaluate(llm))>);
  STATIC_REQUIRE(evaluate(cnn).time.data_comm > 0_s);
  STATIC_REQUIRE(evaluate(cnn).time.tensor_comm == 0_s);
  STATIC_REQUIRE(evaluate(cnn).required() == evaluate(cnn).memory.total());
  STATIC_REQUIRE(evaluate(llm).required() > evaluate(llm).memory.total());
  // given explicitly, a field means the same to both: Adam on the CNN keeps 2 states (8 B)
  constexpr training adam{.batch = 64, .optim = optimizer::adam};
  CHECK(evaluate(plan{zoo::resnet50(), presets::abci(4), parallel::data{.p = 4}, adam})
            .memory.optimizer_states.count() == Approx(8.0 * zoo::resnet50().params()));

  // a mode the family cannot run is a named mistake
  CHECK_THROWS_WITH(evaluate(plan{zoo::resnet50(), presets::abci(4), parallel::data{.p = 4},
                                  training{.batch = 64, .precision = precision_mode::bf16_mixed}}),
                    Catch::Contains("ParaDL's CNN model keeps every tensor in one type"));
  CHECK_THROWS_WITH(evaluate(transformer_plan{
                        zoo::gpt2_124m(), presets::dgx_a100(1), parallel::nd{.data = {.degree = 8}},
                        training{.batch = 64, .precision = precision_mode::bf16}}),
                    Catch::Contains("transformer plans train in fp32 or in a mixed mode"));
}

TEST_CASE("the sweep ranks valid, fitting plans; SC'21's configuration is among them") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  const training t{.batch = 1536, .sequence = 2048};
  const auto r = search::sweep(m, c, t, a100);
  REQUIRE(r.best.size() == 10);
  CHECK(r.fitting < r.candidates);
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    CHECK_NOTHROW(r.best[i].strategy.check(m, t, 1024));
    CHECK(r.best[i].memory <= c.dev.memory);
    if (i > 0) CHECK(r.best[i - 1].time.total() <= r.best[i].time.total());
  }
  // the sweep contains t=8, p=8 (v=2), d=16, b=1, full recompute: the best is no slower
  const parallel::nd sc21{
      .tensor = {.degree = 8},
      .pipeline = {.degree = 8, .virtual_stages = 2, .kind = schedule::interleaved},
      .data = {.degree = 16},
      .recomputation = recompute::full,
      .micro_batch = 1};
  CHECK(r.best.front().time.total() <= analytic::evaluate(m, sc21, c, t, a100).iteration_time());
  // a 175B model never fits without model parallelism: no plan with t = p = 1 survives, even
  // with ZeRO-3 (2 x 175B x 2 B of gathered layers is not the problem; activations of a
  // 12288-wide model at 2048 tokens without recomputation are, and the rest do not divide)
  search::transformer_space dp_only{.tensor = {1}, .pipeline = {1}, .zero = {0, 1, 2}};
  const auto none = search::sweep(m, c, {.batch = 2048, .sequence = 2048}, a100, dp_only);
  CHECK(none.fitting == 0);
  CHECK(none.candidates > 0);
}

TEST_CASE("expert parallelism: experts / e per rank, four all-to-alls per layer") {
  const transformer m = zoo::mixtral_8x7b();
  const cluster c = presets::dgx_h100(1);
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb);
  const training t{.batch = 16, .sequence = 4096};
  const parallel::nd s{.expert = {.degree = 8}, .recomputation = recompute::full};
  const auto n = analytic::parameters_on(m, s, 0);
  CHECK(n.expert == 32 * m.mlp_parameters());  // one expert of each of the 32 layers
  const auto r = analytic::evaluate(m, s, c, t, h100);
  // per micro-batch and layer: dispatch and combine forward, again backward; b s k h x 2 bytes
  const seconds a2a = comm::direct::time(comm::collective::all_to_all, c, {0, 8, 1},
                                         bytes{1 * 4096.0 * 2 * 4096 * 2});
  CHECK(r.micro_batches == 2);
  CHECK(r.time.expert_comm.count() == Approx(2 * 32 * 4 * a2a.count()));
  // the dense weights are replicated over the 8 expert ranks: ZeRO-1 shards their optimizer
  // states eight ways, the experts' not at all (d = 1)
  parallel::nd z = s;
  z.data.zero = 1;
  const auto sharded = analytic::stage_memory(m, z, t, 0);
  CHECK(sharded.optimizer_states.count() == Approx(12 * ((n.dense) / 8 + n.expert)));
}

TEST_CASE("context parallelism halves the activations; GPipe keeps every micro-batch") {
  const transformer m = zoo::llama3_8b();
  const training t{.batch = 16, .sequence = 8192};
  const parallel::nd one{.data = {.degree = 1}, .recomputation = recompute::selective};
  parallel::nd two = one;
  two.context.degree = 2;
  CHECK(analytic::stage_memory(m, two, t, 0).activations.count() ==
        Approx(analytic::stage_memory(m, one, t, 0).activations.count() / 2));
  parallel::nd pp{.pipeline = {.degree = 4}, .micro_batch = 1};
  parallel::nd gpipe = pp;
  gpipe.pipeline.kind = schedule::gpipe;
  // 16 micro-batches in flight instead of p = 4
  CHECK(analytic::stage_memory(m, gpipe, t, 0).activations.count() ==
        Approx(4 * analytic::stage_memory(m, pp, t, 0).activations.count()));
}

TEST_CASE("fp8 GEMMs run at the fp8 peak") {
  const transformer m = zoo::llama3_70b();
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb);
  const training bf16{.batch = 8, .sequence = 8192};
  training fp8 = bf16;
  fp8.precision = precision_mode::fp8_mixed;
  const auto a = analytic::lower_layer(m, h100, bf16, 8, true, 1, 1, 1);
  const auto b = analytic::lower_layer(m, h100, fp8, 8, true, 1, 1, 1);
  CHECK(b.forward.gpu < a.forward.gpu);
  CHECK(b.forward.gpu > a.forward.gpu / 2);  // attention and memory-bound kernels do not speed up
}

TEST_CASE("the sweep covers expert and context parallelism when asked") {
  const transformer m = zoo::mixtral_8x7b();
  const cluster c = presets::dgx_h100(4);
  const training t{.batch = 64, .sequence = 8192};
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  search::transformer_space space{.expert = {1, 2, 4, 8, 3}, .context = {1, 2}, .keep = 1000};
  const auto r = search::sweep(m, c, t, h100, space);
  REQUIRE(!r.best.empty());
  bool expert = false, context = false;
  for (const auto& p : r.best) {
    CHECK_NOTHROW(p.strategy.check(m, t, 32));
    expert = expert || p.strategy.expert.degree > 1;
    context = context || p.strategy.context.degree > 1;
    CHECK(p.strategy.expert.degree != 3);  // 3 does not divide 8 experts
    // every timed plan has a finite, positive time made of non-negative parts
    CHECK(p.time.total() > seconds{});
    CHECK(p.time.expert_comm >= seconds{});
    CHECK(p.time.context_comm >= seconds{});
    CHECK(std::isfinite(p.time.total().count()));
  }
  CHECK(expert);
  CHECK(context);
}

TEST_CASE("every zoo model sweeps to finite plans on 64 H100") {
  const cluster c = presets::dgx_h100(8);
  const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  for (const transformer& m :
       {zoo::gpt2_124m(), zoo::gpt2_1_5b(), zoo::bert_large(), zoo::gpt_18b(), zoo::llama2_13b(),
        zoo::llama2_70b(), zoo::llama3_8b(), zoo::llama3_70b(), zoo::mixtral_8x7b()}) {
    const training t{.batch = 256};
    const auto r = search::sweep(m, c, t, h100, {.keep = 3});
    INFO(m.name);
    REQUIRE(!r.best.empty());
    for (const auto& p : r.best) {
      CHECK(std::isfinite(p.time.total().count()));
      CHECK(p.time.total() > seconds{});
      CHECK(p.memory <= c.dev.memory);
    }
    if (m.name == zoo::gpt2_124m().name) {
      // 124M parameters fit every plan, and model parallelism only adds communication: the
      // best is data parallelism over all 64 GPUs, each with its 256 / 64 = 4 sequences
      CHECK(r.fitting == r.candidates);
      const parallel::nd& best = r.best.front().strategy;
      CHECK((best.tensor.degree == 1 && best.pipeline.degree == 1 && best.data.degree == 64 &&
             best.micro_batch == 4));
    }
  }
}

TEST_CASE("the memory verdict has three states: fits, tight, does not fit") {
  // 20 GiB of tensors, a 0.5 GiB context, 1 GiB of NCCL buffers and 1.22 GiB of allocator slack
  // (6.1 % of the tensors): 22.72 GiB required, 21.5 GiB without the slack
  report r;
  const double gib = 1024.0 * 1024 * 1024;
  r.memory.activations = bytes{20 * gib};
  r.headroom = {.context = bytes{0.5 * gib},
                .communicators = bytes{1 * gib},
                .fragmentation = bytes{1.22 * gib}};
  r.capacity = bytes{24 * gib};
  CHECK(r.verdict() == memory_verdict::fits);
  r.capacity = bytes{22 * gib};  // 21.5 <= 22 < 22.72
  CHECK(!r.fits());
  CHECK(r.verdict() == memory_verdict::tight);
  CHECK(to_string(r.verdict()) == "tight");
  r.capacity = bytes{21 * gib};  // 21.5 > 21
  CHECK(r.verdict() == memory_verdict::does_not_fit);
  CHECK(to_string(r.verdict()) == "does not fit");
}

}  // namespace unit_transformer
