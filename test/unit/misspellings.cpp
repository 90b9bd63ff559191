// Issue 38: twenty misspellings and mistakes a user makes, each answered in one line that names
// the field and the fix (the closest valid spelling, or the numbers of the rule), and the common
// spellings of a number format or an optimizer understood rather than refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "front_door.hpp"

namespace unit_misspellings {

using nlohmann::json;

namespace {
// Llama-3 8B on one DGX A100 (8 GPUs), data-parallel
json base() {
  return {{"model", "llama3-8b"},
          {"cluster", {{"preset", "dgx-a100"}, {"devices", 8}}},
          {"parallel", {{"data", 8}}},
          {"training", {{"batch", 16}, {"sequence", 2048}}}};
}
std::string error_of(const json& j) {
  try {
    (void)strata_test::evaluate_scenario(j, {}, "");
  } catch (const strata::plan_error& e) {
    return e.what();
  }
  return "";
}
struct mistake {
  const char* what;
  json scenario;
  const char* answer;  ///< a part of the one-line error
};
}  // namespace

TEST_CASE("misspellings and mistakes are answered with the fix") {
  auto with = [](const char* a, const json& v, const char* b = nullptr) {
    json j = base();
    if (b == nullptr)
      j[a] = v;
    else
      j[a][b] = v;
    return j;
  };
  json renamed = base();
  renamed["parallel"].erase("data");
  renamed["parallel"]["data_parallel"] = 8;
  json top = base();
  top["parrallel"] = top["parallel"];
  top.erase("parallel");
  const std::vector<mistake> cases{
      {"a dash in a zoo name", with("model", "llama-3-8b"), "did you mean \"llama3-8b\""},
      {"a zoo name in capitals", with("model", "Llama3-8B"), "did you mean \"llama3-8b\""},
      {"a CNN's dash", with("model", "resnet-50"), "did you mean \"resnet50\""},
      {"a Hugging Face id as a zoo name", with("model", "meta-llama/Llama-3.1-8b"),
       "did you mean {\"hf_id\": \"meta-llama/Llama-3.1-8B\"}"},
      {"HF's field name", with("parallel", 2, "micro_batch_size"),
       "parallel.micro_batch_size: unknown field (did you mean \"micro_batch\"?)"},
      {"a longer field name", with("parallel", 2, "tensor_parallel"),
       "unknown field (did you mean \"tensor\"?)"},
      {"HF's batch name", with("training", 16, "global_batch_size"),
       "unknown field (did you mean \"global_batch\"?)"},
      {"a top-level typo", top, "scenario.parrallel: unknown field (did you mean \"parallel\"?)"},
      {"a renamed degree", renamed, "unknown field (did you mean \"data\"?)"},
      {"an optimizer spelled apart", with("training", "adam_w", "optimizer"),
       "did you mean \"adamw\""},
      {"a framework typo", with("training", "deepspeeed", "framework"),
       "did you mean \"deepspeed\""},
      {"a framework with an underscore", with("training", "hugging_face", "framework"),
       "did you mean \"huggingface\""},
      {"a recomputation typo", with("parallel", "ful", "recompute"), "did you mean \"full\""},
      {"a precision typo", with("training", "bf61", "precision"), "did you mean \"bf16\""},
      {"a preset typo", with("cluster", json{{"preset", "dgx-a10"}, {"devices", 8}}),
       "did you mean \"dgx-a100\""},
      {"degrees that do not make the cluster", with("parallel", 4, "data"),
       "(tensor 1 x pipeline 1 x data 4 x context 1 x expert 1 = 4; the cluster has 8)"},
      {"a micro-batch that does not split", with("parallel", json{{"data", 8}, {"micro_batch", 3}}),
       "(micro-batch 3, a replica's share 2 = batch 16 / 8 replicas)"},
      {"a batch that does not split", with("training", json{{"batch", 12}}),
       "(batch 12 over 8 replicas)"},
      {"a sequence as text", with("training", json{{"batch", 16}, {"sequence", "4k"}}),
       "training.sequence: must be"},
      {"a LoRA base typo",
       with("training", json{{"batch", 16}, {"lora", {{"rank", 8}, {"base", "nf-4"}}}}),
       "did you mean \"nf4\""}};
  REQUIRE(cases.size() == 20);
  for (const mistake& m : cases) {
    INFO(m.what);
    const std::string e = error_of(m.scenario);
    CHECK(e.find('\n') == std::string::npos);  // one line
    CHECK_THAT(e, Catch::Contains(m.answer));
  }
}

TEST_CASE("common spellings of a format or an optimizer are understood") {
  json j = base();
  j["training"]["precision"] = "bfloat16";
  j["training"]["optimizer"] = "AdamW";
  j["training"]["framework"] = "DeepSpeed";
  const auto as_given = strata_test::evaluate_scenario(j, {}, "").report;
  json k = base();
  k["training"]["precision"] = "bf16";
  k["training"]["optimizer"] = "adamw";
  k["training"]["framework"] = "deepspeed";
  const auto canonical = strata_test::evaluate_scenario(k, {}, "").report;
  CHECK(as_given["memory_GiB"]["peak"] == canonical["memory_GiB"]["peak"]);
  CHECK(as_given["iteration_time_s"] == canonical["iteration_time_s"]);
  j["training"]["precision"] = "torch.float16";
  CHECK(error_of(j).empty());
}

TEST_CASE("\"overlap_p2p\" reaches the recipe: an interleaved pipeline's sends block or not") {
  // Llama-3 8B on 8 A100s, p = 4, v = 2, d = 2, m = 16 / 2 = 8 micro-batches: blocking, a stage
  // waits for 2 (v m + p - 1) = 38 sends; overlapped (Megatron's default), for 2 (p v - 1) = 14
  json j = base();
  j["parallel"] = {{"pipeline", 4},
                   {"virtual_stages", 2},
                   {"data", 2},
                   {"schedule", "interleaved"},
                   {"micro_batch", 1}};
  const auto overlapped = strata_test::evaluate_scenario(j, {}, "").report;
  j["training"]["overlap_p2p"] = false;
  const auto blocking = strata_test::evaluate_scenario(j, {}, "").report;
  const double o = overlapped["time"]["pipeline_p2p_s"].get<double>(),
               b = blocking["time"]["pipeline_p2p_s"].get<double>();
  CHECK(b / o == Approx(38.0 / 14));
  j["training"]["overlap_p2p"] = "no";
  CHECK_THAT(error_of(j), Catch::Contains("overlap_p2p"));
}

}  // namespace unit_misspellings
