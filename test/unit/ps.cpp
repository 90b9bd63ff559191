// Li et al.'s asynchronous parameter-server simulator (sim/ps.hpp): Algorithm 3.1 worked by hand.
#include <catch2/catch.hpp>

#include "strata/sim/ps.hpp"

namespace unit_ps {

using namespace strata::sim;

namespace {
ps_op down(const char* id, double bytes, int server = 0, std::vector<int> deps = {}) {
  return {id, ps_resource::downlink, 0, bytes, server, std::move(deps)};
}
ps_op up(const char* id, double bytes, std::vector<int> deps, int server = 0) {
  return {id, ps_resource::uplink, 0, bytes, server, std::move(deps)};
}
ps_op work(const char* id, double s, std::vector<int> deps) {
  return {id, ps_resource::worker, s, 0, 0, std::move(deps)};
}
ps_op update(const char* id, double s, std::vector<int> deps, int server = 0) {
  return {id, ps_resource::ps, s, 0, server, std::move(deps)};
}
double end_of(const ps_result& r, int worker, int op, bool parse = false) {
  for (const auto& e : r.events)
    if (e.worker == worker && e.op == op && e.parse == parse && e.step == 0) return e.end;
  return -1;
}
}  // namespace

TEST_CASE("HTTP/2 multiplexing: a stream's first turn stops at WIN, its second completes", "[ps]") {
  // Li et al. §3.2.2 (Fig. 12's rule): streams A = 2, B = 8, C = 4 MB at 1 MB/s, WIN = 3 MB.
  // A fits WIN: 0-2 s. B sends 3 MB: 2-5 s. C sends 3 MB: 5-8 s. B's second turn runs to
  // completion (5 MB): 8-13 s. C's last 1 MB: 13-14 s.
  ps_job job{.steps = {{{down("A", 2e6), down("B", 8e6), down("C", 4e6)}}}};
  ps_config c{
      .workers = 1, .bandwidth = 1e6, .window = 3e6, .steps = 1, .warmup = 0, .timeline = true};
  auto r = simulate_ps(job, c);
  CHECK(end_of(r, 0, 0) == Approx(2.0));
  CHECK(end_of(r, 0, 1) == Approx(13.0));
  CHECK(end_of(r, 0, 2) == Approx(14.0));
  // flow control off (§3.3): whole streams in queue order: 2, 10, 14 s
  c.flow_control = false;
  r = simulate_ps(job, c);
  CHECK(end_of(r, 0, 1) == Approx(10.0));
  CHECK(end_of(r, 0, 2) == Approx(14.0));
  // TicTac's reverse order on a chain that needs C first: C, B, A
  job.steps[0].ops.push_back(work("use C", 1.0, {2}));
  job.steps[0].ops.push_back(work("use B", 1.0, {1, 3}));
  job.steps[0].ops.push_back(work("use A", 1.0, {0, 4}));
  c.order = ps_order::tictac;
  r = simulate_ps(job, c);
  // TicTac needs C (at 0), B (at 1), A (at 2): C 0-4, B 4-12, A 12-14; compute 4-5, 12-13,
  // 14-15
  CHECK(end_of(r, 0, 2) == Approx(4.0));
  CHECK(end_of(r, 0, 1) == Approx(12.0));
  CHECK(end_of(r, 0, 5) == Approx(15.0));
  c.order = ps_order::as_scheduled;  // A 0-2, B 2-10, C 10-14; compute 14-17
  r = simulate_ps(job, c);
  CHECK(end_of(r, 0, 5) == Approx(17.0));
  c.order = ps_order::reverse;  // A first (needed last) ... the same as scheduled here
  r = simulate_ps(job, c);
  CHECK(end_of(r, 0, 5) == Approx(17.0));
}

TEST_CASE("1/n sharing of the server's link (Li et al. §3.1)", "[ps]") {
  // Two workers download 10 MB each from one server at 10 MB/s: 1/2 each, both end at 2 s;
  // alone, 1 s.
  ps_job job{.steps = {{{down("w", 10e6)}}}};
  ps_config c{.workers = 1, .bandwidth = 10e6, .steps = 1, .warmup = 0, .timeline = true};
  CHECK(end_of(simulate_ps(job, c), 0, 0) == Approx(1.0));
  c.workers = 2;
  const auto r = simulate_ps(job, c);
  CHECK(end_of(r, 0, 0) == Approx(2.0));
  CHECK(end_of(r, 1, 0) == Approx(2.0));
}

TEST_CASE("two parameter servers: 1/n and 1 - 1/n (Li et al. §5)", "[ps]") {
  // Profiled steps: A downloads 3 MB from PS1 and 4 MB from PS2; B only 4 MB from PS2. Links of
  // 4 MB/s. With seed 1, one of four workers draws A first: PS2's link has n = 4 flows, 1/4 each
  // (1 MB/s, 4 s); that worker's NIC carries 1/4 for PS2 and gives PS1 up to 1 - 1/4 (3 MB/s):
  // its PS1 transfer ends at 1 s.
  ps_step a{{down("ps1", 3e6, 0), down("ps2", 4e6, 1)}}, b{{down("ps2", 4e6, 1)}};
  ps_job job{.steps = {a, b}, .servers = 2};
  ps_config c{.workers = 4, .bandwidth = 4e6, .steps = 1, .warmup = 0, .seed = 1, .timeline = true};
  auto r = simulate_ps(job, c);
  int with_a = -1, count = 0;
  for (const auto& e : r.events)
    if (e.sampled == 0 && e.op == 0) {
      with_a = e.worker;
      ++count;
    }
  REQUIRE(count == 1);
  CHECK(end_of(r, with_a, 0) == Approx(1.0));
  CHECK(end_of(r, with_a, 1) == Approx(4.0));
  CHECK(end_of(r, (with_a + 1) % 4, 0) == Approx(4.0));
  // one worker alone: its NIC is the bottleneck, 2 MB/s per server; PS1 ends at 1.5 s, then
  // PS2's last 1 MB at 4 MB/s: 1.75 s
  job.steps = {a};
  r = simulate_ps(job, {.workers = 1, .bandwidth = 4e6, .steps = 1, .warmup = 0, .timeline = true});
  CHECK(end_of(r, 0, 0) == Approx(1.5));
  CHECK(end_of(r, 0, 1) == Approx(1.75));
}

TEST_CASE("parsing overhead alpha * size + beta on the receiver (Li et al. §3.2.1)", "[ps]") {
  // 10 MB at 10 MB/s (1 s), parsed in 1e-8 s/B * 1e7 B + 0.05 s = 0.15 s on the worker, then
  // 0.5 s of compute: the step ends at 1.65 s; the next download starts only then.
  ps_job job{.steps = {{{down("w", 10e6), work("fwd", 0.5, {0})}}}, .batch = 32};
  ps_config c{.workers = 1,
              .bandwidth = 10e6,
              .alpha = 1e-8,
              .beta = 0.05,
              .steps = 4,
              .warmup = 1,
              .timeline = true};
  const auto r = simulate_ps(job, c);
  CHECK(end_of(r, 0, 0, true) == Approx(1.15));
  CHECK(r.step_end[0][0] == Approx(1.65));
  CHECK(r.step_end[0][3] == Approx(4 * 1.65));
  // throughput after warm-up: 3 steps of 32 examples in 3 x 1.65 s
  CHECK(r.throughput == Approx(32 / 1.65));
}

TEST_CASE("a step overlaps downlinks, compute and uplinks", "[ps]") {
  // Two layers: down a (1 MB), down b (1 MB) at 1 MB/s; fwd a (0.5 s) after a, fwd b (0.5 s)
  // after b and fwd a; bwd b (1 s), up b (1 MB), bwd a (1 s), up a (1 MB), server updates 0.1 s.
  // down a 0-1, down b 1-2, fwd a 1-1.5, fwd b 2-2.5, bwd b 2.5-3.5, up b 3.5-4.5 (uplink),
  // bwd a 3.5-4.5, up a 4.5-5.5, update a 5.5-5.6: the step ends at 5.6 s.
  ps_step st{{down("a", 1e6), down("b", 1e6), work("fa", 0.5, {0}), work("fb", 0.5, {1, 2}),
              work("bb", 1.0, {3}), up("ub", 1e6, {4}), work("ba", 1.0, {4}), up("ua", 1e6, {6}),
              update("pb", 0.1, {5}), update("pa", 0.1, {7})}};
  ps_job job{.steps = {st}, .batch = 8};
  auto r =
      simulate_ps(job, {.workers = 1, .bandwidth = 1e6, .steps = 1, .warmup = 0, .timeline = true});
  CHECK(r.step_end[0][0] == Approx(5.6));
  // Three workers: downlinks 1/3 each, so compute waits; the shared links bound the
  // throughput at 1 MB/s / 2 MB per step = 0.5 steps/s = 4 examples/s; one worker alone makes
  // 8 / 5.6 = 1.43 examples/s.
  r = simulate_ps(job, {.workers = 3, .bandwidth = 1e6, .steps = 40, .warmup = 5});
  CHECK(r.throughput <= 4.0 + 1e-9);
  CHECK(r.throughput > 8 / 5.6);
}

TEST_CASE("bad profiled steps are refused with the op named", "[ps]") {
  ps_job job{.steps = {{{work("a", 1.0, {1}), work("b", 1.0, {})}}}};
  CHECK_THROWS_WITH(simulate_ps(job, {}),
                    "step 0, op 'a': depends on an op that does not come before it");
  job.steps = {{{down("x", 1e6, 3)}}};
  CHECK_THROWS_WITH(simulate_ps(job, {}),
                    "step 0, op 'x': names parameter server 3, the job has 1");
  job.steps = {{{down("x", 1e6)}}};
  CHECK_THROWS_WITH(simulate_ps(job, {.steps = 5, .warmup = 5}),
                    "steps must be at least 1 and exceed the warm-up steps");
}

TEST_CASE("BytePS-style: synchronous steps, tensors partitioned over summation servers", "[ps]") {
  // Synchronous: profiled steps A (1 s of compute) and B (3 s). Seed 6 draws A, B for the
  // workers' first steps and A, A for their second. Asynchronous, worker 0 ends its steps at
  // 1 and 2 s; synchronous, its second step waits for worker 1's first: 3 + 1 = 4 s.
  ps_job job{.steps = {{{work("A", 1.0, {})}}, {{work("B", 3.0, {})}}}};
  ps_config c{.workers = 2, .steps = 2, .warmup = 0, .seed = 6};
  auto r = simulate_ps(job, c);
  CHECK(r.step_end[0] == std::vector<double>{1.0, 2.0});
  CHECK(r.step_end[1] == std::vector<double>{3.0, 4.0});
  c.synchronous = true;
  r = simulate_ps(job, c);
  CHECK(r.step_end[0][1] == Approx(4.0));
  CHECK(r.step_end[1][1] == Approx(4.0));
  // Push 4 MB of gradient from each of two workers over 4 MB/s links. One server: its link
  // carries both (2 MB/s each): 2 s. Partitioned over two servers (2 MB to each): every server
  // link and every worker NIC carries two flows, 2 MB/s each: 1 s.
  ps_job one{.steps = {{{work("bwd", 0, {}), up("g", 4e6, {0})}}}};
  ps_job two{.steps = {{{work("bwd", 0, {}), up("g0", 2e6, {0}, 0), up("g1", 2e6, {0}, 1)}}},
             .servers = 2};
  const ps_config s{.workers = 2, .bandwidth = 4e6, .synchronous = true, .steps = 1, .warmup = 0};
  CHECK(simulate_ps(one, s).step_end[0][0] == Approx(2.0));
  CHECK(simulate_ps(two, s).step_end[0][0] == Approx(1.0));
}

}  // namespace unit_ps
