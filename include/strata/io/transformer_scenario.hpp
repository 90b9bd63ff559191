#pragma once
/// @file io/transformer_scenario.hpp
/// @brief Transformer scenarios as JSON: a model (zoo name or dimensions), a cluster, a
/// `parallel::nd` strategy (or a search), the training setup and a device profile; reports as
/// JSON or a table. Errors are `plan_error`s that start with the offending field's path; a
/// plan that breaks a limit gets the same sentence as the compile-time check. Schema:
/// docs/cli.md.
/// @code
/// auto s = strata::io::parse_transformer_scenario(nlohmann::json::parse(R"({
///   "model": "gpt3-175b", "cluster": {"preset": "dgx-a100", "devices": 1024},
///   "parallel": {"tensor": 8, "pipeline": 8, "data": 16},
///   "training": {"batch": 1536}})"));
/// auto j = strata::io::transformer_report_json(s);
/// @endcode

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/analytic/transformer.hpp"
#include "strata/frameworks/deepspeed.hpp"
#include "strata/frameworks/fsdp.hpp"
#include "strata/frameworks/huggingface.hpp"
#include "strata/frameworks/litgpt.hpp"
#include "strata/frameworks/pytorch_eager.hpp"
#include "strata/io/cluster.hpp"
#include "strata/io/hf_config.hpp"
#include "strata/io/profile.hpp"
#include "strata/io/profile_choice.hpp"
#include "strata/io/validation.hpp"
#include "strata/model/transformer_zoo.hpp"
#include "strata/search/transformer_sweep.hpp"

namespace strata::io {

/// A parsed transformer scenario.
struct transformer_scenario {
  transformer net;
  std::string name;  ///< owns the model's name
  cluster machine;
  parallel::nd strategy;
  training setup;
  device_profile profile;
  std::string profile_name;
  /// where the profile's efficiencies come from and how they reach the cluster's device
  std::string efficiencies;
  bool search = false;  ///< sweep the space instead of evaluating `strategy`
  search::transformer_space space;
  /// the defaults the scenario did not give that change its answer, each as "field: value
  /// (why)"; the report lists them under "defaults"
  std::vector<std::string> defaults;
};

namespace detail {

using transformer_maker = transformer (*)();

/// A zoo transformer a scenario can name.
struct zoo_entry {
  const char* key;
  transformer_maker make;
};
/// The zoo transformers a scenario names by key (`strata --list-models`).
inline constexpr zoo_entry transformer_zoo[] = {{"gpt2-124m", zoo::gpt2_124m},
                                                {"gpt2-355m", zoo::gpt2_355m},
                                                {"gpt2-774m", zoo::gpt2_774m},
                                                {"gpt2-1.5b", zoo::gpt2_1_5b},
                                                {"gpt3-175b", zoo::gpt3_175b},
                                                {"gpt-1.7b", zoo::gpt_1_7b},
                                                {"gpt-3.6b", zoo::gpt_3_6b},
                                                {"gpt-7.5b", zoo::gpt_7_5b},
                                                {"gpt-18b", zoo::gpt_18b},
                                                {"gpt-39b", zoo::gpt_39b},
                                                {"gpt-76b", zoo::gpt_76b},
                                                {"gpt-145b", zoo::gpt_145b},
                                                {"gpt-310b", zoo::gpt_310b},
                                                {"gpt-530b", zoo::gpt_530b},
                                                {"gpt-1t", zoo::gpt_1t},
                                                {"bert-base", zoo::bert_base},
                                                {"bert-large", zoo::bert_large},
                                                {"llama2-7b", zoo::llama2_7b},
                                                {"llama2-13b", zoo::llama2_13b},
                                                {"llama2-70b", zoo::llama2_70b},
                                                {"llama3-8b", zoo::llama3_8b},
                                                {"llama3-70b", zoo::llama3_70b},
                                                {"llama3-405b", zoo::llama3_405b},
                                                {"mixtral-8x7b", zoo::mixtral_8x7b},
                                                {"llama3.2-1b", zoo::llama3_2_1b},
                                                {"tinyllama-1.1b", zoo::tinyllama_1_1b},
                                                {"qwen2.5-0.5b", zoo::qwen2_5_0_5b},
                                                {"qwen2.5-7b", zoo::qwen2_5_7b},
                                                {"mistral-7b", zoo::mistral_7b}};

/// The maker of the zoo transformer called `name` (`nullptr` when there is none); `known`, when
/// given, receives the known names.
inline transformer_maker find_transformer(const std::string& name, std::string* known = nullptr) {
  for (const zoo_entry& e : transformer_zoo) {
    if (name == e.key) return e.make;
    if (known) *known += (known->empty() ? "" : ", ") + std::string(e.key);
  }
  return nullptr;
}

inline transformer zoo_transformer(const std::string& name, const std::string& path) {
  std::string known;
  if (const auto make = find_transformer(name, &known)) return make();
  fail(path, "unknown model \"" + name + "\" (known: " + known + ")");
}

/// The key that holds a scenario's transformer: "model" when it names a zoo transformer or gives
/// a transformer's dimensions (an object with "hidden" or "heads") or a Hugging Face
/// configuration ("hf_config" or "hf_id"), "transformer" (the older spelling), or `nullptr` when
/// the scenario is not a transformer's (a CNN's "model", a step, a DLRM).
inline const char* transformer_key(const json& j) {
  if (!j.is_object()) return nullptr;
  const bool older = j.contains("transformer");
  if (older && j.contains("model"))
    fail("scenario", "give the model once: \"model\" (or the older spelling \"transformer\")");
  if (older) return "transformer";
  if (!j.contains("model")) return nullptr;
  const json& m = j["model"];
  const bool named = m.is_string() && find_transformer(m.get<std::string>()) != nullptr;
  const bool dims = m.is_object() && (m.contains("hidden") || m.contains("heads"));
  const bool hf = m.is_object() && (m.contains("hf_config") || m.contains("hf_id"));
  return named || dims || hf ? "model" : nullptr;
}

/// A Hugging Face model (`io/hf_config.hpp`): {"hf_config": "path/to/config.json"} (relative
/// to the working folder), {"hf_config": {...the config itself...}} or {"hf_id": "org/name"} (a
/// configuration shipped in tools/hf_configs; no network), with an optional "name". `sequence`:
/// the training sequence (0: the model's), which a sliding window must not be shorter than.
inline transformer parse_hf_transformer(const json& j, std::string& name, const std::string& p,
                                        int sequence) {
  only_keys(j, p, {"hf_config", "hf_id", "name"});
  if (j.contains("hf_config") == j.contains("hf_id"))
    fail(p, "give either \"hf_config\" (a config.json or its path) or \"hf_id\"");
  json config;
  std::string fallback;
  if (j.contains("hf_id")) {
    if (!j["hf_id"].is_string()) fail(p + ".hf_id", "must be a model id such as \"org/name\"");
    fallback = j["hf_id"].get<std::string>();
    try {
      config = hf_shipped_config(fallback);
    } catch (const plan_error& e) {
      fail(p, e.what());
    }
    config["_name_or_path"] = fallback;
  } else if (j["hf_config"].is_string()) {
    const std::filesystem::path file = j["hf_config"].get<std::string>();
    config = parse_json(read_file(file.string(), p + ".hf_config", "config file"));
    fallback = file.stem().string();
  } else if (j["hf_config"].is_object()) {
    config = j["hf_config"];
  } else {
    fail(p + ".hf_config", "must be a config.json's path or its object");
  }
  try {
    hf_model h = read_hf_config(config, fallback);
    name = str_field(j, p, "name", h.name.c_str());
    transformer m = transformer_from_hf_config(config, hf_options{sequence}, fallback);
    return m;
  } catch (const plan_error& e) {
    fail(p, e.what());
  }
}

/// `path`: the scenario key the model was given under ("model" or "transformer"); `sequence`:
/// the scenario's training sequence (0: the model's), for a Hugging Face model's sliding window.
inline transformer parse_transformer(const json& j, std::string& name,
                                     const std::string& path = "transformer", int sequence = 0) {
  if (j.is_string()) {
    transformer m = zoo_transformer(j.get<std::string>(), path);
    name = std::string(m.name);
    return m;
  }
  if (j.is_object() && (j.contains("hf_config") || j.contains("hf_id")))
    return parse_hf_transformer(j, name, path, sequence);
  const std::string& p = path;
  only_keys(j, p,
            {"name",     "layers",  "hidden", "heads",     "kv_heads",       "ffn",   "vocabulary",
             "sequence", "mlp",     "norm",   "positions", "tied",           "bias",  "qkv_bias",
             "dropout",  "experts", "top_k",  "capacity",  "expert_load_cv", "family"});
  transformer m;
  // "family": the defaults of the fields left out: GPT-2's (GELU, LayerNorm, learned positions,
  // biases, tied, dropout) or Llama's, which Qwen and Mistral share (SwiGLU, RMSNorm, rotary, no
  // biases, untied, no dropout)
  const bool llama = enum_field(j, p, "family", false, {{"gpt2", false}, {"llama", true}});
  name = str_field(j, p, "name", "custom transformer");
  m.layers = int_field(j, p, "layers", 1, 1 << 20, 0, true);
  m.hidden = int_field(j, p, "hidden", 1, 1 << 24, 0, true);
  m.heads = int_field(j, p, "heads", 1, 1 << 20, 0, true);
  m.kv_heads = int_field(j, p, "kv_heads", 0, 1 << 20, 0);
  m.ffn = int_field(j, p, "ffn", 0, 1 << 26, 0);
  m.vocabulary = int_field(j, p, "vocabulary", 1, 1 << 26, 50257);
  m.sequence = int_field(j, p, "sequence", 1, 1 << 26, 2048);
  m.mlp = enum_field(j, p, "mlp", llama ? mlp_kind::swiglu : mlp_kind::gelu,
                     {{"gelu", mlp_kind::gelu}, {"swiglu", mlp_kind::swiglu}});
  m.norm = enum_field(j, p, "norm", llama ? norm_kind::rms_norm : norm_kind::layer_norm,
                      {{"layernorm", norm_kind::layer_norm}, {"rmsnorm", norm_kind::rms_norm}});
  m.positions =
      enum_field(j, p, "positions", llama ? position_kind::rotary : position_kind::learned,
                 {{"learned", position_kind::learned}, {"rotary", position_kind::rotary}});
  m.tied = flag_field(j, p, "tied", !llama);
  m.bias = flag_field(j, p, "bias", !llama);
  m.qkv_bias = flag_field(j, p, "qkv_bias", false);
  m.dropout = flag_field(j, p, "dropout", !llama);
  m.experts = int_field(j, p, "experts", 1, 1 << 16, 1);
  m.top_k = int_field(j, p, "top_k", 1, 1 << 16, 1);
  m.capacity = num_field(j, p, "capacity", 1e-3, 1e3, 1.0);
  m.expert_load_cv = num_field(j, p, "expert_load_cv", 0.0, 1.0, 0.0);
  m.check();
  return m;
}

inline parallel::nd parse_nd(const json& j) {
  const std::string p = "parallel";
  only_keys(j, p,
            {"tensor",
             "sequence_parallel",
             "context",
             "expert",
             "pipeline",
             "virtual_stages",
             "schedule",
             "first_stage_layers",
             "last_stage_layers",
             "account_for_embedding",
             "account_for_loss",
             "data",
             "zero",
             "overlap",
             "bucket_MB",
             "shard_group",
             "recompute",
             "recompute_layers",
             "micro_batch",
             "order"});
  parallel::nd s;
  s.tensor.degree = int_field(j, p, "tensor", 1, max_degree, 1);
  s.tensor.sequence = flag_field(j, p, "sequence_parallel", false);
  s.context.degree = int_field(j, p, "context", 1, max_degree, 1);
  s.expert.degree = int_field(j, p, "expert", 1, max_degree, 1);
  s.pipeline.degree = int_field(j, p, "pipeline", 1, max_degree, 1);
  s.pipeline.virtual_stages = int_field(j, p, "virtual_stages", 1, 1 << 16, 1);
  s.pipeline.kind = enum_field(j, p, "schedule",
                               s.pipeline.virtual_stages > 1 ? parallel::schedule::interleaved
                                                             : parallel::schedule::one_f_one_b,
                               {{"gpipe", parallel::schedule::gpipe},
                                {"1f1b", parallel::schedule::one_f_one_b},
                                {"interleaved", parallel::schedule::interleaved}});
  s.pipeline.first_stage_layers = int_field(j, p, "first_stage_layers", 0, 1 << 20, 0);
  s.pipeline.last_stage_layers = int_field(j, p, "last_stage_layers", 0, 1 << 20, 0);
  s.pipeline.account_for_embedding = flag_field(j, p, "account_for_embedding", false);
  s.pipeline.account_for_loss = flag_field(j, p, "account_for_loss", false);
  s.data.degree = int_field(j, p, "data", 1, max_degree, 1);
  s.data.zero = int_field(j, p, "zero", 0, 3, 0);
  s.data.overlap = num_field(j, p, "overlap", 0.0, 1.0, 1.0);
  s.data.bucket = num_field(j, p, "bucket_MB", 1e-3, 1e6, 100.0) * 1e6;
  s.data.shard_group = int_field(j, p, "shard_group", 0, max_degree, 0);
  s.recomputation = enum_field(j, p, "recompute", parallel::recompute::none,
                               {{"none", parallel::recompute::none},
                                {"selective", parallel::recompute::selective},
                                {"full", parallel::recompute::full},
                                {"op", parallel::recompute::per_op}});
  s.recompute_layers = int_field(j, p, "recompute_layers", 0, 1 << 20, 0);
  s.micro_batch = int_field(j, p, "micro_batch", 1, 1 << 20, 1);
  if (j.contains("order")) {
    const json& o = j["order"];
    if (!o.is_array() || o.size() != 5)
      fail(p + ".order", "must list the five axes, innermost first");
    for (std::size_t i = 0; i < 5; ++i) {
      const json wrapped{{"axis", o[i]}};
      s.order[i] = enum_field(wrapped, p + ".order[" + std::to_string(i) + "]", "axis",
                              parallel::axis::tensor,
                              {{"tensor", parallel::axis::tensor},
                               {"context", parallel::axis::context},
                               {"expert", parallel::axis::expert},
                               {"pipeline", parallel::axis::pipeline},
                               {"data", parallel::axis::data}});
    }
  }
  return s;
}

/// `training.lora`: LoRA adapters over frozen weights.
inline lora_adapters parse_lora(const json& l) {
  lora_adapters lora;
  const std::string q = "training.lora";
  if (!l.is_object()) fail(q, "must be an object");
  only_keys(l, q,
            {"rank", "targets", "base", "double_quant", "embeddings", "adapters", "dropout",
             "keeps_inputs"});
  lora.rank = int_field(l, q, "rank", 1, 1 << 16, 0, true);
  lora.targets = enum_field(l, q, "targets", lora_targets::all_linear,
                            {{"query_value", lora_targets::query_value},
                             {"attention", lora_targets::attention},
                             {"all_linear", lora_targets::all_linear}});
  lora.base = enum_field(l, q, "base", base_storage::automatic,
                         {{"fp32", base_storage::fp32},
                          {"bf16", base_storage::bf16},
                          {"fp16", base_storage::fp16},
                          {"int8", base_storage::int8},
                          {"nf4", base_storage::nf4}});
  lora.double_quant = flag_field(l, q, "double_quant", false);
  if (lora.double_quant && lora.base != base_storage::nf4)
    fail(q + ".double_quant", "quantizes nf4's block maxima: give \"base\": \"nf4\"");
  lora.embeddings = enum_field(
      l, q, "embeddings", base_storage::automatic,
      {{"fp32", base_storage::fp32}, {"bf16", base_storage::bf16}, {"fp16", base_storage::fp16}});
  lora.adapters = enum_field(l, q, "adapters", adapter_storage::automatic,
                             {{"fp32", adapter_storage::fp32}, {"bf16", adapter_storage::bf16}});
  lora.dropout = num_field(l, q, "dropout", 0.0, 0.99, 0.0);
  lora.keeps_inputs = flag_field(l, q, "keeps_inputs", false);
  if (lora.keeps_inputs && !lora.quantized())
    fail(q + ".keeps_inputs", "describes bitsandbytes' quantized layers: give an int8 or nf4 base");
  return lora;
}

inline training parse_transformer_training(const json& j) {
  const std::string p = "training";
  only_keys(j, p,
            {"batch",
             "global_batch",
             "sequence",
             "precision",
             "optimizer",
             "gradients",
             "flash_attention",
             "reserved_GiB",
             "framework",
             "engine",
             "offload_optimizer",
             "offload_parameters",
             "tp_comm_overlap",
             "tp_async_backward",
             "overlap_p2p",
             "lora",
             "runtime",
             "tf32",
             "model_dtype",
             "loss",
             "partition_activations",
             "checkpoint_in_cpu"});
  training t;
  // "batch" as every scenario says it; "global_batch" is the older spelling
  if (j.contains("batch") && j.contains("global_batch"))
    fail(p, "give the batch once: \"batch\" (or the older spelling \"global_batch\")");
  t.batch =
      int_field(j, p, j.contains("global_batch") ? "global_batch" : "batch", 1, 1 << 30, 0, true);
  t.sequence = int_field(j, p, "sequence", 0, 1 << 26, 0);
  t.precision = enum_field(j, p, "precision", precision_mode::bf16_mixed,
                           {{"fp32", precision_mode::fp32},
                            {"fp16", precision_mode::fp16_mixed},
                            {"bf16", precision_mode::bf16_mixed},
                            {"fp8", precision_mode::fp8_mixed}});
  // Hugging Face's `optim` names for bitsandbytes' 8-bit and paged optimizers (TrainingArguments)
  const std::string opt = j.contains("optimizer") && j["optimizer"].is_string()
                              ? j["optimizer"].get<std::string>()
                              : std::string();
  t.paged_optimizer = opt.rfind("paged_", 0) == 0;
  t.optim = enum_field(j, p, "optimizer", optimizer::adam,
                       {{"sgd", optimizer::sgd},
                        {"momentum", optimizer::momentum},
                        {"adam", optimizer::adam},
                        {"adamw", optimizer::adam},
                        {"adam_8bit", optimizer::adam_8bit},
                        {"adamw_8bit", optimizer::adam_8bit},
                        {"paged_adamw", optimizer::adam},
                        {"paged_adamw_8bit", optimizer::adam_8bit}});
  t.gradients = enum_field(j, p, "gradients", dtype::fp32,
                           {{"fp32", dtype::fp32}, {"bf16", dtype::bf16}, {"fp16", dtype::fp16}});
  t.flash_attention = flag_field(j, p, "flash_attention", true);
  t.partition_activations = flag_field(j, p, "partition_activations", false);
  t.checkpoint_in_cpu = flag_field(j, p, "checkpoint_in_cpu", false);
  t.tf32 = flag_field(j, p, "tf32", true);
  t.reserved = num_field(j, p, "reserved_GiB", 0.0, 1e6, 0.0) * 1024.0 * 1024 * 1024;
  t.framework =
      enum_field<frameworks::recipe>(j, p, "framework", frameworks::megatron,
                                     {{"megatron", frameworks::megatron},
                                      {"megatron-2021", frameworks::megatron_2021},
                                      {"pytorch", frameworks::pytorch_eager},
                                      {"pytorch-modules", frameworks::pytorch_eager_modules},
                                      {"huggingface", frameworks::huggingface},
                                      {"deepspeed", frameworks::deepspeed},
                                      {"fsdp", frameworks::fsdp},
                                      {"torchtitan", frameworks::torchtitan},
                                      {"litgpt", frameworks::litgpt},
                                      {"torchtune", frameworks::torchtune}});
  // another data-parallel engine under the framework's model code (e.g. huggingface + deepspeed)
  t.framework =
      frameworks::with_engine(t.framework, enum_field(j, p, "engine", t.framework.data,
                                                      {{"megatron", frameworks::sharding{}},
                                                       {"deepspeed", frameworks::deepspeed_zero},
                                                       {"fsdp", frameworks::fsdp_units}}));
  const std::initializer_list<std::pair<const char*, frameworks::offload_device>> devices{
      {"none", frameworks::offload_device::none},
      {"cpu", frameworks::offload_device::cpu},
      {"nvme", frameworks::offload_device::nvme}};
  t.framework.data.offload_optimizer =
      enum_field(j, p, "offload_optimizer", t.framework.data.offload_optimizer, devices);
  t.framework.data.offload_parameters =
      enum_field(j, p, "offload_parameters", t.framework.data.offload_parameters, devices);
  t.framework.tp_comm_overlap = flag_field(j, p, "tp_comm_overlap", t.framework.tp_comm_overlap);
  t.framework.tp_async_backward =
      flag_field(j, p, "tp_async_backward", t.framework.tp_async_backward);
  t.framework.overlap_p2p = flag_field(j, p, "overlap_p2p", t.framework.overlap_p2p);
  // the type the model is loaded in (`torch_dtype`): bf16 trains it in bf16 throughout, with no
  // autocast and no fp32 masters (`recipe::pure_16bit`); fp32 keeps the recipe's own storage
  if (enum_field(j, p, "model_dtype", false, {{"fp32", false}, {"bf16", true}})) {
    t.framework.pure_16bit = true;
    t.framework.autocast = false;
  }
  // the loss as the run's configuration names it (torchtune's `loss:` component): one
  // cross-entropy over the whole fp32 logits (`torch.nn.CrossEntropyLoss` on `.float()`
  // logits), or chunk by chunk (`CEWithChunkedOutputLoss`, LitGPT's `chunked_cross_entropy`)
  t.framework.loss = enum_field(j, p, "loss", t.framework.loss,
                                {{"cross_entropy", frameworks::loss_style::eager},
                                 {"chunked", frameworks::loss_style::chunked}});
  if (j.contains("lora")) t.lora = parse_lora(j["lora"]);  // adapters over frozen weights
  if (j.contains("runtime")) {  // the headroom beside the tensors (`runtime_memory`)
    const std::string q = p + ".runtime";
    const json& r = j["runtime"];
    if (!r.is_object()) fail(q, "must be an object");
    only_keys(r, q, {"context_GiB", "communicator_GiB", "pair_communicator_GiB", "fragmentation"});
    constexpr double gib = 1024.0 * 1024 * 1024;
    t.runtime.context = num_field(r, q, "context_GiB", 0.0, 1e3, t.runtime.context / gib) * gib;
    t.runtime.communicator =
        num_field(r, q, "communicator_GiB", 0.0, 1e3, t.runtime.communicator / gib) * gib;
    t.runtime.pair_communicator =
        num_field(r, q, "pair_communicator_GiB", 0.0, 1e3, t.runtime.pair_communicator / gib) * gib;
    t.runtime.fragmentation = num_field(r, q, "fragmentation", 0.0, 10.0, t.runtime.fragmentation);
  }
  return t;
}

/// A model given by its dimensions: the family's defaults it took for `tied` and `dropout`, which
/// change the parameters and the saved tensors (a Llama-style model typed with GPT-2's defaults
/// gains a tied head and dropout masks).
inline std::vector<std::string> model_defaults(const json& j) {
  std::vector<std::string> out;
  if (!j.is_object() || j.contains("hf_config") || j.contains("hf_id")) return out;
  const bool llama = j.contains("family") && j["family"] == "llama";
  const char* family = llama ? "\"family\": \"llama\"" : "GPT-2's, no \"family\" given";
  for (const char* key : {"tied", "dropout"})
    if (!j.contains(key))
      out.push_back(std::string("model.") + key + ": " + (llama ? "false" : "true") + " (" +
                    family + (llama ? ")" : "; Llama, Qwen and Mistral: \"family\": \"llama\")"));
  return out;
}

/// The training fields `j` left out whose defaults change the answer, each as "field: value
/// (what it means)", for the report's "defaults".
inline std::vector<std::string> training_defaults(const json& j, const training& t,
                                                  const transformer& m) {
  std::vector<std::string> out;
  const auto absent = [&](const json& o, const char* key) { return !o.contains(key); };
  if (absent(j, "framework"))
    out.emplace_back("training.framework: megatron (Megatron-LM's fused kernels and storage)");
  if (absent(j, "precision"))
    out.emplace_back(std::string("training.precision: bf16 (") +
                     (t.pure_16bit()       ? "bf16 parameters, gradients and states)"
                      : t.master_weights() ? "bf16 compute, fp32 master weights)"
                                           : "bf16 compute, autocast over fp32 parameters)"));
  if (absent(j, "optimizer")) out.emplace_back("training.optimizer: adam (two fp32 moments)");
  if (absent(j, "sequence"))
    out.emplace_back("training.sequence: " + std::to_string(m.sequence) +
                     " (the model's own length)");
  if (absent(j, "runtime"))
    out.emplace_back(
        "training.runtime: 0.5 GiB CUDA context, NCCL buffers per communicator, 6.1 % allocator "
        "slack (added to the peak as \"required\")");
  if (!t.lora.on()) return out;
  const json& l = j["lora"];
  if (absent(l, "targets"))
    out.emplace_back(
        "training.lora.targets: all_linear (every linear layer of the blocks; PEFT's own default "
        "is query_value)");
  if (absent(l, "base"))
    out.emplace_back(std::string("training.lora.base: ") +
                     (t.weight_bytes() == 4 ? "fp32" : "bf16") +
                     " (the frozen weights stored as the recipe stores parameters)");
  if (t.lora.quantized() && absent(l, "keeps_inputs"))
    out.emplace_back(
        "training.lora.keeps_inputs: false (bitsandbytes 0.43.2 and later keep only the packed "
        "weight; before, each quantized layer's input too)");
  if (t.lora.quantized() && absent(l, "embeddings"))
    out.emplace_back(
        t.framework.autocast
            ? "training.lora.embeddings: fp32 (prepare_model_for_kbit_training upcasts the "
              "embedding, head and norms)"
            : "training.lora.embeddings: bf16 (the embedding, head and norms as loaded)");
  return out;
}

/// Refuses a value listed twice in a search list (a repeat would sweep its plans again): the
/// error names the later entry.
template <class T, class Name>
void listed_once(const std::vector<T>& values, const std::string& path, Name&& name) {
  std::vector<std::pair<T, std::size_t>> sorted;
  sorted.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) sorted.emplace_back(values[i], i);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first)
      fail(path + "[" + std::to_string(sorted[i].second) + "]",
           name(sorted[i].first) + " is listed twice");
}

inline search::transformer_space parse_space(const json& j) {
  search::transformer_space sp;
  const std::string p = "search";
  if (j.is_boolean()) {
    if (!j.get<bool>())
      fail(p, "must be true or an object of candidate lists (for one plan, give \"parallel\")");
    sp.listed = 0;  // the default lists only
    return sp;
  }
  only_keys(j, p,
            {"tensor", "pipeline", "micro_batch", "virtual_stages", "zero", "recompute",
             "sequence_parallel", "expert", "context", "keep"});
  auto ints = [&](const char* key, std::vector<int>& out, long long lo, long long hi) {
    if (!j.contains(key)) return;
    const json& a = j[key];
    const std::string path = p + "." + key;
    if (!a.is_array() || a.empty()) fail(path, "must be a non-empty array of integers");
    out.clear();
    for (std::size_t i = 0; i < a.size(); ++i)
      out.push_back(get_int(a[i], path + "[" + std::to_string(i) + "]", lo, hi));
    listed_once(out, path, [](int v) { return std::to_string(v); });
  };
  ints("tensor", sp.tensor, 1, max_degree);
  ints("pipeline", sp.pipeline, 1, max_degree);
  ints("micro_batch", sp.micro_batch, 1, 1 << 20);
  ints("virtual_stages", sp.virtual_stages, 1, 1 << 16);
  ints("zero", sp.zero, 0, 3);
  ints("expert", sp.expert, 1, max_degree);
  ints("context", sp.context, 1, max_degree);
  if (j.contains("recompute")) {
    const json& a = j["recompute"];
    if (!a.is_array() || a.empty()) fail(p + ".recompute", "must be a non-empty array");
    sp.recompute.clear();
    for (std::size_t i = 0; i < a.size(); ++i)
      sp.recompute.push_back(enum_field(json{{"r", a[i]}},
                                        p + ".recompute[" + std::to_string(i) + "]", "r",
                                        parallel::recompute::none,
                                        {{"none", parallel::recompute::none},
                                         {"selective", parallel::recompute::selective},
                                         {"full", parallel::recompute::full},
                                         {"op", parallel::recompute::per_op}}));
    listed_once(sp.recompute, p + ".recompute", [](parallel::recompute r) {
      return '"' + std::string(parallel::to_string(r)) + '"';
    });
  }
  if (j.contains("sequence_parallel")) {
    const bool b = flag_field(j, p, "sequence_parallel", false);
    sp.sequence_parallel = b ? std::vector<bool>{false, true} : std::vector<bool>{false};
  }
  sp.keep = static_cast<std::size_t>(int_field(j, p, "keep", 1, 10000, 10));
  // the lists given, whose values no plan uses are reported
  using u = search::space_usage;
  sp.listed = 0;
  const std::pair<const char*, u::axis> axes[] = {{"tensor", u::tensor},
                                                  {"pipeline", u::pipeline},
                                                  {"micro_batch", u::micro_batch},
                                                  {"virtual_stages", u::virtual_stages},
                                                  {"expert", u::expert},
                                                  {"context", u::context},
                                                  {"zero", u::zero}};
  for (const auto& [key, a] : axes)
    if (j.contains(key)) sp.listed |= 1U << a;
  return sp;
}

}  // namespace detail

/// Whether `j` is a transformer's scenario (its "model" is a transformer, or it has the older
/// "transformer" key).
inline bool is_transformer_scenario(const nlohmann::json& j) {
  return detail::transformer_key(j) != nullptr;
}

/// Parses a transformer scenario. `h100_profile` is the text of the shipped H100 profile (the
/// CLI embeds it) for `"profile": "h100"`.
inline transformer_scenario parse_transformer_scenario(const nlohmann::json& j,
                                                       std::string_view h100_profile = {}) {
  namespace d = detail;
  d::only_keys(j, "scenario",
               {"model", "transformer", "cluster", "parallel", "training", "profile", "search"});
  transformer_scenario s;
  const char* key = d::transformer_key(j);
  if (!key) d::fail("model", "must name a transformer (a zoo name or its dimensions)");
  // the training sequence, for a Hugging Face model's sliding window (checked again below)
  int sequence = 0;
  if (j.contains("training") && j["training"].is_object() && j["training"].contains("sequence") &&
      j["training"]["sequence"].is_number_integer())
    sequence =
        static_cast<int>(std::clamp(j["training"]["sequence"].get<long long>(), 0LL, 1LL << 26));
  s.net = d::parse_transformer(d::require(j, "scenario", key), s.name, key, sequence);
  s.net.name = s.name;
  s.machine = d::parse_cluster(d::require(j, "scenario", "cluster"));
  s.setup = d::parse_transformer_training(d::require(j, "scenario", "training"));
  s.defaults = d::model_defaults(j[key]);
  if (s.setup.framework.separate_head && s.net.tied) {
    s.net.tied = false;
    std::erase_if(s.defaults, [](const std::string& x) { return x.rfind("model.tied:", 0) == 0; });
    s.defaults.emplace_back("model.tied: false (" + std::string(s.setup.framework.name) +
                            " copies the tied embedding into a separate head)");
  }
  // what the framework makes of soft-capped attention, when it is not what the model says
  if (s.net.attention_softcap > 0 && s.setup.framework.capped_run(s.setup.flash_attention) ==
                                         frameworks::capped_attention::dropped)
    s.defaults.emplace_back("model.attention_softcap: dropped (" +
                            std::string(s.setup.framework.name) +
                            "'s default SDPA attention ignores the cap and runs fused)");
  for (std::string& x : d::training_defaults(j["training"], s.setup, s.net))
    s.defaults.push_back(std::move(x));
  s.search = j.contains("search");
  if (s.search) {
    s.space = d::parse_space(j["search"]);
    if (j.contains("parallel")) d::fail("parallel", "give either \"parallel\" or \"search\"");
  } else {
    const nlohmann::json& pj = j.contains("parallel") ? j["parallel"] : nlohmann::json::object();
    s.strategy = d::parse_nd(pj);
    // the engine's own default stage (FSDP: FULL_SHARD) when the plan names none
    const int stage = s.setup.framework.data.default_stage;
    if (stage != 0 && s.strategy.data.degree > 1 && !(pj.is_object() && pj.contains("zero"))) {
      s.strategy.data.zero = stage;
      const frameworks::data_engine e = s.setup.framework.data.engine;
      s.defaults.emplace_back(
          "parallel.zero: " + std::to_string(stage) + " (" +
          (e == frameworks::data_engine::fsdp        ? "FSDP's default sharding, FULL_SHARD"
           : e == frameworks::data_engine::deepspeed ? "DeepSpeed's default stage"
                                                     : "Megatron's default stage") +
          ")");
    }
  }
  // profile (io/profile_choice.hpp): "auto" by default
  chosen_profile p = choose_profile(j.contains("profile") ? j["profile"] : nlohmann::json(),
                                    s.machine.dev, h100_profile);
  s.profile = p.profile;
  s.profile_name = std::move(p.name);
  s.efficiencies = std::move(p.efficiencies);
  if (!s.search) s.strategy.check(s.net, s.setup, s.machine.devices());
  return s;
}

namespace detail {
inline nlohmann::json nd_json(const parallel::nd& s) {
  nlohmann::json j{{"tensor", s.tensor.degree},
                   {"sequence_parallel", s.tensor.sequence},
                   {"context", s.context.degree},
                   {"expert", s.expert.degree},
                   {"pipeline", s.pipeline.degree},
                   {"virtual_stages", s.pipeline.virtual_stages},
                   {"schedule", to_string(s.pipeline.kind)},
                   {"data", s.data.degree},
                   {"zero", s.data.zero},
                   {"shard_group", s.data.shards()},
                   {"recompute", to_string(s.recomputation)},
                   {"micro_batch", s.micro_batch}};
  if (s.recompute_layers > 0) j["recompute_layers"] = s.recompute_layers;
  return j;
}
inline nlohmann::json time_json(const time_breakdown& t) {
  return {
      {"iteration_s", t.total().count()},         {"forward_s", t.forward.count()},
      {"backward_s", t.backward.count()},         {"recompute_s", t.recompute.count()},
      {"tensor_comm_s", t.tensor_comm.count()},   {"context_comm_s", t.context_comm.count()},
      {"expert_comm_s", t.expert_comm.count()},   {"pipeline_bubble_s", t.pipeline_bubble.count()},
      {"pipeline_p2p_s", t.pipeline_p2p.count()}, {"data_comm_s", t.data_comm.count()},
      {"optimizer_s", t.optimizer.count()},       {"host_s", t.host.count()}};
}
}  // namespace detail

/// The report of a scenario's one plan as JSON.
inline nlohmann::json transformer_report_json(const transformer_scenario& s) {
  nlohmann::json j{{"model", s.name},
                   {"parameters", s.net.parameters()},
                   {"cluster", std::string(s.machine.name)},
                   {"devices", s.machine.devices()},
                   {"profile", s.profile_name},
                   {"efficiencies", s.efficiencies}};
  if (!s.defaults.empty()) j["defaults"] = s.defaults;
  if (s.search)  // a search reports its ranked plans (`io::search_report_json`)
    throw plan_error("search: a search's report lists its ranked plans, not one plan's");
  const auto r = analytic::evaluate(s.net, s.strategy, s.machine, s.setup, s.profile);
  const auto& m = r.memory;
  j["parallel"] = detail::nd_json(s.strategy);
  j["framework"] = std::string(s.setup.framework.name);
  j["micro_batches"] = r.micro_batches;
  j["time"] = detail::time_json(r.time);
  j["iteration_time_s"] = r.iteration_time().count();
  j["tokens_per_s"] = r.tokens_per_second();
  j["tflops_per_device"] = r.flops_per_device() / 1e12;
  j["mfu"] = r.mfu();
  j["hfu"] = r.hfu();
  j["memory_GiB"] = {{"stage", m.stage},
                     {"weights", to_gib(m.weights)},
                     {"gradients", to_gib(m.gradients)},
                     {"optimizer_states", to_gib(m.optimizer_states)},
                     {"activations", to_gib(m.activations)},
                     {"embedding_activations", to_gib(m.embedding_activations)},
                     {"buffers", to_gib(m.buffers)},
                     {"other", to_gib(m.other)},
                     {"weight_casts", to_gib(m.weight_casts)},
                     {"logits", to_gib(m.logits)},
                     {"batch", to_gib(m.batch)},
                     {"workspace", to_gib(m.workspace)},
                     {"moment", to_string(m.moment)},
                     {"between_steps", to_gib(m.between_steps)},
                     {"paged_optimizer_states", to_gib(m.paged)},
                     {"peak", to_gib(m.total())},
                     {"context", to_gib(r.headroom.context)},
                     {"communicators", to_gib(r.headroom.communicators)},
                     {"fragmentation", to_gib(r.headroom.fragmentation)},
                     {"required", to_gib(r.required())},
                     {"capacity", to_gib(r.capacity)},
                     {"margin", to_gib(r.margin())}};
  if (m.first_step.count() > 0) j["memory_GiB"]["first_step"] = to_gib(m.first_step);
  j["fits"] = r.fits();
  j["verdict"] = to_string(r.verdict());
  j["validation"] =
      detail::band_json(s.setup.framework.name, s.machine.devices() > 1, s.setup.lora.on());
  return j;
}

}  // namespace strata::io
