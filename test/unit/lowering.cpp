// One lowering: the single-GPU step, the closed form and the simulator read the same operations.
#include <catch2/catch.hpp>
#include <strata/analytic/evaluate.hpp>
#include <strata/analytic/step.hpp>
#include <strata/frameworks/fsdp.hpp>
#include <strata/frameworks/huggingface.hpp>
#include <strata/frameworks/pytorch_eager.hpp>
#include <strata/hardware/presets.hpp>
#include <strata/limits.hpp>
#include <strata/lower/transformer.hpp>
#include <strata/model/transformer_zoo.hpp>
#include <strata/model/zoo.hpp>
#include <strata/sim/transformer.hpp>

#include <cmath>
#include <vector>

namespace unit_lowering {

using namespace strata;
using parallel::recompute;

namespace {
const device_profile h100 = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
const cluster one_h100 = make_cluster("one H100", presets::h100_sxm5_80gb,
                                      {level{"node", 1, interconnect{1_us, 450_GBps}}});

transformer llama_like(int layers, int hidden, int heads, int kv, int ffn, int vocab) {
  transformer m;
  m.name = "llama-like";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv;
  m.ffn = ffn;
  m.vocabulary = vocab;
  m.sequence = 4096;
  m.mlp = mlp_kind::swiglu;
  m.norm = norm_kind::rms_norm;
  m.positions = position_kind::rotary;
  m.tied = false;
  m.bias = false;
  m.dropout = false;
  return m;
}
}  // namespace

TEST_CASE("issue and run: the closed-form span equals the kernel-by-kernel walk") {
  // kernels (host, gpu, synchronizes after) mixing launch-bound and GPU-bound ones
  struct k {
    double host, gpu;
    bool sync;
  };
  const std::vector<k> seq{{50e-6, 10e-6, false}, {5e-6, 1e-3, false}, {40e-6, 2e-6, true},
                           {30e-6, 7e-6, false},  {1e-6, 3e-4, false}, {60e-6, 1e-6, true},
                           {20e-6, 5e-5, false}};
  for (int repeat = 1; repeat <= 4; ++repeat)
    for (std::size_t cut = 0; cut <= seq.size(); ++cut) {
      std::vector<k> all;
      for (int r = 0; r < repeat; ++r) all.insert(all.end(), seq.begin(), seq.end());
      const double walk = analytic::issue_and_run(
          all.size(), [&](std::size_t i) { return all[i].host; },
          [&](std::size_t i) { return all[i].gpu; }, [&](std::size_t i) { return all[i].sync; });
      // the span of one copy, split at `cut` and composed back, then repeated
      lower::span a, b;
      for (std::size_t i = 0; i < seq.size(); ++i) {
        lower::span s = lower::span::kernel(seq[i].host, seq[i].gpu);
        if (seq[i].sync) s = s.then(lower::span::sync());
        (i < cut ? a : b) = (i < cut ? a : b).then(s);
      }
      CHECK(a.then(b).repeat(repeat).time == Approx(walk).epsilon(1e-12));
    }
  // by hand: a host-bound kernel (50 us host, 10 us GPU) ends at 60 us; a GPU-bound one (5 us,
  // 1 ms) issued at 55 us starts when the GPU frees at 60 us and ends at 1.06 ms; the GPU waited
  // 50 us for the host
  const auto two = lower::span::kernel(50e-6, 10e-6).then(lower::span::kernel(5e-6, 1e-3));
  CHECK(two.time == Approx(1.06e-3));
  CHECK(two.exposed_host() == Approx(50e-6));
}

TEST_CASE("step, one-GPU plan and simulator give the same time and memory") {
  struct model_case {
    transformer m;
    int sequence, batch;
  };
  transformer gpt2 = zoo::gpt2_124m();
  gpt2.dropout = false;
  transformer gpt2_medium = zoo::gpt2_355m();
  gpt2_medium.dropout = false;
  transformer moe = llama_like(4, 1024, 16, 8, 3584, 32000);
  moe.experts = 8;
  moe.top_k = 2;
  const std::vector<model_case> models{{gpt2, 1024, 4},
                                       {gpt2_medium, 512, 2},
                                       {llama_like(4, 2048, 32, 8, 8192, 32000), 2048, 2},
                                       {moe, 1024, 2}};
  for (const auto& [m, seq, batch] : models)
    for (const auto& recipe :
         {frameworks::megatron, frameworks::pytorch_eager, frameworks::huggingface})
      for (const auto precision : {precision_mode::bf16_mixed, precision_mode::fp32})
        for (const auto rc : {recompute::none, recompute::full}) {
          training tr{.batch = batch, .sequence = seq, .precision = precision};
          tr.framework = recipe;
          const parallel::nd s{.recomputation = rc, .micro_batch = batch};
          INFO(m.name << " " << recipe.name << " " << to_string(precision) << " " << to_string(rc));
          const auto step = analytic::step_kernels(m, s, tr, h100);
          const auto plan = analytic::evaluate(m, s, one_h100, tr, h100);
          const auto run = sim::simulate(m, s, one_h100, tr, h100);
          CHECK(step.time() == Approx(plan.iteration_time().count()).epsilon(1e-9));
          CHECK(run.iteration.count() == Approx(plan.iteration_time().count()).epsilon(1e-9));
          const auto mem = analytic::step_memory_of(m, s, tr);
          CHECK(mem.peak == Approx(plan.memory.total().count()).epsilon(1e-12));
          CHECK(run.run.peak_memory[0] == Approx(plan.memory.total().count()).epsilon(1e-9));
          // an eager host shows; Megatron's kernels queue ahead
          if (!recipe.eager) CHECK(plan.time.host.count() == 0);
        }
}

TEST_CASE("Hugging Face Llama layer: saved bytes worked by hand") {
  // Llama-3.2 1B dimensions, one token: h = 2048, 32 heads (d = 64), 8 KV heads (kv d = 512),
  // f = 8192. transformers' modeling code under bf16 autocast keeps per token and layer:
  // input RMSNorm: its fp32 input 4h, the normalized fp32 n 4h and 1/rms 4; Q, K, V each keep
  // their own bf16 copy of the norm output 3 x 2h; SDPA keeps Q 2h, K and V 2 x 2 kv d, its output
  // 2h and the fp32 log-sum-exp 4 a; the post-attention norm 4h + 4h + 4; gate and up their
  // input copies 2 x 2h; SiLU's input, its output, up's output and the product 4 x 2f:
  // 30h + 4 kv d + 8f + 4a + 8 = 61440 + 2048 + 65536 + 128 + 8 = 129,160 B.
  const transformer m = zoo::llama3_2_1b();
  training tr{.batch = 1, .sequence = 1};
  tr.framework = frameworks::huggingface;
  const lower::shard one{.b = 1, .s = 1, .seq = 1};
  CHECK(analytic::layer_saved_bytes(m, one, tr) == 129'160);
  // the bf16 weight copies: 2 B per linear weight (Q h^2, K and V 2 h kv d, O h^2, 3 h f)
  CHECK(analytic::layer_saved_bytes(m, one, tr, lower::keep_kind::weight_copy) ==
        2.0 * (2 * 2048.0 * 2048 + 2 * 2048.0 * 512 + 3 * 2048.0 * 8192));
  // the DynamicCache's fp32 k copy (4 kv d) lives until the forward ends
  CHECK(analytic::layer_saved_bytes(m, one, tr, lower::keep_kind::until_loss) == 4 * 512);
  // Megatron keeps Korthikanti's tensors: 2 (norm inputs, 2 x 2h) ... in units of s b h, for this
  // GQA SwiGLU layer: 4 + 2 + 2 (Q) + 2 x 2 x 512/2048 (K, V) + 2 (output) + 2 x 3 x 4 (SwiGLU)
  tr.framework = frameworks::megatron;
  CHECK(analytic::layer_saved_bytes(m, one, tr) == 2048.0 * (4 + 2 + 2 + 1 + 2 + 2 + 24));
  // the parameter counts of the released checkpoints
  CHECK(zoo::llama3_2_1b().parameters() == 1'235'814'400);
  CHECK(zoo::tinyllama_1_1b().parameters() == 1'100'048'384);
  CHECK(zoo::qwen2_5_0_5b().parameters() == 494'032'768);
  CHECK(zoo::qwen2_5_7b().parameters() == 7'615'616'512);
  CHECK(zoo::mistral_7b().parameters() == 7'241'732'096);
}

TEST_CASE("a recipe decides the kernels: Hugging Face's module code launches more of them") {
  const transformer m = zoo::llama3_2_1b();
  training tr{.batch = 2, .sequence = 2048};
  const parallel::nd s{.micro_batch = 2};
  tr.framework = frameworks::megatron;
  const auto megatron = analytic::step_kernels(m, s, tr, h100);
  tr.framework = frameworks::huggingface;
  const auto hf = analytic::step_kernels(m, s, tr, h100);
  // the same GEMM FLOPs (Q, K, V apart instead of fused), many more kernels
  CHECK(hf.flops(analytic::kernel_kind::gemm) ==
        Approx(megatron.flops(analytic::kernel_kind::gemm)));
  CHECK(hf.kernels.size() > 3 * megatron.kernels.size());
  CHECK(hf.time() > megatron.time());
}

TEST_CASE("CNNs: the step and ParaDL's plans read the same lowering") {
  // ResNet-50, batch 64, bf16 autocast on the H100 datasheet profile: ParaDL's serial plan with
  // the lowering's layer times runs B (FW + BW) per iteration (eq. (3)), exactly the step's
  // kernels other than the optimizer's
  const auto net = zoo::resnet50();
  const analytic::cnn_config c{.batch = 64};
  const auto step = analytic::cnn_step(net.view(), c, h100);
  const auto times = analytic::cnn_layer_times(net.view(), c, h100);
  REQUIRE(times.size() == net.view().size());
  const auto r = analytic::evaluate(net.view(), parallel::serial{}, presets::dgx_h100(1),
                                    training{.batch = 64}, times);
  const double optimizer = step.kernels.back().time;
  CHECK((r.time.forward + r.time.backward).count() ==
        Approx(step.kernel_time() - optimizer).epsilon(1e-9));
  // autocast's bf16 copies of every conv and linear weight, 2 B each: ResNet-50's 25,557,032
  // parameters less batch norm's 53,120 (2 x 26,560 channels)
  const auto mem = analytic::cnn_memory(net.view(), c);
  CHECK(mem.weight_casts == 2 * (25'557'032.0 - 53'120.0));
}

TEST_CASE("an uneven expert load: each expert's GEMMs on its own rows, the same FLOPs") {
  // expert_load_cv = 0.38 over 8 experts: shares 1 + (i - 3.5) x 0.38 / sqrt(63 / 12), a step of
  // 0.165846 (population standard deviation 0.38 exactly), from 0.419538 to 1.580462
  transformer m{.layers = 2,
                .hidden = 1024,
                .heads = 16,
                .ffn = 3584,
                .vocabulary = 32000,
                .sequence = 2048,
                .mlp = mlp_kind::swiglu,
                .experts = 8,
                .top_k = 2};
  m.expert_load_cv = 0.38;
  CHECK(m.expert_share(0, 8) == Approx(0.419538).epsilon(1e-5));
  CHECK(m.expert_share(7, 8) == Approx(1.580462).epsilon(1e-5));
  double sum = 0, squares = 0;
  for (int i = 0; i < 8; ++i) {
    sum += m.expert_share(i, 8);
    squares += (m.expert_share(i, 8) - 1) * (m.expert_share(i, 8) - 1);
  }
  CHECK(sum == Approx(8));
  CHECK(std::sqrt(squares / 8) == Approx(0.38));
  // the least loaded expert keeps some tokens up to sqrt(9 / 21) = 0.654654 for 8 experts
  CHECK(transformer::max_expert_load_cv(8) == Approx(0.654654).epsilon(1e-5));
  transformer wide = m;
  wide.expert_load_cv = 0.66;
  CHECK_THROWS_WITH(wide.check(),
                    Catch::Contains("expert_load_cv must lie between 0 and 0.654654"));
  wide.expert_load_cv = -0.1;
  CHECK_THROWS_WITH(wide.check(), Catch::Contains("expert_load_cv must lie between 0 and"));
  transformer dense = zoo::gpt2_124m();
  dense.expert_load_cv = 0.1;
  CHECK_THROWS_WITH(dense.check(),
                    "expert_load_cv: a model without experts has no expert load to spread");
  const training t{.batch = 4, .sequence = 2048};
  CHECK_THROWS_WITH((parallel::nd{.expert = {.degree = 2}}).check(m, t, 2),
                    limits::expert_load_cv_with_expert_parallel);
  // One GPU: the same GEMM FLOPs and kernel count as an even split, the up GEMMs on 859 to
  // 3237 rows instead of 2048 each (S = k T = 16384 routed rows)
  const parallel::nd one{.micro_batch = 4};
  const auto spread = analytic::step_kernels(m, one, t, h100);
  transformer even = m;
  even.expert_load_cv = 0;
  const auto flat = analytic::step_kernels(even, one, t, h100);
  CHECK(spread.kernels.size() == flat.kernels.size());
  CHECK(spread.flops(lower::kernel_kind::gemm) ==
        Approx(flat.flops(lower::kernel_kind::gemm)).epsilon(1e-12));
  std::vector<double> rows;
  for (const auto& k : spread.kernels)
    if (k.name == "block 0 expert up") rows.push_back(k.flops / (2.0 * 7168 * 1024));
  REQUIRE(rows.size() == 8);
  CHECK(rows.front() == Approx(2048 * 0.419538).epsilon(1e-5));
  CHECK(rows.back() == Approx(2048 * 1.580462).epsilon(1e-5));
  CHECK(spread.kernel_time() != Approx(flat.kernel_time()).epsilon(1e-4));
}

namespace {
/// DeepSeek-V3's layer (DeepseekV3Config's defaults) with `layers` MoE layers and no dense ones.
transformer deepseek_v3_moe_layers(int layers) {
  transformer m = llama_like(layers, 7168, 128, 0, 2048, 129280);
  m.experts = 256;
  m.top_k = 8;
  m.shared_ffn = 2048;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_rope_dim = 64;
  m.qk_nope_dim = 128;
  m.v_head_dim = 128;
  return m;
}
/// Forward FLOPs and saved bytes of one layer, and its tensor-parallel collectives' bytes.
struct layer_tally {
  double gemm = 0, attention = 0, all = 0, saved_to_attention = 0;
  bool past_attention = false;
  std::vector<double> tensor_bytes;
  void kernel(const lower::kernel_op& k) {
    if (!k.part.empty()) return;  // the forward's GEMMs, not their parts
    all += k.flops();
    if (past_attention) return;
    (k.kind == lower::kernel_kind::attention ? attention : gemm) += k.flops();
    if (k.what == "attention projection") past_attention = true;
  }
  void save(const lower::saved_tensor& t) {
    if (!past_attention) saved_to_attention += t.bytes;
  }
  void collective(const lower::collective_op& c) {
    if (c.axis == lower::comm_axis::tensor) tensor_bytes.push_back(c.bytes);
  }
};
}  // namespace

TEST_CASE("multi-head latent attention: DeepSeek-V3's layer worked by hand") {
  const transformer m = deepseek_v3_moe_layers(4);
  training tr{.batch = 1, .sequence = 4096};
  // h = 7168, a = 128 heads, r = 1536, c = 512, rope 64, nope 128, v 128 (qk = 192). Per token,
  // 2 FLOPs per weight: Q down h r = 11,010,048; Q up r a qk = 37,748,736; KV down h (c + rope)
  // = 4,128,768; KV up c a (nope + v) = 16,777,216; output a v h = 117,440,512: 187,105,280,
  // 374,210,560 FLOPs.
  const lower::shard x{.b = 1, .s = 4096, .seq = 4096};
  layer_tally f;
  lower::layer(m, x, tr, lower::phase::forward, f);
  CHECK(f.gemm == 4096 * 374'210'560.0);
  // causal attention: 2 b a s^2 (qk + v) / 2 = 2 x 128 x 4096^2 x 160 = 687,194,767,360
  CHECK(f.attention == 687'194'767'360.0);
  // the whole layer: the model's count (uncausal core 2 s a (qk + v) = 335,544,320 per token)
  // less the masked half of the core
  CHECK(m.attention_core_flops(4096) == 335'544'320.0);
  CHECK(f.all == Approx(4096 * (m.layer_forward_flops(4096) - 335'544'320.0 / 2)).epsilon(1e-12));
  // Megatron keeps per token to the output projection (bf16): the input norm's input 2h and the
  // down projections' input 2h; each latent norm's input and output, 2 x 2r and 2 x 2c; Q and
  // K 2 a qk each and V 2 a v; the log-sum-exp 4a; the output 2 a v:
  // 28,672 + 6,144 + 2,048 + 131,072 + 512 + 32,768 = 201,216 B
  const lower::shard one{.b = 1, .s = 1, .seq = 1};
  layer_tally k;
  lower::layer(m, one, tr, lower::phase::forward, k);
  CHECK(k.saved_to_attention == 201'216);
  // tensor parallelism 8 with sequence parallelism: the attention's all-gather carries the
  // latents and the rotary key, (r + c + rope) 2 B = 4,224 B per token, the others b s h 2 B;
  // backward its mirror reduce-scatter; without sequence parallelism the backward all-reduce of
  // the up projections' input gradients, (r + c) 2 B = 4,096 B
  for (const bool sp : {true, false}) {
    const lower::shard t8{.b = 1, .s = 1, .seq = 1, .tp = 8, .sp = sp, .ep = 8};
    layer_tally fw, bw;
    lower::layer_collectives(m, t8, tr, lower::phase::forward, fw);
    lower::layer_collectives(m, t8, tr, lower::phase::backward, bw);
    const double h = 14'336;
    if (sp) {
      CHECK(fw.tensor_bytes == std::vector<double>{4224, h, h, h});
      CHECK(bw.tensor_bytes == std::vector<double>{h, h, 4224, h});
    } else {
      CHECK(fw.tensor_bytes == std::vector<double>{h, h});
      CHECK(bw.tensor_bytes == std::vector<double>{4096, h});
    }
  }
  // without q_lora_rank (DeepSeek-V2-Lite) Q is one column-parallel projection h -> a qk over
  // every token: per token 2 h a qk = 352,321,536 FLOPs in place of Q down and up's 97,517,568,
  // and its side of the all-gather is the layer input h: (h + c + rope) 2 B = 15,488 B
  transformer lite = m;
  lite.q_lora_rank = 0;
  layer_tally fl;
  lower::layer(lite, x, tr, lower::phase::forward, fl);
  CHECK(fl.gemm == 4096 * (374'210'560.0 - 97'517'568 + 352'321'536));
  const lower::shard sp8{.b = 1, .s = 1, .seq = 1, .tp = 8, .sp = true, .ep = 8};
  layer_tally ag;
  lower::layer_collectives(lite, sp8, tr, lower::phase::forward, ag);
  CHECK(ag.tensor_bytes == std::vector<double>{15'488, 14'336, 14'336, 14'336});
  // transformers' DeepseekV3Attention is not what the lowering runs: refused by name
  training hf = tr;
  hf.framework = frameworks::huggingface;
  CHECK_THROWS_WITH((parallel::nd{}).check(m, hf, 1),
                    Catch::Contains("multi-head latent attention as transformers' modeling code"));
}

TEST_CASE("DeepSeek's layers: step, one-GPU plan and simulator give the same time and memory") {
  // latent attention, MoE with a shared expert; with and without a dense first layer (the
  // single-GPU step lowers each layer as itself, the plan and the simulator price the two kinds)
  transformer m = llama_like(4, 1024, 16, 0, 512, 32000);
  m.experts = 8;
  m.top_k = 2;
  m.shared_ffn = 512;
  m.q_lora_rank = 384;
  m.kv_lora_rank = 128;
  m.qk_rope_dim = 32;
  m.qk_nope_dim = 64;
  m.v_head_dim = 64;
  m.dense_ffn = 1536;
  for (const int dense : {0, 1})
    for (const auto& recipe : {frameworks::megatron, frameworks::pytorch_eager})
      for (const auto rc : {recompute::none, recompute::selective, recompute::full}) {
        m.dense_layers = dense;
        training tr{.batch = 2, .sequence = 1024};
        tr.framework = recipe;
        const parallel::nd s{.recomputation = rc, .micro_batch = 2};
        INFO(dense << " dense, " << recipe.name << " " << to_string(rc));
        const auto step = analytic::step_kernels(m, s, tr, h100);
        const auto plan = analytic::evaluate(m, s, one_h100, tr, h100);
        const auto run = sim::simulate(m, s, one_h100, tr, h100);
        // the single-GPU step knows full checkpointing only
        if (rc != recompute::selective)
          CHECK(step.time() == Approx(plan.iteration_time().count()).epsilon(1e-9));
        CHECK(run.iteration.count() == Approx(plan.iteration_time().count()).epsilon(1e-9));
        CHECK(run.run.peak_memory[0] == Approx(plan.memory.total().count()).epsilon(1e-9));
        // selective recomputation runs the fused attention again
        if (rc == recompute::selective) CHECK(plan.time.recompute.count() > 0);
      }
}

TEST_CASE("per-operator checkpointing keeps what torchtitan's op policy caches") {
  // torchtitan's selective "op" policy (parallelize_llama.py at 9dec370): inside a checkpointed
  // block the outputs of the 1st, 3rd, 5th and 7th aten.mm (wq, wv, w1, w2) and of flash
  // attention are cached, the rest recomputed. Llama 3.1 8B (h 4096, 8 KV heads of 128, ffn
  // 14336, 32 heads) under FSDP's bf16 parameters, per token of a layer:
  //   block input 2 h = 8192, wq 2 h = 8192, wv 2 x 1024 = 2048, attention output 2 h = 8192,
  //   its log-sum-exp 4 x 32 = 128, w1 2 x 14336 = 28672, w2 2 h = 8192: 63,616 bytes
  const transformer m = zoo::llama3_8b();
  training tr{.batch = 8, .sequence = 8192};
  tr.framework = frameworks::fsdp;
  const lower::shard x{1, 8192, 8192, 1, false, 1, 1, parallel::recompute::per_op};
  CHECK(analytic::layer_saved_bytes(m, x, tr) == 63'616.0 * 8192);
  // the other kinds are all recomputed: no weight copies, nothing kept until the loss
  CHECK(analytic::layer_saved_bytes(m, x, tr, lower::keep_kind::weight_copy) == 0);
  // the recomputation runs the uncached kernels: less than the whole forward, more than the
  // matmuls it recomputes (wk, wo, w3: 2 x 4096 x (1024 + 4096 + 14336) flops a token)
  const auto prof = datasheet_profile(presets::h100_sxm5_80gb, h100_fitted_gemm);
  const auto lc = analytic::lower_layer(m, prof, tr, x);
  CHECK(lc.uncached.gpu < lc.forward.gpu);
  CHECK(analytic::uncached_matmul_flops(m) == 2.0 * 4096 * (1024 + 4096 + 14336));
  CHECK(lc.uncached.gpu > 8192 * analytic::uncached_matmul_flops(m) /
                              presets::h100_sxm5_80gb.peak(dtype::bf16).count());
  // per-op checkpointing with LoRA or MoE is refused, not guessed
  parallel::nd s{.data = {.degree = 8, .zero = 3}, .recomputation = parallel::recompute::per_op};
  training lora = tr;
  lora.lora.rank = 16;
  CHECK_THROWS_WITH(s.check(m, lora, 8), Catch::Contains("\"op\" (per-operator checkpointing)"));
  CHECK_NOTHROW(s.check(m, tr, 8));
}

TEST_CASE("fp8: Transformer Engine's casts beside each linear, the head at the 16-bit rate") {
  // one GPU, 4 x 1024 tokens, h = 1024: TE's fp8_cast_transpose_fused reads the 16-bit input
  // (2 B) and writes it and its transpose in fp8 (1 + 1 B): QKV's input 4 x 4096 x 1024 =
  // 16,777,216 B; backward its output gradient, 4096 x 3072 elements: 50,331,648 B
  const transformer m{.name = "gpt",
                      .layers = 2,
                      .hidden = 1024,
                      .heads = 16,
                      .ffn = 4096,
                      .vocabulary = 50304,
                      .sequence = 1024};
  const parallel::nd s{.micro_batch = 4};
  training bf16{.batch = 4, .sequence = 1024};
  training fp8 = bf16;
  fp8.precision = precision_mode::fp8_mixed;
  const auto a = analytic::step_kernels(m, s, bf16, h100);
  const auto b = analytic::step_kernels(m, s, fp8, h100);
  auto find = [](const analytic::step_estimate& e, std::string_view name) {
    for (const auto& k : e.kernels)
      if (k.name == name) return k;
    FAIL("no kernel " << name);
    return analytic::kernel{};
  };
  CHECK(find(b, "block 0 QKV fp8 cast and transpose").bytes == 16'777'216.0);
  CHECK(find(b, "block 0 backward QKV fp8 gradient cast and transpose").bytes == 50'331'648.0);
  CHECK(find(b, "block 1 MLP down fp8 cast and transpose").bytes == 4 * 4096.0 * 4096);
  // the head outside fp8_autocast: its GEMM takes as long as under bf16; no casts around it
  CHECK(find(b, "output projection").time == find(a, "output projection").time);
  int head_casts = 0, bf16_casts = 0;
  for (const auto& k : b.kernels) head_casts += k.name.find("output projection fp8") == 0 ? 1 : 0;
  for (const auto& k : a.kernels) bf16_casts += k.name.find("fp8") != std::string::npos ? 1 : 0;
  CHECK(head_casts == 0);
  CHECK(bf16_casts == 0);
  // the closed form and the simulator price the same kernels (the head's pricer too)
  const double closed = analytic::evaluate(m, s, one_h100, fp8, h100).iteration_time().count();
  CHECK(b.time() == Approx(closed).epsilon(1e-9));
  CHECK(sim::simulate(m, s, one_h100, fp8, h100).iteration.count() == Approx(closed).epsilon(1e-9));
  CHECK(b.time() > a.time() / 2);
}

}  // namespace unit_lowering
