#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <strata/calibrate/kernel_fit.hpp>
#include <strata/calibrate/lin_fit.hpp>
#include <strata/calibrate/readers.hpp>
#include <strata/strata.hpp>

namespace unit_calibrate {

using namespace strata;
using comm::collective;

namespace {
// The layout nccl-tests 2.x prints (numbers made up for the test, not a measurement).
constexpr const char* nccl_output =
    R"(# nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid   1234 on     host device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1234 on     host device  1 [0x2a] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.00    0.00    0.00      0     9.50    0.00    0.00      0
     1048576        262144     float     sum      -1    20.00   52.43   52.43      0    19.00   55.19   55.19    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 26.2
)";
}  // namespace

TEST_CASE("nccl-tests output") {
  std::istringstream in(nccl_output);
  const auto run = calibrate::read_nccl_tests(in);
  CHECK(run.ranks == 2);
  REQUIRE(run.out_of_place.size() == 2);
  CHECK(run.out_of_place[1].size.count() == 1048576.0);
  CHECK(run.out_of_place[1].time.count() == Approx(20e-6));
  CHECK(run.out_of_place[1].busbw.count() == Approx(52.43e9));
  CHECK(run.in_place[1].time.count() == Approx(19e-6));
  // the older layout without the root column
  std::istringstream old(
      "        1024   256   float   sum   5.0   0.2   0.2   0   5.0   0.2   0.2   0\n");
  CHECK(calibrate::read_nccl_tests(old).out_of_place[0].size.count() == 1024.0);
}

TEST_CASE("malformed benchmark input names the line") {
  std::istringstream short_row("# header\n  8  2  float  sum  -1  10.0\n");
  CHECK_THROWS_WITH(calibrate::read_nccl_tests(short_row),
                    Catch::Contains("nccl-tests line 2: expected 12 or 13 columns"));
  std::istringstream bad_number("  8  2  float  sum  -1  1O.0  0.0  0.0  0  9.5  0.0  0.0  0\n");
  CHECK_THROWS_WITH(calibrate::read_nccl_tests(bad_number),
                    Catch::Contains("line 1 column time: '1O.0' is not a number"));
  std::istringstream empty("# nothing\n");
  CHECK_THROWS_WITH(calibrate::read_nccl_tests(empty), Catch::Contains("no result rows"));
  std::istringstream ragged("size,busbw\n1KB,1.0\n2KB\n");
  CHECK_THROWS_WITH(calibrate::read_csv(ragged), Catch::Contains("CSV line 3: 1 fields"));
  std::istringstream unit("size,busbw\n1QB,1.0\n");
  const auto t = calibrate::read_csv(unit);
  CHECK_THROWS_WITH(calibrate::measurements_from_csv(t, collective::all_reduce, 8,
                                                     [](const auto&) { return true; }),
                    Catch::Contains("unknown size unit 'QB'"));
}

TEST_CASE("sizes") {
  CHECK(calibrate::parse_size("64KB", false, "x").count() == 64000.0);
  CHECK(calibrate::parse_size("64KiB", false, "x").count() == 65536.0);
  CHECK(calibrate::parse_size("65KB", true, "x").count() == 65536.0);    // labelled 2^16
  CHECK(calibrate::parse_size("132KB", true, "x").count() == 131072.0);  // labelled 2^17
  CHECK(calibrate::parse_size("8GB", true, "x").count() == 8589934592.0);
}

TEST_CASE("Lin et al.'s model, eqs. (5)-(7)") {
  // sigmoid(x) = L / (1 + e^{-k (x - x0)}) + b; at x = x0 it is L/2 + b
  const comm::sigmoid s{2.0, 20.0, 0.5, -0.5};
  CHECK(s(20.0) == Approx(0.5));
  const comm::lin_model m{collective::all_reduce, 8, 20e-6, 65536, 1 << 28, s, 400e9};
  CHECK(m.time(bytes{1024}).count() == 20e-6);  // latency region
  // transition at S = 2^20: busbw = 10^sigmoid(20) GB/s = 10^0.5 = 3.162 GB/s;
  // t = 2 x 7/8 x 2^20 / 3.162e9 = 580.3 us
  CHECK(m.time(bytes{1 << 20}).count() == Approx(1.75 * 1048576 / 3.16227766e9));
  // saturated: t_s + 1.75 S / BW_max
  CHECK(m.time(bytes{1e9}).count() == Approx(20e-6 + 1.75e9 / 400e9));
  // a negative size is not latency-bound: it is refused
  CHECK_THROWS_WITH(m.time(bytes{-1}), Catch::Contains("non-negative number of bytes"));
  // constexpr
  static_assert(
      comm::lin_model{collective::all_reduce, 8, 1e-5, 1e3, 1e6, {1, 10, 1, 0}, 1e11}.time(
          bytes{10}) == seconds{1e-5});
}

TEST_CASE("fitting recovers a known model") {
  const comm::lin_model truth{
      collective::all_reduce, 8, 25e-6, 32768, 1 << 27, comm::sigmoid{2.2, 21.0, 0.6, 0.3}, 420e9};
  std::vector<calibrate::measurement> pts;
  for (int e = 10; e <= 33; ++e) {
    const bytes s{std::exp2(e)};
    const seconds t = truth.time(s);
    pts.push_back({s, t, comm::busbw(collective::all_reduce, 8, s, t)});
  }
  const auto fit = calibrate::fit_lin_model(pts, collective::all_reduce, 8);
  const auto err = calibrate::evaluate_fit(pts, [&](bytes s) { return fit.time(s); });
  CHECK(err.mape < 0.01);
  CHECK(fit.bw_max == Approx(420e9).epsilon(0.01));
  CHECK(fit.ts == Approx(25e-6).epsilon(0.01));
}

TEST_CASE("measured curves interpolate in log-log space") {
  const comm::measured_curve c({{bytes{1e3}, seconds{10e-6}}, {bytes{1e5}, seconds{1e-3}}});
  CHECK(c.time(bytes{1e4}).count() == Approx(1e-4));  // halfway in log size, halfway in log time
  CHECK(c.time(bytes{10}).count() == Approx(10e-6));  // below: latency floor
  CHECK(c.time(bytes{1e6}).count() == Approx(1e-2));  // above: last bandwidth
  CHECK_THROWS_WITH(comm::measured_curve({{bytes{1e3}, seconds{0}}}), Catch::Contains("positive"));
  // points come in any order and are kept by size; a size measured twice is refused
  const comm::measured_curve u({{bytes{1e5}, seconds{1e-3}},
                                {bytes{1e3}, seconds{10e-6}},
                                {bytes{1e7}, seconds{0.1}},
                                {bytes{1e4}, seconds{1e-4}}});
  REQUIRE(u.points().size() == 4);
  CHECK(u.points()[0].size == bytes{1e3});
  CHECK(u.points()[1].size == bytes{1e4});
  CHECK(u.points()[2].size == bytes{1e5});
  CHECK(u.points()[3].size == bytes{1e7});
  CHECK(u.time(bytes{1e6}).count() == Approx(1e-2));  // halfway between 1e5 and 1e7 in log-log
  CHECK_THROWS_WITH(
      comm::measured_curve({{bytes{1e4}, seconds{1e-4}}, {bytes{1e4}, seconds{2e-4}}}),
      Catch::Contains("two points at the same size"));
}

}  // namespace unit_calibrate

TEST_CASE("FlashAttention-2's H100 figures fit as an attention class") {
  // test/data/fa2_h100_attention.csv: 4 causal shapes (head size 128, 2k-16k tokens) read off the
  // FlashAttention-2 and -3 papers' H100 figures. At head size 128, 8k tokens, 2 x 16 heads the
  // figures give 308 TFLOP/s forward + backward and 333 forward: 3.5 x 2 x 2 x 16 x 8192^2 x 128 /
  // 308e12 = 6.247 ms and 2 x 2 x 16 x 8192^2 x 128 / 333e12 = 1.651 ms
  std::ifstream in(STRATA_TEST_DATA_DIR "/fa2_h100_attention.csv");
  REQUIRE(in);
  strata::attention_model a;
  std::vector<strata::calibrate::class_report> report;
  strata::calibrate::fit_attention_class(a, report, in, "attention");
  CHECK(a.forward_backward(2, 16, 8192, 128) == Approx(6.247e-3).epsilon(0.05));
  CHECK(a.forward(2, 16, 8192, 128) == Approx(1.651e-3).epsilon(0.05));
  // far below what PyTorch 2.11's SDPA (cuDNN) measured on the H100 at that shape's FLOPs:
  // 491 TFLOP/s forward + backward (test/data/h100_attention.csv, 1 x 64 heads)
  CHECK(3.5 * 2 * 2 * 16 * 8192.0 * 8192 * 128 / a.forward_backward(2, 16, 8192, 128) < 350e12);
}
