// The one-line question (io/one_line.hpp): the flags build the scenario a file would hold.
#include <catch2/catch.hpp>
#include <strata/io/one_line.hpp>
#include "front_door.hpp"

namespace unit_one_line {

using strata::io::one_line;
using strata::io::scenario_from_flags;
using json = nlohmann::json;

TEST_CASE("one-line flags build the scenario a file would hold") {
  // 8 H100s fill one DGX H100 node; --tp 2 leaves 8 / 2 = 4 data-parallel replicas, said in a note
  one_line f{.model = "llama3-8b",
             .gpus = "8xh100",
             .batch = 64,
             .sequence = 4096,
             .tensor = 2,
             .zero = 1};
  auto q = scenario_from_flags(f);
  CHECK(q.scenario == json::parse(R"({"model": "llama3-8b",
      "cluster": {"preset": "dgx-h100", "devices": 8},
      "training": {"batch": 64, "sequence": 4096},
      "parallel": {"tensor": 2, "data": 4, "zero": 1}})"));
  REQUIRE(q.notes.size() == 1);
  CHECK(q.notes[0] == "--dp 4: the GPUs that tensor x pipeline (2) leave");
  // the file and the flags are one question: the same report
  const auto by_flags = strata_test::evaluate_scenario(q.scenario, {}, {});
  CHECK(by_flags.report["iteration_time_s"].get<double>() > 0);
  CHECK(by_flags.report["devices"] == 8);

  // a Hugging Face id, one GPU of a device without a node preset, LoRA
  q = scenario_from_flags(one_line{.model = "meta-llama/Llama-3.2-1B",
                                   .gpus = "1xrtx4090",
                                   .framework = "huggingface",
                                   .recompute = "full",
                                   .batch = 4,
                                   .lora = 16});
  CHECK(q.scenario["model"] == json{{"hf_id", "meta-llama/Llama-3.2-1B"}});
  CHECK(q.scenario["cluster"]["device"] == "rtx4090");
  CHECK(q.scenario["cluster"]["levels"][0]["fanout"] == 1);
  CHECK(q.scenario["training"]["lora"]["rank"] == 16);
  CHECK(q.scenario["parallel"] == json{{"recompute", "full"}});
  CHECK(q.notes.empty());

  // several GPUs and no parallel flag: a search; 4 RTX 4090s in the L40S server's PCIe nodes
  q = scenario_from_flags(one_line{.model = "llama3-8b", .gpus = "4xrtx4090", .batch = 8});
  CHECK(q.scenario["search"] == true);
  CHECK(q.scenario["cluster"] ==
        json{{"preset", "l40s-x8"}, {"devices", 4}, {"device", "rtx4090"}});
  CHECK(q.notes.size() == 2);

  // GPUs held below their rated power: the cluster says so, the report names it
  q = scenario_from_flags(
      one_line{.model = "gpt2-124m", .gpus = "8xh100", .batch = 64, .data = 8, .power_limit = 500});
  CHECK(q.scenario["cluster"] ==
        json{{"preset", "dgx-h100"}, {"devices", 8}, {"power_limit_W", 500}});
  CHECK(strata_test::evaluate_scenario(q.scenario, {}, {})
            .report["efficiencies"]
            .get<std::string>()
            .find("held at 500 W of its rated 700 W") != std::string::npos);
}

TEST_CASE("one-line flags: each mistake names the flag and the fix") {
  auto err = [](one_line f) {
    try {
      (void)scenario_from_flags(f);
    } catch (const strata::plan_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err({.gpus = "8xh100", .batch = 8}).rfind("--model: name the model", 0) == 0);
  CHECK(err({.model = "llama3-8b", .batch = 8}).rfind("--gpus: give a count and a device", 0) == 0);
  CHECK(err({.model = "llama3-8b", .gpus = "8xh100"}).rfind("--batch: give the global batch", 0) ==
        0);
  CHECK(err({.model = "llama3-8b", .gpus = "8", .batch = 8}).find("got \"8\"") !=
        std::string::npos);
  CHECK(err({.model = "llama3-8b", .gpus = "x8h100", .batch = 8}).find("got \"x8h100\"") !=
        std::string::npos);
  CHECK(err({.model = "llama3-8b", .gpus = "8xh1000", .batch = 8}) ==
        "--gpus: unknown device \"h1000\" (strata --list-gpus lists them; did you mean "
        "\"h100\"?)");
  CHECK(err({.model = "llama3-8b", .gpus = "8xh100", .batch = 8, .tensor = 2, .search = true})
            .rfind("--search: searches every plan", 0) == 0);
}

}  // namespace unit_one_line
