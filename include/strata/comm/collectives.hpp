#pragma once
/// @file comm/collectives.hpp
/// @brief Collective operations under the alpha-beta model, as ParaDL §IV states them.
///
/// The algorithm is a policy type. `ring` is NCCL's default for large messages and the one
/// ParaDL uses throughout: each of the p ranks cuts its m-byte buffer into p pieces and the ring
/// runs p - 1 steps for all-gather and 2 (p - 1) for all-reduce. On a hierarchical cluster every
/// step is charged the slowest pair of the ring (`cluster::ring_link`).
/// @code
/// using namespace strata::literals;
/// constexpr strata::interconnect nvlink{20_us, 50_GBps};
/// constexpr auto t = strata::comm::ring::all_reduce(4, 100_MB, nvlink);
/// // 2 (4 - 1) (20 us + 25 MB / 50 GB/s) = 6 x 520 us = 3.12 ms
/// @endcode

#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/units.hpp"

namespace strata::comm {

namespace detail {
constexpr void check_group(int p, bytes m) {
  if (p < 1) throw plan_error("a collective needs at least one participant");
  if (m < bytes{0}) throw plan_error("a message size must not be negative");
}
}  // namespace detail

/// ParaDL §IV: T_p2p(m) = alpha + m beta.
[[nodiscard]] constexpr seconds p2p(bytes m, interconnect l) {
  detail::check_group(1, m);
  return l.transfer(m);
}

/// Ring algorithms (ParaDL §IV). `m` is the full buffer each rank holds (all-reduce,
/// reduce-scatter) or contributes (all-gather: the piece each rank owns).
struct ring {
  /// T_ar(p, m) = 2 (p - 1) (alpha + (m / p) beta).
  [[nodiscard]] static constexpr seconds all_reduce(int p, bytes m, interconnect l) {
    detail::check_group(p, m);
    return 2.0 * (p - 1) * (l.alpha + (m / static_cast<double>(p)) / l.bandwidth);
  }
  /// T_ag(p, m) = (p - 1) (alpha + m beta), m = the piece each rank contributes.
  [[nodiscard]] static constexpr seconds all_gather(int p, bytes piece, interconnect l) {
    detail::check_group(p, piece);
    return (p - 1) * (l.alpha + piece / l.bandwidth);
  }
  /// The first half of a ring all-reduce: (p - 1) (alpha + (m / p) beta).
  [[nodiscard]] static constexpr seconds reduce_scatter(int p, bytes m, interconnect l) {
    detail::check_group(p, m);
    return (p - 1) * (l.alpha + (m / static_cast<double>(p)) / l.bandwidth);
  }
};

}  // namespace strata::comm
