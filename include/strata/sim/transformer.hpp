#pragma once
/// @file sim/transformer.hpp
/// @brief The plan executor for transformer strategies (`parallel::nd`): one representative
/// rank per pipeline stage (the ranks of a tensor, context, expert or data group are alike by
/// symmetry), lowered to tasks on the event core.
///
/// Per stage: a compute stream (fifo) runs, in the schedule's order, each (micro-batch, chunk)
/// forward and backward layer by layer (with the recomputation), each layer followed by its
/// blocking tensor-, context- and expert-parallel collectives (`analytic::iteration`'s per-layer
/// costs). Schedules: GPipe (every forward, then every backward), 1F1B (p - i - 1 warm-up forwards,
/// then one forward one backward, then the drain) and Megatron's interleaved 1F1B with v chunks per
/// stage
/// ((p - i - 1) 2 + (v - 1) p warm-up units; unit k runs chunk (k / p) mod v of micro-batch
/// (k / pv) p + k mod p), optionally capped at `max_in_flight` micro-batches (Proteus's
/// max_ongoing_micro_batch). Activations and gradients travel between stages as flows: each
/// crosses its sender's and receiver's NIC (fair-share links, so sends that meet on a wire share
/// it) and a cap at the pair's bandwidth. Data-parallel traffic runs as flows on the same NICs:
/// ZeRO-0/1 reduce the stage's gradients in buckets (the plan's `data.bucket`, as the closed form
/// counts them) as the last backward proceeds (after it, without overlap); ZeRO-2/3
/// reduce-scatter each layer's gradients as its backward ends, beside the gathers (FSDP's
/// post-backward hook; without overlap, a micro-batch's after it, before the next one starts),
/// ZeRO-3 also all-gathers each layer's weights before its forward and backward, one layer ahead
/// (without overlap, after the layer before it); ZeRO-1/2 gather the weights the last step
/// updated bucket by bucket beside the first forward, each layer waiting for its bucket
/// (Megatron-Core's --overlap-param-gather; without overlap, after the optimizer step); the
/// optimizer step ends the iteration. Memory: model states all iteration, each unit's
/// activations from its forward to its backward.
///
/// With one stage and no data parallelism the iteration equals the closed form; with a
/// pipeline the bubble, sends and their sharing come from the schedule itself.
/// @code
/// const auto run = strata::sim::simulate(strata::zoo::gpt3_175b(), plan, cluster, setup, profile);
/// // run.iteration, run.run.peak_memory[stage]
/// @endcode

#include <algorithm>
#include <cmath>
#include <concepts>
#include <string>
#include <vector>

#include "strata/analytic/memory.hpp"
#include "strata/analytic/parameters.hpp"
#include "strata/analytic/price.hpp"
#include "strata/comm/collectives.hpp"
#include "strata/sim/core.hpp"
#include "strata/sim/executor.hpp"

namespace strata::sim {

struct transformer_options {
  bool overlap = true;    ///< data-parallel collectives overlap compute (see the file comment)
  int buckets = 0;        ///< gradient buckets (ZeRO-0/1); 0: the plan's (`data.bucket`)
  int max_in_flight = 0;  ///< micro-batches in flight per stage (0: the schedule's own)
  double gamma = 0;       ///< Proteus's overlap slowdown of compute under communication
};

struct transformer_run {
  simulator graph;
  result run;
  seconds iteration{};
  int simulated_ranks = 1;  ///< one per pipeline stage
};

namespace detail {

/// Checks plan `s` and options `o` before `simulate` lowers them, like `analytic::evaluate`.
inline void check_transformer_run(const transformer& m, const parallel::nd& s, const cluster& c,
                                  const training& tr, const transformer_options& o) {
  s.check(m, tr, c.devices());
  if (o.buckets < 0) throw plan_error("the gradient reduction needs at least one bucket");
  if (o.max_in_flight < 0) throw plan_error("max_in_flight must not be negative");
  const int p = s.pipeline.degree, v = s.pipeline.virtual_stages, mb = s.micro_batches(tr);
  if (o.max_in_flight > 0 && s.pipeline.kind == parallel::schedule::gpipe && o.max_in_flight < mb)
    throw plan_error(
        "a limit on in-flight micro-batches needs a 1F1B schedule: GPipe runs every forward "
        "before any backward");
  // the first backward of an interleaved stage needs micro-batch 0's last chunk, which comes after
  // (v - 1) p forwards of p micro-batches
  if (o.max_in_flight > 0 && v > 1 && o.max_in_flight < p)
    throw plan_error(
        "max_in_flight: an interleaved schedule keeps at least p (the pipeline degree) "
        "micro-batches in flight on each stage");
}

/// One pipeline stage's links on the event core (`transformer_builder::add_resources`); its
/// compute stream and eager host are the executor's.
struct stage_links {
  int out, in, pcap, dcap;
};

/// Stage i's parameters and data-parallel calls with their prices, as one pass over the stages
/// prices them.
struct stage_pass {
  int i;
  std::size_t I;
  analytic::stage_parameters n, tn;
  int stage_layers;
  parallel::calls_per_step calls;
  analytic::data_collective_costs dc;
  analytic::call_cost layer_gather;   ///< one layer's share of the ZeRO-3 all-gather
  analytic::call_cost layer_scatter;  ///< one layer's share of a micro-batch's reduce-scatter
  int buckets;                        ///< ZeRO-0/1: the gradients' buckets
  analytic::call_cost bucket_reduce;  ///< ZeRO-0/1: one bucket's reduction
  analytic::call_cost bucket_gather;  ///< ZeRO-1/2: one bucket of the updated weights' gather
};

/// A unit (micro-batch, chunk) of a stage's program: where it runs and what it names its tasks.
struct unit_at {
  parallel::pipeline_unit u;
  int gs;                ///< virtual stage: chunk * p + stage
  std::size_t GS, J, U;  ///< gs, the micro-batch, the unit's index among the stage's
  std::string tag;       ///< "micro.chunk @stage"
  bool gathers;          ///< ZeRO-3 gathers each layer's weights
  int layers;            ///< the chunk's layers
  std::size_t k;         ///< its place in the stage's program
  bool last;             ///< the program's last unit
};

/// The event graph of one transformer iteration as `simulate` builds it: the plan's prices, the
/// stages' resources and memory, and the schedule's bookkeeping, which its pieces share.
struct transformer_builder {
  const transformer& m;
  const parallel::nd& s;
  const cluster& c;
  const training& tr;
  const device_profile& prof;
  const transformer_options& o;
  simulator& g;
  executor ex{g};
  const int p = s.pipeline.degree, v = s.pipeline.virtual_stages, mb = s.micro_batches(tr);
  const analytic::layer_compute lc = analytic::lower_layer(m, prof, tr, lower::shard_of(m, s, tr));
  // the per-layer collectives of the closed form
  const double seq = analytic::detail::sequence_of(m, tr);
  const double b = s.micro_batch, sl = seq / s.context.degree, h = m.hidden;
  const double act = tr.activation_bytes();
  const int tp = s.tensor.degree;
  const analytic::layer_collectives lcoll = analytic::collectives_of(m, s, c, tr, lc);
  const seconds comm_fwd = lcoll.forward(), comm_bwd = lcoll.backward();
  // a dense first layer's (`layer_compute::dense`): no experts' all-to-alls
  const seconds dense_comm_fwd = analytic::dense_collectives(lcoll).forward(),
                dense_comm_bwd = analytic::dense_collectives(lcoll).backward();
  const parallel::recompute rc = s.recomputation;
  const analytic::stage_spans spans =
      analytic::spans_of(lc, lcoll, rc, false, analytic::checkpoint_io(m, s, c, tr));
  // an eager host issues every kernel: each compute task waits for its kernels to be issued
  const bool host_model = lc.per_kernel > 0 || lc.checkpoint_host > 0 || lc.per_tensor > 0;
  // resources: per stage a compute stream, a NIC out and in (shared wires), a cap on its
  // pipeline sends and one on its data-parallel flows
  const group pg = s.group_of(parallel::axis::pipeline);
  const interconnect pipe_link = p > 1 ? c.between(0, pg.stride) : c.levels[0].pair;
  const comm::group_view dv =
      comm::view(c, {0, s.data.degree, s.group_of(parallel::axis::data).stride});
  const double nic = std::max(pipe_link.bandwidth.count(), dv.ring.bandwidth.count());
  std::vector<stage_links> res = std::vector<stage_links>(static_cast<std::size_t>(p));
  std::vector<int> states = std::vector<int>(static_cast<std::size_t>(p)),
                   working = std::vector<int>(static_cast<std::size_t>(p));
  std::vector<analytic::memory_terms> terms;
  const analytic::plan_keeps keeps = analytic::keeps_of(m, s, tr);
  const bool vocab_parallel = tr.framework.loss == frameworks::loss_style::vocab_parallel;
  const double shards = static_cast<double>(s.data.shards()) * s.expert.degree * s.context.degree;
  const double send_bytes = b * sl * h * act / tp;
  std::vector<std::vector<parallel::pipeline_unit>> prog =
      std::vector<std::vector<parallel::pipeline_unit>>(static_cast<std::size_t>(p));
  // by virtual stage (chunk * p + i) and micro-batch: the send that delivers its input
  std::vector<std::vector<int>> fsend = std::vector<std::vector<int>>(
      static_cast<std::size_t>(p * v), std::vector<int>(static_cast<std::size_t>(mb), -1));
  std::vector<std::vector<int>> bsend = fsend, fdone = fsend;
  // the stage's previous compute task
  std::vector<int> last = std::vector<int>(static_cast<std::size_t>(p), -1);
  std::vector<int> prev_dp = std::vector<int>(static_cast<std::size_t>(p), -1);
  std::vector<int> prev_rs = prev_dp;  ///< the stage's last ZeRO-2/3 reduce-scatter
  std::vector<stage_pass> passes;      ///< per stage, its parameters and data-parallel prices
  /// per stage, ZeRO-1/2 with overlap: the gathers of the updated weights' buckets
  std::vector<std::vector<int>> fresh = std::vector<std::vector<int>>(static_cast<std::size_t>(p));
  std::vector<int> remaining_bwd = std::vector<int>(static_cast<std::size_t>(p * mb), v);
  /// per stage and chunk, its backward units left; per stage, the gradient buckets released
  std::vector<int> chunk_left = std::vector<int>(static_cast<std::size_t>(p * v), mb);
  std::vector<int> released = std::vector<int>(static_cast<std::size_t>(p), 0);
  const bool chunked = tr.framework.chunk_data_sync;  ///< `recipe::chunk_data_sync`
  /// an interleaved stage's sends block it until delivered (without `recipe::overlap_p2p`)
  const bool blocking_sends = v > 1 && !tr.framework.overlap_p2p;
  // what the update waits on
  std::vector<std::vector<int>> pending =
      std::vector<std::vector<int>>(static_cast<std::size_t>(p));
  const parallel::zero_stage zero = s.data.sharding();
  const bool has_dp = shards > 1;
  const double gb = tr.gradient_bytes();
  const int vp = p * v;
  // per stage and unit (micro-batch, chunk): each layer's saved tensors, the tensors the unit's
  // last backward frees, the loss's (freed by the head's backward)
  using per_unit = std::vector<std::vector<int>>;
  const std::size_t units = static_cast<std::size_t>(mb * v);
  std::vector<per_unit> layer_t =
      std::vector<per_unit>(static_cast<std::size_t>(p), per_unit(units));
  std::vector<per_unit> held = layer_t, loss = layer_t;
  std::vector<per_unit> until = layer_t;
  std::vector<int> until_free;
  std::vector<double> layer_bytes, until_bytes;
  const double embed_bytes = keeps.embedding.activation;
  std::vector<int> made_grads = std::vector<int>(static_cast<std::size_t>(p), 0);
  // left to run per stage
  std::vector<int> backward_units = std::vector<int>(static_cast<std::size_t>(p), (mb * v));
  std::vector<std::vector<int>> grads = std::vector<std::vector<int>>(static_cast<std::size_t>(p));

  /// Prices plan `s` of `m_` on `c_` for building its iteration into `g_`.
  transformer_builder(const transformer& m_, const parallel::nd& s_, const cluster& c_,
                      const training& tr_, const device_profile& prof_,
                      const transformer_options& o_, simulator& g_)
      : m(m_), s(s_), c(c_), tr(tr_), prof(prof_), o(o_), g(g_) {}

  /// Builds the iteration: resources, memory, the schedule's tasks, then the optimizer steps.
  void build() {
    g.set_overlap_factor(o.gamma);
    add_resources();
    add_memory();
    prepare_schedule();
    lower_schedule();
    add_optimizer_steps();
  }

  /// Adds per stage a compute stream, a NIC out and in, caps on its pipeline sends and its
  /// data-parallel flows, and with an eager host its host and issue lead.
  void add_resources() {
    for (int i = 0; i < p; ++i) {
      const std::string n = "stage " + std::to_string(i);
      auto& r = res[static_cast<std::size_t>(i)];
      ex.add_device(i, n);
      r.out = ex.add_link(i, n + " NIC out", nic);
      r.in = ex.add_link(i, n + " NIC in", nic);
      r.pcap = ex.add_link(i, n + " pipeline sends", pipe_link.bandwidth.count());
      r.dcap = ex.add_link(i, n + " data-parallel", dv.ring.bandwidth.count());
      if (host_model) ex.add_host(i, n);
    }
  }

  /// Adds each stage's memory capacity, its between-steps memory and its recomputed layer.
  void add_memory() {
    // memory (the tensors of `analytic::stage_memory`'s moments): the stage's between-steps
    // memory all iteration; per micro-batch and layer its saved tensors and weight copies (forward
    // to backward); the embedding's and the head's tensors and the loss's working set; a
    // recomputed layer while its backward runs; gradients made by the backward (unless the recipe
    // keeps them all step), each layer's once the next layer's backward starts
    for (int i = 0; i < p; ++i) {
      const auto x = analytic::stage_terms(m, s, tr, i, keeps);
      terms.push_back(x);
      g.set_memory_capacity(i, c.dev.memory.count());
      // a quantized base's dequantized weight counted all step (the closed form places it per
      // moment)
      const double dq = std::max(x.dequant, x.head_dequant);
      states[static_cast<std::size_t>(i)] =
          ex.tensor(i, dq > 0 ? "between steps and a dequantized weight" : "between steps",
                    x.states.between_steps.count() + dq);
      working[static_cast<std::size_t>(i)] = ex.tensor(
          i, "recomputed layer", x.rebuilt + (parallel::rebuilds_layer(rc) ? x.full_casts : 0.0));
    }
  }

  /// A tensor of `bytes` on stage i.
  int tensor(int i, const char* name, double bytes) { return ex.tensor(i, name, bytes); }

  /// A data-parallel collective of stage i after `deps`, priced as the closed form prices it
  /// (`analytic::data_collectives_of`): a flow that starts after the calls' start-up and moves
  /// the bytes their transfer takes on the data-parallel link, so that alone it takes exactly the
  /// calls' time and contention stretches only the transfer.
  int dp_flow(int i, const std::string& name, analytic::call_cost cost, std::vector<int> deps) {
    const auto& r = res[static_cast<std::size_t>(i)];
    return ex.flow(i, name, {r.dcap, r.out, r.in},
                   cost.transfer.count() * dv.ring.bandwidth.count(), cost.startup.count(),
                   std::move(deps));
  }

  /// A blocking collective of `t` as a span on the compute stream.
  static lower::span comm_span(seconds t) { return lower::span::kernel(0, t.count()); }

  /// The activations or gradients of a micro-batch sent from stage `from` to `to` after `after`.
  int send(int from, int to, const std::string& name, int after) {
    const auto& a = res[static_cast<std::size_t>(from)];
    const auto& z = res[static_cast<std::size_t>(to)];
    return ex.flow(from, name, {a.pcap, a.out, z.in}, send_bytes, pipe_link.alpha.count(), {after});
  }

  /// Each stage's program, and per stage the bytes of a layer's saved tensors and of the caches
  /// kept until the loss.
  void prepare_schedule() {
    // programs and task creation in an order that respects the cross-stage dependencies
    for (int i = 0; i < p; ++i)
      prog[static_cast<std::size_t>(i)] = s.pipeline.program(mb, i, o.max_in_flight);
    for (const auto& x : terms) {
      layer_bytes.push_back(x.saved + x.casts);
      until_bytes.push_back(x.until_loss / std::max(1.0, x.layers * x.in_flight));
    }
  }

  /// Stage i's parameters on the stage.
  [[nodiscard]] analytic::stage_parameters np(int i) const {
    return analytic::parameters_on(m, s, i);
  }

  /// Lowers the stages' programs, each as far as the sends it waits for exist, until all are
  /// (`sim::lower_programs`, the walk every pipeline executor shares).
  void lower_schedule() {
    for (int i = 0; i < p; ++i) passes.push_back(pass_of(i));
    if (o.overlap && zero.gathers_updated_weights() && has_dp) gather_updated_weights();
    lower_programs(prog, [&](std::size_t i, std::size_t k, const parallel::pipeline_unit& u) {
      const stage_pass& sp = passes[i];
      const unit_at at = unit_of(sp.i, u, k);
      return at.u.forward ? lower_forward(sp, at) : lower_backward(sp, at);
    });
  }

  /// Stage i's parameters and the prices of its data-parallel calls.
  [[nodiscard]] stage_pass pass_of(int i) const {
    const auto n = np(i);
    const auto tn = analytic::trained_on(m, s, tr, i);  // what is reduced (LoRA: adapters)
    const int stage_layers = s.stage_layers(m, i);
    // ZeRO-3 gathers one layer's weights at a time, one layer ahead of the compute, in the
    // engine's calls (one per module under DeepSpeed: each pays the start-up)
    const parallel::calls_per_step calls =
        analytic::collective_calls(m, s, tr, stage_layers, (tn.dense + tn.expert) * gb);
    const analytic::data_collective_costs dc =
        analytic::data_collectives_of(s, c, tr, n, tn, calls);
    const double share = 1.0 / std::max(1, stage_layers);
    // ZeRO-0/1/2's buckets: the plan's (`data.bucket`), shares of the call the closed form
    // prices, or the options' count, each a call of its own
    const double grad_bytes = (tn.dense + tn.expert) * gb;
    const int nb = o.buckets > 0 ? o.buckets
                   : calls.bucket > 0
                       ? static_cast<int>(std::max(1.0, std::ceil(grad_bytes / calls.bucket)))
                       : 1;
    analytic::data_collective_costs per = dc;
    if (o.buckets > 0 && !zero.shards_gradients()) {
      parallel::calls_per_step k = calls;
      k.reduces = nb;
      per = analytic::data_collectives_of(s, c, tr, n, tn, k);
    }
    return {i,
            static_cast<std::size_t>(i),
            n,
            tn,
            stage_layers,
            calls,
            dc,
            share * dc.all_gather,
            share * dc.reduce_scatter,
            nb,
            (1.0 / nb) * (zero.shards_optimizer() ? per.reduce_scatter : per.all_reduce),
            (1.0 / nb) * per.all_gather};
  }

  /// ZeRO-1/2 with overlap: the weights the last step updated, gathered bucket by bucket from the
  /// step's start on each stage's data-parallel links; each layer's first forward waits for its
  /// bucket (`fresh_bucket`). Megatron-Core (--overlap-param-gather) dispatches the next bucket
  /// group's all-gather from the forward pre-hook; here they queue back to back.
  void gather_updated_weights() {
    for (const stage_pass& sp : passes) {
      int prev = -1;
      for (int k = 0; k < sp.buckets; ++k) {
        std::vector<int> d;
        if (prev >= 0) d.push_back(prev);
        prev = dp_flow(sp.i, "all-gather updated weights bucket " + std::to_string(k),
                       sp.bucket_gather, std::move(d));
        fresh[sp.I].push_back(prev);
      }
      prev_dp[sp.I] = prev;
    }
  }

  /// The gather that layer l of chunk `chunk` waits for on stage i, or -1: the last of the
  /// buckets that hold its weights (the stage's n buckets spread evenly over its layers), as its
  /// last module waits in Megatron-Core's forward pre-hook for the bucket of its parameters.
  [[nodiscard]] int fresh_bucket(int i, int chunk, int l) const {
    const auto& f = fresh[static_cast<std::size_t>(i)];
    if (f.empty()) return -1;
    int q = l;  // the layer's place among the stage's
    for (int k = 0; k < chunk; ++k) q += s.pipeline.chunk_layers(m.layers, i, k);
    const auto n = static_cast<long long>(f.size());
    const long long at = ((q + 1LL) * n - 1) / std::max(1, s.stage_layers(m, i));
    return f[static_cast<std::size_t>(std::min(at, n - 1))];
  }

  /// Unit u, the k-th of stage i's program: its virtual stage, indices, tag and layers.
  [[nodiscard]] unit_at unit_of(int i, const parallel::pipeline_unit& u, std::size_t k) const {
    const int gs = u.chunk * p + i;  // virtual stage
    return {u,
            gs,
            static_cast<std::size_t>(gs),
            static_cast<std::size_t>(u.micro),
            static_cast<std::size_t>(u.micro * v + u.chunk),
            std::to_string(u.micro) + "." + std::to_string(u.chunk) + " @" + std::to_string(i),
            zero.shards_weights() && has_dp,
            s.pipeline.chunk_layers(m.layers, i, u.chunk),
            k,
            k + 1 == prog[static_cast<std::size_t>(i)].size()};
  }

  /// Stage sp.i's ZeRO-3 all-gather of one layer's weights, after the stage's previous flow.
  int gather(const stage_pass& sp, const std::string& name, int two_back, int just_before) {
    // with overlap a layer's gather may start once the layer two back has run (one layer of
    // prefetch, two gathered at most); without, after the compute just before it
    std::vector<int> d;
    if (prev_dp[sp.I] >= 0) d.push_back(prev_dp[sp.I]);
    const int after = o.overlap ? two_back : just_before >= 0 ? just_before : last[sp.I];
    if (after >= 0) d.push_back(after);
    prev_dp[sp.I] = dp_flow(sp.i, name, sp.layer_gather, d);
    return prev_dp[sp.I];
  }

  /// Lowers forward unit `at` on stage sp.i: its layers, then the head and loss on the last
  /// virtual stage or else the send of its activations; false while its input is not sent yet.
  bool lower_forward(const stage_pass& sp, const unit_at& at) {
    const int i = sp.i;
    const std::size_t I = sp.I, GS = at.GS, J = at.J;
    if (at.gs > 0 && fsend[GS - 1][J] < 0) return false;
    std::vector<int> deps;
    if (last[I] >= 0) deps.push_back(last[I]);
    if (at.gs > 0) deps.push_back(fsend[GS - 1][J]);
    int task = forward_layers(sp, at, deps);
    if (at.gs == vp - 1) {
      task = head_forward(i, at, task);
    } else if (!until[I][at.U].empty()) {
      until_free.push_back(ex.kernels(i, "free caches mb " + at.tag, {}, {task},
                                      task_class::compute, {}, until[I][at.U]));
    }
    fdone[GS][J] = task;
    last[I] = task;
    if (at.gs + 1 < vp) {
      fsend[GS][J] = send(i, (at.gs + 1) % p, "send activations " + at.tag, task);
      if (blocking_sends) last[I] = fsend[GS][J];
    }
    return true;
  }

  /// Unit `at`'s forward layers on stage sp.i after `deps`, each with its weights' gather and
  /// its collectives, making its saved tensors; returns the last task.
  int forward_layers(const stage_pass& sp, const unit_at& at, const std::vector<int>& deps) {
    const int i = sp.i;
    const std::size_t I = sp.I;
    int task = -1, before = -1;
    for (int l = 0; l < at.layers; ++l) {
      const std::string lt = " layer " + std::to_string(l) + " mb " + at.tag;
      std::vector<int> d = l == 0 ? deps : std::vector<int>{task};
      if (at.gathers) d.push_back(gather(sp, "all-gather weights" + lt, before, task));
      if (const int w = at.u.micro == 0 ? fresh_bucket(i, at.u.chunk, l) : -1; w >= 0)
        d.push_back(w);
      const bool dense = at.gs == 0 && l < lc.dense_layers;  // a dense first layer
      lower::span t = dense ? lc.dense.forward : lc.forward;
      std::vector<int> produces{tensor(i, "layer activations", layer_bytes[I])};
      layer_t[I][at.U].push_back(produces.back());
      if (l == 0 && at.gs == 0) {
        t = lc.embedding_forward.then(t);
        produces.push_back(tensor(i, "embedding activations", embed_bytes));
        held[I][at.U].push_back(produces.back());
      }
      if (until_bytes[I] > 0) {
        produces.push_back(tensor(i, "until the loss", until_bytes[I]));
        until[I][at.U].push_back(produces.back());
      }
      if (l == 0 && at.k == 0) {
        produces.push_back(states[I]);
        // the previous step's graph, until this step's first forward ends
        if (terms[I].previous_graph > 0) {
          produces.push_back(tensor(i, "previous step's graph", terms[I].previous_graph));
          until[I][at.U].push_back(produces.back());
        }
      }
      before = task;
      task =
          ex.kernels(i, "forward" + lt, t, std::move(d), task_class::compute, std::move(produces));
      if (const seconds comm = dense ? dense_comm_fwd : comm_fwd; comm > seconds{})
        task =
            ex.kernels(i, "collectives" + lt, comm_span(comm), {task}, task_class::communication);
    }
    return task;
  }

  /// The head and the loss after unit `at`'s last layer (`task`) on the last virtual stage.
  int head_forward(int i, const unit_at& at, int task) {
    const auto I = static_cast<std::size_t>(i);
    // the head and the loss: the caches die with the forward, the loss's forward working
    // set with this task; what the head's backward needs stays
    const auto& x = terms[I];
    const int kept = tensor(i, "head activations", x.head);
    (vocab_parallel ? held[I][at.U] : loss[I][at.U]).push_back(kept);
    const int casts = tensor(i, "head weight copies", x.head_casts);
    loss[I][at.U].push_back(casts);
    const int logits = tensor(i, "logits", x.held_logits);
    held[I][at.U].push_back(logits);
    return ex.kernels(i, "head mb " + at.tag, lc.head_forward, {task}, task_class::compute,
                      {kept, casts, logits, tensor(i, "loss (forward)", x.forward_logits)},
                      until[I][at.U]);
  }

  /// Lowers backward unit `at` on stage sp.i: the head's backward on the last virtual stage, its
  /// layers, its gradients' reduction and the send of its gradients; false while its input is
  /// not sent yet.
  bool lower_backward(const stage_pass& sp, const unit_at& at) {
    const int i = sp.i;
    const std::size_t I = sp.I, GS = at.GS, J = at.J;
    if (at.gs + 1 < vp && bsend[GS + 1][J] < 0) return false;
    std::vector<int> deps;
    if (last[I] >= 0) deps.push_back(last[I]);
    if (at.gs + 1 < vp) deps.push_back(bsend[GS + 1][J]);
    deps.push_back(fdone[GS][J]);
    // ZeRO-0/1: each chunk's last backward on the stage releases its gradient buckets layer
    // group by layer group (all of them after the stage's last backward, without overlap;
    // without `chunk_data_sync`, the stage's last unit releases them all)
    const bool chunk_done =
        --chunk_left[I * static_cast<std::size_t>(v) + static_cast<std::size_t>(at.u.chunk)] == 0;
    const bool reduce_here = (chunked ? chunk_done : at.last) && !zero.shards_gradients() && has_dp;
    int task = -1;
    if (at.gs == vp - 1) {  // the head's backward frees the loss's working set
      task =
          ex.kernels(i, "head backward mb " + at.tag, lc.head_backward, deps, task_class::compute,
                     {tensor(i, "loss (backward)", terms[I].logits)}, loss[I][at.U]);
      deps = {task};
    }
    task = backward_layers(sp, at, deps, task, reduce_here);
    // DeepSpeed's BF16_Optimizer then adds the micro-batch's gradients into its fp32 buffer,
    // one tensor at a time through an fp32 copy (the pass itself is in the layers' backward)
    if (const double copy = terms[I].accumulation_copy; copy > 0) {
      const int fp32 = tensor(i, "fp32 copy of a gradient (update_hp_grads)", copy);
      task = ex.kernels(i, "update_hp_grads mb " + at.tag, lower::span::kernel(0, 0), {task},
                        task_class::compute, {fp32}, {fp32});
    }
    if (reduce_here && at.last)
      while (released[I] < sp.buckets) reduce_bucket(sp, task);
    last[I] = task;
    if (at.gs > 0) {
      bsend[GS][J] = send(i, (at.gs - 1) % p, "send gradients " + at.tag, task);
      pending[I].push_back(bsend[GS][J]);
      if (blocking_sends) last[I] = bsend[GS][J];
    }
    if (!o.overlap) reduce_micro_batch(sp, at.u, task);
    return true;
  }

  /// Unit `at`'s backward layers on stage sp.i after `deps` (`task`: the head's backward or -1),
  /// each with its recomputation, its weights' gather and its collectives, releasing the
  /// gradient buckets as they close when `reduce_here` (its chunk's last backward); returns the
  /// last task.
  int backward_layers(const stage_pass& sp, const unit_at& at, const std::vector<int>& deps,
                      int task, bool reduce_here) {
    const int i = sp.i;
    int before = -1;
    // the stage's layers whose gradients are complete before this unit: the later chunks'
    int done = 0, of = at.layers;
    if (chunked) {
      for (int k = at.u.chunk + 1; k < v; ++k) done += s.pipeline.chunk_layers(m.layers, i, k);
      of = sp.stage_layers;
    }
    for (int l = at.layers - 1; l >= 0; --l) {
      const std::string lt = " layer " + std::to_string(l) + " mb " + at.tag;
      std::vector<int> d = l == at.layers - 1 ? deps : std::vector<int>{task};
      if (at.gathers) d.push_back(gather(sp, "all-gather weights (backward)" + lt, before, task));
      const bool dense = at.gs == 0 && l < lc.dense_layers;  // a dense first layer
      // a layer that kept its tensors (`parallel::nd::recompute_layers`) recomputes nothing
      lower::span t = dense               ? spans.dense.recompute.then(lc.dense.backward)
                      : s.checkpointed(l) ? spans.recompute.then(lc.backward)
                                          : lc.backward;
      if (l == 0 && at.gs == 0) t = t.then(lc.embedding_backward);
      std::vector<int> produces{working[sp.I]}, consumes;
      backward_tensors(sp, at, l, produces, consumes);
      before = task;
      task = ex.kernels(i, "backward" + lt, t, std::move(d), task_class::compute,
                        std::move(produces), std::move(consumes));
      if (const seconds comm = dense ? dense_comm_bwd : comm_bwd; comm > seconds{})
        task = ex.kernels(i, "collectives (backward)" + lt, comm_span(comm), {task},
                          task_class::communication);
      if (o.overlap && zero.shards_gradients() && has_dp) reduce_layer(sp, lt, task);
      // bucket k closes once (k + 1) / buckets of the stage's layers are done (Megatron orders
      // its buckets by the backward: the last chunk's first)
      const int n = sp.buckets;
      int& r = released[sp.I];
      if (reduce_here && o.overlap)
        while (r < n - 1 && (done + at.layers - l) * n >= (r + 1) * of) reduce_bucket(sp, task);
    }
    return task;
  }

  /// The tensors layer l's backward of unit `at` makes (gradients) and frees (saved tensors).
  void backward_tensors(const stage_pass& sp, const unit_at& at, int l, std::vector<int>& produces,
                        std::vector<int>& consumes) {
    const int i = sp.i;
    const std::size_t I = sp.I;
    // gradients made by the backward: the embedding's and head's first, then each layer's
    // once the next one's backward starts (the last one's by the optimizer step)
    if (!terms[I].persistent && made_grads[I] < sp.stage_layers) {
      const bool head_grads = made_grads[I]++ == 0;
      produces.push_back(
          tensor(i, "gradients", head_grads ? terms[I].head_gradients : terms[I].layer_gradients));
      grads[I].push_back(produces.back());
    }
    // with more micro-batches to come the last layer's gradients exist from here on
    // (they accumulate), not from the optimizer step
    if (!terms[I].persistent && l == 0 && made_grads[I] == sp.stage_layers &&
        backward_units[I] > 1) {
      ++made_grads[I];
      produces.push_back(tensor(i, "gradients", terms[I].layer_gradients));
      grads[I].push_back(produces.back());
    }
    if (l == 0) --backward_units[I];
    // the layer's saved tensors (index l of the unit's); the unit's remaining ones with
    // its last layer
    consumes.push_back(layer_t[I][at.U][static_cast<std::size_t>(l)]);
    const auto& unit_held = held[I][at.U];
    if (l == 0) consumes.insert(consumes.end(), unit_held.begin(), unit_held.end());
  }

  /// ZeRO-0/1: stage sp.i's next gradient bucket, reduced after `after` and the stage's
  /// previous flow.
  void reduce_bucket(const stage_pass& sp, int after) {
    std::vector<int> d{after};
    if (prev_dp[sp.I] >= 0) d.push_back(prev_dp[sp.I]);
    prev_dp[sp.I] = dp_flow(sp.i, "reduce gradients bucket " + std::to_string(released[sp.I]++),
                            sp.bucket_reduce, d);
    pending[sp.I].push_back(prev_dp[sp.I]);
  }

  /// ZeRO-2/3 with overlap: the gradients of the layer whose backward is `task` reduce-scattered
  /// on stage sp.i once it ends, after the stage's previous reduce-scatter, as FSDP's
  /// post-backward hook does per unit (DeepSpeed per bucket): a layer's share of the
  /// micro-batch's calls, on a stream of its own, so that the gathers run beside it and share
  /// the NICs (FSDP's separate all-gather and reduce-scatter streams).
  void reduce_layer(const stage_pass& sp, const std::string& layer, int task) {
    std::vector<int> d{task};
    if (prev_rs[sp.I] >= 0) d.push_back(prev_rs[sp.I]);
    // the engine's calls each pay the start-up; hybrid sharding then all-reduces the shard
    // across the shard groups
    prev_rs[sp.I] = dp_flow(sp.i, "reduce-scatter gradients" + layer, sp.layer_scatter, d);
    pending[sp.I].push_back(prev_rs[sp.I]);
  }

  /// ZeRO-2/3 without overlap: once micro-batch u's last backward unit on stage sp.i is done
  /// (`task`), its gradients reduce-scattered before the next micro-batch starts.
  void reduce_micro_batch(const stage_pass& sp, const parallel::pipeline_unit& u, int task) {
    const std::size_t I = sp.I;
    const auto MB = static_cast<std::size_t>(sp.i * mb + u.micro);
    if (--remaining_bwd[MB] == 0 && zero.shards_gradients() && has_dp) {  // micro-batch done here
      std::vector<int> d{task};
      if (prev_dp[I] >= 0) d.push_back(prev_dp[I]);
      // the engine's calls (per unit, per bucket) each pay the start-up; hybrid sharding
      // then all-reduces the shard across the shard groups
      const int r = dp_flow(sp.i, "reduce-scatter gradients " + std::to_string(u.micro),
                            sp.dc.reduce_scatter, d);
      prev_dp[I] = r;
      last[I] = r;  // the next micro-batch waits for the reduction
      pending[I].push_back(r);
    }
  }

  /// One micro-batch's backward on stage i (with its recomputation): what ZeRO-Offload's
  /// gradient copies hide behind, as in the closed form.
  [[nodiscard]] seconds stage_backward(int i) const {
    double t = s.stage_layers(m, i) * lc.backward.gpu +
               s.checkpointed_layers(m, i) *
                   parallel::recomputed(rc, lc.forward.gpu, lc.attention.gpu, lc.uncached.gpu);
    if (const int d = i == 0 ? lc.dense_layers : 0; d > 0) {  // the dense first layers instead
      const analytic::layer_kind_compute& k = lc.dense;
      t += d * (k.backward.gpu +
                parallel::recomputed(rc, k.forward.gpu, k.attention.gpu, k.forward.gpu) -
                lc.backward.gpu -
                parallel::recomputed(rc, lc.forward.gpu, lc.attention.gpu, lc.uncached.gpu));
    }
    if (i == 0) t += lc.embedding_backward.gpu;
    if (i == p - 1) t += lc.head_backward.gpu;
    return seconds{t};
  }

  /// Every stage's optimizer step (`optimizer_step`).
  void add_optimizer_steps() {
    // the optimizer step, then (ZeRO-1/2) the updated weights gathered back
    for (int i = 0; i < p; ++i) optimizer_step(i);
  }

  /// Stage i's optimizer step after its backward and flows, consuming its gradients, then
  /// (ZeRO-1/2) the updated weights gathered back.
  void optimizer_step(int i) {
    const auto I = static_cast<std::size_t>(i);
    std::vector<int> deps = pending[I];
    deps.push_back(last[I]);
    const auto n = analytic::trained_on(m, s, tr, i);  // what the optimizer updates
    std::vector<int> last_grads;
    if (!terms[I].persistent) {  // the gradients the backward has not made yet
      const double made = made_grads[I] == 0 ? 0.0
                                             : terms[I].head_gradients +
                                                   (made_grads[I] - 1) * terms[I].layer_gradients;
      last_grads.push_back(tensor(i, "gradients", std::max(terms[I].gradients - made, 0.0)));
      grads[I].push_back(last_grads.back());
    }
    if (terms[I].update_buffer > 0)  // the step's fp32 copy of the gradient partition
      last_grads.push_back(tensor(i, "fp32 gradient copy", terms[I].update_buffer));
    std::vector<int> consumes = grads[I];
    if (terms[I].update_buffer > 0) consumes.push_back(last_grads.back());
    consumes.push_back(states[I]);
    const double partition = analytic::partition_of(s, n, zero.shards_optimizer());
    // ZeRO-Offload: the step runs on the host (`analytic::offloaded_update`, nothing hidden)
    const lower::span step =
        tr.framework.data.offload_optimizer != frameworks::offload_device::none
            ? lower::span::kernel(
                  0, analytic::offloaded_update(c, tr, partition, stage_backward(i)).count())
            : analytic::optimizer_span(
                  prof, tr, lc, partition,
                  lower::parameter_tensors(m, tr.framework) * s.stage_layers(m, i) / m.layers);
    const int upd = ex.kernels(i, "optimizer step", step, deps, task_class::compute,
                               std::move(last_grads), std::move(consumes));
    if (!o.overlap && zero.gathers_updated_weights() && has_dp) {
      const stage_pass& sp = passes[I];
      dp_flow(i, "all-gather updated weights", sp.buckets * sp.bucket_gather, {upd});
    }
  }
};

}  // namespace detail

/// Simulates one iteration of a transformer plan. Checks it like `analytic::evaluate`.
[[nodiscard]] inline transformer_run simulate(const transformer& m, const parallel::nd& s,
                                              const cluster& c, const training& tr,
                                              const device_profile& prof,
                                              const transformer_options& o = {}) {
  detail::check_transformer_run(m, s, c, tr, o);
  transformer_run out;
  detail::transformer_builder builder(m, s, c, tr, prof, o, out.graph);
  out.simulated_ranks = builder.p;
  builder.build();
  out.run = out.graph.run();
  out.iteration = seconds{out.run.makespan};
  return out;
}

/// A transformer plan in any of its forms: its model, cluster and training setup, and a strategy
/// that is (`transformer_plan`) or composes to (`plan<transformer, Policies...>::strategy()`) a
/// `parallel::nd`.
template <class P>
concept TransformerPlan = requires(const P& p) {
  { p.net } -> std::convertible_to<transformer>;
  { p.machine } -> std::convertible_to<cluster>;
  { p.setup } -> std::convertible_to<training>;
}
&&(
    requires(const P& p) {
      { p.strategy() } -> std::convertible_to<parallel::nd>;
    } ||
    requires(const P& p) {
      { p.strategy } -> std::convertible_to<parallel::nd>;
    });

/// The runtime strategy of plan `p`.
template <TransformerPlan P>
[[nodiscard]] constexpr parallel::nd strategy_of(const P& p) {
  if constexpr (requires { p.strategy(); })
    return p.strategy();
  else
    return p.strategy;
}

/// Simulates one iteration of plan `p` (`simulate` above).
template <TransformerPlan P>
[[nodiscard]] inline transformer_run simulate(const P& p, const device_profile& prof,
                                              const transformer_options& o = {}) {
  return simulate(p.net, strategy_of(p), p.machine, p.setup, prof, o);
}

/// An executor runs a plan's lowered operations event by event and returns the run, whose
/// `iteration` is the iteration's time: `e(plan)`.
template <class E, class P>
concept Executor = requires(const E& e, const P& p) {
  { e(p).iteration } -> std::convertible_to<seconds>;
};

/// The event-core executor of transformer plans: `simulate` with a device profile and options.
struct event_executor {
  device_profile profile;
  transformer_options options{};
  template <TransformerPlan P>
  [[nodiscard]] transformer_run operator()(const P& p) const {
    return simulate(p, profile, options);
  }
};

}  // namespace strata::sim
