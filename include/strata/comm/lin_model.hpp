#pragma once
/// @file comm/lin_model.hpp
/// @brief Lin et al.'s piecewise-sigmoid model of a collective (eqs. 5-7), and a measured curve
/// with log-log interpolation.
///
/// Lin et al. §IV-A: below m1 a collective costs its start-up latency t_s; between m1 and m2
/// its bus bandwidth follows a sigmoid in log2 of the size, 10^sigmoid(log2 S) GB/s with
/// sigmoid(x) = L / (1 + e^{-k (x - x0)}) + b; above m2 it is t_s + S / BW_max. Eight parameters
/// per operation (L, x0, k, b, m1, m2, t_s, BW_max). Bandwidths here are bus bandwidths, so time
/// = busbw_factor x S / busbw (nccl-tests' convention, `comm::busbw_factor`).
/// @code
/// constexpr strata::comm::lin_model m{strata::comm::collective::all_reduce, 8, 20e-6, 65536.0,
///                                     268435456.0, {2.7, 22.0, 0.45, -0.6}, 450e9};
/// constexpr auto t = m.time(strata::bytes{1e6});
/// @endcode

#include <cstddef>
#include <utility>
#include <vector>

#include "strata/comm/collectives.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/units.hpp"

namespace strata::comm {

/// Lin et al. eq. (7): L / (1 + e^{-k (x - x0)}) + b.
struct sigmoid {
  double L = 0;
  double x0 = 0;
  double k = 1;
  double b = 0;
  [[nodiscard]] constexpr double operator()(double x) const {
    return L / (1.0 + strata::detail::exp(-k * (x - x0))) + b;
  }
};

/// Lin et al. eqs. (5)-(7) for one collective on one group size.
struct lin_model {
  collective op = collective::all_reduce;
  int ranks = 2;      ///< n, for the bus-bandwidth factor
  double ts = 0;      ///< t_s, start-up latency (s)
  double m1 = 0;      ///< end of the latency-bound region (bytes)
  double m2 = 0;      ///< start of the saturated region (bytes)
  sigmoid bw;         ///< log10 of the bus bandwidth in GB/s, as a function of log2(S)
  double bw_max = 1;  ///< BW_max, saturated bus bandwidth (B/s)

  /// Bus bandwidth at size S in the transition region.
  [[nodiscard]] constexpr byte_rate transition_busbw(bytes s) const {
    return byte_rate{strata::detail::pow(10.0, bw(strata::detail::log2(s.count()))) * 1e9};
  }
  /// Lin et al. eq. (5).
  [[nodiscard]] constexpr seconds time(bytes s) const {
    if (!(s >= bytes{0})) throw plan_error("a message size must be a non-negative number of bytes");
    if (s.count() <= m1) return seconds{ts};
    if (s.count() <= m2) return time_at_busbw(op, ranks, s, transition_busbw(s));
    return seconds{ts} + time_at_busbw(op, ranks, s, byte_rate{bw_max});
  }
};

/// A measured time-versus-size curve; between points it interpolates in log-log space, below the
/// smallest size it keeps that time (latency-bound), above the largest it grows linearly at the
/// last measured algorithm bandwidth.
class measured_curve {
 public:
  struct point {
    bytes size;
    seconds time;
  };

  measured_curve() = default;
  explicit measured_curve(std::vector<point> pts) : pts_(std::move(pts)) {
    if (pts_.empty()) throw plan_error("a measured curve needs at least one point");
    // by size; insertion sort (curves have tens of points)
    for (std::size_t i = 1; i < pts_.size(); ++i)
      for (std::size_t j = i; j > 0 && pts_[j].size < pts_[j - 1].size; --j)
        std::swap(pts_[j], pts_[j - 1]);
    for (std::size_t i = 0; i < pts_.size(); ++i) {
      if (!(pts_[i].size > bytes{0}) || !(pts_[i].time > seconds{0}))
        throw plan_error("measured curve points need positive sizes and times");
      if (i > 0 && pts_[i].size == pts_[i - 1].size)
        throw plan_error("a measured curve has two points at the same size");
    }
  }

  [[nodiscard]] const std::vector<point>& points() const { return pts_; }

  [[nodiscard]] seconds time(bytes s) const {
    if (pts_.empty()) throw plan_error("the measured curve is empty");
    if (s <= pts_.front().size) return pts_.front().time;
    if (s >= pts_.back().size) return pts_.back().time * (s / pts_.back().size);
    const auto hi = strata::detail::lower_bound(pts_.begin(), pts_.end(), s,
                                                [](const point& p, bytes v) { return p.size < v; });
    const auto lo = hi - 1;
    const double x0 = strata::detail::log(lo->size.count()),
                 x1 = strata::detail::log(hi->size.count());
    const double y0 = strata::detail::log(lo->time.count()),
                 y1 = strata::detail::log(hi->time.count());
    const double x = strata::detail::log(s.count());
    return seconds{strata::detail::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))};
  }

 private:
  std::vector<point> pts_;
};

}  // namespace strata::comm
