#pragma once
/// @file comm/nccl.hpp
/// @brief Collectives priced per call as NCCL's tuner prices them: for every algorithm (ring,
/// tree, NVLS) and protocol (LL, LL128, Simple) a latency plus bytes over a bandwidth, and the
/// fastest one chosen, so that a call of a few KB costs its ~25 us and not S / bandwidth.
///
/// The constants are NCCL's own, from NVIDIA/nccl tag v2.30.7-1 (identical at the 2026-06
/// master): `src/graph/tuning.cc` lines 138-212 (tables), 288-437 (the model), 514-541 (which
/// protocols are enabled), 620-655 (`ncclTopoGetAlgoTime`); `src/graph/search.cc` lines 1057-1064
/// (per-channel speeds) and 1124-1138 (NVLS channels); `src/graph/topo.h` lines 19-24 (what NCCL
/// credits an NVLink with). In NCCL's units a time is
///   t [us] = latency(algorithm, protocol) + S / (1000 x bandwidth [GB/s])
/// where the latency is a base plus hops x per-hop latency of the link kind (NVLink, PCIe or
/// network) and the bandwidth is the bus bandwidth of the links times the protocol's efficiency,
/// turned into algorithm bandwidth. To that strata adds `launch`, the per-call cost that the tuner
/// leaves out (it ranks choices; nccl-tests times whole calls).
/// @code
/// constexpr auto c = strata::presets::dgx_h100(1);
/// // 8 GPUs, 1 KiB: ring/LL, 15.0 us of latency + 10 us of launch
/// const auto pick = strata::comm::nccl::choose(strata::comm::collective::all_reduce, c,
///                                              {.size = 8}, strata::bytes{1024});
/// @endcode

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "strata/comm/collectives.hpp"
#include "strata/comm/placement.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/units.hpp"

namespace strata::comm {

/// NCCL's tuner as a collective policy (`time(collective, const cluster&, group, bytes S)`).
/// Sizes follow nccl-tests, as for every policy in `collectives.hpp`.
struct nccl {
  static constexpr std::string_view name = "nccl";

  enum class algorithm { tree, ring, nvls };
  enum class protocol { ll, ll128, simple };

  /// The algorithm and protocol NCCL would run, and what the call costs.
  struct choice {
    algorithm algo = algorithm::ring;
    protocol proto = protocol::simple;
    seconds time{};     ///< the whole call, launch included
    seconds startup{};  ///< the part that does not depend on the size: latency and launch
  };

  /// Per-call cost outside the tuner's model: kernel launch and completion as nccl-tests times a
  /// call. Fitted to the smallest all-reduces of `test/data/nccl_tests_allreduce_busbw.csv`: on
  /// 8 x H100 1 KiB takes 1024 x 1.75 / 0.07 GB/s = 25.6 us and the tuner says 15.0 us (10.6 us
  /// left); on 8 x H200 29.9 us (14.9 us left). We take the lower, 10 us.
  static constexpr seconds launch{10e-6};

  /// The cost of one algorithm and protocol, launch included; a negative time where NCCL would
  /// not run that pair (disabled, or the collective is not one it implements).
  [[nodiscard]] static constexpr seconds price(collective op, const cluster& c, group g, bytes s,
                                               algorithm a, protocol p) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    const setup u = make_setup(c, g);
    const double us = model_us(op, u, s.count(), a, p);
    return us < 0 ? seconds{-1.0} : seconds{us * 1e-6} + launch;
  }

  /// The fastest algorithm and protocol, as `ncclTopoGetAlgoTime` ranks them. All-to-all and
  /// send/recv are point-to-point in NCCL, outside the tuner: they are priced by `direct` plus
  /// `launch`.
  [[nodiscard]] static constexpr choice choose(collective op, const cluster& c, group g, bytes s) {
    detail::check(g.size, s);
    if (g.size == 1) return {};
    if (op == collective::all_to_all || op == collective::send_recv) {
      return {algorithm::ring, protocol::simple, direct::time(op, c, g, s) + launch,
              direct::time(op, c, g, bytes{}) + launch};
    }
    const setup u = make_setup(c, g);
    choice best{algorithm::ring, protocol::simple, seconds{-1.0}};
    const call_shape k = shape_of(op, u, s.count());
    for (const algorithm a : {algorithm::tree, algorithm::ring, algorithm::nvls}) {
      for (const protocol p : {protocol::ll, protocol::ll128, protocol::simple}) {
        const double us = pair_us(k, u, a, p);
        if (us < 0) continue;
        if (best.time < seconds{0} || us * 1e-6 < best.time.count())
          best = {a, p, seconds{us * 1e-6}};
      }
    }
    if (best.time < seconds{0}) detail::unsupported(name, op);
    // the start-up: the same call with no bytes (`shape_of(op, u, 0)`: no plateau, no tree
    // correction column)
    call_shape empty = k;
    empty.nbytes = 0;
    empty.plateau = false;
    empty.ls = -1;
    best.startup = seconds{pair_us(empty, u, best.algo, best.proto) * 1e-6} + launch;
    best.time += launch;
    return best;
  }

  [[nodiscard]] static constexpr seconds time(collective op, const cluster& c, group g, bytes s) {
    return choose(op, c, g, s).time;
  }

  // ---- NCCL's constants ---------------------------------------------------------------------
  // Rows: NCCL's compute-capability index (Volta, Ampere, Hopper, Blackwell).
  enum generation { volta, ampere, hopper, blackwell };
  /// tuning.cc 149-155: base latency [us], {LL, LL128, Simple}; NVLS has none (its hop has it).
  static constexpr std::array<std::array<double, 3>, 3> base_latency{
      {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}}};
  /// tuning.cc 157-175: per-hop latency [us] by link kind (NVLink, PCI, network) and algorithm
  /// (tree, ring, NVLS), {LL, LL128, Simple}.
  static constexpr std::array<std::array<std::array<double, 3>, 3>, 3> hop_latency{{
      {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}}},  // NVLink
      {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}}},    // PCI
      {{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}}},   // network
  }};
  /// tuning.cc 178-183: the LL protocol's bandwidth cap [GB/s]; row by GPU generation on one
  /// node, by CPU vendor across nodes (we take Intel, row 0); column 1, 2, more than 2 nodes.
  static constexpr std::array<std::array<double, 3>, 4> ll_max_bw{
      {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
  /// tuning.cc 139-144: NVLS efficiency (Hopper 0.85, Blackwell 0.74).
  static constexpr std::array<double, 4> nvls_efficiency{0.0, 0.0, 0.85, 0.74};
  /// tuning.cc 623-627: tree bandwidth correction for medium sizes, by protocol and
  /// log2(S / 64 B) (64 B to 256 MB).
  static constexpr std::array<std::array<double, 23>, 3> tree_correction{{
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
       .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
       .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
  }};
  /// topo.h 19-24: what NCCL credits one NVLink with [GB/s] (SM70 20, SM80 20, SM90 20.6,
  /// SM100 40.1), over its line rate per direction (25 GB/s for NVLink 2-4, 50 for NVLink 5):
  /// the share of the wire an NVLink's bandwidth counts for in NCCL's bus bandwidth.
  static constexpr std::array<double, 4> nvlink_efficiency{20.0 / 25, 20.0 / 25, 20.6 / 25,
                                                           40.1 / 50};
  /// search.cc 1057 and 1063: the per-channel speeds [GB/s] NCCL's search tries inside a node
  /// (Hopper, Blackwell), fastest first.
  static constexpr std::array<double, 11> hopper_speeds{60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static constexpr std::array<double, 12> blackwell_speeds{90, 80, 70, 60, 50, 45,
                                                           40, 30, 24, 20, 19, 18};

  /// What the tuner reads of the communicator and the topology.
  struct setup {
    int ranks = 1;
    int nodes = 1;
    int ppn = 1;          ///< ranks per node
    int gen = volta;      ///< GPU generation index
    int intra_hw = 0;     ///< 0 NVLink, 1 PCI, 2 network
    double intra_bw = 0;  ///< what NCCL counts inside a node [GB/s]
    double bus_bw = 0;    ///< the graph's bus bandwidth (channels x speed) [GB/s]
    bool ll128 = false;   ///< LL128 enabled (tuning.cc 518-536)
    bool nvls = false;    ///< NVLS possible (search.cc 1124; tuning.cc 504-506)
  };

  [[nodiscard]] static constexpr setup make_setup(const cluster& c, group g) {
    const group_view v = view(c, g);
    const level& node = c.levels[0];
    setup u;
    u.ranks = v.p;
    u.nodes = v.nodes;
    u.ppn = v.local;
    const int arch = c.dev.arch;
    u.gen = arch >= 100 ? blackwell : arch >= 90 ? hopper : arch >= 80 ? ampere : volta;
    u.intra_hw = node.kind == link_kind::nvlink ? 0 : node.kind == link_kind::pcie ? 1 : 2;
    const bool nvlink = node.kind == link_kind::nvlink && arch >= 70;
    u.intra_bw = v.intra.bandwidth.count() * 1e-9 * (nvlink ? nvlink_efficiency[u.gen] : 1.0);
    const double inter = v.inter.bandwidth.count() * 1e-9;
    u.bus_bw = v.nodes == 1  ? u.intra_bw
               : v.local > 1 ? strata::detail::min(u.intra_bw, inter)
                             : inter;
    // LL128 needs NVLink inside the node and a CUDA GPU of compute capability 7.0 or more.
    u.ll128 = nvlink;
    u.nvls = node.switch_reduction && v.nodes == 1 && arch >= 90 && v.p >= 2;
    return u;
  }

  /// NCCL's floor(log2(x)) (`log2i`), 0 for x < 2 (and for NaN): the exponent of the double,
  /// which halving x until it is below 2 would count (halving is exact).
  [[nodiscard]] static constexpr int log2i(double x) {
    if (!(x >= 2.0)) return 0;
    if (!(x <= std::numeric_limits<double>::max())) return 1024;  // infinity
    return static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff) - 1023;
  }

  /// What the time of a call depends on besides its algorithm and protocol: worked out once
  /// per call, then read by each of the nine pairs (`pair_us`).
  struct call_shape {
    bool ar = false, ag_rs = false, chain = false;
    int n = 1, nsteps = 0, inter_steps = 0;
    double nbytes = 0;
    double ll_cap = 0;      ///< the LL protocol's cap [GB/s]
    double ratio = 0;       ///< n / nsteps: bus to algorithm bandwidth (376-382)
    bool plateau = false;   ///< the ring's plateau across nodes applies (647-650)
    int ls = -1;            ///< the tree correction's column, log2(S / 64 B); -1 below 64 B
    int tree_hops = 0;      ///< log2(nodes): the tree's network hops
    double nvls_speed = 0;  ///< NVLS: the per-channel speed the search settles on
    int nvls_channels = 0;
  };
  [[nodiscard]] static constexpr call_shape shape_of(collective op, const setup& u, double nbytes) {
    call_shape k;
    k.ar = op == collective::all_reduce;
    k.ag_rs = op == collective::all_gather || op == collective::reduce_scatter;
    k.chain = op == collective::broadcast || op == collective::reduce;
    if (!k.ar && !k.ag_rs && !k.chain) return k;
    k.n = u.ranks;
    k.nsteps = k.ar ? 2 * (k.n - 1) : k.ag_rs ? k.n - 1 : k.n;
    k.nbytes = nbytes;
    const int i2 = u.nodes <= 2 ? u.nodes - 1 : 2;
    k.ll_cap =
        ll_max_bw[static_cast<std::size_t>(u.nodes == 1 ? u.gen : 0)][static_cast<std::size_t>(i2)];
    k.ratio = static_cast<double>(k.n) / k.nsteps;
    k.inter_steps = u.nodes == 1 ? 0 : k.ar ? 2 * (u.nodes - 1) : u.nodes - 1;
    // 647-650: the ring's plateau across nodes (64 B per rank and channel; we take 32 channels)
    k.plateau = u.nodes > 1 && k.ar && nbytes / (32.0 * k.n) >= 64;
    k.ls = nbytes >= 64 ? log2i(nbytes / 64) : -1;
    k.tree_hops = log2i(u.nodes);
    if (u.nvls) {
      // search.cc 1126-1138: one channel per GPU of the node, each at the fastest speed that
      // the GPU's NVLink bandwidth holds for all of them
      const int ch = k.n < 32 ? k.n : 32;
      double speed = 0;
      if (u.gen == blackwell) {
        for (const double sp : blackwell_speeds)
          if (speed == 0 && sp * ch <= u.intra_bw) speed = sp;
        if (speed == 0) speed = blackwell_speeds.back();
      } else {
        for (const double sp : hopper_speeds)
          if (speed == 0 && sp * ch <= u.intra_bw) speed = sp;
        if (speed == 0) speed = hopper_speeds.back();
      }
      k.nvls_speed = speed;
      k.nvls_channels = ch;
    }
    return k;
  }

  /// tuning.cc 288-437 and 630-655: the time [us] of one algorithm and protocol, launch
  /// excluded; negative where NCCL would not run it.
  [[nodiscard]] static constexpr double pair_us(const call_shape& k, const setup& u, algorithm a,
                                                protocol p) {
    if (!k.ar && !k.ag_rs && !k.chain) return -1;
    if (p == protocol::ll128 && !u.ll128) return -1;
    const auto pi = static_cast<std::size_t>(p);
    const auto& net = hop_latency[2];
    const auto& intra = hop_latency[static_cast<std::size_t>(u.intra_hw)];
    double bw = 0, lat = 0;
    switch (a) {
      case algorithm::ring: {
        // 327-329: LL moves 8 bytes for every 4 of data and is capped; LL128 120 of 128.
        bw = p == protocol::ll      ? strata::detail::min(k.ll_cap, u.bus_bw * 0.5)
             : p == protocol::ll128 ? u.bus_bw * 0.92
                                    : u.bus_bw;
        bw *= k.ratio;  // 376-382: bus to algorithm bandwidth
        lat = base_latency[1][pi];
        const auto& hop = u.nodes == 1 ? intra : net;
        if (k.chain) {
          lat += hop[1][pi];  // 395-397: broadcast and reduce pipeline, one hop of start-up
        } else {
          // 404-412: every step pays a hop; steps that leave the node pay the network's, and
          // a node-internal step is at least the network post overhead (1 us, x3 for Simple).
          const double overhead = u.nodes > 1 ? (p == protocol::simple ? 3.0 : 1.0) : 0.0;
          const double in = strata::detail::max(intra[1][pi], overhead);
          const double out = u.ppn == 1 ? net[0][pi] : net[1][pi];
          lat += (k.nsteps - k.inter_steps) * in + k.inter_steps * out;
          if (p == protocol::simple && k.plateau) lat *= u.gen >= ampere ? 1.4 : 1.9;
        }
        break;
      }
      case algorithm::tree: {
        if (!k.ar) return -1;  // 294-298: trees run all-reduce only
        // 330-336: 92 % of the links; LL 1/3.8 of that (capped), LL128 7/9 in a node, 120/128
        // across.
        bw = u.bus_bw * 0.92;
        if (p == protocol::ll) bw = strata::detail::min(bw / 3.8, k.ll_cap);
        if (p == protocol::ll128) bw *= u.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
        bw *= 0.5;  // 380: up the tree and down again
        if (k.ls >= 0 && k.ls < 23) bw *= tree_correction[pi][static_cast<std::size_t>(k.ls)];
        // 414-417: a chain through the node's ranks, log2(nodes) network hops, up and down.
        lat = base_latency[0][pi] + 2.0 * ((u.ppn - 1) * intra[0][pi] + k.tree_hops * net[0][pi]);
        break;
      }
      case algorithm::nvls: {
        if (!u.nvls || p != protocol::simple || k.chain) return -1;  // 301: Simple only
        // 307-324: the channel's share after NVLS efficiency; an all-reduce pipelines two
        // operations; all-gather and reduce-scatter move (ppn-1)/ppn.
        const int ch = k.nvls_channels;
        double per =
            k.nvls_speed * nvls_efficiency[static_cast<std::size_t>(u.gen)] * (ch - 1) / ch;
        per *= k.ar ? 2.0 : static_cast<double>(u.ppn - 1) / u.ppn;
        bw = ch * per;
        if (k.ar) bw *= k.ratio;
        lat = hop_latency[0][2][2];  // 424-426: NVLink hop of NVLS only
        break;
      }
    }
    if (!(bw > 0)) return -1;
    return lat + k.nbytes / (1000.0 * bw);
  }

  /// One algorithm and protocol for one call: `pair_us` of the call's shape.
  [[nodiscard]] static constexpr double model_us(collective op, const setup& u, double nbytes,
                                                 algorithm a, protocol p) {
    return pair_us(shape_of(op, u, nbytes), u, a, p);
  }
};

[[nodiscard]] constexpr std::string_view to_string(nccl::algorithm a) {
  switch (a) {
    case nccl::algorithm::tree:
      return "tree";
    case nccl::algorithm::ring:
      return "ring";
    case nccl::algorithm::nvls:
      return "nvls";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(nccl::protocol p) {
  switch (p) {
    case nccl::protocol::ll:
      return "LL";
    case nccl::protocol::ll128:
      return "LL128";
    case nccl::protocol::simple:
      return "Simple";
  }
  return "?";
}

}  // namespace strata::comm
