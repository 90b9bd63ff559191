// The order of a PyTorch trace's ops (io/op_trace.hpp, parse_pytorch_trace): runtime calls that
// touch (one starts exactly where the previous one ends) replay in the order they ran.
#include <catch2/catch.hpp>
#include <string>

#include "strata/io/op_trace.hpp"

namespace unit_trace_order {

using namespace strata;

namespace {
/// A two-call trace on one host thread: cudaDeviceSynchronize at `a` for 11.1 us, then
/// cudaLaunchKernel at `b` (its end) for 205.1 us, no GPU op.
std::string touching_calls(const std::string& a, const std::string& b) {
  return R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "tid": 1, "ts": )" +
         a +
         R"(, "dur": 11.100, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": )" +
         b + R"(, "dur": 205.100, "args": {"correlation": 2}}]})";
}
}  // namespace

TEST_CASE("PyTorch trace: a call that starts where the previous one ends follows it", "[trace]") {
  // The synchronisation is listed at its end (after the GPU ops it waited for), the launch at its
  // start; both are 1234578.991 us in the trace. In seconds from the first call, the sum
  // (1234567.891e-6 - 1234567.891e-6) + 11.1e-6 rounds to 1.1099999999999999e-05 while
  // 1234578.991e-6 - 1234567.891e-6 rounds to 1.1099999999819588e-05, so a floating-point key
  // put the launch first: its 11.1 us lead became a host gap, and the synchronisation ran after
  // it, 11.1 + 205.1 + 11.1 = 227.3 us for a traced 216.2 us (+5 %). On the profiler's
  // nanosecond grid both are 1234578991 ns: a tie, broken by the end (the synchronisation ends
  // there, the launch 205.1 us later), and the replay is the trace, 11.1 + 205.1 = 216.2 us.
  const auto t = io::parse_pytorch_trace(touching_calls("1234567.891", "1234578.991"));
  REQUIRE(t.ops.size() == 2);
  CHECK(t.ops[0].name == "cudaDeviceSynchronize");
  CHECK(t.ops[1].name == "cudaLaunchKernel");
  CHECK(t.span() == Approx(216.2e-6).margin(1e-12));
  const auto r = sim::replay_one(t);
  CHECK(r.step_time == Approx(216.2e-6).margin(1e-12));  // not 227.3 us
  CHECK(r.ops[0].end <= r.ops[1].start + 1e-12);

  // the same at a Kineto-sized clock (test/data/h100_trace_gpt2-124M_b8.json starts at
  // 4492932785251.1 us), where a parsed time resolves only about 1 ns: 4492932785310.771
  // + 11.1 in seconds from the start put the launch 0.5 ns before the synchronisation's end
  const auto k = io::parse_pytorch_trace(touching_calls("4492932785310.771", "4492932785321.871"));
  REQUIRE(k.ops.size() == 2);
  CHECK(k.ops[0].name == "cudaDeviceSynchronize");
  CHECK(sim::replay_one(k).step_time == Approx(216.2e-6).margin(1e-9));

  // listed the other way round in traceEvents, the calls keep the order they ran in
  const std::string swapped = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1234578.991,
     "dur": 205.100, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "tid": 1,
     "ts": 1234567.891, "dur": 11.100, "args": {"correlation": 1}}]})";
  const auto s = io::parse_pytorch_trace(swapped);
  REQUIRE(s.ops.size() == 2);
  CHECK(s.ops[0].name == "cudaDeviceSynchronize");
  CHECK(sim::replay_one(s).step_time == Approx(216.2e-6).margin(1e-12));
}

TEST_CASE("PyTorch trace: calls that do not touch keep their order and gaps", "[trace]") {
  // a 0.5 us host gap between the synchronisation's end and the launch: 11.1 + 0.5 + 205.1
  const auto t = io::parse_pytorch_trace(touching_calls("1234567.891", "1234579.491"));
  REQUIRE(t.ops.size() == 2);
  CHECK(t.ops[0].name == "cudaDeviceSynchronize");
  CHECK(sim::replay_one(t).step_time == Approx(216.7e-6).margin(1e-12));
}

}  // namespace unit_trace_order
