#pragma once
/// @file search/transformer_sweep.hpp
/// @brief Sweeps the strategy space of a transformer on a cluster and ranks the plans that fit.
///
/// The space: tensor degrees (dividing the heads, the KV heads, the hidden and MLP sizes, at
/// most a node), sequence parallelism on or off, expert and context degrees (1 unless given),
/// pipeline degrees (dividing the layers), the data
/// degree that fills the cluster, micro-batches, interleaving, recomputation modes and ZeRO
/// stages. Candidates are valid by construction. Each is pruned on memory first (three pipeline
/// stages, `peak_stage_memory`); only plans that fit are timed, with one kernel lowering per
/// (tensor degree, sequence parallelism, micro-batch) shared by everything else. Plans of equal
/// time are ranked by their degrees (`ranks_before`), so a sweep split into parts (`sweep_part`,
/// one per MPI rank in strata-mpi) and `merge`d gives the same answer as one sweep. The result
/// also holds the Pareto front of time, memory and GPU-hours (`search/pareto.hpp`).
/// @code
/// const auto result = strata::search::sweep(strata::zoo::gpt3_175b(),
/// strata::presets::dgx_a100(128),
///                                           {.batch = 1536, .sequence = 2048}, profile);
/// // result.best.front() is the fastest plan that fits
/// @endcode

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "strata/analytic/iteration.hpp"
#include "strata/analytic/memory.hpp"
#include "strata/analytic/price.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/search/pareto.hpp"

namespace strata::search {

/// What to sweep; empty lists mean "every valid value".
struct transformer_space {
  std::vector<int> tensor{};    ///< default: divisors of the node size that fit the model
  std::vector<int> pipeline{};  ///< default: divisors of the layers
  std::vector<int> micro_batch{1, 2, 4, 8};
  std::vector<int> virtual_stages{1, 2, 4};  ///< > 1 uses the interleaved schedule
  std::vector<parallel::recompute> recompute{
      parallel::recompute::none, parallel::recompute::selective, parallel::recompute::full};
  std::vector<int> zero{0, 1, 2, 3};
  std::vector<bool> sequence_parallel{false, true};
  std::vector<int> expert{1};   ///< expert degrees (those dividing the experts are tried)
  std::vector<int> context{1};  ///< context degrees (those whose double divides the sequence)
  std::size_t keep = 10;        ///< best plans kept
  /// The axes whose lists the user gave (a bit per `space_usage::axis`): their values no plan
  /// used are reported (`unused_values`); the defaults' are not.
  unsigned listed = ~0U;
  /// Called with the share of the space done (0 to 1) before each lowered-layer group and every
  /// 4,096 combinations tried; returning false stops the sweep with a plan_error (a time
  /// limit). Empty: never called.
  std::function<bool(double)> progress{};
};

struct ranked_transformer_plan {
  parallel::nd strategy;
  time_breakdown time;
  bytes memory{};    ///< peak: the tensors of the fullest stage at their peak moment
  bytes required{};  ///< `memory` plus the runtime's headroom: what "fits" is judged on
};

/// Which share of a sweep to run: the lowered-layer groups g with g % parts == part (a
/// distributed search gives each rank one part; `merge` joins the results).
struct sweep_part {
  int part = 0;
  int parts = 1;
};

/// The objectives of a plan's Pareto front: iteration time (s), required memory per device
/// (bytes: the peak and the runtime's headroom) and GPU-hours per iteration.
using transformer_front = pareto_front<ranked_transformer_plan, 3>;

/// Which of a space's listed values some valid plan used, per axis (bit i: the axis list's i-th
/// value; a list's values past the 64th count as used): a requested value no plan could use is
/// reported, never dropped silently (`unused_values`).
struct space_usage {
  enum axis { tensor, pipeline, micro_batch, virtual_stages, expert, context, zero, axes };
  std::array<std::uint64_t, axes> used{};
  constexpr void mark(axis a, const std::vector<int>& values, int v) {
    for (std::size_t i = 0; i < values.size() && i < 64; ++i)
      if (values[i] == v) used[a] |= std::uint64_t{1} << i;
  }
  constexpr void mark(const transformer_space& sp, const parallel::nd& s) {
    mark(tensor, sp.tensor, s.tensor.degree);
    mark(pipeline, sp.pipeline, s.pipeline.degree);
    mark(micro_batch, sp.micro_batch, s.micro_batch);
    mark(virtual_stages, sp.virtual_stages, s.pipeline.virtual_stages);
    mark(expert, sp.expert, s.expert.degree);
    mark(context, sp.context, s.context.degree);
    mark(zero, sp.zero, s.data.zero);
  }
  constexpr void merge(const space_usage& o) {
    for (std::size_t a = 0; a < axes; ++a) used[a] |= o.used[a];
  }
};

struct transformer_sweep_result {
  std::vector<ranked_transformer_plan> best;  ///< fastest first
  long long candidates = 0;                   ///< valid plans considered
  long long fitting = 0;                      ///< plans within the device memory (timed)
  transformer_front pareto;  ///< the plans that fit and that no other beats on time, memory and
                             ///< GPU-hours (`pareto_front`), fastest first
  space_usage usage;         ///< the listed values the valid plans used
};

/// The values `space` lists that no valid plan used, as "axis value" with why such a value can
/// fail ("micro_batch 3", ...).
[[nodiscard]] inline std::vector<std::string> unused_values(const transformer_space& sp,
                                                            const space_usage& u) {
  struct listed {
    const char* name;
    const std::vector<int>* values;
  };
  const listed lists[] = {{"tensor", &sp.tensor},
                          {"pipeline", &sp.pipeline},
                          {"micro_batch", &sp.micro_batch},
                          {"virtual_stages", &sp.virtual_stages},
                          {"expert", &sp.expert},
                          {"context", &sp.context},
                          {"zero", &sp.zero}};
  static constexpr const char* why[] = {
      "the model, the node or the devices admit no plan with it",
      "it splits the layers or the devices of no plan",
      "it divides no data-parallel replica's share of the batch in any plan",
      "no pipeline of the search interleaves with it",
      "it divides no plan's experts and devices",
      "it splits the sequence or the devices of no plan",
      "no plan shards over data-parallel ranks with it (or its engine refuses it)"};
  std::vector<std::string> out;
  for (std::size_t a = 0; a < space_usage::axes; ++a)
    for (std::size_t i = 0; (sp.listed >> a & 1U) && i < lists[a].values->size() && i < 64; ++i)
      if (!(u.used[a] >> i & 1))
        out.push_back(std::string(lists[a].name) + " " + std::to_string((*lists[a].values)[i]) +
                      ": " + why[a]);
  return out;
}

namespace detail {
inline std::vector<int> divisors(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= n && d <= limit; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}
/// The plan's degrees in a fixed order: ties in time are broken by it, so the ranking is the
/// same whatever order (or how many ranks) the plans were timed in.
inline auto plan_key(const parallel::nd& s) {
  return std::array<int, 10>{s.tensor.degree,
                             s.tensor.sequence ? 1 : 0,
                             s.context.degree,
                             s.expert.degree,
                             s.micro_batch,
                             s.pipeline.degree,
                             s.pipeline.virtual_stages,
                             static_cast<int>(s.recomputation),
                             s.data.zero,
                             s.data.degree};
}
}  // namespace detail

/// The sweep's order: faster first, then by the plan's degrees (a total order on distinct plans).
[[nodiscard]] inline bool ranks_before(const ranked_transformer_plan& a,
                                       const ranked_transformer_plan& b) {
  const double ta = a.time.total().count(), tb = b.time.total().count();
  if (ta != tb) return ta < tb;
  return detail::plan_key(a.strategy) < detail::plan_key(b.strategy);
}

/// Calls `visit(plan, layer_compute, plan_keeps)` for every valid candidate of `space` (in
/// `part`), lowering one layer per (tensor degree, sequence parallelism, expert, context,
/// micro-batch) group and sharing it with every plan of the group.
template <class Visit>
void for_each_plan(const transformer& m, const cluster& c, const training& tr,
                   const device_profile& prof, const transformer_space& space, Visit&& visit,
                   sweep_part part = {}) {
  parallel::check_model_setup(m, tr);
  tr.check_transformer();
  if (part.parts < 1 || part.part < 0 || part.part >= part.parts)
    throw plan_error("search: the part to run must lie in [0, parts)");
  const int devices = c.devices();
  const int node = c.levels[0].fanout;
  const int seq = tr.sequence_or(m.sequence);
  // each degree must divide the devices and pass its policy's own limits (a degree the space
  // lists that the model refuses is skipped): filtered once, so a long list costs its length
  const auto degrees = [&](const std::vector<int>& listed, auto&& admits) {
    std::vector<int> out;
    for (const int v : listed)
      if (v >= 1 && devices % v == 0 && admits(v)) out.push_back(v);
    return out;
  };
  const std::vector<int> tensor =
      degrees(space.tensor.empty() ? detail::divisors(node, node) : space.tensor,
              [&](int t) { return parallel::tensor_parallel{.degree = t}.admits(m); });
  const std::vector<int> pipeline =
      degrees(space.pipeline.empty() ? detail::divisors(m.layers, m.layers) : space.pipeline,
              [](int) { return true; });
  const std::vector<int> expert = degrees(
      space.expert, [&](int e) { return parallel::expert_parallel{.degree = e}.admits(m); });
  const std::vector<int> context = degrees(
      space.context, [&](int cx) { return parallel::context_parallel{.degree = cx}.admits(seq); });
  std::vector<int> micro_batch;  // a micro-batch divides a replica's share, so the whole batch
  for (const int b : space.micro_batch)
    if (b >= 1 && tr.batch % b == 0) micro_batch.push_back(b);
  const double combinations =
      static_cast<double>(tensor.size()) * static_cast<double>(space.sequence_parallel.size()) *
      static_cast<double>(expert.size()) * static_cast<double>(context.size()) *
      static_cast<double>(micro_batch.size());
  long long group = -1;
  double tried = 0;
  const auto report = [&] {  // the share done: the combinations before the current one
    const double done = (tried - 1) / combinations;
    if (space.progress && !space.progress(done))
      throw plan_error("search: stopped at its time limit after " +
                       std::to_string(static_cast<int>(100 * done)) + " % of the space");
  };
  // the axes that change the lowered layer: tensor, sequence parallelism, expert, context and
  // micro-batch; everything else reuses it
  for (const int t : tensor)
    for (const bool sp : space.sequence_parallel)
      for (const int e : expert)
        for (const int cx : context)
          for (const int b : micro_batch) {
            if (++tried, static_cast<long long>(tried) % 4096 == 0) report();
            // t x e x cx must divide the devices (divided in turn: the product may not fit)
            if (!parallel::tensor_parallel{.degree = t, .sequence = sp}.admits(m) ||
                devices / t % e != 0 || devices / t / e % cx != 0)
              continue;
            // TP communication overlap needs sequence parallelism (nd::check)
            if (tr.framework.tp_comm_overlap && t > 1 && !sp) continue;
            if (++group % part.parts != part.part) continue;
            report();
            // recipes whose kernels change under checkpointing lower once per recomputation, and
            // per-operator checkpointing always (it marks the kernels it caches)
            const bool per_rc = tr.framework.modules != frameworks::module_style::fused;
            const auto lowered_as = [&](parallel::recompute rc) {
              return per_rc || parallel::saves_op_outputs(rc) ? rc : space.recompute.front();
            };
            std::array<analytic::layer_compute, 4> lcs{};
            std::array<analytic::plan_keeps, 4> keeps{};  // what a layer keeps, per recompute
            for (const auto rc : space.recompute) {
              const auto r = static_cast<std::size_t>(rc);
              if (lowered_as(rc) == rc)
                lcs[r] = analytic::lower_layer(m, prof, tr, t, sp, cx, e, b, rc);
              keeps[r] = analytic::keeps_of(m,
                                            {.tensor = {.degree = t, .sequence = sp},
                                             .context = {.degree = cx},
                                             .expert = {.degree = e},
                                             .recomputation = rc,
                                             .micro_batch = b},
                                            tr);
            }
            for (const int p : pipeline) {
              if (devices / t / e / cx % p != 0) continue;
              const int d = devices / t / e / cx / p;
              const int replicas = d * e;
              if (tr.batch % replicas != 0 || (tr.batch / replicas) % b != 0) continue;
              const int micro = tr.batch / replicas / b;
              for (const int v : space.virtual_stages) {
                const parallel::pipeline_parallel pipe{
                    .degree = p,
                    .virtual_stages = v,
                    .kind =
                        v > 1 ? parallel::schedule::interleaved : parallel::schedule::one_f_one_b};
                if (!pipe.admits(m.layers, micro)) continue;
                if (!parallel::holds_dense_layers(m, pipe)) continue;
                for (const auto rc : space.recompute)
                  for (const int z : space.zero) {
                    if (parallel::saves_op_outputs(rc) && !parallel::per_op_modelled(m, tr))
                      continue;
                    const analytic::layer_compute& lc =
                        lcs[static_cast<std::size_t>(lowered_as(rc))];
                    if (z > 0 && d * e * cx == 1) continue;  // nothing to shard
                    // plans the framework's engine refuses (DeepSpeed's ZeRO-2/3 with pipelines)
                    if (parallel::engine_refuses(tr.framework.data, z, p) != nullptr) continue;
                    visit(parallel::nd{.tensor = {.degree = t, .sequence = sp},
                                       .context = {.degree = cx},
                                       .expert = {.degree = e},
                                       .pipeline = pipe,
                                       .data = {.degree = d, .zero = z},
                                       .recomputation = rc,
                                       .micro_batch = b},
                          lc, keeps[static_cast<std::size_t>(rc)]);
                  }
              }
            }
          }
}

namespace detail {
// The functions below are templates only so that a translation unit that never sweeps does not
// instantiate the sweep, its heaps and its sorts (about 5 % of the umbrella header's compile time).

/// Keeps the `keep` best plans (`ranks_before`) in a heap whose top is the worst kept.
template <class Plans>
void keep_best(Plans& best, std::size_t keep, const ranked_transformer_plan& r) {
  if (best.size() < keep) {
    best.push_back(r);
    strata::detail::push_heap(best.begin(), best.end(), ranks_before);
  } else if (keep > 0 && ranks_before(r, best.front())) {
    strata::detail::pop_heap(best.begin(), best.end(), ranks_before);
    best.back() = r;
    strata::detail::push_heap(best.begin(), best.end(), ranks_before);
  }
}
template <class Result>
void finish(Result& out) {
  strata::detail::sort_heap(out.best.begin(), out.best.end(), ranks_before);
  strata::detail::sort(out.pareto.entries.begin(), out.pareto.entries.end(),
                       [](const auto& a, const auto& b) { return ranks_before(a.item, b.item); });
}
}  // namespace detail

/// Joins the results of the parts of one sweep (`sweep_part`): the `keep` best of all, the
/// front of the fronts, the counts summed. The same answer as one sweep over the whole space.
template <std::same_as<transformer_sweep_result> Result>
[[nodiscard]] Result merge(const std::vector<Result>& parts, std::size_t keep) {
  Result out;
  for (const auto& r : parts) {
    out.candidates += r.candidates;
    out.fitting += r.fitting;
    out.usage.merge(r.usage);
    for (const auto& p : r.best) detail::keep_best(out.best, keep, p);
    out.pareto.merge(r.pareto);
  }
  detail::finish(out);
  return out;
}

/// Sweeps `space` for `m` on every device of `c` (or the share `part` of it).
template <std::same_as<transformer> Model>
[[nodiscard]] transformer_sweep_result sweep(const Model& m, const cluster& c, const training& tr,
                                             const device_profile& prof,
                                             const transformer_space& space = {},
                                             sweep_part part = {}) {
  transformer_sweep_result out;
  const double devices = c.devices();
  analytic::collectives_memo collectives;  // the plans come grouped by their lowering
  analytic::data_collectives_memo data;
  // one plan: pruned on memory, timed when it fits
  for_each_plan(
      m, c, tr, prof, space,
      [&](const parallel::nd& s, const analytic::layer_compute& lc,
          const analytic::plan_keeps& keeps) {
        ++out.candidates;
        out.usage.mark(space, s);
        // the headroom grows with the tensors' peak, so one stage over the card rules a plan out
        const auto required = [&](bytes mem) {
          return mem + analytic::headroom_of(s, tr.runtime, mem).total();
        };
        const auto over = [&](bytes mem) { return required(mem) > c.dev.memory; };
        const bytes mem = analytic::peak_stage_memory(m, s, tr, keeps, over).total();
        const bytes need = required(mem);
        if (need > c.dev.memory) return;
        ++out.fitting;
        const ranked_transformer_plan r{
            s, analytic::iteration(m, s, c, tr, prof, lc, collectives(m, s, c, tr, lc), &data), mem,
            need};
        detail::keep_best(out.best, space.keep, r);
        const double t = r.time.total().count();
        out.pareto.offer({t, r.required.count(), devices * t / 3600.0}, r);
      },
      part);
  detail::finish(out);
  return out;
}

}  // namespace strata::search
