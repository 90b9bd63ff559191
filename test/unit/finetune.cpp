// Fine-tuning as people run it (issue 36): LoRA over bf16, int8 and NF4 bases (bitsandbytes'
// storage worked by hand), frozen weights that autocast does not cache, 8-bit and paged
// optimizers, PEFT's default targets.
#include <catch2/catch.hpp>
#include <strata/io/transformer_scenario.hpp>
#include <strata/strata.hpp>

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

TEST_CASE("LoRA's dropout keeps a dropped copy of each adapted input") {
  const transformer m = zoo::llama2_7b();
  const parallel::nd s{.micro_batch = 1};
  training tr = hf_lora(base_storage::bf16);
  tr.batch = 1;
  const auto none = analytic::evaluate(m, s, one_a100(), tr);
  tr.lora.dropout = 0.05;
  const auto dropped = analytic::evaluate(m, s, one_a100(), tr);
  // per layer: q, k, v, gate, up read 4096 wide inputs, o 4096, down 11008: 2048 tokens x
  // (6 x 4096 + 11008) x 3 B (bf16 copy and mask) = 218,628,096 B; x 32 layers 6,996,099,072
  CHECK(dropped.memory.activations.count() - none.memory.activations.count() ==
        Approx(32.0 * 2048 * (6 * 4096 + 11008) * 3));
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
