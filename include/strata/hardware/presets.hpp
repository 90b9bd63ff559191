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

#include <string_view>

#include "strata/hardware/cluster.hpp"
#include "strata/hardware/device.hpp"
#include "strata/hardware/mesh.hpp"

namespace strata::presets {

using namespace strata::literals;

// ---- devices (gpu_peak_specs.csv; dense tensor-core peaks) ----------------------------------
// The last figure of the V100, A100, H100 and H200 SXM parts is the board power their datasheets
// rate them at (300, 400, 700 and 700 W): the power a limit below it is compared with
// (`power_clock_share`). The other presets leave it unknown.
inline constexpr device v100_sxm2_16gb{"V100-SXM2-16GB",
                                       15.7_TFLOPS,
                                       {},
                                       125_TFLOPS,
                                       {},
                                       {},
                                       16_GiB,
                                       900_GBps,
                                       80,
                                       70,
                                       {},
                                       1530,
                                       6_MiB,
                                       150_GBps,
                                       300};
inline constexpr device v100_sxm2_32gb{"V100-SXM2-32GB",
                                       15.7_TFLOPS,
                                       {},
                                       125_TFLOPS,
                                       {},
                                       {},
                                       32_GiB,
                                       900_GBps,
                                       80,
                                       70,
                                       {},
                                       1530,
                                       6_MiB,
                                       150_GBps,
                                       300};
inline constexpr device a100_sxm4_40gb{
    "A100-SXM4-40GB", 19.5_TFLOPS, 156_TFLOPS, 312_TFLOPS, 312_TFLOPS, {},
    40_GiB,           1555_GBps,   108,        80,         624_TFLOPS, 1410,
    40_MiB,           300_GBps,    400};
inline constexpr device a100_sxm4_80gb{
    "A100-SXM4-80GB", 19.5_TFLOPS, 156_TFLOPS, 312_TFLOPS, 312_TFLOPS, {},
    80_GiB,           2039_GBps,   108,        80,         624_TFLOPS, 1410,
    40_MiB,           300_GBps,    400};
inline constexpr device h100_sxm5_80gb{"H100-SXM5-80GB",
                                       66.9_TFLOPS,
                                       494.7_TFLOPS,
                                       989.4_TFLOPS,
                                       989.4_TFLOPS,
                                       1978.9_TFLOPS,
                                       bytes{85017493504.0},
                                       3350_GBps,
                                       132,
                                       90,
                                       1978.9_TFLOPS,
                                       1980,
                                       50_MiB,
                                       450_GBps,
                                       700};
// H100 memory: 85,017,493,504 B, as CUDA reports it (test/data/h100_device.json).
inline constexpr device h200_sxm_141gb{
    "H200-SXM-141GB", 66.9_TFLOPS, 494.7_TFLOPS, 989_TFLOPS, 989_TFLOPS,
    1979_TFLOPS,      141_GB,      4800_GBps,    132,        90,
    1979_TFLOPS,      1980,        50_MiB,       450_GBps,   700};
// Current accelerators (test/data/gpu_datasheets.csv: dense peaks, memory and bandwidth from the
// vendors' datasheets; SM counts from the architecture documents).
/// NVIDIA L40S (Ada, PCIe Gen4 x16, no NVLink): 48 GB GDDR6 at 864 GB/s, 142 SMs.
inline constexpr device l40s_48gb{
    "L40S-48GB", 91.6_TFLOPS, 183_TFLOPS, 362.05_TFLOPS, 362.05_TFLOPS, 733_TFLOPS, 48_GB,
    864_GBps,    142,         89,         733_TFLOPS,    2520,          96_MiB,     32_GBps};
/// NVIDIA GH200 Grace Hopper superchip, its H100 with 96 GB HBM3 at 4 TB/s (the Hopper peaks).
inline constexpr device gh200_96gb{
    "GH200-96GB", 66.9_TFLOPS, 494.7_TFLOPS, 989.4_TFLOPS,  989.4_TFLOPS, 1978.9_TFLOPS, 96_GB,
    4000_GBps,    132,         90,           1978.9_TFLOPS, 1980,         50_MiB,        450_GBps};
/// NVIDIA B200 as HGX B200 configures it (1,000 W): 180 GB HBM3e at 8 TB/s, 148 SMs.
inline constexpr device b200_180gb{"B200-180GB", 80_TFLOPS, 1100_TFLOPS, 2250_TFLOPS, 2250_TFLOPS,
                                   4500_TFLOPS,  180_GB,    8000_GBps,   148,         100,
                                   4500_TFLOPS,  0,         {},          900_GBps};
/// AMD Instinct MI300X: 192 GB HBM3 at 5.3 TB/s, 304 compute units (FP32 is the matrix rate).
inline constexpr device mi300x_192gb{
    "MI300X-192GB", 163.4_TFLOPS, 653.7_TFLOPS, 1307.4_TFLOPS, 1307.4_TFLOPS,
    2614.9_TFLOPS,  192_GB,       5300_GBps,    304,           0,
    2614.9_TFLOPS,  2100,         32_MiB,       448_GBps};
/// NVIDIA TITAN Xp (Proteus HC1): 12.15 TFLOP/s fp32, no fast fp16 path, 12 GB GDDR5X, 547.7 GB/s.
inline constexpr device titan_xp{"TITAN-Xp", 12.15_TFLOPS, {}, {}, {},   {},    12_GiB,
                                 547.7_GBps, 30,           61, {}, 1582, 3_MiB, 16_GBps};

// ---- consumer, workstation and cloud parts (issue 36; test/data/gpu_presets.csv)
// ----------------- Dense tensor peaks (a datasheet's starred figures, with 2:4 sparsity, halved);
// fp16/bf16 with FP32 accumulate, what mixed-precision training runs (GeForce parts run it at half
// their FP16- accumulate rate). Memory as the datasheet gives it: GiB for GDDR and HBM2e parts
// (binary chips, as V100 and A100 above), GB for HBM3 and HBM3e parts (as H200, B200 and MI300X
// above). Fields: name, fp32, tf32, fp16, bf16, fp8, memory, bandwidth, SMs (CUs on AMD), compute
// capability x 10 (0 on AMD), int8, boost clock (MHz), L2, one direction of the peer links.

/// GeForce RTX 3090 (GA102): NVIDIA Ampere GA102 GPU architecture whitepaper, appendix table
/// (FP16/BF16 tensor with FP32 accumulate 35.6 | 71, TF32 17.8, INT8 142 TOPS, 936 GB/s).
inline constexpr device rtx3090_24gb{
    "RTX-3090-24GB", 35.6_TFLOPS, 17.8_TFLOPS, 35.6_TFLOPS, 35.6_TFLOPS, {},    24_GiB,
    936_GBps,        82,          86,          142_TFLOPS,  1695,        6_MiB, 32_GBps};
/// GeForce RTX 4090 (AD102): NVIDIA Ada GPU architecture whitepaper, appendix table (FP16/BF16
/// with FP32 accumulate 165.2, FP8 330.3, TF32 82.6, INT8 660.6 TOPS; 1008 GB/s, 72 MB L2).
inline constexpr device rtx4090_24gb{
    "RTX-4090-24GB", 82.6_TFLOPS, 82.6_TFLOPS, 165.2_TFLOPS, 165.2_TFLOPS, 330.3_TFLOPS, 24_GiB,
    1008_GBps,       128,         89,          660.6_TFLOPS, 2520,         72_MiB,       32_GBps};
/// GeForce RTX 5090 (GB202): NVIDIA RTX Blackwell GPU architecture whitepaper (FP32 104.8; FP16/
/// BF16 with FP32 accumulate 209.5, FP8 419, INT8 838 TOPS; 32 GB GDDR7 at 1792 GB/s, 96 MB L2;
/// compute capability 12.0; PCIe Gen5 x16).
inline constexpr device rtx5090_32gb{
    "RTX-5090-32GB", 104.8_TFLOPS, 104.8_TFLOPS, 209.5_TFLOPS, 209.5_TFLOPS, 419_TFLOPS, 32_GiB,
    1792_GBps,       170,          120,          838_TFLOPS,   2407,         96_MiB,     64_GBps};
/// NVIDIA A10G (AWS G5, GA102 with 80 SMs): AWS's figures as tabulated by Baseten, "NVIDIA A10 vs
/// A10G for ML model inference" (FP32 35, TF32 35, FP16/BF16 70, INT8 140 TOPS; 24 GB GDDR6 at
/// 600 GB/s), the same in cli99/llm-analysis gpu_configs/a10g-pcie-24gb.json.
inline constexpr device a10g_24gb{"A10G-24GB", 35_TFLOPS, 35_TFLOPS, 70_TFLOPS, 70_TFLOPS,
                                  {},          24_GiB,    600_GBps,  80,        86,
                                  140_TFLOPS,  1710,      6_MiB,     32_GBps};
/// NVIDIA L4 (AD104): NVIDIA L4 Tensor Core GPU datasheet (FP32 30.3; TF32 120*, FP16/BF16 242*,
/// FP8 485*, INT8 485* with sparsity; 24 GB GDDR6 at 300 GB/s; 58 SMs, 48 MB L2 as in the Ada
/// whitepaper).
inline constexpr device l4_24gb{"L4-24GB",    30.3_TFLOPS, 60_TFLOPS, 121_TFLOPS, 121_TFLOPS,
                                242.5_TFLOPS, 24_GiB,      300_GBps,  58,         89,
                                242.5_TFLOPS, 2040,        48_MiB,    32_GBps};
/// NVIDIA RTX A6000 (GA102): NVIDIA Ampere GA102 whitepaper, appendix table (FP32 38.7, FP16/BF16
/// with FP32 accumulate 154.8 | 309.7, TF32 77.4, INT8 309.7 TOPS); RTX A6000 datasheet (48 GB
/// GDDR6 at 768 GB/s, NVLink bridge 112.5 GB/s both directions).
inline constexpr device rtx_a6000_48gb{
    "RTX-A6000-48GB", 38.7_TFLOPS, 77.4_TFLOPS, 154.8_TFLOPS, 154.8_TFLOPS, {},    48_GiB,
    768_GBps,         84,          86,          309.7_TFLOPS, 1800,         6_MiB, 56.25_GBps};
/// NVIDIA RTX 6000 Ada Generation (AD102): NVIDIA Ada GPU architecture whitepaper (FP32 91.1,
/// FP16/BF16 with FP32 accumulate 364.2, FP8 728.5, TF32 182.1, INT8 728.5 TOPS) and the RTX 6000
/// Ada datasheet (48 GB GDDR6 at 960 GB/s; 1,457 TFLOPS FP8 with sparsity).
inline constexpr device rtx6000_ada_48gb{
    "RTX-6000-Ada-48GB", 91.1_TFLOPS, 182.1_TFLOPS, 364.2_TFLOPS, 364.2_TFLOPS,
    728.5_TFLOPS,        48_GiB,      960_GBps,     142,          89,
    728.5_TFLOPS,        2505,        96_MiB,       32_GBps};
/// NVIDIA A100 PCIe 40GB: NVIDIA A100 Tensor Core GPU datasheet (19.5 / 156 / 312 dense, INT8
/// 624 TOPS, 1,555 GB/s); NVLink bridge 600 GB/s both directions.
inline constexpr device a100_pcie_40gb{
    "A100-PCIe-40GB", 19.5_TFLOPS, 156_TFLOPS, 312_TFLOPS, 312_TFLOPS, {},     40_GiB,
    1555_GBps,        108,         80,         624_TFLOPS, 1410,       40_MiB, 300_GBps};
/// NVIDIA A100 PCIe 80GB: NVIDIA A100 datasheet (the 80GB PCIe column: 1,935 GB/s).
inline constexpr device a100_pcie_80gb{
    "A100-PCIe-80GB", 19.5_TFLOPS, 156_TFLOPS, 312_TFLOPS, 312_TFLOPS, {},     80_GiB,
    1935_GBps,        108,         80,         624_TFLOPS, 1410,       40_MiB, 300_GBps};
/// NVIDIA H100 PCIe: NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column (FP32 51; TF32 756*,
/// FP16/BF16 1,513*, FP8 3,026*, INT8 3,026* with sparsity; 80 GB HBM2e at 2 TB/s; NVLink bridge
/// 600 GB/s); 114 SMs (Hopper architecture whitepaper).
inline constexpr device h100_pcie_80gb{
    "H100-PCIe-80GB", 51_TFLOPS, 378_TFLOPS, 756.5_TFLOPS, 756.5_TFLOPS, 1513_TFLOPS, 80_GiB,
    2000_GBps,        114,       90,         1513_TFLOPS,  1755,         50_MiB,      300_GBps};
/// NVIDIA H100 NVL: NVIDIA H100 datasheet, H100 NVL column (FP32 60; TF32 835*, FP16/BF16 1,671*,
/// FP8 3,341*, INT8 3,341* with sparsity; 94 GB HBM3 at 3.9 TB/s; NVLink bridge 600 GB/s).
inline constexpr device h100_nvl_94gb{
    "H100-NVL-94GB", 60_TFLOPS, 417.5_TFLOPS, 835.5_TFLOPS,  835.5_TFLOPS, 1670.5_TFLOPS, 94_GB,
    3900_GBps,       132,       90,           1670.5_TFLOPS, 1785,         50_MiB,        300_GBps};
/// NVIDIA H20 (GH100, 78 SMs): NVIDIA's H20 product brief as reported (FP32 44, TF32 74, FP16/
/// BF16 148, FP8 296, INT8 296 dense; 96 GB HBM3 at 4.0 TB/s, 60 MB L2; NVLink 900 GB/s both
/// directions); boost clock not published.
inline constexpr device h20_96gb{"H20-96GB", 44_TFLOPS, 74_TFLOPS, 148_TFLOPS, 148_TFLOPS,
                                 296_TFLOPS, 96_GB,     4000_GBps, 78,         90,
                                 296_TFLOPS, 0,         60_MiB,    450_GBps};
/// NVIDIA GB200 (one Blackwell GPU of a GB200 superchip): NVIDIA GB200 NVL72 datasheet per GPU
/// (FP16/BF16 5 PF*, FP8 10 PF*, INT8 10 POPS*, TF32 2.5 PF* with sparsity, for 72 GPUs: 180 PF
/// dense BF16; 13.4 TB HBM3e = 186 GB and 576 TB/s = 8 TB/s per GPU; NVLink 5 1.8 TB/s both
/// directions). FP32 is not on the sheet: twice its FP64 (3,240 TF / 72 = 45), B200's ratio (our
/// derivation). 148 SMs as B200.
inline constexpr device gb200_186gb{"GB200-186GB", 90_TFLOPS, 1250_TFLOPS, 2500_TFLOPS, 2500_TFLOPS,
                                    5000_TFLOPS,   186_GB,    8000_GBps,   148,         100,
                                    5000_TFLOPS,   0,         {},          900_GBps};
/// AMD Instinct MI250X, one of its two GCDs (what a process sees: ROCm lists each GCD as a device):
/// AMD Instinct MI250X datasheet halved (128 GB HBM2e at 3.2768 TB/s, 220 CUs, FP32 matrix 95.7,
/// FP16/BF16 383, INT8 383 TOPS; no TF32, no FP8); 8 MB L2 per GCD (CDNA 2 white paper); the two
/// GCDs joined by Infinity Fabric at 200 GB/s each way.
inline constexpr device mi250x_gcd_64gb{
    "MI250X-GCD-64GB", 47.85_TFLOPS, {}, 191.5_TFLOPS, 191.5_TFLOPS, {},    64_GiB,
    1638.4_GBps,       110,          0,  191.5_TFLOPS, 1700,         8_MiB, 200_GBps};
/// AMD Instinct MI325X: AMD Instinct MI325X datasheet (256 GB HBM3E at 6 TB/s, 304 CUs; FP32
/// matrix 163.4, TF32 653.7, FP16/BF16 1,307.4, FP8 2,614.9, INT8 2,614.9 dense; 2100 MHz; 7
/// Infinity Fabric links, 448 GB/s each way as the MI300X platform).
inline constexpr device mi325x_256gb{
    "MI325X-256GB", 163.4_TFLOPS, 653.7_TFLOPS, 1307.4_TFLOPS, 1307.4_TFLOPS,
    2614.9_TFLOPS,  256_GB,       6000_GBps,    304,           0,
    2614.9_TFLOPS,  2100,         32_MiB,       448_GBps};

/// A device scenarios can name (`"device": "rtx4090"`), and where its figures come from.
struct named_device {
  std::string_view key;     ///< the name scenarios use
  const device* dev;        ///< the preset
  std::string_view source;  ///< the datasheet its figures come from
};

/// Every device preset, in the order `strata --list-gpus` prints them.
inline constexpr named_device device_catalogue[] = {
    {"v100-16gb", &v100_sxm2_16gb, "NVIDIA V100 datasheet / Volta whitepaper"},
    {"v100-32gb", &v100_sxm2_32gb, "NVIDIA V100 datasheet / Volta whitepaper"},
    {"a100-40gb", &a100_sxm4_40gb, "NVIDIA A100 datasheet (SXM4 40GB)"},
    {"a100-80gb", &a100_sxm4_80gb, "NVIDIA A100 datasheet (SXM4 80GB)"},
    {"a100-pcie-40gb", &a100_pcie_40gb, "NVIDIA A100 datasheet (PCIe 40GB)"},
    {"a100-pcie-80gb", &a100_pcie_80gb, "NVIDIA A100 datasheet (80GB PCIe)"},
    {"h100", &h100_sxm5_80gb, "NVIDIA H100 datasheet (SXM5); memory as CUDA reports it"},
    {"h100-pcie", &h100_pcie_80gb, "NVIDIA H100 datasheet (PCIe)"},
    {"h100-nvl", &h100_nvl_94gb, "NVIDIA H100 datasheet (NVL)"},
    {"h20", &h20_96gb, "NVIDIA H20 product brief (as reported)"},
    {"h200", &h200_sxm_141gb, "NVIDIA H200 datasheet (SXM)"},
    {"gh200", &gh200_96gb, "NVIDIA GH200 Grace Hopper superchip datasheet (96 GB HBM3)"},
    {"b200", &b200_180gb, "NVIDIA HGX B200 datasheet (1,000 W)"},
    {"gb200", &gb200_186gb, "NVIDIA GB200 NVL72 datasheet, per GPU"},
    {"l4", &l4_24gb, "NVIDIA L4 datasheet"},
    {"l40s", &l40s_48gb, "NVIDIA L40S datasheet"},
    {"a10g", &a10g_24gb, "AWS A10G figures (Baseten, A10 vs A10G)"},
    {"rtx3090", &rtx3090_24gb, "NVIDIA Ampere GA102 whitepaper"},
    {"rtx4090", &rtx4090_24gb, "NVIDIA Ada Lovelace architecture whitepaper"},
    {"rtx5090", &rtx5090_32gb, "NVIDIA RTX Blackwell architecture whitepaper"},
    {"rtx-a6000", &rtx_a6000_48gb, "NVIDIA GA102 whitepaper; RTX A6000 datasheet"},
    {"rtx6000-ada", &rtx6000_ada_48gb, "NVIDIA Ada whitepaper; RTX 6000 Ada datasheet"},
    {"mi250x", &mi250x_gcd_64gb, "AMD Instinct MI250X datasheet, one of two GCDs"},
    {"mi300x", &mi300x_192gb, "AMD Instinct MI300X datasheet"},
    {"mi325x", &mi325x_256gb, "AMD Instinct MI325X datasheet"},
    {"titan-xp", &titan_xp, "NVIDIA TITAN Xp specifications (Proteus HC1)"},
};

/// The preset scenarios call `key` (`nullptr` when there is none).
[[nodiscard]] constexpr const named_device* find_device(std::string_view key) {
  for (const named_device& d : device_catalogue)
    if (d.key == key) return &d;
  return nullptr;
}

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
