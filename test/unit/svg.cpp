// io/svg.hpp: the pictures `strata simulate --svg / --memory-svg` write. The timeline is checked
// on a three-task simulation worked by hand; the memory bars against the closed form they split;
// the 4-stage 1F1B and interleaved schedules against Narayanan et al.'s bubble ordering.
#include <algorithm>
#include <catch2/catch.hpp>
#include <regex>
#include <strata/io/svg.hpp>
#include <strata/sim/transformer.hpp>
#include <strata/strata.hpp>
#include <string>

namespace unit_svg {

using namespace strata;
using namespace strata::literals;

namespace {
int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
// the "idle X %" labels of the compute rows, in rank order
std::vector<double> idle_percent(const std::string& svg) {
  std::vector<double> out;
  const std::regex re("idle ([0-9.]+) %");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1].str()));
  return out;
}
}  // namespace

TEST_CASE("svg: text is escaped", "[svg]") {
  CHECK(io::detail::svg::escape("a<b & \"c\" 'd'>") ==
        "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
}

TEST_CASE("svg: a timeline worked by hand", "[svg]") {
  // forward 0-1 ms on the GPU; a 2 MB send at 1 GB/s, 1-3 ms; backward 3-4 ms. The compute
  // stream idles 2 of 4 ms: 50.0 %. One GiB lives from the forward to the end of the backward.
  sim::simulator g;
  const int gpu = g.add_resource({"stage 0 compute", sim::discipline::fifo, 1, 0, 0});
  const int link =
      g.add_resource({"stage 0 pipeline sends", sim::discipline::fair_share, 1e9, 0, 0});
  const int x = g.add_tensor({"activations", 0, 1024.0 * 1024 * 1024});
  const int f = g.add_task({.name = "forward layer 0 mb 0.0 @0",
                            .resources = {gpu},
                            .work = 1e-3,
                            .device = 0,
                            .produces = {x}});
  const int c = g.add_task({.name = "send activations 0.0 @0",
                            .resources = {link},
                            .work = 2e6,
                            .deps = {f},
                            .cls = sim::task_class::communication,
                            .device = 0});
  g.add_task({.name = "backward layer 0 mb 0.0 @0",
              .resources = {gpu},
              .work = 1e-3,
              .deps = {c},
              .device = 0,
              .consumes = {x}});
  g.set_memory_capacity(0, 2.0 * 1024 * 1024 * 1024);
  const sim::result r = g.run();
  REQUIRE(r.makespan == Approx(4e-3));
  const std::string svg = io::timeline_svg(g, r, {.title = "hand <worked>"});
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("hand &lt;worked&gt;") != std::string::npos);
  CHECK(idle_percent(svg) == std::vector<double>{50.0});
  CHECK(count(svg, "<title>") == 3);  // three blocks
  CHECK(svg.find("<title>forward layer 0 mb 0.0 @0: 0.000-1.000 ms</title>") != std::string::npos);
  CHECK(svg.find("<title>send activations 0.0 @0: 1.000-3.000 ms</title>") != std::string::npos);
  CHECK(svg.find("peak 1.00 GiB") != std::string::npos);
  CHECK(svg.find("of 2.0 GiB") != std::string::npos);
  CHECK(svg.find(">pipeline send</text>") != std::string::npos);  // legend
  CHECK(svg.find("iteration 4.00 ms") != std::string::npos);
}

TEST_CASE("svg: one micro-batch's layers are one block", "[svg]") {
  sim::simulator g;
  const int gpu = g.add_resource({"compute", sim::discipline::fifo, 1, 0, 0});
  int prev = g.add_task({.name = "forward layer 0 mb 3.1 @0", .resources = {gpu}, .work = 1e-3});
  prev = g.add_task(
      {.name = "forward layer 1 mb 3.1 @0", .resources = {gpu}, .work = 1e-3, .deps = {prev}});
  g.add_task(
      {.name = "forward layer 0 mb 4.1 @0", .resources = {gpu}, .work = 1e-3, .deps = {prev}});
  const std::string svg = io::timeline_svg(g, g.run());
  CHECK(count(svg, "<title>") == 2);
  CHECK(svg.find("<title>forward 3.1 @0: 0.000-2.000 ms</title>") != std::string::npos);
  CHECK(svg.find("#9db8e3") != std::string::npos);  // chunk 1: the light shade
  CHECK(idle_percent(svg) == std::vector<double>{0.0});
}

TEST_CASE("svg: ParaDL's pipeline names number their blocks too", "[svg]") {
  // sim/paradl.hpp names a stage's tasks "forward mb 7", "backward mb 7", "weight update"
  sim::simulator g;
  const int gpu = g.add_resource({"compute", sim::discipline::fifo, 1, 0, 0});
  const int f = g.add_task({.name = "forward mb 7", .resources = {gpu}, .work = 1e-3});
  const int b =
      g.add_task({.name = "backward mb 7", .resources = {gpu}, .work = 2e-3, .deps = {f}});
  g.add_task({.name = "weight update", .resources = {gpu}, .work = 1e-3, .deps = {b}});
  const std::string svg = io::timeline_svg(g, g.run());
  CHECK(count(svg, "fill=\"#ffffff\">7</text>") == 2);  // on the forward and the backward
  CHECK(svg.find("<title>weight update: 3.000-4.000 ms</title>") != std::string::npos);
  CHECK(svg.find(">optimizer step</text>") != std::string::npos);
}

TEST_CASE("svg: nothing to draw is an error", "[svg]") {
  sim::simulator g;
  CHECK_THROWS_WITH(io::timeline_svg(g, g.run()),
                    Catch::Contains("takes no time, so there is nothing to draw"));
  CHECK_THROWS_WITH(io::memory_bars_svg({}, 80e9), Catch::Contains("no bar to draw"));
  CHECK_THROWS_WITH(io::memory_bars_svg({{"stage 0", {{"weights", -1.0}}, -1}}, 80e9),
                    Catch::Contains("'stage 0' part 'weights' must be a finite"));
}

TEST_CASE("svg: memory bars split the closed form's stage memory", "[svg]") {
  // Llama-3 8B, p = 4, d = 2 (docs/examples/llama3_8b_1f1b.json). Stage 0 holds 8 layers of
  // 218,112,000 parameters (q, o 4096^2 each; k, v 4096 x 1024 each; SwiGLU 3 x 4096 x 14336;
  // two norms) and the 128,256 x 4096 embedding: 2,270,232,576 parameters, 2 bytes each in bf16.
  const transformer m = zoo::llama3_8b();
  const parallel::nd s{.pipeline = {.degree = 4}, .data = {.degree = 2}, .micro_batch = 1};
  const training tr{.batch = 16, .sequence = 4096};
  const auto bars = io::stage_memory_bars(m, s, tr);
  REQUIRE(bars.size() == 4);
  CHECK(bars[0].parts[0].first == "weights");
  CHECK(bars[0].parts[0].second == Approx(2.0 * 2'270'232'576));
  double largest = 0;
  for (int i = 0; i < 4; ++i) {
    double sum = 0;
    for (const auto& [name, bytes] : bars[static_cast<std::size_t>(i)].parts) sum += bytes;
    CHECK(sum == Approx(analytic::stage_memory(m, s, tr, i).total().count()).epsilon(1e-12));
    largest = std::max(largest, sum);
  }
  CHECK(largest == Approx(analytic::peak_stage_memory(m, s, tr).total().count()).epsilon(1e-12));
  const std::string svg = io::memory_bars_svg(bars, 80e9, "Llama-3 8B", "simulated peak");
  CHECK(svg.find("device capacity 74.5 GiB") != std::string::npos);  // 80e9 bytes
  CHECK(svg.find(">stage 3</text>") != std::string::npos);
}

TEST_CASE("svg: 4 stages, interleaving shrinks the bubble it draws", "[svg]") {
  // Narayanan et al. (SC'21) §2.2: the bubble is (p - 1) / m of the ideal time for 1F1B and
  // (p - 1) / (v m) interleaved; with p = 4 and m = 8 the first stage idles less with v = 2.
  const transformer m = zoo::llama3_8b();
  const cluster c = presets::dgx_h100(1);
  const device_profile prof = datasheet_profile(c.dev, h100_fitted_gemm);
  const training tr{.batch = 16, .sequence = 4096};
  auto idle = [&](int v) {
    const parallel::nd s{.pipeline = {.degree = 4,
                                      .virtual_stages = v,
                                      .kind = v > 1 ? parallel::schedule::interleaved
                                                    : parallel::schedule::one_f_one_b},
                         .data = {.degree = 2},
                         .micro_batch = 1};
    const auto run = sim::simulate(m, s, c, tr, prof);
    const auto p = idle_percent(io::timeline_svg(run.graph, run.run));
    REQUIRE(p.size() == 4);
    return p;
  };
  const auto one = idle(1), two = idle(2);
  for (int i = 0; i < 4; ++i) {
    CHECK(one[static_cast<std::size_t>(i)] > 0);
    CHECK(two[static_cast<std::size_t>(i)] < one[static_cast<std::size_t>(i)]);
  }
}

}  // namespace unit_svg
