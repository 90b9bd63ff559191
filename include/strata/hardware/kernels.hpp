#pragma once
/// @file hardware/kernels.hpp
/// @brief Time of one kernel on one device: GEMMs with tile and wave quantization, memory-bound
/// kernels and flash attention, each above a launch-bound floor.
///
/// GEMM C = A(M x K) B(K x N) (cuBLAS picks the fastest of its tile shapes, and so do we): with
/// tiles of tm x tn, ceil(M/tm) ceil(N/tn) tiles run in waves over the SMs; a wave costs one
/// tile's 2 tm tn K FLOPs at the SM's share of the peak, scaled by an efficiency that grows with
/// the tile area (operand reuse: e x area / (area + half)), plus a fixed per-wave overhead. A
/// partly filled last wave costs a full one (wave quantization). When there are fewer tiles than
/// SMs the K loop is split over the idle SMs and a reduction pass adds the partial tiles (split-K,
/// as cuBLAS and cuDNN's weight-gradient kernels do). The kernel also cannot beat its
/// bytes ((MK + KN + MN) x element) over the memory bandwidth. Small kernels are launch-bound:
/// the work w blends into a floor f as (f^4 + w^4)^(1/4); TF32 kernels add it, f + w (`blend`).
/// @code
/// constexpr auto g = strata::datasheet_profile(strata::presets::h100_sxm5_80gb, 132).bf16;
/// const double t = g.time(4096, 4096, 4096);
/// @endcode

#include <array>
#include <limits>
#include <string_view>

#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/hardware/device.hpp"

namespace strata {

namespace detail {
constexpr double ceil_ratio(double a, double b) { return ceil_of(a / b); }
/// The side lengths of cuBLAS's tiles (powers of two, so m * (1 / side) is m / side exactly).
inline constexpr std::array<double, 3> gemm_tile_sides{256, 128, 64};
/// A tile shape cuBLAS picks from: sides tm x tn, as indices into `gemm_tile_sides`, and its
/// area.
struct gemm_tile {
  std::size_t side_m, side_n;
  double area;
  static constexpr std::size_t side_index(int side) {
    return side == 256 ? 0 : side == 128 ? 1 : 2;
  }
  constexpr gemm_tile(int tm, int tn)
      : side_m(side_index(tm)), side_n(side_index(tn)), area(static_cast<double>(tm) * tn) {}
};
inline constexpr std::array<gemm_tile, 8> gemm_tiles{
    {{256, 128}, {128, 256}, {256, 64}, {64, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};
/// The distinct areas of `gemm_tiles` (in its order) and, per tile, which of them it has: tiles
/// of one area cost the same per wave, so without split-K only the fewest of them can be fastest.
struct gemm_area_groups {
  std::array<double, gemm_tiles.size()> area{};
  std::size_t count = 0;
  std::array<std::size_t, gemm_tiles.size()> of{};
};
inline constexpr gemm_area_groups gemm_tile_areas = [] {
  gemm_area_groups g;
  for (std::size_t t = 0; t < gemm_tiles.size(); ++t) {
    std::size_t a = 0;
    while (a < g.count && g.area[a] != gemm_tiles[t].area) ++a;
    if (a == g.count) g.area[g.count++] = gemm_tiles[t].area;
    g.of[t] = a;
  }
  return g;
}();
/// (f^4 + w^4)^(1/4): the floor for tiny kernels, the work for large ones.
constexpr double soft_floor(double floor, double work) {
  if (floor <= 0) return work;
  const double a = floor * floor, b = work * work;
  const double s = a * a + b * b;
  return strata::detail::sqrt(strata::detail::sqrt(s));
}
}  // namespace detail

/// GEMM model for one data type.
struct gemm_model {
  double peak = 0;        ///< dense FLOP/s
  double efficiency = 1;  ///< e: fraction of the peak a large tile sustains
  double half_area = 0;   ///< tile area at which half of e is reached
  double floor = 0;       ///< launch-bound floor (s)
  double wave = 0;        ///< overhead per wave (s)
  double bandwidth = 1;   ///< B/s
  double element = 2;     ///< bytes per element
  int sms = 1;            ///< streaming multiprocessors
  /// how the work w meets the floor f: (f^p + w^p)^(1/p). 4 (a soft maximum) for bf16; 1 (the
  /// launch latency adds) for TF32, whose held-out error it halves on clean measurements
  double blend = 4;

  static constexpr std::array<detail::gemm_tile, 8> tiles = detail::gemm_tiles;
  static constexpr double split_k_chunk = 512;  ///< the shortest K slice a split-K kernel takes

  [[nodiscard]] constexpr double time(double m, double n, double k) const {
    return time(m, n, k, (m * k + k * n + m * n) * element);
  }
  /// The same with the bytes the kernel must move given: an implicit-GEMM convolution reads its
  /// input once, not the k^2 times larger unfolded matrix.
  [[nodiscard]] constexpr double time(double m, double n, double k, double moved) const {
    if (!(m > 0 && n > 0 && k > 0)) throw plan_error("GEMM dimensions must be positive");
    // The per-SM rate's division is taken once: 2 area k / (R area / (area + a)) = 2 k (area + a) /
    // R.
    const double twice_per_rate = 2.0 / (peak / sms * efficiency), sm_count = sms;
    // tiles along m and along n, once per side length
    std::array<double, detail::gemm_tile_sides.size()> along_m{}, along_n{};
    for (std::size_t i = 0; i < along_m.size(); ++i) {
      along_m[i] = detail::ceil_of(m * (1.0 / detail::gemm_tile_sides[i]));
      along_n[i] = detail::ceil_of(n * (1.0 / detail::gemm_tile_sides[i]));
    }
    std::array<double, tiles.size()> count{};
    for (std::size_t t = 0; t < tiles.size(); ++t)
      count[t] = along_m[tiles[t].side_m] * along_n[tiles[t].side_n];
    double best = std::numeric_limits<double>::infinity();
    // Every shape has at least as many tiles as the 256 x 128 ones (the first two): with that
    // many, no tile splits K and a wave is one tile's K loop (the same arithmetic as below).
    if (count[0] >= sm_count && count[1] >= sm_count) {
      // A wave costs the same for tiles of one area: per area, the fewest tiles (ceil is
      // monotone, so the fewest waves) give that area's best; 4 waves counted rather than 8.
      constexpr const detail::gemm_area_groups& areas = detail::gemm_tile_areas;
      std::array<double, tiles.size()> fewest{};
      fewest.fill(std::numeric_limits<double>::infinity());
      for (std::size_t t = 0; t < tiles.size(); ++t) {
        double& f = fewest[areas.of[t]];
        f = count[t] < f ? count[t] : f;
      }
      for (std::size_t a = 0; a < areas.count; ++a) {
        const double w = detail::ceil_ratio(fewest[a], sm_count) *
                         (k * (areas.area[a] + half_area) * twice_per_rate + wave);
        best = w < best ? w : best;
      }
    } else {
      for (std::size_t t = 0; t < tiles.size(); ++t) {
        // Split-K: too few output tiles to fill the SMs split the K loop into slices of at
        // least split_k_chunk, and a second pass sums the fp32 partial tiles.
        double split = 1;
        if (count[t] < sm_count) {
          const double by_sms = static_cast<double>(static_cast<long long>(sm_count / count[t]));
          const double by_k = detail::ceil_of(k * (1.0 / split_k_chunk));
          split = by_sms < by_k ? by_sms : by_k;
          if (split < 1) split = 1;
        }
        const double waves = detail::ceil_ratio(count[t] * split, sm_count);
        const double slice = split > 1 ? k / split : k;
        double w = waves * (slice * (tiles[t].area + half_area) * twice_per_rate + wave);
        if (split > 1) w += split * m * n * 4 / bandwidth + wave;
        best = w < best ? w : best;
      }
    }
    const double memory = moved / bandwidth;
    const double w = best > memory ? best : memory;
    if (blend == 4) return detail::soft_floor(floor, w);
    if (blend == 1) return floor + w;
    return strata::detail::pow(strata::detail::pow(floor, blend) + strata::detail::pow(w, blend),
                               1.0 / blend);
  }
  [[nodiscard]] constexpr double flops(double m, double n, double k) const { return 2 * m * n * k; }
};

/// A memory-bound kernel: bytes at an achieved bandwidth, above a floor.
struct stream_model {
  double bandwidth = 1;  ///< achieved B/s for large transfers
  double floor = 0;      ///< s
  [[nodiscard]] constexpr double time(double size) const {
    if (!(size >= 0)) throw plan_error("a transfer size must not be negative");
    return detail::soft_floor(floor, size / bandwidth);
  }
};

/// A 3 x 3 stride-1 convolution pass as Winograd's minimal filtering sees it (Lavin and Gray,
/// "Fast Algorithms for Convolutional Neural Networks", CVPR 2016): F(m x m, 3 x 3) cuts the output
/// into m x m tiles and turns the pass into (m + 2)^2 independent GEMMs over them. `tiles2` and
/// `tiles4` count the 2 x 2 and 4 x 4 tiles over all images, `in` channels are reduced and `out`
/// produced; the filter gradient (`filter`) reduces over the tiles instead and produces in x out.
struct winograd_pass {
  double tiles2 = 0, tiles4 = 0;  ///< 0: a pass Winograd cannot run
  double in = 0, out = 0;
  bool filter = false;
};

/// The faster of cuDNN's two Winograd algorithms for a pass whose own tensors (input, filter,
/// output, once each) are `traffic` bytes, on the CUDA cores' GEMM model `g`:
/// - F(2 x 2, 3 x 3) in one fused kernel (cuDNN's WINOGRAD; forward and data gradient): 16 GEMMs
///   of tiles2 x out x in moving no more than the implicit GEMM;
/// - F(4 x 4, 3 x 3) with its transforms as kernels of their own (WINOGRAD_NONFUSED; also the
///   filter gradient): 36 GEMMs of tiles4 x out x in (in x out x tiles4 for the filter), plus the
///   transformed input, filter and output written and read once each at the `transform` rate.
/// The (m + 2)^2 GEMMs of a pass run batched, priced as one GEMM of stacked rows. Per output,
/// F(2, 3) multiplies 16/36 and F(4, 3) 36/144 as often as the direct convolution.
[[nodiscard]] constexpr double winograd_time(const gemm_model& g, const stream_model& transform,
                                             const winograd_pass& w, double traffic) {
  const double transformed = 36 * g.element * (w.tiles4 * (w.in + w.out) + w.in * w.out);
  const double nonfused =
      (w.filter ? g.time(36 * w.in, w.out, w.tiles4) : g.time(36 * w.tiles4, w.out, w.in)) +
      transform.time(traffic + transformed);
  if (w.filter) return nonfused;
  const double fused = g.time(16 * w.tiles2, w.out, w.in, traffic);
  return fused < nonfused ? fused : nonfused;
}

/// Flash attention (causal): 4 b h s^2 d / 2 FLOPs forward, 3.5 times that forward + backward
/// (the backward recomputes the scores). Small problems run below the peak rate; the achieved
/// rate R F / (F + F0) makes the time (F + F0) / R, above a floor.
struct attention_model {
  double forward_rate = 1;   ///< R, FLOP/s forward
  double training_rate = 1;  ///< R, FLOP/s forward + backward
  double ramp = 0;           ///< F0, FLOPs
  double floor = 0;
  [[nodiscard]] static constexpr double forward_flops(double b, double h, double s, double d) {
    return 2.0 * b * h * s * s * d;  // Q K^T and P V, half of them masked
  }
  [[nodiscard]] constexpr double forward(double b, double h, double s, double d) const {
    return detail::soft_floor(floor, (forward_flops(b, h, s, d) + ramp) / forward_rate);
  }
  [[nodiscard]] constexpr double forward_backward(double b, double h, double s, double d) const {
    return detail::soft_floor(floor, (3.5 * forward_flops(b, h, s, d) + ramp) / training_rate);
  }
};

/// What an eager framework adds around the kernels of a training step (PyTorch eager, measured on
/// the H100 machine of `test/data/h100_steps_*.csv`): host time to dispatch each kernel (the
/// operator, autograd and autocast bookkeeping, the launch itself), extra host time per
/// checkpointed block (`torch.utils.checkpoint` re-entering the block's forward), host time per
/// parameter tensor in the optimizer step and `zero_grad`, and the GPU floor of a kernel queued
/// behind others. Microbenchmarks time kernels launched one at a time, so their floors include
/// the launch latency; inside a step that latency overlaps the previous kernel and the floor is
/// `kernel_floor` instead. All zero: no host model (kernels back to back, isolated floors).
struct dispatch_model {
  double per_kernel = 0;      ///< s of host time per kernel of the lowering
  double per_checkpoint = 0;  ///< s of host time per recomputed (checkpointed) block
  double per_tensor = 0;      ///< s of host time per parameter tensor in the optimizer step
  double kernel_floor = 0;    ///< s, a queued kernel's floor (0: keep the isolated floors)
};

/// The dispatch costs fitted on the H100 steps (`tools/profiles/h100_sxm.json`, rounded): PyTorch
/// 2.11 eager on that machine's CPU. Datasheet profiles use them too: they belong to the framework
/// and the host, not to the GPU.
inline constexpr dispatch_model pytorch_eager_dispatch{48.6e-6, 1.48e-3, 0.8e-6, 1e-6};

/// Everything strata needs to time kernels on a device.
struct device_profile {
  device dev;
  int sms = 1;
  gemm_model bf16;    ///< also fp16
  gemm_model fp32;    ///< fp32 inputs, TF32 allowed
  stream_model copy;  ///< device-to-device
  stream_model host_to_device;
  stream_model device_to_host;
  stream_model gelu;  ///< also other element-wise kernels (residual adds)
  stream_model dropout;
  stream_model layer_norm;
  stream_model softmax;
  attention_model attention;       ///< bf16/fp16 (flash attention)
  attention_model attention_fp32;  ///< fp32 inputs (PyTorch's memory-efficient kernel)
  dispatch_model dispatch;
  /// fp32 GEMMs with TF32 off: IEEE fp32 on the CUDA cores, PyTorch's default for matmuls
  /// (`torch.backends.cuda.matmul.allow_tf32 = False`); `training::tf32` = false selects it
  gemm_model fp32_ieee{};
  /// cuDNN's autotuner may run 3 x 3 stride-1 convolutions on the CUDA cores as Winograd
  /// transforms (`winograd_time`) where they are faster than the implicit GEMM: set by
  /// `strata calibrate` when the device's measured convolutions show cuDNN choosing them
  /// (DeepBench: 28 of 32 such fp32 convolutions on a V100, 24 of 32 on a TITAN Xp)
  bool winograd = false;

  [[nodiscard]] constexpr const gemm_model& gemm(dtype t) const {
    return t == dtype::fp32 || t == dtype::tf32 ? fp32 : bf16;
  }

  /// The profile as fp32 matmuls run: with TF32 allowed, itself; without, `fp32_ieee` takes
  /// `fp32`'s place (`training::tf32`).
  [[nodiscard]] constexpr device_profile with_tf32(bool allowed) const {
    device_profile p = *this;
    p.allow_tf32(allowed);
    return p;
  }
  /// The same in place: fp32 GEMMs at the IEEE rate unless TF32 is `allowed`.
  constexpr void allow_tf32(bool allowed) {
    if (!allowed) fp32 = fp32_ieee;
  }
  /// A stream model of this profile as a queued kernel sees it (`queued`).
  [[nodiscard]] constexpr stream_model queued(stream_model s) const {
    if (dispatch.kernel_floor > 0) s.floor = dispatch.kernel_floor;
    return s;
  }
  /// The profile of kernels queued back to back in a stream: every floor is `dispatch`'s
  /// `kernel_floor` (unchanged when that is 0).
  [[nodiscard]] constexpr device_profile queued() const {
    device_profile q = *this;
    const double f = dispatch.kernel_floor;
    if (f <= 0) return q;
    q.bf16.floor = q.fp32.floor = q.fp32_ieee.floor = f;
    for (stream_model* m : {&q.copy, &q.host_to_device, &q.device_to_host, &q.gelu, &q.dropout,
                            &q.layer_norm, &q.softmax})
      m->floor = f;
    q.attention.floor = q.attention_fp32.floor = f;
    return q;
  }
};

/// How large GEMM tiles run: the fraction e of the peak, the tile area reaching half of it, the
/// overhead per wave.
struct gemm_efficiency {
  double efficiency = 0.7;
  double half_area = 4096;
  double wave = 2e-6;
};

/// The bf16 GEMM parameters fitted on the H100 (`tools/profiles/h100_sxm.json`, rounded): large
/// tiles reach 86.3 % of the peak, a 4880-element tile half of that, 3.063 us per wave.
inline constexpr gemm_efficiency h100_fitted_gemm{0.863, 4880, 3.063e-6};

/// One direction of a GPU's PCIe x16 link to the host as pinned copies reach it: 80 % of the
/// link (the share `analytic::offload_efficiency::pcie` assumes) of 15.75 GB/s for Gen3 (Pascal,
/// Volta: the V100 and TITAN Xp datasheets), 31.5 GB/s for Gen4 (Ampere, Ada) and 63 GB/s for
/// Gen5 (Hopper, Blackwell), by the compute capability; 25 GB/s where it is unknown. The H100's
/// measured pinned copies reach 54.6 GB/s (`tools/profiles/h100_sxm.json`), the 50.4 this gives.
[[nodiscard]] constexpr double pinned_host_copy_rate(const device& d) {
  constexpr double share = 0.8;
  if (d.arch <= 0) return 25e9;
  if (d.arch < 80) return share * 15.75e9;
  if (d.arch < 90) return share * 31.5e9;
  return share * 63e9;
}

/// `p`, a profile of `p.dev` at that device's power limit, with its arithmetic as `d`'s limit holds
/// it: GEMM peaks and attention rates scaled by the ratio of their `power_clock_share`s;
/// memory-bound kernels, floors and host costs unchanged. The profile's device takes `d`'s rated
/// power and limit.
[[nodiscard]] constexpr device_profile at_power_limit(device_profile p, const device& d) {
  const double k = power_clock_share(d) / power_clock_share(p.dev);
  p.dev.power_w = d.power_w;
  p.dev.power_limit_w = d.power_limit_w;
  if (k == 1.0) return p;
  for (gemm_model* g : {&p.bf16, &p.fp32, &p.fp32_ieee}) g->peak *= k;
  for (attention_model* a : {&p.attention, &p.attention_fp32}) {
    a->forward_rate *= k;
    a->training_rate *= k;
  }
  return p;
}

/// A profile from datasheet peaks alone, with default efficiencies that are the same for every
/// device (no fitting): GEMMs at 70 % of the dense peak for large tiles (half of it at a 64 x 64
/// tile), 2 us per wave (or the given `gemm_efficiency`); copies and element-wise kernels at 80 %
/// of the memory bandwidth, normalization (layer norm, softmax) at 50 %; host copies at
/// `pinned_host_copy_rate` (the PCIe generation of the device's architecture); attention at 50 % of
/// the 16-bit peak forward, 40 % forward + backward (fp32 attention: the same fractions of the fp32
/// peak); a 10 us launch floor; PyTorch eager's dispatch costs as measured with the H100
/// (`pytorch_eager_dispatch`). Arithmetic at the device's power limit (`at_power_limit`).
[[nodiscard]] constexpr device_profile datasheet_profile(const device& held, int sms,
                                                         gemm_efficiency e = {}) {
  if (sms < 1) throw plan_error("a device profile needs at least one SM");
  device d = held;
  d.power_limit_w = 0;
  const double bw = d.memory_bandwidth.count();
  auto gemm = [&](dtype t, double element) {
    return gemm_model{
        d.peak(t).count(),           e.efficiency, e.half_area, 10e-6, e.wave, bw, element, sms,
        t == dtype::tf32 ? 1.0 : 4.0};
  };
  device_profile p{d,
                   sms,
                   gemm(dtype::bf16, 2),
                   gemm(dtype::tf32, 4),
                   {0.8 * bw, 10e-6},
                   {pinned_host_copy_rate(d), 10e-6},
                   {pinned_host_copy_rate(d), 10e-6},
                   {0.8 * bw, 10e-6},
                   {0.8 * bw, 10e-6},
                   {0.5 * bw, 10e-6},
                   {0.5 * bw, 10e-6},
                   {0.5 * d.peak(dtype::bf16).count(), 0.4 * d.peak(dtype::bf16).count(), 0, 10e-6},
                   {0.5 * d.peak(dtype::fp32).count(), 0.4 * d.peak(dtype::fp32).count(), 0, 10e-6},
                   pytorch_eager_dispatch};
  p.fp32_ieee = gemm(dtype::fp32, 4);
  return at_power_limit(p, held);
}

/// `datasheet_profile` with the device's own SM count.
[[nodiscard]] constexpr device_profile datasheet_profile(const device& d, gemm_efficiency e = {}) {
  if (d.sms < 1) throw plan_error("the device lists no SM count: pass one to datasheet_profile");
  return datasheet_profile(d, d.sms, e);
}

/// Carries a profile measured on one device to another: every rate keeps its fraction of the
/// datasheet peak it is bound by (GEMMs and attention of the arithmetic peak, memory-bound
/// kernels of the memory bandwidth), shapes, floors and per-wave overheads stay, the SM count is
/// the target's. Host copies are unchanged (the same PCIe generation is assumed). Power limits are
/// undone on `from` and applied for `to` (`at_power_limit`).
[[nodiscard]] constexpr device_profile rescale_profile(const device_profile& held_from,
                                                       const device& held_to) {
  if (held_to.sms < 1) throw plan_error("rescale_profile: the target device lists no SM count");
  device rated = held_from.dev, to = held_to;
  rated.power_limit_w = to.power_limit_w = 0;
  const device_profile from = at_power_limit(held_from, rated);
  device_profile p = from;
  p.dev = to;
  p.sms = to.sms;
  auto gemm = [&](gemm_model g, dtype t) {
    g.peak = to.peak(t).count();
    g.bandwidth = to.memory_bandwidth.count();
    g.sms = to.sms;
    return g;
  };
  p.bf16 = gemm(from.bf16, dtype::bf16);
  p.fp32 = gemm(from.fp32, dtype::tf32);
  p.fp32_ieee = gemm(from.fp32_ieee, dtype::fp32);
  const double mem = to.memory_bandwidth / from.dev.memory_bandwidth;
  for (stream_model* sm : {&p.copy, &p.gelu, &p.dropout, &p.layer_norm, &p.softmax})
    sm->bandwidth *= mem;
  const double arith = to.peak(dtype::bf16) / from.dev.peak(dtype::bf16);
  p.attention.forward_rate *= arith;
  p.attention.training_rate *= arith;
  const double simt = to.peak(dtype::fp32) / from.dev.peak(dtype::fp32);
  p.attention_fp32.forward_rate *= simt;
  p.attention_fp32.training_rate *= simt;
  return at_power_limit(p, held_to);
}

}  // namespace strata
