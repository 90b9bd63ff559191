// The input readers and checks against their documented limits (issue 39): wall time and peak
// heap of one run at three input sizes up to each limit, printed as a Markdown table for
// docs/benchmarks.md. What each run does is what the command line does with the same input:
// - a PyTorch profiler trace (`strata replay-ps --pytorch`): read, turned into operations and
//   replayed on one GPU; sizes up to the 200 MB the limits table names (copies of the measured
//   GPT-2 step, test/data/h100_trace_gpt2-124M_b8.json, one after another);
// - a strategy tree (`strata simulate` of a `strategy_tree` scenario): read, expanded and
//   checked up to 2^20 leaves (a model of 2^20 - 2 blocks), and also compiled and simulated up
//   to the 4 million operations a simulation may hold;
// - a transformer plan simulated (`strata simulate`) up to the 4 million tasks a simulation may
//   hold, and with its timeline (`--trace`) up to the 250,000 events a timeline may hold.
// Peak heap is counted by this program's operator new (the bytes live at the worst moment,
// input text included). Linear means: time and memory per unit of input about constant.
// Usage: bench_readers [SOURCE_DIR]
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/io/op_trace.hpp"
#include "strata/io/simulate.hpp"
#include "strata/sim/op_trace.hpp"

namespace {
std::size_t live = 0, peak = 0;
}  // namespace

// None is inlined: GCC 12 would see `malloc` and `free` meet `operator new` and `delete` in a
// caller and warn (-Wmismatched-new-delete), wrongly, since both are replaced here.
[[gnu::noinline]] void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  live += malloc_usable_size(p);
  if (live > peak) peak = live;
  return p;
}
[[gnu::noinline]] void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  live -= malloc_usable_size(p);
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace {

using json = nlohmann::json;

struct row {
  std::string what;
  double units;
  std::string unit;
};

// Runs `f` once; prints the time, the peak heap above what was live before, and both per unit.
void measure(const row& r, const std::function<void()>& f) {
  const std::size_t base = live;
  peak = live;
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double mb = static_cast<double>(peak - base) / 1e6;
  std::printf("| %s | %.0f %s | %.3f | %.1f | %.3g | %.3g |\n", r.what.c_str(), r.units,
              r.unit.c_str(), s, mb, 1e6 * s / r.units, 1e3 * mb / r.units);
  std::fflush(stdout);
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `copies` copies of a measured step, each shifted past the previous one in time and in its
// correlation and external ids.
std::string repeated_trace(const json& step, int copies) {
  const json& ev = step["traceEvents"];
  double t0 = 1e300, t1 = 0;
  long long ids = 0;
  for (const auto& e : ev) {
    if (e.contains("ts") && e["ts"].is_number()) {
      const double ts = e["ts"].get<double>();
      t0 = std::min(t0, ts);
      t1 = std::max(t1, ts + (e.contains("dur") ? e["dur"].get<double>() : 0.0));
    }
    if (e.contains("args"))
      for (const char* k : {"correlation", "External id"})
        if (e["args"].contains(k) && e["args"][k].is_number_integer())
          ids = std::max(ids, e["args"][k].get<long long>());
  }
  json out = step;
  json& all = out["traceEvents"];
  all = json::array();
  for (int c = 0; c < copies; ++c)
    for (json e : ev) {
      if (e.contains("ts") && e["ts"].is_number())
        e["ts"] = e["ts"].get<double>() + c * (t1 - t0 + 10.0);
      if (e.contains("args"))
        for (const char* k : {"correlation", "External id"})
          if (e["args"].contains(k) && e["args"][k].is_number_integer())
            e["args"][k] = e["args"][k].get<long long>() + c * (ids + 1);
      all.push_back(std::move(e));
    }
  return out.dump();
}

// A strategy tree over a model of `blocks` blocks: every leaf (the embedding, each block, the
// head) on device 0.
std::string deep_tree(int blocks) {
  return json{{"model",
               {{"name", "deep"},
                {"layers", blocks},
                {"hidden", 256},
                {"heads", 4},
                {"ffn", 1024},
                {"vocabulary", 1000},
                {"sequence", 128}}},
              {"cluster", "hc2"},
              {"training", {{"batch", 8}, {"precision", "fp32"}, {"flash_attention", false}}},
              {"strategy_tree",
               {{"name", "deep"},
                {"children",
                 json::array({{{"name", "embedding"}, {"module", "embedding"}, {"devices", {0}}},
                              {{"name", "h"},
                               {"module", "blocks"},
                               {"first", 0},
                               {"count", blocks},
                               {"devices", {0}}},
                              {{"name", "head"}, {"module", "head"}, {"devices", {0}}}})}}}}
      .dump();
}

// GPT-3 175B on 1024 A100s (SC'21's plan, test/cli/good/gpt3_175b.json) at global batch `batch`:
// about 26 tasks per sequence.
std::string gpt3(int batch) {
  return json{
      {"model", "gpt3-175b"},
      {"cluster", {{"preset", "dgx-a100"}, {"devices", 1024}}},
      {"parallel",
       {{"tensor", 8},
        {"pipeline", 8},
        {"virtual_stages", 2},
        {"data", 16},
        {"recompute", "full"},
        {"micro_batch", 1}}},
      {"training",
       {{"batch", batch}, {"sequence", 2048}, {"precision", "fp16"}, {"flash_attention", false}}}}
      .dump();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string src = argc > 1 ? argv[1] : STRATA_SOURCE_DIR;
  std::printf("| input | size | time (s) | peak heap (MB) | us per unit | KB per unit |\n");
  std::printf("|---|---|---|---|---|---|\n");
  try {
    const json step = json::parse(read(src + "/test/data/h100_trace_gpt2-124M_b8.json"));
    for (const int copies : {1, 10, 75}) {
      const std::string text = repeated_trace(step, copies);
      measure({"PyTorch trace, read and replayed", static_cast<double>(text.size()) / 1e6, "MB"},
              [&] {
                const auto t = strata::io::parse_pytorch_trace(text);
                const auto r = strata::sim::replay_one(t);
                if (!(r.step_time > 0)) throw std::runtime_error("no step");
              });
    }
    for (const int blocks : {(1 << 14) - 2, (1 << 17) - 2, (1 << 20) - 2}) {
      const std::string text = deep_tree(blocks);
      measure({"strategy tree, read, expanded and checked", blocks + 2.0, "leaves"}, [&] {
        const auto sc = strata::io::parse_proteus_scenario(json::parse(text));
        if (sc.tree.device_count() != 1) throw std::runtime_error("not one device");
      });
    }
    // compiled and simulated too: the graph's estimate counts 4 operations per leaf and device
    // (it builds 2 here), so the 4 million operations a simulation may hold admit 10^6 leaves
    for (const int blocks : {(1 << 14) - 2, (1 << 17) - 2, 1000000 - 2}) {
      const std::string text = deep_tree(blocks);
      measure({"strategy tree, also compiled and simulated", blocks + 2.0, "leaves"}, [&] {
        const auto r = strata::io::simulate_scenario(json::parse(text), {}, {});
        if (!(r.report["iteration_time_s"].get<double>() > 0)) throw std::runtime_error("no run");
      });
    }
    constexpr int plain[] = {15360, 49152, 153600}, timeline[] = {1536, 3840, 9216};
    for (const bool trace : {false, true})
      for (const int batch : trace ? timeline : plain) {
        const std::string text = gpt3(batch);
        // the task count first (not measured), then the run
        const double tasks =
            strata::io::simulate_scenario(json::parse(text), {}, {}).report["tasks"].get<double>();
        strata::io::simulate_request req;
        req.trace = trace;
        measure(
            {trace ? "transformer plan simulated, with its timeline" : "transformer plan simulated",
             tasks, "tasks"},
            [&] {
              const auto r = strata::io::simulate_scenario(json::parse(text), req, {});
              if (trace && r.trace.dump().empty()) throw std::runtime_error("no trace");
            });
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_readers: %s\n", e.what());
    return 1;
  }
  return 0;
}
