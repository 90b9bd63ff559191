#include <catch2/catch.hpp>
#include <strata/strata.hpp>

namespace unit_units {

using namespace strata;

TEST_CASE("literals are in base units") {
  CHECK((16_GiB).count() == 17179869184.0);
  CHECK((12.5_GBps).count() == 12.5e9);
  CHECK((100_Gbps).count() == 12.5e9);  // 100 Gbit/s = 12.5 GB/s
  CHECK((20_us).count() == Approx(20e-6));
  CHECK((15.7_TFLOPS).count() == Approx(15.7e12));
}

TEST_CASE("dimensions combine") {
  // 64 MiB over 900 GB/s: 67,108,864 / 9e11 = 74.565 us
  const seconds t = 64_MiB / 900_GBps;
  CHECK(t.count() == Approx(74.565404e-6).epsilon(1e-6));
  // 1 GFLOP at 1 TFLOP/s = 1 ms
  CHECK((1_GFLOP / 1_TFLOPS).count() == Approx(1e-3));
  // a ratio of like quantities is a plain number
  const double ratio = 2_GiB / 1_GiB;
  CHECK(ratio == 2.0);
  CHECK(max(1_s, 2_s) == 2_s);
  CHECK(to_gib(3_GiB) == 3.0);
}

}  // namespace unit_units
