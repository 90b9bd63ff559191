// strata's operation trace (sim/op_trace.hpp, io/op_trace.hpp): the PyTorch profiler reader,
// the replay on one GPU, the JSON form.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "../validation/record.hpp"
#include "strata/frameworks/huggingface.hpp"
#include "strata/frameworks/pytorch_eager.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/op_trace.hpp"
#include "strata/lower/transformer.hpp"
#include "strata/model/transformer_zoo.hpp"
#include "strata/model/zoo.hpp"

namespace unit_trace {

using namespace strata;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
/// The rows of a CSV file under test/data without its header, each cut at its commas (the files
/// read here quote nothing).
std::vector<std::vector<std::string>> csv_rows(const std::string& name) {
  std::stringstream in(slurp(STRATA_TEST_DATA_DIR "/" + name));
  std::vector<std::vector<std::string>> rows;
  std::string line, cell;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream row(line);
    rows.emplace_back();
    while (std::getline(row, cell, ',')) rows.back().push_back(cell);
  }
  return rows;
}
}  // namespace

TEST_CASE("the sample PyTorch trace replays onto its own step time", "[trace]") {
  // test/data/h100_trace_gpt2-124M_b8.json: one GPT-2 124M training step (micro-batch 8) on an
  // H100 under torch.profiler: 716 kernels and 120 memsets on stream 7, CUDA calls on the main
  // thread (397) and the autograd thread (445), ending in cudaDeviceSynchronize.
  const auto t =
      io::parse_pytorch_trace(slurp(STRATA_TEST_DATA_DIR "/h100_trace_gpt2-124M_b8.json"));
  int kernels = 0, memsets = 0, launches = 0;
  for (const auto& o : t.ops) {
    kernels += o.kind == "kernel";
    memsets += o.kind == "memset";
    launches += o.kind == "launch";
  }
  CHECK(kernels == 716);
  CHECK(memsets == 120);
  CHECK(launches == 836);  // every GPU op's launch is in the trace
  CHECK(t.streams.size() == 3);
  // traced step: first runtime call (ts 4492932785251.1 us) to the end of the last kernel
  // 63.437 ms later
  CHECK(t.span() == Approx(63.437e-3).epsilon(1e-4));
  const auto r = sim::replay_one(t);
  // the replay reproduces the traced step within 2 % (measured: 63.430 ms, -0.01 %)
  CHECK(r.step_time == Approx(t.span()).epsilon(0.02));
  CHECK(r.step_time == Approx(t.span()).epsilon(0.001));
  // summed GPU time (kernels + memsets, from the trace's durations): 28.19 ms; with an infinitely
  // fast host the step is exactly that (one stream, nothing else to wait for)
  CHECK(r.gpu_busy == Approx(28.191e-3).epsilon(1e-3));
  CHECK(sim::replay_one(t, 0.0).step_time == Approx(r.gpu_busy));
  // the unprofiled step measured 31.53 ms (h100_trace_gpt2-124M_b8.meta.json): between the
  // device-bound bound and the profiled host (CUPTI roughly doubles host time; docs/li.md)
  CHECK(r.gpu_busy < 31.53e-3);
  CHECK(r.step_time > 31.53e-3);
}

TEST_CASE("PyTorch trace: launches, kernels, a synchronisation, worked by hand", "[trace]") {
  // CPU: launch A at 0 (10 us; A starts on the GPU 5 us in), launch B at 20 (10 us; B queued
  // behind A, starts at 105), cudaDeviceSynchronize at 40 until 205 (B's end + 5).
  // GPU: A 5-105 (100 us), B 105-205 (100 us).
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1000, "dur": 10,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "A", "pid": 0, "tid": 7, "ts": 1005, "dur": 100,
     "args": {"correlation": 1, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1020, "dur": 10,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "B", "pid": 0, "tid": 7, "ts": 1105, "dur": 100,
     "args": {"correlation": 2, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "tid": 1, "ts": 1040,
     "dur": 165, "args": {"correlation": 3}},
    {"ph": "i", "name": "[memory]", "ts": 1001, "args": {"Total Allocated": 4096}}]})";
  const auto t = io::parse_pytorch_trace(text);
  CHECK(t.span() == Approx(205e-6));
  CHECK(t.peak_memory() == 4096);
  // the sync waits for B: its own time is 0 (it returned when B ended)
  const auto r = sim::replay_one(t);
  CHECK(r.step_time == Approx(205e-6));
  // twice as fast a host: launch A's first part 2.5 us, A 2.5-102.5, B 102.5-202.5, the sync
  // ends with B
  CHECK(sim::replay_one(t, 0.5).step_time == Approx(202.5e-6));
  // bad events name themselves
  std::string bad = text;
  bad.replace(bad.find("\"dur\": 100"), 10, "\"dur\": -1");
  CHECK_THROWS_WITH(io::parse_pytorch_trace(bad),
                    "traceEvents[1] ('A').dur: must be a non-negative number (got -1)");
  CHECK_THROWS_WITH(io::parse_pytorch_trace(R"({"events": []})"),
                    "trace: a Chrome trace needs \"traceEvents\" (is this a PyTorch profiler "
                    "trace?)");
  CHECK_THROWS_WITH(
      io::parse_pytorch_trace(
          R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})"),
      "traceEvents[0] ('k').args.correlation: missing (a GPU op needs its launch)");
}

TEST_CASE("strata's JSON operation trace: read, write, errors, and a profiled PS step", "[trace]") {
  const std::string text = R"({"ops": [
    {"id": "down w", "stream": "downlink", "kind": "downlink", "start_us": 0, "bytes": 1e6,
     "tensor": "w"},
    {"id": "fwd", "stream": "worker", "kind": "compute", "start_us": 1000, "duration_us": 500000,
     "deps": ["down w"]},
    {"id": "up w", "stream": "uplink", "kind": "uplink", "start_us": 501000, "bytes": 1e6,
     "tensor": "w", "deps": ["fwd"]},
    {"id": "apply w", "stream": "ps", "kind": "ps", "start_us": 502000, "duration_us": 100000,
     "deps": ["up w"]}]})";
  const auto t = io::parse_op_trace(text);
  CHECK(t.ops.size() == 4);
  CHECK(t.ops[2].tensor == "w");
  const auto again = io::parse_op_trace(io::to_json(t).dump());
  CHECK(again.ops[3].deps == std::vector<int>{2});
  // as Li et al.'s profiled step at 1 MB/s: down 1 s, fwd 0.5 s, up 1 s, apply 0.1 s = 2.6 s
  const auto step = sim::to_ps_step(t);
  const auto r = sim::simulate_ps({.steps = {step}, .batch = 16},
                                  {.workers = 1, .bandwidth = 1e6, .steps = 3, .warmup = 1});
  CHECK(r.step_end[0][0] == Approx(2.6));
  CHECK(r.throughput == Approx(16 / 2.6));
  CHECK_THROWS_WITH(io::parse_op_trace(R"({"ops": [{"id": "a", "stream": "worker",
      "duration_us": 1, "deps": ["b"]}, {"id": "b", "stream": "worker", "duration_us": 1}]})"),
                    "ops[0] ('a').deps: 'b' is not an op listed before this one");
  CHECK_THROWS_WITH(io::parse_op_trace(R"({"ops": [{"id": "a", "stream": "uplink"}]})"),
                    "ops[0] ('a').bytes: missing (a transfer needs its size)");
}

TEST_CASE("data parallelism from the sample trace agrees with the closed form", "[trace]") {
  // The traced GPT-2 124M step on 2-64 H100s of DGX H100 nodes (8 per node), fp32 gradients of
  // zoo::gpt2_124m (124,439,808 parameters; the trace's model pads the vocabulary to 50,304:
  // +0.03 %) in DDP's buckets, ring all-reduce: 497.76 MB = 1 MiB (DDP's first bucket) + 18 x 25
  // MiB + 24.85 MB, 20 buckets. Device-bound step (host time 0), no overlap: the simulation is the
  // closed form, one-GPU step + the buckets' all-reduces.
  const auto t =
      io::parse_pytorch_trace(slurp(STRATA_TEST_DATA_DIR "/h100_trace_gpt2-124M_b8.json"));
  const double grad = 4.0 * static_cast<double>(zoo::gpt2_124m().parameters());
  const auto machine = presets::dgx_h100(8);
  const sim::data_parallel_options serial{.overlap = false, .host_scale = 0.0};
  for (int gpus : {1, 2, 4, 8, 16, 32, 64}) {
    const auto a = sim::data_parallel(t, machine, gpus, bytes{grad}, serial);
    CHECK(a.buckets == 20);
    CHECK(a.step_time == Approx(a.closed_form).epsilon(1e-9));
    // overlapping the buckets with the backward pass can only help
    const auto b = sim::data_parallel(t, machine, gpus, bytes{grad}, {.host_scale = 0.0});
    CHECK(b.step_time <= a.step_time * (1 + 1e-12));
    CHECK(b.step_time >= a.step_time - a.all_reduce - 1e-12);
    // the trace's own 148 gradients (497.90 MB: the traced model's vocabulary is 50,304) in
    // DDP's 13 buckets, each all-reduced once its last gradient's AccumulateGrad call ended: the
    // same bytes in fewer all-reduces, so less latency; overlapped, no slower than serial
    const auto c = sim::data_parallel(t, machine, gpus, {.host_scale = 0.0});
    const auto c_serial =
        sim::data_parallel(t, machine, gpus, {.overlap = false, .host_scale = 0.0});
    CHECK(c.buckets == 13);
    CHECK(c.all_reduce <= a.all_reduce * (1 + 4e-4));
    CHECK(c_serial.step_time == Approx(c_serial.closed_form).epsilon(1e-9));
    CHECK(c.step_time <= c_serial.step_time * (1 + 1e-12));
    // with the recorded host time: the all-reduces start no earlier than the host issues them
    const auto d = sim::data_parallel(t, machine, gpus);
    CHECK(d.step_time >= sim::replay_one(t).step_time * (1 - 1e-12));
    strata_test::record("dp_trace",
                        "gpus,buckets,all_reduce_s,closed_form_s,serial_s,overlap_s,trace_buckets,"
                        "trace_all_reduce_s,trace_overlap_s,trace_host_s",
                        gpus, a.buckets, a.all_reduce, a.closed_form, a.step_time, b.step_time,
                        c.buckets, c.all_reduce, c.step_time, d.step_time);
  }
  // 8 GPUs, the trace's 13 buckets: 14 (13 x 5 us + 497,903,616 B / 8 / 450 GB/s) = 2.846 ms
  CHECK(sim::data_parallel(t, machine, 8).all_reduce ==
        Approx(14 * (13 * 5e-6 + 497903616.0 / 8 / 450e9)));
  // 8 GPUs in one node (5 us, 450 GB/s): sum over buckets of 2 (p - 1) (alpha + b / p / B)
  // = 14 (20 x 5 us + 497.76 MB / 8 / 450 GB/s) = 3.336 ms
  CHECK(sim::data_parallel(t, machine, 8, bytes{grad}, serial).all_reduce ==
        Approx(14 * (20 * 5e-6 + grad / 8 / 450e9)));
  // without the small first bucket: 18 buckets of 25 MiB and 25.90 MB
  auto full = serial;
  full.first_bucket_bytes = 0;
  CHECK(sim::data_parallel(t, machine, 8, bytes{grad}, full).buckets == 19);
  CHECK(sim::data_parallel(t, machine, 8, bytes{grad}, full).all_reduce ==
        Approx(14 * (19 * 5e-6 + grad / 8 / 450e9)));
  CHECK(sim::data_parallel(t, machine, 1, bytes{grad}).step_time ==
        Approx(sim::replay_one(t).step_time));
  CHECK_THROWS_WITH(sim::data_parallel(t, machine, 65, bytes{grad}),
                    "data parallelism needs between 1 and the cluster's devices GPUs");
  CHECK_THROWS_WITH(sim::data_parallel(t, machine, 8, bytes{grad}, {.first_bucket_bytes = -1}),
                    "the first bucket's size must be zero (a full bucket) or positive");
  CHECK_THROWS_WITH(
      sim::data_parallel(t, machine, 8, bytes{grad}, {.bucket_bytes = 1}),
      "the gradients would fill more than a million buckets: the bucket is too small");
}

TEST_CASE("the sample trace's gradients: when each became ready, and its bytes", "[trace]") {
  // 148 AccumulateGrad calls on the autograd thread, each with its input's shape (record_shapes):
  // nanoGPT's GPT-2 124M with the vocabulary padded to 50,304, 124,475,904 fp32 parameters
  auto t = io::parse_pytorch_trace(slurp(STRATA_TEST_DATA_DIR "/h100_trace_gpt2-124M_b8.json"));
  REQUIRE(t.gradients.size() == 148);
  double sum = 0;
  for (const auto& g : t.gradients) {
    sum += g.bytes;
    REQUIRE(g.stream >= 0);
    CHECK(t.labels[static_cast<std::size_t>(g.stream)].find("pt_autograd") != std::string::npos);
    CHECK(g.time <= t.span());
  }
  CHECK(sum == 4.0 * 124475904);
  // the first, ln_f's weight (768 x 4 B), 22.40 ms into the traced step: the end of the engine's
  // call (ts 4492932807689.822 + 21.585 us) less the trace's first runtime call
  CHECK(t.gradients.front().bytes == 3072);
  CHECK(t.gradients.front().time == Approx(0.022403).margin(1e-6));
  CHECK(t.gradients.back().bytes == 50304.0 * 768 * 4);  // the tied token embedding, last
  // strata's model of the same network under the plain eager recipe (nn.Linear under bf16
  // autocast: weights before biases) lists the same gradients, tensor by tensor
  auto nanogpt = zoo::gpt2_124m();
  nanogpt.vocabulary = 50304;
  const auto order = sim::ready_gradients(nanogpt, frameworks::pytorch_eager);
  REQUIRE(order.size() == t.gradients.size());
  for (std::size_t i = 0; i < order.size(); ++i) CHECK(order[i] == t.gradients[i].bytes);
  // strata's JSON form keeps them
  const auto again = io::parse_op_trace(io::to_json(t).dump());
  REQUIRE(again.gradients.size() == 148);
  CHECK(again.gradients[5].bytes == t.gradients[5].bytes);
  CHECK(again.gradients[5].time == Approx(t.gradients[5].time));
  CHECK(again.streams[static_cast<std::size_t>(again.gradients[5].stream)] ==
        t.streams[static_cast<std::size_t>(t.gradients[5].stream)]);
  // sizes not recorded: the buckets need them from the caller
  for (auto& g : t.gradients) g.bytes = -1;
  CHECK_THROWS_WITH(sim::data_parallel(t, presets::dgx_h100(8), 8),
                    Catch::Contains("records when gradient 0 became ready but not its size"));
  sim::data_parallel_options o;
  o.gradients = order;
  CHECK(sim::data_parallel(t, presets::dgx_h100(8), 8, o).buckets == 13);
  o.gradients.pop_back();
  CHECK_THROWS_WITH(sim::data_parallel(t, presets::dgx_h100(8), 8, o),
                    "data_parallel_options::gradients lists 147 gradients; the trace records 148");
  t.gradients.clear();
  CHECK_THROWS_WITH(sim::data_parallel(t, presets::dgx_h100(8), 8),
                    Catch::Contains("the trace records no gradients"));
  CHECK_THROWS_WITH(io::parse_pytorch_trace(R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "tid": 1, "ts": 0,
       "dur": 1, "args": {"Input Dims": [[768]], "Input type": ["c10::ComplexFloat"]}}]})"),
                    "traceEvents[0] ('torch::autograd::AccumulateGrad').args.Input type: "
                    "'c10::ComplexFloat' is not a floating-point type strata knows");
  CHECK_THROWS_WITH(io::parse_op_trace(R"({"ops": [{"id": "a", "stream": "cpu 1",
      "duration_us": 1}], "gradients": [{"time_us": 2, "stream": "cpu 2"}]})"),
                    "gradients[0].stream: 'cpu 2' is no op's stream");
}

TEST_CASE("each bucket is all-reduced once its last gradient is ready", "[trace]") {
  // Two backward kernels of 1 ms, then the optimizer's 0.1 ms, launched at 0, 1 and 2 us; a
  // 2 MiB gradient ready at 0.5 us (after k1's launch: it waits for k1), then a 90 MB one at
  // 1.5 us (after k2's). DDP's buckets: the first closes past 1 MiB with the 2 MiB gradient, the
  // second holds the 90 MB. On 2 GPUs of a DGX H100 (5 us, 450 GB/s) a ring all-reduce of b bytes
  // takes 2 (5 us + b / 2 / 450 GB/s): 14.66 us and 210 us. Overlapped: the first runs during
  // k2, the second from k2's end at 2 ms, and the optimizer after it: 2.31 ms.
  const auto t = io::parse_op_trace(R"({"ops": [
    {"id": "l1", "stream": "cpu 0", "kind": "launch", "start_us": 0, "duration_us": 0},
    {"id": "k1", "stream": "gpu 0 stream 7", "kind": "kernel", "duration_us": 1000, "deps": ["l1"]},
    {"id": "l2", "stream": "cpu 0", "kind": "launch", "start_us": 1, "duration_us": 0},
    {"id": "k2", "stream": "gpu 0 stream 7", "kind": "kernel", "duration_us": 1000, "deps": ["l2"]},
    {"id": "l3", "stream": "cpu 0", "kind": "launch", "start_us": 2, "duration_us": 0},
    {"id": "k3", "stream": "gpu 0 stream 7", "kind": "kernel", "duration_us": 100, "deps": ["l3"]}],
    "gradients": [{"time_us": 0.5, "bytes": 2097152, "stream": "cpu 0"},
                  {"time_us": 1.5, "bytes": 90e6, "stream": "cpu 0"}]})");
  const double a1 = 2 * (5e-6 + 2097152 / 2 / 450e9), a2 = 2 * (5e-6 + 90e6 / 2 / 450e9);
  const auto machine = presets::dgx_h100(8);
  const auto r = sim::data_parallel(t, machine, 2, {.host_scale = 0.0});
  CHECK(r.buckets == 2);
  CHECK(r.all_reduce == Approx(a1 + a2));
  CHECK(r.step_time == Approx(2e-3 + a2 + 1e-4));
  // not overlapped: both after the backward pass (k2), one after the other
  const auto s = sim::data_parallel(t, machine, 2, {.overlap = false, .host_scale = 0.0});
  CHECK(s.step_time == Approx(2e-3 + a1 + a2 + 1e-4));
  CHECK(s.step_time == Approx(s.closed_form));
  // a trace that already all-reduces (a DDP step) would count its collectives twice
  auto ddp = t;
  ddp.ops[1].name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  CHECK_THROWS_WITH(sim::data_parallel(ddp, machine, 2),
                    Catch::StartsWith("op 'k1': the trace already runs NCCL collectives"));
  // one bucket for both (the first one as large as the others): issued at 1.5 us, after k2
  const auto one = sim::data_parallel(t, machine, 2, {.first_bucket_bytes = 0, .host_scale = 0.0});
  CHECK(one.buckets == 1);
  CHECK(one.step_time == Approx(2e-3 + 2 * (5e-6 + (2097152 + 90e6) / 2 / 450e9) + 1e-4));
}

TEST_CASE("the order gradients become ready, as post-accumulate-grad hooks saw it", "[trace]") {
  // test/data/gradient_order.csv (tools/measure/gradient_order.py, torch 2.11, H100): nanoGPT's
  // GPT-2 124M (torch.nn.Linear) and transformers' (Conv1D), in fp32 and under bf16 autocast.
  // Only nn.Linear under autocast puts a weight before its bias.
  std::map<std::string, std::vector<double>> measured;  // model, precision, index, bytes, name
  for (const auto& r : csv_rows("gradient_order.csv"))
    measured[r.at(0) + " " + r.at(1)].push_back(std::stod(r.at(3)));
  REQUIRE(measured.size() == 4);
  auto nanogpt = zoo::gpt2_124m();
  nanogpt.vocabulary = 50304;
  auto eager_fp32 = frameworks::pytorch_eager;
  eager_fp32.autocast = false;
  auto hf_fp32 = frameworks::huggingface;
  hf_fp32.autocast = false;
  CHECK(sim::ready_gradients(nanogpt, frameworks::pytorch_eager) ==
        measured["nanogpt-124M bf16-autocast"]);
  CHECK(sim::ready_gradients(nanogpt, eager_fp32) == measured["nanogpt-124M fp32"]);
  CHECK(sim::ready_gradients(zoo::gpt2_124m(), frameworks::huggingface) ==
        measured["hf-gpt2-124M bf16-autocast"]);
  CHECK(sim::ready_gradients(zoo::gpt2_124m(), hf_fp32) == measured["hf-gpt2-124M fp32"]);
  CHECK(measured["nanogpt-124M fp32"] != measured["nanogpt-124M bf16-autocast"]);
}

TEST_CASE("DDP's buckets, as DDP itself reported them on one H200", "[trace]") {
  // test/data/ddp_buckets.csv (tools/measure/ddp_buckets.py, torch 2.11): every parameter's
  // gradient bytes in the order they became ready, and the bucket sizes DDP rebuilt from that
  // order. GPT-2 124M: the first bucket closes past 1 MiB with the last layer's 9.4 MB MLP
  // projection (ln_f 6 kB + c_proj 9.44 MB = 9,446,400 B), then one layer per bucket (28.35 MB >=
  // 25 MiB), the last holding the 154 MB token embedding; Llama-3.2-1B: 65 buckets, mostly one
  // 67 MB MLP matrix each, the last the 1.05 GB embedding.
  struct model_rows {
    std::vector<double> gradients, buckets;
  };
  std::map<std::string, model_rows> m;
  for (const auto& r : csv_rows("ddp_buckets.csv"))  // model, what, index, bytes, name
    (r.at(1) == "gradient" ? m[r.at(0)].gradients : m[r.at(0)].buckets)
        .push_back(std::stod(r.at(3)));
  REQUIRE(m.size() == 2);
  CHECK(m["gpt2-124M"].buckets.size() == 13);
  CHECK(m["gpt2-124M"].buckets.front() == 9446400);
  CHECK(m["llama-3.2-1B"].buckets.size() == 65);
  for (const auto& [model, r] : m) {
    INFO(model);
    CHECK(sim::ddp_buckets(r.gradients) == r.buckets);
  }
  // the same order, tensor by tensor, from strata's own models under the transformers recipe
  const std::pair<std::string, transformer> zoo_models[] = {{"gpt2-124M", zoo::gpt2_124m()},
                                                            {"llama-3.2-1B", zoo::llama3_2_1b()}};
  for (const auto& [name, model] : zoo_models) {
    INFO(name);
    const auto g = sim::ready_gradients(model, frameworks::huggingface);
    CHECK(g == m[name].gradients);
    CHECK(static_cast<double>(g.size()) ==
          lower::parameter_tensors(model, frameworks::huggingface));
    CHECK(sim::ddp_buckets(g) == m[name].buckets);
  }
  CHECK_THROWS_WITH(sim::ready_gradients(zoo::mixtral_8x7b(), frameworks::huggingface),
                    Catch::Contains("the order of an MoE layer's gradients is not modelled"));
  // the traced GPT-2 step with those buckets: 13 all-reduces instead of 20 equal-limit ones;
  // 8 GPUs in one node: 14 (13 x 5 us + 497.76 MB / 8 / 450 GB/s) = 2.846 ms
  const auto t =
      io::parse_pytorch_trace(slurp(STRATA_TEST_DATA_DIR "/h100_trace_gpt2-124M_b8.json"));
  const double grad = 4.0 * static_cast<double>(zoo::gpt2_124m().parameters());
  sim::data_parallel_options o{.overlap = false, .host_scale = 0.0};
  o.gradients = m["gpt2-124M"].gradients;
  const auto d = sim::data_parallel(t, presets::dgx_h100(8), 8, bytes{grad}, o);
  CHECK(d.buckets == 13);
  CHECK(d.all_reduce == Approx(14 * (13 * 5e-6 + grad / 8 / 450e9)));
  CHECK(d.step_time == Approx(d.closed_form).epsilon(1e-9));
  CHECK_THROWS_WITH(sim::data_parallel(t, presets::dgx_h100(8), 8, bytes{grad / 2}, o),
                    Catch::Contains("the parameters' gradients add up to 497759232"));
  CHECK_THROWS_WITH(sim::ddp_buckets({1.0, -1.0}), "a parameter's gradient has a negative size");
}

TEST_CASE("the datasheet lowering of Inception-v3 in IEEE fp32, against an H100", "[trace]") {
  // The CNN lowering in fp32 on the CUDA cores (docs/li.md's Fig. 2 runs it on the V100 profile
  // fitted to DeepBench). test/data/h100_inception_fp32.csv (tools/measure/inception_fp32.py)
  // measures the same network on an H100 with TF32 off: 38.3, 59.6, 110.0 and 211.0 ms at batch
  // 16-128. The same lowering on the H100's datasheet predicts 38.4, 52.6, 101.1 and 196.3 ms:
  // within 12 %, and never above the measurement by more than 0.3 %.
  static constexpr auto net = zoo::inception_v3();
  const auto h100 = datasheet_profile(presets::h100_sxm5_80gb).with_tf32(false);
  int rows = 0;
  for (const auto& r : csv_rows("h100_inception_fp32.csv")) {  // model, batch, arithmetic, ms
    if (r.at(2) != "ieee") continue;
    const int batch = std::stoi(r.at(1));
    const double measured = std::stod(r.at(3)) * 1e-3;
    const double predicted =
        analytic::cnn_step(net.view(), {.batch = batch, .precision = dtype::fp32}, h100).time();
    INFO("batch " << batch << ": " << predicted << " s predicted, " << measured << " measured");
    CHECK(predicted / measured - 1 < 0.003);
    CHECK(predicted / measured - 1 > -0.12);
    ++rows;
  }
  CHECK(rows == 4);
}

TEST_CASE("PS traces from the lowering: whole layers per server, or partitioned", "[trace]") {
  // Inception-v3 (23,834,568 parameters, fp32): 95 convolution / linear groups, each a downlink,
  // forward, backward, uplink and update: 475 ops. Whole layers over two servers by the
  // least-loaded rule (Li et al. §5) split the bytes unevenly; BytePS-style partitioning gives
  // each server exactly half.
  static constexpr auto net = zoo::inception_v3();
  const auto v100 = datasheet_profile(presets::v100_sxm2_16gb);
  auto bytes_on = [](const sim::op_trace& t, int server) {
    double b = 0;
    for (const auto& o : t.ops)
      if (o.kind == "downlink" && o.server == server) b += o.bytes;
    return b;
  };
  const auto one = io::lowered_ps_trace(net.view(), v100, {.batch = 32});
  CHECK(one.ops.size() == 475);
  CHECK(bytes_on(one, 0) == Approx(4.0 * 23'834'568));
  const auto split = io::lowered_ps_trace(net.view(), v100, {.batch = 32, .servers = 2});
  CHECK(bytes_on(split, 0) + bytes_on(split, 1) == Approx(4.0 * 23'834'568));
  CHECK(bytes_on(split, 0) != Approx(bytes_on(split, 1)));
  const auto parts =
      io::lowered_ps_trace(net.view(), v100, {.batch = 32, .servers = 2, .partition = true});
  CHECK(parts.ops.size() == 475 + 3 * 95);  // a second downlink, uplink and update per group
  CHECK(bytes_on(parts, 0) == Approx(2.0 * 23'834'568));
  CHECK(bytes_on(parts, 1) == Approx(2.0 * 23'834'568));
}

TEST_CASE("TensorFlow timeline converter: a two-layer step, worked by hand", "[trace]") {
  // Worker receives conv0/kernel (1 MB) and fc/kernel (2 MB), computes, sends both gradients;
  // the server applies them. At 1 GB/s, one worker: down conv0 0-1 ms, down fc 1-3 ms; conv
  // 1-1.5; fc (waits for its weights) 3-3.3; fc grad 3.3-3.9; up fc 3.9-5.9; conv grad 3.9-4.9;
  // up conv0 (queued behind fc on the uplink) 5.9-6.9; updates 5.9-5.95 and 6.9-6.95 ms.
  const std::string text = R"({"traceEvents": [
    {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Allocators"}},
    {"name": "process_name", "ph": "M", "pid": 1,
     "args": {"name": "/job:worker/replica:0/task:0/device:GPU:0 Compute"}},
    {"name": "process_name", "ph": "M", "pid": 2,
     "args": {"name": "/job:ps/replica:0/task:0/device:CPU:0 Compute"}},
    {"ph": "X", "cat": "Op", "name": "_Recv", "pid": 1, "tid": 0, "ts": 100, "dur": 800,
     "args": {"name": "edge_1_conv0/kernel", "op": "_Recv"}},
    {"ph": "X", "cat": "Op", "name": "_Recv", "pid": 1, "tid": 1, "ts": 100, "dur": 1600,
     "args": {"name": "edge_2_fc/kernel", "op": "_Recv"}},
    {"ph": "X", "cat": "Op", "name": "_Send", "pid": 2, "tid": 0, "ts": 100, "dur": 5,
     "args": {"name": "edge_1_conv0/kernel", "op": "_Send"}},
    {"ph": "X", "cat": "Op", "name": "Conv2D", "pid": 1, "tid": 0, "ts": 1000, "dur": 500,
     "args": {"name": "conv0/Conv2D", "op": "Conv2D", "input0": "images",
              "input1": "edge_1_conv0/kernel:0"}},
    {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 1700, "dur": 300,
     "args": {"name": "fc/MatMul", "op": "MatMul", "input0": "conv0/Conv2D",
              "input1": "edge_2_fc/kernel"}},
    {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 2000, "dur": 600,
     "args": {"name": "gradients/fc/MatMul_grad", "op": "MatMul", "input0": "fc/MatMul"}},
    {"ph": "X", "cat": "Op", "name": "_Send", "pid": 1, "tid": 1, "ts": 2600, "dur": 1000,
     "args": {"name": "edge_3_gradients/fc/kernel_grad", "op": "_Send",
              "input0": "gradients/fc/MatMul_grad"}},
    {"ph": "X", "cat": "Op", "name": "Conv2DBackpropFilter", "pid": 1, "tid": 0, "ts": 2600,
     "dur": 1000, "args": {"name": "gradients/conv0/Conv2D_grad", "op": "Conv2DBackpropFilter",
                           "input0": "^gradients/fc/MatMul_grad"}},
    {"ph": "X", "cat": "Op", "name": "_Send", "pid": 1, "tid": 1, "ts": 3600, "dur": 500,
     "args": {"name": "edge_4_gradients/conv0/kernel_grad", "op": "_Send",
              "input0": "gradients/conv0/Conv2D_grad"}},
    {"ph": "X", "cat": "Op", "name": "ApplyGradientDescent", "pid": 2, "tid": 0, "ts": 3700,
     "dur": 50, "args": {"name": "fc/kernel/ApplyGradientDescent", "op": "ApplyGradientDescent"}},
    {"ph": "X", "cat": "Op", "name": "ApplyGradientDescent", "pid": 2, "tid": 0, "ts": 4200,
     "dur": 50, "args": {"name": "conv0/kernel/ApplyGradientDescent",
                         "op": "ApplyGradientDescent"}}]})";
  const std::vector<std::pair<std::string, double>> sizes{{"conv0/kernel", 1e6},
                                                          {"fc/kernel", 2e6}};
  const auto t = io::parse_tensorflow_timeline(text, sizes);
  REQUIRE(t.ops.size() == 10);  // 8 on the worker, 2 updates; the server's send is dropped
  CHECK(t.ops[0].kind == "downlink");
  CHECK(t.ops[0].bytes == 1e6);
  const auto r = sim::simulate_ps({.steps = {sim::to_ps_step(t)}, .batch = 32},
                                  {.workers = 1, .bandwidth = 1e9, .steps = 1, .warmup = 0});
  CHECK(r.step_end[0][0] == Approx(6.95e-3));
  CHECK_THROWS_WITH(io::parse_tensorflow_timeline(text, {{"conv0/kernel", 1e6}}),
                    "traceEvents[4] ('edge_2_fc/kernel'): a transfer whose size is unknown "
                    "(give its tensor's bytes)");
  // sizes from a file (strata replay-ps --tensorflow): the longest name a node contains wins
  const auto file = io::parse_tensor_sizes(R"({"conv0": 1, "conv0/kernel": 1e6, "fc": 2e6})");
  CHECK(file.front().first == "conv0/kernel");
  CHECK(io::parse_tensorflow_timeline(text, file).ops[0].bytes == 1e6);
  CHECK_THROWS_WITH(io::parse_tensor_sizes("[]"),
                    "sizes: must be a non-empty JSON object of tensor names and their bytes");
  CHECK_THROWS_WITH(io::parse_tensor_sizes(R"({"fc": -1})"),
                    "sizes.fc: must be a number of bytes, >= 0 (got -1)");
}

TEST_CASE("profiled steps split in one pass, dependencies kept within their step") {
  using strata::sim::trace_op;
  // three steps of a worker op and its uplink; each uplink waits for its own step's op
  strata::sim::op_trace t;
  t.streams = {"worker", "uplink"};
  for (int k = 0; k < 3; ++k) {
    const int at = static_cast<int>(t.ops.size());
    t.ops.push_back(trace_op{.id = "fwd" + std::to_string(k),
                             .stream = 0,
                             .start = k * 1.0,
                             .duration = 0.5,
                             .step = k});
    t.ops.push_back(trace_op{.id = "up" + std::to_string(k),
                             .stream = 1,
                             .start = k + 0.5,
                             .bytes = 1e6,
                             .step = k,
                             .deps = {at}});
  }
  const auto steps = strata::sim::to_ps_steps(t);
  REQUIRE(steps.size() == 3);
  for (const auto& s : steps) {
    REQUIRE(s.ops.size() == 2);
    CHECK(s.ops[1].deps == std::vector<int>{0});  // the step's own first op
    CHECK(s.ops[1].bytes == 1e6);
  }
  CHECK(strata::sim::to_ps_step(t, 2).ops[0].id == "fwd2");
  // a dependency across steps, and a step no op names, are named
  auto across = t;
  across.ops[3].deps = {0};
  CHECK_THROWS_WITH(strata::sim::to_ps_steps(across),
                    Catch::Contains("op 'up1': depends on op 'fwd0' of another step"));
  auto gap = t;
  for (auto& o : gap.ops)
    if (o.step == 1) o.step = 2;
  gap.ops[3].deps = {2};
  CHECK_THROWS_WITH(strata::sim::to_ps_steps(gap), Catch::Contains("no ops in step 1"));
}

}  // namespace unit_trace
