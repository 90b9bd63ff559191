#pragma once
/// @file sim/op_trace.hpp
/// @brief strata's operation trace: the ops of one profiled training step (host calls, GPU
/// kernels and copies, transfers to and from parameter servers) with their start, duration,
/// stream, kind, bytes, dependencies and, for transfers, the tensor moved; its replay on the
/// event core, and its conversion to Li et al.'s profiled step (`sim::ps_step`).
///
/// The JSON form and the readers (PyTorch profiler Chrome traces, TensorFlow step stats) are in
/// `io/op_trace.hpp`; docs/li.md documents the format and what the readers infer.
///
/// Replay (one device): every stream is a `fifo` resource of the core, its ops in trace order.
/// A GPU op starts when its stream is free and its dependencies are done. A host op (a stream
/// whose name starts with "cpu") first spends the host time the trace shows before it (its start
/// minus the end of whatever came before it on that thread or, for a hand-over, on the thread it
/// waits for), then runs its recorded duration. So the trace replays onto itself, and a change
/// (a faster kernel, more workers) moves only what depends on it.
/// @code
/// const auto t = strata::io::parse_pytorch_trace(text);
/// const auto r = strata::sim::replay_one(t);   // r.step_time vs t.span()
/// @endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "strata/comm/collectives.hpp"
#include "strata/error.hpp"
#include "strata/frameworks/recipe.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/model/transformer.hpp"
#include "strata/sim/executor.hpp"
#include "strata/sim/ps.hpp"

namespace strata::sim {

struct trace_op {
  std::string id{};
  std::string name{};       ///< what the profiler called it (a kernel's name); may repeat
  int stream = 0;           ///< index into `op_trace::streams`
  std::string kind{};       ///< kernel, memset, memcpy, launch, sync, runtime, downlink, uplink, ps
  double start = 0;         ///< seconds since the trace's first op
  double duration = 0;      ///< seconds
  double bytes = 0;         ///< bytes moved (copies, transfers)
  std::string tensor{};     ///< the tensor a transfer moves
  int step = 0;             ///< the profiled step it belongs to
  int server = 0;           ///< the parameter server of a transfer or update
  std::vector<int> deps{};  ///< indices of earlier ops it waits for
};

/// One allocation or release the profiler recorded.
struct trace_memory {
  double time = 0;
  double allocated = 0;  ///< bytes allocated on the device after the event
};

/// A parameter's gradient made ready by the backward pass (PyTorch: an AccumulateGrad call, after
/// which DDP's hook on that parameter runs).
struct trace_gradient {
  double time = 0;    ///< seconds on the trace's clock: when the accumulation and its hooks ended
  double bytes = -1;  ///< the gradient's size; -1: the profiler recorded no shapes
  int stream = -1;    ///< the host thread that accumulated it; -1: none of the trace's streams
};

struct op_trace {
  std::vector<std::string> streams;  ///< "cpu <thread>", "gpu <device> stream <id>", "downlink"...
  std::vector<std::string> labels;   ///< what the profiler named each stream ("" if nothing)
  std::vector<trace_op> ops;         ///< by start time
  std::vector<trace_memory> memory;
  std::vector<trace_gradient> gradients;  ///< in the order they became ready
  [[nodiscard]] bool host(int stream) const {
    return streams[static_cast<std::size_t>(stream)].rfind("cpu", 0) == 0;
  }
  /// First start to last end: the traced step time.
  [[nodiscard]] double span() const {
    double a = std::numeric_limits<double>::infinity(), b = 0;
    for (const auto& o : ops) {
      a = std::min(a, o.start);
      b = std::max(b, o.start + o.duration);
    }
    return ops.empty() ? 0.0 : b - a;
  }
  [[nodiscard]] double peak_memory() const {
    double p = 0;
    for (const auto& m : memory) p = std::max(p, m.allocated);
    return p;
  }
};

/// Checks what the replay relies on; errors name the op.
inline void validate(const op_trace& t) {
  if (t.ops.empty()) throw plan_error("the trace has no ops");
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const trace_op& o = t.ops[i];
    const std::string who = "op '" + o.id + "'";
    if (o.stream < 0 || o.stream >= static_cast<int>(t.streams.size()))
      throw plan_error(who + ": unknown stream");
    if (!(o.start >= 0) || !(o.duration >= 0) || !(o.start + o.duration < 1e9))
      throw plan_error(who + ": start and duration must be non-negative seconds");
    if (!(o.bytes >= 0) || !(o.bytes < 1e18)) throw plan_error(who + ": bytes must be >= 0");
    for (int d : o.deps)
      if (d < 0 || d >= static_cast<int>(i))
        throw plan_error(who + ": depends on an op that does not come before it");
  }
  for (std::size_t k = 0; k < t.gradients.size(); ++k) {
    const trace_gradient& g = t.gradients[k];
    const std::string who = "gradient " + std::to_string(k);
    if (!(g.time >= 0) || !(g.time < 1e9) || (k > 0 && g.time < t.gradients[k - 1].time))
      throw plan_error(who +
                       ": times must be non-negative seconds, in the order gradients became ready");
    if (!(g.bytes >= -1) || !(g.bytes < 1e18) || (g.bytes < 0 && g.bytes != -1))
      throw plan_error(who + ": bytes must be >= 0 (or -1: not recorded)");
    if (g.stream < -1 || g.stream >= static_cast<int>(t.streams.size()))
      throw plan_error(who + ": unknown stream");
  }
}

struct replay_op {
  double start = 0, end = 0;
};

struct trace_replay {
  double step_time = 0;  ///< first start (0) to last end
  double gpu_busy = 0;   ///< summed duration of the non-host ops
  std::vector<replay_op> ops;
};

/// Replays `t` on one device. `host_scale` multiplies every host time (gaps and calls): 1
/// replays the trace as recorded, 0 assumes an infinitely fast host (the device-bound step).
[[nodiscard]] inline trace_replay replay_one(const op_trace& t, double host_scale = 1.0) {
  validate(t);
  if (!(host_scale >= 0) || !(host_scale <= 1e3))
    throw plan_error("the host time scale must lie in [0, 1000]");
  simulator s;
  executor ex(s);  // the trace's streams on one device, each in recorded order
  std::vector<int> res;
  for (std::size_t k = 0; k < t.streams.size(); ++k) res.push_back(ex.add_stream(0, t.streams[k]));
  double t0 = std::numeric_limits<double>::infinity();
  for (const auto& o : t.ops) t0 = std::min(t0, o.start);
  const std::size_t n = t.ops.size();
  std::vector<int> task(n, -1);
  std::vector<int> last_on(t.streams.size(), -1);  // last op of each stream
  int last_host = -1;                              // the host op that ended last so far
  trace_replay out;
  for (std::size_t i = 0; i < n; ++i) {
    const trace_op& o = t.ops[i];
    const auto us = static_cast<std::size_t>(o.stream);
    std::vector<int> deps;
    for (int d : o.deps) deps.push_back(task[static_cast<std::size_t>(d)]);
    // stream order (a fifo serves in the order tasks become ready, so it is made explicit)
    const int before = last_on[us] >= 0 ? task[static_cast<std::size_t>(last_on[us])] : -1;
    if (before >= 0) deps.push_back(before);
    double work = o.duration;
    task_class cls = task_class::compute;
    if (t.host(o.stream)) {
      // the host time before it, from the end of what it follows on this thread or (a hand-over)
      // the host op on another thread that ended last before it started
      auto end_of = [&](int k) {
        const auto& p = t.ops[static_cast<std::size_t>(k)];
        return p.start + p.duration;
      };
      double after = last_on[us] >= 0 ? end_of(last_on[us]) : t0;
      int handover = -1;
      if (last_host >= 0 && t.ops[static_cast<std::size_t>(last_host)].stream != o.stream &&
          end_of(last_host) <= o.start && end_of(last_host) > after) {
        after = end_of(last_host);
        handover = task[static_cast<std::size_t>(last_host)];
      }
      if (o.kind == "sync" && !o.deps.empty()) {  // its recorded time includes the wait
        double waited = o.start;
        for (int d : o.deps) waited = std::max(waited, end_of(d));
        work = std::max(0.0, o.start + o.duration - waited);
      }
      const double gap = std::max(0.0, o.start - after) * host_scale;
      if (gap > 0) {
        std::vector<int> g;
        if (handover >= 0) g.push_back(handover);
        if (before >= 0) g.push_back(before);
        deps.push_back(ex.on_stream(res[us], 0, "", gap, std::move(g), task_class::other));
      } else if (handover >= 0) {
        deps.push_back(handover);
      }
      work *= host_scale;
      cls = task_class::other;
      if (last_host < 0 || end_of(static_cast<int>(i)) >= end_of(last_host))
        last_host = static_cast<int>(i);
    } else {
      out.gpu_busy += o.duration;
    }
    task[i] = ex.on_stream(res[us], 0, "", work, std::move(deps), cls);
    last_on[us] = static_cast<int>(i);
  }
  const result r = s.run();
  out.step_time = r.makespan;
  out.ops.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& rec = r.tasks[static_cast<std::size_t>(task[i])];
    out.ops.push_back({rec.start, rec.end});
  }
  return out;
}

/// Every profiled step of `t` (steps 0 to the last one an op names), for Li et al.'s simulator:
/// streams named "downlink", "uplink" and "ps" are those resources (any other stream is the
/// worker's computation); transfers keep their bytes, computations their durations; a
/// dependency stays within its step. One pass over the ops: a trace of S steps of n ops each
/// takes time in S n, not S^2 n (issue 39: 1,000 profiled steps took 66 s).
[[nodiscard]] inline std::vector<ps_step> to_ps_steps(const op_trace& t) {
  validate(t);
  int last = 0;
  for (const trace_op& o : t.ops) last = std::max(last, o.step);
  // a step no op names: the first one missing (there are at most as many steps as ops)
  if (static_cast<std::size_t>(last) >= t.ops.size()) {
    std::vector<char> named(t.ops.size() + 1, 0);
    for (const trace_op& o : t.ops)
      if (o.step >= 0 && static_cast<std::size_t>(o.step) < named.size())
        named[static_cast<std::size_t>(o.step)] = 1;
    std::size_t k = 0;
    while (named[k]) ++k;
    throw plan_error("the trace has no ops in step " + std::to_string(k));
  }
  std::vector<ps_step> out(static_cast<std::size_t>(last) + 1);
  std::vector<int> index(t.ops.size(), -1);  // an op's place in its step
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const trace_op& o = t.ops[i];
    if (o.step < 0) continue;  // no step of the job
    ps_step& step = out[static_cast<std::size_t>(o.step)];
    const std::string& sn = t.streams[static_cast<std::size_t>(o.stream)];
    ps_op p;
    p.id = o.id;
    p.server = o.server;
    if (sn == "downlink" || sn == "uplink") {
      p.res = sn == "downlink" ? ps_resource::downlink : ps_resource::uplink;
      p.bytes = o.bytes;
    } else {
      p.res = sn == "ps" ? ps_resource::ps : ps_resource::worker;
      p.duration = o.duration;
    }
    for (int d : o.deps) {
      const auto D = static_cast<std::size_t>(d);
      if (t.ops[D].step != o.step)
        throw plan_error("op '" + o.id + "': depends on op '" + t.ops[D].id + "' of another step");
      p.deps.push_back(index[D]);
    }
    index[i] = static_cast<int>(step.ops.size());
    step.ops.push_back(std::move(p));
  }
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].ops.empty()) throw plan_error("the trace has no ops in step " + std::to_string(k));
  return out;
}

/// Profiled step `step` of `t` (`to_ps_steps`).
[[nodiscard]] inline ps_step to_ps_step(const op_trace& t, int step = 0) {
  std::vector<ps_step> steps = to_ps_steps(t);
  if (step < 0 || static_cast<std::size_t>(step) >= steps.size())
    throw plan_error("the trace has no ops in step " + std::to_string(step));
  return std::move(steps[static_cast<std::size_t>(step)]);
}

/// Data parallelism from a one-GPU trace (every rank runs the trace's ops; ranks are identical, so
/// one is simulated and its collectives end together on all): the gradients go into DDP's buckets
/// (`data_parallel_options`), and each bucket is all-reduced, in order, on a communication stream
/// (ring, `comm::ring` on `machine` over `gpus` ranks) once it is ready; the first GPU op after
/// the backward pass and the last bucket (the optimizer) waits for the last all-reduce. When a
/// bucket is ready:
/// - from the trace's own gradients (`data_parallel(t, machine, gpus, opt)`: PyTorch traces record
///   every AccumulateGrad call): DDP's hook on the bucket's last gradient issues the all-reduce
///   from the host thread that accumulated it, at the end of that call, and NCCL's stream waits
///   for the compute stream as it stands then, so the all-reduce follows the host op that
///   thread ran last before that time and the last GPU op launched before it (the backward
///   pass ends with the GPU op launched last before the last gradient);
/// - from a total (`data_parallel(t, machine, gpus, gradient_bytes, opt)`, for a trace without
///   gradients or another model's): the gradients become ready evenly over the backward pass's
///   GPU time (the GPU ops launched by the autograd thread, a host stream labelled
///   "...autograd...").
/// The closed form of the same plan is the one-GPU step plus every bucket's all-reduce: with no
/// overlap and a device-bound step the two agree exactly.
struct dp_prediction {
  double step_time = 0;    ///< simulated
  double closed_form = 0;  ///< one-GPU replay + every bucket's all-reduce, no overlap
  double all_reduce = 0;   ///< summed all-reduce time of the buckets
  int buckets = 0;
};

/// How DDP buckets the gradients and how the step is replayed.
///
/// DDP (torch/nn/parallel/distributed.py, `_ddp_init_helper`, and the reducer's bucket rebuild
/// after the first iteration, torch/csrc/distributed/c10d/reducer.cpp) fills buckets in the order
/// gradients become ready and closes one once it holds at least its limit: 1 MiB for the first
/// (`_DEFAULT_FIRST_BUCKET_BYTES`, so that the last layers' gradients start their all-reduce
/// early), `bucket_cap_mb` (25 MiB) after. A gradient is never split, so a bucket may hold far more
/// than its limit (the first one of GPT-2 124M holds 9.4 MB; `ddp_buckets`). Given `gradients`
/// (every parameter's gradient bytes in the order they become ready; `ready_gradients` derives
/// them from a model), the buckets are DDP's; without them, they are exactly the limits, the last
/// one holding what is left.
struct data_parallel_options {
  bool overlap = true;  ///< false: the first all-reduce starts after the backward pass
  double bucket_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1.0 * 1024 * 1024;  ///< 0: the first bucket is a full one
  std::vector<double> gradients{};  ///< bytes per parameter, in ready order; empty: unknown
  double host_scale = 1.0;          ///< as in `replay_one` (0: device-bound)
};

namespace detail {
/// DDP's bucket assignment (reducer.cpp, `compute_bucket_assignment_by_size`, for one dtype on one
/// device): per bucket, its bytes and the index of the gradient that closed it.
inline std::vector<std::pair<double, std::size_t>> ddp_assign(const std::vector<double>& gradients,
                                                              double first_bucket_bytes,
                                                              double bucket_bytes) {
  if (!(bucket_bytes > 0) || !(first_bucket_bytes >= 0))
    throw plan_error("DDP's bucket limits must be positive (the first one may be 0: a full one)");
  std::vector<std::pair<double, std::size_t>> out;
  double open = 0;
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    if (!(gradients[i] >= 0)) throw plan_error("a parameter's gradient has a negative size");
    open += gradients[i];
    const double limit = out.empty() && first_bucket_bytes > 0 ? first_bucket_bytes : bucket_bytes;
    if (open >= limit || i + 1 == gradients.size()) {
      if (open > 0 || out.empty()) out.emplace_back(open, i);
      open = 0;
    }
  }
  return out;
}
}  // namespace detail

/// DDP's bucket sizes for `gradients` (bytes per parameter, in the order they become ready): each
/// bucket takes gradients until it holds at least its limit (`first_bucket_bytes` for the first,
/// when positive, `bucket_bytes` after); the last one holds what is left.
[[nodiscard]] inline std::vector<double> ddp_buckets(const std::vector<double>& gradients,
                                                     double first_bucket_bytes = 1.0 * 1024 * 1024,
                                                     double bucket_bytes = 25.0 * 1024 * 1024) {
  std::vector<double> out;
  for (const auto& [b, last] : detail::ddp_assign(gradients, first_bucket_bytes, bucket_bytes))
    if (b > 0) out.push_back(b);
  return out;
}

/// Every parameter's gradient bytes of `m` (`bytes` per element: 4 for fp32 parameters) under
/// recipe `r`, in the order the backward pass makes them ready, which is the order DDP rebuilds its
/// buckets in (`ddp_buckets`): the reverse of the modules' forward order. An untied output
/// projection first, the final norm, then each layer from the last: the MLP's down projection, its
/// up (and gate) projection, the second norm, the attention's output projection, V, K and Q (or
/// the fused QKV), the first norm; the position table, the token embedding last (a tied one
/// gathers its gradient from the head too, so it is ready only then). A LayerNorm's weight is
/// ready before its bias; a linear layer's bias before its weight, except a `torch.nn.Linear`
/// under autocast (`recipe::autocast`), whose weight comes first (transformers' GPT-2 uses
/// `Conv1D`, bias first either way). Checked against DDP on GPT-2 124M and Llama-3.2 1B
/// (test/data/ddp_buckets.csv), against post-accumulate-grad hooks of nanoGPT and transformers'
/// GPT-2 in fp32 and under bf16 autocast (test/data/gradient_order.csv), and against the sample
/// trace's AccumulateGrad calls; Q, K and V (or gate and up) come in the order of the modules the
/// recipe runs (`lower::parameter_tensors` counts the same tensors).
[[nodiscard]] inline std::vector<double> ready_gradients(const transformer& m,
                                                         const frameworks::recipe& r,
                                                         double bytes = 4) {
  if (m.moe() || m.mla())
    throw plan_error(
        "the order of an MoE layer's gradients is not modelled, nor a latent attention "
        "layer's: pass the parameters' gradients as measured "
        "(data_parallel_options::gradients)");
  const bool hf = r.modules == frameworks::module_style::transformers;
  const bool conv1d = hf && m.positions == position_kind::learned;  // transformers' GPT-2
  const bool fused_qkv = r.fused_qkv || conv1d;
  const bool weight_first = r.autocast && !conv1d;
  const double h = m.hidden, f = m.ffn_size(), w = m.kv_width();
  std::vector<double> g;
  const auto linear = [&](double out, double in, bool bias) {
    if (bias && !weight_first) g.push_back(out * bytes);
    g.push_back(out * in * bytes);
    if (bias && weight_first) g.push_back(out * bytes);
  };
  const auto norm = [&] {
    g.push_back(h * bytes);
    if (m.norm == norm_kind::layer_norm) g.push_back(h * bytes);
  };
  if (!m.tied) g.push_back(static_cast<double>(m.vocabulary) * h * bytes);
  norm();
  const bool qkv_bias = m.bias || m.qkv_bias;
  for (int l = 0; l < m.layers; ++l) {
    linear(h, f, m.bias);
    if (m.mlp == mlp_kind::swiglu && r.fused_gate_up) {
      linear(2 * f, h, m.bias);
    } else {
      linear(f, h, m.bias);                                 // up
      if (m.mlp == mlp_kind::swiglu) linear(f, h, m.bias);  // gate
    }
    norm();
    linear(h, h, m.bias);
    if (fused_qkv) {
      linear(h + 2 * w, h, qkv_bias);
    } else {
      linear(w, h, qkv_bias);  // V
      linear(w, h, qkv_bias);  // K
      linear(h, h, qkv_bias);  // Q
    }
    norm();
  }
  if (m.positions == position_kind::learned)
    g.push_back(static_cast<double>(m.sequence) * h * bytes);
  g.push_back(static_cast<double>(m.vocabulary) * h * bytes);
  return g;
}

namespace detail {
/// The trace's backward pass: the GPU ops launched from an autograd thread.
struct backward_pass {
  std::vector<char> op;  ///< per op: launched by the autograd thread
  int last = -1;         ///< its last GPU op
  double time = 0;       ///< summed GPU time
};
inline backward_pass find_backward(const op_trace& t) {
  backward_pass b;
  b.op.assign(t.ops.size(), 0);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const auto& o = t.ops[i];
    if (t.host(o.stream) || o.deps.empty()) continue;
    const auto& launcher = t.ops[static_cast<std::size_t>(o.deps.front())];
    const auto ls = static_cast<std::size_t>(launcher.stream);
    if (ls < t.labels.size() && t.labels[ls].find("autograd") != std::string::npos) {
      b.op[i] = 1;
      b.last = static_cast<int>(i);
      b.time += o.duration;
    }
  }
  if (b.last < 0)
    throw plan_error("the trace shows no backward pass (no GPU op launched by an autograd thread)");
  return b;
}

/// A bucket of gradients: its bytes, and the ops its all-reduce waits for (the GPU op, and the host
/// op that issues it; -1: none).
struct dp_bucket {
  double bytes = 0;
  int gpu = -1, host = -1;
};

inline void check_data_parallel(const op_trace& t, const cluster& machine, int gpus,
                                const data_parallel_options& opt) {
  validate(t);
  if (gpus < 1 || gpus > machine.devices())
    throw plan_error("data parallelism needs between 1 and the cluster's devices GPUs");
  if (!(opt.bucket_bytes > 0)) throw plan_error("the gradient and bucket sizes must be positive");
  if (!(opt.first_bucket_bytes >= 0))
    throw plan_error("the first bucket's size must be zero (a full bucket) or positive");
  for (const auto& o : t.ops)  // its collectives would come twice
    if (!t.host(o.stream) &&
        (o.name.find("nccl") != std::string::npos || o.name.find("NCCL") != std::string::npos))
      throw plan_error("op '" + o.id +
                       "': the trace already runs NCCL collectives; data parallelism adds its own "
                       "all-reduces to a one-GPU step without them (replay this one with "
                       "replay_one)");
}

/// The one-GPU graph of `replay_one` with each bucket's all-reduce after the ops it waits for.
inline dp_prediction replay_data_parallel(const op_trace& t, const cluster& machine, int gpus,
                                          const std::vector<dp_bucket>& buckets, int last_bw,
                                          double host_scale) {
  dp_prediction out;
  out.buckets = static_cast<int>(buckets.size());
  std::vector<double> ar(buckets.size());
  std::vector<int> after(buckets.size());  // the op each all-reduce is listed after
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    ar[k] = gpus > 1 ? comm::ring::time(comm::collective::all_reduce, machine, {0, gpus, 1},
                                        bytes{buckets[k].bytes})
                           .count()
                     : 0.0;
    out.all_reduce += ar[k];
    after[k] = std::max({buckets[k].gpu, buckets[k].host, k > 0 ? after[k - 1] : 0});
  }
  op_trace x = t;
  const int comm_stream = static_cast<int>(x.streams.size());
  x.streams.push_back("gpu communication");
  x.labels.resize(x.streams.size());
  // the optimizer: the first GPU op after the backward pass and the last all-reduce
  const int wait_from = std::max(last_bw, after.empty() ? -1 : after.back());
  std::vector<trace_op> ops;
  std::vector<int> index(t.ops.size());
  int last_ar = -1;
  bool optimizer = false;
  std::size_t k = 0;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    trace_op o = t.ops[i];
    for (int& d : o.deps) d = index[static_cast<std::size_t>(d)];
    if (!t.host(o.stream) && static_cast<int>(i) > wait_from && !optimizer && last_ar >= 0) {
      optimizer = true;
      o.deps.push_back(last_ar);
    }
    index[i] = static_cast<int>(ops.size());
    ops.push_back(std::move(o));
    for (; k < buckets.size() && after[k] == static_cast<int>(i); ++k) {
      trace_op a{.id = "all-reduce bucket " + std::to_string(k),
                 .name = "all-reduce",
                 .stream = comm_stream,
                 .kind = "all_reduce",
                 .start = t.ops[i].start + t.ops[i].duration,
                 .duration = ar[k],
                 .bytes = buckets[k].bytes};
      for (int w : {buckets[k].gpu, buckets[k].host})
        if (w >= 0) a.deps.push_back(index[static_cast<std::size_t>(w)]);
      ops.push_back(std::move(a));
      last_ar = static_cast<int>(ops.size()) - 1;
    }
  }
  x.ops = std::move(ops);
  out.step_time = replay_one(x, host_scale).step_time;
  out.closed_form = replay_one(t, host_scale).step_time + out.all_reduce;
  return out;
}
}  // namespace detail

/// Data parallelism of `t`'s step with `total` gradient bytes, ready evenly over the backward
/// pass's GPU time (see `dp_prediction`); `opt.gradients`, when given, are DDP's buckets'
/// contents and must add up to `total`.
[[nodiscard]] inline dp_prediction data_parallel(const op_trace& t, const cluster& machine,
                                                 int gpus, bytes total,
                                                 const data_parallel_options& opt = {}) {
  detail::check_data_parallel(t, machine, gpus, opt);
  const double gradient_bytes = total.count();
  if (!(gradient_bytes > 0)) throw plan_error("the gradient and bucket sizes must be positive");
  if (!(gradient_bytes / opt.bucket_bytes <= 1e6))
    throw plan_error(
        "the gradients would fill more than a million buckets: the bucket is too small");
  const auto bw = detail::find_backward(t);
  // the buckets in the order they fill: DDP's for the parameters given; else the first one small,
  // the last one what is left
  std::vector<double> size, filled;  // filled: the gradient bytes ready once bucket k is
  if (!opt.gradients.empty()) {
    size = ddp_buckets(opt.gradients, opt.first_bucket_bytes, opt.bucket_bytes);
    double sum = 0;
    for (double b : size) sum += b;
    if (!(std::abs(sum - gradient_bytes) <= 1e-9 * gradient_bytes))
      throw plan_error("the parameters' gradients add up to " + std::to_string(sum) +
                       " bytes, not the " + std::to_string(gradient_bytes) + " given");
  } else {
    for (double left = gradient_bytes; left > gradient_bytes * 1e-9;) {  // no rounding crumb
      const double cap =
          size.empty() && opt.first_bucket_bytes > 0 ? opt.first_bucket_bytes : opt.bucket_bytes;
      size.push_back(std::min(cap, left));
      left -= size.back();
    }
  }
  for (double b : size) filled.push_back((filled.empty() ? 0.0 : filled.back()) + b);
  filled.back() = gradient_bytes;
  // bucket k is ready when the backward ops have run the share filled[k] / gradient_bytes of
  // their time
  std::vector<detail::dp_bucket> buckets(size.size(), {0, bw.last, -1});
  double done = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < t.ops.size() && k < size.size(); ++i) {
    if (!bw.op[i]) continue;
    done += t.ops[i].duration;
    for (; k < size.size() && done >= bw.time * filled[k] / gradient_bytes - 1e-15; ++k)
      buckets[k].gpu = opt.overlap ? static_cast<int>(i) : bw.last;
  }
  for (std::size_t b = 0; b < size.size(); ++b) buckets[b].bytes = size[b];
  return detail::replay_data_parallel(t, machine, gpus, buckets, bw.last, opt.host_scale);
}

/// Data parallelism of `t`'s step with the gradients the trace itself records (`t.gradients`:
/// when each became ready, on which host thread, and its bytes; see `dp_prediction`), bucketed as
/// DDP buckets them. `opt.gradients`, when given, replaces the recorded sizes (one per recorded
/// gradient: a trace profiled without shapes has none).
[[nodiscard]] inline dp_prediction data_parallel(const op_trace& t, const cluster& machine,
                                                 int gpus, const data_parallel_options& opt = {}) {
  detail::check_data_parallel(t, machine, gpus, opt);
  const std::size_t n = t.gradients.size();
  if (n == 0)
    throw plan_error(
        "the trace records no gradients (a PyTorch trace records its AccumulateGrad calls): give "
        "the gradients' total bytes instead");
  std::vector<double> bytes_of(n);
  if (!opt.gradients.empty() && opt.gradients.size() != n)
    throw plan_error("data_parallel_options::gradients lists " +
                     std::to_string(opt.gradients.size()) + " gradients; the trace records " +
                     std::to_string(n));
  for (std::size_t g = 0; g < n; ++g) {
    bytes_of[g] = opt.gradients.empty() ? t.gradients[g].bytes : opt.gradients[g];
    if (bytes_of[g] < 0)
      throw plan_error("the trace records when gradient " + std::to_string(g) +
                       " became ready but not its size (profile with record_shapes=True, or give "
                       "data_parallel_options::gradients)");
  }
  // GPU ops by the time their launch began, host ops by thread and start, each list with the
  // largest op index so far: the last op (in trace order) that began before a given time
  using timed = std::vector<std::pair<double, int>>;
  timed gpu_by_launch;
  std::vector<timed> host_by_start(t.streams.size());
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const auto& o = t.ops[i];
    if (t.host(o.stream)) {
      host_by_start[static_cast<std::size_t>(o.stream)].emplace_back(o.start, static_cast<int>(i));
      continue;
    }
    const auto* launch = o.deps.empty() ? nullptr : &t.ops[static_cast<std::size_t>(o.deps[0])];
    gpu_by_launch.emplace_back(launch && t.host(launch->stream) ? launch->start : o.start,
                               static_cast<int>(i));
  }
  auto prepare = [](timed& v) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i) v[i].second = std::max(v[i].second, v[i - 1].second);
  };
  prepare(gpu_by_launch);
  for (auto& v : host_by_start) prepare(v);
  auto last_before = [](const timed& v, double time) {
    const auto it = std::lower_bound(v.begin(), v.end(), std::pair{time, -1});
    return it == v.begin() ? -1 : std::prev(it)->second;
  };
  // the backward pass ends with the last gradient: the last GPU op launched before it
  const int last_bw = last_before(gpu_by_launch, t.gradients.back().time);
  if (last_bw < 0) throw plan_error("no GPU op was launched before the last gradient became ready");
  std::vector<detail::dp_bucket> buckets;
  for (const auto& [b, last] :
       detail::ddp_assign(bytes_of, opt.first_bucket_bytes, opt.bucket_bytes)) {
    const trace_gradient& g = t.gradients[last];
    detail::dp_bucket x{b, last_bw, -1};
    if (opt.overlap) {
      x.gpu = last_before(gpu_by_launch, g.time);
      if (g.stream >= 0)
        x.host = last_before(host_by_start[static_cast<std::size_t>(g.stream)], g.time);
    }
    buckets.push_back(x);
  }
  return detail::replay_data_parallel(t, machine, gpus, buckets, last_bw, opt.host_scale);
}

}  // namespace strata::sim
