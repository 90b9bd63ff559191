#pragma once
/// @file hardware/presets.hpp
/// @brief Devices and clusters from the seed papers and from current DGX systems.
///
/// HBM sizes are binary (a "16 GB" V100 holds 16 GiB); H200's 141 GB is decimal.
/// Device peaks are the dense figures of `test/data/gpu_peak_specs.csv` (vendor datasheets).
/// Where a paper leaves a number out, the assumption is written next to it.
/// @code
/// constexpr auto c = strata::presets::abci(64);   // 16 ABCI nodes, 4 x V100 each
/// static_assert(c.devices() == 64);
/// @endcode

#include "strata/hardware/cluster.hpp"
#include "strata/hardware/device.hpp"
#include "strata/hardware/mesh.hpp"

namespace strata::presets {

using namespace strata::literals;

// ---- devices (gpu_peak_specs.csv; dense tensor-core peaks) ----------------------------------
inline constexpr device v100_sxm2_16gb{"V100-SXM2-16GB", 15.7_TFLOPS, {}, 125_TFLOPS, {}, {},
                                       16_GiB,           900_GBps,    80, 70};
inline constexpr device v100_sxm2_32gb{"V100-SXM2-32GB", 15.7_TFLOPS, {}, 125_TFLOPS, {}, {},
                                       32_GiB,           900_GBps,    80, 70};
inline constexpr device a100_sxm4_40gb{
    "A100-SXM4-40GB", 19.5_TFLOPS, 156_TFLOPS, 312_TFLOPS, 312_TFLOPS, {},
    40_GiB,           1555_GBps,   108,        80};
inline constexpr device a100_sxm4_80gb{
    "A100-SXM4-80GB", 19.5_TFLOPS, 156_TFLOPS, 312_TFLOPS, 312_TFLOPS, {},
    80_GiB,           2039_GBps,   108,        80};
inline constexpr device h100_sxm5_80gb{
    "H100-SXM5-80GB", 66.9_TFLOPS,          494.7_TFLOPS, 989.4_TFLOPS, 989.4_TFLOPS,
    1978.9_TFLOPS,    bytes{85017493504.0}, 3350_GBps,    132,          90};
// H100 memory: 85,017,493,504 B, as CUDA reports it (test/data/h100_device.json).
inline constexpr device h200_sxm_141gb{
    "H200-SXM-141GB", 66.9_TFLOPS, 494.7_TFLOPS, 989_TFLOPS, 989_TFLOPS,
    1979_TFLOPS,      141_GB,      4800_GBps,    132,        90};
// Current accelerators (test/data/gpu_datasheets.csv: dense peaks, memory and bandwidth from the
// vendors' datasheets; SM counts from the architecture documents).
/// NVIDIA L40S (Ada, PCIe Gen4 x16, no NVLink): 48 GB GDDR6 at 864 GB/s, 142 SMs.
inline constexpr device l40s_48gb{"L40S-48GB",   91.6_TFLOPS, 183_TFLOPS, 362.05_TFLOPS,
                                  362.05_TFLOPS, 733_TFLOPS,  48_GB,      864_GBps,
                                  142,           89};
/// NVIDIA GH200 Grace Hopper superchip, its H100 with 96 GB HBM3 at 4 TB/s (the Hopper peaks).
inline constexpr device gh200_96gb{
    "GH200-96GB",  66.9_TFLOPS, 494.7_TFLOPS, 989.4_TFLOPS, 989.4_TFLOPS,
    1978.9_TFLOPS, 96_GB,       4000_GBps,    132,          90};
/// NVIDIA B200 as HGX B200 configures it (1,000 W): 180 GB HBM3e at 8 TB/s, 148 SMs.
inline constexpr device b200_180gb{"B200-180GB", 80_TFLOPS, 1100_TFLOPS, 2250_TFLOPS, 2250_TFLOPS,
                                   4500_TFLOPS,  180_GB,    8000_GBps,   148,         100};
/// AMD Instinct MI300X: 192 GB HBM3 at 5.3 TB/s, 304 compute units (FP32 is the matrix rate).
inline constexpr device mi300x_192gb{"MI300X-192GB", 163.4_TFLOPS,  653.7_TFLOPS,
                                     1307.4_TFLOPS,  1307.4_TFLOPS, 2614.9_TFLOPS,
                                     192_GB,         5300_GBps,     304};
/// NVIDIA TITAN Xp (Proteus HC1): 12.15 TFLOP/s fp32, no fast fp16 path, 12 GB GDDR5X, 547.7 GB/s.
inline constexpr device titan_xp{"TITAN-Xp", 12.15_TFLOPS, {},         {}, {},
                                 {},         12_GiB,       547.7_GBps, 30, 61};

namespace detail {
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr void check_devices(int n) {
  if (n < 1) throw plan_error("a cluster preset needs at least one device");
}
}  // namespace detail

/// ABCI as ParaDL §V-A describes it: 4 x V100-16GB per node on NVLink (50 GB/s, 20 us GPU-to-GPU
/// start-up); GPUs reach the InfiniBand HCA through PLX switches over PCIe Gen3 x16 (16 GB/s);
/// inter-node links 12.5 GB/s; 3-level fat tree with 17 nodes per rack, full bisection inside a
/// rack and 1:3 over-subscription between racks; switch latencies leaf 90 ns, spine 400 ns,
/// PLX 110 ns. Sized to hold `gpus` devices (rounded up to whole nodes).
[[nodiscard]] constexpr cluster abci(int gpus) {
  detail::check_devices(gpus);
  const int nodes = detail::ceil_div(gpus, 4);
  const int racks = detail::ceil_div(nodes, 17);
  constexpr seconds startup = 20_us;  // ParaDL §V-A, NVLink start-up; used for every pair
  constexpr seconds plx = 110_ns, leaf = 90_ns, spine = 400_ns;
  // Same node: NVLink, no switch.
  const interconnect in_node{startup, 50_GBps};
  // Same rack: PLX -> leaf -> PLX; bottleneck min(PCIe 16, IB 12.5) = 12.5 GB/s.
  const interconnect in_rack{startup + 2.0 * plx + leaf, 12.5_GBps};
  // Across racks: PLX -> leaf -> spine -> leaf -> PLX.
  const interconnect across{startup + 2.0 * plx + 2.0 * leaf + spine, 12.5_GBps};
  return make_cluster(
      "ABCI", v100_sxm2_16gb,
      {level{"node", 4, in_node, 1.0}, level{"rack", nodes < 17 ? nodes : 17, in_rack, 1.0},
       level{"cluster", racks, across, 3.0}});
}

/// The NVLink of an 8 x V100-SXM2 board (DGX-1 / HGX-1 "hybrid cube-mesh", NVIDIA's DGX-1 V100
/// system architecture white paper): a cube with a GPU at each corner and all twelve edges wired,
/// the diagonals of the two faces {0..3} and {4..7} too, 6 NVLink2 links of 25 GB/s per direction
/// per GPU, so four edges per GPU carry two links (`nvidia-smi topo -m` on DGX-1V: 0-3, 0-4, 1-2,
/// 1-5, 2-3, 4-7, 5-6, 6-7 are NV2, the rest of the cube NV1, 0-5 and the like go through the
/// host, PCIe Gen3 x16). Two GPUs of one pair thus see 25 or 50 GB/s, not the 150 GB/s a ring
/// over the whole board reaches (`ring_bandwidth`).
[[nodiscard]] constexpr mesh dgx1_v100_mesh() {
  mesh m{8, {}, 25_GBps, 16_GBps, 0};
  m.connect(0, 1, 1).connect(0, 2, 1).connect(0, 3, 2).connect(0, 4, 2);
  m.connect(1, 2, 2).connect(1, 3, 1).connect(1, 5, 2);
  m.connect(2, 3, 2).connect(2, 6, 1);
  m.connect(3, 7, 1);
  m.connect(4, 5, 1).connect(4, 6, 1).connect(4, 7, 2);
  m.connect(5, 6, 2).connect(5, 7, 1);
  m.connect(6, 7, 2);
  return m;
}
/// The hybrid cube-mesh as a constant, for `level::links`.
inline constexpr mesh dgx1_v100_nvlink = dgx1_v100_mesh();

/// Proteus Table III HC1: one server, 8 x TITAN Xp on PCIe, two CPU sockets joined by QPI links
/// (§VIII-C). Assumed: each socket's 4 GPUs under one PCIe Gen3 switch (x16, 16 GB/s per
/// direction per GPU), 10 us start-up; traffic between the sockets leaves through that switch's
/// x16 uplink to its root port (16 GB/s per socket and direction), which binds before QPI does:
/// a QPI link at 9.6 GT/s carries 19.2 GB/s per direction (20 lanes, 2 bytes a transfer), and
/// dual-socket Xeon E5 servers join their sockets with two (Intel Xeon E5-2600 v3/v4 datasheets).
/// (Until 2026-11 this preset took 9.6 GT/s for 9.6 GB/s.)
[[nodiscard]] constexpr cluster hc1() {
  return make_cluster("HC1", titan_xp,
                      {level{"socket", 4, interconnect{10_us, 16_GBps}, 1.0, 1, link_kind::pcie},
                       level{"node", 2, interconnect{10_us, 16_GBps}, 1.0}});
}

/// Proteus Table III HC2: 4 nodes x 8 x V100 on NVLink, 100 Gbps InfiniBand.
/// Assumed: V100-SXM2-32GB on the 8-GPU SXM2 board, whose NVLink is the hybrid cube-mesh
/// (`dgx1_v100_nvlink`): 150 GB/s per direction for a ring over the whole node, the channels of
/// its members' links for a smaller group (25 GB/s for GPUs 0 and 1); one 100 Gbps NIC per node.
[[nodiscard]] constexpr cluster hc2() {
  return make_cluster("HC2", v100_sxm2_32gb,
                      {level{"node", 8, interconnect{5_us, 150_GBps}, 1.0, 1, link_kind::nvlink,
                             false, &dgx1_v100_nvlink},
                       level{"cluster", 4, interconnect{10_us, 100_Gbps}, 1.0}});
}

/// Proteus Table III HC3: 2 nodes x 8 x A100 on NVLink, 200 Gbps InfiniBand.
/// Assumed: A100-SXM4-40GB behind NVSwitch (300 GB/s per direction).
[[nodiscard]] constexpr cluster hc3() {
  return make_cluster("HC3", a100_sxm4_40gb,
                      {level{"node", 8, interconnect{5_us, 300_GBps}, 1.0},
                       level{"cluster", 2, interconnect{10_us, 200_Gbps}, 1.0}});
}

/// DGX-1 (V100-16GB): 8 GPUs, 6 NVLink2 links x 25 GB/s per direction; four 100 Gbps EDR HCAs
/// (4 rails). Start-up: 5 us in a node, 10 us across.
[[nodiscard]] constexpr cluster dgx1_v100(int nodes) {
  detail::check_devices(nodes);
  return make_cluster("DGX-1 V100", v100_sxm2_16gb,
                      {level{"node", 8, interconnect{5_us, 150_GBps}, 1.0},
                       level{"cluster", nodes, interconnect{10_us, 100_Gbps}, 1.0, 4}});
}

/// DGX A100 (80GB): NVSwitch, 12 NVLink3 x 25 GB/s per direction; 8 x 200 Gbps HDR (8 rails).
/// Host: PCIe Gen4 x16 per GPU (32 GB/s per direction), DeepSpeed's measured CPU Adam rate
/// (`cpu_adam_rate`), 1 TB of DRAM, 4 x 3.84 TB U.2 NVMe (about 6 GB/s each: our assumption).
[[nodiscard]] constexpr cluster dgx_a100(int nodes) {
  detail::check_devices(nodes);
  cluster c = make_cluster("DGX A100", a100_sxm4_80gb,
                           {level{"node", 8, interconnect{5_us, 300_GBps}, 1.0},
                            level{"cluster", nodes, interconnect{10_us, 200_Gbps}, 1.0, 8}});
  c.host = {32_GBps, cpu_adam_rate, 24_GBps, 1024_GiB};
  return c;
}

/// DGX A100 with the 40 GB A100 (the first DGX A100 and many clouds' 8-GPU nodes).
[[nodiscard]] constexpr cluster dgx_a100_40gb(int nodes) {
  cluster c = dgx_a100(nodes);
  c.name = "DGX A100 40GB";
  c.dev = a100_sxm4_40gb;
  return c;
}

/// DGX H100: NVSwitch (third generation, with NVLink SHARP in-switch reduction), 18 NVLink4 x
/// 25 GB/s per direction; 8 x 400 Gbps NDR (8 rails).
/// Host: PCIe Gen5 x16 per GPU (64 GB/s per direction), DeepSpeed's measured CPU Adam rate
/// (`cpu_adam_rate`), 2 TB of DRAM, 8 x 3.84 TB U.2 NVMe (about 6 GB/s each: our assumption).
[[nodiscard]] constexpr cluster dgx_h100(int nodes) {
  detail::check_devices(nodes);
  cluster c =
      make_cluster("DGX H100", h100_sxm5_80gb,
                   {level{"node", 8, interconnect{5_us, 450_GBps}, 1.0, 1, link_kind::nvlink, true},
                    level{"cluster", nodes, interconnect{10_us, 400_Gbps}, 1.0, 8}});
  c.host = {64_GBps, cpu_adam_rate, 48_GBps, 2048_GiB};
  return c;
}

/// DGX H200: the DGX H100 system with H200 GPUs (same NVLink4 NVSwitch and 8 x 400 Gbps NDR).
[[nodiscard]] constexpr cluster dgx_h200(int nodes) {
  cluster c = dgx_h100(nodes);
  c.name = "DGX H200";
  c.dev = h200_sxm_141gb;
  return c;
}

/// DGX B200: NVSwitch (with NVLink SHARP), 18 NVLink5 links x 50 GB/s per direction (900 GB/s); 8 x
/// 400 Gbps ConnectX-7 (8 rails). Start-ups as DGX H100 (our assumption).
[[nodiscard]] constexpr cluster dgx_b200(int nodes) {
  detail::check_devices(nodes);
  return make_cluster(
      "DGX B200", b200_180gb,
      {level{"node", 8, interconnect{5_us, 900_GBps}, 1.0, 1, link_kind::nvlink, true},
       level{"cluster", nodes, interconnect{10_us, 400_Gbps}, 1.0, 8}});
}

/// An 8 x MI300X platform: a full Infinity Fabric mesh, 7 links of 64 GB/s per direction per
/// GPU (896 GB/s bidirectional aggregate, which RCCL's concurrent rings can drive at once);
/// 8 x 400 Gbps NICs (8 rails). Start-ups 8 us in a node (our assumption), 10 us across.
[[nodiscard]] constexpr cluster mi300x_platform(int nodes) {
  detail::check_devices(nodes);
  return make_cluster("MI300X x8", mi300x_192gb,
                      {level{"node", 8, interconnect{8_us, 448_GBps}, 1.0},
                       level{"cluster", nodes, interconnect{10_us, 400_Gbps}, 1.0, 8}});
}

/// A server of 8 L40S on PCIe Gen4 x16 (32 GB/s per direction; peer traffic crosses the host's
/// PCIe switches) with 400 Gbps of network per node (as cloud 8 x L40S instances offer), taken as
/// 4 x 100 Gbps rails. Start-ups 10 us in a node, 15 us across (our assumptions).
[[nodiscard]] constexpr cluster l40s_server(int nodes) {
  detail::check_devices(nodes);
  return make_cluster("8 x L40S", l40s_48gb,
                      {level{"node", 8, interconnect{10_us, 32_GBps}, 1.0, 1, link_kind::pcie},
                       level{"cluster", nodes, interconnect{15_us, 100_Gbps}, 1.0, 4}});
}

/// Nodes of four GH200 superchips (as in HPE Cray EX254n blades): every GPU pair joined by six
/// NVLink4 links (150 GB/s per direction), one 200 Gbps Slingshot NIC per GPU (4 rails).
[[nodiscard]] constexpr cluster gh200_quad(int nodes) {
  detail::check_devices(nodes);
  return make_cluster("4 x GH200", gh200_96gb,
                      {level{"node", 4, interconnect{5_us, 150_GBps}, 1.0},
                       level{"cluster", nodes, interconnect{10_us, 200_Gbps}, 1.0, 4}});
}

/// Lin et al. Fig. 8(a), 4 x Quadro GV100: two NVLink-bridged pairs (GPU 0-1, 2-3; 4 links of
/// 25 GB/s each way, "NV4"), every other pair over PCIe Gen3 x16 through the host (16 GB/s).
/// The bridge layout is our reading of the figure, whose drawing the text does not keep.
[[nodiscard]] constexpr mesh lin_4x_gv100_mesh() {
  mesh m{4, {}, 25_GBps, 16_GBps, 0};
  m.connect(0, 1, 4).connect(2, 3, 4);
  return m;
}

/// Lin et al. Fig. 8(b), 4 x A100 (GCP a2-highgpu-4g): every pair "NV12" through NVSwitch, so
/// each GPU drives 12 links of 25 GB/s at once, whichever peers they reach.
[[nodiscard]] constexpr mesh lin_4x_a100_mesh() {
  mesh m{4, {}, 25_GBps, 16_GBps, 12};
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) m.connect(i, j, 12);
  return m;
}

/// The GV100 platform of Lin et al. as a cluster: one node whose ring bandwidth is the channel
/// sum of its mesh. Start-up 8 us (our assumption).
[[nodiscard]] constexpr cluster lin_4x_gv100() {
  constexpr device gv100{
      "Quadro-GV100-32GB", 16.7_TFLOPS, {}, 118.5_TFLOPS, {}, {}, 32_GiB, 870_GBps, 80, 70};
  return make_cluster("Lin 4xGV100", gv100,
                      {level{"node", 4, interconnect{8_us, ring_bandwidth(lin_4x_gv100_mesh())}}});
}

/// The A100 platform of Lin et al. (A100-SXM4-40GB) as a cluster.
[[nodiscard]] constexpr cluster lin_4x_a100() {
  return make_cluster("Lin 4xA100", a100_sxm4_40gb,
                      {level{"node", 4, interconnect{8_us, ring_bandwidth(lin_4x_a100_mesh())}}});
}

/// Yan et al. §6.1: a dual-socket Xeon E5-2450 server (16 cores at 2.1 GHz, 268.8 GFLOP/s of
/// SIMD, 64 GB, three DDR3-1600 channels per socket = 76.8 GB/s).
inline constexpr device xeon_e5_2450_server{
    "2x Xeon E5-2450", 268.8_GFLOPS, {}, {}, {}, {}, 64_GiB, 76.8_GBps, 0};

/// Yan et al. §6.1's cluster: `machines` such servers (20 in the paper), one 10 Gbps Ethernet NIC
/// each; 50 us per message (our assumption for Windows TCP).
[[nodiscard]] constexpr cluster yan_cluster(int machines = 20) {
  detail::check_devices(machines);
  return make_cluster(
      "Yan E5-2450", xeon_e5_2450_server,
      {level{"cluster", machines, interconnect{50_us, 10_Gbps}, 1.0, 1, link_kind::network}});
}

}  // namespace strata::presets
