#pragma once
/// @file detail/cmath.hpp
/// @brief `constexpr` exp, log, log2 and pow for the cost models (std's are not constexpr in
/// C++20). At run time they call the C library's functions; in constant evaluation they use range
/// reduction and series accurate to a few ulp over the ranges the models use.
///
/// With GCC and Clang the run-time calls go through the compilers' builtins, which are the
/// functions <cmath> declares, so that the umbrella header need not include <cmath> (in C++17 and
/// later it brings the special functions: 21 MB of GCC's memory, against 90 MB for the whole
/// umbrella header without it).

#include <limits>
#include <type_traits>

#if defined(__GNUC__) || defined(__clang__)
#define STRATA_DETAIL_LIBM(f) __builtin_##f
#else
#include <cmath>
#define STRATA_DETAIL_LIBM(f) std::f
#endif

namespace strata::detail {

inline constexpr double ln2 = 0.693147180559945309417232121458176568;

constexpr double ldexp_ce(double x, int e) {
  while (e > 0) {
    x *= 2.0;
    --e;
  }
  while (e < 0) {
    x *= 0.5;
    ++e;
  }
  return x;
}

/// e^x.
constexpr double exp(double x) {
  if (!std::is_constant_evaluated()) return STRATA_DETAIL_LIBM(exp)(x);
  if (x != x) return x;
  if (x > 709.0) return std::numeric_limits<double>::infinity();
  if (x < -745.0) return 0.0;
  // x = k ln2 + r, |r| <= ln2 / 2
  const double kd = x / ln2;
  const int k = static_cast<int>(kd < 0 ? kd - 0.5 : kd + 0.5);
  const double r = x - k * ln2;
  double term = 1.0, sum = 1.0;
  for (int n = 1; n < 30; ++n) {
    term *= r / n;
    sum += term;
  }
  return ldexp_ce(sum, k);
}

/// Natural logarithm of x > 0.
constexpr double log(double x) {
  if (!std::is_constant_evaluated()) return STRATA_DETAIL_LIBM(log)(x);
  if (!(x > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  if (x == std::numeric_limits<double>::infinity()) return x;
  // x = m 2^e with m in [1, 2)
  int e = 0;
  while (x >= 2.0) {
    x *= 0.5;
    ++e;
  }
  while (x < 1.0) {
    x *= 2.0;
    --e;
  }
  // log(m) = 2 atanh(z), z = (m - 1) / (m + 1) in [0, 1/3)
  const double z = (x - 1.0) / (x + 1.0), z2 = z * z;
  double term = z, sum = 0.0;
  for (int n = 1; n < 80; n += 2) {
    sum += term / n;
    term *= z2;
  }
  return 2.0 * sum + e * ln2;
}

constexpr double log2(double x) { return log(x) / ln2; }
constexpr double log10(double x) { return log(x) / 2.302585092994045684017991454684364208; }
constexpr double pow(double base, double e) { return exp(e * log(base)); }

/// Square root: Newton's iteration in a constant expression, the C library's at run time.
constexpr double sqrt(double x) {
  if (!std::is_constant_evaluated()) return STRATA_DETAIL_LIBM(sqrt)(x);
  if (!(x > 0.0)) return x == 0.0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  if (x == std::numeric_limits<double>::infinity()) return x;
  double r = x > 1.0 ? x : 1.0;
  for (int i = 0; i < 200; ++i) {
    const double next = 0.5 * (r + x / r);
    if (next >= r) break;  // converged: Newton's iterates decrease to the root
    r = next;
  }
  return r;
}

/// True when x is neither infinite nor NaN (as `std::isfinite`, and usable in constant
/// expressions).
constexpr bool isfinite(double x) { return x - x == 0.0; }
/// The smallest integer not below `q` (|q| < 2^63).
constexpr double ceil_of(double q) {
  const double f = static_cast<double>(static_cast<long long>(q));
  return f < q ? f + 1 : f;
}

}  // namespace strata::detail

#undef STRATA_DETAIL_LIBM
