#include <catch2/catch.hpp>
#include <strata/io/scenario.hpp>
#include <strata/strata.hpp>

namespace unit_scenario {

using namespace strata;

TEST_CASE("a ResNet-50 data-parallel scenario runs") {
  const io::scenario s = io::parse_scenario_text(R"({
  "model": "resnet50",
  "cluster": {"preset": "abci", "devices": 64},
  "parallel": {"kind": "data", "p": 64},
  "training": {"batch": 1024, "dataset": 1281167, "precision": "fp32", "optimizer": "sgd",
               "efficiency": 0.5}})");
  const report r = io::evaluate(s);
  CHECK(r.devices == 64);
  CHECK(r.fits());
  const auto j = io::to_json(s, r);
  CHECK(j["iteration_time_s"].get<double>() == Approx(r.iteration_time().count()));
  CHECK(j["memory_bytes"]["peak"].get<double>() == r.memory.total().count());
  CHECK(j.contains("epoch_time_s"));
}

TEST_CASE("a scenario equals the same plan built in C++") {
  const io::scenario s = io::parse_scenario_text(R"({"model": "vgg16",
    "cluster": {"preset": "abci", "devices": 32},
    "strategy": {"kind": "data+filter", "p1": 8, "p2": 4},
    "training": {"batch": 256, "dataset": 1281167}})");
  const auto net = zoo::vgg16();
  const report direct = analytic::evaluate(net.view(), parallel::data_filter{.p1 = 8, .p2 = 4},
                                           presets::abci(32), {.batch = 256, .dataset = 1281167});
  CHECK(io::evaluate(s).epoch_time() == direct.epoch_time());
}

TEST_CASE("custom layers and clusters") {
  const io::scenario s = io::parse_scenario_text(R"({
    "model": {"name": "mlp", "input": {"c": 784},
              "layers": [{"type": "linear", "features": 128}, {"type": "relu"},
                         {"type": "linear", "features": 10}]},
    "cluster": {"device": "v100-16gb",
                "levels": [{"fanout": 4, "alpha_us": 1, "bandwidth_GBps": 1}]},
    "strategy": {"kind": "data", "p": 2},
    "training": {"batch": 8}})");
  REQUIRE(s.layers.size() == 3);
  // same as test/unit/paradl.cpp's eq. (7) case: 855,952 B
  CHECK(io::evaluate(s).memory.total().count() == 855'952.0);
}

TEST_CASE("bad scenarios name the field") {
  auto err = [](const char* text) {
    try {
      (void)io::evaluate(io::parse_scenario_text(text));
    } catch (const plan_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const char* good_tail = R"("cluster": "hc2", "training": {"batch": 64}})";
  CHECK_THAT(err("{"), Catch::StartsWith("malformed JSON"));
  CHECK_THAT(err(R"({"model": "resnet50", "strategy": {"kind": "data", "p": 1.5}, )"
                 "\"cluster\": \"hc2\", \"training\": {\"batch\": 64}}"),
             Catch::Contains("strategy.p: must be an integer"));
  CHECK_THAT(err((std::string(R"({"model": "resnet50", "strategy": {"kind": "tensor", "p": 2}, )") +
                  good_tail)
                     .c_str()),
             Catch::Contains("strategy.kind: unknown strategy \"tensor\""));
  // the error names the key the strategy was given under
  CHECK_THAT(err((std::string(R"({"model": "resnet50", "parallel": {"kind": "tensor", "p": 2}, )") +
                  good_tail)
                     .c_str()),
             Catch::Contains("parallel.kind: unknown strategy \"tensor\""));
  CHECK_THAT(
      err(R"({"model": "resnet50", "strategy": {"kind": "data", "p": 2}, "cluster": "hc2"})"),
      Catch::Contains("scenario.training: missing"));
  CHECK_THAT(
      err(R"({"model": "resnet50", "strategy": {"kind": "data", "p": 2}, "cluster": "abci", "training": {"batch": 64}})"),
      Catch::Contains("needs a device count"));
  CHECK_THAT(
      err(R"({"model": "resnet50", "strategy": {"kind": "data", "p": 2}, "cluster": "hc2", "training": {"batch": 64, "precision": "fp64"}})"),
      Catch::Contains("training.precision: unknown precision"));
  CHECK_THAT(
      err(R"({"model": "resnet50", "strategy": {"kind": "data", "p": 2}, "cluster": "hc2", "training": {"batch": 64}, "layer_times": [[1, 2, 3]]})"),
      Catch::Contains("layer_times: has 1 entries but the model has 174 layers"));
  CHECK_THAT(
      err(R"({"model": {"input": {"c": 3, "h": 4, "w": 4}, "layers": [{"type": "conv", "filters": 2, "kernel": 9, "padding": 0}]}, "strategy": {"kind": "serial"}, "cluster": "hc2", "training": {"batch": 1}})"),
      Catch::Contains("model.layers[0]: a convolution kernel is larger"));
}

}  // namespace unit_scenario
