#pragma once
/// @file analytic/yan.hpp
/// @brief Yan et al.'s performance model of model-parallel, multi-threaded, replicated and
/// parameter-server training (§4, eqs. 5-11) and its epoch time.
///
/// A model replica of N_wr workers trains one sample per thread. Layer l is cut into P(l) stripes
/// (segments), run by H(l) threads and replicated R(l) times; N_mr replicas share weights through
/// N_ps parameter servers, reading them every N_read samples. Per sample and segment:
///   U_f = C_muladd W(l,p) + C_act N_neuron(l,p)                               (5)
///   M_f = C_ncost + A(l,p) C_bits / C_nbw                                      (6)
///   U_b = C_muladd W'(l,p) + N_neuron(l,p) C_err,  M_b as (6) with E(l,p)      (7)
///   U_w = C_muladd W(l,p)                                                      (8)
///   U_i(l,p,h) = C_interf(H(l)) U_i(l,p); threads share the NIC: C_nbw / H(l) (9)
///   M_w^max = sum_l C_ncost + N_mr W(l) / C_nbw                                (10)
///   M_w^min = sum_l C_ncost + W(l) / (C_nbw min(N_ps, N_wr))                   (11)
///   T_epoch = M_w N_sample / N_read + sum_l (U_f + M_f + U_b + M_b + U_w) N_sample / Q(l),
///   Q(l) = H(l) R(l) N_mr.
/// Choices where the paper is silent are documented next to the code and in docs/yan.md.
/// @code
/// const auto net = strata::yan::fold(strata::zoo::mnist_adam().view());
/// const strata::yan::system cfg{.servers = 2, .replicas = 9, .workers = 2};
/// const auto e = strata::yan::evaluate(net, cfg, strata::yan::uniform(net, cfg, 16),
///                                      strata::yan::e5_2450(), 60000, 20);
/// @endcode

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/model/layer.hpp"
#include "strata/units.hpp"

namespace strata::yan {

/// A layer as Yan et al.'s model sees it: a weighted layer with the pooling after it folded in.
struct layer_view {
  layer_kind kind = layer_kind::linear;
  shape in;                ///< what the layer reads
  shape out;               ///< what the next layer reads (after pooling)
  int kernel = 1;          ///< K of a convolution (1 for linear layers)
  double connections = 0;  ///< W(l): multiply-adds per sample
  double weights = 0;      ///< unique weights, what the parameter servers hold
  double neurons = 0;      ///< N_neuron(l): outputs computed per sample
};

/// Folds pooling and element-wise layers into the weighted layer before them.
[[nodiscard]] inline std::vector<layer_view> fold(std::span<const layer> layers) {
  std::vector<layer_view> out;
  for (const layer& l : layers) {
    if (l.kind == layer_kind::conv || l.kind == layer_kind::linear) {
      const double bias = l.params - (l.kind == layer_kind::conv ? l.in.c * l.window() * l.out.c
                                                                 : l.in.elements() * l.out.c);
      // forward FLOPs = 2 x connections + one add per output when there is a bias
      const double connections = (l.fw_flops - (bias > 0 ? l.out.elements() : 0.0)) / 2.0;
      out.push_back({l.kind, l.in, l.out, l.kernel, connections, l.params, l.out.elements()});
    } else {
      if (out.empty()) throw plan_error("Yan et al.'s model needs a weighted layer first");
      out.back().out = l.out;
    }
  }
  if (out.empty()) throw plan_error("the model has no weighted layers");
  return out;
}

/// Machine constants (seconds, bits). A segment whose weights fit the worker's last-level cache
/// runs its multiply-adds at C_muladd; one whose weights do not is also bound by streaming them
/// from DRAM (Yan et al. §6.2.1: partitioning can make a layer fit into L3 cache).
struct costs {
  double muladd = 0;         ///< C_muladd, one multiply-add with its operands in cache (s)
  double dram = 0;           ///< memory bandwidth of one machine, shared by its threads (B/s)
  double cache_bytes = 0;    ///< last-level cache of one worker machine
  double act = 0;            ///< C_act (s)
  double err = 0;            ///< C_err (s)
  double ncost = 0;          ///< C_ncost with one thread (s)
  double ncost_growth = 0;   ///< C_ncost(H) = ncost (1 + ncost_growth (H - 1))
  double nbw = 0;            ///< C_nbw, NIC bandwidth (bit/s)
  double bits = 32;          ///< C_bits, size of an activation, error term or weight
  int cores = 1;             ///< K, cores per machine
  double interference = 0;   ///< C_interf(H) = 1 + interference (H - 1)
  double read_position = 0;  ///< M_w = M_w^min + read_position (M_w^max - M_w^min)

  [[nodiscard]] constexpr double c_interf(int h) const { return 1.0 + interference * (h - 1); }
  [[nodiscard]] constexpr double c_ncost(int h) const {
    return ncost * (1.0 + ncost_growth * (h - 1));
  }
  /// Whether a worker holding `weights` weights keeps them in cache.
  [[nodiscard]] constexpr bool cached(double weights) const {
    return weights * bits / 8.0 <= cache_bytes;
  }
  /// Time of `connections` multiply-adds over `weights` weights for one thread of `threads`:
  /// compute-bound at C_muladd, or bound by streaming the weights from DRAM at the thread's
  /// share of the machine's bandwidth when they do not stay in cache.
  [[nodiscard]] constexpr double multiply_adds(double connections, double weights, bool in_cache,
                                               int threads) const {
    const double compute = muladd * connections;
    if (in_cache) return compute;
    const double stream = weights * bits / 8.0 / (dram / threads);
    return compute > stream ? compute : stream;
  }
};

/// Costs from a machine's datasheet (Yan et al. allow "device peaks" instead of canonical
/// microbenchmarks): a multiply-add at `efficiency` of a core's share of the peak (2 FLOPs each),
/// activation and error functions at `function_cycles` cycles of a `ghz` core, weights streamed
/// at the machine's memory bandwidth, messages at the NIC's start-up and bandwidth.
[[nodiscard]] constexpr costs from_datasheet(const device& d, int cores, double ghz,
                                             double cache_bytes, const interconnect& nic,
                                             double efficiency = 0.5, double function_cycles = 20) {
  costs c;
  c.muladd = 1.0 / (d.fp32.count() / cores / 2.0 * efficiency);
  c.dram = d.memory_bandwidth.count();
  c.cache_bytes = cache_bytes;
  c.act = function_cycles / (ghz * 1e9);
  c.err = c.act;
  c.ncost = nic.alpha.count();
  c.nbw = nic.bandwidth.count() * 8.0;
  c.cores = cores;
  return c;
}

/// The servers of Yan et al. §6.1 (`presets::yan_cluster`): a multiply-add at half a core's SIMD
/// rate (268.8 / 16 / 2 = 8.4 G multiply-adds/s/core -> 0.238 ns); weights that miss the two
/// 20 MB L3 caches stream from 76.8 GB/s shared by the threads; activation and error functions
/// 20 cycles at 2.1 GHz (9.5 ns); a message 50 us on the 10 Gbps NIC; 16 threads slow each
/// other by 2 % per extra thread (memory-controller contention); weight reads at eq. (11)'s best
/// case, the bound Yan et al. use to explain Table 1 (docs/yan.md reports other positions).
[[nodiscard]] constexpr costs e5_2450() {
  costs c = from_datasheet(presets::xeon_e5_2450_server, 16, 2.1, 40e6,
                           presets::yan_cluster().levels[0].pair);
  c.interference = 0.02;
  c.read_position = 0.0;
  return c;
}

/// Yan et al. Fig. 5's canonical feed-forward loop, timed on this machine: returns costs with
/// C_muladd and C_act measured for a segment of `connections` weights feeding `neurons`
/// neurons (the rest copied from `base`). Run time only.
[[nodiscard]] inline costs measure_canonical(const costs& base, std::size_t neurons = 256,
                                             std::size_t fan_in = 1024, int repeats = 20) {
  std::vector<float> w(neurons * fan_in), a(fan_in), y(neurons);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1e-3f * static_cast<float>(i % 97);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 1e-2f * static_cast<float>(i % 13);
  using clock = std::chrono::steady_clock;
  double best_muladd = 1e300, best_act = 1e300;
  volatile float sink = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clock::now();
    for (std::size_t i = 0; i < neurons; ++i) {
      float acc = 0;
      for (std::size_t j = 0; j < fan_in; ++j) acc += w[i * fan_in + j] * a[j];  // C_muladd
      y[i] = acc;
    }
    const auto t1 = clock::now();
    for (std::size_t i = 0; i < neurons; ++i) y[i] = std::tanh(y[i]);  // C_act
    const auto t2 = clock::now();
    sink = sink + y[neurons / 2];
    best_muladd = std::min(best_muladd, std::chrono::duration<double>(t1 - t0).count());
    best_act = std::min(best_act, std::chrono::duration<double>(t2 - t1).count());
  }
  costs c = base;
  c.muladd = best_muladd / static_cast<double>(neurons * fan_in);
  c.act = best_act / static_cast<double>(neurons);
  c.err = c.act;
  return c;
}

/// Per-layer choices: P(l), H(l), R(l).
struct layer_split {
  int partitions = 1;
  int threads = 1;
  int replicas = 1;
};

/// N_ps, N_mr, N_wr and the read/write periods (Yan et al. §6.2: writes every 40 samples, reads
/// every 70). Writes are asynchronous and do not enter the epoch time.
struct system {
  int servers = 1;        ///< N_ps
  int replicas = 1;       ///< N_mr
  int workers = 1;        ///< N_wr per replica
  int read_period = 70;   ///< N_read
  int write_period = 40;  ///< N_write
};

/// The same split for every layer: P = N_wr partitions, H threads, no layer replication.
[[nodiscard]] inline std::vector<layer_split> uniform(std::span<const layer_view> net,
                                                      const system& s, int threads) {
  return std::vector<layer_split>(net.size(), layer_split{s.workers, threads, 1});
}

/// The most segment pairs of two neighbouring layers (P(l) x P(l-1)) the greedy mapping of
/// `remote_activations` considers: 2^22.
inline constexpr long long max_segment_pairs = 1LL << 22;

/// Greedy segment-to-worker mapping (Yan et al. §5.3): `need[j]` is the interval of input rows
/// segment j reads; the previous layer's output is held in `held` stripes, one per worker.
/// Each segment goes to the worker holding most of its input; on a conflict the larger overlap
/// wins and the other segment takes a worker holding none of its input. Returns, per segment,
/// the rows it must receive from other workers.
[[nodiscard]] inline std::vector<double> greedy_remote_rows(std::span<const double> need_lo,
                                                            std::span<const double> need_hi,
                                                            int held, double rows) {
  const std::size_t p = need_lo.size();
  struct cand {
    double overlap;
    std::size_t seg;
    int worker;
  };
  std::vector<cand> cands;
  for (std::size_t j = 0; j < p; ++j)
    for (int w = 0; w < held; ++w) {
      const double lo = rows * w / held, hi = rows * (w + 1) / held;
      const double o = std::max(0.0, std::min(hi, need_hi[j]) - std::max(lo, need_lo[j]));
      if (o > 0) cands.push_back({o, j, w});
    }
  std::stable_sort(cands.begin(), cands.end(),
                   [](const cand& a, const cand& b) { return a.overlap > b.overlap; });
  std::vector<double> local(p, 0.0);
  std::vector<bool> seg_done(p, false), worker_used(static_cast<std::size_t>(held), false);
  for (const cand& c : cands) {
    if (seg_done[c.seg] || worker_used[static_cast<std::size_t>(c.worker)]) continue;
    seg_done[c.seg] = true;
    worker_used[static_cast<std::size_t>(c.worker)] = true;
    local[c.seg] = c.overlap;
  }
  std::vector<double> remote(p);
  for (std::size_t j = 0; j < p; ++j) remote[j] = (need_hi[j] - need_lo[j]) - local[j];
  return remote;
}

/// A(l,p): activations the slowest segment of `l` (cut into p stripes) receives from other
/// workers when the previous layer is cut into p_prev stripes. A linear layer reads all its
/// inputs; a convolution reads its stripe of input rows widened by floor(K/2) on each side.
[[nodiscard]] inline double remote_activations(const layer_view& l, int p_prev, int p) {
  if (p_prev < 1 || p < 1) throw plan_error("partitions must be at least 1");
  if (static_cast<long long>(p_prev) * p > max_segment_pairs)
    throw plan_error("P(l) x P(l-1) exceeds 2^22 segment pairs: too many partitions to map");
  const double per_row = static_cast<double>(l.in.c) * l.in.w * l.in.d;
  const double rows = static_cast<double>(l.in.h);
  std::vector<double> lo(static_cast<std::size_t>(p)), hi(static_cast<std::size_t>(p));
  const bool fc = l.kind != layer_kind::conv;
  const double r = fc ? 0.0 : l.kernel / 2;
  for (int j = 0; j < p; ++j) {
    lo[static_cast<std::size_t>(j)] = fc ? 0.0 : std::max(0.0, rows * j / p - r);
    hi[static_cast<std::size_t>(j)] = fc ? rows : std::min(rows, rows * (j + 1) / p + r);
  }
  const auto remote = greedy_remote_rows(lo, hi, p_prev, rows);
  return *std::max_element(remote.begin(), remote.end()) * per_row;
}

/// Per-sample times of one layer and its weight-read terms.
struct layer_estimate {
  double uf = 0, mf = 0, ub = 0, mb = 0, uw = 0;  ///< seconds per sample (eqs. 5-9)
  double q = 1;                                   ///< Q(l) = H R N_mr
  double mw_min = 0, mw_max = 0;                  ///< this layer's terms of eqs. (11), (10)
  [[nodiscard]] double per_sample() const { return uf + mf + ub + mb + uw; }
};

/// The epoch estimate.
struct estimate {
  std::vector<layer_estimate> layers;
  double weight_reads = 0;   ///< M_w N_sample / N_read (§4.2.3; no 1 / N_mr)
  double compute = 0;        ///< sum_l (U_f + U_b + U_w) N_sample / Q(l)
  double communication = 0;  ///< sum_l (M_f + M_b) N_sample / Q(l)
  [[nodiscard]] double epoch() const { return weight_reads + compute + communication; }
};

/// Checks constraints C1-C4 of Yan et al. Fig. 7 on `machines` machines, and the size bound
/// `max_segment_pairs`.
inline void check(std::span<const layer_view> net, const system& s,
                  std::span<const layer_split> split, const costs& c, int machines) {
  if (s.servers < 1 || s.replicas < 1 || s.workers < 1)
    throw plan_error("parameter servers, replicas and workers must each be at least 1");
  if (s.read_period < 1 || s.write_period < 1)
    throw plan_error("read and write periods must be at least 1 sample");
  // 64-bit products: every count is at most 2^24 (max_devices), so none of them overflows
  if (s.servers + static_cast<long long>(s.replicas) * s.workers > machines)
    throw plan_error("C1 violated: N_ps + N_mr x N_wr exceeds the machines available");
  if (split.size() != net.size())
    throw plan_error("the layer split must list every (folded) layer of the model");
  for (std::size_t i = 0; i < split.size(); ++i) {
    const layer_split& l = split[i];
    // the segment-to-worker mapping looks at every pair of segments of neighbouring layers
    if (i > 0 && static_cast<long long>(l.partitions) * split[i - 1].partitions > max_segment_pairs)
      throw plan_error(
          "P(l) x P(l-1) exceeds 2^22 segment pairs: too many partitions to map (Yan et al. "
          "§5.3)");
    if (l.partitions < 1 || l.threads < 1 || l.replicas < 1)
      throw plan_error("partitions, threads and layer replicas must each be at least 1");
    if (l.threads > c.cores) throw plan_error("C2 violated: H(l) exceeds the cores of a machine");
    if (static_cast<long long>(l.partitions) * l.replicas > s.workers)
      throw plan_error(
          "C3 violated: P(l) x R(l) segments need as many distinct workers of the replica");
  }
}

/// Layer l's estimate given the partitions of its neighbours (p_prev = 0: first layer,
/// p_next = 0: last layer).
[[nodiscard]] inline layer_estimate layer_terms(std::span<const layer_view> net, std::size_t i,
                                                const layer_split& me, int p_prev, int p_next,
                                                const system& s, const costs& c) {
  const layer_view& l = net[i];
  const double p = me.partitions;
  const int h = me.threads;
  const double interf = c.c_interf(h);
  layer_estimate e;
  // (5), (7), (8) with (9). W'(l, p): connections from layer l+1 into this segment. The weight
  // update reads and writes the segment's weights.
  const bool last = i + 1 == net.size();
  const double w_next = last ? 0.0 : net[i + 1].connections / p;
  const double wt_next = last ? 0.0 : net[i + 1].weights / p;
  const bool fits = c.cached(l.weights / p);
  e.uf =
      interf * (c.multiply_adds(l.connections / p, l.weights / p, fits, h) + c.act * l.neurons / p);
  e.ub = interf *
         (c.multiply_adds(w_next, wt_next, last || c.cached(wt_next), h) + c.err * l.neurons / p);
  e.uw = interf * c.multiply_adds(l.connections / p, 2 * l.weights / p, fits, h);
  // (6) and its back-propagation twin; threads share the NIC (C_nbw / H). No remote data, no
  // message.
  const double share = c.nbw / h;
  const double a = p_prev > 0 ? remote_activations(l, p_prev, me.partitions) : 0.0;
  const double er = p_next > 0 ? remote_activations(net[i + 1], me.partitions, p_next) : 0.0;
  if (a > 0) e.mf = c.c_ncost(h) + a * c.bits / share;
  if (er > 0) e.mb = c.c_ncost(h) + er * c.bits / share;
  e.q = static_cast<double>(h) * me.replicas * s.replicas;
  // (10), (11): every replica of the layer holds a copy of its weights. The replica reads its
  // weights once, not per thread, so the whole NIC serves the read (our reading of C_nbw(H)).
  const double wbits = l.weights * me.replicas * c.bits;
  e.mw_max = c.c_ncost(h) + s.replicas * wbits / c.nbw;
  e.mw_min = c.c_ncost(h) + wbits / (c.nbw * std::min(s.servers, s.workers));
  return e;
}

/// T_epoch of `samples` samples (Yan et al. §4.2.3).
[[nodiscard]] inline estimate evaluate(std::span<const layer_view> net, const system& s,
                                       std::span<const layer_split> split, const costs& c,
                                       double samples, int machines) {
  check(net, s, split, c, machines);
  if (!(samples > 0)) throw plan_error("the epoch needs at least one sample");
  estimate e;
  double mw_min = 0, mw_max = 0;
  for (std::size_t i = 0; i < net.size(); ++i) {
    const int p_prev = i > 0 ? split[i - 1].partitions : 0;
    const int p_next = i + 1 < net.size() ? split[i + 1].partitions : 0;
    const layer_estimate l = layer_terms(net, i, split[i], p_prev, p_next, s, c);
    e.compute += (l.uf + l.ub + l.uw) * samples / l.q;
    e.communication += (l.mf + l.mb) * samples / l.q;
    mw_min += l.mw_min;
    mw_max += l.mw_max;
    e.layers.push_back(l);
  }
  const double mw = mw_min + c.read_position * (mw_max - mw_min);
  e.weight_reads = mw * samples / s.read_period;
  return e;
}

}  // namespace strata::yan
