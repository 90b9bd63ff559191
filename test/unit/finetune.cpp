// Fine-tuning as people run it (issue 36): LoRA over bf16, int8 and NF4 bases (bitsandbytes'
// storage worked by hand), frozen weights that autocast does not cache, 8-bit and paged
// optimizers, PEFT's default targets.
#include <catch2/catch.hpp>
#include <strata/io/transformer_scenario.hpp>
#include <strata/strata.hpp>

namespace unit_finetune {

using namespace strata;
using namespace strata::literals;

namespace {
// Llama-2 7B (h 4096, f 11008, 32 layers, 32,000 tokens, untied): a layer holds
// 4 h^2 + 3 h f + 2 h = 202,383,360 parameters, 32 of them 6,476,267,520; the embedding, the
// head and the final norm 2 x 32,000 h + h = 262,148,096; 6,738,415,616 in all.
constexpr double blocks = 6'476'267'520, outer = 262'148'096;
// rank-16 adapters on every linear layer: 39,976,960 (worked in test/unit/frameworks.cpp)
constexpr double adapters = 39'976'960;

const cluster& one_a100() {
  static const cluster c = make_cluster("A100", presets::a100_sxm4_80gb,
                                        {level{"node", 1, interconnect{5_us, 300_GBps}}});
  return c;
}
training hf_lora(base_storage base) {
  training tr{.batch = 4, .sequence = 2048, .framework = frameworks::huggingface};
  tr.lora = {.rank = 16, .targets = lora_targets::all_linear, .base = base};
  return tr;
}
// kernels of part `part` in one layer's forward and backward
struct count_part {
  std::string_view part;
  double n = 0;
  constexpr void kernel(const lower::kernel_op& k) {
    if (k.part == part) n += k.times;
  }
};
double kernels_named(const transformer& m, const lower::shard& x, const training& tr,
                     std::string_view part) {
  count_part c{part};
  for (const auto ph : {lower::phase::forward, lower::phase::backward})
    lower::layer(m, x, tr, ph, c);
  return c.n;
}
}  // namespace

TEST_CASE("NF4 and int8 bases: bitsandbytes' bytes per weight, and what stays unquantized") {
  const transformer m = zoo::llama2_7b();
  const parallel::nd s{.recomputation = parallel::recompute::full, .micro_batch = 4};
  training tr = hf_lora(base_storage::nf4);
  // NF4: two weights a byte and an fp32 maximum per 64: 0.5625 B
  CHECK(tr.frozen_weight_bytes(4096) == 0.5625);
  tr.lora.double_quant = true;  // the maxima in 8 bits, an fp32 constant per 256 of them
  CHECK(tr.frozen_weight_bytes(4096) == Approx(0.515869140625));
  const auto q = analytic::evaluate(m, s, one_a100(), tr);
  // 6,476,267,520 x 0.515869140625 + 262,148,096 x 4 (prepare_model_for_kbit_training makes
  // what is not quantized fp32) + 39,976,960 fp32 adapters x 4 = 4,549,406,784 B
  CHECK(q.memory.weights.count() == Approx(blocks * 0.515869140625 + 4 * outer + 4 * adapters));
  // the fp32 head's bf16 cast, kept by its GEMM for dX: 2 B x 32,000 x 4096
  CHECK(q.memory.weight_casts.count() == Approx(262'144'000));
  // without autocast (a bf16 model, LitGPT's bf16-true) the embedding and head stay bf16
  training lit = tr;
  lit.framework = frameworks::megatron;
  CHECK(lit.frozen_embedding_bytes() == 2);
  // the largest linear layer dequantized for its GEMM: 2 B x 4096 x 11008, beside the recipe's
  // 64 MiB cuBLAS workspace
  CHECK(q.memory.workspace.count() == Approx(2.0 * 4096 * 11008 + 64.0 * 1024 * 1024));
  // LLM.int8: a byte per weight and an fp32 scale per output row of 4096 inputs
  tr.lora = {.rank = 16, .base = base_storage::int8, .embeddings = base_storage::fp32};
  const auto i8 = analytic::evaluate(m, s, one_a100(), tr);
  CHECK(i8.memory.weights.count() == Approx(blocks * (1 + 4.0 / 4096) + 4 * outer + 4 * adapters));
  // a bf16 base needs no cast: 2 B a weight
  const auto bf = analytic::evaluate(m, s, one_a100(), hf_lora(base_storage::bf16));
  CHECK(bf.memory.weights.count() == Approx(2 * (blocks + outer) + 4 * adapters));
  CHECK(bf.memory.weight_casts.count() == 0);
  // dequantizing costs time: seven linear layers a layer, forward and again for dX
  const lower::shard x = lower::shard_of(m, s, tr);
  CHECK(kernels_named(m, x, hf_lora(base_storage::nf4), "dequantize") == 14);
  CHECK(kernels_named(m, x, hf_lora(base_storage::bf16), "dequantize") == 0);
  CHECK(q.time.forward > bf.time.forward);
  CHECK(q.time.backward > bf.time.backward);
}

TEST_CASE("frozen fp32 weights under autocast: cast per use, kept by the GEMM, never cached") {
  // autocast caches casts of leaves that require grad only: a frozen weight's bf16 copy lives
  // while its GEMM keeps it for dX. Without recomputation every layer's copies wait for the
  // backward: 32 x 2 B x 202,375,168 linear weights, plus the head's 2 B x 32,000 x 4096.
  const transformer m = zoo::llama2_7b();
  const training tr = hf_lora(base_storage::automatic);
  const auto kept = analytic::evaluate(m, parallel::nd{.micro_batch = 4}, one_a100(), tr);
  CHECK(kept.memory.weight_casts.count() == Approx(32 * 404'750'336.0 + 262'144'000));
  // recomputed layers make no copy that outlives the forward: only the head's remains (the
  // defect this replaces held every layer's copy until the loss, more than without recompute)
  const auto full = analytic::evaluate(
      m, parallel::nd{.recomputation = parallel::recompute::full, .micro_batch = 4}, one_a100(),
      tr);
  CHECK(full.memory.weight_casts.count() == Approx(262'144'000));
  CHECK(full.memory.activations + full.memory.weight_casts <
        kept.memory.activations + kept.memory.weight_casts);
}

TEST_CASE("8-bit and paged optimizers: bitsandbytes' states and where they live") {
  const transformer m = zoo::llama2_7b();
  const parallel::nd s{.recomputation = parallel::recompute::full, .micro_batch = 4};
  training tr = hf_lora(base_storage::bf16);
  tr.optim = optimizer::adam_8bit;
  // two moments of one byte each and an fp32 maximum per 256: 2 x 1.015625 B per adapter
  // weight (fp32 adapters under autocast: no master copy)
  const auto eight = analytic::evaluate(m, s, one_a100(), tr);
  CHECK(eight.memory.optimizer_states.count() == Approx(2.03125 * adapters));
  // Megatron-style full training keeps its fp32 master beside them: 4 + 2.03125 B
  CHECK(training{.optim = optimizer::adam_8bit}.optimizer_bytes() == 6.03125);
  // paged: the states of tensors of 100,000 elements and more in unified memory, reported
  // apart and out of the peak. Of a layer's rank-16 factors only gate's and up's B (11008 x 16)
  // and down's A (16 x 11008) are that large: 3 x 176,128 x 32 layers = 16,908,288 parameters.
  tr.paged_optimizer = true;
  const auto paged = analytic::evaluate(m, s, one_a100(), tr);
  CHECK(paged.memory.paged.count() == Approx(2.03125 * 16'908'288));
  CHECK(paged.memory.optimizer_states.count() == Approx(2.03125 * (adapters - 16'908'288)));
  CHECK(paged.memory.total().count() ==
        Approx(eight.memory.total().count() - 2.03125 * 16'908'288));
}

TEST_CASE("PEFT's default targets: the query and value projections") {
  const transformer m = zoo::llama2_7b();
  training tr = hf_lora(base_storage::bf16);
  tr.lora.targets = lora_targets::query_value;
  // q and v: 16 x (4096 + 4096) each = 262,144 a layer, 8,388,608 in 32 layers
  CHECK(analytic::trained_on(m, parallel::nd{}, tr, 0).dense == 8'388'608);
  // bf16 adapters (LitGPT's bf16-true): 2 B weights and gradients, Adam's moments in bf16
  tr.lora.adapters = adapter_storage::bf16;
  const auto r = analytic::evaluate(m, parallel::nd{.micro_batch = 4}, one_a100(), tr);
  CHECK(r.memory.optimizer_states.count() == Approx(4 * 8'388'608.0));
}

TEST_CASE("LoRA's dropout keeps a dropped copy of each adapted input instead of the input") {
  const transformer m = zoo::llama2_7b();
  const parallel::nd s{.micro_batch = 1};
  training tr = hf_lora(base_storage::bf16);
  tr.batch = 1;
  const auto none = analytic::evaluate(m, s, one_a100(), tr);
  tr.lora.dropout = 0.05;
  const auto dropped = analytic::evaluate(m, s, one_a100(), tr);
  // each adapter's A keeps the dropped copy and the dropout its mask (2 + 1 B) where it kept
  // its own 16-bit copy of the input (2 B, PEFT's cast to the fp32 adapters cast back by
  // autocast): 1 B more per adapted input for q, k, v, o, gate, up (4096 wide each) and down
  // (11008). 2048 tokens x (6 x 4096 + 11008) = 72,876,032 B per layer; x 32 layers
  // 2,332,033,024
  CHECK(dropped.memory.activations.count() - none.memory.activations.count() ==
        Approx(32.0 * 2048 * (6 * 4096 + 11008)));
}

TEST_CASE("fine-tuning inputs a plan cannot run are refused with a sentence") {
  training tr{.precision = precision_mode::fp32};
  tr.lora = {.rank = 8, .base = base_storage::nf4};
  CHECK_THROWS_WITH(tr.check_transformer(), Catch::Contains("give a mixed precision"));
  training no_rank{};
  no_rank.lora.base = base_storage::int8;
  CHECK_THROWS_WITH(no_rank.check_transformer(), Catch::Contains("needs LoRA adapters"));
  training bad_dropout{};
  bad_dropout.lora = {.rank = 8, .dropout = 1.0};
  CHECK_THROWS_WITH(bad_dropout.check(), Catch::Contains("dropout must lie in [0, 1)"));
}

TEST_CASE("a report names each default it applied; the Llama family's defaults are Llama's") {
  using nlohmann::json;
  // Mistral-7B typed by hand: with "family": "llama" untied and without dropout, 7,241,732,096
  // parameters as published (with GPT-2's defaults it was 7.11 B: a tied head)
  const json mistral = {{"layers", 32},     {"hidden", 4096},   {"heads", 32},
                        {"kv_heads", 8},    {"ffn", 14336},     {"vocabulary", 32000},
                        {"sequence", 4096}, {"family", "llama"}};
  json s = {
      {"model", mistral},
      {"cluster",
       {{"name", "one"},
        {"device", "rtx4090"},
        {"levels", json::array({{{"fanout", 1}, {"bandwidth_GBps", 32}}})}}},
      {"training",
       {{"batch", 1}, {"framework", "huggingface"}, {"lora", {{"rank", 16}, {"base", "nf4"}}}}}};
  const auto r = io::parse_transformer_scenario(s);
  CHECK(r.net.parameters() == 7'241'732'096);
  CHECK(!r.net.tied);
  CHECK(!r.net.dropout);
  const auto named = [&](const std::vector<std::string>& d, const std::string& start) {
    for (const auto& x : d)
      if (x.rfind(start, 0) == 0) return true;
    return false;
  };
  CHECK(named(r.defaults, "model.tied: false (\"family\": \"llama\")"));
  CHECK(named(r.defaults, "training.optimizer: adam"));
  CHECK(named(r.defaults, "training.sequence: 4096"));
  CHECK(named(r.defaults, "training.lora.targets: all_linear"));
  CHECK(named(r.defaults, "training.lora.embeddings: fp32 (prepare_model_for_kbit_training"));
  CHECK(!named(r.defaults, "training.framework"));  // given
  // the same dimensions without a family take GPT-2's tied head, and say so
  s["model"].erase("family");
  const auto g = io::parse_transformer_scenario(s);
  CHECK(g.net.tied);
  CHECK(named(g.defaults, "model.tied: true (GPT-2's, no \"family\" given"));
  // an input strata does not understand is refused, naming it
  s["training"]["lora"]["base"] = "nf3";
  CHECK_THROWS_WITH(io::parse_transformer_scenario(s),
                    Catch::Contains("training.lora.base: must be one of"));
  s["training"]["lora"]["base"] = "bf16";
  s["training"]["lora"]["double_quant"] = true;
  CHECK_THROWS_WITH(io::parse_transformer_scenario(s),
                    Catch::Contains("training.lora.double_quant: quantizes nf4's block maxima"));
}

TEST_CASE("LitGPT's QLoRA as it ran with bitsandbytes 0.42: the graph outlives the step") {
  using nlohmann::json;
  // LitGPT's config-hub row for Llama-3.2-1B (C 2048, I 8192, 16 layers, V 128,256, tied in
  // the checkpoint): micro-batch 2 x 512 tokens, q and v adapted at rank 32, NF4 base
  json j = {{"model", {{"hf_id", "meta-llama/Llama-3.2-1B"}}},
            {"cluster",
             {{"name", "one"},
              {"device", "a10g"},
              {"levels", json::array({{{"fanout", 1}, {"bandwidth_GBps", 100}}})}}},
            {"training",
             {{"batch", 2},
              {"sequence", 512},
              {"framework", "litgpt"},
              {"optimizer", "paged_adamw"},
              {"lora",
               {{"rank", 32},
                {"targets", "query_value"},
                {"dropout", 0.05},
                {"base", "nf4"},
                {"keeps_inputs", true}}}}},
            {"parallel", {{"micro_batch", 2}}}};
  const auto sc = io::parse_transformer_scenario(j);
  // LitGPT's converter copies the tied embedding into its own lm_head: the plan is untied, and
  // the report says so
  CHECK(!sc.net.tied);
  CHECK(std::find(sc.defaults.begin(), sc.defaults.end(),
                  "model.tied: false (litgpt copies the tied embedding into a separate head)") !=
        sc.defaults.end());
  const auto x = analytic::stage_terms(sc.net, sc.strategy, sc.setup, 0);
  const double C = 2048, I = 8192, L = 16, V = 128'256, BT = 1024;
  // bitsandbytes 0.42 keeps each quantized layer's input on its node: the QKV and MLP inputs
  // (2 C each), the attention output the projection reads (2 C), the SwiGLU product (2 I), and
  // the head's input once (2 C): 469,762,048 + 4,194,304 = 473,956,352 B, which LitGPT's held
  // `logits` carry into the next forward
  CHECK(x.previous_graph == Approx((6 * C + 2 * I) * BT * L + 2 * C * BT));
  // the head quantized from fp16: fp16 and bf16 copies, 4 x 128,256 x 2048 = 1,050,673,152 B
  CHECK(x.head_dequant == Approx(4 * V * C));
  // Fabric's fp32 logits held (4 B each); at the forward's end the last chunk's head
  // dequantized beside the bf16 outputs (2 + 4 V C / T V) beats their fp32 copies (6 B)
  CHECK(x.held_logits == Approx(4 * BT * V));
  CHECK(x.forward_logits == Approx(2 * BT * V + 4 * V * C));
  const auto mem = analytic::stage_memory(x, sc.setup);
  CHECK(mem.moment == memory_moment::next_forward);
  // the first step holds no earlier graph: that moment's total without it is below the loss's
  // (P_b: saved tensors, 8 B per logit and the dequantized head)
  CHECK(mem.first_step.count() > 0);
  CHECK(mem.total().count() - mem.first_step.count() < x.previous_graph);
  // without the old bitsandbytes nothing outlives the step, and there is no first-step figure
  j["training"]["lora"]["keeps_inputs"] = false;
  const auto fresh = io::parse_transformer_scenario(j);
  const auto y = analytic::stage_terms(fresh.net, fresh.strategy, fresh.setup, 0);
  CHECK(y.previous_graph == 0);
  CHECK(analytic::stage_memory(y, fresh.setup).first_step.count() == 0);
  // a C++ plan with this recipe must describe the model untied
  transformer tied = sc.net;
  tied.tied = true;
  const parallel::nd s{.micro_batch = 2};
  CHECK_THROWS_WITH(s.check(tied, sc.setup, 1), Catch::Contains("transformer.tied"));
}

TEST_CASE("a frozen down projection keeps no input; LitGPT's norms keep an fp32 copy") {
  const transformer m = zoo::llama2_7b();
  const lower::shard x{.b = 1, .s = 1024, .seq = 1024};
  training tr{.batch = 1, .sequence = 1024, .framework = frameworks::litgpt};
  tr.lora = {.rank = 8, .targets = lora_targets::query_value, .base = base_storage::bf16};
  const double qv = analytic::layer_saved_bytes(m, x, tr);
  tr.lora.targets = lora_targets::all_linear;
  const double all = analytic::layer_saved_bytes(m, x, tr);
  // all-linear adapters read the attention output (already kept), the QKV and MLP inputs (the
  // MLP's new: 2 C), the SwiGLU product (2 I) and store their rank-8 A outputs; q, v alone
  // keep neither the MLP input nor the product: (2 x 4096 + 2 x 11008) x 1024 B, plus the
  // A outputs of 4 more adapted layers (the projection, gate, up and down: 4 x 2 x 8 x 1024)
  // and less the zero-pad source q and v keep (2 x 8192 x 1024)
  CHECK(all - qv ==
        Approx((2 * 4096 + 2 * 11008) * 1024.0 + 4 * 2 * 8 * 1024.0 - 2 * 8192 * 1024.0));
  // the two RMSNorms keep their fp32 input copies (4 B), where torch.nn.RMSNorm keeps bf16
  training plain = tr;
  plain.framework.norm_fp32_input = false;
  CHECK(all - analytic::layer_saved_bytes(m, x, plain) == Approx(2 * 2 * 4096 * 1024.0));
}

}  // namespace unit_finetune
