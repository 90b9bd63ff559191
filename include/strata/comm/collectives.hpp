#pragma once
/// @file comm/collectives.hpp
/// @brief Collective operations x algorithms under the alpha-beta model, on the links a group's
/// placement really uses.
///
/// Sizes follow nccl-tests (`test/data/nccl_busbw_formulas.csv`): S is the per-rank buffer for
/// all-reduce, the total array for all-gather, reduce-scatter and all-to-all, and the message for
/// broadcast, reduce and send/recv. Every algorithm is a policy type with
/// `time(collective, const cluster&, group, bytes S)`; the ring also keeps ParaDL's closed forms
/// on a single link, which the ParaDL strategies call.
/// @code
/// using namespace strata::literals;
/// constexpr strata::interconnect nvlink{20_us, 50_GBps};
/// constexpr auto t = strata::comm::ring::all_reduce(4, 100_MB, nvlink);
/// // 2 (4 - 1) (20 us + (100 MB / 4) / 50 GB/s) = 6 x 520 us = 3.12 ms
/// constexpr auto c = strata::presets::dgx_h100(1);
/// constexpr auto nvls = strata::comm::in_switch::time(strata::comm::collective::all_reduce, c,
///                                                     {.size = 8}, 1_GB);
/// @endcode

#include <string>
#include <string_view>

#include "strata/comm/placement.hpp"
#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/units.hpp"

namespace strata::comm {

/// The collective operations.
enum class collective {
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  broadcast,
  reduce,
  send_recv
};

[[nodiscard]] constexpr std::string_view to_string(collective op) {
  switch (op) {
    case collective::all_reduce:
      return "all_reduce";
    case collective::all_gather:
      return "all_gather";
    case collective::reduce_scatter:
      return "reduce_scatter";
    case collective::all_to_all:
      return "all_to_all";
    case collective::broadcast:
      return "broadcast";
    case collective::reduce:
      return "reduce";
    case collective::send_recv:
      return "send_recv";
  }
  return "?";
}

/// nccl-tests' bus-bandwidth factor: busbw = algbw x factor, algbw = S / t. All-reduce
/// 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; broadcast, reduce, send/recv 1.
[[nodiscard]] constexpr double busbw_factor(collective op, int n) {
  if (n < 1) throw plan_error("a collective needs at least one participant");
  switch (op) {
    case collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case collective::all_gather:
    case collective::reduce_scatter:
    case collective::all_to_all:
      return static_cast<double>(n - 1) / n;
    case collective::broadcast:
    case collective::reduce:
    case collective::send_recv:
      return 1.0;
  }
  return 1.0;
}

/// algbw = S / t.
[[nodiscard]] constexpr byte_rate algbw(bytes s, seconds t) { return s / t; }
/// busbw = S / t x busbw_factor.
[[nodiscard]] constexpr byte_rate busbw(collective op, int n, bytes s, seconds t) {
  return s / t * busbw_factor(op, n);
}
/// The time at which a collective of S bytes reaches bus bandwidth `bw`.
[[nodiscard]] constexpr seconds time_at_busbw(collective op, int n, bytes s, byte_rate bw) {
  return s * busbw_factor(op, n) / bw;
}

namespace detail {
constexpr void check(int p, bytes m) {
  if (p < 1) throw plan_error("a collective needs at least one participant");
  if (!(m >= bytes{0})) throw plan_error("a message size must be a non-negative number of bytes");
}
constexpr int ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}
[[noreturn]] inline void unsupported(std::string_view algorithm, collective op) {
  throw plan_error(std::string(algorithm) + " does not implement " + std::string(to_string(op)));
}
}  // namespace detail

/// ParaDL §IV: T_p2p(m) = alpha + m beta.
[[nodiscard]] constexpr seconds p2p(bytes m, interconnect l) {
  detail::check(1, m);
  return l.transfer(m);
}

/// Ring algorithms (ParaDL §IV; NCCL's default for large messages): the buffer is cut into p
/// pieces and passed around the ring; every step is charged the slowest hop.
struct ring {
  static constexpr std::string_view name = "ring";
  /// T_ar(p, S) = 2 (p - 1) (alpha + (S / p) beta).
  [[nodiscard]] static constexpr seconds all_reduce(int p, bytes s, interconnect l) {
    detail::check(p, s);
    return 2.0 * (p - 1) * (l.alpha + (s / static_cast<double>(p)) / l.bandwidth);
  }
  /// T_ag(p, S) = (p - 1) (alpha + (S / p) beta); ParaDL writes (p - 1)(alpha + m beta) with
  /// m = S / p, the piece each rank owns.
  [[nodiscard]] static constexpr seconds all_gather(int p, bytes s, interconnect l) {
    detail::check(p, s);
    return (p - 1) * (l.alpha + (s / static_cast<double>(p)) / l.bandwidth);
  }
  /// The first half of a ring all-reduce: (p - 1) (alpha + (S / p) beta).
  [[nodiscard]] static constexpr seconds reduce_scatter(int p, bytes s, interconnect l) {
    return all_gather(p, s, l);
  }
  /// Pipelined chain (broadcast, reduce): (p - 1) alpha + S beta.
  [[nodiscard]] static constexpr seconds chain(int p, bytes s, interconnect l) {
    detail::check(p, s);
    return p == 1 ? seconds{} : (p - 1) * l.alpha + s / l.bandwidth;
  }

  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    const interconnect l = ring_link(c, g);
    switch (op) {
      case collective::all_reduce:
        return all_reduce(g.size, s, l);
      case collective::all_gather:
        return all_gather(g.size, s, l);
      case collective::reduce_scatter:
        return reduce_scatter(g.size, s, l);
      case collective::broadcast:
      case collective::reduce:
        return chain(g.size, s, l);
      case collective::send_recv:
        return g.size == 1 ? seconds{} : p2p(s, l);
      case collective::all_to_all:
        break;
    }
    detail::unsupported(name, op);
  }
};

/// Double binary tree (Sanders, Speck and Traff 2009; NCCL's "tree"): two complementary binary
/// trees each carry half of the data, reduced up and broadcast down in a pipeline:
/// all-reduce 2 ceil(log2 p) alpha + 2 S beta; broadcast and reduce ceil(log2 p) alpha + S beta.
struct tree {
  static constexpr std::string_view name = "tree";
  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    const interconnect l = ring_link(c, g);
    const int depth = detail::ceil_log2(g.size);
    switch (op) {
      case collective::all_reduce:
        return 2.0 * depth * l.alpha + 2.0 * (s / l.bandwidth);
      case collective::broadcast:
      case collective::reduce:
        return depth * l.alpha + s / l.bandwidth;
      default:
        break;
    }
    detail::unsupported(name, op);
  }
};

/// Recursive halving (reduce-scatter) and doubling (all-gather), Thakur, Rabenseifner and Gropp
/// 2005: log2 p steps; step k exchanges S / 2^k with the partner p / 2^k ranks away, over that
/// pair's own link (shared with the node's other members when it leaves the node). A
/// non-power-of-two p first folds the extra ranks into partners and returns their result at the end
/// (one more alpha + S beta each way). Broadcast and reduce use a binomial tree: ceil(log2 p)
/// (alpha + S beta).
struct recursive {
  static constexpr std::string_view name = "recursive";
  /// One exchange step between partners `d` members apart: partners on other nodes share the
  /// node's rails with every other member crossing at the same time.
  [[nodiscard]] static constexpr seconds step(const cluster& c, group g, const group_view& v, int d,
                                              bytes m) {
    const int lvl = c.common_level(g.first, g.first + d * g.stride);
    if (lvl < 0) return {};
    const level& at = c.levels[static_cast<std::size_t>(lvl)];
    byte_rate bw = at.pair.bandwidth;
    if (lvl == 0) {
      bw = v.intra.bandwidth;
    } else if (v.local > at.rails) {
      bw = bw * (static_cast<double>(at.rails) / v.local) / at.oversubscription;
    }
    return at.pair.alpha + m / bw;
  }
  [[nodiscard]] static constexpr seconds halving(const cluster& c, group g, bytes s) {
    const group_view v = view(c, g);
    int q = 1;
    while (2 * q <= g.size) q *= 2;
    seconds t{};
    for (int k = 1, d = q / 2; d >= 1; ++k, d /= 2)
      t += step(c, g, v, d, s / static_cast<double>(1 << k));
    if (q != g.size) t += step(c, g, v, q, s);
    return t;
  }
  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    switch (op) {
      case collective::all_reduce:
        return 2.0 * halving(c, g, s);
      case collective::reduce_scatter:
      case collective::all_gather:
        return halving(c, g, s);
      case collective::broadcast:
      case collective::reduce: {
        const interconnect l = ring_link(c, g);
        return detail::ceil_log2(g.size) * l.transfer(s);
      }
      default:
        break;
    }
    detail::unsupported(name, op);
  }
};

/// Direct (pairwise) exchange: every rank talks to every other. All-to-all, and all-gather and
/// reduce-scatter built from it, run p - 1 rounds whose data crosses the node's own links
/// ((local - 1) S / p per rank) and its uplinks (local (p - local) S / p per node, over the
/// node's rails, slowed by over-subscription); the slower of the two decides. Lin et al. feed
/// uneven all-to-alls through `all_to_all_uneven`. Broadcast and reduce are flat: the root
/// sends to each rank in turn, (p - 1)(alpha + S beta).
struct direct {
  static constexpr std::string_view name = "direct";
  [[nodiscard]] static constexpr seconds exchange(const group_view& v, bytes s) {
    const double p = v.p, local = v.local;
    const seconds inside = (s * ((local - 1) / p)) / v.intra.bandwidth;
    seconds across{};
    if (v.nodes > 1)
      across = (s * (local * (p - local) / p)) / (v.inter.bandwidth / v.oversubscription);
    return (v.p - 1) * v.ring.alpha + max(inside, across);
  }
  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    const group_view v = view(c, g);
    switch (op) {
      case collective::all_to_all:
      case collective::all_gather:
      case collective::reduce_scatter:
        return exchange(v, s);
      case collective::all_reduce:
        return 2.0 * exchange(v, s);
      case collective::broadcast:
      case collective::reduce:
        return (g.size - 1) * v.ring.transfer(s);
      case collective::send_recv:
        return p2p(s, c.between(g.first, g.last()));
    }
    detail::unsupported(name, op);
  }
};

/// Hierarchical: reduce-scatter inside each node, all-reduce across nodes (one ring per local
/// rank, the `local` rings sharing the node's rails), all-gather inside each node. Reduce-scatter
/// and all-gather are the first and second halves. Falls back to the ring when the group sits in
/// one node or has one member per node.
struct hierarchical {
  static constexpr std::string_view name = "hierarchical";
  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    const group_view v = view(c, g);
    if (v.nodes == 1 || v.local == 1) {
      if (op == collective::all_reduce || op == collective::all_gather ||
          op == collective::reduce_scatter)
        return ring::time(op, c, g, s);
      detail::unsupported(name, op);
    }
    const double l = v.local;
    const seconds in_node = (l - 1) * (v.intra.alpha + (s / l) / v.intra.bandwidth);
    const interconnect across{v.inter.alpha, v.inter.bandwidth / l};  // each of l rings
    switch (op) {
      case collective::all_reduce:
        return 2.0 * in_node + ring::all_reduce(v.nodes, s / l, across);
      case collective::reduce_scatter:
      case collective::all_gather:
        return in_node + ring::all_gather(v.nodes, s / l, across);
      default:
        break;
    }
    detail::unsupported(name, op);
  }
};

/// In-network reduction inside one NVSwitch domain (NVLink SHARP, "NVLS"): each GPU sends its
/// buffer to the switch once and receives the reduced result once, so all-reduce costs
/// 2 alpha + S beta and its bus bandwidth, 2(n-1)/n x S / t, can exceed the wire.
struct in_switch {
  static constexpr std::string_view name = "in_switch";
  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    const group_view v = view(c, g);
    if (v.nodes > 1)
      throw plan_error("in-switch reduction needs the whole group inside one NVSwitch node");
    switch (op) {
      case collective::all_reduce:
        return 2.0 * v.intra.alpha + s / v.intra.bandwidth;
      case collective::reduce_scatter:
      case collective::all_gather:
        return v.intra.alpha + (s * ((v.p - 1.0) / v.p)) / v.intra.bandwidth;
      default:
        break;
    }
    detail::unsupported(name, op);
  }
};

/// Lin et al. §IV-A: an uneven all-to-all is as slow as its busiest device, so its size is
/// the largest over devices of the bytes a device sends or receives; `sent[i]` and `received[i]`
/// exclude what rank i keeps. Returns the equivalent uniform S (nccl-tests convention).
template <class Range>
[[nodiscard]] constexpr bytes all_to_all_uneven(const Range& sent, const Range& received) {
  bytes worst{};
  int p = 0;
  for (const bytes b : sent) {
    worst = max(worst, b);
    ++p;
  }
  int q = 0;
  for (const bytes b : received) {
    worst = max(worst, b);
    ++q;
  }
  if (p != q || p < 1) throw plan_error("all-to-all: sent and received need one entry per rank");
  return p == 1 ? bytes{} : worst * (static_cast<double>(p) / (p - 1));
}

/// Parameter-server push: `workers` each send S bytes split evenly over `servers`; a worker's
/// uplink carries S, a server's downlink workers x S / servers, shared fairly.
[[nodiscard]] constexpr seconds ps_push(int workers, int servers, bytes s, interconnect worker,
                                        interconnect server) {
  if (workers < 1 || servers < 1)
    throw plan_error("a parameter server needs at least one worker and one server");
  detail::check(1, s);
  const seconds up = s / worker.bandwidth;
  const seconds in = s * (static_cast<double>(workers) / servers) / server.bandwidth;
  return max(worker.alpha, server.alpha) + max(up, in);
}
/// Parameter-server pull: the mirror image of `ps_push`.
[[nodiscard]] constexpr seconds ps_pull(int workers, int servers, bytes s, interconnect worker,
                                        interconnect server) {
  return ps_push(workers, servers, s, worker, server);
}

}  // namespace strata::comm
