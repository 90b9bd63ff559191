// Issue 13 at the library level: each defect's input is refused with a plan_error that names
// the field (the CLI cases and the catalogue in test/cli check the command line).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include <strata/calibrate/kernel_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/calibrate/step_fit.hpp>
#include <strata/io/lin_trace.hpp>
#include <strata/io/profile.hpp>
#include <strata/io/proteus_tree.hpp>
#include <strata/io/scenario.hpp>
#include <strata/io/simulation.hpp>
#include <strata/io/transformer_request.hpp>
#include <strata/strata.hpp>

namespace unit_bad_input {

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
  // every task ends at 1 ms, where a ends: the walk starts at the first of them, a, which waited
  // for nothing, and stops there
  CHECK(r.makespan == 1e-3);
  CHECK(path == std::vector<int>{a});
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
  // rows of another data type are not left out unseen, and a table with no rows fits nothing
  CHECK_THROWS_WITH(
      fit(gemm + "bf16,64,64,64,0.01\n", membound, att),
      Contains("--gemm: CSV row 6 column dtype: must be bfloat16, float16, float32 (TF32 "
               "allowed) or float32-ieee (TF32 off) (got 'bf16')"));
  CHECK_THROWS_WITH(fit("dtype,M,N,K,ms\n", membound, att), Contains("--gemm: no rows to fit"));
  CHECK_THROWS_WITH(fit(gemm, "op,bytes,ms\n", att), Contains("--membound: no rows to fit"));
  CHECK_THROWS_WITH(fit(gemm, membound, "b,heads,s,d,fwd_ms,fwdbwd_ms\n"),
                    Contains("--attention: no rows to fit"));
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

TEST_CASE("bad input: settings a run would not use are refused, not ignored") {
  auto j = [](const char* text) { return nlohmann::json::parse(text); };
  // "search": false is not "no search"
  CHECK_THROWS_WITH(
      io::parse_transformer_scenario(j(R"({"model": "gpt2-124m", "cluster": {"preset": "dgx-h100",
        "devices": 8}, "training": {"batch": 64}, "search": false})")),
      Contains("search: must be true or an object of candidate lists"));
  // a fixed-size preset with another device count
  CHECK_THROWS_WITH(io::detail::parse_cluster(j(R"({"preset": "hc2", "devices": 8})")),
                    Contains("cluster.devices: preset \"hc2\" has 32 GPUs (got 8)"));
  CHECK(io::detail::parse_cluster(j(R"({"preset": "hc2", "devices": 32})")).devices() == 32);
  // a price without the tokens it would price
  CHECK_THROWS_WITH(io::parse_transformer_request(j(R"({"model": "gpt2-124m", "cluster":
        {"preset": "dgx-h100", "devices": 8}, "training": {"batch": 64},
        "cost": {"price_per_gpu_hour": 2}})")),
                    Contains("cost.price_per_gpu_hour: prices the GPU-hours of cost.tokens"));
  // a Lin trace op timed twice
  CHECK_THROWS_WITH(io::parse_lin_trace(R"({"ops": [{"id": "f", "rank": 0, "duration_us": 3,
                       "kernels_us": [1, 2]}]})"),
                    Contains("ops[0] ('f'): give one of duration_us, kernels_us or bytes"));
  // a strategy tree does not model offload (its memory would be silently wrong)
  CHECK_THROWS_WITH(io::parse_proteus_scenario(j(R"({"model": "gpt2-124m", "cluster": "hc2",
        "training": {"batch": 64, "offload_optimizer": "cpu"},
        "strategy_tree": {"dp": 2, "mp": 1, "pp": 1, "n_micro_batch": 1}})")),
                    Contains("training.offload_optimizer: not modelled for a strategy tree"));
  // step CSV flags are 0 or 1
  std::istringstream steps(
      "model,layers,hidden,heads,sequence,batch,precision,checkpoint,step_ms,peak_bytes,"
      "between_bytes,oom\ngpt2,12,768,12,512,1,bf16,true,25,2e9,1e9,0\n");
  CHECK_THROWS_WITH(calibrate::read_steps(steps),
                    Contains("step CSV row 2 column checkpoint: must be 0 or 1 (got 'true')"));
  // a NaN message size
  CHECK_THROWS_WITH(comm::ring::time(comm::collective::all_reduce, presets::dgx_h100(1), {0, 8, 1},
                                     bytes{std::numeric_limits<double>::quiet_NaN()}),
                    Contains("a message size must be a non-negative number of bytes"));
}

TEST_CASE("bad input: degrees whose product overflows an int are refused") {
  // 65536 x 65536 wraps a 32-bit product to 0, which passed "devices <= the cluster's" and
  // divided the batch by zero
  const auto net = zoo::resnet50();
  CHECK_THROWS_WITH(analytic::evaluate(net.view(), parallel::data_filter{.p1 = 65536, .p2 = 65536},
                                       presets::abci(16), {.batch = 256}),
                    Contains("multiply to more than 2^24 devices"));
  CHECK_THROWS_WITH(
      analytic::evaluate(net.view(), parallel::spatial{.ph = 4096, .pw = 4096, .pd = 2},
                         presets::abci(16), {.batch = 256}),
      Contains("multiply to more than 2^24 devices"));
  // five axes of 2^16 x 2^16 x 1 x 1 x 1 = 2^32 devices, 0 in 32 bits
  const parallel::nd s{.tensor = {.degree = 65536}, .data = {.degree = 65536}};
  CHECK_THROWS_WITH(s.check(zoo::gpt3_175b(), {.batch = 65536}, 1 << 24),
                    Contains("multiply to more than 2^24 devices"));
}

TEST_CASE("bad input: ZeRO-Infinity's parameter offload needs the host's link, on one GPU too") {
  training tr{.batch = 8, .sequence = 1024};
  tr.framework = frameworks::deepspeed;
  tr.framework.data.offload_optimizer = frameworks::offload_device::cpu;
  tr.framework.data.offload_parameters = frameworks::offload_device::cpu;
  const parallel::nd s{.data = {.degree = 1, .zero = 3}, .micro_batch = 8};
  const transformer m = zoo::gpt2_1_5b();
  // DGX H100: 55 GB/s of PCIe per GPU at 80 %; one rank gathers all 2 B x 1.558e9 weights over
  // it once per pass, hidden behind the pass where it can be
  cluster one = presets::dgx_h100(1);
  one.levels[0].fanout = 1;  // one GPU of the node, as {"preset": "dgx-h100", "devices": 1}
  const auto r = analytic::evaluate(m, s, one, tr);
  // each pass first brings all P = 1.558e9 bf16 weights over PCIe: 2 P / (64 GB/s x 0.8) = 61 ms,
  // exposed as ZeRO-3's gathers are (parallel::data_parallel::exposed, one micro-batch, 48
  // layers): max(g - forward, g / 48) + max(g - backward, 0)
  const double g = 2 * m.parameters() / (64e9 * 0.8);
  const double fwd = r.time.forward.count(), bwd = (r.time.backward + r.time.recompute).count();
  CHECK(g == Approx(0.0608).epsilon(0.01));
  CHECK(r.time.data_comm.count() ==
        Approx(std::max(g - fwd, g / 48) + std::max(g - bwd, 0.0)).epsilon(1e-9));
  CHECK(r.time.data_comm.count() > 0);
  cluster bare = one;
  bare.host = {};
  CHECK_THROWS_WITH(analytic::evaluate(m, s, bare, tr),
                    Contains("offload: the cluster gives no host"));
}

TEST_CASE("bad input: ZeRO-Offload's states must fit the node's host memory") {
  training tr{.batch = 8, .sequence = 2048};
  tr.framework = frameworks::deepspeed;
  tr.framework.data.offload_optimizer = frameworks::offload_device::cpu;
  const parallel::nd s{.data = {.degree = 8, .zero = 3}, .micro_batch = 1};
  // a DGX H100 node: 2,048 GiB of DRAM for its 8 GPUs' partitions, 16 B a parameter (fp32
  // masters, two Adam moments, fp32 gradients). Llama-2 70B: 68,976,648,192 x 16 B = 1,028 GiB
  CHECK_NOTHROW(analytic::evaluate(zoo::llama2_70b(), s, presets::dgx_h100(1), tr));
  // GPT-3 175B: 174,604,259,328 x 16 B = 2,601.8 GiB
  CHECK_THROWS_WITH(analytic::evaluate(zoo::gpt3_175b(), s, presets::dgx_h100(1), tr),
                    Contains("offload: the node's optimizer states and fp32 gradients (2601 GiB) "
                             "exceed its host memory (cluster.host.dram_GiB: 2048 GiB)"));
  // on NVMe (ZeRO-Infinity) the states leave the host's DRAM
  tr.framework.data.offload_optimizer = frameworks::offload_device::nvme;
  CHECK_NOTHROW(analytic::evaluate(zoo::gpt3_175b(), s, presets::dgx_h100(1), tr));
}

}  // namespace unit_bad_input
