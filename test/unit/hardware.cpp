#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <strata/strata.hpp>
#include <string>
#include <vector>

namespace unit_hardware {

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
  // HC1: GPUs 0 and 4 sit on different sockets; their path is bound by the socket switch's x16
  // uplink (16 GB/s), not by QPI (19.2 GB/s per link and direction at 9.6 GT/s)
  CHECK(presets::hc1().common_level(0, 4) == 1);
  CHECK(presets::hc1().between(0, 4).bandwidth.count() == Approx(16e9));
  // HC2's NVLink is the cube-mesh, a node's children
  CHECK(presets::hc2().levels[0].links == &presets::dgx1_v100_nvlink);
  CHECK_THROWS_WITH(make_cluster("x", presets::titan_xp,
                                 {level{"node", 4, interconnect{5_us, 16_GBps}, 1.0, 1,
                                        link_kind::nvlink, false, &presets::dgx1_v100_nvlink}}),
                    Catch::Contains("link mesh must join exactly its fan-out"));
}

TEST_CASE("current accelerators match gpu_datasheets.csv row by row") {
  std::ifstream in(STRATA_TEST_DATA_DIR "/gpu_datasheets.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);  // header
  const device* devices[] = {&presets::l40s_48gb, &presets::gh200_96gb, &presets::b200_180gb,
                             &presets::mi300x_192gb};
  int row = 0;
  while (std::getline(in, line) && row < 4) {
    std::stringstream ss(line);
    std::vector<double> v;
    std::string cell;
    std::getline(ss, cell, ',');  // name
    for (int i = 0; i < 7; ++i) {
      std::getline(ss, cell, ',');
      v.push_back(std::stod(cell));
    }
    const device& d = *devices[row++];
    INFO(d.name);
    CHECK(d.memory.count() == Approx(v[0] * 1e9));
    CHECK(d.memory_bandwidth.count() == Approx(v[1] * 1e9));
    CHECK(d.peak(dtype::fp32).count() == Approx(v[2] * 1e12));
    CHECK(d.peak(dtype::tf32).count() == Approx(v[3] * 1e12));
    CHECK(d.peak(dtype::bf16).count() == Approx(v[4] * 1e12));
    CHECK(d.peak(dtype::fp8).count() == Approx(v[5] * 1e12));
    CHECK(d.sms == static_cast<int>(v[6]));
  }
  CHECK(row == 4);
  // the node presets: 8 GPUs a node (4 for GH200), their links per direction
  CHECK(presets::dgx_b200(2).devices() == 16);
  CHECK(presets::dgx_b200(1).between(0, 7).bandwidth.count() == Approx(900e9));
  CHECK(presets::dgx_h200(1).dev.memory.count() == Approx(141e9));
  CHECK(presets::mi300x_platform(1).between(0, 1).bandwidth.count() == Approx(7 * 64e9));
  CHECK(presets::l40s_server(2).between(0, 8).bandwidth.count() == Approx(100e9 / 8));
  CHECK(presets::gh200_quad(4).devices() == 16);
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

TEST_CASE("NVLink meshes: ring bandwidth is the sum over NCCL-style channels") {
  // Lin Fig. 8(b): 4 x A100 behind NVSwitch, 12 links x 25 GB/s per GPU: the channels add up to
  // the GPU's 300 GB/s, however many rings carry it.
  static_assert(ring_bandwidth(presets::lin_4x_a100_mesh()) == byte_rate{300e9});
  // Lin Fig. 8(a): bridged pairs 0-1 and 2-3 (NV4, 100 GB/s), the rest through PCIe (16 GB/s).
  // Every 4-GPU ring crosses PCIe twice, leaving two GPUs' host links each time: two channels of
  // 16 GB/s. Inside a bridged pair the ring runs at the bridge's 100 GB/s.
  CHECK(ring_bandwidth(presets::lin_4x_gv100_mesh()).count() == Approx(32e9));
  CHECK(ring_bandwidth(presets::lin_4x_gv100_mesh(), 2).count() == Approx(100e9));
  CHECK(presets::lin_4x_gv100().levels[0].pair.bandwidth.count() == Approx(32e9));
  // a plain ring of single links: one channel at the link rate... and the reverse ring uses the
  // opposite direction of the same full-duplex links: a second channel.
  mesh ring4{4, {}, 25_GBps, 0_GBps, 0};
  ring4.connect(0, 1, 1).connect(1, 2, 1).connect(2, 3, 1).connect(3, 0, 1);
  CHECK(ring_bandwidth(ring4).count() == Approx(50e9));
  // DGX-1 V100's hybrid cube-mesh (6 links per GPU): the group's own links only. 0-1 is one
  // link, used both ways by the 2-GPU ring: 25 GB/s; 2-3 two links: 50 GB/s. {0, 1, 2, 3}
  // (links 0-1 1, 0-2 1, 0-3 2, 1-2 2, 1-3 1, 2-3 2): rings 0-1-2-3 and 0-2-1-3, each both
  // ways, 25 GB/s apiece: 100 GB/s, all 4 links GPU 0 has inside the group. 0 and 5 share no
  // link: one channel over PCIe through the host, 16 GB/s.
  const mesh& cube = presets::dgx1_v100_nvlink;
  for (int g = 0; g < 8; ++g) {
    int links = 0;
    for (int j = 0; j < 8; ++j)
      links += cube.links[static_cast<std::size_t>(g)][static_cast<std::size_t>(j)];
    CHECK(links == 6);
  }
  constexpr int pair01[] = {0, 1}, pair23[] = {2, 3}, quad[] = {0, 1, 2, 3}, far[] = {0, 5};
  CHECK(ring_bandwidth(submesh(cube, pair01, 2)).count() == Approx(25e9));
  CHECK(ring_bandwidth(submesh(cube, pair23, 2)).count() == Approx(50e9));
  CHECK(ring_bandwidth(submesh(cube, quad, 4)).count() == Approx(100e9));
  CHECK(ring_bandwidth(submesh(cube, far, 2)).count() == Approx(16e9));
  constexpr int twice[] = {1, 1};
  CHECK_THROWS_WITH(submesh(cube, twice, 2), Catch::Contains("one GPU twice"));
  mesh bad{2, {}, 25_GBps, 16_GBps, 0};
  CHECK_THROWS_WITH(bad.connect(0, 0, 1), Catch::Contains("two different GPUs"));
}

}  // namespace unit_hardware
