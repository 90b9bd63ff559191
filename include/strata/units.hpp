#pragma once
/// @file units.hpp
/// @brief Strong quantities for the cost model: bytes, seconds, FLOPs and their rates.
///
/// A quantity carries the exponents of its three base dimensions (byte, second, FLOP) in its
/// type, so `bytes + seconds` does not compile while `bytes / byte_rate` yields `seconds`.
/// Everything is a literal type and every operation is `constexpr`.
/// @code
/// using namespace strata::literals;
/// constexpr strata::seconds t = 64_MiB / 900_GBps;   // ~74.6 us
/// static_assert(80_GiB > 16_GiB);
/// @endcode

#include <compare>
#include <concepts>

namespace strata {

/// Exponents of byte, second and FLOP.
template <int Byte, int Second, int Flop>
struct dimension {
  static constexpr int byte = Byte;
  static constexpr int second = Second;
  static constexpr int flop = Flop;
};

using dimensionless = dimension<0, 0, 0>;

/// A double tagged with a dimension. The stored value is in base units (B, s, FLOP).
template <class Dim>
struct quantity {
  using dim = Dim;
  double value{};

  constexpr quantity() = default;
  constexpr explicit quantity(double v) : value(v) {}

  [[nodiscard]] constexpr double count() const { return value; }

  constexpr quantity& operator+=(quantity o) {
    value += o.value;
    return *this;
  }
  constexpr quantity& operator-=(quantity o) {
    value -= o.value;
    return *this;
  }
  constexpr quantity& operator*=(double s) {
    value *= s;
    return *this;
  }
  constexpr quantity& operator/=(double s) {
    value /= s;
    return *this;
  }

  friend constexpr quantity operator+(quantity a, quantity b) {
    return quantity{a.value + b.value};
  }
  friend constexpr quantity operator-(quantity a, quantity b) {
    return quantity{a.value - b.value};
  }
  friend constexpr quantity operator-(quantity a) { return quantity{-a.value}; }
  friend constexpr quantity operator*(quantity a, double s) { return quantity{a.value * s}; }
  friend constexpr quantity operator*(double s, quantity a) { return quantity{a.value * s}; }
  friend constexpr quantity operator/(quantity a, double s) { return quantity{a.value / s}; }
  friend constexpr auto operator<=>(const quantity&, const quantity&) = default;
};

template <class T>
inline constexpr bool is_quantity_v = false;
template <class D>
inline constexpr bool is_quantity_v<quantity<D>> = true;

/// A strong quantity of any dimension.
template <class T>
concept Quantity = is_quantity_v<T>;

template <class D1, class D2>
using dim_product = dimension<D1::byte + D2::byte, D1::second + D2::second, D1::flop + D2::flop>;
template <class D1, class D2>
using dim_quotient = dimension<D1::byte - D2::byte, D1::second - D2::second, D1::flop - D2::flop>;

namespace detail {
template <class D>
constexpr auto make_quantity(double v) {
  if constexpr (std::same_as<D, dimensionless>) {
    return v;
  } else {
    return quantity<D>{v};
  }
}
}  // namespace detail

template <class D1, class D2>
[[nodiscard]] constexpr auto operator*(quantity<D1> a, quantity<D2> b) {
  return detail::make_quantity<dim_product<D1, D2>>(a.value * b.value);
}
template <class D1, class D2>
[[nodiscard]] constexpr auto operator/(quantity<D1> a, quantity<D2> b) {
  return detail::make_quantity<dim_quotient<D1, D2>>(a.value / b.value);
}
template <class D>
[[nodiscard]] constexpr auto operator/(double s, quantity<D> q) {
  return quantity<dim_quotient<dimensionless, D>>{s / q.value};
}

using bytes = quantity<dimension<1, 0, 0>>;              ///< memory size or message size
using seconds = quantity<dimension<0, 1, 0>>;            ///< time
using flops = quantity<dimension<0, 0, 1>>;              ///< floating-point operations (a count)
using byte_rate = quantity<dimension<1, -1, 0>>;         ///< bandwidth, B/s
using flop_rate = quantity<dimension<0, -1, 1>>;         ///< throughput, FLOP/s
using seconds_per_byte = quantity<dimension<-1, 1, 0>>;  ///< inverse bandwidth (beta)

[[nodiscard]] constexpr double to_gib(bytes b) { return b.value / (1024.0 * 1024.0 * 1024.0); }
[[nodiscard]] constexpr double to_ms(seconds s) { return s.value * 1e3; }

template <Quantity Q>
[[nodiscard]] constexpr Q max(Q a, Q b) {
  return a < b ? b : a;
}
template <Quantity Q>
[[nodiscard]] constexpr Q min(Q a, Q b) {
  return b < a ? b : a;
}

inline namespace literals {
// clang-format off
constexpr bytes operator""_B(unsigned long long v) { return bytes{static_cast<double>(v)}; }
constexpr bytes operator""_KiB(unsigned long long v) { return bytes{static_cast<double>(v) * 1024.0}; }
constexpr bytes operator""_MiB(unsigned long long v) { return bytes{static_cast<double>(v) * 1048576.0}; }
constexpr bytes operator""_GiB(unsigned long long v) { return bytes{static_cast<double>(v) * 1073741824.0}; }
constexpr bytes operator""_GiB(long double v) { return bytes{static_cast<double>(v) * 1073741824.0}; }
constexpr bytes operator""_KB(unsigned long long v) { return bytes{static_cast<double>(v) * 1e3}; }
constexpr bytes operator""_MB(unsigned long long v) { return bytes{static_cast<double>(v) * 1e6}; }
constexpr bytes operator""_GB(unsigned long long v) { return bytes{static_cast<double>(v) * 1e9}; }
constexpr bytes operator""_GB(long double v) { return bytes{static_cast<double>(v) * 1e9}; }

constexpr seconds operator""_s(unsigned long long v) { return seconds{static_cast<double>(v)}; }
constexpr seconds operator""_s(long double v) { return seconds{static_cast<double>(v)}; }
constexpr seconds operator""_ms(unsigned long long v) { return seconds{static_cast<double>(v) * 1e-3}; }
constexpr seconds operator""_ms(long double v) { return seconds{static_cast<double>(v) * 1e-3}; }
constexpr seconds operator""_us(unsigned long long v) { return seconds{static_cast<double>(v) * 1e-6}; }
constexpr seconds operator""_us(long double v) { return seconds{static_cast<double>(v) * 1e-6}; }
constexpr seconds operator""_ns(unsigned long long v) { return seconds{static_cast<double>(v) * 1e-9}; }
constexpr seconds operator""_ns(long double v) { return seconds{static_cast<double>(v) * 1e-9}; }

constexpr flops operator""_GFLOP(unsigned long long v) { return flops{static_cast<double>(v) * 1e9}; }
constexpr flops operator""_GFLOP(long double v) { return flops{static_cast<double>(v) * 1e9}; }
constexpr flops operator""_TFLOP(unsigned long long v) { return flops{static_cast<double>(v) * 1e12}; }

constexpr byte_rate operator""_GBps(unsigned long long v) { return byte_rate{static_cast<double>(v) * 1e9}; }
constexpr byte_rate operator""_GBps(long double v) { return byte_rate{static_cast<double>(v) * 1e9}; }
constexpr byte_rate operator""_Gbps(unsigned long long v) { return byte_rate{static_cast<double>(v) * 1e9 / 8.0}; }
constexpr byte_rate operator""_Gbps(long double v) { return byte_rate{static_cast<double>(v) * 1e9 / 8.0}; }

constexpr flop_rate operator""_GFLOPS(unsigned long long v) { return flop_rate{static_cast<double>(v) * 1e9}; }
constexpr flop_rate operator""_GFLOPS(long double v) { return flop_rate{static_cast<double>(v) * 1e9}; }
constexpr flop_rate operator""_TFLOPS(unsigned long long v) { return flop_rate{static_cast<double>(v) * 1e12}; }
constexpr flop_rate operator""_TFLOPS(long double v) { return flop_rate{static_cast<double>(v) * 1e12}; }
// clang-format on
}  // namespace literals

}  // namespace strata
