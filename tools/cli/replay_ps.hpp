#pragma once
// strata replay-ps: Li et al.'s asynchronous parameter-server simulator (Algorithm 3.1) over an
// operation trace of one worker, or the one-GPU replay of a PyTorch profiler trace
// (docs/cli.md, "replay-ps"; docs/li.md).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "shipped_profiles.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/io/op_trace.hpp"
#include "strata/io/profile.hpp"
#include "strata/model/zoo.hpp"

namespace strata_cli {

struct replay_ps_options {
  std::string input, model, order = "as_scheduled", timeline, save_trace, tensorflow;
  bool pytorch = false, no_flow_control = false, parse_on_worker = false, synchronous = false,
       partition = false;
  int workers = 10, servers = 1, batch = 32, steps = 100, warmup = 10, profiled = 20;
  double bandwidth_gbps = 10, window_mb = 28, alpha_ns = 1, beta_us = 100, variation = 0.05;
  double gradient_mb = 0;  ///< --pytorch: predict data parallelism on DGX H100 nodes
  unsigned long long seed = 1;
};

inline CLI::App* add_replay_ps(CLI::App& app, replay_ps_options& o) {
  auto* c = app.add_subcommand(
      "replay-ps", "predict asynchronous parameter-server training from one worker's trace (Li)");
  c->add_option("trace", o.input, "operation trace JSON (or a PyTorch trace with --pytorch), - ");
  c->add_flag("--pytorch", o.pytorch,
              "the input is a PyTorch profiler trace: replay it on one GPU");
  c->add_option("--tensorflow", o.tensorflow,
                "the input is a TensorFlow step timeline; SIZES.json gives its tensors' bytes");
  c->add_option("--model", o.model, "generate the worker's trace from strata's lowering instead")
      ->check(CLI::IsMember({"inception_v3", "resnet50", "vgg16"}));
  c->add_option("--batch", o.batch, "examples per step (and the lowering's batch)")
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--servers", o.servers, "parameter servers (with --model)")
      ->check(CLI::Range(1, 64));
  c->add_option("--workers", o.workers, "predict 1..N workers")->check(CLI::Range(1, 256));
  c->add_option("--bandwidth-gbps", o.bandwidth_gbps, "every NIC, each direction (Gb/s)")
      ->check(CLI::Range(1e-3, 1e5));
  c->add_option("--window-mb", o.window_mb, "HTTP/2 flow-control window WIN (MB)")
      ->check(CLI::Range(1e-3, 1e6));
  c->add_flag("--no-flow-control", o.no_flow_control, "whole streams in queue order (§3.3)");
  c->add_option("--order", o.order, "downlink order")
      ->check(CLI::IsMember({"as_scheduled", "tictac", "reverse", "random"}));
  c->add_option("--alpha-ns", o.alpha_ns, "parsing overhead per byte (ns)")
      ->check(CLI::Range(0.0, 1e6));
  c->add_option("--beta-us", o.beta_us, "parsing overhead per message (us)")
      ->check(CLI::Range(0.0, 1e6));
  c->add_flag("--parse-on-worker", o.parse_on_worker,
              "parse downlinks on WORKER (CPU workers) rather than the worker's host CPU");
  c->add_option("--steps", o.steps, "steps per worker")->check(CLI::Range(2, 100000));
  c->add_option("--warmup", o.warmup, "steps per worker left out")->check(CLI::Range(0, 100000));
  c->add_option("--profiled-steps", o.profiled, "steps generated with --model")
      ->check(CLI::Range(1, 1000));
  c->add_option("--variation", o.variation, "step-to-step variation with --model")
      ->check(CLI::Range(0.0, 0.9));
  // CLI11 reads "-1" and 2^64 into an unsigned by wrapping: take only what fits
  c->add_option("--seed", o.seed, "sampling seed, an integer in [0, 2^64)")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            unsigned long long v = 0;
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            return ec == std::errc{} && end == s.data() + s.size()
                       ? ""
                       : "must be an integer in [0, 2^64) (got " + s + ")";
          },
          "UINT64"));
  c->add_flag("--synchronous", o.synchronous, "a step waits for every worker's previous step");
  c->add_flag("--partition", o.partition,
              "with --model: cut every layer over all servers (BytePS-style)");
  c->add_option("--gradient-mb", o.gradient_mb,
                "with --pytorch: gradient size (MB), ready evenly over the backward pass; by "
                "default the trace's own gradients (AccumulateGrad calls)")
      ->check(CLI::Range(1e-3, 1e9));
  c->add_option("--trace", o.timeline, "write the N-worker synthetic trace (Perfetto)");
  c->add_option("--save-trace", o.save_trace, "write the worker's operation trace (JSON)");
  return c;
}

/// Refuses what a run would not use: options of the other mode (the parameter-server simulation
/// or `--pytorch`'s one-GPU replay), `--model`'s options without it, a trace file beside
/// `--model`, and NaN (CLI11's range checks pass it).
inline void check_replay_ps(const CLI::App& c, const replay_ps_options& o) {
  using strata::plan_error;
  for (const auto& [flag, v] : {std::pair{"--bandwidth-gbps", o.bandwidth_gbps},
                                {"--window-mb", o.window_mb},
                                {"--alpha-ns", o.alpha_ns},
                                {"--beta-us", o.beta_us},
                                {"--variation", o.variation},
                                {"--gradient-mb", o.gradient_mb}})
    if (std::isnan(v)) throw plan_error(std::string(flag) + ": must be a number");
  auto given = [&](const char* flag) { return c.count(flag) > 0; };
  if (o.pytorch) {
    for (const char* f : {"--model", "--batch", "--servers", "--workers", "--bandwidth-gbps",
                          "--window-mb", "--no-flow-control", "--order", "--alpha-ns", "--beta-us",
                          "--parse-on-worker", "--steps", "--warmup", "--profiled-steps",
                          "--variation", "--seed", "--synchronous", "--partition", "--tensorflow"})
      if (given(f))
        throw plan_error(std::string(f) +
                         ": sets the parameter-server simulation; --pytorch replays the trace "
                         "on one GPU");
    return;
  }
  if (given("--gradient-mb")) throw plan_error("--gradient-mb: applies with --pytorch only");
  if (o.model.empty()) {
    for (const char* f : {"--servers", "--partition", "--profiled-steps", "--variation"})
      if (given(f))
        throw plan_error(std::string(f) +
                         ": shapes the trace --model generates; a trace file "
                         "brings its own");
  } else if (!o.input.empty()) {
    throw plan_error("trace: --model generates the worker's trace; give a trace file or --model");
  } else if (given("--tensorflow")) {
    throw plan_error("--tensorflow: reads a TensorFlow timeline; --model generates the trace");
  }
}

/// The report; `timeline` receives the synthetic trace of the largest worker count.
inline nlohmann::json run_replay_ps(const replay_ps_options& o, const std::string& text,
                                    nlohmann::json* timeline, nlohmann::json* saved,
                                    const std::string& sizes = "") {
  using namespace strata;
  if (o.pytorch) {
    // the one-GPU replay makes no multi-worker timeline and keeps the trace it was given
    if (timeline || saved)
      throw plan_error(std::string(timeline ? "--trace" : "--save-trace") +
                       ": --pytorch replays the trace on one GPU; there is no worker timeline "
                       "to write (the trace it read is the profiler's own)");
    const auto t = io::parse_pytorch_trace(text);
    const auto r = sim::replay_one(t);
    // data parallelism: with the gradients the trace records (ready at their AccumulateGrad
    // calls), or --gradient-mb of them ready evenly over the backward pass
    nlohmann::json dp = nlohmann::json::array();
    bool from_trace = o.gradient_mb == 0 && !t.gradients.empty();
    for (const auto& g : t.gradients) from_trace = from_trace && g.bytes >= 0;  // sizes recorded
    if (o.gradient_mb > 0 || from_trace)
      for (int g : {2, 4, 8, 16, 32, 64}) {
        auto predict = [&](double host) {
          const sim::data_parallel_options dpo{.host_scale = host};
          return from_trace ? sim::data_parallel(t, presets::dgx_h100(8), g, dpo)
                            : sim::data_parallel(t, presets::dgx_h100(8), g,
                                                 bytes{o.gradient_mb * 1e6}, dpo);
        };
        const auto d = predict(1.0), fast = predict(0.0);
        dp.push_back({{"gpus", g},
                      {"buckets", d.buckets},
                      {"step_time_s", d.step_time},
                      {"device_bound_step_s", fast.step_time},
                      {"closed_form_no_overlap_s", d.closed_form},
                      {"all_reduce_s", d.all_reduce}});
      }
    double gradient_bytes = 0;
    for (const auto& g : t.gradients) gradient_bytes += std::max(0.0, g.bytes);
    return {{"ops", t.ops.size()},
            {"data_parallel", dp},
            {"gradients", t.gradients.size()},
            {"gradient_bytes", gradient_bytes},
            {"streams", t.streams},
            {"traced_step_s", t.span()},
            {"replayed_step_s", r.step_time},
            {"device_bound_step_s", sim::replay_one(t, 0.0).step_time},
            {"gpu_busy_s", r.gpu_busy},
            {"peak_memory_bytes", t.peak_memory()}};
  }
  sim::op_trace t;
  if (!o.model.empty()) {
    static constexpr auto inception = zoo::inception_v3();
    static constexpr auto resnet = zoo::resnet50();
    static constexpr auto vgg = zoo::vgg16();
    const auto layers = o.model == "inception_v3" ? inception.view()
                        : o.model == "resnet50"   ? resnet.view()
                                                  : vgg.view();
    t = io::lowered_ps_trace(layers, io::profile_from_text(v100_sxm2_profile).profile,
                             {.batch = o.batch,
                              .servers = o.servers,
                              .partition = o.partition,
                              .steps = o.profiled,
                              .variation = o.variation},
                             o.bandwidth_gbps * 1.25e8);
  } else if (!o.tensorflow.empty()) {
    t = io::parse_tensorflow_timeline(text, io::parse_tensor_sizes(sizes));
  } else {
    t = io::parse_op_trace(text);
  }
  if (saved != nullptr) *saved = io::to_json(t);
  int servers = 1;
  for (const auto& op : t.ops) servers = std::max(servers, op.server + 1);
  const auto job = io::to_ps_job(t, o.batch, servers);
  if (o.warmup >= o.steps) throw plan_error("--warmup: must be smaller than --steps");
  std::size_t largest = 0;
  for (const auto& st : job.steps) largest = std::max(largest, st.ops.size());
  // every worker count from 1 to N is simulated: w x steps x ops tasks each, N (N + 1) / 2
  // worker-runs in all
  const double runs = 0.5 * o.workers * (o.workers + 1.0);
  const double tasks = runs * o.steps * static_cast<double>(largest);
  if (tasks > 4e6)
    throw plan_error("--steps: the simulations of 1 to " + std::to_string(o.workers) +
                     " workers would need about " + std::to_string(static_cast<long long>(tasks)) +
                     " tasks (at most 4 million in all: fewer workers or steps)");
  sim::ps_config c{.bandwidth = o.bandwidth_gbps * 1.25e8,
                   .flow_control = !o.no_flow_control,
                   .window = o.window_mb * 1e6,
                   .order = o.order == "tictac"    ? sim::ps_order::tictac
                            : o.order == "reverse" ? sim::ps_order::reverse
                            : o.order == "random"  ? sim::ps_order::random
                                                   : sim::ps_order::as_scheduled,
                   .alpha = o.alpha_ns * 1e-9,
                   .beta = o.beta_us * 1e-6,
                   .parse_on_host = !o.parse_on_worker,
                   .synchronous = o.synchronous,
                   .steps = o.steps,
                   .warmup = o.warmup,
                   .seed = o.seed};
  nlohmann::json rows = nlohmann::json::array();
  for (int w = 1; w <= o.workers; ++w) {
    c.workers = w;
    c.timeline = timeline != nullptr && w == o.workers;
    const auto r = sim::simulate_ps(job, c);
    rows.push_back(
        {{"workers", w}, {"throughput_per_s", r.throughput}, {"step_time_s", r.step_time}});
    if (c.timeline) *timeline = io::chrome_trace(job, r);
  }
  return {{"profiled_steps", job.steps.size()},
          {"ops_per_step", job.steps[0].ops.size()},
          {"servers", servers},
          {"predictions", rows}};
}

}  // namespace strata_cli
