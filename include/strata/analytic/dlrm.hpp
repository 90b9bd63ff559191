#pragma once
/// @file analytic/dlrm.hpp
/// @brief DLRM training step on one GPU and on p GPUs (Lin et al. §V-B1): MLPs data-parallel,
/// tables model-parallel with the two all-to-alls, priced on the busiest rank.
///
/// The single-GPU step is the one-rank plan (every table on rank 0, no collectives). On p ranks
/// with a global batch B (b = B / p per rank) and a sharding (table -> rank):
/// - forward: bottom MLP at b, then each rank looks its tables up for all B samples (the EL
///   model, `model/embedding_bag.hpp`; with a fused gradient one FBGEMM-style kernel serves all
///   the rank's tables, with a dense one each table is its own PyTorch EmbeddingBag); the
///   pooled embeddings go out in an all-to-all that
///   starts when the slowest rank is done (inter-rank synchronization, Lin et al. §IV-B);
/// - interaction and top MLP forward and backward at b, the same on every rank;
/// - the top MLP's gradient all-reduce is launched as soon as the top backward ends (DDP's
///   bucket hooks) and the backward all-to-all of the embedding gradients queues behind it on
///   the communication stream; the bottom MLP backward runs meanwhile on the compute stream;
/// - each rank's embedding backward (and update) starts when the backward all-to-all ends, and
///   the bottom MLP's all-reduce follows the backward all-to-all and the bottom backward;
/// - the iteration ends at the latest rank's embedding update or the last all-reduce, plus the
///   MLPs' SGD step.
/// These operations are one lowering (`lower_dlrm`): the closed form takes its critical path,
/// `sim::simulate_dlrm` runs it as tasks on the executor.
/// An all-to-all is uneven: rank r sends its tables' pooled rows for the other ranks' samples
/// (sum of D_t x (B - b) x element) and receives the other tables' rows for its own b samples;
/// its time is that of a uniform all-to-all as large as the busiest rank's traffic
/// (`comm::all_to_all_uneven`, Lin et al. §IV-A), over direct exchange on the cluster.
/// @code
/// auto r = strata::analytic::dlrm_plan(model, {.batch = 4096}, owners, cluster, profile,
///                                      strata::h100_embedding_bag);
/// r.iteration_time;  // s
/// @endcode

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "strata/analytic/dlrm_host.hpp"
#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/model/dlrm.hpp"
#include "strata/model/embedding_bag.hpp"

namespace strata::analytic {

/// What runs around a DLRM step's kernels.
enum class dlrm_loop {
  /// facebookresearch/dlrm's `dlrm_s_pytorch.py`, as Lin et al. measured it (`dlrm_host.hpp`):
  /// the inputs copied to the GPU at the start, every operator issued by the host at
  /// `dlrm_setup::host`'s costs, the host waiting at the loop's blocking copies
  eager,
  /// the kernels back to back and nothing on the host; each embedding call keeps its isolated
  /// floor (the EL model's `floor_forward`, `floor_backward`)
  kernels,
};

/// The training setup of a DLRM step.
struct dlrm_setup {
  double batch = 4096;  ///< global batch B
  dtype precision = dtype::fp32;
  embedding_gradient gradient = embedding_gradient::fused;  ///< how tables are updated
  dlrm_loop loop = dlrm_loop::eager;
  eager_overheads host = lin_pytorch1;  ///< `eager`: the host's cost per operator
};

/// One rank's share of a plan.
struct dlrm_rank {
  std::vector<std::size_t> tables{};  ///< indices into dlrm::tables
  double embedding_forward = 0;       ///< s, its tables' lookups for the global batch
  double embedding_backward = 0;      ///< s, backward + update of its tables
  double sent = 0, received = 0;      ///< bytes of the forward all-to-all (the backward mirrors it)
  double table_bytes = 0;             ///< weights (+ dense gradients) of its tables
  double memory = 0;                  ///< bytes: tables, MLP states, activations and buffers
  dlrm_host host{};                   ///< `dlrm_loop::eager`: its host's phases
  double input_copy = 0;              ///< s, `eager`: its inputs copied to the GPU
};

/// The plan's time breakdown (s) and memory.
struct dlrm_report {
  double iteration_time = 0;
  double bottom_forward = 0, bottom_backward = 0;  ///< per rank, batch b
  double top_forward = 0, top_backward = 0;        ///< interaction included
  double embedding_forward = 0;                    ///< busiest rank
  double embedding_backward = 0;                   ///< busiest rank (backward + update)
  double all_to_all_forward = 0, all_to_all_backward = 0;
  double all_to_all_bytes = 0;  ///< the equivalent uniform S of each all-to-all
  double all_reduce = 0;        ///< both MLP all-reduces, back to back
  double exposed_communication = 0;
  double optimizer = 0;   ///< the MLPs' SGD step
  double host = 0;        ///< s, `dlrm_loop::eager`: the busiest rank's host time
  double input_copy = 0;  ///< s, `eager`: its inputs' copy to the GPU
  dlrm_loop loop = dlrm_loop::eager;
  int busiest_rank = 0;  ///< the rank whose embedding work is largest
  std::vector<dlrm_rank> ranks{};
  [[nodiscard]] double peak_memory() const {
    double m = 0;
    for (const auto& r : ranks) m = std::max(m, r.memory);
    return m;
  }
};

/// What the lowering (`lower_dlrm`) needs beyond the report: the top MLP's backward apart from
/// the interaction's (`dlrm_report::top_backward` holds both), and the two all-reduces apart
/// (`dlrm_report::all_reduce` holds both).
struct dlrm_split {
  double top_mlp_backward = 0, interaction_backward = 0;
  double interaction_forward = 0;  ///< part of `dlrm_report::top_forward`
  double all_reduce_top = 0, all_reduce_bottom = 0;
};

namespace detail {
/// Forward and backward time of an MLP on `b` samples (GEMMs and element-wise activations).
struct mlp_time {
  double forward = 0, backward = 0, activations = 0;  ///< activations in elements
};
inline mlp_time mlp(const device_profile& prof, dtype t, double in, const std::vector<int>& widths,
                    double b, bool input_needs_grad) {
  const gemm_model& g = prof.gemm(t);
  const double e = size_of(t);
  mlp_time m;
  bool first = true;
  for (int w : widths) {
    m.forward += g.time(b, w, in) + prof.gelu.time(2 * b * w * e);
    m.backward += prof.gelu.time(3 * b * w * e) + g.time(in, w, b);  // activation, weight grad
    if (!first || input_needs_grad) m.backward += g.time(b, in, w);  // input gradient
    m.activations += 2 * b * w;
    in = w;
    first = false;
  }
  return m;
}
}  // namespace detail

namespace detail {
/// Checks a plan's ranks, batch and sharding, and gives each rank its tables.
inline dlrm_report assign_tables(const dlrm& model, const dlrm_setup& setup,
                                 const std::vector<int>& owner, int ranks, const cluster& machine) {
  model.validate();
  if (ranks < 1) throw plan_error("DLRM plan: at least one rank");
  if (ranks > machine.devices())
    throw plan_error("DLRM plan: " + std::to_string(ranks) + " ranks, the cluster has " +
                     std::to_string(machine.devices()) + " devices");
  if (!(setup.batch >= ranks))
    throw plan_error("DLRM plan: the batch must give every rank at least one sample");
  const std::size_t T = model.tables.size();
  if (!owner.empty() && owner.size() != T)
    throw plan_error("DLRM plan: the sharding names " + std::to_string(owner.size()) +
                     " tables, the model has " + std::to_string(T));
  if (owner.empty() && ranks != 1) throw plan_error("DLRM plan: a multi-GPU plan needs a sharding");
  dlrm_report r;
  r.ranks.resize(static_cast<std::size_t>(ranks));
  for (std::size_t i = 0; i < T; ++i) {
    const int o = owner.empty() ? 0 : owner[i];
    if (o < 0 || o >= ranks)
      throw plan_error("DLRM plan: table '" + model.tables[i].name + "' is sharded to rank " +
                       std::to_string(o) + " of " + std::to_string(ranks));
    r.ranks[static_cast<std::size_t>(o)].tables.push_back(i);
  }
  return r;
}

/// The feature interaction's forward and backward time and its kept elements at batch b.
struct interaction_cost {
  double forward = 0, backward = 0, activations = 0;
};
inline interaction_cost interaction_of(const dlrm& model, const device_profile& prof, double b,
                                       double e) {
  const double F = model.features(), D = model.bottom.back();
  interaction_cost c;
  if (model.op == interaction::dot) {
    // batched F x D by D x F products: memory-bound, read b F D, write b F F, then gather the
    // upper triangle next to the bottom output; the backward reads and writes twice as much
    c.forward =
        prof.copy.time((b * F * D + b * F * F) * e) + prof.copy.time(2 * b * model.top_input() * e);
    c.backward = 2 * c.forward;
    c.activations = b * F * D + b * F * F + b * model.top_input();
  } else {
    c.forward = prof.copy.time(2 * b * model.top_input() * e);
    c.backward = c.forward;
    c.activations = b * model.top_input();
  }
  return c;
}

/// Each rank's embedding-bag time, table bytes and all-to-all volumes; the busiest rank's
/// times in `r`.
inline void price_tables(dlrm_report& r, const dlrm& model, const dlrm_setup& setup,
                         const embedding_bag_model& el, double emb_dim_total, double B, double b,
                         double e) {
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    dlrm_rank& rk = r.ranks[k];
    double own_dim = 0;
    // fused (FBGEMM TBE): one kernel per pass for all the rank's tables, one floor; dense
    // (PyTorch nn.EmbeddingBag): every table its own kernels and floors
    const bool batched = setup.gradient == embedding_gradient::fused;
    // an eager loop prices the calls' host work itself (`dlrm_host`): the device's part of a
    // call is its kernel, from its launch
    const bool eager = setup.loop == dlrm_loop::eager;
    double forward_work = 0;  // batched: the one forward kernel's work above its launch
    if (batched && !rk.tables.empty())
      rk.embedding_backward = eager ? el.launch : el.backward_floor(setup.gradient);
    for (std::size_t i : rk.tables) {
      const embedding_table& t = model.tables[i];
      const embedding_bag_shape s = t.shape(B, e);
      if (batched) {
        forward_work += el.forward_work(s);
        rk.embedding_backward += el.backward_work(s, setup.gradient);
      } else if (eager) {
        rk.embedding_forward += el.forward_kernel(s);
        rk.embedding_backward += el.launch + el.backward_work(s, setup.gradient) + el.launch +
                                 el.update(s, setup.gradient) - el.floor_update;
      } else {
        rk.embedding_forward += el.forward(s);
        rk.embedding_backward += el.backward(s, setup.gradient) + el.update(s, setup.gradient);
      }
      rk.table_bytes +=
          t.weight_bytes(e) * (setup.gradient == embedding_gradient::fused ? 1.0 : 2.0);
      own_dim += t.dim;
    }
    if (batched && !rk.tables.empty())
      rk.embedding_forward = eager ? el.launch + forward_work : el.forward_call(forward_work);
    rk.sent = own_dim * (B - b) * e;
    rk.received = (emb_dim_total - own_dim) * b * e;
    if (rk.embedding_forward + rk.embedding_backward > r.embedding_forward + r.embedding_backward) {
      r.embedding_forward = rk.embedding_forward;
      r.embedding_backward = rk.embedding_backward;
      r.busiest_rank = static_cast<int>(k);
    }
  }
}

/// The pooled outputs' all-to-all (each way) and the MLPs' gradient all-reduces over `ranks`;
/// returns the top and bottom all-reduce times.
inline std::pair<double, double> price_collectives(dlrm_report& r, const dlrm& model, int ranks,
                                                   const cluster& machine, double e) {
  const group g{0, ranks, 1};
  double ar_top = 0, ar_bottom = 0;
  if (ranks > 1) {
    std::vector<bytes> sent, recv;
    for (const auto& rk : r.ranks) {
      sent.push_back(bytes{rk.sent});
      recv.push_back(bytes{rk.received});
    }
    const bytes S = comm::all_to_all_uneven(sent, recv);
    r.all_to_all_bytes = S.count();
    r.all_to_all_forward = comm::direct::time(comm::collective::all_to_all, machine, g, S).count();
    r.all_to_all_backward = r.all_to_all_forward;
    const double bot_p = dlrm::mlp_parameters(model.dense_features, model.bottom);
    const double top_p = dlrm::mlp_parameters(model.top_input(), model.top);
    ar_top = comm::ring::time(comm::collective::all_reduce, machine, g, bytes{top_p * e}).count();
    ar_bottom =
        comm::ring::time(comm::collective::all_reduce, machine, g, bytes{bot_p * e}).count();
    r.all_reduce = ar_top + ar_bottom;
  }
  return {ar_top, ar_bottom};
}

/// Earliest finish of each lowered operation: one compute stream and one host per rank and one
/// communication stream that every collective occupies (the ranks join each collective
/// together), each in issue order: what `sim::simulate_dlrm` runs as tasks, worked out in
/// closed form.
struct dlrm_critical_path {
  std::vector<double> compute_free, host_free, ends;
  double comm_free = 0;
  explicit dlrm_critical_path(std::size_t ranks)
      : compute_free(ranks, 0.0), host_free(ranks, 0.0) {}
  [[nodiscard]] double ready(const std::vector<int>& deps) const {
    double t = 0;
    for (const int d : deps) t = std::max(t, ends[static_cast<std::size_t>(d)]);
    return t;
  }
  int compute(int rank, const char*, double seconds, const std::vector<int>& deps) {
    double& free = compute_free[static_cast<std::size_t>(rank)];
    free = std::max(free, ready(deps)) + seconds;
    ends.push_back(free);
    return static_cast<int>(ends.size()) - 1;
  }
  int host(int rank, const char*, double seconds, const std::vector<int>& deps) {
    double& free = host_free[static_cast<std::size_t>(rank)];
    free = std::max(free, ready(deps)) + seconds;
    ends.push_back(free);
    return static_cast<int>(ends.size()) - 1;
  }
  int collective(const char*, double seconds, const std::vector<int>& deps) {
    comm_free = std::max(comm_free, ready(deps)) + seconds;
    ends.push_back(comm_free);
    return static_cast<int>(ends.size()) - 1;
  }
};
}  // namespace detail

/// The ids of a lowered DLRM iteration's last operations.
struct dlrm_lowered {
  int bottom_all_reduce = -1;
  std::vector<int> embedding_backward, optimizer;  ///< per rank
};

namespace detail {
/// The phases of each rank's step: on the GPU alone (`dlrm_loop::kernels`), or issued by the
/// rank's host (`eager`): the phase's first operator is issued, the GPU runs the phase once that
/// is done and its inputs are ready while the host issues the rest, and the phase is over when
/// both are; after a blocking copy the host waits for the phase.
template <class V>
class dlrm_phases {
 public:
  dlrm_phases(const dlrm_report& r, V& v) : r_(r), v_(v), issued_(r.ranks.size(), -1) {}
  int run(int k, const char* name, host_phase dlrm_host::*part, double seconds,
          std::vector<int> deps, bool wait = false) {
    if (r_.loop != dlrm_loop::eager) return v_.compute(k, name, seconds, deps);
    const auto kk = static_cast<std::size_t>(k);
    const host_phase& h = r_.ranks[kk].host.*part;
    std::vector<int> after;
    if (issued_[kk] >= 0) after.push_back(issued_[kk]);
    const int first = v_.host(k, name, h.first, after);
    deps.push_back(first);
    const int gpu = v_.compute(k, name, seconds, deps);
    const int rest = v_.host(k, name, h.rest, {first});
    const int done = v_.compute(k, name, 0, {gpu, rest});
    issued_[kk] = wait ? done : rest;
    return done;
  }

 private:
  const dlrm_report& r_;
  V& v_;
  std::vector<int> issued_;  ///< each rank's host: what its next operator waits for
};
}  // namespace detail

/// The DLRM iteration of the priced plan `r` as operations in issue order (see the file comment):
/// per rank `v.compute(rank, name, seconds, deps)` on its compute stream,
/// `v.host(rank, name, seconds, deps)` on its host (`dlrm_loop::eager`), and
/// `v.collective(name, seconds, deps)` for a collective every rank joins; each returns the
/// operation's id, which later operations name in `deps`. The closed form (`dlrm_plan`) and the
/// event simulation (`sim::simulate_dlrm`) both run this one lowering.
template <class V>
dlrm_lowered lower_dlrm(const dlrm_report& r, const dlrm_split& x, V& v) {
  const std::size_t p = r.ranks.size();
  const bool eager = r.loop == dlrm_loop::eager;
  detail::dlrm_phases<V> ph(r, v);
  const auto each = [&](auto&& f) {
    std::vector<int> ids;
    for (std::size_t k = 0; k < p; ++k) ids.push_back(f(static_cast<int>(k)));
    return ids;
  };
  const auto rank = [&](int k) -> const dlrm_rank& { return r.ranks[static_cast<std::size_t>(k)]; };
  const std::vector<int> looked_up = each([&](int k) {
    std::vector<int> in;
    if (eager)
      in.push_back(ph.run(k, "input copies", &dlrm_host::inputs, rank(k).input_copy, {}, true));
    const int bottom =
        ph.run(k, "bottom MLP forward", &dlrm_host::bottom_forward, r.bottom_forward, in);
    return ph.run(k, "embedding forward", &dlrm_host::embedding_forward, rank(k).embedding_forward,
                  {bottom});
  });
  // the pooled rows go out once the slowest rank has looked its tables up
  const int a2a_forward = v.collective("all-to-all forward", r.all_to_all_forward, looked_up);
  const std::vector<int> top = each([&](int k) {
    int forward = -1;
    if (eager) {
      // the index lists' copies, the labels' copy and `E.detach().cpu()` each wait for the GPU
      const int inter = ph.run(k, "interaction forward", &dlrm_host::interaction_forward,
                               x.interaction_forward, {a2a_forward}, true);
      const int mlp = ph.run(k, "top MLP forward", &dlrm_host::top_forward,
                             r.top_forward - x.interaction_forward, {inter}, true);
      const int loss = ph.run(k, "loss", &dlrm_host::loss, 0, {mlp}, true);
      forward = ph.run(k, "zero_grad", &dlrm_host::zero_grad, 0, {loss});
    } else {
      forward = v.compute(k, "interaction and top MLP forward", r.top_forward, {a2a_forward});
    }
    return ph.run(k, "top MLP backward", &dlrm_host::top_backward, x.top_mlp_backward, {forward});
  });
  // DDP launches the top MLP's all-reduce when its backward ends; the embedding gradients'
  // all-to-all queues behind it
  const int top_all_reduce = v.collective("top MLP all-reduce", x.all_reduce_top, top);
  std::vector<int> interaction = each([&](int k) {
    return ph.run(k, "interaction backward", &dlrm_host::interaction_backward,
                  x.interaction_backward, {top[static_cast<std::size_t>(k)]});
  });
  const std::vector<int> bottom = each([&](int k) {
    return ph.run(k, "bottom MLP backward", &dlrm_host::bottom_backward, r.bottom_backward,
                  {interaction[static_cast<std::size_t>(k)]});
  });
  interaction.push_back(top_all_reduce);
  const int a2a_backward = v.collective("all-to-all backward", r.all_to_all_backward, interaction);
  std::vector<int> bottom_done = bottom;
  bottom_done.push_back(a2a_backward);
  dlrm_lowered out;
  out.bottom_all_reduce = v.collective("bottom MLP all-reduce", x.all_reduce_bottom, bottom_done);
  for (std::size_t k = 0; k < p; ++k) {
    const int rk = static_cast<int>(k);
    out.embedding_backward.push_back(ph.run(rk, "embedding backward and update",
                                            &dlrm_host::embedding_backward,
                                            r.ranks[k].embedding_backward, {a2a_backward}));
    out.optimizer.push_back(ph.run(rk, "MLP optimizer step", &dlrm_host::optimizer, r.optimizer,
                                   {out.embedding_backward.back(), out.bottom_all_reduce}));
  }
  return out;
}

namespace detail {
/// The iteration's time from its lowering's critical path, and the communication it exposes.
inline void schedule_iteration(dlrm_report& r, const dlrm_split& x) {
  dlrm_critical_path path(r.ranks.size());
  const dlrm_lowered ids = lower_dlrm(r, x, path);
  const auto end_of = [&](int id) { return path.ends[static_cast<std::size_t>(id)]; };
  double end = end_of(ids.bottom_all_reduce);
  for (const int e : ids.embedding_backward) end = std::max(end, end_of(e));
  for (const int o : ids.optimizer) r.iteration_time = std::max(r.iteration_time, end_of(o));
  if (r.loop == dlrm_loop::eager) {
    // behind an eager host, what communication adds: the same lowering with free collectives
    dlrm_report quiet = r;
    quiet.all_to_all_forward = quiet.all_to_all_backward = 0;
    dlrm_split y = x;
    y.all_reduce_top = y.all_reduce_bottom = 0;
    dlrm_critical_path alone(r.ranks.size());
    double base = 0;
    for (const int o : lower_dlrm(quiet, y, alone).optimizer)
      base = std::max(base, alone.ends[static_cast<std::size_t>(o)]);
    r.exposed_communication = std::max(0.0, r.iteration_time - base);
    return;
  }
  double compute = 0;
  for (const auto& rk : r.ranks)
    compute = std::max(compute, r.bottom_forward + r.bottom_backward + r.top_forward +
                                    r.top_backward + rk.embedding_forward + rk.embedding_backward);
  r.exposed_communication = std::max(0.0, end - compute);
}
}  // namespace detail

namespace detail {
/// Each rank's host phases and input copy under `dlrm_loop::eager` (the copies at the profile's
/// host-to-device rate); the busiest host's time in `r`.
inline void price_host(dlrm_report& r, const dlrm& model, const dlrm_setup& setup,
                       const device_profile& prof, double b, double B) {
  for (auto& rk : r.ranks) {
    double lookups = 0;
    for (std::size_t i : rk.tables) lookups += model.tables[i].pooling;
    rk.host = eager_host(model, setup.gradient, rk.tables.size(), lookups, b, B, setup.host);
    rk.input_copy = prof.host_to_device.time(rk.host.input_bytes);
    if (rk.host.total() > r.host) {
      r.host = rk.host.total();
      r.input_copy = rk.input_copy;
    }
  }
}

/// `dlrm_plan`, with what its lowering needs beside the report.
inline std::pair<dlrm_report, dlrm_split> price_dlrm(const dlrm& model, const dlrm_setup& setup,
                                                     const std::vector<int>& owner, int ranks,
                                                     const cluster& machine,
                                                     const device_profile& prof,
                                                     const embedding_bag_model& el) {
  dlrm_report r = detail::assign_tables(model, setup, owner, ranks, machine);
  r.loop = setup.loop;
  const bool eager = setup.loop == dlrm_loop::eager;
  const double e = size_of(setup.precision);
  const double B = setup.batch, b = B / ranks;
  // MLPs and the interaction, the same on every rank (batch b); queued behind an eager host,
  // a kernel's floor is the device's, not an isolated launch's
  const device_profile q = eager ? prof.queued() : prof;
  const auto bot = detail::mlp(q, setup.precision, model.dense_features, model.bottom, b, false);
  const auto top = detail::mlp(q, setup.precision, model.top_input(), model.top, b, true);
  const detail::interaction_cost inter = detail::interaction_of(model, q, b, e);
  r.bottom_forward = bot.forward;
  r.bottom_backward = bot.backward;
  r.top_forward = top.forward + inter.forward;
  r.top_backward = top.backward + inter.backward;
  // tables, per rank
  double emb_dim_total = 0;
  for (const auto& t : model.tables) emb_dim_total += t.dim;
  detail::price_tables(r, model, setup, el, emb_dim_total, B, b, e);
  const auto [ar_top, ar_bottom] = detail::price_collectives(r, model, ranks, machine, e);
  r.optimizer = q.copy.time(3 * model.dense_parameters() * e);
  if (eager) detail::price_host(r, model, setup, prof, b, B);
  const dlrm_split split{.top_mlp_backward = top.backward,
                         .interaction_backward = inter.backward,
                         .interaction_forward = inter.forward,
                         .all_reduce_top = ar_top,
                         .all_reduce_bottom = ar_bottom};
  detail::schedule_iteration(r, split);
  // memory per rank: its tables (+ dense gradients), the MLPs' weights and gradients, the MLP
  // and interaction activations at b, its pooled outputs for all B samples and the received
  // ones for its b samples, each with its gradient
  const double mlp_states = 2 * model.dense_parameters() * e;
  const double acts = (bot.activations + top.activations + inter.activations) * e;
  for (auto& rk : r.ranks) {
    double own_dim = 0;
    for (std::size_t i : rk.tables) own_dim += model.tables[i].dim;
    const double buffers = 2 * (own_dim * B + emb_dim_total * b) * e;
    rk.memory = rk.table_bytes + mlp_states + acts + buffers;
  }
  return {std::move(r), split};
}
}  // namespace detail

/// Prices the plan that puts table i on rank `owner[i]` of `ranks` devices of `machine`
/// (ranks 0 .. p-1 of its device order). `owner` empty: every table on rank 0 (needs p = 1).
inline dlrm_report dlrm_plan(const dlrm& model, const dlrm_setup& setup,
                             const std::vector<int>& owner, int ranks, const cluster& machine,
                             const device_profile& prof, const embedding_bag_model& el) {
  return detail::price_dlrm(model, setup, owner, ranks, machine, prof, el).first;
}

/// The single-GPU step: the one-rank plan.
inline dlrm_report dlrm_step(const dlrm& model, const dlrm_setup& setup, const device& dev,
                             const device_profile& prof, const embedding_bag_model& el) {
  const cluster one =
      make_cluster("one GPU", dev, {level{"node", 1, interconnect{seconds{0}, byte_rate{1e12}}}});
  return dlrm_plan(model, setup, {}, 1, one, prof, el);
}

}  // namespace strata::analytic
