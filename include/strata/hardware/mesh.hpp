#pragma once
/// @file hardware/mesh.hpp
/// @brief GPUs of one node joined by direct links (NVLink meshes like Lin et al. Fig. 8) and
/// the bandwidth a ring over them reaches with NCCL-style channel search.
///
/// NCCL builds several rings ("channels") over the links of a node and splits each collective
/// across them, so a group's bandwidth is the sum over its channels (Proteus §VI-C uses NCCL's
/// channel search the same way). `ring_bandwidth` repeats: take the ring whose slowest hop is
/// fastest given the capacity left, add it as a channel, take its bandwidth off every hop it
/// uses. Hops without a direct link go through the host (PCIe), whose per-GPU capacity all such
/// hops share. Exhaustive over ring orders, so meshes hold at most 8 GPUs.
/// @code
/// constexpr auto m = strata::presets::lin_4x_a100_mesh();
/// static_assert(strata::ring_bandwidth(m) == strata::byte_rate{300e9});
/// @endcode

#include <array>
#include <cstddef>

#include "strata/error.hpp"
#include "strata/units.hpp"

namespace strata {

struct mesh {
  static constexpr int max_gpus = 8;
  int gpus = 0;
  std::array<std::array<int, max_gpus>, max_gpus> links{};  ///< direct links between i and j
  byte_rate link_bandwidth;                                 ///< one link, one direction
  byte_rate host_bandwidth;  ///< a GPU's PCIe path through the host, one direction
  int ports = 0;             ///< links a GPU can drive at once (0: its own link count)

  /// Joins GPUs i and j with n links.
  constexpr mesh& connect(int i, int j, int n) {
    if (i < 0 || j < 0 || i >= gpus || j >= gpus || i == j)
      throw plan_error("mesh: link endpoints must be two different GPUs of the mesh");
    if (n < 0) throw plan_error("mesh: a link count must not be negative");
    links[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = n;
    links[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)] = n;
    return *this;
  }
};

namespace detail {
struct mesh_capacity {
  std::array<std::array<double, mesh::max_gpus>, mesh::max_gpus> edge{};
  std::array<double, mesh::max_gpus> link_out{}, link_in{}, host_out{}, host_in{};
};

constexpr double hop(const mesh& m, const mesh_capacity& c, int i, int j) {
  const auto a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(j);
  if (m.links[a][b] > 0) {
    double v = c.edge[a][b];
    v = c.link_out[a] < v ? c.link_out[a] : v;
    return c.link_in[b] < v ? c.link_in[b] : v;
  }
  return c.host_out[a] < c.host_in[b] ? c.host_out[a] : c.host_in[b];
}

constexpr void take(const mesh& m, mesh_capacity& c, int i, int j, double bw) {
  const auto a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(j);
  if (m.links[a][b] > 0) {
    c.edge[a][b] -= bw;
    c.link_out[a] -= bw;
    c.link_in[b] -= bw;
  } else {
    c.host_out[a] -= bw;
    c.host_in[b] -= bw;
  }
}

constexpr bool next_permutation(int* first, int* last) {
  if (last - first < 2) return false;
  int* i = last - 1;
  while (i != first && !(*(i - 1) < *i)) --i;
  if (i == first) return false;
  int* pivot = i - 1;
  int* j = last - 1;
  while (!(*pivot < *j)) --j;
  const int t = *pivot;
  *pivot = *j;
  *j = t;
  for (int *l = i, *r = last - 1; l < r; ++l, --r) {
    const int u = *l;
    *l = *r;
    *r = u;
  }
  return true;
}
}  // namespace detail

/// The mesh of `n` of `m`'s GPUs, `members[0..n)` (distinct, in range): GPU i of the result is
/// members[i], with the links between members kept and each GPU still able to drive every link it
/// has there; what a ring over those GPUs alone can use (Proteus §VII: the channels NCCL's topology
/// search finds for one communication group).
[[nodiscard]] constexpr mesh submesh(const mesh& m, const int* members, int n) {
  if (n < 1 || n > m.gpus) throw plan_error("a sub-mesh needs between 1 and all GPUs of the mesh");
  mesh out{n, {}, m.link_bandwidth, m.host_bandwidth, m.ports};
  for (int i = 0; i < n; ++i) {
    const int a = members[i];
    if (a < 0 || a >= m.gpus) throw plan_error("a sub-mesh member lies outside the mesh");
    for (int j = 0; j < i; ++j) {
      if (members[j] == a) throw plan_error("a sub-mesh lists one GPU twice");
      const int l = m.links[static_cast<std::size_t>(a)][static_cast<std::size_t>(members[j])];
      out.links[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = l;
      out.links[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)] = l;
    }
  }
  return out;
}

/// Sum of the channel bandwidths of rings over `members` (the first n GPUs if members is empty)
/// with NCCL-style greedy channel search; at most `max_channels` channels.
[[nodiscard]] constexpr byte_rate ring_bandwidth(const mesh& m, int members = 0,
                                                 int max_channels = 32) {
  if (m.gpus < 1 || m.gpus > mesh::max_gpus) throw plan_error("a mesh holds 1 to 8 GPUs");
  const int n = members == 0 ? m.gpus : members;
  if (n < 1 || n > m.gpus) throw plan_error("a ring needs between 1 and all GPUs of the mesh");
  if (n == 1) return byte_rate{0};
  detail::mesh_capacity cap;
  for (int i = 0; i < m.gpus; ++i) {
    const auto a = static_cast<std::size_t>(i);
    int own = 0;
    for (int j = 0; j < m.gpus; ++j) {
      const auto b = static_cast<std::size_t>(j);
      cap.edge[a][b] = m.links[a][b] * m.link_bandwidth.count();
      own += m.links[a][b];
    }
    const int ports = m.ports > 0 ? m.ports : own;
    cap.link_out[a] = cap.link_in[a] = ports * m.link_bandwidth.count();
    cap.host_out[a] = cap.host_in[a] = m.host_bandwidth.count();
  }
  double total = 0;
  for (int ch = 0; ch < max_channels; ++ch) {
    std::array<int, mesh::max_gpus> order{}, best{};
    for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    double best_bw = 0;
    do {  // GPU 0 stays first; both directions of every ring are tried
      double bw = 1e300;
      for (int i = 0; i < n; ++i) {
        const double h = detail::hop(m, cap, order[static_cast<std::size_t>(i)],
                                     order[static_cast<std::size_t>((i + 1) % n)]);
        bw = h < bw ? h : bw;
      }
      if (bw > best_bw) {
        best_bw = bw;
        best = order;
      }
    } while (detail::next_permutation(order.data() + 1, order.data() + n));
    if (best_bw <= 1e-9 * (total + 1)) break;
    for (int i = 0; i < n; ++i)
      detail::take(m, cap, best[static_cast<std::size_t>(i)],
                   best[static_cast<std::size_t>((i + 1) % n)], best_bw);
    total += best_bw;
  }
  return byte_rate{total};
}

}  // namespace strata
