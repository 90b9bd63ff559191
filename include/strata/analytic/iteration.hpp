#pragma once
/// @file analytic/iteration.hpp
/// @brief The closed-form time of one iteration of a transformer plan: the stages' spans priced by
/// `analytic/price.hpp` folded over the pipeline schedule (`parallel::pipeline_parallel::bubble`
/// and its sends), the data-parallel engine's exposed collectives
/// (`parallel::data_parallel::time`), the optimizer step and the host's exposed dispatch.

#include "strata/analytic/parameters.hpp"
#include "strata/analytic/price.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/limits.hpp"
#include "strata/lower/transformer.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/report.hpp"
#include "strata/training.hpp"
#include "strata/units.hpp"

namespace strata::analytic {

using parallel::recompute;

/// One micro-batch's span on the pipeline's critical (slowest) stage, the slowest time and the sum
/// over the stages.
struct pipeline_stages {
  lower::span crit;
  seconds worst, sum;
  int critical = 0;
};

namespace detail {
/// Stage i's micro-batch when only some of its layers are checkpointed
/// (`parallel::nd::recompute_layers`): the others' backward recomputes nothing.
[[nodiscard, gnu::noinline]] constexpr lower::span some_checkpointed_span(const transformer& m,
                                                                          const parallel::nd& s,
                                                                          const layer_compute& lc,
                                                                          const stage_spans& sp,
                                                                          int i, bool host_free) {
  const int p = s.pipeline.degree, layers = s.stage_layers(m, i);
  const int k = s.checkpointed_layers(m, i);
  if (!host_free) return sp.micro_batch(lc, layers, i == 0, i == p - 1, k);
  double t =
      layers * (sp.forward_layer.gpu + sp.backward_layer.gpu) - (layers - k) * sp.recompute.gpu;
  if (i == 0) t += lc.embedding_forward.gpu + lc.embedding_backward.gpu;
  if (i == p - 1) t += lc.head_forward.gpu + lc.head_backward.gpu;
  return lower::span::kernel(0, t);
}
}  // namespace detail

/// Per micro-batch time of each stage of plan `s`; the slowest sets the steady state. The middle
/// stages are alike, so three stage times give the worst and the sum. Without host costs a span
/// is its GPU time: a sum (the same algebra, fewer operations).
[[nodiscard]] constexpr pipeline_stages stages_of(const transformer& m, const parallel::nd& s,
                                                  const layer_compute& lc, const stage_spans& sp) {
  const int p = s.pipeline.degree;
  const bool host_free = lc.per_kernel <= 0 && lc.checkpoint_host <= 0;
  auto stage_span = [&](int i) {
    if (s.recompute_layers > 0) return detail::some_checkpointed_span(m, s, lc, sp, i, host_free);
    if (!host_free) return sp.micro_batch(lc, s.stage_layers(m, i), i == 0, i == p - 1);
    const int d = i == 0 ? lc.dense_layers : 0;  // the dense first layers
    double t = d == 0
                   ? s.stage_layers(m, i) * (sp.forward_layer.gpu + sp.backward_layer.gpu)
                   : (s.stage_layers(m, i) - d) * (sp.forward_layer.gpu + sp.backward_layer.gpu) +
                         d * (sp.dense.forward.gpu + sp.dense.backward.gpu);
    if (i == 0) t += lc.embedding_forward.gpu + lc.embedding_backward.gpu;
    if (i == p - 1) t += lc.head_forward.gpu + lc.head_backward.gpu;
    return lower::span::kernel(0, t);
  };
  pipeline_stages out{stage_span(0), {}, {}, 0};
  out.worst = seconds{out.crit.time};
  out.sum = out.worst;
  if (p > 2) {
    const lower::span middle = stage_span(1);
    out.sum += (p - 2) * seconds{middle.time};
    if (seconds{middle.time} > out.worst)
      out.worst = seconds{middle.time}, out.critical = 1, out.crit = middle;
  }
  if (p > 1) {
    const lower::span last = stage_span(p - 1);
    out.sum += seconds{last.time};
    if (seconds{last.time} > out.worst)
      out.worst = seconds{last.time}, out.critical = p - 1, out.crit = last;
  }
  return out;
}

/// One iteration's time on the critical path, with kernel times `lc` from `lower_layer` and the
/// layer's collectives `lcoll` from `collectives_of` (pass the same to every strategy that shares
/// tp, sp, cp, ep and b, and for `lcoll` the same tensor, context and expert groups); a sweep
/// passes `data` to price each plan's data-parallel traffic once.
[[nodiscard]] constexpr time_breakdown iteration(const transformer& m, const parallel::nd& s,
                                                 const cluster& c, const training& tr,
                                                 const device_profile& prof,
                                                 const layer_compute& lc,
                                                 const layer_collectives& lcoll,
                                                 data_collectives_memo* data = nullptr) {
  using parallel::axis;
  const double seq = detail::sequence_of(m, tr);
  const int p = s.pipeline.degree, mb = s.micro_batches(tr);
  const double b = s.micro_batch, sl = seq / s.context.degree, h = m.hidden;
  const double act = tr.activation_bytes();
  const int tp = s.tensor.degree;
  const recompute rc = s.recomputation;

  const stage_spans sp =
      spans_of(lc, lcoll, rc, s.recompute_layers > 0, checkpoint_io(m, s, c, tr));

  const pipeline_stages stages = stages_of(m, s, lc, sp);
  const lower::span crit = stages.crit;
  const seconds worst = stages.worst, sum = stages.sum;
  const int critical = stages.critical;
  const double lcrit = s.stage_layers(m, critical);
  const bool first = critical == 0, last = critical == p - 1;
  // a per-layer figure over the critical stage's layers, its dense first layers' `dense` each
  const double dcrit = first ? lc.dense_layers : 0;
  const auto over_layers = [&](double layer, double dense_layer) {
    return dcrit == 0 ? lcrit * layer : (lcrit - dcrit) * layer + dcrit * dense_layer;
  };
  time_breakdown T;
  T.forward =
      mb * seconds{over_layers(lc.forward.gpu, lc.dense.forward.gpu) +
                   (first ? lc.embedding_forward.gpu : 0.0) + (last ? lc.head_forward.gpu : 0.0)};
  T.backward =
      mb * seconds{over_layers(lc.backward.gpu, lc.dense.backward.gpu) +
                   (first ? lc.embedding_backward.gpu : 0.0) + (last ? lc.head_backward.gpu : 0.0)};
  T.recompute = s.recompute_layers > 0
                    ? mb * s.checkpointed_layers(m, critical) * seconds{sp.recompute.gpu}
                : dcrit == 0 ? mb * lcrit * seconds{sp.recompute.gpu}
                             : mb * seconds{over_layers(sp.recompute.gpu, sp.dense.recompute.gpu)};
  // each policy adds its term: the fold over the plan's policies
  const double passes = mb * lcrit;  // layer passes of the critical stage
  T.tensor_comm = s.tensor.time(passes, lcoll.tensor, lcoll.tensor_backward);
  T.context_comm = s.context.time(passes, lcoll.context_forward, lcoll.context_backward);
  // the dense first layers route no tokens
  T.expert_comm = s.expert.time(mb * (lcrit - dcrit), lcoll.expert);
  // each forward and backward step waits for its send of b s h / t (Megatron's scatter/gather:
  // each tensor-parallel rank sends its 1/t)
  seconds send{};
  if (p > 1) {
    const interconnect link = c.between(0, s.group_of(axis::pipeline).stride);
    send = link.transfer(bytes{b * sl * h * act / tp});
  }
  const auto pipeline_terms = s.pipeline.time(sum, worst, mb, send, tr.framework.overlap_p2p);
  T.pipeline_bubble = pipeline_terms.bubble;
  T.pipeline_p2p = pipeline_terms.sends;

  // data parallelism and ZeRO on the critical stage's parameters: every weight is gathered,
  // the trained ones (LoRA: the adapters) reduced and updated
  // (the counts `lower_layer` worked out; a hand-made `layer_compute` has none)
  const model_parameters counts = lc.parameters.dense_layer > 0 ? lc.parameters : parameters_of(m);
  const stage_parameters n = parameters_on(m, s, critical, counts, static_cast<int>(lcrit)),
                         tn = trained_on(m, s, tr, critical, n);
  const parallel::zero_stage zero = s.data.sharding();
  const double gb = tr.gradient_bytes(), wb = tr.weight_bytes();
  const frameworks::sharding& e = tr.framework.data;
  const parallel::calls_per_step calls =
      collective_calls(m, s, tr, lcrit, (tn.dense + tn.expert) * gb);
  const double bucket_fraction = strata::detail::min(
      1.0, calls.bucket / strata::detail::max((tn.dense + tn.expert) * gb, 1.0));
  const seconds f_mb = T.forward / static_cast<double>(mb);
  const seconds b_mb = (T.backward + T.recompute) / static_cast<double>(mb);
  // the rank's parameter partition (what its optimizer updates)
  const double partition = partition_of(s, tn, zero.shards_optimizer());
  // ZeRO-Infinity brings the weights over PCIe on a single rank too
  const bool offload_weights =
      zero.shards_weights() && e.offload_parameters != frameworks::offload_device::none;
  if (s.replicas() * s.context.degree > 1 || offload_weights) {
    const data_collective_costs dc =
        data ? (*data)(s, c, tr, n, tn, calls) : data_collectives_of(s, c, tr, n, tn, calls);
    seconds ag = dc.all_gather.total();
    // ZeRO-Infinity: each pass first brings the rank's weight partition over PCIe
    if (offload_weights) {
      if (!(c.host.pcie > byte_rate{}) ||
          (e.offload_parameters == frameworks::offload_device::nvme &&
           !(c.host.nvme > byte_rate{})))
        throw plan_error(limits::offload_needs_host);
      ag += seconds{partition_of(s, n) * wb / (c.host.pcie.count() * offload_efficiency::pcie)};
    }
    const parallel::data_parallel::collective_times dp{dc.all_reduce.total(),
                                                       dc.reduce_scatter.total(), ag};
    T.data_comm =
        s.data.time(mb, dp, f_mb, b_mb, 1.0 / strata::detail::max(1.0, lcrit), bucket_fraction, p,
                    tr.framework.chunk_data_sync ? s.pipeline.virtual_stages : 1);
  }
  if (e.offload_optimizer != frameworks::offload_device::none) {
    T.optimizer = offloaded_update(c, tr, partition, b_mb);
  } else {
    // one memory-bound pass over this rank's (sharded) parameters
    const lower::span opt = optimizer_span(
        prof, tr, lc, partition,
        lc.per_tensor > 0 ? lower::parameter_tensors(m, tr.framework) * lcrit / m.layers : 0.0);
    T.optimizer = seconds{opt.gpu};
    T.host = seconds{p == 1 ? crit.repeat(mb).then(opt).exposed_host()
                            : mb * crit.exposed_host() + opt.exposed_host()};
    return T;
  }
  // an eager host: the time the GPU waits for kernels to be issued (exact on one stage, where
  // the micro-batches run back to back; the update runs on the CPU here)
  T.host = seconds{p == 1 ? crit.repeat(mb).exposed_host() : mb * crit.exposed_host()};
  return T;
}

/// `iteration` with the layer's collectives priced for `s` (`collectives_of`).
[[nodiscard]] constexpr time_breakdown iteration(const transformer& m, const parallel::nd& s,
                                                 const cluster& c, const training& tr,
                                                 const device_profile& prof,
                                                 const layer_compute& lc) {
  return iteration(m, s, c, tr, prof, lc, collectives_of(m, s, c, tr, lc));
}

}  // namespace strata::analytic
