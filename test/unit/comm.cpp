#include <catch2/catch.hpp>
#include <strata/strata.hpp>
#include <vector>

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
