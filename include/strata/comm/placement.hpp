#pragma once
/// @file comm/placement.hpp
/// @brief Where a communicator's ranks sit on the cluster, and what its collectives see there.
///
/// A group is the ranks first, first + stride, ... (size of them). Its view records how many
/// members share a node, the level that holds the whole group, the node-internal link, what a
/// node can drive across the levels the group spans (pair bandwidth x rails, the NICs or NCCL
/// channels it uses in parallel) and the over-subscription it meets there.
/// @code
/// constexpr auto c = strata::presets::dgx_a100(2);
/// constexpr auto v = strata::comm::view(c, {.first = 0, .size = 16});
/// static_assert(v.local == 8 && v.nodes == 2);
/// @endcode

#include <cstddef>

#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/limits.hpp"
#include "strata/units.hpp"

namespace strata {

/// Consecutive ranks first, first + stride, ...: how a communicator is laid out on the cluster.
struct group {
  int first = 0;
  int size = 1;
  int stride = 1;
  [[nodiscard]] constexpr int last() const { return first + (size - 1) * stride; }
};

namespace comm {

/// What a group's collectives see of the cluster.
struct group_view {
  int p = 1;           ///< members
  int local = 1;       ///< members per node (level-0 group)
  int nodes = 1;       ///< nodes the group spans
  int top = -1;        ///< level whose group holds all members (-1: a single rank)
  interconnect intra;  ///< a pair inside one node
  interconnect inter;  ///< across nodes: alpha of the slowest pair; bandwidth a node drives
  double oversubscription = 1;  ///< the largest over-subscription among the crossed levels
  interconnect ring;            ///< the slowest hop of a ring over the group (ParaDL §IV)
};

/// The view of group `g` on cluster `c`. Groups are assumed regular: every node holds as many
/// members as the first one.
[[nodiscard]] constexpr group_view view(const cluster& c, group g) {
  if (g.size < 1 || g.stride < 1 || g.first < 0)
    throw plan_error("a communication group needs size >= 1, stride >= 1 and first >= 0");
  if (g.last() >= c.devices()) throw plan_error(limits::plan_exceeds_cluster);
  group_view v;
  v.p = g.size;
  const level& node = c.levels[0];
  v.intra = node.pair;
  v.intra.bandwidth = node.pair.bandwidth * static_cast<double>(node.rails);
  const int n0 = c.span(0);
  const int room = n0 - g.first % n0;  // node slots from `first` to the end of its node
  v.local = g.stride >= n0 ? 1 : (room + g.stride - 1) / g.stride;
  if (v.local > g.size) v.local = g.size;
  v.nodes = (g.size + v.local - 1) / v.local;
  v.top = g.size == 1 ? -1 : c.common_level(g.first, g.last());
  v.ring = v.intra;
  v.inter = v.intra;
  if (v.top >= 1) {
    const level& topl = c.levels[static_cast<std::size_t>(v.top)];
    v.inter.alpha = topl.pair.alpha;
    v.ring.alpha = topl.pair.alpha;
    byte_rate across = topl.pair.bandwidth * static_cast<double>(topl.rails);
    for (int j = 1; j <= v.top; ++j) {
      const level& l = c.levels[static_cast<std::size_t>(j)];
      const int rails = l.rails < v.local ? l.rails : v.local;
      const byte_rate b = l.pair.bandwidth * static_cast<double>(rails);
      if (b < across) across = b;
      if (l.oversubscription > v.oversubscription) v.oversubscription = l.oversubscription;
    }
    v.inter.bandwidth = across;
    v.ring.bandwidth = v.local > 1 ? min(v.intra.bandwidth, across) : across;
  }
  return v;
}

/// The link every step of a ring over `g` is charged: the slowest pair's start-up and the
/// narrowest of the links the ring uses (ParaDL §IV: "each step costs its slowest pair").
[[nodiscard]] constexpr interconnect ring_link(const cluster& c, group g) {
  return view(c, g).ring;
}

}  // namespace comm
}  // namespace strata
