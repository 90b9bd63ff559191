// Hugging Face configurations (io/hf_config.hpp): every config shipped in tools/hf_configs counts
// its checkpoint's parameters exactly, the defaults are the configuration classes', and what
// strata cannot count or price is refused by name.
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "strata/analytic/parameters.hpp"
#include "strata/frameworks/huggingface.hpp"
#include "strata/io/hf_config.hpp"
#include "strata/io/transformer_scenario.hpp"
#include "strata/model/transformer_zoo.hpp"
#include "strata/parallel/nd.hpp"

namespace unit_hf_config {

using Catch::Matchers::Contains;
using nlohmann::json;
namespace io = strata::io;

namespace {
const std::filesystem::path dir = STRATA_HF_CONFIGS_DIR;

json shipped(const std::string& id) {
  return io::read_hf_config_file(dir / io::hf_config_file_name(id));
}
long long count(const strata::transformer& m) { return static_cast<long long>(m.parameters()); }
}  // namespace

// tools/hf_configs/index.json lists each shipped config with its published count ("published":
// a hub safetensors total, a paper's table, or a hand sum of the checkpoint's tensors, per its
// "source"), the elements of that count that are not parameters ("not_parameters": buffers such
// as causal masks or rotary inv_freq, or a second copy of a tied matrix), the first reason a plan
// refuses it ("refused") and the sequence up to which a sliding window changes nothing
// ("sequence"). docs/hf_configs.md's table is generated from it (tools/hf_configs/table.py).
TEST_CASE("hf_config: the shipped configs count their checkpoints exactly", "[hf_config]") {
  const json index = io::read_hf_config_file(dir / "index.json");
  REQUIRE(index.size() >= 25);
  int counted = 0, planned = 0;
  for (const auto& e : index) {
    const std::string id = e["id"].get<std::string>();
    INFO(id);
    const json c = shipped(id);
    if (e.contains("error")) {
      CHECK_THROWS_WITH(io::read_hf_config(c), Contains(e["error"].get<std::string>()));
      CHECK_THROWS_WITH(io::transformer_from_hf_config(c), Contains("which strata does not model"));
      continue;
    }
    const io::hf_model h = io::read_hf_config(c);
    CHECK(h.name == id);
    CHECK(h.net.name == id);
    CHECK(count(h.net) + e.value("not_parameters", 0LL) == e["published"].get<long long>());
    ++counted;
    const std::string refused = e.value("refused", "");
    if (!refused.empty()) CHECK_THROWS_WITH(io::transformer_from_hf_config(c), Contains(refused));
    if (refused.empty() || refused == "sliding_window") {
      const auto m = io::transformer_from_hf_config(c, {.sequence = e.value("sequence", 0)});
      CHECK(count(m) == count(h.net));
      CHECK(m.name == id);
      ++planned;
    }
  }
  CHECK(counted >= 25);
  CHECK(planned >= 25);
}

TEST_CASE("hf_config: missing fields take the configuration class's defaults", "[hf_config]") {
  // LlamaConfig() is Llama-2 7B's architecture
  const auto llama = io::transformer_from_hf_config(json{{"model_type", "llama"}});
  CHECK(count(llama) == count(strata::zoo::llama2_7b()));
  CHECK(llama.sequence == 2048);  // max_position_embeddings
  CHECK(!llama.tied);
  CHECK(!llama.bias);
  CHECK(!llama.dropout);
  CHECK(llama.kv() == 32);
  CHECK(llama.name == "llama");
  // GPT2Config() is GPT-2 small: tied, biased, dropout 0.1
  const auto gpt2 = io::transformer_from_hf_config(json{{"model_type", "gpt2"}});
  CHECK(count(gpt2) == 124'439'808);
  CHECK(gpt2.tied);
  CHECK(gpt2.bias);
  CHECK(gpt2.dropout);
  CHECK(gpt2.positions == strata::position_kind::learned);
  // GemmaConfig() is Gemma 7B: head_dim 256 x 16 heads, Q 4096 wide in a 3072-wide model
  const io::hf_model gemma = io::read_hf_config(json{{"model_type", "gemma"}});
  CHECK(count(gemma.net) == 8'537'680'896);
  CHECK(gemma.net.tied);
  CHECK(io::transformer_from_hf_config(json{{"model_type", "gemma"}}).q_width() == 4096);
  // MistralConfig() slides a 4096-token window over 131072 positions
  CHECK_THROWS_WITH(io::transformer_from_hf_config(json{{"model_type", "mistral"}}),
                    Contains("train at 4096 tokens or fewer"));
  CHECK(count(io::transformer_from_hf_config(json{{"model_type", "mistral"}},
                                             {.sequence = 4096})) == 7'241'732'096);
  // tied, bias and dropout are the file's, not strata's GPT-2 defaults
  const auto tied = io::transformer_from_hf_config(
      json{{"model_type", "llama"}, {"tie_word_embeddings", true}, {"attention_dropout", 0.1}});
  CHECK(tied.tied);
  CHECK(tied.dropout);
}

TEST_CASE("hf_config: the shipped Llama 3 matches the zoo's", "[hf_config]") {
  const auto hf = io::transformer_from_hf_id("meta-llama/Llama-3.1-8B");
  const auto zoo = strata::zoo::llama3_8b();
  CHECK(hf.name == "meta-llama/Llama-3.1-8B");
  CHECK(count(hf) == count(zoo));
  CHECK(hf.layers == zoo.layers);
  CHECK(hf.hidden == zoo.hidden);
  CHECK(hf.kv() == zoo.kv());
  CHECK(hf.ffn_size() == zoo.ffn_size());
  CHECK(hf.vocabulary == zoo.vocabulary);
  CHECK(hf.tied == zoo.tied);
  CHECK(hf.bias == zoo.bias);
  CHECK(hf.dropout == zoo.dropout);
  CHECK(hf.mlp == zoo.mlp);
  CHECK(hf.norm == zoo.norm);
}

TEST_CASE("hf_config: DeepSeek-V3 plans, its dense first layers on the first stage",
          "[hf_config]") {
  using namespace strata;
  const transformer m = io::transformer_from_hf_config(json{{"model_type", "deepseek_v3"}});
  REQUIRE(m.dense_layers == 3);
  // two stages of 31 and 30 layers, 32-way expert parallelism: 64 GPUs
  parallel::nd s{.expert = {.degree = 32}, .pipeline = {.degree = 2}};
  s.pipeline.first_stage_layers = 31;
  s.pipeline.last_stage_layers = 30;
  const training tr{.batch = 64, .sequence = 4096};
  CHECK_NOTHROW(s.check(m, tr, 64));
  // per layer, h = 7168: latent attention 187,107,328 (Q down h r + r, Q up r a qk, KV down
  // h (c + rope) + c, KV up c a (nope + v), output a v h), two norms 14,336; an MoE layer adds
  // the router h x 256 = 1,835,008 and the shared expert 3 h 2048 = 44,040,192 (232,996,864
  // outside its experts) and 256 experts of 44,040,192 (11,274,289,152); a dense first layer
  // the MLP 3 h 18432 = 396,361,728 (583,483,392). Stage 0 on one rank: 28 MoE and 3 dense
  // layers and the embedding 129280 h = 926,679,040, the experts over 32 ranks
  const auto first = analytic::parameters_on(m, s, 0);
  CHECK(first.dense == 28 * 232'996'864.0 + 3 * 583'483'392.0 + 926'679'040.0);
  CHECK(first.expert == 28 * 11'274'289'152.0 / 32);
  // the last stage: 30 MoE layers and the head (an untied 129280 h and the final norm)
  const auto last = analytic::parameters_on(m, s, 1);
  CHECK(last.dense == 30 * 232'996'864.0 + 926'679'040.0 + 7168);
  // a first stage too short for the dense layers is refused, naming the field to change
  s.pipeline.first_stage_layers = 1;
  s.pipeline.last_stage_layers = 60;
  CHECK_THROWS_WITH(s.check(m, tr, 64),
                    Contains("the 3 dense first layers must run on the first pipeline stage's "
                             "first chunk, which holds 1 layers"));
  // transformers' own attention is not what the lowering runs
  training hf = tr;
  hf.framework = frameworks::huggingface;
  CHECK_THROWS_WITH((parallel::nd{.expert = {.degree = 64}}).check(m, hf, 64),
                    Contains("transformer.kv_lora_rank: multi-head latent attention as "
                             "transformers' modeling code runs it is not modelled"));
}

TEST_CASE("hf_config: what strata cannot count or price is refused by name", "[hf_config]") {
  CHECK_THROWS_WITH(
      io::read_hf_config(json{{"model_type", "falcon"}}),
      Contains("hf_config: unknown model_type \"falcon\" (supported: llama, mistral"));
  CHECK_THROWS_WITH(io::read_hf_config(json{{"hidden_size", 4096}}), Contains("no model_type"));
  // DeepseekV3Config() is DeepSeek-V3: counted (latent attention, a shared expert, three dense
  // first layers; the hand sum in tools/hf_configs/index.json) and planned (the next test)
  CHECK(count(io::read_hf_config(json{{"model_type", "deepseek_v3"}}).net) == 671'026'404'352);
  // DeepseekV2Config's num_experts_per_tok is None, which its modeling code cannot route with
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "deepseek_v2"}}),
                    Contains("num_experts_per_tok is None by default"));
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "llama"},
                                            {"architectures", {"LlamaForSequenceClassification"}}}),
                    Contains("reads model_type llama as LlamaForCausalLM"));
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "llama"}, {"attention_bias", true}}),
                    Contains("biases only some linear layers"));
  CHECK(io::read_hf_config(
            json{{"model_type", "llama"}, {"attention_bias", true}, {"mlp_bias", true}})
            .net.bias);
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "gemma3"}}), Contains("gemma3_text"));
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "qwen3_moe"}, {"mlp_only_layers", {0}}}),
                    Contains("mixes dense and MoE layers"));
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "llama"}, {"num_hidden_layers", "32"}}),
                    Contains("num_hidden_layers must be an integer"));
  CHECK_THROWS_WITH(io::read_hf_config(json{{"model_type", "llama"}, {"num_key_value_heads", 5}}),
                    Contains("must divide num_attention_heads"));
  // qwen2 slides only when use_sliding_window
  json q = shipped("Qwen/Qwen2.5-7B");
  q["use_sliding_window"] = true;
  q["sliding_window"] = 4096;
  q["max_window_layers"] = 21;
  CHECK_THROWS_WITH(io::transformer_from_hf_config(q, {.sequence = 8192}),
                    Contains("qwen2 slides a window of 4096 tokens"));
  CHECK(count(io::transformer_from_hf_config(q, {.sequence = 4096})) == 7'615'616'512);
}

TEST_CASE("hf_config: shipped ids", "[hf_config]") {
  CHECK(io::hf_config_file_name("meta-llama/Llama-3.1-8B") == "meta-llama--Llama-3.1-8B.json");
  const auto ids = io::hf_shipped_ids();
  CHECK(ids.size() >= 25);
  CHECK_THROWS_WITH(io::hf_shipped_config("meta-llama/Llama-3.1-8b-hf"),
                    Contains("unknown hf_id \"meta-llama/Llama-3.1-8b-hf\" (closest shipped: "
                             "meta-llama/Llama-3.1-8B"));
  CHECK_THROWS_WITH(io::hf_shipped_config("../index"), Contains("unknown hf_id"));
}

TEST_CASE("hf_config: the new transformer fields leave existing counts alone", "[hf_config]") {
  static_assert(strata::zoo::llama3_8b().head_size == 0);
  static_assert(strata::zoo::llama3_8b().qk_norm == strata::qk_norm_kind::none);
  static_assert(!strata::zoo::llama3_8b().sandwich_norms);
  static_assert(strata::zoo::gpt2_124m().parameters() == 124'439'808);
  static_assert(strata::zoo::llama2_7b().parameters() == 6'738'415'616);
  auto m = strata::zoo::llama3_8b();
  m.head_size = 128;  // = hidden / heads: the same model
  CHECK(m.parameters() == strata::zoo::llama3_8b().parameters());
  CHECK(m.layer_forward_flops(4096) == strata::zoo::llama3_8b().layer_forward_flops(4096));
}

TEST_CASE("hf_config: scenarios take a Hugging Face model", "[hf_config]") {
  const json cluster = json::parse(R"({"name": "one H100", "device": "h100",
                                       "levels": [{"fanout": 1, "bandwidth_GBps": 450}]})");
  auto scenario = [&](json model, int sequence) {
    return json{{"model", std::move(model)},
                {"cluster", cluster},
                {"parallel", {{"micro_batch", 1}}},
                {"training", {{"batch", 1}, {"sequence", sequence}, {"framework", "huggingface"}}}};
  };
  const auto byid =
      io::parse_transformer_scenario(scenario({{"hf_id", "Qwen/Qwen2.5-0.5B"}}, 1024));
  CHECK(byid.name == "Qwen/Qwen2.5-0.5B");
  CHECK(byid.net.name == "Qwen/Qwen2.5-0.5B");
  CHECK(count(byid.net) == 494'032'768);
  const auto inline_config = io::parse_transformer_scenario(
      scenario({{"hf_config", shipped("Qwen/Qwen2.5-0.5B")}, {"name", "mine"}}, 1024));
  CHECK(inline_config.name == "mine");
  CHECK(count(inline_config.net) == 494'032'768);
  const auto path = (dir / "mistralai--Mistral-7B-v0.1.json").string();
  CHECK(count(io::parse_transformer_scenario(scenario({{"hf_config", path}}, 4096)).net) ==
        7'241'732'096);
  CHECK_THROWS_WITH(io::parse_transformer_scenario(scenario({{"hf_config", path}}, 8192)),
                    Contains("model: hf_config: mistral slides a window of 4096 tokens"));
  CHECK_THROWS_WITH(io::parse_transformer_scenario(scenario({{"hf_id", "nobody/nothing"}}, 1024)),
                    Contains("model: hf_config: unknown hf_id \"nobody/nothing\""));
  CHECK_THROWS_WITH(
      io::parse_transformer_scenario(scenario({{"hf_id", "Qwen/Qwen2.5-0.5B"}, {"hidden", 1}}, 1)),
      Contains("model.hidden: unknown field"));
}

TEST_CASE("hf_config: head_dim, Q/K norms and Gemma's post-block norms are lowered",
          "[hf_config]") {
  namespace lower = strata::lower;
  struct seen {
    double q_n = 0, proj_k = 0, attention_out = 0, norms = 0;
    constexpr void kernel(const lower::kernel_op& k) {
      if (k.kind != lower::kernel_kind::gemm || !k.part.empty()) return;
      if (k.what == "Q") q_n = k.n;
      if (k.what == "attention projection") proj_k = k.k;
    }
    constexpr void save(const lower::saved_tensor& t) {
      if (t.what == "attention output") attention_out += t.bytes;
      if (t.what == "norm n and r") norms += 1;  // one per RMSNorm op chain
    }
  };
  const strata::training tr{
      .batch = 1, .sequence = 512, .framework = strata::frameworks::huggingface};
  const auto layer = [&](const strata::transformer& m) {
    seen v;
    lower::layer(m, lower::shard{.b = 1, .s = 512, .seq = 512}, tr, lower::phase::forward, v);
    return v;
  };
  // Gemma 7B: 16 heads x 256 = 4096 wide Q in a 3072-wide model; the attention's output (bf16,
  // 2 x 512 x 4096 B) is what the output projection (4096 -> 3072) reads
  const seen gemma = layer(io::transformer_from_hf_config(shipped("google/gemma-7b")));
  CHECK(gemma.q_n == 4096);
  CHECK(gemma.proj_k == 4096);
  CHECK(gemma.attention_out == 2.0 * 512 * 4096);
  CHECK(gemma.norms == 2);
  // Qwen3 8B: per-head norms on Q and K beside the two of the block
  CHECK(layer(io::transformer_from_hf_config(shipped("Qwen/Qwen3-8B"))).norms == 4);
  // Gemma 2: norms after the attention and the MLP too; Gemma 3 both
  CHECK(layer(io::transformer_from_hf_config(shipped("google/gemma-2-2b"), {.sequence = 512}))
            .norms == 4);
  CHECK(layer(io::transformer_from_hf_config(shipped("google/gemma-3-1b-pt"), {.sequence = 512}))
            .norms == 6);
  // Qwen1.5-MoE-A2.7B: beside its 60 routed experts a shared SwiGLU expert 5632 wide over every
  // token (gate and up 2048 -> 2 x 5632, down 5632 -> 2048) and its sigmoid gate (2048 -> 1)
  struct gemms {
    std::vector<std::array<double, 2>> shared;
    constexpr void kernel(const lower::kernel_op& k) {
      if (k.kind == lower::kernel_kind::gemm && k.part.empty() &&
          k.what.rfind("shared expert", 0) == 0)
        shared.push_back({k.n, k.k});
    }
  } g;
  lower::layer(io::transformer_from_hf_config(shipped("Qwen/Qwen1.5-MoE-A2.7B")),
               lower::shard{.b = 1, .s = 512, .seq = 512}, tr, lower::phase::forward, g);
  CHECK(g.shared == std::vector<std::array<double, 2>>{{2 * 5632, 2048}, {2048, 5632}, {1, 2048}});
}

// Gemma 2 caps each attention score s to c tanh(s / c), c = 50, and each logit with c = 30
// (Gemma2Config). Where SDPA cannot cap, LitGPT, torchtune and eager PyTorch write the scores
// out: autograd then keeps, per score, the tanh's output (2 B in bf16), the fp32 softmax's (4 B)
// and the probabilities P v reads (2 B); `transformers`' SDPA drops the cap.
TEST_CASE("Gemma 2's soft-capping: read from the config, run as each recipe runs it",
          "[hf_config]") {
  json j = shipped("google/gemma-2-2b");
  const strata::transformer g = io::transformer_from_hf_config(j, {.sequence = 512});
  CHECK(g.attention_softcap == 50.0);
  CHECK(g.final_softcap == 30.0);
  CHECK(io::transformer_from_hf_config(shipped("google/gemma-3-1b-pt"), {.sequence = 512})
            .attention_softcap == 0.0);
  j["attn_logit_softcapping"] = nullptr;  // None: no cap
  CHECK(io::read_hf_config(j).net.attention_softcap == 0.0);
  j["attn_logit_softcapping"] = -1;
  CHECK_THROWS_WITH(io::read_hf_config(j),
                    Contains("attn_logit_softcapping must be a positive number or null"));

  namespace lower = strata::lower;
  struct saves {
    double capped = 0, probabilities = 0, tanh_logits = 0;
    bool fused = false;
    constexpr void kernel(const lower::kernel_op& k) {
      if (k.kind == lower::kernel_kind::attention) fused = true;
    }
    constexpr void save(const lower::saved_tensor& t) {
      if (t.what == "capped scores") capped += t.bytes;
      if (t.what == "attention scores") probabilities += t.bytes;
      if (t.what == "logit cap tanh output") tanh_logits += t.bytes;
    }
  };
  const auto forward = [&](const strata::frameworks::recipe& r, bool flash = true) {
    strata::training tr{.batch = 1, .sequence = 512, .framework = r};
    tr.flash_attention = flash;
    const lower::shard x{.b = 1, .s = 512, .seq = 512};
    saves v;
    lower::layer(g, x, tr, lower::phase::forward, v);
    lower::head(g, x, tr, lower::phase::forward, v);
    return v;
  };
  // LitGPT (bf16-true): 8 heads x 512 x 512 = 2,097,152 scores; P 2 B each = 4,194,304 B, the
  // tanh's output and the fp32 softmax's 2 + 4 B each = 12,582,912 B; its LoRA loop's chunked
  // head returns the logits uncapped (litgpt/lora.py)
  const saves lit = forward(strata::frameworks::litgpt);
  CHECK_FALSE(lit.fused);
  CHECK(lit.probabilities == 4'194'304.0);
  CHECK(lit.capped == 12'582'912.0);
  CHECK(lit.tanh_logits == 0.0);
  // transformers: SDPA's fused kernel, nothing s x s kept; the logits' tanh output in bf16,
  // 512 x 256,000 x 2 B = 262,144,000 B
  const saves hf = forward(strata::frameworks::huggingface);
  CHECK(hf.fused);
  CHECK(hf.capped + hf.probabilities == 0.0);
  CHECK(hf.tanh_logits == 262'144'000.0);
  // its eager attention (`attn_implementation="eager"`, flash_attention off) applies the cap
  // and keeps what LitGPT keeps
  const saves eager = forward(strata::frameworks::huggingface, false);
  CHECK(eager.probabilities == 4'194'304.0);
  CHECK(eager.capped == 12'582'912.0);
  // a recipe whose handling is not known refuses the plan, naming the field and the recipes
  const strata::training megatron{.batch = 8, .sequence = 512};
  CHECK_THROWS_WITH(strata::parallel::nd{}.check(g, megatron, 1),
                    Contains("transformer.attention_softcap: how the megatron recipe runs") &&
                        Contains("litgpt"));
}

}  // namespace unit_hf_config
