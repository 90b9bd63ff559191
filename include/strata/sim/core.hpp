#pragma once
/// @file sim/core.hpp
/// @brief strata's event core: tasks with dependencies on resources with service disciplines,
/// the overlap slowdown gamma, and memory tracked by tensor reference counts. Deterministic: the
/// same input gives bit-identical results.
///
/// Resources
/// - `fifo`: one task at a time in the order tasks became ready (a CUDA stream, a CPU thread);
///   work is in seconds.
/// - `fair_share`: a link of `capacity` bytes/s; every flow in service gets its max-min fair
///   share over all the links it crosses (processor sharing across a hierarchy: Proteus §VI-C,
///   Li et al. §3.1's 1/n sharing); work is in bytes.
/// - `round_robin`: a link that serves its flows in turn, `window` bytes each (HTTP/2 stream
///   multiplexing with window WIN, Li et al. §3.2.2); work is in bytes.
/// A task may first wait a fixed `latency` (a message's alpha) without holding its resource.
/// Gamma (Proteus §VI-C): a compute task runs 1 + gamma times slower while a communication task
/// of the same device is in service.
/// @code
/// strata::sim::simulator s;
/// const int gpu = s.add_resource({"gpu0", strata::sim::discipline::fifo});
/// const int a = s.add_task({.name = "fw", .resources = {gpu}, .work = 1e-3});
/// s.add_task({.name = "bw", .resources = {gpu}, .work = 2e-3, .deps = {a}});
/// const auto r = s.run();   // r.makespan == 3e-3
/// @endcode

#include <algorithm>
#include <cstddef>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/error.hpp"

namespace strata::sim {

enum class discipline { fifo, fair_share, round_robin };
enum class task_class { compute, communication, other };

struct resource_spec {
  std::string name;
  discipline kind = discipline::fifo;
  double capacity = 1;  ///< bytes/s for links (fair_share, round_robin); unused for fifo
  double window = 0;    ///< round_robin: bytes a flow sends per turn
  int device = -1;      ///< the device (rank) it belongs to, for traces; -1: shared
};

struct task_spec {
  std::string name;
  std::vector<int> resources{};  ///< fifo, round_robin: exactly one; fair_share: the links crossed
  double work = 0;               ///< seconds (fifo) or bytes (links)
  std::vector<int> deps{};       ///< tasks that must finish first
  task_class cls = task_class::compute;
  int device = -1;              ///< for gamma and memory; -1: none
  double latency = 0;           ///< seconds waited before service, resource not held
  std::vector<int> produces{};  ///< tensors allocated when the task starts
  std::vector<int> consumes{};  ///< tensors it reads; freed after their last reader ends
};

struct tensor_spec {
  std::string name;
  int device = 0;
  double bytes = 0;
};

struct task_record {
  double ready = 0;  ///< all dependencies done
  double start = 0;  ///< service began (after latency)
  double end = 0;
};

/// The first allocation that pushed a device past its memory limit.
struct out_of_memory {
  int device = 0;
  int task = 0;  ///< the task whose allocation crossed the limit
  double bytes = 0;
};

/// Memory of one device after an allocation or a release.
struct memory_sample {
  double time = 0;
  int device = 0;
  double bytes = 0;
};

struct result {
  std::vector<task_record> tasks;
  std::vector<memory_sample> memory;  ///< every change, in time order
  double makespan = 0;
  std::vector<double> peak_memory;  ///< per device
  std::vector<double> busy;         ///< per resource: time with at least one task in service
  std::optional<out_of_memory> oom;
  std::size_t events = 0;
};

class simulator {
 public:
  int add_resource(resource_spec r) {
    if (r.kind != discipline::fifo && !(r.capacity > 0))
      throw plan_error("resource '" + r.name + "': a link needs a positive capacity");
    if (r.kind == discipline::round_robin && !(r.window > 0))
      throw plan_error("resource '" + r.name + "': round-robin needs a positive window");
    resources_.push_back(std::move(r));
    return static_cast<int>(resources_.size()) - 1;
  }
  int add_tensor(tensor_spec t) {
    if (t.bytes < 0) throw plan_error("tensor '" + t.name + "': negative size");
    if (t.device < 0) throw plan_error("tensor '" + t.name + "': needs a device");
    tensors_.push_back(std::move(t));
    return static_cast<int>(tensors_.size()) - 1;
  }
  int add_task(task_spec t) {
    const std::string who = "task '" + t.name + "'";
    if (!(t.work >= 0)) throw plan_error(who + ": negative work");
    if (!(t.latency >= 0)) throw plan_error(who + ": negative latency");
    if (t.resources.empty()) throw plan_error(who + ": needs a resource");
    for (int r : t.resources)
      if (r < 0 || r >= static_cast<int>(resources_.size()))
        throw plan_error(who + ": unknown resource");
    const discipline k = resources_[static_cast<std::size_t>(t.resources[0])].kind;
    for (int r : t.resources)
      if (resources_[static_cast<std::size_t>(r)].kind != discipline::fair_share ||
          k != discipline::fair_share)
        if (t.resources.size() > 1)
          throw plan_error(who + ": only fair-share flows may cross several links");
    for (int d : t.deps)
      if (d < 0 || d >= static_cast<int>(tasks_.size()))
        throw plan_error(who + ": depends on a task that does not exist (yet)");
    for (int x : t.produces)
      if (x < 0 || x >= static_cast<int>(tensors_.size()))
        throw plan_error(who + ": produces an unknown tensor");
    for (int x : t.consumes)
      if (x < 0 || x >= static_cast<int>(tensors_.size()))
        throw plan_error(who + ": consumes an unknown tensor");
    tasks_.push_back(std::move(t));
    return static_cast<int>(tasks_.size()) - 1;
  }
  /// Proteus's overlap factor gamma.
  void set_overlap_factor(double gamma) {
    if (gamma < 0) throw plan_error("the overlap factor gamma must not be negative");
    gamma_ = gamma;
  }
  void set_memory_capacity(int device, double bytes) {
    if (device < 0) throw plan_error("memory capacity needs a device");
    if (static_cast<std::size_t>(device) >= capacity_.size())
      capacity_.resize(static_cast<std::size_t>(device) + 1,
                       std::numeric_limits<double>::infinity());
    capacity_[static_cast<std::size_t>(device)] = bytes;
  }

  [[nodiscard]] const std::vector<task_spec>& tasks() const { return tasks_; }
  [[nodiscard]] const std::vector<resource_spec>& resources() const { return resources_; }

  /// Runs to completion.
  [[nodiscard]] result run() const;

 private:
  std::vector<resource_spec> resources_;
  std::vector<task_spec> tasks_;
  std::vector<tensor_spec> tensors_;
  std::vector<double> capacity_;
  double gamma_ = 0;
};

inline result simulator::run() const {
  const std::size_t n = tasks_.size(), nr = resources_.size();
  result res;
  res.tasks.assign(n, {});
  res.busy.assign(nr, 0.0);
  int devices = 0;
  for (const auto& t : tasks_) devices = std::max(devices, t.device + 1);
  for (const auto& x : tensors_) devices = std::max(devices, x.device + 1);
  res.peak_memory.assign(static_cast<std::size_t>(devices), 0.0);
  std::vector<double> mem(static_cast<std::size_t>(devices), 0.0);
  std::vector<int> readers(tensors_.size(), 0);
  for (const auto& t : tasks_)
    for (int x : t.consumes) ++readers[static_cast<std::size_t>(x)];
  std::vector<bool> unread(tensors_.size());
  for (std::size_t x = 0; x < tensors_.size(); ++x) unread[x] = readers[x] == 0;

  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> next(n);
  for (std::size_t i = 0; i < n; ++i)
    for (int d : tasks_[i].deps) {
      ++waiting[i];
      next[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
    }
  enum class state { blocked, delayed, queued, serving, done };
  std::vector<state> st(n, state::blocked);
  std::vector<double> remaining(n, 0.0), delay_until(n, 0.0), chunk(n, 0.0);
  std::vector<std::deque<int>> queue(nr);  // fifo / round-robin waiting lines
  std::vector<int> in_service(nr, -1);     // fifo / round-robin: the task served
  std::vector<int> flows;                  // fair-share flows in service
  std::vector<int> delayed;                // tasks waiting out their latency
  double now = 0;
  std::size_t finished = 0;

  auto allocate = [&](int i) {
    for (int x : tasks_[static_cast<std::size_t>(i)].produces) {
      const auto& t = tensors_[static_cast<std::size_t>(x)];
      auto& m = mem[static_cast<std::size_t>(t.device)];
      m += t.bytes;
      res.memory.push_back({now, t.device, m});
      auto& peak = res.peak_memory[static_cast<std::size_t>(t.device)];
      peak = std::max(peak, m);
      const double cap = static_cast<std::size_t>(t.device) < capacity_.size()
                             ? capacity_[static_cast<std::size_t>(t.device)]
                             : std::numeric_limits<double>::infinity();
      if (!res.oom && m > cap) res.oom = out_of_memory{t.device, i, m};
    }
  };
  auto release = [&](int i) {
    auto drop = [&](int x) {
      const auto& t = tensors_[static_cast<std::size_t>(x)];
      mem[static_cast<std::size_t>(t.device)] -= t.bytes;
      res.memory.push_back({now, t.device, mem[static_cast<std::size_t>(t.device)]});
    };
    for (int x : tasks_[static_cast<std::size_t>(i)].consumes)
      if (--readers[static_cast<std::size_t>(x)] == 0) drop(x);
    for (int x : tasks_[static_cast<std::size_t>(i)].produces)
      if (unread[static_cast<std::size_t>(x)]) drop(x);  // nobody reads it: gone at once
  };
  auto enqueue = [&](int i) {
    const task_spec& t = tasks_[static_cast<std::size_t>(i)];
    st[static_cast<std::size_t>(i)] = state::queued;
    remaining[static_cast<std::size_t>(i)] = t.work;
    const auto r = static_cast<std::size_t>(t.resources[0]);
    if (resources_[r].kind == discipline::fair_share) {
      st[static_cast<std::size_t>(i)] = state::serving;
      res.tasks[static_cast<std::size_t>(i)].start = now;
      allocate(i);
      flows.push_back(i);
    } else {
      queue[r].push_back(i);
    }
  };
  auto make_ready = [&](int i) {
    res.tasks[static_cast<std::size_t>(i)].ready = now;
    const double lat = tasks_[static_cast<std::size_t>(i)].latency;
    if (lat > 0) {
      st[static_cast<std::size_t>(i)] = state::delayed;
      delay_until[static_cast<std::size_t>(i)] = now + lat;
      delayed.push_back(i);
    } else {
      enqueue(i);
    }
  };
  auto dispatch = [&]() {  // give idle fifo / round-robin resources their next task
    for (std::size_t r = 0; r < nr; ++r) {
      if (in_service[r] >= 0 || queue[r].empty()) continue;
      const int i = queue[r].front();
      queue[r].pop_front();
      in_service[r] = i;
      auto& rec = res.tasks[static_cast<std::size_t>(i)];
      if (st[static_cast<std::size_t>(i)] == state::queued) {
        st[static_cast<std::size_t>(i)] = state::serving;
        rec.start = now;
        allocate(i);
      }
      chunk[static_cast<std::size_t>(i)] =
          resources_[r].kind == discipline::round_robin
              ? std::min(resources_[r].window, remaining[static_cast<std::size_t>(i)])
              : remaining[static_cast<std::size_t>(i)];
    }
  };
  auto finish = [&](int i) {
    st[static_cast<std::size_t>(i)] = state::done;
    res.tasks[static_cast<std::size_t>(i)].end = now;
    release(i);
    ++finished;
    for (int j : next[static_cast<std::size_t>(i)])
      if (--waiting[static_cast<std::size_t>(j)] == 0) make_ready(j);
  };

  for (std::size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) make_ready(static_cast<int>(i));
  dispatch();

  std::vector<double> rate(n, 0.0);
  std::vector<double> link_left(nr, 0.0);
  std::vector<int> link_users(nr, 0);
  std::vector<bool> fixed(n, false);
  while (finished < n) {
    ++res.events;
    // Rates. Fifo: 1, or 1 / (1 + gamma) for compute overlapping communication on its device.
    std::vector<bool> comm_active(static_cast<std::size_t>(devices), false);
    auto mark = [&](int i) {
      const auto& t = tasks_[static_cast<std::size_t>(i)];
      if (t.cls == task_class::communication && t.device >= 0)
        comm_active[static_cast<std::size_t>(t.device)] = true;
    };
    for (std::size_t r = 0; r < nr; ++r)
      if (in_service[r] >= 0) mark(in_service[r]);
    for (int f : flows) mark(f);
    for (std::size_t r = 0; r < nr; ++r) {
      const int i = in_service[r];
      if (i < 0) continue;
      const auto& t = tasks_[static_cast<std::size_t>(i)];
      if (resources_[r].kind == discipline::round_robin) {
        rate[static_cast<std::size_t>(i)] = resources_[r].capacity;
      } else {
        const bool slowed = t.cls == task_class::compute && t.device >= 0 &&
                            comm_active[static_cast<std::size_t>(t.device)];
        rate[static_cast<std::size_t>(i)] = slowed ? 1.0 / (1.0 + gamma_) : 1.0;
      }
    }
    // Fair share: max-min fair rates by progressive filling over the links.
    if (!flows.empty()) {
      for (std::size_t r = 0; r < nr; ++r) {
        link_left[r] = resources_[r].capacity;
        link_users[r] = 0;
      }
      for (int f : flows) {
        fixed[static_cast<std::size_t>(f)] = false;
        for (int r : tasks_[static_cast<std::size_t>(f)].resources)
          ++link_users[static_cast<std::size_t>(r)];
      }
      std::size_t unfixed = flows.size();
      while (unfixed > 0) {
        double share = std::numeric_limits<double>::infinity();
        std::size_t bottleneck = nr;
        for (std::size_t r = 0; r < nr; ++r)
          if (link_users[r] > 0 && link_left[r] / link_users[r] < share) {
            share = link_left[r] / link_users[r];
            bottleneck = r;
          }
        if (bottleneck == nr) break;
        for (int f : flows) {
          if (fixed[static_cast<std::size_t>(f)]) continue;
          const auto& rs = tasks_[static_cast<std::size_t>(f)].resources;
          if (std::find(rs.begin(), rs.end(), static_cast<int>(bottleneck)) == rs.end()) continue;
          fixed[static_cast<std::size_t>(f)] = true;
          rate[static_cast<std::size_t>(f)] = share;
          --unfixed;
          for (int r : rs) {
            link_left[static_cast<std::size_t>(r)] -= share;
            --link_users[static_cast<std::size_t>(r)];
          }
        }
      }
    }
    // Next event: a completion (of a task or a round-robin turn) or the end of a delay.
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < nr; ++r) {
      const int i = in_service[r];
      if (i >= 0)
        dt = std::min(dt, chunk[static_cast<std::size_t>(i)] / rate[static_cast<std::size_t>(i)]);
    }
    for (int f : flows)
      dt = std::min(dt, remaining[static_cast<std::size_t>(f)] / rate[static_cast<std::size_t>(f)]);
    for (int i : delayed) dt = std::min(dt, delay_until[static_cast<std::size_t>(i)] - now);
    if (!(dt < std::numeric_limits<double>::infinity()))
      throw plan_error("the task graph has a cycle: " + std::to_string(n - finished) +
                       " tasks can never start");
    dt = std::max(dt, 0.0);
    now += dt;
    for (std::size_t r = 0; r < nr; ++r)
      if (in_service[r] >= 0) res.busy[r] += dt;
    if (!flows.empty()) {
      std::vector<bool> used(nr, false);
      for (int f : flows)
        for (int x : tasks_[static_cast<std::size_t>(f)].resources)
          used[static_cast<std::size_t>(x)] = true;
      for (std::size_t r = 0; r < nr; ++r)
        if (used[r]) res.busy[r] += dt;
    }
    std::vector<int> done_now;
    for (std::size_t r = 0; r < nr; ++r) {
      const int i = in_service[r];
      if (i < 0) continue;
      const auto ii = static_cast<std::size_t>(i);
      const double sent = rate[ii] * dt;
      chunk[ii] -= sent;
      remaining[ii] -= sent;
      if (chunk[ii] <= 1e-12 * (tasks_[ii].work + 1e-30)) {
        in_service[r] = -1;
        if (remaining[ii] <= 1e-12 * (tasks_[ii].work + 1e-30)) {
          done_now.push_back(i);
        } else {
          queue[r].push_back(i);  // round-robin: back of the line
        }
      }
    }
    std::vector<int> still;
    for (int f : flows) {
      const auto fi = static_cast<std::size_t>(f);
      remaining[fi] -= rate[fi] * dt;
      if (remaining[fi] <= 1e-12 * (tasks_[fi].work + 1e-30)) {
        done_now.push_back(f);
      } else {
        still.push_back(f);
      }
    }
    flows.swap(still);
    std::sort(done_now.begin(), done_now.end());
    for (int i : done_now) finish(i);
    std::vector<int> wake, still_delayed;
    for (int i : delayed)
      (delay_until[static_cast<std::size_t>(i)] <= now ? wake : still_delayed).push_back(i);
    delayed.swap(still_delayed);
    std::sort(wake.begin(), wake.end());
    for (int i : wake) enqueue(i);
    dispatch();
  }
  for (const auto& r : res.tasks) res.makespan = std::max(res.makespan, r.end);
  return res;
}

}  // namespace strata::sim
