#pragma once
/// @file analytic/price.hpp
/// @brief What a transformer plan's lowered operations cost: one layer's kernels (and the host's
/// dispatch) priced with a device profile (`lower_layer`), its tensor-, context- and
/// expert-parallel collectives on the groups the plan lays out (`collectives_of`), the spans a
/// micro-batch runs on a stage, the optimizer step (on the GPU or offloaded) and the
/// data-parallel and ZeRO collectives of a stage (`data_collectives_of`). The closed form
/// (`analytic/iteration.hpp`), the simulator, the sweep and Proteus all price with it.

#include <array>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "strata/analytic/parameters.hpp"
#include "strata/comm/collectives.hpp"
#include "strata/comm/nccl.hpp"
#include "strata/detail/algorithm.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/limits.hpp"
#include "strata/lower/transformer.hpp"
#include "strata/model/transformer.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/training.hpp"
#include "strata/units.hpp"

namespace strata::analytic {

using parallel::recompute;

/// Time of one layer for one micro-batch on one rank: `lower::layer`'s kernels priced with the
/// device profile (queued back to back) and, for eager recipes, the host's dispatch
/// (`lower::span`).
/// What a layer (or the embedding, or the head) keeps per micro-batch, by kind.
struct layer_keeps {
  double activation = 0, weight_copy = 0, until_loss = 0, graph = 0;
  [[nodiscard]] constexpr double of(lower::keep_kind kind) const {
    switch (kind) {
      case lower::keep_kind::activation:
        return activation;
      case lower::keep_kind::weight_copy:
        return weight_copy;
      case lower::keep_kind::until_loss:
        return until_loss;
      case lower::keep_kind::graph:
        return graph;
    }
    return 0;
  }
  /// Counts a saved tensor under its kind.
  constexpr void add(const lower::saved_tensor& t) {
    (t.kind == lower::keep_kind::activation    ? activation
     : t.kind == lower::keep_kind::weight_copy ? weight_copy
     : t.kind == lower::keep_kind::until_loss  ? until_loss
                                               : graph) += t.bytes;
  }
};

/// One kind of layer's priced kernels and keeps (`layer_compute::dense`; a model with dense
/// first layers has experts, which per-operator checkpointing refuses: no `uncached` forward).
struct layer_kind_compute {
  lower::span forward, backward, attention;
  layer_keeps keeps{}, whole_keeps{};
};

/// A layer's GEMM time (s) that its tensor-parallel collectives can run beside, per
/// `lower::tp_window` but `none` (index: the window's value less one), in one pass.
using tp_windows = std::array<double, 8>;

struct layer_compute {
  lower::span forward, backward;
  lower::span attention;  ///< the attention core's forward (recomputed under selective), fused
                          ///< (flash) or not
  lower::span uncached;   ///< the forward without what per-operator checkpointing caches
  lower::span embedding_forward, embedding_backward;  ///< first stage
  lower::span head_forward, head_backward;            ///< last stage: norm, logits, loss
  double attention_backward = 0;  ///< s of GPU time (what ring attention hides behind)
  tp_windows windows{};           ///< the backward's GEMMs by window (`collectives_of`)
  tp_windows forward_windows{};   ///< the forward's GEMMs by window
  double checkpoint_host = 0;     ///< host time to re-enter a checkpointed layer
  double per_kernel = 0;          ///< host time per kernel (eager recipes)
  double per_tensor = 0;          ///< host time per parameter tensor in the optimizer step
  /// what the forward lowerings keep (`keeps_of` of the same shard): a layer, the embedding, the
  /// head
  layer_keeps keeps{}, embedding_keeps{}, head_keeps{};
  /// what the layer keeps without recomputation, when the same lowering told it (`whole_known`;
  /// see `lower_layer`)
  layer_keeps whole_keeps{};
  bool whole_known = false;
  /// the model's parameter counts (`parameters_of`), which the stages' shares are made from
  model_parameters parameters{};
  /// the dense first layers (`transformer::dense_layers`, lowered as `first_dense()`): how many,
  /// and one of them priced
  int dense_layers = 0;
  layer_kind_compute dense{};
};

namespace detail {
/// Prices kernels into a span: GPU time from the profile, the recipe's host time per kernel.
/// Without host costs the span is the kernels' sum (what a queued stream runs).
struct pricer {
  const device_profile& p;
  const gemm_model& g;
  bool fp32_attention = false;
  double per_kernel = 0;
  double gpu = 0, attention_gpu = 0;
  lower::span total{}, attention{};  ///< with host costs only
  layer_keeps kept{};                ///< what the lowering saved (forward)
  layer_keeps would_keep{};          ///< a checkpointed layer's saves without checkpointing
  /// per-operator checkpointing: the GPU time and the number of the kernels whose outputs it
  /// caches (its recomputation runs the others)
  double cached_gpu = 0, cached_kernels = 0;
  tp_windows windows{};

  [[gnu::always_inline]] constexpr void kernel(const lower::kernel_op& k) {  // see lower::emit
    const double t = lower::gpu_time<false>(k, p, g, fp32_attention);        // no convolutions here
    gpu += t;
    if (k.window != lower::tp_window::none) windows[static_cast<std::size_t>(k.window) - 1] += t;
    // the attention core: what selective recomputation runs again
    const bool core = k.kind == lower::kernel_kind::attention || k.attention_core;
    if (core) attention_gpu += t;
    if (k.op_saved) cached_gpu += t, cached_kernels += k.times;
    if (per_kernel <= 0 && k.host <= 0) return;
    lower::span one = lower::span::kernel(per_kernel, t / k.times).repeat(k.times);
    if (k.host > 0) one = lower::span::kernel(k.host, 0).then(one);
    if (k.sync) one = one.then(lower::span::sync());
    total = total.then(one);
    if (core) attention = attention.then(one);
  }
  constexpr void save(const lower::saved_tensor& t) { kept.add(t); }
  constexpr void would_save(const lower::saved_tensor& t) { would_keep.add(t); }
  [[nodiscard]] constexpr lower::span result() const {
    return per_kernel > 0 ? total : lower::span::kernel(0, gpu);
  }
  /// The forward without the kernels per-operator checkpointing caches: their GPU time, and
  /// with host costs the host's issue of the others.
  [[nodiscard]] constexpr lower::span uncached_result() const {
    const double host = per_kernel > 0 ? total.host - per_kernel * cached_kernels : 0.0;
    return lower::span::kernel(host, gpu - cached_gpu);
  }
  [[nodiscard]] constexpr lower::span attention_result() const {
    return per_kernel > 0 ? attention : lower::span::kernel(0, attention_gpu);
  }
};

/// One of the dense first layers (`transformer::first_dense`) lowered and priced; out of line,
/// as only DeepSeek's models have them.
[[nodiscard, gnu::noinline]] constexpr layer_kind_compute price_dense_layer(
    const transformer& m, const lower::shard& x, const training& tr, const device_profile& q,
    const gemm_model& g, bool fp32_attention, double per_kernel) {
  const transformer d = m.first_dense();
  pricer f{q, g, fp32_attention, per_kernel}, b = f;
  lower::layer(d, x, tr, lower::phase::forward, f);
  lower::layer(d, x, tr, lower::phase::backward, b);
  return {f.result(), b.result(), f.attention_result(), f.kept, f.would_keep};
}
}  // namespace detail

/// The GEMM models of a training setup on queued profile `q`: the layers' (fp8 GEMMs: the bf16
/// model at the fp8 peak) and the head's, which under fp8 runs outside fp8_autocast at the
/// 16-bit rate (`lower::builder::linear`).
struct gemm_models {
  gemm_model layers, head;
};
[[nodiscard]] constexpr gemm_models gemm_models_of(const device_profile& q, const training& tr) {
  gemm_model g = q.gemm(tr.compute());
  if (tr.compute() != dtype::fp8) return {g, g};
  const gemm_model head = q.gemm(dtype::bf16);
  if (q.dev.peak(dtype::fp8) > q.dev.peak(dtype::bf16)) {
    g.peak *= q.dev.peak(dtype::fp8) / q.dev.peak(dtype::bf16);  // at the profile's power limit
    g.element = 1;
  }
  return {g, head};
}

/// Lowers one layer, the embedding and the head for the shard `x` (`lower/transformer.hpp`) and
/// prices them.
[[nodiscard]] constexpr layer_compute lower_layer(const transformer& m, const device_profile& prof,
                                                  const training& tr, const lower::shard& x) {
  device_profile q = prof.queued();
  q.allow_tf32(tr.tf32);
  const gemm_models gm = gemm_models_of(q, tr);
  const gemm_model& g = gm.layers;
  const bool eager = tr.framework.eager;
  layer_compute c;
  c.per_kernel = eager ? q.dispatch.per_kernel * tr.framework.dispatch_share : 0.0;
  c.per_tensor = eager ? q.dispatch.per_tensor : 0.0;
  c.checkpoint_host = eager ? q.dispatch.per_checkpoint : 0.0;
  const bool fp32_attention = tr.compute() == dtype::fp32;
  using lower::phase;
  detail::pricer f{q, g, fp32_attention, c.per_kernel}, b = f, ef = f, eb = f;
  detail::pricer hf{q, gm.head, fp32_attention, c.per_kernel}, hb = hf;
  lower::layer(m, x, tr, phase::forward, f);
  lower::layer(m, x, tr, phase::backward, b);
  lower::embedding(m, x, tr, phase::forward, ef);
  lower::embedding(m, x, tr, phase::backward, eb);
  lower::head(m, x, tr, phase::forward, hf);
  lower::head(m, x, tr, phase::backward, hb);
  c.forward = f.result();
  c.attention = f.attention_result();
  c.uncached = f.uncached_result();
  c.backward = b.result();
  c.attention_backward = b.attention_gpu;
  c.windows = b.windows;
  c.forward_windows = f.windows;
  c.embedding_forward = ef.result();
  c.embedding_backward = eb.result();
  c.head_forward = hf.result();
  c.head_backward = hb.result();
  c.keeps = f.kept;
  c.embedding_keeps = ef.kept;
  c.head_keeps = hf.kept;
  c.parameters = parameters_of(m);
  // Under full recomputation the forward differs from the layer's without recomputation only in
  // what it keeps, except in `transformers`' code (no k/v cache under checkpointing): there the
  // saves it would make are the whole layer's (`builder::save`), and `keeps_of` need not lower
  // it again.
  if (x.recompute == recompute::full &&
      tr.framework.modules != frameworks::module_style::transformers) {
    c.whole_keeps = f.would_keep;
    c.whole_known = true;
  }
  if (m.dense_layers > 0) {  // one dense first layer, priced the same way
    c.dense_layers = m.dense_layers;
    c.dense = detail::price_dense_layer(m, x, tr, q, g, fp32_attention, c.per_kernel);
  }
  return c;
}

/// The same for a strategy's shard (`tp`, `sp`, `cp`, `ep`, micro-batch `b` and its
/// recomputation: some recipes run other kernels under checkpointing, e.g. Hugging Face's
/// models build no k/v cache).
[[nodiscard]] constexpr layer_compute lower_layer(const transformer& m, const device_profile& prof,
                                                  const training& tr, int tp, bool sp, int cp,
                                                  int ep, double b,
                                                  recompute rc = recompute::none) {
  const double seq = detail::sequence_of(m, tr);
  return lower_layer(m, prof, tr, lower::shard{b, seq / cp, seq, tp, sp, cp, ep, rc});
}

/// What collective calls cost, as NCCL prices each call (`comm::nccl`: the fastest algorithm and
/// protocol, launch included), split into the start-up that every call pays whatever its size
/// and the transfer. The closed form adds the two; the simulator runs the start-up as a flow's
/// latency and the transfer as its bytes on the links, so that contention stretches only the
/// transfer and an uncontended flow takes exactly `total()`.
struct call_cost {
  seconds startup{};
  seconds transfer{};
  [[nodiscard]] static constexpr call_cost of(comm::collective op, const cluster& c, group g,
                                              bytes s) {
    const comm::nccl::choice x = comm::nccl::choose(op, c, g, s);
    return {x.startup, x.time - x.startup};
  }
  [[nodiscard]] constexpr seconds total() const { return startup + transfer; }
  constexpr call_cost& operator+=(const call_cost& o) {
    startup += o.startup;
    transfer += o.transfer;
    return *this;
  }
  friend constexpr call_cost operator+(call_cost a, const call_cost& b) { return a += b; }
  friend constexpr call_cost operator*(double k, const call_cost& a) {
    return {k * a.startup, k * a.transfer};
  }
};

namespace detail {
/// The data axis's ZeRO shard group (all data-parallel ranks unless hybrid sharding is on).
constexpr group shard_group(const parallel::nd& s) {
  group g = s.group_of(parallel::axis::data);
  g.size = s.data.shards();
  return g;
}
/// The ranks holding the same shard in the other shard groups (hybrid sharding's replicas).
constexpr group replica_group(const parallel::nd& s) {
  group g = s.group_of(parallel::axis::data);
  g.stride *= s.data.shards();
  g.size = s.data.degree / s.data.shards();
  return g;
}
/// A collective over several axes at once, composed hierarchically: reduce-scatter over each
/// axis in turn on a shrinking buffer (all-gather back in reverse). An all-reduce over one axis
/// is NCCL's all-reduce; over several, a reduce-scatter and an all-gather per axis.
[[gnu::always_inline]] constexpr call_cost over_axes(comm::collective op, const cluster& c,
                                                     const parallel::nd& s,
                                                     std::initializer_list<parallel::axis> axes,
                                                     bytes size) {
  call_cost total{};
  if (!(size > bytes{})) return total;  // nothing to move (a dense model's expert part)
  int spanned = 0;
  for (const parallel::axis ax : axes) spanned += s.group_of(ax).size > 1 ? 1 : 0;
  bytes piece = size;
  for (const parallel::axis ax : axes) {
    // ZeRO's collectives stay inside the shard group; plain all-reduces span every replica
    const group g = ax == parallel::axis::data && op != comm::collective::all_reduce
                        ? shard_group(s)
                        : s.group_of(ax);
    if (g.size == 1) continue;
    if (op == comm::collective::all_reduce && spanned > 1)
      total += call_cost::of(comm::collective::reduce_scatter, c, g, piece) +
               call_cost::of(comm::collective::all_gather, c, g, piece);
    else
      total += call_cost::of(op, c, g, piece);
    piece = piece / static_cast<double>(g.size);
  }
  return total;
}
}  // namespace detail

/// Blocking collectives of one layer for one micro-batch on one rank.
struct layer_collectives {
  seconds tensor{};  ///< forward: 2 all-reduces (or all-gather + reduce-scatter), not hidden
  seconds tensor_backward{};   ///< the same in the backward
  seconds context_forward{};   ///< ring attention's K/V exchange not hidden by attention
  seconds context_backward{};  ///< K/V and their gradients, behind attention's backward
  seconds expert{};            ///< each pass: dispatch and combine all-to-alls
  [[nodiscard]] constexpr seconds forward() const { return tensor + context_forward + expert; }
  [[nodiscard]] constexpr seconds backward() const {
    return tensor_backward + context_backward + expert;
  }
};

/// What of a pass's tensor-parallel collectives `comm` stays exposed when the framework overlaps
/// them with the GEMMs beside them (`recipe::tp_comm_overlap`, Megatron-Core with Transformer
/// Engine's userbuffers): each all-gather and reduce-scatter is split into `tp` chunks pipelined
/// with the GEMM it feeds or drains, so it hides behind the layer's GEMM time `gemm` except for
/// one chunk that starts (or ends) the pipeline.
[[nodiscard]] constexpr seconds overlapped_tensor_comm(seconds comm, seconds gemm, int tp) {
  return max(comm - gemm, comm / static_cast<double>(tp));
}

/// What a sequence-parallel layer's tensor-parallel collectives leave exposed under
/// `recipe::tp_comm_overlap`, from one call's time of an all-gather (`ag`) and a reduce-scatter
/// (`rs`) of the block's b s h and the layer's GEMMs by window (`fwd`, `bwd`;
/// `lower::tp_window`). Each collective is pipelined in `tp` chunks with the GEMM it feeds or
/// drains and leaves `overlapped_tensor_comm` of that GEMM exposed, not of the whole layer's:
/// a small projection beside an equal collective shows it. Per block (attention, MLP):
/// - forward: the input's gather beside the column-parallel GEMM (`in`), the output's
///   reduce-scatter beside the row-parallel one (`out`);
/// - backward, Transformer Engine's userbuffers: the output gradient's gather beside the
///   row-parallel input gradient (`out`), the input's re-gather beside the column-parallel input
///   gradient (dgrad) and its reduce-scatter beside the weight gradient (wgrad);
/// - backward, PyTorch's micro-pipelined TP: the gather beside the row-parallel input gradient;
///   the reduce-scatter of the column-parallel input gradient blocks (a sum of matmuls, which
///   the fused pattern does not match; `frameworks::tp_overlap_engine`).
/// A block without such GEMMs (MoE experts) leaves its collectives whole.
struct overlapped_comm {
  seconds forward{}, backward{};
};
[[nodiscard]] constexpr overlapped_comm overlapped_layer_comm(seconds ag, seconds rs,
                                                              const tp_windows& fwd,
                                                              const tp_windows& bwd, int tp,
                                                              frameworks::tp_overlap_engine e) {
  using lower::tp_window;
  const auto at = [](const tp_windows& w, tp_window k) {
    return seconds{w[static_cast<std::size_t>(k) - 1]};
  };
  const auto hide = [tp](seconds comm, seconds gemm) {
    return gemm > seconds{} ? overlapped_tensor_comm(comm, gemm, tp) : comm;
  };
  const bool torch = e == frameworks::tp_overlap_engine::micro_pipeline;
  overlapped_comm out;
  for (const auto [in, out_gemm, dgrad, wgrad] :
       {std::array{tp_window::attention_in, tp_window::attention_out, tp_window::attention_dgrad,
                   tp_window::attention_wgrad},
        std::array{tp_window::mlp_in, tp_window::mlp_out, tp_window::mlp_dgrad,
                   tp_window::mlp_wgrad}}) {
    out.forward += hide(ag, at(fwd, in)) + hide(rs, at(fwd, out_gemm));
    out.backward += hide(ag, at(bwd, out_gemm)) +
                    (torch ? rs : hide(ag, at(bwd, dgrad)) + hide(rs, at(bwd, wgrad)));
  }
  return out;
}

namespace detail {
constexpr std::size_t tp_call_index(comm::collective op) {
  return op == comm::collective::all_reduce ? 0 : op == comm::collective::all_gather ? 1 : 2;
}
/// A layer's exposed tensor-parallel backward communication under Megatron's asynchronous
/// backward (`recipe::tp_async_backward`), from one call of each collective (`ar`, `ag`, `rs`)
/// and the layer's column-parallel GEMM windows `w` (`lower::tp_window`). Per block (attention,
/// MLP) Megatron-LM's `LinearWithGradAccumulationAndAsyncCommunication.backward` runs:
/// - without sequence parallelism: the row-parallel linear's backward has no collective; the
///   column-parallel one all-reduces its input gradient beside its weight gradient's GEMM;
/// - with it: the all-gather of the output gradient (the forward reduce-scatter's backward)
///   blocks; the column-parallel linear re-gathers its input beside its input gradient's GEMM,
///   then reduce-scatters that gradient beside the weight gradient's GEMM.
/// What a GEMM does not cover stays exposed. A block without column-parallel GEMMs (MoE
/// experts) keeps the forward's collectives, blocking.
[[nodiscard]] constexpr seconds async_tensor_backward(seconds ar, seconds ag, seconds rs, bool sp,
                                                      const tp_windows& w) {
  const auto beside = [](seconds comm, double gemm) {
    return max(comm - seconds{gemm}, seconds{});
  };
  const auto block = [&](double dgrad, double wgrad) {
    if (!(wgrad > 0)) return sp ? ag + rs : ar;
    return sp ? ag + beside(ag, dgrad) + beside(rs, wgrad) : beside(ar, wgrad);
  };
  using lower::tp_window;
  const auto at = [&](tp_window k) { return w[static_cast<std::size_t>(k) - 1]; };
  return block(at(tp_window::attention_dgrad), at(tp_window::attention_wgrad)) +
         block(at(tp_window::mlp_dgrad), at(tp_window::mlp_wgrad));
}
}  // namespace detail

/// Prices `lower::layer_collectives` on the groups `s` lays out: tensor-parallel collectives per
/// call as NCCL prices them (`comm::nccl`), ring attention's transfers on the context ring's link
/// less the attention they hide behind, MoE all-to-alls as direct exchanges.
[[nodiscard]] constexpr layer_collectives collectives_of(const transformer& m,
                                                         const parallel::nd& s, const cluster& c,
                                                         const training& tr,
                                                         const layer_compute& lc) {
  using parallel::axis;
  struct visitor {
    const cluster& c;
    const parallel::nd& s;
    const layer_compute& lc;
    layer_collectives out{};
    // the last tensor-parallel call priced: a layer's calls mostly repeat (the all-reduce after
    // attention and the one after the MLP), and NCCL's tuner weighs nine choices per call
    comm::collective tp_op = comm::collective::all_reduce;
    double tp_bytes = -1;
    seconds tp_time{};
    seconds tp_call[3]{};  ///< one forward call of each: all-reduce, all-gather, reduce-scatter
    constexpr void collective(const lower::collective_op& op) {
      const bool fwd = op.when == lower::phase::forward;
      switch (op.axis) {
        case lower::comm_axis::tensor:
          if (op.op != tp_op || op.bytes != tp_bytes) {
            tp_op = op.op;
            tp_bytes = op.bytes;
            tp_time = comm::nccl::time(op.op, c, s.group_of(axis::tensor), bytes{op.bytes});
          }
          (fwd ? out.tensor : out.tensor_backward) += tp_time;
          if (fwd) tp_call[detail::tp_call_index(op.op)] = tp_time;
          break;
        case lower::comm_axis::context: {
          const seconds ring =
              op.times * comm::ring_link(c, s.group_of(axis::context)).transfer(bytes{op.bytes});
          if (fwd)
            out.context_forward = max(ring - seconds{lc.attention.gpu}, seconds{});
          else
            out.context_backward = max(ring - seconds{lc.attention_backward}, seconds{});
          break;
        }
        case lower::comm_axis::expert:
          if (fwd)
            out.expert += comm::direct::time(op.op, c, s.group_of(axis::expert), bytes{op.bytes});
          break;
      }
    }
  } v{c, s, lc};
  const lower::shard x = lower::shard_of(m, s, tr);
  lower::layer_collectives(m, x, tr, lower::phase::forward, v);
  // only ring attention's and latent attention's backward differ from their forward
  if (x.cp > 1 || m.mla()) lower::layer_collectives(m, x, tr, lower::phase::backward, v);
  if (!m.mla()) v.out.tensor_backward = v.out.tensor;
  if (tr.framework.tp_async_backward && !tr.framework.tp_comm_overlap && x.tp > 1 && !m.mla())
    v.out.tensor_backward =
        detail::async_tensor_backward(v.tp_call[0], v.tp_call[1], v.tp_call[2], x.sp, lc.windows);
  if (tr.framework.tp_comm_overlap && x.tp > 1 && !m.mla()) {
    const overlapped_comm o = overlapped_layer_comm(v.tp_call[1], v.tp_call[2], lc.forward_windows,
                                                    lc.windows, x.tp, tr.framework.tp_overlap);
    v.out.tensor = o.forward;
    v.out.tensor_backward = o.backward;
  } else if (tr.framework.tp_comm_overlap && x.tp > 1) {
    // latent attention's collectives differ: behind the layer's kernels less its attention core
    v.out.tensor =
        overlapped_tensor_comm(v.out.tensor, seconds{lc.forward.gpu - lc.attention.gpu}, x.tp);
    v.out.tensor_backward = overlapped_tensor_comm(
        v.out.tensor_backward, seconds{lc.backward.gpu - lc.attention_backward}, x.tp);
  }
  return v.out;
}

/// `collectives_of` over a run of plans of one model, cluster and training setup, each passed
/// with the `layer_compute` lowered for it: priced again only when a plan's lowering (tensor
/// degree, sequence parallelism, context, expert, micro-batch, recomputation) or the layout of
/// its tensor, context or expert group differs from the previous plan's, which is all that
/// `collectives_of` reads of a plan. The sweep and the batch walk plans grouped that way.
class collectives_memo {
 public:
  [[nodiscard]] const layer_collectives& operator()(const transformer& m, const parallel::nd& s,
                                                    const cluster& c, const training& tr,
                                                    const layer_compute& lc) {
    using parallel::axis;
    const group t = s.group_of(axis::tensor), x = s.group_of(axis::context),
                e = s.group_of(axis::expert);
    const std::array<int, 6> shard = lower::shard_key(s);
    const std::array<int, 9> laid{t.first,  t.size,  t.stride, x.first, x.size,
                                  x.stride, e.first, e.size,   e.stride};
    if (!priced_ || shard != shard_ || laid != laid_) {
      shard_ = shard;
      laid_ = laid;
      last_ = collectives_of(m, s, c, tr, lc);
      priced_ = true;
    }
    return last_;
  }

 private:
  std::array<int, 6> shard_{};  ///< the plan's lowering (`lower::shard_key`)
  std::array<int, 9> laid_{};   ///< its tensor, context and expert groups
  layer_collectives last_{};
  bool priced_ = false;
};

namespace detail {
/// One layer's forward with its collectives, its recomputation and its backward with the
/// recomputation and the collectives (`stage_spans`).
struct layer_spans {
  lower::span forward, recompute, backward;
};
/// A layer's backward with its collectives and no recomputation (`stage_spans::backward_kept`).
[[nodiscard, gnu::noinline]] constexpr lower::span kept_backward(const lower::span& backward,
                                                                 seconds comm_backward,
                                                                 bool host_free) {
  const lower::span comm_b = lower::span::kernel(0, comm_backward.count());
  return host_free ? lower::span::kernel(0, backward.gpu + comm_backward.count())
                   : backward.then(comm_b);
}
}  // namespace detail

/// What one micro-batch runs on pipeline stage `i`, in issue order: the embedding (first
/// stage), each layer's forward, the head's forward and backward (last stage), each layer's
/// recomputation and backward, the embedding's backward. Blocking collectives count as GPU time.
struct stage_spans {
  lower::span forward_layer, backward_layer;  ///< with their collectives and recomputation
  lower::span recompute;                      ///< what `backward_layer` repeats of the forward
  /// the same for a dense first layer (`layer_compute::dense`), the first stage's first
  detail::layer_spans dense{};
  lower::span backward_kept{};  ///< a layer's backward that recomputes nothing (it kept all)
  [[nodiscard]] constexpr lower::span micro_batch(const layer_compute& lc, double layers,
                                                  bool first, bool last) const {
    const double d = first ? lc.dense_layers : 0;
    lower::span s = first ? lc.embedding_forward : lower::span{};
    if (d > 0) s = s.then(dense.forward.repeat(d));
    s = s.then(forward_layer.repeat(layers - d));
    if (last) s = s.then(lc.head_forward).then(lc.head_backward);
    s = s.then(backward_layer.repeat(layers - d));
    if (d > 0) s = s.then(dense.backward.repeat(d));
    if (first) s = s.then(lc.embedding_backward);
    return s;
  }
  /// The same when only `checkpointed` of the layers recompute (`parallel::nd::recompute_layers`;
  /// no dense first layers): the others' backward first, as the backward runs them.
  [[nodiscard, gnu::noinline]] constexpr lower::span micro_batch(const layer_compute& lc,
                                                                 double layers, bool first,
                                                                 bool last,
                                                                 double checkpointed) const {
    lower::span s = first ? lc.embedding_forward : lower::span{};
    s = s.then(forward_layer.repeat(layers));
    if (last) s = s.then(lc.head_forward).then(lc.head_backward);
    s = s.then(backward_kept.repeat(layers - checkpointed))
            .then(backward_layer.repeat(checkpointed));
    if (first) s = s.then(lc.embedding_backward);
    return s;
  }
};

/// The collectives of a dense first layer: a layer's without the experts' all-to-alls.
[[nodiscard]] constexpr layer_collectives dense_collectives(layer_collectives lcoll) {
  lcoll.expert = seconds{};
  return lcoll;
}

namespace detail {
/// A layer's spans from its priced forward, backward, attention core and forward without what
/// per-operator checkpointing caches, and its collectives: full recomputation re-enters the
/// layer (`checkpoint_host`) and runs its forward and collectives again, selective the attention
/// core, per-operator the uncached kernels and the collectives. `host_free`: every span is a GPU
/// time (no host model), so the spans are sums.
[[nodiscard, gnu::always_inline]] constexpr layer_spans spans_of_layer(
    const lower::span& forward, const lower::span& backward, const lower::span& attention,
    const lower::span& uncached_forward, double checkpoint_host, seconds comm_forward,
    seconds comm_backward, recompute rc, bool host_free) {
  if (host_free) {  // every span a GPU time (`pricer::result`): their sums, as `then` gives them
    const double cf = comm_forward.count(), f = forward.gpu + cf;
    const double u = parallel::saves_op_outputs(rc) ? uncached_forward.gpu + cf : 0.0;
    const double r =
        parallel::recomputed(rc, parallel::rebuilds_layer(rc) ? f : 0.0, attention.gpu, u);
    return {lower::span::kernel(0, f), lower::span::kernel(0, r),
            lower::span::kernel(0, r + backward.gpu + comm_backward.count())};
  }
  const lower::span comm_f = lower::span::kernel(0, comm_forward.count());
  const lower::span comm_b = lower::span::kernel(0, comm_backward.count());
  layer_spans out;
  out.forward = forward.then(comm_f);
  // full: the checkpointed layer re-entered, its forward and collectives again; selective: the
  // attention core; per_op: the layer re-entered, the kernels whose outputs are not cached and
  // the collectives (all of them: an upper bound where sequence parallelism's reduce-scatters
  // are cached)
  const lower::span entered = lower::span::kernel(checkpoint_host, 0);
  const lower::span whole =
      parallel::rebuilds_layer(rc) ? entered.then(forward).then(comm_f) : lower::span{};
  const lower::span uncached =
      parallel::saves_op_outputs(rc) ? entered.then(uncached_forward).then(comm_f) : lower::span{};
  out.recompute = parallel::recomputed(rc, whole, attention, uncached);
  out.backward = out.recompute.then(backward).then(comm_b);
  return out;
}
}  // namespace detail

/// `kept`: also the backward of a layer that keeps its tensors (`parallel::nd::recompute_layers`);
/// `checkpoint_io`: what a checkpointed layer waits for before its recomputation
/// (`analytic::checkpoint_io`).
[[nodiscard]] constexpr stage_spans spans_of(const layer_compute& lc,
                                             const layer_collectives& lcoll, recompute rc,
                                             bool kept = false, seconds checkpoint_io = {}) {
  const bool host_free = lc.per_kernel <= 0 && lc.checkpoint_host <= 0;
  const detail::layer_spans own =
      detail::spans_of_layer(lc.forward, lc.backward, lc.attention, lc.uncached, lc.checkpoint_host,
                             lcoll.forward(), lcoll.backward(), rc, host_free);
  stage_spans out{own.forward, own.backward, own.recompute};
  if (checkpoint_io > seconds{}) {
    const lower::span io = lower::span::kernel(0, checkpoint_io.count());
    out.recompute = io.then(out.recompute);
    out.backward_layer = io.then(out.backward_layer);
  }
  if (kept) out.backward_kept = detail::kept_backward(lc.backward, lcoll.backward(), host_free);
  if (lc.dense_layers > 0) {
    const layer_kind_compute& d = lc.dense;
    const layer_collectives dc = dense_collectives(lcoll);
    const detail::layer_spans dense =
        detail::spans_of_layer(d.forward, d.backward, d.attention, d.forward, lc.checkpoint_host,
                               dc.forward(), dc.backward(), rc, host_free);
    out.dense = dense;
  }
  return out;
}

/// The optimizer step over `params` parameters in `tensors` tensors on one rank: one
/// memory-bound pass (`training::update_bytes` per parameter) issued per tensor.
[[nodiscard]] constexpr lower::span optimizer_span(const device_profile& prof, const training& tr,
                                                   const layer_compute& lc, double params,
                                                   double tensors) {
  return lower::span::kernel(tensors * lc.per_tensor,
                             prof.queued(prof.copy).time(tr.update_bytes() * params));
}

/// Fractions of the host's datasheet figures (`host_side`) an offloaded step achieves (our
/// assumptions): pinned copies reach about 80 % of a PCIe link, NVMe transfers about 90 % of the
/// drives'.
struct offload_efficiency {
  static constexpr double pcie = 0.8, nvme = 0.9;
};

/// DeepSpeed's activation checkpointing (`training::partition_activations`, `checkpoint_in_cpu`;
/// runtime/activation_checkpointing/checkpointing.py) under full recomputation: the tensor ranks
/// a layer's checkpoint is split over (t with `partition_activations`, unless sequence
/// parallelism has split it already; else 1).
[[nodiscard]] constexpr int checkpoint_parts(const parallel::nd& s, const training& t) {
  const bool split =
      parallel::rebuilds_layer(s.recomputation) && t.partition_activations && !s.tensor.sequence;
  return split ? s.tensor.degree : 1;
}
/// The share of a checkpoint that stays on the device: none in host memory (`checkpoint_in_cpu`),
/// else 1 / `checkpoint_parts`.
[[nodiscard]] constexpr double checkpoint_share(const parallel::nd& s, const training& t) {
  if (t.checkpoint_in_cpu && parallel::rebuilds_layer(s.recomputation)) return 0.0;
  return 1.0 / checkpoint_parts(s, t);
}
/// DeepSpeed's checkpoint traffic per checkpointed layer and micro-batch
/// (`training::checkpoint_in_cpu`, `partition_activations`; runtime/activation_checkpointing/
/// checkpointing.py): the rank's part of the layer input copied to host memory after the forward
/// and back before the recomputation (`.cpu()`, `.to(device)`: over PCIe, blocking), and the
/// parts all-gathered over the tensor-parallel group before it (`gather_partitioned_activations`).
[[nodiscard]] constexpr seconds checkpoint_io(const transformer& m, const parallel::nd& s,
                                              const cluster& c, const training& t) {
  if (!parallel::rebuilds_layer(s.recomputation) ||
      !(t.checkpoint_in_cpu || t.partition_activations))
    return {};
  const lower::shard sh = lower::shard_of(m, s, t);
  const int tp = s.tensor.degree, parts = checkpoint_parts(s, t);
  const double input = sh.tokens() * m.hidden * t.activation_bytes() / (s.tensor.sequence ? tp : 1);
  seconds io{};
  if (t.checkpoint_in_cpu) {
    if (!(c.host.pcie > byte_rate{}))
      throw plan_error(
          "training.checkpoint_in_cpu: the checkpoints go to host memory over PCIe, and the "
          "cluster gives no host PCIe bandwidth (cluster.host)");
    io += seconds{2 * input / parts / (c.host.pcie.count() * offload_efficiency::pcie)};
  }
  if (parts > 1)
    io += comm::nccl::time(comm::collective::all_gather, c, s.group_of(parallel::axis::tensor),
                           bytes{input});
  return io;
}

/// ZeRO-Offload's step for a rank's partition of `partition` parameters (Ren et al. 2021 §4):
/// the 16-bit gradient partition goes to the host as the last backward produces it (hidden
/// behind `backward` up to its length), the node's CPUs update every partition of the node at
/// `host_side::optimizer` parameters per second, ZeRO-Infinity reads and writes the optimizer
/// states from NVMe, and the updated 16-bit partition comes back over PCIe. The DeepSpeed
/// tutorial's 10B model on one V100 gives 1.6 + 6.3 + 1.6 = 9.5 s here against 7.6-8.0 s
/// measured for its optimizer phase (test/validation/published_frameworks.cpp).
[[nodiscard]] constexpr seconds offloaded_update(const cluster& c, const training& tr,
                                                 double partition, seconds backward) {
  const host_side& h = c.host;
  const bool nvme = tr.framework.data.offload_optimizer == frameworks::offload_device::nvme;
  if (!(h.pcie > byte_rate{}) || !(h.optimizer > 0) || (nvme && !(h.nvme > byte_rate{})))
    throw plan_error(limits::offload_needs_host);
  const double node = c.depth > 1 ? c.levels[0].fanout : c.devices();  // GPUs sharing the host
  // ZeRO-Offload keeps every partition of the node in host memory: the optimizer states (fp32
  // masters and moments) and the fp32 gradients; ZeRO-Infinity's NVMe holds the states instead
  if (!nvme && h.capacity > bytes{}) {
    const double need = node * partition * (tr.optimizer_bytes() + 4);
    if (need > h.capacity.count())
      throw plan_error("offload: the node's optimizer states and fp32 gradients (" +
                       std::to_string(static_cast<long long>(need / (1 << 30))) +
                       " GiB) exceed its host memory (cluster.host.dram_GiB: " +
                       std::to_string(static_cast<long long>(h.capacity.count() / (1 << 30))) +
                       " GiB)");
  }
  const double pcie = h.pcie.count() * offload_efficiency::pcie;
  const seconds down{partition * tr.gradient_bytes() / pcie};
  const seconds up{partition * tr.weight_bytes() / pcie};
  seconds cpu{node * partition / h.optimizer};
  if (nvme)
    cpu += seconds{2 * node * partition * tr.optimizer_bytes() /
                   (h.nvme.count() * offload_efficiency::nvme)};
  return max(down - backward, seconds{}) + cpu + up;
}

/// How many calls a step's data-parallel collectives take on one rank of plan `s` for a stage of
/// `layers` layers and `gradient_bytes` of gradients (`parallel::collective_calls`).
[[nodiscard]] constexpr parallel::calls_per_step collective_calls(const transformer& m,
                                                                  const parallel::nd& s,
                                                                  const training& tr, double layers,
                                                                  double gradient_bytes) {
  return parallel::collective_calls(tr, s.data.sharding(), layers, s.data.bucket, gradient_bytes,
                                    partitioned_modules_of(m, s, tr));
}

/// The data-parallel (and ZeRO) collectives of one stage's parameters `n` (all) and `tn`
/// (trained) in one step, each call priced by NCCL (`call_cost`): the all-reduce of the
/// gradients (ZeRO-0), the reduce-scatter of the gradients per micro-batch (ZeRO-1: per step) in
/// `calls.reduces` calls, with hybrid sharding's all-reduce of the reduced shard across the
/// shard groups, and the all-gather of the weights per pass (ZeRO-3: every weight, in
/// `calls.gathers` calls; ZeRO-1/2: the updated ones, once). Dense weights span the context,
/// expert and data axes, expert weights the context and data axes. The closed form and the
/// simulator both price the data-parallel traffic with it.
struct data_collective_costs {
  call_cost all_reduce, reduce_scatter, all_gather;
};
[[nodiscard]] constexpr call_cost data_collective(comm::collective op, const cluster& c,
                                                  const parallel::nd& s, const stage_parameters& x,
                                                  double per_param, double calls = 1) {
  using parallel::axis;
  const double k = strata::detail::max(1.0, calls);
  return k * (detail::over_axes(op, c, s, {axis::context, axis::expert, axis::data},
                                bytes{x.dense * per_param / k}) +
              detail::over_axes(op, c, s, {axis::context, axis::data},
                                bytes{x.expert * per_param / k}));
}
[[nodiscard]] constexpr data_collective_costs data_collectives_of(
    const parallel::nd& s, const cluster& c, const training& tr, const stage_parameters& n,
    const stage_parameters& tn, const parallel::calls_per_step& calls) {
  using comm::collective;
  const parallel::zero_stage zero = s.data.sharding();
  const double gb = tr.gradient_bytes(), wb = tr.weight_bytes();
  data_collective_costs out;
  if (!zero.shards_optimizer()) {
    out.all_reduce = data_collective(collective::all_reduce, c, s, tn, gb, calls.reduces);
    return out;
  }
  out.reduce_scatter = data_collective(collective::reduce_scatter, c, s, tn, gb, calls.reduces);
  const group replicas = detail::replica_group(s);
  if (replicas.size > 1) {
    const double shard = partition_of(s, tn) * gb;
    const double k = strata::detail::max(1.0, calls.reduces);
    out.reduce_scatter += k * call_cost::of(collective::all_reduce, c, replicas, bytes{shard / k});
  }
  out.all_gather = data_collective(collective::all_gather, c, s, zero.shards_weights() ? n : tn, wb,
                                   zero.shards_weights() ? calls.gathers : 1.0);
  return out;
}

/// `data_collectives_of` over many plans of one cluster and training setup, remembered by what it
/// reads of a plan: ZeRO stage and shards, the data, context and expert groups, the parameters
/// and the calls. In a sweep, plans that differ only in micro-batch, recomputation or
/// interleaving move the same gradients and weights over the same groups; each such traffic is
/// priced once (an open-addressing table; NCCL's tuner costs about 2,000 instructions a plan).
/// It tells setups apart by address: a cluster or training setup changed in place while the memo
/// is in use is not noticed.
class data_collectives_memo {
 public:
  [[nodiscard]] data_collective_costs operator()(const parallel::nd& s, const cluster& c,
                                                 const training& tr, const stage_parameters& n,
                                                 const stage_parameters& tn,
                                                 const parallel::calls_per_step& calls) {
    if (&c != cluster_ || &tr != training_) {  // another setup: nothing known carries over
      slots_.clear();
      used_ = 0;
      cluster_ = &c;
      training_ = &tr;
    }
    using parallel::axis;
    const group d = s.group_of(axis::data), x = s.group_of(axis::context),
                e = s.group_of(axis::expert);
    auto pair = [](int a, int b) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32 |
             static_cast<std::uint32_t>(b);
    };
    auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
    const key k{pair(s.data.zero, s.data.shards()),
                pair(d.size, d.stride),
                pair(x.size, x.stride),
                pair(e.size, e.stride),
                bits(n.dense),
                bits(n.expert),
                bits(tn.dense),
                bits(tn.expert),
                bits(calls.reduces),
                bits(calls.gathers)};
    if (2 * (used_ + 1) > slots_.size()) grow();
    std::size_t i = hash(k) & (slots_.size() - 1);
    for (; slots_[i].used; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i].k == k) return slots_[i].v;
    slots_[i] = {k, data_collectives_of(s, c, tr, n, tn, calls), true};
    ++used_;
    return slots_[i].v;
  }

 private:
  using key = std::array<std::uint64_t, 10>;
  struct slot {
    key k{};
    data_collective_costs v{};
    bool used = false;
  };
  static std::size_t hash(const key& k) {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (const std::uint64_t w : k) h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
  void grow() {
    std::vector<slot> old(strata::detail::max<std::size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    for (const slot& o : old)
      if (o.used) {
        std::size_t i = hash(o.k) & (slots_.size() - 1);
        while (slots_[i].used) i = (i + 1) & (slots_.size() - 1);
        slots_[i] = o;
      }
  }
  std::vector<slot> slots_;
  std::size_t used_ = 0;
  const cluster* cluster_ = nullptr;
  const training* training_ = nullptr;
};

}  // namespace strata::analytic
