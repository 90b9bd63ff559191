#include <catch2/catch.hpp>
#include <strata/strata.hpp>

using namespace strata;

TEST_CASE("ABCI pair links follow ParaDL section V-A") {
  const cluster c = presets::abci(128);  // 32 nodes: 17 in rack 0, 15 in rack 1
  REQUIRE(c.devices() == 4 * 17 * 2);
  // same node: NVLink, 20 us start-up, 50 GB/s
  CHECK(c.between(0, 3).alpha.count() == Approx(20e-6));
  CHECK(c.between(0, 3).bandwidth.count() == 50e9);
  // same rack: 20 us + 2 PLX (110 ns) + 1 leaf (90 ns) = 20.31 us; min(PCIe 16, IB 12.5) GB/s
  CHECK(c.between(0, 4).alpha.count() == Approx(20.31e-6));
  CHECK(c.between(0, 4).bandwidth.count() == 12.5e9);
  // other rack (node 17 = rank 68): + 1 more leaf (90 ns) + spine (400 ns) = 20.8 us
  CHECK(c.between(0, 68).alpha.count() == Approx(20.8e-6));
  CHECK(c.levels[2].oversubscription == 3.0);
}

TEST_CASE("a ring is charged its slowest pair") {
  const cluster c = presets::abci(64);
  CHECK(comm::ring_link(c, {0, 4, 1}).bandwidth.count() == 50e9);     // one node
  CHECK(comm::ring_link(c, {0, 8, 1}).bandwidth.count() == 12.5e9);   // two nodes
  CHECK(comm::ring_link(c, {0, 16, 4}).bandwidth.count() == 12.5e9);  // one GPU per node
  CHECK(comm::ring_link(c, {2, 1, 1}).bandwidth.count() == 50e9);     // alone: no traffic
  CHECK_THROWS_WITH(comm::ring_link(c, {0, 65, 1}),
                    Catch::Contains("more devices than the cluster"));
}

TEST_CASE("device peaks come from gpu_peak_specs.csv") {
  CHECK(presets::v100_sxm2_16gb.peak(dtype::fp32).count() == Approx(15.7e12));
  CHECK(presets::v100_sxm2_16gb.peak(dtype::fp16).count() == Approx(125e12));
  CHECK(presets::v100_sxm2_16gb.peak(dtype::bf16).count() == Approx(125e12));  // no bf16: fp16
  CHECK(presets::a100_sxm4_80gb.peak(dtype::tf32).count() == Approx(156e12));
  CHECK(presets::h100_sxm5_80gb.peak(dtype::bf16).count() == Approx(989.4e12));
  CHECK(presets::h100_sxm5_80gb.peak(dtype::fp8).count() == Approx(1978.9e12));
  CHECK(presets::a100_sxm4_40gb.peak(dtype::fp8).count() == Approx(312e12));  // falls back
  CHECK(presets::h100_sxm5_80gb.memory.count() == 85017493504.0);             // h100_device.json
  CHECK(presets::dgx_h100(4).devices() == 32);
  CHECK(presets::hc2().devices() == 32);
  CHECK(presets::hc1().between(0, 4).bandwidth < presets::hc1().between(0, 1).bandwidth);
}

TEST_CASE("bad clusters are rejected") {
  CHECK_THROWS_WITH(presets::abci(0), Catch::Contains("at least one device"));
  const auto zero_fanout = [] {
    return make_cluster("x", presets::titan_xp, {level{"node", 0, interconnect{1_us, 1_GBps}}});
  };
  const auto zero_bandwidth = [] {
    return make_cluster("x", presets::titan_xp, {level{"node", 2, interconnect{1_us, {}}}});
  };
  CHECK_THROWS_WITH(zero_fanout(), Catch::Contains("fan-out of at least 1"));
  CHECK_THROWS_WITH(zero_bandwidth(), Catch::Contains("positive link bandwidth"));
}
