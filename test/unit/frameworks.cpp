// The data-parallel engines of the framework recipes (frameworks/deepspeed.hpp, fsdp.hpp):
// their model states, buffers and collective schedules worked by hand, their legality rules,
// ZeRO-Offload against DeepSpeed's own tutorial run, and the simulator against the closed form.
#include <catch2/catch.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>

namespace unit_frameworks {

using namespace strata;
using namespace strata::literals;

namespace {
// GPT-2 355M: 24 layers of 12 h^2 + 13 h = 12,596,224 parameters (h = 1024), the tied
// embedding 50257 h = 51,463,168, positions 1024 h = 1,048,576, the final norm 2 h:
// P = 24 x 12,596,224 + 52,511,744 + 2,048 = 354,823,168.
constexpr double P = 354'823'168, unit = 12'596'224;

report run(const frameworks::recipe& fw, int zero, double overlap = 1) {
  const parallel::nd s{.data = {.degree = 8, .zero = zero, .overlap = overlap}};
  training tr{.batch = 8, .sequence = 1024};
  tr.framework = fw;
  return analytic::evaluate(zoo::gpt2_355m(), s, presets::dgx_a100(1), tr);
}
}  // namespace

TEST_CASE("the parameter count the hand-worked numbers start from") {
  const parallel::nd s{.data = {.degree = 8}};
  CHECK(analytic::parameters_on(zoo::gpt2_355m(), s, 0).dense == P);
  CHECK(zoo::gpt2_355m().layer_parameters() == unit);
}

TEST_CASE("DeepSpeed ZeRO-3: 16 B per parameter over the ranks, its buckets, an fp32 step copy") {
  const auto r = run(frameworks::deepspeed, 3);
  // 16-bit weights and gradient partitions, fp32 master + Adam moments: (2 + 2 + 12) P / 8
  CHECK(r.memory.weights.count() == Approx(2 * P / 8));
  CHECK(r.memory.optimizer_states.count() == Approx(12 * P / 8));
  // buffers: the contiguous gradient bucket, min(5e8 elements x 2 B, 2 P) = 709,646,336, plus
  // the module in use (the MLP's 4 h x h = 4,194,304 elements, 2 B each) and the prefetch
  // bucket (5e7 elements x 2 B): 709,646,336 + 8,388,608 + 1e8 = 818,034,944
  CHECK(r.memory.buffers.count() == Approx(818'034'944.0));
  // the step converts the rank's 16-bit gradient partition to fp32 (P / 8 < sub_group_size)
  const training tr{.batch = 8, .sequence = 1024, .framework = frameworks::deepspeed};
  const parallel::nd s{.data = {.degree = 8, .zero = 3}};
  const auto terms = analytic::stage_terms(zoo::gpt2_355m(), s, tr, 0);
  CHECK(terms.gradients == Approx(2 * P / 8));
  CHECK(terms.update_buffer == Approx(4 * P / 8));
  // DeepSpeed's own estimator counts 18 B per parameter: ours are 16 at rest and 20 in the step
  CHECK(analytic::deepspeed_zero3({.parameters = P, .largest_layer = 0, .gpus_per_node = 8})
            .gpu.count() == Approx(18 * P / 8));
}

TEST_CASE("parallel::zero_memory_of: one stage's states and buffers from its parameters") {
  // the policy alone, without a model: 1e9 dense parameters (1e8 of them the embedding) and
  // 4e8 expert ones on a rank whose dense states are sharded 8 ways and expert states 4 ways
  const parallel::stage_parameters held{.dense = 1e9, .expert = 4e8, .embedding = 1e8};
  const parallel::zero_placement x{.dense_shards = 8,
                                   .expert_shards = 4,
                                   .trained = held,
                                   .engine = {.unit = 5e7,
                                              .trained = 1.4e9,
                                              .weights = 1.4e9,
                                              .ddp_bucket = 0,
                                              .replicated = true},
                                   .paged = 0,
                                   .frozen = 0,
                                   .frozen_embedding = 0};
  const training tr{.batch = 8, .sequence = 1024, .framework = frameworks::deepspeed};
  const auto modules = [] { return parallel::partitioned_modules{1e7, 4}; };
  // ZeRO-1 under DeepSpeed: 16-bit weights (2 B) and gradients (2 B) whole, fp32 master and
  // Adam moments (12 B) sharded: 12 x (1e9 / 8 + 4e8 / 4) = 2.7e9; the rank's partition of the
  // reduced gradients copied into a buffer it keeps (`contiguous_gradients`): 2 x 2.25e8
  const auto z1 = parallel::zero_memory_of(1, tr, held, x, modules);
  CHECK(z1.weights == 2 * 1.4e9);
  CHECK(z1.gradients == Approx(2 * 1.4e9 + 2 * 2.25e8));
  CHECK(z1.optimizer == Approx(2.7e9));
  // the embedding's part of the dense ones, once more on its own: 2 + 2 + 2 / 8 + 12 / 8 =
  // 5.75 B each, its gradients 2 + 2 / 8
  CHECK(z1.embedding_states == Approx(5.75e8));
  CHECK(z1.head_gradients == Approx(2.25e8));
  // the contiguous gradient bucket: min(5e8 elements x 2 B, 1.4e9 x 2 B) = 1e9 B
  CHECK(z1.buffers == 1e9);
  // the step's flattened 16-bit gradient partition and its fp32 copy at once:
  // (2 + 4) x (1.25e8 + 1e8) = 1.35e9 B
  CHECK(z1.update_buffer == Approx(1.35e9));
  // ZeRO-3 also shards weights and gradients (16 B per parameter over the shards) and gathers
  // the largest module (1e7 x 2 B) and the prefetch bucket (5e7 elements x 2 B) beside the bucket
  const auto z3 = parallel::zero_memory_of(3, tr, held, x, modules);
  CHECK(z3.weights + z3.gradients + z3.optimizer == Approx(16 * (1e9 / 8 + 4e8 / 4)));
  CHECK(z3.buffers == Approx(1e9 + 2e7 + 1e8));
  // stage 3 converts one sub_group_size group (1e9 elements) at most: the partition, 2.25e8
  CHECK(z3.update_buffer == Approx(9e8));
}

TEST_CASE("FSDP FULL_SHARD: no 16-bit weights at rest, fp32 gradient shards, two units gathered") {
  const auto r = run(frameworks::fsdp, 3);
  CHECK(r.memory.weights.count() == 0);
  CHECK(r.memory.optimizer_states.count() == Approx(12 * P / 8));
  // one micro-batch under zero_grad(set_to_none=True): the loss moment, no gradients yet
  CHECK(r.memory.gradients.count() == 0);
  // a unit's bf16 gradients and their fp32 copy (6 B) and two gathered bf16 units (4 B)
  CHECK(r.memory.buffers.count() == Approx(10 * unit));
  // SHARD_GRAD_OP keeps the gathered 16-bit weights from the forward to the backward
  CHECK(run(frameworks::fsdp, 2).memory.weights.count() == Approx(2 * P));
}

TEST_CASE("Hugging Face under DeepSpeed: DeepSpeed's own mixed precision, no autocast") {
  // transformers' Trainer leaves autocast off under DeepSpeed ("deepspeed manages its own fp16")
  // and DeepSpeed casts the model to 16 bits, with fp32 masters in its optimizer: 2 B weights,
  // 2 B gradients, 4 + 8 B of optimizer state; under autocast the weights stay fp32 (4 B)
  const frameworks::recipe ds =
      frameworks::with_engine(frameworks::huggingface, frameworks::deepspeed_zero);
  CHECK(frameworks::huggingface.autocast);
  CHECK_FALSE(ds.autocast);
  CHECK(frameworks::with_engine(frameworks::huggingface, frameworks::fsdp_units).autocast);
  const training hf{
      .batch = 8, .precision = precision_mode::bf16_mixed, .framework = frameworks::huggingface};
  training under_ds = hf;
  under_ds.framework = ds;
  CHECK(hf.weight_bytes() == 4);
  CHECK(under_ds.weight_bytes() == 2);
  CHECK(under_ds.gradient_bytes() == 2);
  CHECK(under_ds.optimizer_bytes() == 12);
}

TEST_CASE("ZeRO-3's collective schedule per engine, priced per call") {
  const transformer m = zoo::gpt2_355m();
  const parallel::nd s{.data = {.degree = 8, .zero = 3}};
  auto calls = [&](const frameworks::recipe& fw, const transformer& model) {
    training tr{.batch = 8, .sequence = 1024};
    tr.framework = fw;
    return analytic::collective_calls(
        model, s, tr, model.layers,
        analytic::parameters_on(model, s, 0).dense * tr.gradient_bytes());
  };
  // DeepSpeed gathers each module above 1e5 elements: QKV, projection, MLP up and down
  CHECK(calls(frameworks::deepspeed, m).gathers == 24 * 4);
  CHECK(calls(frameworks::deepspeed, m).reduces == 1);  // 2 P < one 1e9-byte bucket
  // Hugging Face's Llama modules: q, k, v, o, gate, up, down
  CHECK(calls(frameworks::with_engine(frameworks::huggingface, frameworks::deepspeed_zero),
              zoo::llama2_7b())
            .gathers == 32 * 7);
  CHECK(calls(frameworks::fsdp, m).gathers == 24);  // one per unit
  CHECK(calls(frameworks::fsdp, m).reduces == 24);
  CHECK(calls(frameworks::megatron, m).gathers == 24);
  CHECK(calls(frameworks::megatron, m).reduces == 1);

  // Nothing hidden (overlap 0), one micro-batch: data_comm = 2 AG + RS inside one DGX A100, each
  // call priced as NCCL's tuner prices it (comm/nccl.hpp): the fastest of latency + S / bandwidth
  // over algorithms and protocols, plus 10 us of launch. 8 ranks, ring: 7 steps; the bus
  // bandwidth is 12 NVLinks x 20 GB/s (NCCL credits an A100 NVLink 20 of its 25) = 240 GB/s,
  // x 8 / 7 as algorithm bandwidth. Simple: (8.4 + 7 x 3.4) us = 32.2 us, 274.29 GB/s; LL128:
  // (14 + 7 x 1.9) us = 27.3 us, 0.92 of that = 252.34 GB/s. Weights in bf16: 2 P = 709,646,336 B.
  // - DeepSpeed: AG 96 calls of 7,392,149 B, LL128: 27.3 + 29.29 + 10 = 66.59 us, x 96 = 6.3930
  //   ms; RS of bf16 gradients, one bucket, Simple: 32.2 + 2587.25 + 10 us = 2.6295 ms;
  //   2 x 6.3930 + 2.6295 = 15.4155 ms
  // - Megatron: AG 24 calls of 29,568,597 B, Simple: 32.2 + 107.80 + 10 = 150.00 us, x 24 =
  //   3.6001 ms; RS of fp32 main_grad (4 P), one call: 32.2 + 5174.50 + 10 us = 5.2167 ms;
  //   total 12.4169 ms
  // - FSDP: AG as Megatron; RS per unit in fp32, 24 calls of 59,137,195 B: 32.2 + 215.60 + 10 =
  //   257.80 us, x 24 = 6.1873 ms; total 13.3874 ms
  CHECK(run(frameworks::deepspeed, 3, 0).time.data_comm.count() ==
        Approx(15.4155e-3).epsilon(1e-4));
  CHECK(run(frameworks::megatron, 3, 0).time.data_comm.count() == Approx(12.4169e-3).epsilon(1e-4));
  CHECK(run(frameworks::fsdp, 3, 0).time.data_comm.count() == Approx(13.3874e-3).epsilon(1e-4));
}

TEST_CASE("DeepSpeed's pipeline engine keeps its send and receive buffers") {
  // GPT-2 355M (h = 1024) on 4 stages x 2 tensor ranks, micro-batch 1 of 1024 tokens, 8
  // micro-batches: a slot holds the received activation, 1 x 1024 x 1024 x 2 B = 2,097,152 B, and
  // the output partitioned over the 2 tensor ranks, 1,048,576 B. Slots: max(2, min(4 - i, 8)).
  const transformer m = zoo::gpt2_355m();
  training tr{.batch = 8, .sequence = 1024};
  tr.framework = frameworks::deepspeed;
  const parallel::nd s{.tensor = {.degree = 2}, .pipeline = {.degree = 4}, .micro_batch = 1};
  CHECK(analytic::pipe_buffers(m, s, tr, 0) == 4 * 1'048'576.0);  // no input: the tokens
  CHECK(analytic::pipe_buffers(m, s, tr, 1) == 3 * (2'097'152.0 + 1'048'576.0));
  CHECK(analytic::pipe_buffers(m, s, tr, 2) == 2 * (2'097'152.0 + 1'048'576.0));
  CHECK(analytic::pipe_buffers(m, s, tr, 3) == 2 * 2'097'152.0);  // no output: the loss
  // in the stage's buffers, beside no data-parallel bucket (d = 1)
  CHECK(analytic::stage_memory(m, s, tr, 1).buffers.count() == 3 * (2'097'152.0 + 1'048'576.0));
  // Megatron frees an output's data once it is sent
  tr.framework = frameworks::megatron;
  CHECK(analytic::pipe_buffers(m, s, tr, 1) == 0);
}

TEST_CASE("the engines' misuse is a named error") {
  const transformer m = zoo::gpt2_355m();
  auto check = [&](const frameworks::recipe& fw, parallel::nd s) {
    training tr{.batch = 16, .sequence = 1024};
    tr.framework = fw;
    (void)analytic::evaluate(m, s, presets::dgx_a100(2), tr);
  };
  const parallel::nd pipe{.pipeline = {.degree = 2}, .data = {.degree = 8, .zero = 2}};
  CHECK_THROWS_WITH(check(frameworks::deepspeed, pipe),
                    Catch::Contains("incompatible with pipeline parallelism"));
  CHECK_NOTHROW(check(frameworks::megatron, pipe));
  const parallel::nd z1{.data = {.degree = 16, .zero = 1}};
  CHECK_THROWS_WITH(check(frameworks::fsdp, z1), Catch::Contains("FSDP has no ZeRO-1"));
  auto offloaded = [](frameworks::recipe r, frameworks::offload_device opt,
                      frameworks::offload_device par) {
    r.data.offload_optimizer = opt;
    r.data.offload_parameters = par;
    return r;
  };
  using frameworks::offload_device;
  CHECK_THROWS_WITH(check(offloaded(frameworks::fsdp, offload_device::cpu, offload_device::none),
                          {.data = {.degree = 16, .zero = 3}}),
                    Catch::Contains("DeepSpeed engine only"));
  CHECK_THROWS_WITH(
      check(offloaded(frameworks::deepspeed, offload_device::cpu, offload_device::none),
            {.data = {.degree = 16}}),
      Catch::Contains("ZeRO stage of 1 or more"));
  CHECK_THROWS_WITH(
      check(offloaded(frameworks::deepspeed, offload_device::none, offload_device::cpu),
            {.data = {.degree = 16, .zero = 2}}),
      Catch::Contains("needs ZeRO stage 3"));
  CHECK_THROWS_WITH(check(frameworks::fsdp, {.data = {.degree = 16, .zero = 3, .shard_group = 3}}),
                    Catch::Contains("shard group"));
  // a cluster without host figures cannot offload
  training tr{.batch = 16, .sequence = 1024};
  tr.framework = offloaded(frameworks::deepspeed, offload_device::cpu, offload_device::none);
  CHECK_THROWS_WITH(
      analytic::evaluate(m, {.data = {.degree = 8, .zero = 2}}, presets::dgx1_v100(1), tr),
      Catch::Contains("no host link"));
}

TEST_CASE("ZeRO-Offload's step against DeepSpeed's tutorial run (10B GPT-2 on one V100)") {
  // docs/_tutorials/zero-offload.md (test/data/published_frameworks.csv): 50 layers of h = 4096,
  // f = 16384, V = 50304, s = 1024, batch 10, fp16, ZeRO-2 with CPU Adam; its optimizer phase
  // took 7.6-8.0 s. Here: the gradient partition's copy hides behind the backward, CPU Adam
  // 10.28e9 / 1.62e9 = 6.35 s, the fp16 weights back over PCIe Gen3 (16 GB/s x 0.8): 1.6 s.
  const transformer m{.name = "GPT-2 10B",
                      .layers = 50,
                      .hidden = 4096,
                      .heads = 32,
                      .ffn = 16384,
                      .vocabulary = 50304,
                      .sequence = 1024};
  cluster c = make_cluster("V100 x1", presets::v100_sxm2_32gb,
                           {level{"node", 1, interconnect{5_us, 150_GBps}}});
  c.host = {16_GBps, cpu_adam_rate, {}, 1536_GiB};
  training tr{.batch = 10, .sequence = 1024, .precision = precision_mode::fp16_mixed};
  tr.framework = frameworks::deepspeed;
  tr.framework.data.offload_optimizer = frameworks::offload_device::cpu;
  const parallel::nd s{.data = {.degree = 1, .zero = 2},
                       .recomputation = parallel::recompute::full,
                       .micro_batch = 10};
  const auto r = analytic::evaluate(m, s, c, tr);
  const double n = analytic::parameters_on(m, s, 0).dense;
  CHECK(n == Approx(10.28e9).epsilon(2e-3));
  CHECK(r.time.optimizer.count() == Approx(n / cpu_adam_rate + 2 * n / 12.8e9));
  CHECK(r.time.optimizer.count() > 7.6);
  CHECK(r.time.optimizer.count() < 8.0);
  // on the GPU: 16-bit weights only (2 B per parameter); optimizer states live on the host
  CHECK(r.memory.optimizer_states.count() == 0);
  CHECK(r.memory.weights.count() == Approx(2 * n));
}

TEST_CASE("hybrid sharding: states over the node, gradient shards all-reduced across nodes") {
  const transformer m = zoo::gpt2_355m();
  training tr{.batch = 16, .sequence = 1024};
  tr.framework = frameworks::fsdp;
  const cluster c = presets::dgx_a100(2);
  const auto full = analytic::evaluate(m, {.data = {.degree = 16, .zero = 3, .overlap = 0}}, c, tr);
  const auto hybrid = analytic::evaluate(
      m, {.data = {.degree = 16, .zero = 3, .overlap = 0, .shard_group = 8}}, c, tr);
  CHECK(hybrid.memory.optimizer_states.count() == Approx(12 * P / 8));
  CHECK(full.memory.optimizer_states.count() == Approx(12 * P / 16));
  // the gathers stay on NVLink: 24 calls of P / 24 bf16 weights on 8 ranks instead of 16
  const group node{0, 8, 1}, both{0, 16, 1}, across{0, 2, 8};
  const auto ag = comm::collective::all_gather, rs = comm::collective::reduce_scatter;
  CHECK(comm::nccl::time(ag, c, node, bytes{2 * P / 24}) <
        comm::nccl::time(ag, c, both, bytes{2 * P / 24}));
  // nothing hidden: per unit two gathers and a reduce-scatter of its fp32 gradients in the node,
  // then an all-reduce of the 1/8 shard between the nodes (one GPU per node, on its own NIC)
  const seconds per_unit =
      2 * comm::nccl::time(ag, c, node, bytes{2 * P / 24}) +
      comm::nccl::time(rs, c, node, bytes{4 * P / 24}) +
      comm::nccl::time(comm::collective::all_reduce, c, across, bytes{4 * P / 8 / 24});
  CHECK(hybrid.time.data_comm.count() == Approx(24 * per_unit.count()));
  const seconds full_per_unit = 2 * comm::nccl::time(ag, c, both, bytes{2 * P / 24}) +
                                comm::nccl::time(rs, c, both, bytes{4 * P / 24});
  CHECK(full.time.data_comm.count() == Approx(24 * full_per_unit.count()));
}

TEST_CASE("gradients made in the backward accumulate through later micro-batches") {
  const transformer m = zoo::gpt2_355m();
  const parallel::nd s{.micro_batch = 4};
  training one{.batch = 4, .sequence = 1024, .framework = frameworks::pytorch_eager};
  training two = one;
  two.batch = 8;
  const cluster gpu = make_cluster("A100", presets::a100_sxm4_80gb,
                                   {level{"node", 1, interconnect{5_us, 300_GBps}}});
  const auto a = analytic::evaluate(m, s, gpu, one);  // 1 micro-batch
  const auto b = analytic::evaluate(m, s, gpu, two);  // 2 micro-batches
  // fp32 gradients (autocast) of every parameter during the second micro-batch
  CHECK(b.memory.gradients.count() == Approx(4 * P));
  CHECK(a.memory.gradients.count() < 4 * P);
}

TEST_CASE("per recipe, the simulator reproduces the closed form where their assumptions agree") {
  const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
  const sim::transformer_options off{.overlap = false, .buckets = 1};
  frameworks::recipe offload = frameworks::deepspeed;
  offload.data.offload_optimizer = frameworks::offload_device::cpu;
  for (const transformer& m : {zoo::gpt2_355m(), zoo::llama2_7b()})
    for (const frameworks::recipe& fw :
         {frameworks::megatron, frameworks::deepspeed, frameworks::fsdp, offload})
      for (const int zero : {0, 1, 2, 3})
        for (const int d : {2, 4}) {
          const bool fsdp = fw.data.engine == frameworks::data_engine::fsdp;
          const bool offloads = fw.data.offload_optimizer != frameworks::offload_device::none;
          if ((fsdp && zero == 1) || (offloads && zero == 0)) continue;
          training tr{.batch = 8, .sequence = 1024};
          tr.framework = fw;
          const parallel::nd s{.data = {.degree = d, .zero = zero, .overlap = 0}, .micro_batch = 2};
          const cluster c0 = presets::dgx_a100(1);
          cluster used = make_cluster("part", c0.dev, {level{"node", d, c0.levels[0].pair}});
          used.host = c0.host;
          const auto x = sim::simulate(m, s, used, tr, a100, off);
          const auto cf = analytic::evaluate(m, s, used, tr, a100);
          INFO(m.name << " " << fw.name << " zero " << zero << " d " << d);
          CHECK(x.run.peak_memory[0] == Approx(cf.memory.total().count()).epsilon(1e-9));
          // nothing overlaps in either: ZeRO-0/1 reduce after the last backward, ZeRO-2/3 after
          // every micro-batch before the next starts, ZeRO-3 gathers each layer before it runs.
          // An eager host (FSDP's module code) keeps issuing kernels while the GPU waits for a
          // gather in the simulator; the closed form adds the host's exposure apart from them.
          if (zero <= 1 || !fw.eager)
            CHECK(x.iteration.count() == Approx(cf.iteration_time().count()).epsilon(1e-9));
          else  // never slower
            CHECK(x.iteration.count() <= cf.iteration_time().count() * (1 + 1e-9));
        }
}

TEST_CASE("LoRA: frozen weights keep their copy only, adapters train, no weight-gradient GEMMs") {
  const transformer m = zoo::llama2_7b();
  const cluster gpu = make_cluster("A100", presets::a100_sxm4_80gb,
                                   {level{"node", 1, interconnect{5_us, 300_GBps}}});
  training tr{.batch = 4, .sequence = 2048, .framework = frameworks::huggingface};
  const parallel::nd s{.recomputation = parallel::recompute::full, .micro_batch = 4};
  const auto full = analytic::evaluate(m, s, gpu, tr);
  tr.lora = {.rank = 16, .targets = lora_targets::all_linear};
  // per layer r (n + k): q, k, v, o 16 x (4096 + 4096) = 131,072 each; gate and up
  // 16 x (11008 + 4096) = 241,664 each; down the same: 1,249,280; x 32 layers = 39,976,960
  CHECK(analytic::trained_on(m, s, tr, 0).dense == 39'976'960);
  const auto lora = analytic::evaluate(m, s, gpu, tr);
  const double base = analytic::parameters_on(m, s, 0).dense;
  // fp32 parameters under autocast: 4 B each, frozen or not; Adam's two moments for adapters
  CHECK(lora.memory.weights.count() == Approx(4 * (base + 39'976'960.0)));
  CHECK(lora.memory.optimizer_states.count() == Approx(8 * 39'976'960.0));
  CHECK(lora.memory.model_states() < full.memory.model_states() / 3);
  // the backward runs dX, the adapters' small GEMMs and PEFT's casts and sums, not the frozen
  // weights' dW: 0.77 of full training's backward here
  CHECK(lora.time.backward < 0.8 * full.time.backward);
  CHECK(lora.time.forward > full.time.forward);  // the adapters' GEMMs
  tr.lora.targets = lora_targets::attention;     // q, k, v, o only: 524,288 x 32
  CHECK(analytic::trained_on(m, s, tr, 0).dense == 16'777'216);
}

TEST_CASE("tensor-parallel communication overlap hides all but one chunk behind the GEMMs") {
  // 10 ms of collectives beside 8 ms of GEMMs in 4 chunks: max(10 - 8, 10 / 4) = 2.5 ms
  CHECK(analytic::overlapped_tensor_comm(seconds{10e-3}, seconds{8e-3}, 4).count() ==
        Approx(2.5e-3));
  CHECK(analytic::overlapped_tensor_comm(seconds{10e-3}, seconds{2e-3}, 4).count() == Approx(8e-3));
  const transformer m = zoo::gpt3_175b();
  const parallel::nd s{.tensor = {.degree = 8, .sequence = true},
                       .pipeline = {.degree = 8},
                       .data = {.degree = 2, .zero = 1},
                       .micro_batch = 1};
  training tr{.batch = 64, .sequence = 2048};
  const auto blocking = analytic::evaluate(m, s, presets::dgx_h100(16), tr);
  tr.framework.tp_comm_overlap = true;
  const auto overlapped = analytic::evaluate(m, s, presets::dgx_h100(16), tr);
  CHECK(overlapped.time.tensor_comm < 0.5 * blocking.time.tensor_comm);
  CHECK(overlapped.time.tensor_comm >= blocking.time.tensor_comm / 8.0 * 0.999);
  CHECK(overlapped.time.forward == blocking.time.forward);
  // Megatron refuses --tp-comm-overlap without --sequence-parallel (arguments.py), and so does
  // strata; the search never proposes it
  parallel::nd no_sp = s;
  no_sp.tensor.sequence = false;
  CHECK_THROWS_WITH(analytic::evaluate(m, no_sp, presets::dgx_h100(16), tr),
                    Catch::Contains("needs sequence parallelism"));
  search::transformer_space space;
  space.keep = 200;
  space.tensor = {8};
  const cluster c = presets::dgx_h100(16);
  const auto found = search::sweep(m, c, tr, datasheet_profile(c.dev, h100_fitted_gemm), space);
  REQUIRE(!found.best.empty());
  for (const auto& r : found.best) CHECK(r.strategy.tensor.sequence);
}

TEST_CASE("an overlapped collective hides behind the GEMM it feeds or drains, not the layer's") {
  const auto ms = [](double x) { return seconds{x * 1e-3}; };
  using lower::tp_window;
  const auto set = [](analytic::tp_windows& w, tp_window k, double s) {
    w[static_cast<std::size_t>(k) - 1] = s;
  };
  // forward GEMMs: QKV 2 ms, attention projection 0.5 ms, MLP up 4 ms, MLP down 2 ms; backward:
  // QKV dgrad and wgrad 2 ms each, MLP up's 4 ms each, the projections' input gradients 0.5 and
  // 2 ms; each all-gather and reduce-scatter 1 ms, in 4 chunks
  analytic::tp_windows f{}, b{};
  set(f, tp_window::attention_in, 2e-3);
  set(f, tp_window::attention_out, 0.5e-3);
  set(f, tp_window::mlp_in, 4e-3);
  set(f, tp_window::mlp_out, 2e-3);
  set(b, tp_window::attention_dgrad, 2e-3);
  set(b, tp_window::attention_wgrad, 2e-3);
  set(b, tp_window::mlp_dgrad, 4e-3);
  set(b, tp_window::mlp_wgrad, 4e-3);
  set(b, tp_window::attention_out, 0.5e-3);
  set(b, tp_window::mlp_out, 2e-3);
  // forward: max(1 - 2, 1/4) + max(1 - 0.5, 1/4) + max(1 - 4, 1/4) + max(1 - 2, 1/4)
  //        = 0.25 + 0.5 + 0.25 + 0.25 = 1.25 ms (all 4 ms behind all 8.5 ms: 1 ms)
  const auto te = analytic::overlapped_layer_comm(ms(1), ms(1), f, b, 4,
                                                  frameworks::tp_overlap_engine::userbuffers);
  CHECK(te.forward.count() == Approx(1.25e-3));
  // userbuffers backward, per block the gather before the row-parallel dX, the re-gather beside
  // dgrad and the reduce-scatter beside wgrad: (0.5 + 0.25 + 0.25) + (0.25 + 0.25 + 0.25)
  CHECK(te.backward.count() == Approx(1.75e-3));
  // PyTorch's micro-pipelined TP: the reduce-scatters of the summed column-parallel input
  // gradients block: (0.5 + 1) + (0.25 + 1) = 2.75 ms
  const auto torch = analytic::overlapped_layer_comm(ms(1), ms(1), f, b, 4,
                                                     frameworks::tp_overlap_engine::micro_pipeline);
  CHECK(torch.forward.count() == Approx(1.25e-3));
  CHECK(torch.backward.count() == Approx(2.75e-3));
  // a block with no such GEMM (MoE experts) leaves both of its collectives whole
  analytic::tp_windows moe = f;
  set(moe, tp_window::mlp_in, 0);
  set(moe, tp_window::mlp_out, 0);
  CHECK(analytic::overlapped_layer_comm(ms(1), ms(1), moe, b, 4,
                                        frameworks::tp_overlap_engine::userbuffers)
            .forward.count() == Approx(2.75e-3));
  // the recipes: Megatron's Transformer Engine, PyTorch's (and FSDP's) compiled DTensor
  STATIC_REQUIRE(frameworks::megatron.tp_overlap == frameworks::tp_overlap_engine::userbuffers);
  STATIC_REQUIRE(frameworks::fsdp.tp_overlap == frameworks::tp_overlap_engine::micro_pipeline);
}

TEST_CASE("Megatron's backward runs tensor-parallel collectives beside column-parallel GEMMs") {
  const auto ms = [](double x) { return seconds{x * 1e-3}; };
  // the backward GEMMs of QKV and MLP up (`lower::tp_window` order: attention dgrad and wgrad,
  // MLP dgrad and wgrad), in s
  const analytic::tp_windows w{1.09e-3, 1.0e-3, 1.44e-3, 1.5e-3};
  // without sequence parallelism each block's all-reduce hides behind its weight gradient:
  // 0.77 ms fully; 2 ms leaves (2 - 1.0) + (2 - 1.5) = 1.5 ms
  CHECK(analytic::detail::async_tensor_backward(ms(0.77), {}, {}, false, w).count() == 0);
  CHECK(analytic::detail::async_tensor_backward(ms(2), {}, {}, false, w).count() == Approx(1.5e-3));
  // with it the output gradient's all-gather blocks; the input's re-gather hides behind dgrad,
  // the reduce-scatter behind wgrad: 1.2 ms each leaves
  // (1.2 + 0.11 + 0.2) + (1.2 + 0 + 0) = 2.71 ms
  CHECK(analytic::detail::async_tensor_backward({}, ms(1.2), ms(1.2), true, w).count() ==
        Approx(2.71e-3));
  // a block with no column-parallel GEMM (MoE experts) blocks as in the forward
  const analytic::tp_windows attention_only{1.09e-3, 1.0e-3, 0, 0};
  CHECK(analytic::detail::async_tensor_backward(ms(2), {}, {}, false, attention_only).count() ==
        Approx(1.0e-3 + 2e-3));

  // Korthikanti et al.'s 22B (t = 8, b = 4, s = 2048) on a DGX A100: every QKV and MLP-up weight
  // gradient outlasts the 100 MB all-reduce, so the backward exposes none of it and the layer's
  // tensor-parallel time halves; Megatron-LM of 2021 (before the overlap) and Hugging Face's
  // recipe block on it
  const transformer m{.name = "22B",
                      .layers = 48,
                      .hidden = 6144,
                      .heads = 64,
                      .ffn = 24576,
                      .vocabulary = 51200,
                      .sequence = 2048};
  const parallel::nd s{.tensor = {.degree = 8}, .micro_batch = 4};
  const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
  training tr{.batch = 4, .precision = precision_mode::fp16_mixed, .flash_attention = false};
  const auto async = analytic::evaluate(m, s, presets::dgx_a100(1), tr, a100);
  tr.framework = frameworks::megatron_2021;
  const auto blocking = analytic::evaluate(m, s, presets::dgx_a100(1), tr, a100);
  CHECK(async.time.tensor_comm.count() == Approx(blocking.time.tensor_comm.count() / 2));
  CHECK(async.time.forward == blocking.time.forward);
  CHECK(async.time.backward == blocking.time.backward);
  CHECK_FALSE(frameworks::huggingface.tp_async_backward);
  CHECK_FALSE(frameworks::fsdp.tp_async_backward);
  CHECK_FALSE(frameworks::deepspeed.tp_async_backward);  // BigScience's Megatron-DeepSpeed
}

TEST_CASE("a search over per-operator checkpointing lowers it on its own") {
  // "op" beside the other modes: each mode's plans priced from their own lowering (a fused-module
  // recipe lowers once for the others), and per-op plans equal to evaluating them alone
  const transformer m = zoo::llama3_8b();
  training tr{.batch = 16, .sequence = 8192, .framework = frameworks::fsdp};
  search::transformer_space space;
  space.keep = 1000;
  space.tensor = {1};
  space.pipeline = {1};
  space.zero = {3};
  space.micro_batch = {2};
  space.recompute = {parallel::recompute::full, parallel::recompute::per_op};
  const cluster c = presets::dgx_h100(1);
  const auto prof = datasheet_profile(c.dev, h100_fitted_gemm);
  const auto found = search::sweep(m, c, tr, prof, space);
  int per_op = 0;
  for (const auto& r : found.best) {
    if (r.strategy.recomputation != parallel::recompute::per_op) continue;
    ++per_op;
    const report alone = analytic::evaluate(m, r.strategy, c, tr, prof);
    CHECK(r.time.total().count() == Approx(alone.iteration_time().count()));
    CHECK(r.memory.count() == Approx(alone.memory.total().count()));
  }
  CHECK(per_op == 1);
}

/// The search's best 1,000 plans for Llama-2 7B (batch 64 x 4,096) on two DGX A100 under `r`.
auto sweep_under(const frameworks::recipe& r) {
  const training tr{.batch = 64, .sequence = 4096, .framework = r};
  search::transformer_space space;
  space.keep = 1000;
  const cluster c = presets::dgx_a100(2);
  return search::sweep(zoo::llama2_7b(), c, tr, datasheet_profile(c.dev, h100_fitted_gemm), space);
}

TEST_CASE("the search ranks plans per framework and never returns one its engine refuses") {
  const auto found = sweep_under(frameworks::deepspeed);
  REQUIRE(!found.best.empty());
  int pipelined = 0, zero3 = 0;
  for (const auto& r : found.best) {
    CHECK_FALSE((r.strategy.data.zero >= 2 && r.strategy.pipeline.degree > 1));
    pipelined += r.strategy.pipeline.degree > 1 ? 1 : 0;
    zero3 += r.strategy.data.zero == 3 ? 1 : 0;
  }
  CHECK(pipelined > 0);  // with ZeRO-0/1
  CHECK(zero3 > 0);      // without pipelines
}

TEST_CASE("each recipe refuses the ZeRO and pipeline combinations its framework cannot run") {
  // (ZeRO stage, pipeline degree) pairs refused per recipe, with where the framework rules them
  // out; the search skips the same pairs (`engine_refuses`, search/transformer_sweep.hpp)
  struct rule {
    frameworks::recipe r;
    const char* refused;
  };
  const rule rules[] = {
      // Megatron-Core: the distributed optimizer (ZeRO-1) and Megatron-FSDP
      // (--data-parallel-sharding-strategy optim_grads / optim_grads_params: ZeRO-2/3), with
      // pipelines (only --use-torch-fsdp2 refuses them: megatron/training/arguments.py)
      {frameworks::megatron, ""},
      // Megatron-LM v2.6 (2021) had no distributed optimizer: no --use-distributed-optimizer
      {frameworks::megatron_2021, "1/1 1/2 2/1 2/2 3/1 3/2 "},
      // DeepSpeed's PipelineEngine asserts ZeRO stage < 2 (runtime/pipe/engine.py)
      {frameworks::deepspeed, "2/2 3/2 "},
      // FSDP's ShardingStrategy has NO_SHARD, SHARD_GRAD_OP, FULL_SHARD and the hybrids: no ZeRO-1
      {frameworks::fsdp, "1/1 1/2 "},
  };
  for (const auto& [r, refused] : rules) {
    std::string got;
    for (int z = 0; z <= 3; ++z)
      for (const int p : {1, 2})
        if (parallel::engine_refuses(r.data, z, p) != nullptr)
          got += std::to_string(z) + "/" + std::to_string(p) + " ";
    INFO(r.name);
    CHECK(got == refused);
  }
  // and the search under megatron-2021 proposes no ZeRO stage
  const auto found = sweep_under(frameworks::megatron_2021);
  const transformer m = zoo::llama2_7b();
  const training tr{.batch = 64, .sequence = 4096, .framework = frameworks::megatron_2021};
  const cluster c = presets::dgx_a100(2);
  REQUIRE(!found.best.empty());
  for (const auto& f : found.best) CHECK(f.strategy.data.zero == 0);
  CHECK_THROWS_WITH(analytic::evaluate(m, {.data = {.degree = 16, .zero = 1}}, c, tr),
                    Catch::Contains("--use-distributed-optimizer"));
}

TEST_CASE("DeepSpeed ZeRO-3 with parameter offload: one GPU never needs less than two") {
  // issue 39: Llama-2 7B under DeepSpeed with the optimizer and the parameters on the host needed
  // 18.13 GiB on one GPU and 19.90 GiB on two, since one rank counted no gather buffers: stage 3
  // fetches each module (from the host here) and reduces through its bucket on any rank count
  const transformer m = zoo::llama2_7b();
  training tr{.batch = 8, .sequence = 2048, .framework = frameworks::deepspeed};
  tr.framework.data.offload_optimizer = frameworks::offload_device::cpu;
  tr.framework.data.offload_parameters = frameworks::offload_device::cpu;
  const auto on = [&](int gpus) {
    const cluster node = presets::dgx_a100(1);  // part of a DGX A100, with its host link
    cluster used = make_cluster("part", node.dev, {level{"node", gpus, node.levels[0].pair}});
    used.host = node.host;
    return analytic::evaluate(m,
                              {.data = {.degree = gpus, .zero = 3},
                               .recomputation = parallel::recompute::full,
                               .micro_batch = 1},
                              used, tr);
  };
  const auto one = on(1), two = on(2);
  CHECK(one.memory.weights.count() == 0);  // on the host
  CHECK(one.memory.buffers.count() > 0);
  CHECK(one.memory.buffers.count() == Approx(two.memory.buffers.count()));
  CHECK(one.memory.total().count() >= two.memory.total().count());
}

TEST_CASE("BF16_Optimizer: the bf16 .grad tensors stay beside the fp32 accumulation buffer") {
  // Megatron-DeepSpeed's BF16_Optimizer (zero stage 0, its own ZeRO-1), 1e9 parameters over 8
  // data-parallel ranks: bf16 weights (2 B), the fp32 accumulation buffer (4 B) and the bf16
  // gradients autograd made (2 B), whole; fp32 masters and Adam moments (12 B) sharded
  training tr{.batch = 8,
              .sequence = 1024,
              .framework = frameworks::with_engine(frameworks::deepspeed,
                                                   frameworks::deepspeed_bf16_optimizer)};
  tr.gradients = dtype::fp32;
  const auto z = parallel::engine_states(1e9, 8, 1, tr);
  CHECK(z.weights == 2e9);
  CHECK(z.gradients == 6e9);
  CHECK(z.optimizer == Approx(12e9 / 8));
  // Megatron's engine frees them into its main_grad buffer: the buffer alone
  tr.framework.data.keeps_16bit_gradients = false;
  CHECK(parallel::engine_states(1e9, 8, 1, tr).gradients == 4e9);
}

namespace {
/// Bytes of the kernels a lowering names `what`, and of the tensors it keeps under that name.
struct bytes_of {
  std::string_view what;
  double bytes = 0, kept = 0;
  void kernel(const lower::kernel_op& k) {
    if (k.what == what) bytes += k.bytes * k.times;
  }
  void save(const lower::saved_tensor& t) {
    if (t.what == what) kept += t.bytes;
  }
  void collective(const lower::collective_op&) {}
};
}  // namespace

TEST_CASE("torchtitan without torch.compile: RMSNorm as a chain of fp32 kernels, complex RoPE") {
  // torchtitan/models/norms.py: x.float(), pow, mean, + eps, rsqrt, x r, type_as(x), w n, on
  // a bf16 residual stream (FSDP2's MixedPrecisionPolicy, no autocast). Per norm of T = 512
  // tokens of h = 2048, in bytes of T h: the upcast 2 + 4, pow 8, mean 4, x r 8, the cast back
  // 4 + 2, w n 3 x 2 = 38; per row (+ eps, rsqrt) 16: 38 x 1,048,576 + 16 x 512 = 39,854,080 B.
  // A layer has two (before attention and before the MLP).
  const transformer m = zoo::llama3_2_1b();
  REQUIRE(m.hidden == 2048);
  const lower::shard x{.b = 1, .s = 512, .seq = 512};
  training tr{.batch = 1, .sequence = 512, .framework = frameworks::torchtitan};
  bytes_of norm{"input norm"};
  lower::layer(m, x, tr, lower::phase::forward, norm);
  CHECK(norm.bytes == 39'854'080.0);
  // autograd keeps the fp32 copy (4 T h), the bf16 n (2 T h) and r (4 T), per norm
  bytes_of input{"norm input"}, n{"norm n and r"};
  lower::layer(m, x, tr, lower::phase::forward, input);
  lower::layer(m, x, tr, lower::phase::forward, n);
  CHECK(input.kept == 2 * 4.0 * 512 * 2048);
  CHECK(n.kept == 2 * (2.0 * 512 * 2048 + 4 * 512));
  // compiled (`fsdp`) the chain is one fused kernel over the bf16 stream: 2 x 2 B of T h
  tr.framework = frameworks::fsdp;
  bytes_of fused{"input norm"};
  lower::layer(m, x, tr, lower::phase::forward, fused);
  CHECK(fused.bytes == 4.0 * 512 * 2048);
  // its RoPE (models/llama/model.py apply_rotary_emb): x.float() 2 + 4, the complex product
  // 4 + 4, type_as 4 + 2 = 20 B per element of q (32 heads x 64 = 2048 wide) and k (8 x 64 =
  // 512): 20 x 512 x (2048 + 512) = 26,214,400 B forward, as much backward; the rotate-half
  // chain of plain eager modules moves 30 B forward
  tr.framework = frameworks::torchtitan;
  bytes_of cast{"rotary to fp32"}, product{"rotary complex product"}, back{"rotary cast back"};
  for (bytes_of* b : {&cast, &product, &back}) lower::layer(m, x, tr, lower::phase::forward, *b);
  CHECK(cast.bytes + product.bytes + back.bytes == 26'214'400.0);
  bytes_of product_bwd{"rotary complex product"};
  lower::layer(m, x, tr, lower::phase::backward, product_bwd);
  CHECK(product_bwd.bytes == 8.0 * 512 * (2048 + 512));
  tr.framework = frameworks::pytorch_eager_modules;
  bytes_of q_cos{"rotary q cos"};
  lower::layer(m, x, tr, lower::phase::forward, q_cos);
  CHECK(q_cos.bytes == 6.0 * 512 * (2048 + 512));
  // the recipe is FSDP2's engine under torch.nn module code, without autocast
  STATIC_REQUIRE(frameworks::torchtitan.data.engine == frameworks::data_engine::fsdp);
  STATIC_REQUIRE(!frameworks::torchtitan.autocast);
  STATIC_REQUIRE(!frameworks::torchtitan.fused_qkv);
}

TEST_CASE("BF16_Optimizer: every micro-batch's gradients are added into the fp32 buffer") {
  // DeepSpeed's pipeline engine calls update_hp_grads after each micro-batch's backward:
  // hp_grad.add_(lp.grad.to(fp32)), 2 + 4 B by the cast and 4 + 4 + 4 by the add per
  // parameter. A GPT layer of h = 1024 (MHA, 4h MLP, biases, LayerNorm) has 4h^2 + 4h
  // attention, 8h^2 + 5h MLP and 4h norm parameters: 12,596,224; over TP 2, 6,298,112 per
  // rank, 113,366,016 B per micro-batch, in the backward only.
  const transformer m{.name = "GPT layer",
                      .layers = 1,
                      .hidden = 1024,
                      .heads = 16,
                      .vocabulary = 50304,
                      .sequence = 2048};
  training tr{.batch = 8,
              .sequence = 2048,
              .framework = frameworks::with_engine(frameworks::deepspeed,
                                                   frameworks::deepspeed_bf16_optimizer)};
  tr.gradients = dtype::fp32;
  CHECK(m.dense_layer_parameters() == 12'596'224.0);
  const lower::shard x{.b = 1, .s = 2048, .seq = 2048, .tp = 2};
  const std::string_view name = "fp32 gradient accumulation (update_hp_grads)";
  bytes_of back{name}, forward{name};
  lower::layer(m, x, tr, lower::phase::backward, back);
  lower::layer(m, x, tr, lower::phase::forward, forward);
  CHECK(back.bytes == 113'366'016.0);
  CHECK(forward.bytes == 0);
  // the embedding's (V + s) h / t with learned positions: 18 x 52,352 x 1024 / 2 =
  // 482,476,032 B (the head is tied: its gradient is the embedding's)
  bytes_of embed{name};
  lower::embedding(m, x, tr, lower::phase::backward, embed);
  CHECK(embed.bytes == 482'476'032.0);
  // the fp32 copy update_hp_grads makes of one gradient at a time
  // (`analytic::memory_terms::accumulation_copy`): on a stage holding the embedding its
  // 50304 x 1024 / 2 elements, 4 x 25,755,648 = 103,022,592 B; in between the largest layer
  // matrix, the MLP's 1024 x 4096 / 2: 8,388,608 B. The last stage holds the tied copy.
  const transformer deep{.name = "GPT",
                         .layers = 6,
                         .hidden = 1024,
                         .heads = 16,
                         .vocabulary = 50304,
                         .sequence = 2048};
  const parallel::nd plan{.tensor = {.degree = 2}, .pipeline = {.degree = 3}};
  CHECK(analytic::stage_terms(deep, plan, tr, 0).accumulation_copy == 103'022'592.0);
  CHECK(analytic::stage_terms(deep, plan, tr, 1).accumulation_copy == 8'388'608.0);
  CHECK(analytic::stage_terms(deep, plan, tr, 2).accumulation_copy == 103'022'592.0);
  // with full recomputation the copy of the embedding's gradient outweighs the layer rebuilt
  // in the last backward: the first stage peaks after a backward, every gradient, the copy and
  // what the other in-flight micro-batches keep
  parallel::nd full = plan;
  full.recomputation = parallel::recompute::full;
  const analytic::memory_terms first = analytic::stage_terms(deep, full, tr, 0);
  const memory_breakdown peak = analytic::stage_memory(first, tr);
  CHECK(peak.moment == memory_moment::accumulation);
  CHECK(peak.workspace.count() - first.states.workspace.count() == 103'022'592.0);
  // bf16 gradients: no fp32 buffer to add into
  tr.gradients = dtype::bf16;
  bytes_of bf16{name};
  lower::layer(m, x, tr, lower::phase::backward, bf16);
  CHECK(bf16.bytes == 0);
  // Megatron accumulates into main_grad inside the weight-gradient GEMM: no pass of its own
  tr.gradients = dtype::fp32;
  tr.framework.data.keeps_16bit_gradients = false;
  bytes_of none{name};
  lower::layer(m, x, tr, lower::phase::backward, none);
  CHECK(none.bytes == 0);
}

}  // namespace unit_frameworks
