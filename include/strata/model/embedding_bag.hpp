#pragma once
/// @file model/embedding_bag.hpp
/// @brief Embedding lookup (EL) cost on one GPU from a batch's reuse factors (Lin et al. §III-B,
/// §IV-C): forward, backward (dense or fused gradient) and the SGD update, as bytes moved over
/// fitted bandwidths above launch floors.
///
/// An embedding bag of E rows of D elements reads, for each of B samples, L rows and sums them
/// (PyTorch `nn.EmbeddingBag(mode="sum")`, FBGEMM's table-batched embedding). What a batch costs
/// depends on how often each row is hit: Lin et al. §III-B describe a batch by its *reuse
/// factors*, the "histogram of histograms" of Meta's DLRM dataset: bin i counts the distinct
/// rows accessed k times with ceil(log2 k) = i (k = 1 in bin 0, 2 in bin 1, 3-4 in bin 2, ...,
/// k > 2^15 in bin 16). Lin et al. learn the EL time from these 17 values with an MLP; strata
/// uses them in an analytical form instead (docs/lin.md) whose few parameters are fitted to
/// measurements (`calibrate/embedding_fit.hpp`; the MLP itself is trained as a baseline in
/// `calibrate/embedding_mlp.hpp`, and scores worse on held-out rows):
///
/// - forward: PyTorch's CUDA forward (`_embedding_bag_cuda`, aten/src/ATen/native/cuda/
///   EmbeddingBag.cu) allocates its outputs and launches ONE kernel, for every E (no sort, no
///   radix pass: those belong to the backward). The kernel's grid is fixed at 1024 blocks of
///   32 x 8 threads: each of its 8192 warps takes one (bag, 32-feature chunk) at a time and walks
///   the bag's L lookups serially (index load, the dependent row load, the add), so it lasts the
///   longer of that chain, ceil(B ceil(D/32) / 8192) x L x lookup_latency, and its traffic: the U
///   distinct rows from DRAM once, the N - U re-reads from L2 while the U rows fit in it (a
///   fraction L2 / (U row) of them otherwise), the N indices and the B x D output. A call
///   returns to Python only after its host work (module call, `F.embedding_bag` checks,
///   dispatcher, autograd node, four allocations): a CUDA-event-timed call lasts
///   t = max(floor_f, launch + max(chain, dram / bw_gather + hits / bw_l2));
/// - backward: sorting and reducing the N lookups' gradients (per_lookup each), the U gradient
///   rows written, the rows reused most serialize their updates (contention x k_max, the
///   atomics/segment reduction of a hot row), and with a dense gradient PyTorch zero-fills the
///   E x D gradient (one pass over E D elements; four when it accumulates into an existing
///   gradient: zero, read old, read new, write): t = floor_b + ...;
/// - SGD update of a dense gradient: read weights, read gradient, write weights (three passes).
///   A fused update (FBGEMM's TBE) touches only the U rows (read and write) inside backward,
///   and one TBE kernel serves all tables of a rank: `analytic::dlrm_plan` pays its floors once
///   per rank, PyTorch's per-table bags once per table.
/// @code
/// constexpr strata::embedding_bag_shape s{.rows = 1e6, .dim = 64, .pooling = 20, .batch = 4096};
/// constexpr double t = strata::h100_embedding_bag.forward(s);   // s
/// @endcode

#include <array>
#include <cstddef>

#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"

namespace strata {

/// The 17 reuse-factor bins of Meta's DLRM dataset (Lin et al. §III-B).
inline constexpr int reuse_bins = 17;

/// Reuse factors of one table in one batch: `rows[i]` distinct rows were accessed k times with
/// ceil(log2 k) = i (bin 16 holds every k > 2^15). Counts, not fractions.
struct reuse_histogram {
  std::array<double, reuse_bins> rows{};

  /// The bin of a row accessed k >= 1 times.
  [[nodiscard]] static constexpr int bin_of(double k) {
    if (!(k >= 1)) throw plan_error("a reuse count is at least 1");
    int i = 0;
    double edge = 1;
    while (edge < k && i < reuse_bins - 1) {
      edge *= 2;
      ++i;
    }
    return i;
  }
  /// A representative access count of bin i: 1, 2, then 3/4 of the bin's upper edge 2^i (the
  /// middle of (2^(i-1), 2^i]); bin 16 (k > 2^15) counts as 1.5 x 2^15 too.
  [[nodiscard]] static constexpr double typical(int i) {
    if (i <= 0) return 1;
    if (i == 1) return 2;
    double e = 1;
    for (int j = 0; j < i && j < reuse_bins; ++j) e *= 2;
    return 0.75 * e;
  }
  /// U, the distinct rows the batch touches.
  [[nodiscard]] constexpr double unique() const {
    double u = 0;
    for (double r : rows) u += r;
    return u;
  }
  /// The lookups the histogram implies (each bin at its `typical` count).
  [[nodiscard]] constexpr double lookups() const {
    double n = 0;
    for (int i = 0; i < reuse_bins; ++i) n += rows[static_cast<std::size_t>(i)] * typical(i);
    return n;
  }
  /// The upper edge of the highest bin holding at least half a row (expected histograms hold
  /// fractions): how often the hottest row is hit, at most.
  [[nodiscard]] constexpr double max_reuse() const {
    double k = 0, e = 1;
    for (int i = 0; i < reuse_bins; ++i) {
      if (rows[static_cast<std::size_t>(i)] >= 0.5) k = i == reuse_bins - 1 ? 2 * e : e;
      e *= 2;
    }
    return k;
  }
  [[nodiscard]] constexpr bool empty() const { return !(unique() > 0); }
};

namespace detail {
/// ceil(x) for 0 <= x < 2^62 (constexpr).
constexpr double ceil_positive(double x) {
  const auto i = static_cast<long long>(x);
  return static_cast<double>(i) < x ? static_cast<double>(i + 1) : static_cast<double>(i);
}
/// Adds to `h` the expected rows, out of `count` rows each hit Poisson(lambda) times, per bin.
/// lambda > 64: the spread (1/sqrt(lambda) < 13 %) is ignored, every row falls in bin(lambda).
constexpr void add_poisson(reuse_histogram& h, double count, double lambda) {
  if (!(lambda > 0) || !(count > 0)) return;
  if (lambda > 64) {
    h.rows[static_cast<std::size_t>(reuse_histogram::bin_of(lambda))] += count;
    return;
  }
  const double ll = strata::detail::log(lambda);
  double lp = -lambda;  // log P(k = 0)
  const int kmax = static_cast<int>(lambda + 12 * strata::detail::pow(lambda, 0.5) + 30);
  for (int k = 1; k <= kmax; ++k) {
    lp += ll - strata::detail::log(static_cast<double>(k));
    h.rows[static_cast<std::size_t>(reuse_histogram::bin_of(k))] += count * strata::detail::exp(lp);
  }
}
}  // namespace detail

/// The expected reuse factors of N lookups drawn uniformly from E rows (each row is hit
/// Poisson(N / E) times).
[[nodiscard]] constexpr reuse_histogram uniform_reuse(double rows, double lookups) {
  if (!(rows >= 1) || !(lookups >= 0)) throw plan_error("uniform_reuse: rows >= 1, lookups >= 0");
  reuse_histogram h;
  detail::add_poisson(h, rows, lookups / rows);
  return h;
}

/// The expected reuse factors of N lookups drawn from E rows with Zipf probabilities
/// p_r ~ r^-a (rank r = 1..E): row r is hit Poisson(N p_r) times. Ranks beyond 64 are taken in
/// groups of 1/8 octave at their geometric middle.
[[nodiscard]] constexpr reuse_histogram zipf_reuse(double rows, double lookups, double a) {
  if (!(rows >= 1) || !(lookups >= 0) || !(a >= 0))
    throw plan_error("zipf_reuse: rows >= 1, lookups >= 0, exponent >= 0");
  // groups [r0, r1) with weight n x r_mid^-a
  auto for_groups = [&](auto&& f) {
    double r = 1;
    while (r <= rows) {
      double next = r < 64 ? r + 1 : r * 1.0905077326652577;  // 2^(1/8)
      next = static_cast<double>(static_cast<long long>(next));
      if (next <= r) next = r + 1;
      if (next > rows + 1) next = rows + 1;
      const double n = next - r;
      const double mid = n == 1 ? r : strata::detail::pow(r * (next - 1), 0.5);
      f(n, strata::detail::pow(mid, -a));
      r = next;
    }
  };
  double z = 0;
  for_groups([&](double n, double w) { z += n * w; });
  reuse_histogram h;
  for_groups([&](double n, double w) { detail::add_poisson(h, n, lookups * w / z); });
  return h;
}

/// One embedding bag in one batch: E rows of D elements, L lookups per sample (pooling), B
/// samples, the batch's reuse factors (empty: uniform access assumed), bytes per element.
struct embedding_bag_shape {
  double rows = 1;     ///< E
  double dim = 1;      ///< D
  double pooling = 1;  ///< L, mean lookups per sample
  double batch = 1;    ///< B
  reuse_histogram reuse{};
  double element = 4;  ///< bytes per weight (fp32)

  [[nodiscard]] constexpr double lookups() const { return batch * pooling; }
  [[nodiscard]] constexpr double row_bytes() const { return dim * element; }
  [[nodiscard]] constexpr double table_bytes() const { return rows * dim * element; }
  /// The given reuse factors, or the expected ones of uniform access.
  [[nodiscard]] constexpr reuse_histogram effective_reuse() const {
    return reuse.empty() ? uniform_reuse(rows, lookups()) : reuse;
  }
  constexpr void validate() const {
    if (!(rows >= 1 && dim >= 1 && pooling >= 0 && batch >= 1 && element > 0))
      throw plan_error("an embedding bag needs rows >= 1, dim >= 1, pooling >= 0, batch >= 1");
  }
};

/// How the backward pass produces the table's gradient.
enum class embedding_gradient {
  dense,             ///< a new E x D gradient (PyTorch nn.EmbeddingBag, grad set to None before)
  dense_accumulate,  ///< added into an existing E x D gradient (no zero_grad between steps)
  fused,             ///< FBGEMM TBE: the optimizer updates the touched rows inside backward
};

/// Bytes a forward pass moves, split by where the rows come from (Lin et al. §III-B: the L2
/// hit rate follows from the reuse factors).
struct embedding_traffic {
  double dram = 0;  ///< unique rows, L2 misses of re-reads, indices, offsets, output
  double l2 = 0;    ///< re-reads that hit L2
};

/// Fitted EL cost on one device. Rates in B/s, times in s.
struct embedding_bag_model {
  double floor_forward = 45e-6;  ///< host work of one forward call (what a launch-bound call costs)
  double floor_backward = 450e-6;
  double floor_update = 200e-6;
  double gather_bandwidth = 2.68e12;  ///< rows gathered from DRAM (80 % of an H100's 3.35 TB/s)
  double l2_bandwidth = 7e12;         ///< re-reads served by L2 (about 2.5 x DRAM on H100)
  double l2_bytes = 50e6;             ///< L2 capacity available to the rows (H100: 50 MB)
  double per_lookup = 3e-10;          ///< backward: sort + gradient read per lookup
  double contention = 1e-9;           ///< backward: per serialized update of the hottest row
  double dense_bandwidth = 2.8e12;    ///< passes over the dense E x D gradient / weights
  double index_bytes = 8;             ///< int64 indices and offsets
  double launch = 3e-6;               ///< the forward kernel's launch and fixed cost on the device
  double lookup_latency = 2e-7;       ///< one serial lookup of a warp: index load, row load, add
  double forward_warps = 8192;        ///< PyTorch's forward grid: 1024 blocks x 8 warps

  /// Forward traffic.
  [[nodiscard]] constexpr embedding_traffic forward_traffic(const embedding_bag_shape& s) const {
    s.validate();
    const reuse_histogram h = s.effective_reuse();
    const double n = s.lookups(), u = h.unique() < n ? h.unique() : n;
    const double rereads = n - u;
    const double working = u * s.row_bytes();
    const double hit = working <= l2_bytes ? 1.0 : l2_bytes / working;
    embedding_traffic t;
    t.dram = u * s.row_bytes() + (1 - hit) * rereads * s.row_bytes() + (n + s.batch) * index_bytes +
             s.batch * s.row_bytes();
    t.l2 = hit * rereads * s.row_bytes();
    return t;
  }
  /// The forward kernel's serial chain: each warp walks one (bag, 32-feature chunk) at a time,
  /// its L lookups one after another; B ceil(D/32) chunks over `forward_warps` warps.
  [[nodiscard]] constexpr double forward_chain(const embedding_bag_shape& s) const {
    s.validate();
    const double chunks = s.batch * detail::ceil_positive(s.dim / 32);
    return detail::ceil_positive(chunks / forward_warps) * s.pooling * lookup_latency;
  }
  /// Forward kernel time above its launch: the longer of the serial chain and the traffic.
  [[nodiscard]] constexpr double forward_work(const embedding_bag_shape& s) const {
    const embedding_traffic t = forward_traffic(s);
    const double traffic = t.dram / gather_bandwidth + t.l2 / l2_bandwidth;
    const double chain = forward_chain(s);
    return chain > traffic ? chain : traffic;
  }
  /// The forward kernel on the device (what a profiler trace shows), launch included.
  [[nodiscard]] constexpr double forward_kernel(const embedding_bag_shape& s) const {
    return launch + forward_work(s);
  }
  /// A forward call whose kernel work above the launch is `work`: host-bound below the floor.
  [[nodiscard]] constexpr double forward_call(double work) const {
    return floor_forward > launch + work ? floor_forward : launch + work;
  }
  /// Lin et al. §III-B, forward EL: one call, max(host floor, kernel).
  [[nodiscard]] constexpr double forward(const embedding_bag_shape& s) const {
    return forward_call(forward_work(s));
  }
  /// Backward work above the floor (and, for `fused`, the SGD update of the touched rows).
  [[nodiscard]] constexpr double backward_work(
      const embedding_bag_shape& s, embedding_gradient g = embedding_gradient::dense) const {
    s.validate();
    const reuse_histogram h = s.effective_reuse();
    const double n = s.lookups(), u = h.unique() < n ? h.unique() : n;
    double t = n * per_lookup + contention * h.max_reuse() +
               (s.batch * s.row_bytes() + u * s.row_bytes()) / gather_bandwidth;
    switch (g) {
      case embedding_gradient::dense:
        t += s.table_bytes() / dense_bandwidth;
        break;
      case embedding_gradient::dense_accumulate:
        t += 4 * s.table_bytes() / dense_bandwidth;
        break;
      case embedding_gradient::fused:
        t += 2 * u * s.row_bytes() / gather_bandwidth;
        break;
    }
    return t;
  }
  /// The backward's floor: PyTorch's (sort, several kernels, autograd) for a dense gradient, a
  /// single fused kernel's for `fused` (not measured: twice the forward floor, an assumption).
  [[nodiscard]] constexpr double backward_floor(embedding_gradient g) const {
    return g == embedding_gradient::fused ? 2 * floor_forward : floor_backward;
  }
  /// Backward EL (and, for `fused`, the SGD update of the touched rows).
  [[nodiscard]] constexpr double backward(const embedding_bag_shape& s,
                                          embedding_gradient g = embedding_gradient::dense) const {
    return backward_floor(g) + backward_work(s, g);
  }
  /// SGD step on the table: three passes over a dense gradient; nothing left for `fused`.
  [[nodiscard]] constexpr double update(const embedding_bag_shape& s,
                                        embedding_gradient g = embedding_gradient::dense) const {
    s.validate();
    if (g == embedding_gradient::fused) return 0;
    return floor_update + 3 * s.table_bytes() / dense_bandwidth;
  }
  /// Forward + backward + update.
  [[nodiscard]] constexpr double step(const embedding_bag_shape& s,
                                      embedding_gradient g = embedding_gradient::dense) const {
    return forward(s) + backward(s, g) + update(s, g);
  }

  /// The model carried to another GPU, as `rescale_profile` carries a device profile: the
  /// memory-bound rates (gather, L2 re-reads, dense passes) keep their fraction of the memory
  /// bandwidth (`bandwidth_ratio`, the target's over this device's), the L2 is the target's
  /// (`l2_bytes`; 0 keeps this one); the host floors, the launch, the per-lookup latencies and
  /// PyTorch's grid stay.
  [[nodiscard]] constexpr embedding_bag_model carried(double bandwidth_ratio,
                                                      double target_l2_bytes) const {
    if (!(bandwidth_ratio > 0)) throw plan_error("an EL model's bandwidth ratio must be positive");
    embedding_bag_model m = *this;
    m.gather_bandwidth *= bandwidth_ratio;
    m.l2_bandwidth *= bandwidth_ratio;
    m.dense_bandwidth *= bandwidth_ratio;
    if (target_l2_bytes > 0) m.l2_bytes = target_l2_bytes;
    return m;
  }
};

/// EL on an H100 SXM (PyTorch 2 nn.EmbeddingBag, fp32), fitted on all 36 rows of
/// test/data/h100_embedding_bag.csv (`calibrate::fit_embedding_bag` with its defaults, rounded):
/// a 45.2 us forward floor (every forward in the file is host-bound: its one kernel needs at
/// most 19 us, the calls take 29-123 us), 486 us backward floor (PyTorch's sort-based backward
/// is a dozen kernels plus autograd), 0.249 ns per lookup, 2.85 TB/s over the dense gradient
/// (85 % of the datasheet), a 203 us SGD floor. The contention term fits to zero on this data
/// (no bag hits one row more than 2^16 times). Not fitted (the file cannot pin them): the gather
/// and L2 bandwidths (datasheet fractions), the 3 us kernel launch and the 0.2 us serial lookup
/// (about 400 cycles at 1.98 GHz for an L1-hit index load and a dependent L2-hit row load; the
/// E = 1e6, L = 80 calls bound it: 3 + 80 x 0.2 = 19 us fits inside their 31.7 us).
inline constexpr embedding_bag_model h100_embedding_bag{.floor_forward = 45.2e-6,
                                                        .floor_backward = 486e-6,
                                                        .floor_update = 203e-6,
                                                        .gather_bandwidth = 2.68e12,
                                                        .l2_bandwidth = 7e12,
                                                        .l2_bytes = 50e6,
                                                        .per_lookup = 0.249e-9,
                                                        .contention = 0,
                                                        .dense_bandwidth = 2.85e12,
                                                        .index_bytes = 8,
                                                        .launch = 3e-6,
                                                        .lookup_latency = 0.2e-6,
                                                        .forward_warps = 8192};

}  // namespace strata
