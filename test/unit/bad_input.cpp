// Issue 13 at the library level: each defect's input is refused with a plan_error that names
// the field (the CLI cases and the catalogue in test/cli check the command line).
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include <strata/calibrate/kernel_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/calibrate/step_fit.hpp>
#include <strata/io/profile.hpp>
#include <strata/io/scenario.hpp>
#include <strata/io/simulation.hpp>
#include <strata/strata.hpp>

using namespace strata;
using Catch::Contains;

TEST_CASE("bad input: a directory is not a file") {
  CHECK_THROWS_WITH(io::detail::read_file(STRATA_TEST_DATA_DIR, "scenario"),
                    Contains("scenario: '") && Contains("is a directory"));
  CHECK_THROWS_WITH(io::detail::read_file("/nonexistent/x.json", "--gemm"),
                    Contains("--gemm: cannot open '/nonexistent/x.json'"));
}

TEST_CASE("bad input: deep JSON is refused before parsing, long names are cut") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(io::detail::parse_json(deep), Contains("nested deeper than 256 levels"));
  CHECK_NOTHROW(io::detail::parse_json("[[[\"[[[[\"]]]"));  // brackets in strings do not count
  CHECK_THROWS_WITH(io::detail::parse_json("[1e309]"), Contains("number overflow parsing '1e309'"));
  const std::string name(1 << 20, 'x');
  try {
    (void)io::parse_scenario_text("{\"model\": \"" + name + "\"}");
    FAIL("no error");
  } catch (const plan_error& e) {
    CHECK(std::string(e.what()).size() < 400);
  }
}

TEST_CASE("bad input: a cluster's device count is checked in 64 bits") {
  CHECK_THROWS_WITH(make_cluster("wraps", presets::v100_sxm2_16gb,
                                 {level{"node", 65536, {seconds{0}, byte_rate{1e9}}},
                                  level{"pod", 65537, {seconds{0}, byte_rate{1e9}}}}),
                    Contains("at most 2^24 devices"));
  const cluster ok = make_cluster("ok", presets::v100_sxm2_16gb,
                                  {level{"node", 4096, {seconds{0}, byte_rate{1e9}}},
                                   level{"pod", 4096, {seconds{0}, byte_rate{1e9}}}});
  CHECK(ok.devices() == 1 << 24);
}

TEST_CASE("bad input: Yan's C1 and C3 do not overflow") {
  const auto net = yan::fold(zoo::mnist_adam().view());
  const yan::system s{1, 65536, 65537, 70, 40};
  CHECK_THROWS_WITH(yan::evaluate(net, s, yan::uniform(net, s, 1), yan::e5_2450(), 1000, 20),
                    Contains("C1 violated"));
  const yan::system t{1, 1, 4, 70, 40};
  std::vector<yan::layer_split> split(net.size(), {65536, 1, 65537});
  CHECK_THROWS_WITH(yan::check(net, t, split, yan::e5_2450(), 1 << 24), Contains("violated"));
}

TEST_CASE("bad input: a parameter-server search has a size bound and a stop") {
  const auto net = yan::fold(zoo::imagenet22k_adam().view());
  CHECK_THROWS_WITH(search::optimize_yan(net, yan::e5_2450(), {.machines = 5000}, 1e6),
                    Contains("at most 1024 machines"));
  search::yan_space space{.machines = 40};
  int calls = 0;
  space.progress = [&calls](double) { return ++calls < 3; };
  CHECK_THROWS_WITH(search::optimize_yan(net, yan::e5_2450(), space, 1e6),
                    Contains("stopped at its time limit"));
}

TEST_CASE("bad input: the event core refuses a NaN gamma; the critical path ends") {
  sim::simulator s;
  CHECK_THROWS(s.set_overlap_factor(std::numeric_limits<double>::quiet_NaN()));
  CHECK_THROWS(s.set_overlap_factor(-1));
  // zero-length tasks on one stream (empty gradient buckets) used to make the walk loop
  const int gpu = s.add_resource({"gpu", sim::discipline::fifo});
  const int a = s.add_task({.name = "a", .resources = {gpu}, .work = 1e-3});
  int prev = a;
  for (int k = 0; k < 5; ++k)
    prev = s.add_task({.name = "empty", .resources = {gpu}, .work = 0, .deps = {prev}});
  s.add_task({.name = "b", .resources = {gpu}, .work = 0});
  const auto r = s.run();
  const auto path = io::critical_path(s, r);
  CHECK(!path.empty());
  CHECK(path.size() <= s.tasks().size());
}

TEST_CASE("bad input: readers name the line, row and column") {
  std::istringstream neg("  1024  256  float  sum  -1  5.0  0.2  -0.2  0  5.0  0.2  0.2  0\n");
  CHECK_THROWS_WITH(calibrate::read_nccl_tests(neg),
                    Contains("line 1 column busbw: must not be negative"));
  std::istringstream huge("  1e300  256  float  sum  -1  5.0  0.2  0.2  0  5.0  0.2  0.2  0\n");
  CHECK_THROWS_WITH(calibrate::read_nccl_tests(huge), Contains("column size"));
  std::istringstream steps(
      "model,layers,hidden,heads,sequence,batch,precision,checkpoint,step_ms,peak_bytes,"
      "between_bytes,oom\ngpt2,1e20,768,12,512,1,bf16,0,25,2e9,1e9,0\n");
  CHECK_THROWS_WITH(calibrate::read_steps(steps),
                    Contains("row 2 column layers: must be a whole number in [1, 1024]"));
}

TEST_CASE("bad input: calibration tables are checked and labelled") {
  auto fit = [](const std::string& gemm, const std::string& membound, const std::string& att) {
    std::istringstream g(gemm), m(membound), a(att);
    return calibrate::fit_profile(presets::h100_sxm5_80gb, 132, g, m, a, nullptr,
                                  {"--gemm", "--membound", "--attention", "--attention-fp32"});
  };
  const std::string gemm =
      "dtype,M,N,K,ms\nbfloat16,1024,1024,1024,0.02\nbfloat16,2048,2048,2048,0.1\n"
      "bfloat16,4096,4096,4096,0.6\nbfloat16,512,512,512,0.01\n";
  const std::string membound = "op,bytes,ms\nd2d_copy,1048576,0.02\nd2d_copy,1073741824,0.4\n";
  const std::string att =
      "b,heads,s,d,fwd_ms,fwdbwd_ms\n8,12,1024,64,0.08,0.33\n4,16,2048,64,0.13,0.51\n";
  CHECK_NOTHROW(fit(gemm, membound, att));
  CHECK_THROWS_WITH(fit("M,N,K,ms\n1,2,3,4\n", membound, att),
                    Contains("--gemm: CSV header: no column 'dtype'"));
  CHECK_THROWS_WITH(fit("", membound, att), Contains("--gemm: CSV input is empty"));
  CHECK_THROWS_WITH(fit(gemm + "bfloat16,1e308,1e308,1e308,1\n", membound, att),
                    Contains("--gemm: CSV row 6 column M: must lie in [1, 1e+07]"));
  CHECK_THROWS_WITH(fit(gemm, "op,bytes,ms\nd2d_copy,0,0.02\nd2d_copy,1024,-1\n", att),
                    Contains("--membound: CSV row 2 column bytes"));
  CHECK_THROWS_WITH(fit(gemm, membound, "b,heads,s,d,fwd_ms,fwdbwd_ms\n8,12,1024,64,0,0.3\n"),
                    Contains("--attention: CSV row 2 column fwd_ms"));
}

TEST_CASE("bad input: a profile's rates must be usable") {
  nlohmann::json j = io::to_json(datasheet_profile(presets::h100_sxm5_80gb, 132));
  j["device"]["name"] = "H100";
  CHECK_NOTHROW(io::profile_from_json(j));
  for (double bad : {0.0, 1e-300, -1.0}) {
    nlohmann::json k = j;
    k["device"]["fp32"] = bad;
    CHECK_THROWS_WITH(io::profile_from_json(k), Contains("profile.device.fp32"));
  }
  nlohmann::json k = j;
  k["device"] = 5;
  CHECK_THROWS_WITH(io::profile_from_json(k), Contains("profile.device: must be a JSON object"));
}
