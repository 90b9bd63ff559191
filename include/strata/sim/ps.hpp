#pragma once
/// @file sim/ps.hpp
/// @brief Li et al.'s asynchronous parameter-server simulator (Algorithm 3.1, §3-5) lowered onto
/// the shared executor (`sim/executor.hpp`): per worker a DOWNLINK and an UPLINK scheduler per
/// parameter server, a WORKER resource and a PS resource per server, driven by SGD steps profiled
/// on one worker.
///
/// Lowering onto `sim::executor` (and through it the event core, `sim/core.hpp`):
/// - DOWNLINK_i / UPLINK_i of worker w: a round-robin channel (`executor::add_channel`: HTTP/2
///   multiplexing with window WIN, §3.2.2: a stream's first turn sends at most WIN bytes, its
///   second runs to completion) whose turns (`executor::turn`) cross two fair-share links
///   (`executor::add_link`): the server's NIC and the worker's NIC, each of `bandwidth` bytes/s
///   per direction (with one server a worker's NIC carries one turn per direction at a time and
///   never binds, so only the server's link is crossed). Max-min fair sharing of those links is
///   Li's Share(r, active) = 1/active for one server (§3.1, Algorithm 3.1 `Share`) and, for two
///   servers, gives a worker alone on PS1 but sharing PS2 with n-1 others 1/n on PS2 and 1-1/n on
///   PS1 (§5).
/// - Flow control off (§3.3): the window is infinite, streams go whole in queue order; the order
///   in which a step's downlinks enter the queue is `ps_order` (as scheduled, TicTac, reversed,
///   random).
/// - WORKER and PS_i: fifo streams of the worker (`executor::add_stream`; Share = 1: §3.2.3), as
///   are its host CPU and its steps' ends.
/// - Parsing overhead (§3.2.1): each transfer is followed by a parse task of alpha * bytes +
///   beta seconds on the receiver (WORKER for a downlink, or the worker's host CPU when
///   `parse_on_host`; PS_i for an uplink); the transfer's dependents wait for it.
/// - Steps (§3.4): every worker runs `steps` steps, each drawn with replacement from the profiled
///   ones (a seeded splitmix64 stream, so runs are reproducible); a step starts when the previous
///   one has finished on every resource (Algorithm 3.1 lines 35-38). A worker's step drawn from a
///   profiled step it drew before is a copy of that step's tasks (`executor::repeat`).
/// - Synchronous mode (`synchronous`): a worker's next step waits for every worker's step, as in
///   BytePS-style synchronous training through CPU summation servers (with tensors partitioned
///   over all servers: `io::lowered_ps_options::partition`).
/// - Throughput: the first `warmup` steps of every worker are excluded; steps ending between the
///   last worker's end of warm-up and the first worker's end of its last step, times the batch,
///   over that interval.
/// @code
/// strata::sim::ps_job job{.steps = {step}, .batch = 32};
/// const auto r = strata::sim::simulate_ps(job, {.workers = 4, .bandwidth = 1.25e9});
/// // r.throughput: examples/s over all workers
/// @endcode

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/sim/core.hpp"
#include "strata/sim/executor.hpp"

namespace strata::sim {

/// Li et al.'s resources (Algorithm 3.1).
enum class ps_resource { downlink, worker, uplink, ps };

[[nodiscard]] constexpr const char* to_string(ps_resource r) {
  switch (r) {
    case ps_resource::downlink:
      return "downlink";
    case ps_resource::worker:
      return "worker";
    case ps_resource::uplink:
      return "uplink";
    case ps_resource::ps:
      return "ps";
  }
  return "?";
}

/// One operation of a profiled SGD step.
struct ps_op {
  std::string id{};
  ps_resource res = ps_resource::worker;
  double duration = 0;      ///< seconds (worker, ps)
  double bytes = 0;         ///< transfers (downlink, uplink)
  int server = 0;           ///< the parameter server it talks to or runs on
  std::vector<int> deps{};  ///< indices of earlier ops of the same step
};

/// One profiled step: ops in a topological order (each depends only on earlier ones).
struct ps_step {
  std::vector<ps_op> ops{};
};

/// The profiled job: steps of one worker with `servers` parameter servers.
struct ps_job {
  std::vector<ps_step> steps{};
  double batch = 1;  ///< examples per step and worker
  int servers = 1;
};

/// The order a step's downlinks are queued in (§3.3, flow control off).
enum class ps_order { as_scheduled, tictac, reverse, random };

struct ps_config {
  int workers = 1;
  double bandwidth = 1.25e9;  ///< bytes/s per direction of every NIC (10 Gb/s)
  bool flow_control = true;   ///< HTTP/2 flow control on (window WIN) or off
  double window = 28e6;       ///< WIN (bytes); Li et al. measured 28 MB on average
  ps_order order = ps_order::as_scheduled;
  double alpha = 0;            ///< parsing overhead, seconds per byte (§3.2.1)
  double beta = 0;             ///< parsing overhead, seconds per message
  bool parse_on_host = false;  ///< parse downlinks on a host CPU of their own (GPU workers)
                               ///< rather than on WORKER (Li et al.'s CPU workers)
  bool synchronous = false;    ///< every worker's step k+1 waits for all workers' step k (BytePS,
                               ///< synchronous data parallelism through servers)
  int steps = 100;             ///< steps per worker
  int warmup = 10;             ///< steps per worker left out of the throughput
  std::uint64_t seed = 1;
  bool timeline = false;  ///< keep every op's interval (for a synthetic trace)
};

/// One op of the synthetic multi-worker trace.
struct ps_event {
  int worker = 0, step = 0, op = 0;  ///< op: index in the sampled profiled step
  int sampled = 0;                   ///< which profiled step
  bool parse = false;                ///< the parsing overhead of op
  double start = 0, end = 0;
};

struct ps_result {
  double throughput = 0;  ///< examples/s after warm-up, all workers
  double step_time = 0;   ///< mean step time of a worker after warm-up (s)
  double window_start = 0, window_end = 0;
  std::vector<std::vector<double>> step_end;  ///< per worker, per step (s)
  std::vector<ps_event> events;               ///< when `timeline`
  std::size_t tasks = 0, core_events = 0;
};

namespace detail {

/// splitmix64: a small, portable generator (the same numbers on every standard library).
struct splitmix64 {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

inline void validate(const ps_job& job, const ps_config& c) {
  if (job.steps.empty()) throw plan_error("the profiled job has no steps");
  if (job.servers < 1 || job.servers > 64)
    throw plan_error("the number of parameter servers must lie in [1, 64]");
  if (!(job.batch > 0)) throw plan_error("the batch (examples per step) must be positive");
  if (c.workers < 1 || c.workers > 4096) throw plan_error("workers must lie in [1, 4096]");
  if (!(c.bandwidth > 0) || !(c.bandwidth < 1e15))
    throw plan_error("the network bandwidth must be a positive number of bytes/s");
  if (c.flow_control && !(c.window > 0))
    throw plan_error("the HTTP/2 flow-control window WIN must be positive");
  if (!(c.alpha >= 0) || !(c.beta >= 0) || !(c.alpha < 1) || !(c.beta < 1e3))
    throw plan_error("the parsing overhead alpha * size + beta must be small and non-negative");
  if (c.steps < 1 || c.warmup < 0 || c.warmup >= c.steps)
    throw plan_error("steps must be at least 1 and exceed the warm-up steps");
  for (std::size_t s = 0; s < job.steps.size(); ++s) {
    const auto& ops = job.steps[s].ops;
    if (ops.empty()) throw plan_error("profiled step " + std::to_string(s) + " has no ops");
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const ps_op& o = ops[i];
      const std::string who = "step " + std::to_string(s) + ", op '" + o.id + "'";
      const bool link = o.res == ps_resource::downlink || o.res == ps_resource::uplink;
      if (link && !(o.bytes >= 0 && o.bytes < 1e15))
        throw plan_error(who + ": a transfer needs a non-negative size in bytes");
      if (!link && !(o.duration >= 0 && o.duration < 1e6))
        throw plan_error(who + ": a computation needs a non-negative duration in seconds");
      if (o.server < 0 || o.server >= job.servers)
        throw plan_error(who + ": names parameter server " + std::to_string(o.server) +
                         ", the job has " + std::to_string(job.servers));
      for (int d : o.deps)
        if (d < 0 || d >= static_cast<int>(i))
          throw plan_error(who + ": depends on an op that does not come before it");
    }
  }
}

/// TicTac's order (Hashemi et al., as Li et al. §3.3 use it): a parameter's transfer ranks by
/// the earliest time a computation needs it when communication is free, ties in trace order.
inline std::vector<double> tictac_need(const ps_step& st) {
  const std::size_t n = st.ops.size();
  std::vector<double> finish(n, 0.0), need(n, std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < n; ++i) {
    double start = 0;
    for (int d : st.ops[i].deps) start = std::max(start, finish[static_cast<std::size_t>(d)]);
    const bool link =
        st.ops[i].res == ps_resource::downlink || st.ops[i].res == ps_resource::uplink;
    finish[i] = start + (link ? 0.0 : st.ops[i].duration);
    if (!link)
      for (int d : st.ops[i].deps) {
        const auto ud = static_cast<std::size_t>(d);
        need[ud] = std::min(need[ud], start);
      }
  }
  return need;
}

/// One profiled step's tasks in the order they are added to the event core, with dependencies
/// as indices into the step's own tasks: built once per profiled step and stamped for every
/// worker and step with the ids offset, so a step costs one pass over its ops.
struct ps_template {
  struct task {
    double work = 0;                 ///< seconds, or bytes for a transfer
    int op = 0;                      ///< index in the profiled step
    int dep_begin = 0, dep_end = 0;  ///< its dependencies: deps[dep_begin, dep_end)
    int server = 0;
    ps_resource res = ps_resource::worker;
    bool parse = false;   ///< the parsing overhead of op, on the receiver (§3.2.1)
    bool source = false;  ///< depends on nothing in the step: waits for the previous step
  };
  std::vector<task> tasks;
  std::vector<int> deps;  ///< indices into tasks
  std::vector<int> ends;  ///< the tasks the step's end waits for: its sinks, after parsing
};

/// The template of `ops` queued in the order `ord` (Algorithm 3.1's queue order): ops are added
/// in that order once their dependencies exist, then those whose dependencies came later, in
/// index order. A transfer is followed by its parsing, alpha * bytes + beta seconds, when
/// `parse`; the transfer's dependents wait for the parsing.
inline ps_template make_template(const std::vector<ps_op>& ops, const std::vector<int>& ord,
                                 const std::vector<int>& sinks, bool parse, double alpha,
                                 double beta) {
  ps_template t;
  t.tasks.reserve(2 * ops.size());
  std::vector<int> task_of(ops.size(), -1);  // the task its dependents wait for
  std::vector<char> added(ops.size(), 0);
  std::size_t left = ops.size();
  auto add = [&](std::size_t i) {
    const ps_op& o = ops[i];
    const bool link = o.res == ps_resource::downlink || o.res == ps_resource::uplink;
    const int from = static_cast<int>(t.deps.size());
    for (int d : o.deps) t.deps.push_back(task_of[static_cast<std::size_t>(d)]);
    t.tasks.push_back({link ? o.bytes : o.duration, static_cast<int>(i), from,
                       static_cast<int>(t.deps.size()), o.server, o.res, false, o.deps.empty()});
    task_of[i] = static_cast<int>(t.tasks.size()) - 1;
    if (link && parse) {
      t.deps.push_back(task_of[i]);
      const int d = static_cast<int>(t.deps.size());
      t.tasks.push_back(
          {alpha * o.bytes + beta, static_cast<int>(i), d - 1, d, o.server, o.res, true, false});
      task_of[i] = static_cast<int>(t.tasks.size()) - 1;
    }
    added[i] = 1;
    --left;
  };
  for (int i : ord) {
    const auto ui = static_cast<std::size_t>(i);
    bool ready = true;
    for (int d : ops[ui].deps) ready = ready && added[static_cast<std::size_t>(d)];
    if (ready) add(ui);
  }
  for (std::size_t i = 0; left > 0 && i < ops.size(); ++i)
    if (!added[i]) add(i);  // ops whose dependencies came later in the chosen order
  t.ends.reserve(sinks.size());
  for (int i : sinks) t.ends.push_back(task_of[static_cast<std::size_t>(i)]);
  return t;
}

/// One worker's resources (Algorithm 3.1): its NIC both ways, WORKER, its steps' ends, the CPU
/// that parses its downlinks (§3.2.1), and per parameter server a DOWNLINK, an UPLINK and a PS.
struct ps_worker {
  int nic_in, nic_out, worker, barrier, host;
  std::vector<int> down, up, ps;
};

/// The resources of a job on the executor: every server's NIC both ways, then every worker's.
struct ps_resources {
  std::vector<int> ps_out, ps_in;
  std::vector<ps_worker> workers;
};

/// Adds the resources of `servers` parameter servers and `c.workers` workers to `ex`: DOWNLINK
/// and UPLINK schedulers with HTTP/2's window WIN (infinite with flow control off, §3.3).
inline ps_resources add_ps_resources(executor& ex, const ps_config& c, int servers) {
  const int W = c.workers, M = servers;
  const double inf = std::numeric_limits<double>::infinity();
  ps_resources net;
  // links: every server's NIC and every worker's NIC, both directions
  net.ps_out.resize(static_cast<std::size_t>(M));
  net.ps_in.resize(static_cast<std::size_t>(M));
  for (int i = 0; i < M; ++i) {
    net.ps_out[static_cast<std::size_t>(i)] =
        ex.add_link(-1, "PS" + std::to_string(i) + " out", c.bandwidth);
    net.ps_in[static_cast<std::size_t>(i)] =
        ex.add_link(-1, "PS" + std::to_string(i) + " in", c.bandwidth);
  }
  net.workers.resize(static_cast<std::size_t>(W));
  const double win = c.flow_control ? c.window : inf;
  for (int w = 0; w < W; ++w) {
    auto& r = net.workers[static_cast<std::size_t>(w)];
    const std::string n = "worker " + std::to_string(w);
    r.nic_in = ex.add_link(w, n + " NIC in", c.bandwidth);
    r.nic_out = ex.add_link(w, n + " NIC out", c.bandwidth);
    r.worker = ex.add_stream(w, n + " WORKER");
    r.barrier = ex.add_stream(w, n + " step");
    r.host = c.parse_on_host ? ex.add_stream(w, n + " host") : r.worker;
    for (int i = 0; i < M; ++i) {
      const std::string k = std::to_string(i);
      r.down.push_back(ex.add_channel(w, n + " DOWNLINK" + k, c.bandwidth, win, true));
      r.up.push_back(ex.add_channel(w, n + " UPLINK" + k, c.bandwidth, win, true));
      r.ps.push_back(ex.add_stream(w, n + " PS" + k));
    }
  }
  return net;
}

/// Per profiled step: the order its ops are added in (the downlinks' queue order, §3.3).
inline std::vector<std::vector<int>> queue_orders(const ps_job& job, const ps_config& c) {
  const std::size_t S = job.steps.size();
  std::vector<std::vector<int>> order(S);
  for (std::size_t k = 0; k < S; ++k) {
    const auto& ops = job.steps[k].ops;
    auto& o = order[k];
    o.resize(ops.size());
    std::iota(o.begin(), o.end(), 0);
    if (c.order == ps_order::tictac || c.order == ps_order::reverse) {
      const auto need = tictac_need(job.steps[k]);
      std::stable_sort(o.begin(), o.end(), [&](int a, int b) {
        const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
        const bool da = ops[ua].res == ps_resource::downlink && ops[ua].deps.empty();
        const bool db = ops[ub].res == ps_resource::downlink && ops[ub].deps.empty();
        if (da != db) return da;  // the step's first downlinks lead, then the rest in order
        if (!da) return false;
        return c.order == ps_order::tictac ? need[ua] < need[ub] : need[ua] > need[ub];
      });
    }
  }
  return order;
}

/// The profiled steps' ends: per step its sinks, and the most tasks a step adds for a worker.
struct ps_step_ends {
  std::vector<std::vector<int>> sinks;
  std::size_t most_tasks = 0;  ///< per step and worker, for reserving
};

/// Per profiled step: its sinks (ops nothing in the step depends on), which end the step.
inline ps_step_ends step_ends(const ps_job& job) {
  const std::size_t S = job.steps.size();
  ps_step_ends e{std::vector<std::vector<int>>(S)};
  for (std::size_t k = 0; k < S; ++k) {
    const auto& ops = job.steps[k].ops;
    std::vector<char> has_dependent(ops.size(), 0);
    std::size_t links = 0;
    for (const auto& o : ops) {
      for (int d : o.deps) has_dependent[static_cast<std::size_t>(d)] = 1;
      links += o.res == ps_resource::downlink || o.res == ps_resource::uplink ? 1 : 0;
    }
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (!has_dependent[i]) e.sinks[k].push_back(static_cast<int>(i));
    e.most_tasks = std::max(e.most_tasks, ops.size() + links + 2);
  }
  return e;
}

/// Who ran a task and which op it was, for the timeline (`ps_event`).
struct ps_task_info {
  int worker, step, op, sampled;
  bool parse;
};

/// Stamps every worker's sampled steps onto the executor (Algorithm 3.1 lines 35-38: a step
/// starts when the previous one has finished).
struct ps_stamper {
  const ps_job& job;
  const ps_config& c;
  executor& ex;
  const ps_resources& net;
  const std::vector<std::vector<int>>& order;
  const std::vector<std::vector<int>>& sinks;
  const std::vector<ps_template>& tmpl;  ///< empty with the random order
  const bool parse;
  const int W = c.workers, M = job.servers;
  splitmix64 rng{c.seed};
  std::vector<int> shuffled;
  ps_template drawn;                      ///< the random order's template of the step being stamped
  std::vector<ps_task_info> info;         ///< per task, for the timeline only
  std::vector<std::vector<int>> barrier;  ///< per worker, its steps' ends
  std::vector<int> global;                ///< synchronous: the end of step k on every worker
  /// per worker and profiled step: the first task of its last step drawn from it that waited
  /// for a previous step, and that previous step's end (-1: none yet), for `repeat`
  std::vector<std::pair<int, int>> stamped;
  int global_res = -1;

  /// Prepares stamping `total_steps` steps of at most `most_tasks` tasks each.
  ps_stamper(const ps_job& job_, const ps_config& c_, executor& ex_, const ps_resources& net_,
             const std::vector<std::vector<int>>& order_,
             const std::vector<std::vector<int>>& sinks_, const std::vector<ps_template>& tmpl_,
             bool parse_, std::size_t total_steps, std::size_t most_tasks)
      : job(job_),
        c(c_),
        ex(ex_),
        net(net_),
        order(order_),
        sinks(sinks_),
        tmpl(tmpl_),
        parse(parse_) {
    if (c.timeline) info.reserve(total_steps * most_tasks);
    barrier.resize(static_cast<std::size_t>(W));
    for (auto& b : barrier) b.reserve(static_cast<std::size_t>(c.steps));
    stamped.assign(static_cast<std::size_t>(W) * job.steps.size(), {-1, -1});
    if (c.synchronous) global_res = ex.add_stream(-1, "all workers");
  }

  /// Every worker's `c.steps` steps, each drawn with replacement from the profiled ones (§3.4).
  void stamp_all() {
    // one step of every worker at a time, so task indices interleave workers (ties at equal times
    // then go to workers in turn)
    for (int step = 0; step < c.steps; ++step)
      for (int w = 0; w < W; ++w) stamp(step, w);
  }

  /// Worker w's step `step`: a drawn profiled step's tasks, then the step's end.
  [[gnu::always_inline]] void stamp(int step, int w) {
    const auto& r = net.workers[static_cast<std::size_t>(w)];
    const std::size_t k = rng.below(job.steps.size());
    const int prev = step == 0       ? -1
                     : c.synchronous ? global[static_cast<std::size_t>(step - 1)]
                                     : barrier[static_cast<std::size_t>(w)].back();
    const ps_template& tp = template_of(k);
    // the template's tasks get ids base, base + 1, ... (the core numbers tasks as added)
    const int base = static_cast<int>(ex.graph().tasks().size());
    if (!repeat(tp, w, k, prev, base)) {
      stamp_tasks(tp, r, w, prev, base);
      add_end(tp, r, w, prev, base);
    }
    if (c.timeline)
      for (const auto& x : tp.tasks) info.push_back({w, step, x.op, static_cast<int>(k), x.parse});
    end_step(w, step, k);
  }

  /// Worker w's step as a copy of its last step drawn from profiled step k (§3.4: steps are drawn
  /// with replacement, so with 1000 steps from 8 profiled ones almost every step repeats one),
  /// when that one waited for a previous step too, as this one does on `prev`: the same tasks on
  /// the same resources in the same queue order, its sources and its end waiting for `prev`
  /// instead (`executor::repeat`: a few stores per task instead of add_task's checks and
  /// records). Not with the random order, whose every step has a queue order of its own (§3.3).
  /// Returns whether it was copied; either way, the step from `base` is the one to copy next.
  bool repeat(const ps_template& tp, int w, std::size_t k, int prev, int base) {
    if (c.order == ps_order::random || prev < 0) return false;
    auto& last = stamped[static_cast<std::size_t>(w) * job.steps.size() + k];
    const bool again = last.first >= 0;
    if (again) {
      const std::pair<int, int> to{last.second, prev};
      ex.repeat(last.first, static_cast<int>(tp.tasks.size()) + 1, {&to, 1});
    }
    last = {base, prev};
    return again;
  }

  /// The template of profiled step k; with the random order, one built for a queue order drawn
  /// now (its queue order is drawn for every sampled step).
  const ps_template& template_of(std::size_t k) {
    if (c.order != ps_order::random) return tmpl[k];
    shuffled = order[k];
    for (std::size_t i = shuffled.size(); i > 1; --i)
      std::swap(shuffled[i - 1], shuffled[rng.below(i)]);
    drawn = make_template(job.steps[k].ops, shuffled, sinks[k], parse, c.alpha, c.beta);
    return drawn;
  }

  /// Adds template `tp`'s tasks as worker w's step, with ids from `base`; its sources wait for
  /// `prev`, the previous step's end.
  [[gnu::always_inline]] void stamp_tasks(const ps_template& tp, const ps_worker& r, int w,
                                          int prev, int base) {
    std::vector<int>& d = ex.next_deps();  // a local, so that the loop keeps it in a register
    for (const auto& x : tp.tasks) {
      for (int i = x.dep_begin; i < x.dep_end; ++i)
        d.push_back(base + tp.deps[static_cast<std::size_t>(i)]);
      if (x.source && prev >= 0) d.push_back(prev);
      lower_task(x, r, w);
    }
  }

  /// Task x of worker r after `ex.next_deps()`: a transfer is a turn on its DOWNLINK or UPLINK
  /// channel crossing the server's link (and with several servers the worker's NIC), the rest
  /// work on a fifo stream.
  [[gnu::always_inline]] void lower_task(const ps_template::task& x, const ps_worker& r, int w) {
    const auto srv = static_cast<std::size_t>(x.server);
    const std::size_t nlinks = M > 1 ? 2 : 1;
    if (x.parse) {  // §3.2.1: parsing on the receiver
      ex.on_stream(x.res == ps_resource::downlink ? r.host : r.ps[srv], w, x.work);
      return;
    }
    switch (x.res) {
      case ps_resource::downlink: {
        const int links[2] = {net.ps_out[srv], r.nic_in};
        ex.turn(w, r.down[srv], {links, nlinks}, x.work);
        break;
      }
      case ps_resource::uplink: {
        const int links[2] = {net.ps_in[srv], r.nic_out};
        ex.turn(w, r.up[srv], {links, nlinks}, x.work);
        break;
      }
      case ps_resource::worker:
        ex.on_stream(r.worker, w, x.work);
        break;
      case ps_resource::ps:
        ex.on_stream(r.ps[srv], w, x.work);
        break;
    }
  }

  /// Worker w's step end, the task after its tasks (from `base`): after every op (its sinks
  /// suffice) and the previous step's end.
  [[gnu::always_inline]] void add_end(const ps_template& tp, const ps_worker& r, int w, int prev,
                                      int base) {
    std::vector<int>& d = ex.next_deps();
    for (int e : tp.ends) d.push_back(base + e);
    if (prev >= 0) d.push_back(prev);
    ex.on_stream(r.barrier, w, 0.0, task_class::other);
  }

  /// Worker w's step has ended (its last task): with `synchronous`, after the last worker's, the
  /// step's end on all workers.
  void end_step(int w, int step, std::size_t k) {
    barrier[static_cast<std::size_t>(w)].push_back(static_cast<int>(ex.graph().tasks().size()) - 1);
    if (c.timeline) info.push_back({w, step, -1, static_cast<int>(k), false});
    if (c.synchronous && w == W - 1) {  // the step's end on all workers
      std::vector<int>& d = ex.next_deps();
      for (int v = 0; v < W; ++v) d.push_back(barrier[static_cast<std::size_t>(v)].back());
      global.push_back(ex.on_stream(global_res, -1, 0.0, task_class::other));
      if (c.timeline) info.push_back({-1, step, -1, -1, false});
    }
  }
};

/// The throughput after warm-up (§4: Li et al. leave out the first steps): steps ending between
/// the last worker's end of warm-up and the first worker's end of its last step, times the
/// batch, over that interval; and a worker's mean step time after warm-up.
inline void measure_throughput(ps_result& out, const ps_job& job, const ps_config& c) {
  const double inf = std::numeric_limits<double>::infinity();
  double t0 = 0, t1 = inf;
  for (const auto& e : out.step_end) {
    if (c.warmup > 0) t0 = std::max(t0, e[static_cast<std::size_t>(c.warmup - 1)]);
    t1 = std::min(t1, e.back());
  }
  std::size_t counted = 0;
  double per_worker = 0;
  for (const auto& e : out.step_end) {
    for (double t : e) counted += (t > t0 && t <= t1) ? 1 : 0;
    per_worker += (e.back() - (c.warmup > 0 ? e[static_cast<std::size_t>(c.warmup - 1)] : 0.0)) /
                  static_cast<double>(c.steps - c.warmup);
  }
  if (!(t1 > t0) || counted == 0)
    throw plan_error(
        "too few steps after the warm-up to measure throughput: simulate more steps per worker");
  out.window_start = t0;
  out.window_end = t1;
  out.throughput = static_cast<double>(counted) * job.batch / (t1 - t0);
  out.step_time = per_worker / c.workers;
}

/// Every op's interval in `run` (the steps' ends left out), for the synthetic trace.
inline void read_timeline(ps_result& out, const result& run,
                          const std::vector<ps_task_info>& info) {
  out.events.reserve(info.size());
  for (std::size_t i = 0; i < info.size(); ++i) {
    if (info[i].op < 0) continue;
    const auto& rec = run.tasks[i];
    out.events.push_back({info[i].worker, info[i].step, info[i].op, info[i].sampled, info[i].parse,
                          rec.start, rec.end});
  }
}

}  // namespace detail

/// Li et al. Algorithm 3.1 for `c.workers` workers.
[[nodiscard]] inline ps_result simulate_ps(const ps_job& job, const ps_config& c) {
  detail::validate(job, c);
  const int W = c.workers;
  simulator s;
  executor ex(s);
  const detail::ps_resources net = detail::add_ps_resources(ex, c, job.servers);
  const std::vector<std::vector<int>> order = detail::queue_orders(job, c);
  const detail::ps_step_ends ends = detail::step_ends(job);
  // every profiled step's tasks, built once and stamped for each worker and step (with the
  // random order, built again for every sampled step: its queue order is drawn each time)
  const std::size_t S = job.steps.size();
  const bool parse = c.alpha > 0 || c.beta > 0;
  std::vector<detail::ps_template> tmpl(c.order == ps_order::random ? 0 : S);
  for (std::size_t k = 0; k < tmpl.size(); ++k)
    tmpl[k] =
        detail::make_template(job.steps[k].ops, order[k], ends.sinks[k], parse, c.alpha, c.beta);
  const auto total_steps = static_cast<std::size_t>(c.steps) * static_cast<std::size_t>(W);
  s.reserve(total_steps * ends.most_tasks);
  detail::ps_stamper st(job, c, ex, net, order, ends.sinks, tmpl, parse, total_steps,
                        ends.most_tasks);
  st.stamp_all();
  ps_result out;
  out.tasks = s.tasks().size();
  const result run = std::move(s).run();  // run once: its task state is not copied
  out.core_events = run.events;
  out.step_end.resize(static_cast<std::size_t>(W));
  for (int w = 0; w < W; ++w)
    for (int b : st.barrier[static_cast<std::size_t>(w)])
      out.step_end[static_cast<std::size_t>(w)].push_back(
          run.tasks[static_cast<std::size_t>(b)].end);
  detail::measure_throughput(out, job, c);
  if (c.timeline) detail::read_timeline(out, run, st.info);
  return out;
}

}  // namespace strata::sim
