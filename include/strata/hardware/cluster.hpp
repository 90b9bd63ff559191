#pragma once
/// @file hardware/cluster.hpp
/// @brief Interconnects (alpha-beta links) and hierarchical clusters: device -> node -> rack ->
/// cluster.
///
/// A cluster is a stack of levels. Level 0 groups devices into nodes, level 1 nodes into racks, and
/// so on. Ranks are laid out in order, so rank r sits in level-k group r / span(k). Each level
/// stores the link a *pair* of devices sees when their lowest common group is at that level: its
/// alpha is the software start-up plus every switch latency along the path, its bandwidth the
/// slowest link on the path (ParaDL §IV: "alpha ... depends on the number of intermediate
/// switching elements", "beta is the inverse of the minimum link bandwidth on the routing path").

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "strata/error.hpp"
#include "strata/hardware/device.hpp"
#include "strata/hardware/mesh.hpp"
#include "strata/limits.hpp"
#include "strata/units.hpp"

namespace strata {

/// A point-to-point link under the alpha-beta model (named `interconnect` so that
/// `using namespace strata` does not collide with POSIX `link()`): T(m) = alpha + m * beta.
struct interconnect {
  seconds alpha{};      ///< start-up latency of one message
  byte_rate bandwidth;  ///< sustained bandwidth; beta = 1 / bandwidth

  [[nodiscard]] constexpr seconds_per_byte beta() const { return 1.0 / bandwidth; }
  /// ParaDL §IV: T_p2p(m) = alpha + m beta.
  [[nodiscard]] constexpr seconds transfer(bytes m) const { return alpha + m / bandwidth; }
};

/// What carries a level's traffic, in the three classes NCCL's tuner prices apart (the NVLINK,
/// PCI and NET rows of its hardware latencies, `comm/nccl.hpp`). Only the node level's kind is
/// read: NCCL prices every hop that leaves a node as network.
enum class link_kind { nvlink, pcie, network };

/// One level of the hierarchy.
struct level {
  std::string_view name;  ///< "node", "rack", ...
  int fanout = 1;         ///< children per group at this level (GPUs per node, nodes per rack)
  interconnect pair;      ///< what a pair whose lowest common group is at this level sees
  double oversubscription = 1;  ///< over-subscription of the links joining groups at this level
  int rails = 1;  ///< parallel links (NICs, NCCL channels) one group can drive across this level
  link_kind kind = link_kind::nvlink;  ///< what carries the traffic (read at the node level)
  bool switch_reduction = false;       ///< the switch reduces in the network (NVLink SHARP, "NVLS")
  /// The direct links among the `fanout` children of one group, where they are not all alike
  /// (an NVLink mesh, `presets::dgx1_v100_nvlink`); null: every pair sees `pair`. Proteus's HTAE
  /// (§VII) gives a communication group inside one such group the sum of the channels a ring
  /// search finds over its members' links (`ring_bandwidth(submesh(...))`), at most `pair`.
  const mesh* links = nullptr;
};

inline constexpr std::size_t max_levels = 5;
/// The most devices a cluster may hold (2^24, 16.7 M): device counts are `int`, and every product
/// of fan-outs is formed in 64 bits and checked against this bound.
inline constexpr int max_devices = 1 << 24;

namespace detail {
constexpr void check_degree(int p) {
  if (p < 1) throw plan_error(limits::degree_below_one);
}
/// Parallel degrees of at least 1 whose product (the plan's devices) is at most `max_devices`,
/// multiplied in 64 bits so that no `int` product overflows first.
constexpr void check_degrees(std::initializer_list<int> degrees) {
  long long product = 1;
  for (const int p : degrees) {
    check_degree(p);
    product *= p;  // at most 2^24 x 2^31
    if (product > max_devices) throw plan_error(limits::degrees_exceed_max_devices);
  }
}
}  // namespace detail

/// What a node's host offers its GPUs: the figures ZeRO-Offload and ZeRO-Infinity run on.
/// Zero where unknown: offload is then refused.
struct host_side {
  byte_rate pcie{};      ///< one GPU's link to host memory, per direction (datasheet)
  double optimizer = 0;  ///< parameters per second the node's CPUs update with Adam
  byte_rate nvme{};      ///< the node's NVMe bandwidth (all drives)
  bytes capacity{};      ///< the node's DRAM
};

/// DeepSpeed's CPU Adam as measured in its ZeRO-Offload tutorial (docs/_tutorials/zero-offload.md:
/// the optimizer step over 10.28e9 parameters took 6.2-6.5 s on a DGX-2 host): 1.6e9
/// parameters/s. Presets whose host was not measured use it (our assumption).
inline constexpr double cpu_adam_rate = 10.28e9 / 6.35;

/// Devices of one kind in a hierarchy of levels.
struct cluster {
  std::string_view name;
  device dev;
  std::array<level, max_levels> levels{};
  int depth = 0;
  host_side host{};  ///< the host of each node (level 0 group)

  /// Number of devices: the product of the fan-outs (at most `max_devices`).
  [[nodiscard]] constexpr int devices() const { return span(depth - 1); }
  /// Devices in one group of level k; a product above `max_devices` is a plan_error.
  [[nodiscard]] constexpr int span(int k) const {
    std::int64_t n = 1;
    for (int j = 0; j <= k && j < static_cast<int>(max_levels); ++j) {
      n *= levels[static_cast<std::size_t>(j)].fanout;
      if (n > max_devices || n < 1)
        throw plan_error("a cluster holds at most 2^24 devices (the product of its fan-outs)");
    }
    return static_cast<int>(n);
  }
  /// Lowest level whose group holds both ranks (-1 if a == b).
  [[nodiscard]] constexpr int common_level(int a, int b) const {
    if (a == b) return -1;
    for (int k = 0; k < depth; ++k)
      if (a / span(k) == b / span(k)) return k;
    throw plan_error("rank lies outside the cluster: the plan uses more devices than it has");
  }
  /// The interconnect between two ranks (ParaDL §IV: the path's switch latencies plus start-up, and
  /// its bottleneck bandwidth).
  [[nodiscard]] constexpr interconnect between(int a, int b) const {
    const int k = common_level(a, b);
    return levels[static_cast<std::size_t>(k < 0 ? 0 : k)].pair;
  }
};

/// Builds a cluster, checking the levels once.
[[nodiscard]] constexpr cluster make_cluster(std::string_view name, device dev,
                                             std::initializer_list<level> levels) {
  if (levels.size() == 0 || levels.size() > max_levels)
    throw plan_error("a cluster needs between 1 and 5 levels");
  cluster c{name, dev, {}, 0};
  for (const level& l : levels) {
    if (l.fanout < 1) throw plan_error("every cluster level needs a fan-out of at least 1");
    if (!(l.pair.bandwidth > byte_rate{0}))
      throw plan_error("every cluster level needs a positive link bandwidth");
    if (l.pair.alpha < seconds{0}) throw plan_error("link latency must not be negative");
    if (l.rails < 1) throw plan_error("every cluster level needs at least one rail");
    if (l.links != nullptr && l.links->gpus != l.fanout)
      throw plan_error("a cluster level's link mesh must join exactly its fan-out's children");
    if (l.oversubscription < 1) throw plan_error("over-subscription must be at least 1");
    c.levels[static_cast<std::size_t>(c.depth++)] = l;
  }
  (void)c.devices();  // the product of the fan-outs is at most max_devices
  return c;
}

}  // namespace strata
