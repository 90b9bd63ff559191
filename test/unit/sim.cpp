// The event core, case by case, with the expected times worked by hand.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <strata/io/simulation.hpp>
#include <strata/sim/core.hpp>
#include <strata/sim/executor.hpp>
#include <strata/sim/lin.hpp>

namespace unit_sim {

using namespace strata::sim;

TEST_CASE("fifo: a chain and a stream") {
  simulator s;
  const int gpu = s.add_resource({"gpu", discipline::fifo});
  const int a = s.add_task({.name = "fw", .resources = {gpu}, .work = 1e-3});
  s.add_task({.name = "bw", .resources = {gpu}, .work = 2e-3, .deps = {a}});
  s.add_task({.name = "other", .resources = {gpu}, .work = 4e-3});  // ready at 0, after fw
  const auto r = s.run();
  CHECK(r.tasks[0].end == Approx(1e-3));
  CHECK(r.tasks[2].start == Approx(1e-3));  // ready order: fw, other, then bw
  CHECK(r.tasks[1].start == Approx(5e-3));
  CHECK(r.makespan == Approx(7e-3));
  CHECK(r.busy[0] == Approx(7e-3));
}

TEST_CASE("fair sharing conserves bytes and is max-min fair") {
  // Two flows on one 1 GB/s link, 1 GB and 2 GB: both at 0.5 GB/s until the first ends at 2 s,
  // then the second alone: 1 GB more at 1 GB/s, done at 3 s. 3 GB in 3 s: nothing lost.
  simulator s;
  const int l = s.add_resource({"link", discipline::fair_share, 1e9});
  s.add_task({.name = "a", .resources = {l}, .work = 1e9});
  s.add_task({.name = "b", .resources = {l}, .work = 2e9});
  const auto r = s.run();
  CHECK(r.tasks[0].end == Approx(2.0));
  CHECK(r.tasks[1].end == Approx(3.0));
  CHECK(r.busy[0] * 1e9 == Approx(3e9));
  // Across a hierarchy: f1 crosses A (1 B/s) and B (10 B/s), f2 only B: f1 gets 1, f2 the 9 left.
  simulator h;
  const int A = h.add_resource({"A", discipline::fair_share, 1});
  const int B = h.add_resource({"B", discipline::fair_share, 10});
  h.add_task({.name = "f1", .resources = {A, B}, .work = 1});
  h.add_task({.name = "f2", .resources = {B}, .work = 9});
  const auto rh = h.run();
  CHECK(rh.tasks[0].end == Approx(1.0));
  CHECK(rh.tasks[1].end == Approx(1.0));
}

TEST_CASE("windowed round robin (Li et al. §3.2.2)") {
  // 1 GB/s, window 0.25 GB: a (0.5 GB) and b (1 GB) alternate: a, b, a -> a ends at 0.75 s;
  // b's last 0.5 GB alone -> 1.5 s.
  simulator s;
  const int l = s.add_resource({"http2", discipline::round_robin, 1e9, 0.25e9});
  s.add_task({.name = "a", .resources = {l}, .work = 0.5e9});
  s.add_task({.name = "b", .resources = {l}, .work = 1e9});
  const auto r = s.run();
  CHECK(r.tasks[0].end == Approx(0.75));
  CHECK(r.tasks[1].end == Approx(1.5));
}

TEST_CASE("round-robin turns that share a link (Li et al. Algorithm 3.1, Share)") {
  // Two connections (round robin, window 0.25 GB) whose turns cross one 1 GB/s link: a (0.5 GB)
  // on the first, c (0.25 GB) on the second. Their first turns share the link at 0.5 GB/s and
  // end at 0.5 s (c is done); a's second turn alone at 1 GB/s ends at 0.75 s. With the
  // connections at 1 or 2 GB/s the link binds (the turns run on the link's virtual clock); at
  // 0.4 GB/s the connections bind (progressive filling): 0.25 / 0.4 = 0.625 s per turn, a at
  // 1.25 s.
  for (const double own : {1e9, 2e9, 0.4e9}) {
    simulator s;
    const int l = s.add_resource({"link", discipline::fair_share, 1e9});
    const int r1 = s.add_resource({"conn1", discipline::round_robin, own, 0.25e9});
    const int r2 = s.add_resource({"conn2", discipline::round_robin, own, 0.25e9});
    s.add_task({.name = "a", .resources = {r1, l}, .work = 0.5e9});
    s.add_task({.name = "c", .resources = {r2, l}, .work = 0.25e9});
    const auto r = s.run();
    const double turn = own < 1e9 ? 0.25e9 / own : 0.5;
    CHECK(r.tasks[1].end == Approx(turn));
    CHECK(r.tasks[0].end == Approx(turn + (own < 1e9 ? turn : 0.25)));
    CHECK(r.busy[0] == Approx(r.tasks[0].end));
  }
  // A turn and a plain flow on the same link: 0.5 GB/s each until the turn's 0.25 GB end at
  // 0.5 s, then the flow's last 0.25 GB alone: 0.75 s.
  simulator s;
  const int l = s.add_resource({"link", discipline::fair_share, 1e9});
  const int rr = s.add_resource({"conn", discipline::round_robin, 1e9, 0.25e9});
  s.add_task({.name = "turn", .resources = {rr, l}, .work = 0.25e9});
  s.add_task({.name = "flow", .resources = {l}, .work = 0.5e9});
  const auto r = s.run();
  CHECK(r.tasks[0].end == Approx(0.5));
  CHECK(r.tasks[1].end == Approx(0.75));
}

TEST_CASE("overlap factor gamma (Proteus §VI-C)") {
  // 1 s of compute overlapping 0.5 s of communication on the same device, gamma = 0.5: the
  // first 0.5 s run at 1/1.5, doing 1/3 of the work; the other 2/3 alone: ends at 7/6 s.
  simulator s;
  s.set_overlap_factor(0.5);
  const int c = s.add_resource({"compute", discipline::fifo});
  const int m = s.add_resource({"comm", discipline::fifo});
  s.add_task(
      {.name = "gemm", .resources = {c}, .work = 1.0, .cls = task_class::compute, .device = 0});
  s.add_task({.name = "allreduce",
              .resources = {m},
              .work = 0.5,
              .cls = task_class::communication,
              .device = 0});
  const auto r = s.run();
  CHECK(r.tasks[0].end == Approx(7.0 / 6));
  CHECK(r.tasks[1].end == Approx(0.5));
}

TEST_CASE("overlap factor per communication task: the largest in service applies") {
  // 1 s of compute; a 0.5 s transfer with gamma 0.2 and a 0.25 s one with gamma 1 (its own
  // class of device pair) start with it. Until 0.25 s both run: rate 1 / 2, 0.125 s of work;
  // until 0.5 s only the first: rate 1 / 1.2, 0.2083 s; then alone: ends at
  // 0.5 + (1 - 0.125 - 0.25 / 1.2) = 7 / 6 s. The simulator's own gamma (0.5) applies to
  // neither.
  simulator s;
  s.set_overlap_factor(0.5);
  const int c = s.add_resource({"compute", discipline::fifo});
  const int m1 = s.add_resource({"comm 1", discipline::fifo});
  const int m2 = s.add_resource({"comm 2", discipline::fifo});
  s.add_task(
      {.name = "gemm", .resources = {c}, .work = 1.0, .cls = task_class::compute, .device = 0});
  s.add_task({.name = "pcie",
              .resources = {m1},
              .work = 0.5,
              .cls = task_class::communication,
              .device = 0,
              .gamma = 0.2});
  s.add_task({.name = "qpi",
              .resources = {m2},
              .work = 0.25,
              .cls = task_class::communication,
              .device = 0,
              .gamma = 1.0});
  const auto r = s.run();
  CHECK(r.tasks[0].end == Approx(0.5 + (1 - 0.125 - 0.25 / 1.2)));
}

TEST_CASE("latency, memory by reference counts, OOM") {
  simulator s;
  const int gpu = s.add_resource({"gpu", discipline::fifo});
  const int act = s.add_tensor({"activation", 0, 6e9});
  const int grad = s.add_tensor({"gradient", 0, 4e9});
  s.set_memory_capacity(0, 9e9);
  const int fw =
      s.add_task({.name = "fw", .resources = {gpu}, .work = 1, .device = 0, .produces = {act}});
  const int bw = s.add_task({.name = "bw",
                             .resources = {gpu},
                             .work = 1,
                             .deps = {fw},
                             .device = 0,
                             .latency = 0.5,
                             .produces = {grad},
                             .consumes = {act}});
  s.add_task({.name = "update",
              .resources = {gpu},
              .work = 1,
              .deps = {bw},
              .device = 0,
              .consumes = {grad}});
  const auto r = s.run();
  CHECK(r.tasks[1].ready == Approx(1.0));
  CHECK(r.tasks[1].start == Approx(1.5));  // waited its latency
  CHECK(r.makespan == Approx(3.5));
  // 6 GB live, then the gradient (4 GB) while the activation is still read: 10 GB peak; the
  // activation is freed after bw, the gradient after update
  CHECK(r.peak_memory[0] == Approx(10e9));
  REQUIRE(r.oom.has_value());
  CHECK(r.oom->task == bw);
  CHECK(r.oom->bytes == Approx(10e9));
  // run once, its loop state moved rather than copied: the same run, tensors read from the
  // specs; the simulator is left empty
  const auto moved = std::move(s).run();
  REQUIRE(moved.tasks.size() == r.tasks.size());
  for (std::size_t i = 0; i < r.tasks.size(); ++i) CHECK(moved.tasks[i].end == r.tasks[i].end);
  CHECK(moved.peak_memory == r.peak_memory);
  CHECK(moved.memory.size() == r.memory.size());
  REQUIRE(moved.oom.has_value());
  CHECK(moved.oom->task == bw);
  CHECK(s.tasks().empty());  // documented: a moved-from simulator has no tasks
}

TEST_CASE("bad graphs are errors that name the task") {
  simulator s;
  const int gpu = s.add_resource({"gpu", discipline::fifo});
  CHECK_THROWS_WITH(s.add_task({.name = "neg", .resources = {gpu}, .work = -1}),
                    Catch::Contains("task 'neg': negative work"));
  CHECK_THROWS_WITH(s.add_task({.name = "dangling", .resources = {gpu}, .work = 1, .deps = {7}}),
                    Catch::Contains("task 'dangling': depends on a task that does not exist"));
  CHECK_THROWS_WITH(s.add_resource({"l", discipline::fair_share, 0}),
                    Catch::Contains("positive capacity"));
}

TEST_CASE("the task store gives back every field as added; a refused task leaves nothing") {
  simulator s;
  const int gpu = s.add_resource({"gpu", discipline::fifo});
  const int link = s.add_resource({"link", discipline::fair_share, 1e9});
  const int act = s.add_tensor({"activation", 0, 1e6});
  const int fw = s.add_task(
      {.name = "forward", .resources = {gpu}, .work = 1e-3, .device = 0, .produces = {act}});
  s.add_task({.resources = {link},
              .work = 2e6,
              .deps = {fw},
              .cls = task_class::communication,
              .device = 0,
              .latency = 5e-6,
              .consumes = {act},
              .gamma = 0.25});
  CHECK_THROWS(s.add_task({.name = "bad", .resources = {gpu}, .work = 1, .deps = {fw, 9}}));
  s.add_task({.name = "b", .resources = {gpu}, .work = 2, .deps = {0, 1}});
  const auto tasks = s.tasks();
  REQUIRE(tasks.size() == 3);
  CHECK(tasks[0].name == "forward");
  CHECK(tasks[0].work == 1e-3);
  CHECK(tasks[0].deps.empty());
  CHECK(std::vector<int>(tasks[0].produces.begin(), tasks[0].produces.end()) ==
        std::vector<int>{act});
  CHECK(tasks[0].consumes.empty());
  const auto t1 = tasks[1];
  CHECK(t1.name.empty());
  CHECK(std::vector<int>(t1.resources.begin(), t1.resources.end()) == std::vector<int>{link});
  CHECK(std::vector<int>(t1.deps.begin(), t1.deps.end()) == std::vector<int>{fw});
  CHECK(t1.cls == task_class::communication);
  CHECK(t1.device == 0);
  CHECK(t1.latency == 5e-6);
  CHECK(t1.gamma == 0.25);
  CHECK(std::vector<int>(t1.consumes.begin(), t1.consumes.end()) == std::vector<int>{act});
  // the refused task ("bad") left no name, dependency or edge behind
  CHECK(tasks[2].name == "b");
  CHECK(std::vector<int>(tasks[2].deps.begin(), tasks[2].deps.end()) == std::vector<int>{0, 1});
  std::size_t names = 0;
  for (const auto& t : tasks) names += t.name.size();
  CHECK(names == std::string("forwardb").size());
  const auto r = s.run();  // forward 1 ms, then the 2 MB flow (5 us late) beside b's 2 s
  CHECK(r.tasks[1].start == Approx(1e-3 + 5e-6));
  CHECK(r.tasks[1].end == Approx(1e-3 + 5e-6 + 2e-3));
  CHECK(r.tasks[2].end == Approx(1e-3 + 5e-6 + 2e-3 + 2));
}

TEST_CASE("runs are bit-identical") {
  auto build = [] {
    simulator s;
    s.set_overlap_factor(0.3);
    const int c = s.add_resource({"c", discipline::fifo});
    const int l = s.add_resource({"l", discipline::fair_share, 3.3e9});
    int prev = -1;
    for (int i = 0; i < 50; ++i) {
      task_spec t{.name = "t",
                  .resources = {i % 3 == 0 ? l : c},
                  .work = i % 3 == 0 ? 1.7e8 * i : 1e-3 * (i % 7 + 1)};
      t.cls = i % 3 == 0 ? task_class::communication : task_class::compute;
      t.device = 0;
      if (prev >= 0 && i % 2 == 0) t.deps = {prev};
      prev = s.add_task(t);
    }
    return s.run();
  };
  const auto a = build(), b = build();
  REQUIRE(a.tasks.size() == b.tasks.size());
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    CHECK(a.tasks[i].start == b.tasks[i].start);  // exact, not approximate
    CHECK(a.tasks[i].end == b.tasks[i].end);
  }
}

TEST_CASE("event heap: pops by (time, id), moves and removals in place") {
  // The core's 4-ary heap against a sorted list: 300 entries on 40 distinct times (many ties,
  // broken by id), a third of them moved earlier or later and a tenth removed before popping.
  detail::quad_heap<detail::event, true> heap(300);
  std::vector<std::pair<double, int>> want;
  auto time_of = [](int i, int salt) { return 1e-3 * ((i * 7919 + salt * 104729) % 40); };
  for (int i = 0; i < 300; ++i) heap.set(detail::event::make(time_of(i, 1), i));
  for (int i = 0; i < 300; ++i) {
    if (i % 10 == 3) {
      heap.erase(i);
      continue;
    }
    const double t = i % 3 == 0 ? time_of(i, 2) : time_of(i, 1);  // earlier or later
    if (i % 3 == 0) heap.set(detail::event::make(t, i));
    want.emplace_back(t, i);
  }
  heap.erase(3);  // already gone: nothing happens
  std::sort(want.begin(), want.end());
  for (const auto& [t, i] : want) {
    REQUIRE(!heap.empty());
    const auto e = heap.pop();
    CHECK(e.time() == t);
    CHECK(e.id() == i);
  }
  CHECK(heap.empty());
}

TEST_CASE("event queue: a run of a few entries and the heap beyond it pop alike") {
  // Pushes, moves, removals and pops drawn from a fixed seed against a sorted list, at sizes
  // around the run's limits (a sorted run up to 16 entries, a heap past them, a run again at 8
  // or fewer), with many ties broken by id; the link flows' queue (not indexed) alike.
  detail::quad_heap<detail::event, true> heap(64);
  detail::quad_heap<detail::timed_id, false> flows;
  std::vector<std::pair<double, int>> want, want_flows;
  std::vector<double> key(64, -1);
  std::uint64_t x = 20261129;
  auto draw = [&x](std::uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((x >> 33) % n);
  };
  auto same_front = [&] {
    std::sort(want.begin(), want.end());
    std::sort(want_flows.begin(), want_flows.end());
    CHECK(heap.empty() == want.empty());
    CHECK(flows.empty() == want_flows.empty());
    bool same = true;
    if (!want.empty())
      same = heap.top().time() == want.front().first && heap.top().id() == want.front().second;
    if (!want_flows.empty())
      same = same && flows.top().time() == want_flows.front().first &&
             flows.top().id() == want_flows.front().second;
    return same;
  };
  int flow_id = 0, ops = 0;
  bool agree = true;
  for (int round = 0; round < 40 && agree; ++round) {
    const auto size = static_cast<std::size_t>(draw(40));  // the size it hovers around
    for (int op = 0; op < 100 && agree; ++op, ++ops) {
      const int what = draw(10), id = draw(64);
      const double t = 1e-3 * draw(12);
      if (what < 4 && want.size() < size + 2) {  // insert or move
        if (key[static_cast<std::size_t>(id)] >= 0)
          std::erase(want, std::pair{key[static_cast<std::size_t>(id)], id});
        key[static_cast<std::size_t>(id)] = t;
        want.emplace_back(t, id);
        heap.set(detail::event::make(t, id));
      } else if (what == 4) {  // remove, if there
        if (key[static_cast<std::size_t>(id)] >= 0)
          std::erase(want, std::pair{key[static_cast<std::size_t>(id)], id});
        key[static_cast<std::size_t>(id)] = -1;
        heap.erase(id);
      } else if (what < 7 && !want.empty()) {
        const auto e = heap.pop();
        agree = e.time() == want.front().first && e.id() == want.front().second;
        key[static_cast<std::size_t>(want.front().second)] = -1;
        want.erase(want.begin());
      } else if (what < 9 && want_flows.size() < size + 2) {
        want_flows.emplace_back(t, flow_id);
        flows.push(detail::timed_id::make(t, flow_id++));
      } else if (!want_flows.empty()) {
        const auto e = flows.pop();
        agree = e.time() == want_flows.front().first && e.id() == want_flows.front().second;
        want_flows.erase(want_flows.begin());
      }
      agree = agree && same_front();
    }
  }
  CHECK(agree);
  CHECK(ops == 4000);
}

TEST_CASE("repeat_tasks: a repeated block is that block added again") {
  // Two simulators: one adds a block (a round-robin turn over a link with a latency, a compute
  // task that allocates a tensor, a flow that reads it) after a task `a`, then repeats it after
  // a task `b` (the block's wait for `a` becomes a wait for `b`); the other adds the same
  // tasks one by one. Their stores and runs are the same, bit for bit.
  auto layout = [](simulator& s) {
    const int gpu = s.add_resource({"gpu", discipline::fifo, 1, 0, 0});
    const int rr = s.add_resource({"rr", discipline::round_robin, 1e9, 3e5, 0, true});
    const int link = s.add_resource({"link", discipline::fair_share, 1e9});
    const int act = s.add_tensor({"activation", 0, 1e6});
    return std::vector<int>{gpu, rr, link, act};
  };
  auto block = [](simulator& s, const std::vector<int>& r, int after, double scale) {
    const int turn = s.add_task({.name = "turn",
                                 .resources = {r[1], r[2]},
                                 .work = 1e6 * scale,
                                 .deps = {after},
                                 .cls = task_class::communication,
                                 .device = 0,
                                 .latency = 1e-5});
    const int fw = s.add_task({.name = "fw",
                               .resources = {r[0]},
                               .work = 2e-3,
                               .deps = {turn},
                               .device = 0,
                               .produces = {r[3]}});
    s.add_task({.resources = {r[2]},
                .work = 5e5,
                .deps = {fw, after, turn},
                .cls = task_class::communication,
                .device = 0,
                .consumes = {r[3]},
                .gamma = 0.1});
  };
  simulator a, b;
  const auto ra = layout(a), rb = layout(b);
  for (auto* s : {&a, &b}) s->set_overlap_factor(0.2);
  const int a0 = a.add_task({.name = "a", .resources = {ra[0]}, .work = 1e-3});
  block(a, ra, a0, 1);
  const int a1 = a.add_task({.name = "b", .resources = {ra[0]}, .work = 1e-3, .deps = {3}});
  const std::pair<int, int> after{a0, a1};
  const std::pair<int, int> nowhere{a0, 99};
  CHECK_THROWS(a.repeat_tasks(1, 9));                 // past the last task
  CHECK_THROWS(a.repeat_tasks(1, 3, {&nowhere, 1}));  // a wait for a task that does not exist
  CHECK(a.tasks().size() == 5);                       // refused: nothing added
  CHECK(a.repeat_tasks(1, 3, {&after, 1}) == 5);
  const int b0 = b.add_task({.name = "a", .resources = {rb[0]}, .work = 1e-3});
  block(b, rb, b0, 1);
  const int b1 = b.add_task({.name = "b", .resources = {rb[0]}, .work = 1e-3, .deps = {3}});
  block(b, rb, b1, 1);
  REQUIRE(a.tasks().size() == b.tasks().size());
  for (std::size_t i = 0; i < a.tasks().size(); ++i) {
    const task_view x = a.tasks()[i], y = b.tasks()[i];
    CHECK(x.name == y.name);
    CHECK(
        std::equal(x.resources.begin(), x.resources.end(), y.resources.begin(), y.resources.end()));
    CHECK(std::equal(x.deps.begin(), x.deps.end(), y.deps.begin(), y.deps.end()));
    CHECK(std::equal(x.produces.begin(), x.produces.end(), y.produces.begin(), y.produces.end()));
    CHECK(std::equal(x.consumes.begin(), x.consumes.end(), y.consumes.begin(), y.consumes.end()));
    CHECK((x.work == y.work && x.cls == y.cls && x.device == y.device && x.latency == y.latency &&
           x.gamma == y.gamma));
  }
  const auto ta = a.run(), tb = b.run();
  REQUIRE(ta.tasks.size() == 8);
  for (std::size_t i = 0; i < ta.tasks.size(); ++i) {
    CHECK(ta.tasks[i].ready == tb.tasks[i].ready);  // exact, not approximate
    CHECK(ta.tasks[i].start == tb.tasks[i].start);
    CHECK(ta.tasks[i].end == tb.tasks[i].end);
  }
  CHECK(ta.events == tb.events);
  CHECK(ta.memory.size() == tb.memory.size());
  CHECK(ta.busy == tb.busy);
  CHECK(ta.tasks[5].start > ta.tasks[4].end);  // the copy waited for b
}

TEST_CASE("dependents become ready in task order, a run leaves the graph as it was") {
  // a (1 ms) has dependents b, c, d added in that order on the same stream, with c listing a
  // twice: they queue in index order when a ends, so b runs 1-3 ms, c 3-6 ms, d 6-10 ms.
  simulator s;
  const int gpu = s.add_resource({"gpu", discipline::fifo});
  const int a = s.add_task({.name = "a", .resources = {gpu}, .work = 1e-3});
  const int b = s.add_task({.name = "b", .resources = {gpu}, .work = 2e-3, .deps = {a}});
  const int c = s.add_task({.name = "c", .resources = {gpu}, .work = 3e-3, .deps = {a, a}});
  const int d = s.add_task({.name = "d", .resources = {gpu}, .work = 4e-3, .deps = {a}});
  CHECK_THROWS(s.add_task({.name = "e", .resources = {gpu}, .deps = {7}}));  // not added
  const auto r = s.run();
  REQUIRE(r.tasks.size() == 4);
  CHECK(r.tasks[static_cast<std::size_t>(b)].start == Approx(1e-3));
  CHECK(r.tasks[static_cast<std::size_t>(c)].start == Approx(3e-3));
  CHECK(r.tasks[static_cast<std::size_t>(d)].start == Approx(6e-3));
  CHECK(r.makespan == Approx(10e-3));
  const auto again = s.run();  // the same simulator runs again from the same state
  const simulator copy = s;    // and a copy runs the same
  const auto third = copy.run();
  for (std::size_t i = 0; i < r.tasks.size(); ++i) {
    CHECK(again.tasks[i].end == r.tasks[i].end);
    CHECK(third.tasks[i].end == r.tasks[i].end);
  }
}

TEST_CASE("timeline, exposed communication and critical path") {
  // compute 0-1 s, communication 0.5-2 s (after a 0.5 s latency) on device 0: exposed 1-2 s.
  simulator s;
  const int c = s.add_resource({"compute", discipline::fifo, 1, 0, 0});
  const int m = s.add_resource({"comm", discipline::fifo, 1, 0, 0});
  const int a = s.add_task({.name = "gemm", .resources = {c}, .work = 1, .device = 0});
  s.add_task({.name = "send",
              .resources = {m},
              .work = 1.5,
              .cls = task_class::communication,
              .device = 0,
              .latency = 0.5});
  s.add_task({.name = "update", .resources = {c}, .work = 0.25, .deps = {a}, .device = 0});
  const auto r = s.run();
  const auto exposed = strata::io::exposed_communication(s, r);
  REQUIRE(exposed.size() == 1);
  CHECK(exposed[0] == Approx(0.75));  // 1.25 .. 2.0: update ends at 1.25
  const auto path = strata::io::critical_path(s, r);
  REQUIRE(path.size() == 1);
  CHECK(s.tasks()[static_cast<std::size_t>(path[0])].name == "send");
  const auto trace = strata::io::chrome_trace(s, r);
  int complete = 0;
  for (const auto& e : trace["traceEvents"]) complete += e["ph"] == "X" ? 1 : 0;
  CHECK(complete == 3);
  const auto sum = strata::io::summary(s, r);
  CHECK(sum["iteration_time_s"].get<double>() == Approx(2.0));
  CHECK(sum["utilization"][0]["utilization"].get<double>() == Approx(1.25 / 2.0));
}

TEST_CASE("the executor: an eager host issues kernels ahead of the GPU; levels share links") {
  simulator s;
  executor ex(s);
  ex.add_device(0, "rank 0");
  ex.add_host(0, "rank 0");
  // A: 2 ms to issue, 0.5 ms to run: the issue lead is 2 ms, so A runs 2.0-2.5 ms. B (1 ms to
  // issue, 5 ms to run) is issued once the host has issued A (2 ms) plus its own 1 ms lead: it
  // runs 3-8 ms, although the GPU is free from 2.5 ms.
  const int a = ex.kernels(0, "A", strata::lower::span::kernel(2e-3, 0.5e-3), {});
  const int b = ex.kernels(0, "B", strata::lower::span::kernel(1e-3, 5e-3), {});
  // Two 1 GB flows on level 1's 1 GB/s link share it (0.5 GB/s each after the 1 ms start-up,
  // done at 2.001 s); level 0's link is another, so its 1 GB flow is done at 1.001 s.
  const int l1 = ex.shared_link(1, 1e9);
  CHECK(ex.shared_link(1, 1e9) == l1);
  CHECK(ex.shared_link(0, 1e9) != l1);
  const int f = ex.flow(0, "f", {l1}, 1e9, 1e-3, {});
  const int g = ex.flow(0, "g", {l1}, 1e9, 1e-3, {});
  const int h = ex.flow(0, "h", {ex.shared_link(0, 1e9)}, 1e9, 1e-3, {});
  const auto r = s.run();
  const auto at = [&](int t) { return r.tasks[static_cast<std::size_t>(t)]; };
  CHECK(at(a).start == Approx(2e-3));
  CHECK(at(a).end == Approx(2.5e-3));
  CHECK(at(b).start == Approx(3e-3));
  CHECK(at(b).end == Approx(8e-3));
  CHECK(at(f).end == Approx(2.001));
  CHECK(at(g).end == Approx(2.001));
  CHECK(at(h).end == Approx(1.001));
  // without a host the kernels start when the GPU is free: A 0-0.5 ms, B 0.5-5.5 ms
  simulator s2;
  executor plain(s2);
  plain.add_device(0, "rank 0");
  plain.kernels(0, "A", strata::lower::span::kernel(2e-3, 0.5e-3), {});
  const int b2 = plain.kernels(0, "B", strata::lower::span::kernel(1e-3, 5e-3), {});
  CHECK(s2.run().tasks[static_cast<std::size_t>(b2)].end == Approx(5.5e-3));
}

TEST_CASE("the executor: HTTP/2 streams take turns on a channel; kept dependencies") {
  // Li et al. §3.2.2: streams A = 2, B = 8, C = 4 MB on a 1 MB/s channel with WIN = 3 MB, its
  // turns crossing a 1 MB/s link. A fits WIN: 0-2 s. B's first turn: 2-5 s. C's: 5-8 s. B's
  // second runs to completion: 8-13 s. C's last 1 MB: 13-14 s. Then 1 s of work after C.
  simulator s;
  executor ex(s);
  const int ch = ex.add_channel(0, "DOWNLINK", 1e6, 3e6, true);
  const int link[] = {ex.add_link(-1, "server NIC", 1e6)};
  const int a = ex.turn(0, ch, link, 2e6);
  const int b = ex.turn(0, ch, link, 8e6);
  const int c = ex.turn(0, ch, link, 4e6);
  const int worker = ex.add_stream(0, "WORKER");
  ex.next_deps().push_back(c);
  const int w = ex.on_stream(worker, 0, 1.0);
  CHECK(ex.next_deps().empty());
  ex.next_deps().push_back(w + 1);  // refused (no such task), its dependencies emptied all the same
  CHECK_THROWS(ex.on_stream(worker, 0, 1.0));
  CHECK(ex.next_deps().empty());
  CHECK(s.task(static_cast<std::size_t>(a)).cls == task_class::communication);
  CHECK(s.task(static_cast<std::size_t>(w)).deps.size() == 1);
  const auto r = s.run();
  const auto end = [&](int t) { return r.tasks[static_cast<std::size_t>(t)].end; };
  CHECK(end(a) == Approx(2.0));
  CHECK(end(b) == Approx(13.0));
  CHECK(end(c) == Approx(14.0));
  CHECK(end(w) == Approx(15.0));
}

TEST_CASE("Lin et al. Algorithm 1, worked by hand") {
  // Two ranks, overheads T1 = T3 = 1 us, T2 = T4 = 2 us, T5 = 1 us, kernel gap 0.
  // rank 0: gemm 100 us, all_reduce 50 us, update 10 us (depends on the all-reduce)
  // rank 1: gemm 300 us, all_reduce 50 us, update 10 us
  const double us = 1e-6;
  lin_trace t;
  t.overheads = {1 * us, 2 * us, 1 * us, 2 * us, 1 * us, 0};
  for (double g : {100.0, 300.0})
    t.ranks.push_back({{"gemm", stream::compute, {g * us}, {}},
                       {"ar", stream::communication, {50 * us}, {"gemm"}},
                       {"update", stream::compute, {10 * us}, {"ar"}}});
  const auto r = replay(t);
  // rank 0: gemm: cpu 1 + 2 = 3, kernel starts max(0, 3 + 1) = 4, ends 104; cpu 5, + T3 = 6.
  //   ar: sync streams (104); cpu 7 + 2 = 9; starts max(104, 10) = 104, ends 154; cpu 11.
  // rank 1: gemm ends 304; ar starts 304, ends 354. Inter-rank sync: both ar end at 354.
  //   update (after the all-reduce): streams synced to 354; starts 354 on both; ends 364.
  REQUIRE(r.rank_time.size() == 2);
  CHECK(r.rank_time[0] == Approx(364 * us));
  CHECK(r.rank_time[1] == Approx(364 * us));
  CHECK(r.time == Approx(364 * us));
  CHECK(r.gpu_time[0] == Approx(160 * us));
  // rank 0's all-reduce kernel waited for rank 1: it ends at 354, not 154
  for (const auto& e : r.events)
    if (e.op == "ar") CHECK(e.end == Approx(354 * us));
}

TEST_CASE("bad traces name the op") {
  lin_trace t;
  t.ranks.push_back({{"a", stream::compute, {1e-6}, {"b"}}, {"b", stream::compute, {1e-6}, {}}});
  CHECK_THROWS_WITH(replay(t),
                    Catch::Contains("op 'a' on rank 0: depends on 'b', which comes later"));
  t.ranks[0][0].deps = {"zzz"};
  CHECK_THROWS_WITH(replay(t), Catch::Contains("op 'a' on rank 0: depends on unknown op 'zzz'"));
  t.ranks[0][0].deps = {};
  t.ranks[0][1].kernels = {-1};
  CHECK_THROWS_WITH(replay(t), Catch::Contains("op 'b' on rank 0: a kernel time is negative"));
  t.ranks[0][1].kernels = {1e-6};
  t.ranks.push_back({{"x", stream::communication, {1e-6}, {}}});
  CHECK_THROWS_WITH(replay(t), Catch::Contains("collectives must match across ranks"));
}

}  // namespace unit_sim
