// The fuzz targets' entry points (issue 13), shared by the libFuzzer program (fuzz.cpp, one for
// every target, clang -fsanitize=fuzzer,address,undefined) and by the regression runner that
// replays every saved input with the normal compilers (ctest: fuzz_regression_*).
//
// Each function feeds the input to one reader and everything behind it. An invalid input must
// end in strata::plan_error; any other exception, a crash, a hang or undefined behaviour is a
// finding: the input goes to test/fuzz/regressions/<target>/ once fixed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shipped_profiles.hpp"
#include "strata/calibrate/kernel_fit.hpp"
#include "strata/calibrate/readers.hpp"
#include "strata/calibrate/step_fit.hpp"
#include "strata/io/evaluate.hpp"
#include "strata/io/lin_trace.hpp"
#include "strata/io/op_trace.hpp"
#include "strata/io/scenario.hpp"
#include "strata/io/simulate.hpp"
#include "strata/io/transformer_request.hpp"
#include "strata/sim/lin.hpp"
#include "strata/sim/paradl.hpp"

namespace strata_fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Scenario JSON -> report (closed form; with a trailing 's' in the last byte also one simulated
/// iteration). Parameter-server searches stop after 0.2 s.
inline int scenario(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return -1;
  try {
    strata::io::scenario s = strata::io::parse_scenario_text(text(data, size));
    int calls = 0;  // outlives the search that counts
    if (s.ps && s.ps->search) s.ps->space.progress = [&calls](double) { return ++calls < 50; };
    const nlohmann::json j = strata::io::report_json(s);
    (void)j.dump();
    if (!s.ps) {
      (void)strata::io::report_table(s);
      if (size > 0 && data[size - 1] == 's') {
        const auto run = strata::sim::simulate(s.layers, s.strategy, s.machine, s.setup,
                                               {.overlap = true, .buckets = 3});
        (void)run.iteration;
      }
    }
  } catch (const strata::plan_error&) {
  }
  return 0;
}

/// Transformer scenario JSON -> closed-form report and table (every recipe and policy check on
/// the way; searches are parsed, not run).
inline int transformer(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return -1;
  try {
    const auto q =
        strata::io::parse_transformer_request(strata::io::detail::parse_json(text(data, size)));
    if (q.scenario.search) return 0;
    (void)strata::io::transformer_request_json(q).dump();
    (void)strata::io::transformer_request_table(q);
  } catch (const strata::plan_error&) {
  }
  return 0;
}

namespace detail {
/// Whether every number in `j` lies within [-limit, limit] (a small plan: cheap to simulate).
inline bool small_numbers(const nlohmann::json& j, double limit) {
  if (j.is_number()) return j.get<double>() >= -limit && j.get<double>() <= limit;
  if (j.is_structured())
    for (const auto& v : j)
      if (!small_numbers(v, limit)) return false;
  return true;
}
}  // namespace detail

/// Any scenario through the front door the CLI, Python and strata-mpi share (issue 39): every
/// family (ParaDL, transformer plans and searches, DLRM, single-GPU steps, parameter servers,
/// Hugging Face configs and device files given inline) through `io::evaluate_scenario`, as JSON,
/// a table or CSV (the first byte picks); searches stop after 50 progress reports. With a
/// trailing 's', `io::simulate_scenario` with overlap and the timeline (strategy trees and
/// transformer plans included), for scenarios whose numbers are all at most 1024 (a bound on
/// the work of one input under the sanitizers).
inline int front_door(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > (1u << 20)) return -1;
  const bool simulate = data[size - 1] == 's';
  try {
    const nlohmann::json j = strata::io::detail::parse_json(text(data, simulate ? size - 1 : size));
    if (simulate) {
      if (!detail::small_numbers(j, 1024)) return -1;
      strata::io::simulate_request req;
      req.overlap = req.trace = true;
      const auto r = strata::io::simulate_scenario(j, req, strata_cli::h100_sxm_profile);
      (void)r.report.dump();
      (void)r.trace.dump();
      return 0;
    }
    int calls = 0;
    strata::io::evaluate_request req{.format = static_cast<strata::io::report_format>(data[0] % 3),
                                     .progress = [&calls](double) { return ++calls < 50; }};
    const auto r = strata::io::evaluate_scenario(j, req, strata_cli::h100_sxm_profile);
    (void)r.report.dump();
  } catch (const strata::plan_error&) {
  }
  return 0;
}

/// Lin et al.'s per-rank trace -> replay -> report and timeline.
inline int lin_trace(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return -1;
  try {
    const auto r = strata::sim::replay(strata::io::parse_lin_trace(text(data, size)));
    (void)strata::io::to_json(r).dump();
    (void)strata::io::chrome_trace(r).dump();
  } catch (const strata::plan_error&) {
  }
  return 0;
}

/// nccl-tests output -> measurements.
inline int nccl_tests(const std::uint8_t* data, std::size_t size) {
  try {
    std::istringstream in{std::string(text(data, size))};
    const auto run = strata::calibrate::read_nccl_tests(in);
    (void)run.out_of_place.size();
  } catch (const strata::plan_error&) {
  }
  return 0;
}

/// CSV readers: the first byte picks collective measurements, whole steps, or the three kernel
/// tables (the rest of the input split at form feeds) for a profile fit.
inline int csv(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > (1u << 18)) return -1;
  const std::string rest(text(data + 1, size - 1));
  try {
    switch (data[0] % 3) {
      case 0: {
        std::istringstream in(rest);
        const auto t = strata::calibrate::read_csv(in);
        (void)strata::calibrate::measurements_from_csv(t, strata::comm::collective::all_reduce, 8,
                                                       [](const auto&) { return true; });
        break;
      }
      case 1: {
        std::istringstream in(rest);
        const auto steps = strata::calibrate::read_steps(in);
        (void)steps.size();
        break;
      }
      default: {
        std::string part[3];
        std::size_t k = 0;
        for (char c : rest) {
          if (c == '\f' && k < 2)
            ++k;
          else
            part[k] += c;
        }
        std::istringstream g(part[0]), m(part[1]), a(part[2]);
        (void)strata::calibrate::fit_profile(strata::presets::h100_sxm5_80gb, 132, g, m, a);
      }
    }
  } catch (const strata::plan_error&) {
  }
  return 0;
}

/// Operation traces (issue 16): a TensorFlow timeline when the last byte is 't' (every transfer
/// 1 MB), a PyTorch profiler trace when the input names "traceEvents", else strata's JSON form ->
/// the JSON form again, the replay on one GPU, data parallelism from the trace's gradients, and
/// Li et al.'s simulation of its first profiled step on two workers.
inline int op_trace(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 16)) return -1;
  try {
    const std::string_view in = text(data, size);
    strata::sim::op_trace t;
    if (size > 0 && data[size - 1] == 't')
      t = strata::io::parse_tensorflow_timeline(in.substr(0, size - 1), {{"", 1e6}});
    else if (in.find("traceEvents") != std::string_view::npos)
      t = strata::io::parse_pytorch_trace(in);
    else
      t = strata::io::parse_op_trace(in);
    (void)strata::io::to_json(t).dump();
    (void)strata::sim::replay_one(t);
    if (!t.gradients.empty()) (void)strata::sim::data_parallel(t, strata::presets::dgx_h100(1), 8);
    const auto step = strata::sim::to_ps_step(t, t.ops.front().step);
    (void)strata::sim::simulate_ps({.steps = {step}, .batch = 1},
                                   {.workers = 2, .steps = 3, .warmup = 1});
  } catch (const strata::plan_error&) {
  }
  return 0;
}

inline constexpr const char* target_names =
    "scenario, transformer, lin_trace, nccl_tests, csv, op_trace, front_door";

/// The target named `name` (one of `target_names`), or nullptr.
inline auto named(std::string_view name) -> int (*)(const std::uint8_t*, std::size_t) {
  if (name == "scenario") return scenario;
  if (name == "transformer") return transformer;
  if (name == "lin_trace") return lin_trace;
  if (name == "nccl_tests") return nccl_tests;
  if (name == "csv") return csv;
  if (name == "op_trace") return op_trace;
  if (name == "front_door") return front_door;
  return nullptr;
}

}  // namespace strata_fuzz
