#include <catch2/catch.hpp>
#include <strata/strata.hpp>

using namespace strata;

TEST_CASE("ParaDL's alpha-beta collectives") {
  const interconnect l{20_us, 50_GBps};
  // p2p: 20 us + 1 MB / 50 GB/s = 20 + 20 = 40 us
  CHECK(comm::p2p(1_MB, l).count() == Approx(40e-6));
  // ring all-reduce: 2 (4-1) (20 us + (100 MB / 4) / 50 GB/s) = 6 x 520 us = 3.12 ms
  CHECK(comm::ring::all_reduce(4, 100_MB, l).count() == Approx(3.12e-3));
  // all-gather of 10 MB pieces: (4-1)(20 us + 200 us) = 660 us
  CHECK(comm::ring::all_gather(4, 10_MB, l).count() == Approx(660e-6));
  // reduce-scatter is half an all-reduce
  CHECK(comm::ring::reduce_scatter(4, 100_MB, l).count() == Approx(1.56e-3));
  CHECK(comm::ring::all_reduce(1, 100_MB, l).count() == 0.0);  // alone: free
  CHECK_THROWS_WITH(comm::ring::all_reduce(0, 1_MB, l), Catch::Contains("at least one"));
}
