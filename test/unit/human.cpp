// Numbers for people (io/human.hpp): the unit that reads best, and thousands separators.
#include <catch2/catch.hpp>
#include <limits>
#include <strata/io/human.hpp>

namespace unit_human {

using strata::io::human_count;
using strata::io::human_duration;

TEST_CASE("durations in the unit that reads best") {
  CHECK(human_duration(0) == "0 s");
  CHECK(human_duration(850e-6) == "850 us");
  CHECK(human_duration(0.0123) == "12.3 ms");
  CHECK(human_duration(2.851) == "2.851 s");
  CHECK(human_duration(119.9) == "119.900 s");
  CHECK(human_duration(252) == "4.2 min");     // 252 / 60
  CHECK(human_duration(108'232) == "30.1 h");  // an ImageNet-22K epoch: 108,232 / 3600
  CHECK(human_duration(30 * 86'400.0) == "30.0 days");
}

TEST_CASE("counts with thousands separators") {
  CHECK(human_count(0) == "0");
  CHECK(human_count(999) == "999");
  CHECK(human_count(1000) == "1,000");
  CHECK(human_count(1'463'441) == "1,463,441");
  CHECK(human_count(91'950.4) == "91,950");
  CHECK(human_count(-12'345) == "-12,345");
  CHECK(human_count(std::numeric_limits<double>::infinity()) == "-");
}

}  // namespace unit_human
