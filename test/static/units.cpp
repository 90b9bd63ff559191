// Compiling this file is the test.
#include <strata/units.hpp>

using namespace strata;

template <class A, class B>
concept addable = requires(A a, B b) {
  a + b;
};
template <class A, class B>
concept subtractable = requires(A a, B b) {
  a - b;
};
template <class A, class B>
concept comparable = requires(A a, B b) {
  a < b;
};

// Quantities of different dimensions do not add, compare or convert.
static_assert(!addable<bytes, seconds>);
static_assert(!subtractable<flops, seconds>);
static_assert(!comparable<bytes, seconds>);
static_assert(!addable<bytes, double>);
static_assert(addable<bytes, bytes> && comparable<seconds, seconds>);
static_assert(!std::is_convertible_v<double, bytes>);
static_assert(!std::is_convertible_v<bytes, double>);
// ... and divide into the right dimension.
static_assert(std::is_same_v<decltype(1_GB / 1_GBps), seconds>);
static_assert(std::is_same_v<decltype(1_GFLOP / 1_TFLOPS), seconds>);
static_assert(std::is_same_v<decltype(1_GB / 1_s), byte_rate>);
static_assert(std::is_same_v<decltype(1_GB / 1_GB), double>);
static_assert(std::is_same_v<decltype(1.0 / 1_GBps), seconds_per_byte>);
static_assert(1_GiB == 1024_MiB && 1_MiB == 1024_KiB);
static_assert(80_GiB > 16_GiB);
static_assert((1000_ms).count() == 1.0);
