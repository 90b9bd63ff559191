#include <catch2/catch.hpp>
#include <limits>
#include <strata/strata.hpp>
#include <vector>

namespace unit_comm {

using namespace strata;
using comm::collective;

TEST_CASE("ParaDL's alpha-beta collectives") {
  const interconnect l{20_us, 50_GBps};
  // p2p: 20 us + 1 MB / 50 GB/s = 20 + 20 = 40 us
  CHECK(comm::p2p(1_MB, l).count() == Approx(40e-6));
  // ring all-reduce: 2 (4-1) (20 us + (100 MB / 4) / 50 GB/s) = 6 x 520 us = 3.12 ms
  CHECK(comm::ring::all_reduce(4, 100_MB, l).count() == Approx(3.12e-3));
  // all-gather of a 40 MB array (10 MB pieces): (4-1)(20 us + 200 us) = 660 us
  CHECK(comm::ring::all_gather(4, 40_MB, l).count() == Approx(660e-6));
  // reduce-scatter is half an all-reduce
  CHECK(comm::ring::reduce_scatter(4, 100_MB, l).count() == Approx(1.56e-3));
  CHECK(comm::ring::all_reduce(1, 100_MB, l).count() == 0.0);  // alone: free
  CHECK_THROWS_WITH(comm::ring::all_reduce(0, 1_MB, l), Catch::Contains("at least one"));
}

TEST_CASE("bus bandwidth factors follow nccl-tests (nccl_busbw_formulas.csv)") {
  CHECK(comm::busbw_factor(collective::all_reduce, 8) == 2.0 * 7 / 8);
  CHECK(comm::busbw_factor(collective::all_gather, 8) == 7.0 / 8);
  CHECK(comm::busbw_factor(collective::reduce_scatter, 8) == 7.0 / 8);
  CHECK(comm::busbw_factor(collective::all_to_all, 8) == 7.0 / 8);
  CHECK(comm::busbw_factor(collective::broadcast, 8) == 1.0);
  CHECK(comm::busbw_factor(collective::send_recv, 2) == 1.0);
  // 1 GB all-reduce in 5 ms on 8 ranks: algbw 200 GB/s, busbw 350 GB/s
  CHECK(comm::busbw(collective::all_reduce, 8, 1_GB, 5_ms).count() == Approx(350e9));
  CHECK(comm::time_at_busbw(collective::all_reduce, 8, 1_GB, 350_GBps).count() == Approx(5e-3));
}

TEST_CASE("group views") {
  const cluster c = presets::dgx_a100(4);  // 8 GPUs per node, 8 x 200 Gbps rails
  const auto all = comm::view(c, {0, 32, 1});
  CHECK(all.local == 8);
  CHECK(all.nodes == 4);
  CHECK(all.intra.bandwidth.count() == 300e9);
  CHECK(all.inter.bandwidth.count() == 8 * 25e9);  // 8 rails x 25 GB/s
  CHECK(all.ring.bandwidth.count() == 200e9);      // min(300 in the node, 200 across)
  const auto strided = comm::view(c, {0, 4, 8});   // one GPU per node: one rail
  CHECK(strided.local == 1);
  CHECK(strided.nodes == 4);
  CHECK(strided.ring.bandwidth.count() == 25e9);
  const auto two = comm::view(c, {0, 16, 2});  // 4 per node on 4 nodes: 4 rails each
  CHECK(two.local == 4);
  CHECK(two.inter.bandwidth.count() == 4 * 25e9);
}

namespace {
// toy: 4 GPUs per node at 100 GB/s, alpha 1 us; 4 nodes at 10 GB/s, alpha 10 us, one rail.
const cluster toy = make_cluster("toy", presets::h100_sxm5_80gb,
                                 {level{"node", 4, interconnect{1_us, 100_GBps}},
                                  level{"cluster", 4, interconnect{10_us, 10_GBps}}});
}  // namespace

TEST_CASE("algorithms, worked by hand") {
  const bytes s = 16_MB;
  // ring over 16 ranks: every step charged the slowest hop (10 us, 10 GB/s):
  // 2 x 15 x (10 us + 1 MB / 10 GB/s) = 30 x 110 us = 3.3 ms
  CHECK(comm::ring::time(collective::all_reduce, toy, {0, 16, 1}, s).count() == Approx(3.3e-3));
  // tree: 2 ceil(log2 16) alpha + 2 S beta = 8 x 10 us + 2 x 1.6 ms = 3.28 ms
  CHECK(comm::tree::time(collective::all_reduce, toy, {0, 16, 1}, s).count() == Approx(3.28e-3));
  // recursive halving over 16: distances 8, 4 leave the node, where all 4 members share the one
  // 10 GB/s rail (2.5 GB/s each); distances 2, 1 stay inside (100 GB/s):
  // (10 us + 8 MB / 2.5 GB/s) + (10 us + 4 MB / 2.5 GB/s) + (1 us + 2 MB / 100 GB/s)
  //   + (1 us + 1 MB / 100 GB/s) = 3210 + 1610 + 21 + 11 = 4852 us; all-reduce twice that
  CHECK(comm::recursive::time(collective::reduce_scatter, toy, {0, 16, 1}, s).count() ==
        Approx(4852e-6));
  CHECK(comm::recursive::time(collective::all_reduce, toy, {0, 16, 1}, s).count() ==
        Approx(9704e-6));
  // hierarchical: reduce-scatter in the node 3 (1 us + 4 MB / 100 GB/s) = 123 us, then 4 rings
  // of 4 MB across 4 nodes sharing one 10 GB/s rail: 2 x 3 x (10 us + 1 MB / 2.5 GB/s) = 2.46 ms,
  // then all-gather in the node 123 us: 2.706 ms
  CHECK(comm::hierarchical::time(collective::all_reduce, toy, {0, 16, 1}, s).count() ==
        Approx(2.706e-3));
  // direct all-to-all of a 16 MB array: each rank sends 1 MB to each of 15 others; in the node
  // 3 MB at 100 GB/s = 30 us, off the node 4 x 12 MB = 48 MB at 10 GB/s = 4.8 ms; 15 x 10 us
  CHECK(comm::direct::time(collective::all_to_all, toy, {0, 16, 1}, s).count() ==
        Approx(150e-6 + 4.8e-3));
  // in-switch all-reduce inside one node: 2 x 1 us + 16 MB / 100 GB/s = 162 us
  CHECK(comm::in_switch::time(collective::all_reduce, toy, {0, 4, 1}, s).count() == Approx(162e-6));
  CHECK_THROWS_WITH(comm::in_switch::time(collective::all_reduce, toy, {0, 8, 1}, s),
                    Catch::Contains("inside one NVSwitch node"));
  CHECK_THROWS_WITH(comm::ring::time(collective::all_to_all, toy, {0, 8, 1}, s),
                    Catch::Contains("ring does not implement all_to_all"));
}

TEST_CASE("consistency: p = 1 is free, more bandwidth is never slower, busbw <= bottleneck") {
  const std::vector<collective> ops{collective::all_reduce, collective::all_gather,
                                    collective::reduce_scatter, collective::broadcast};
  for (int p : {1, 2, 3, 4, 6, 8, 16}) {
    for (collective op : ops) {
      for (double mb : {0.001, 1.0, 64.0, 1024.0}) {
        const bytes s{mb * 1e6};
        const group g{0, p, 1};
        const double slow = comm::ring::time(op, toy, g, s).count();
        const cluster fast = make_cluster("fast", presets::h100_sxm5_80gb,
                                          {level{"node", 4, interconnect{1_us, 200_GBps}},
                                           level{"cluster", 4, interconnect{10_us, 20_GBps}}});
        INFO("p=" << p << " op=" << comm::to_string(op) << " MB=" << mb);
        if (p == 1) {
          CHECK(slow == 0.0);
          CHECK(comm::recursive::time(op, toy, g, s).count() == 0.0);
          continue;
        }
        CHECK(comm::ring::time(op, fast, g, s).count() <= slow);
        CHECK(comm::recursive::time(op, fast, g, s).count() <=
              comm::recursive::time(op, toy, g, s).count());
        const double bottleneck = comm::ring_link(toy, g).bandwidth.count();
        for (double t : {slow, comm::recursive::time(op, toy, g, s).count()})
          CHECK(comm::busbw(op, p, s, seconds{t}).count() <= bottleneck * (1 + 1e-12));
        if (op == collective::all_reduce || op == collective::broadcast) {
          const double tt = comm::tree::time(op, toy, g, s).count();
          CHECK(comm::busbw(op, p, s, seconds{tt}).count() <= bottleneck * (1 + 1e-12));
        }
      }
    }
  }
  // in-network reduction is the exception: NVLS bus bandwidth exceeds the wire
  const double t = comm::in_switch::time(collective::all_reduce, toy, {0, 4, 1}, 1_GB).count();
  CHECK(comm::busbw(collective::all_reduce, 4, 1_GB, seconds{t}).count() > 100e9);
}

TEST_CASE("uneven all-to-all and parameter servers") {
  // Lin et al.: the busiest device decides. Rank 2 receives 9 MB: S = 9 MB x 4/3 = 12 MB.
  const std::vector<bytes> sent{3_MB, 3_MB, 3_MB, 3_MB}, recv{1_MB, 1_MB, 9_MB, 1_MB};
  CHECK(comm::all_to_all_uneven(sent, recv).count() == Approx(12e6));
  // 8 workers push 100 MB each to 2 servers on 10 GB/s links: each server takes 400 MB: 40 ms
  const interconnect nic{50_us, 10_GBps};
  CHECK(comm::ps_push(8, 2, 100_MB, nic, nic).count() == Approx(40.05e-3));
  CHECK(comm::ps_pull(1, 4, 100_MB, nic, nic).count() == Approx(10.05e-3));  // worker-bound
}

TEST_CASE("NCCL's tuner, worked by hand (comm/nccl.hpp)") {
  using comm::nccl;
  const cluster h100 = presets::dgx_h100(1);
  const group node{0, 8, 1};
  // NCCL credits an H100 NVLink with 20.6 of its 25 GB/s: 450 x 0.824 = 370.8 GB/s of bus
  // bandwidth. 1 KiB all-reduce, ring/LL: 6.6 + 14 x 0.6 = 15.0 us of latency; LL bandwidth
  // min(141, 370.8 / 2) = 141 GB/s bus, x 8/14 = 80.57 GB/s; 1024 B / 80.57 GB/s = 0.0127 us;
  // plus 10 us launch = 25.0127 us. Tree/LL starts at 6.8 + 2 x 7 x 0.6 = 15.2 us and loses.
  const auto small = nccl::choose(collective::all_reduce, h100, node, bytes{1024});
  CHECK(small.algo == nccl::algorithm::ring);
  CHECK(small.proto == nccl::protocol::ll);
  CHECK(small.time.count() == Approx(25.0127e-6).epsilon(1e-4));
  // 1 GiB: NVLS. One channel per GPU at the fastest search speed 8 channels hold within
  // 370.8 GB/s (50 x 8 = 400 is too much, 40 x 8 = 320 fits); bus 8 x 40 x 0.85 x 7/8 x 2 =
  // 476 GB/s, x 8/14 = 272 GB/s; 2^30 / 272 GB/s = 3947.58 us + 25 us hop + 10 us = 3982.58 us
  const auto big = nccl::choose(collective::all_reduce, h100, node, bytes{1073741824.0});
  CHECK(big.algo == nccl::algorithm::nvls);
  CHECK(big.time.count() == Approx(3982.58e-6).epsilon(1e-5));
  // the same on the ring with Simple: 8.4 + 14 x 3.4 = 56 us; 370.8 x 8/14 = 211.89 GB/s:
  // 5067.51 us; + 10 us = 5133.51 us
  CHECK(nccl::price(collective::all_reduce, h100, node, bytes{1073741824.0}, nccl::algorithm::ring,
                    nccl::protocol::simple)
            .count() == Approx(5133.51e-6).epsilon(1e-5));

  // Four DGX A100 (32 GPUs), 64 MiB. Bus bandwidth min(300 x 0.8, 8 x 25) = 200 GB/s.
  const cluster a100 = presets::dgx_a100(4);
  const group world{0, 32, 1};
  const bytes s{67108864.0};
  // ring/Simple: 62 steps, 6 of them across nodes (14 us), 56 inside (max(3.4, 3 x 1 us net
  // overhead) = 3.4 us): 8.4 + 190.4 + 84 = 282.8 us, x 1.4 (ring plateau across nodes) =
  // 395.92 us; 200 x 32/62 = 103.23 GB/s: 650.12 us; + 10 us = 1056.04 us
  CHECK(nccl::price(collective::all_reduce, a100, world, s, nccl::algorithm::ring,
                    nccl::protocol::simple)
            .count() == Approx(1056.04e-6).epsilon(1e-5));
  // tree/LL128: 14 + 2 (7 x 1.25 + log2(4) x 8.5) = 65.5 us; 200 x 0.92 x 120/128 x 0.5 =
  // 86.25 GB/s, x 0.9 (correction at log2(64 MiB / 64) = 20) = 77.63 GB/s: 864.53 us; 940.03 us
  CHECK(nccl::price(collective::all_reduce, a100, world, s, nccl::algorithm::tree,
                    nccl::protocol::ll128)
            .count() == Approx(940.03e-6).epsilon(1e-5));
  // ring/LL128 wins: 14 + 56 x 1.9 + 6 x 4.0 = 144.4 us; 200 x 0.92 x 32/62 = 94.97 GB/s:
  // 706.65 us; 861.05 us
  const auto mid = nccl::choose(collective::all_reduce, a100, world, s);
  CHECK(mid.algo == nccl::algorithm::ring);
  CHECK(mid.proto == nccl::protocol::ll128);
  CHECK(mid.time.count() == Approx(861.05e-6).epsilon(1e-5));

  // What NCCL does not run: NVLS without in-switch reduction (A100) or across nodes, LL128 over
  // PCIe, trees for anything but all-reduce.
  const auto nvls = nccl::algorithm::nvls;
  const auto simple = nccl::protocol::simple;
  CHECK(nccl::price(collective::all_reduce, presets::dgx_a100(1), node, 1_MB, nvls, simple) <
        seconds{0});
  CHECK(nccl::price(collective::all_reduce, presets::dgx_h100(2), {0, 16, 1}, 1_MB, nvls, simple) <
        seconds{0});
  CHECK(nccl::price(collective::all_reduce, presets::l40s_server(1), node, 1_MB,
                    nccl::algorithm::ring, nccl::protocol::ll128) < seconds{0});
  CHECK(nccl::price(collective::all_gather, h100, node, 1_MB, nccl::algorithm::tree, simple) <
        seconds{0});
  // alone: free; all-to-all is point-to-point in NCCL: the direct exchange plus the launch
  CHECK(nccl::time(collective::all_reduce, h100, {0, 1, 1}, 1_GB).count() == 0.0);
  // 8 ranks on one node's 450 GB/s NVLink: 7 x 5 us + 64 MB x 7/8 / 450 GB/s = 159.44 us, plus
  // NCCL's 10 us launch
  CHECK(nccl::time(collective::all_to_all, h100, node, 64_MB).count() ==
        Approx(7 * 5e-6 + 64e6 * 7 / 8 / 450e9 + 10e-6));
  CHECK_THROWS_WITH(nccl::time(collective::all_reduce, h100, {0, 0, 1}, 1_MB),
                    Catch::Contains("at least one"));
}

TEST_CASE("NCCL's log2i: floor(log2(x)) from the exponent, 0 below 2") {
  using comm::nccl;
  STATIC_REQUIRE(nccl::log2i(0.5) == 0);
  STATIC_REQUIRE(nccl::log2i(1.0) == 0);
  STATIC_REQUIRE(nccl::log2i(1.999) == 0);
  STATIC_REQUIRE(nccl::log2i(2.0) == 1);
  STATIC_REQUIRE(nccl::log2i(3.0) == 1);
  STATIC_REQUIRE(nccl::log2i(1024.0) == 10);
  STATIC_REQUIRE(nccl::log2i(1025.0) == 10);
  STATIC_REQUIRE(nccl::log2i(2047.9) == 10);
  STATIC_REQUIRE(nccl::log2i(4194304.0 / 64) == 16);  // 4 MiB: the tree table's column 16
  STATIC_REQUIRE(nccl::log2i(-8.0) == 0);
  CHECK(nccl::log2i(std::numeric_limits<double>::quiet_NaN()) == 0);
  CHECK(nccl::log2i(std::numeric_limits<double>::infinity()) == 1024);
}

TEST_CASE("NCCL's tuner agrees with the ring at large sizes where the ring is right") {
  // 1 GiB all-reduce, nccl / ring (strata's alpha-beta ring on the preset's line rates):
  //  8 x H100 (NVLS, 476 GB/s bus vs the ring's 450 less its 14 x 5 us):           0.938
  //  4 x DGX H100 (ring, 370.8 GB/s inside vs the ring's 400 GB/s of NICs):        1.034
  //  4 x DGX A100 (ring, both on the 200 GB/s of NICs):                            0.981
  //  16 x DGX H100, one GPU per node (a data-parallel group under TP 8):          1.008
  //  8 x A100 (ring; NCCL counts 20 of 25 GB/s per NVLink, 240 vs 300 GB/s):       1.247
  // The last is the one that moves: NCCL's 240 GB/s is what A100 nodes measure (231.6 GB/s in
  // nccl_tests_allreduce_busbw.csv), the ring's 300 GB/s is the wire.
  struct row {
    cluster c;
    group g;
    double ratio;
  };
  const bytes s{1073741824.0};
  for (const row& r :
       {row{presets::dgx_h100(1), {0, 8, 1}, 0.938}, row{presets::dgx_h100(4), {0, 32, 1}, 1.034},
        row{presets::dgx_a100(4), {0, 32, 1}, 0.981}, row{presets::dgx_h100(16), {0, 16, 8}, 1.008},
        row{presets::dgx_a100(1), {0, 8, 1}, 1.247}}) {
    const double ratio = comm::nccl::time(collective::all_reduce, r.c, r.g, s) /
                         comm::ring::time(collective::all_reduce, r.c, r.g, s);
    INFO(r.c.name << " p=" << r.g.size);
    CHECK(ratio == Approx(r.ratio).epsilon(0.002));
  }
}

}  // namespace unit_comm
