// Search beyond one loop: Pareto fronts and cost (search/pareto.hpp), a sweep split into parts
// and merged (what strata-mpi's ranks do), and batch evaluation (search/batch.hpp) against the
// scalar closed form, plan by plan.
#include <algorithm>
#include <catch2/catch.hpp>
#include <strata/search/batch.hpp>
#include <strata/search/pareto.hpp>
#include <strata/search/transformer_sweep.hpp>
#include <strata/strata.hpp>

using namespace strata;
using parallel::recompute;

namespace {
const device_profile a100 = datasheet_profile(presets::a100_sxm4_80gb, h100_fitted_gemm);
const training gpt3_setup{.batch = 1536, .sequence = 2048};

bool same_plan(const parallel::nd& a, const parallel::nd& b) {
  return search::detail::plan_key(a) == search::detail::plan_key(b);
}

// Every candidate of the GPT-3 175B / 1024-GPU space (the sweep's enumeration).
std::vector<parallel::nd> gpt3_plans(const search::transformer_space& space = {}) {
  std::vector<parallel::nd> plans;
  search::for_each_plan(
      zoo::gpt3_175b(), presets::dgx_a100(128), gpt3_setup, a100, space,
      [&](const parallel::nd& s, const auto&, const auto&) { plans.push_back(s); });
  return plans;
}
}  // namespace

TEST_CASE("a Pareto front keeps exactly the non-dominated points", "[pareto]") {
  // (time, memory): (3, 10) (4, 12) (5, 8) (3, 10) (2, 20) (6, 8)
  // (4, 12) is beaten by (3, 10) on both; (6, 8) by (5, 8) on time; the duplicate (3, 10) stays
  // (neither of two equal points dominates the other); (2, 20) is the fastest.
  search::pareto_front<int, 2> f;
  CHECK(f.offer({3, 10}, 0));
  CHECK_FALSE(f.offer({4, 12}, 1));
  CHECK(f.offer({5, 8}, 2));
  CHECK(f.offer({3, 10}, 3));
  CHECK(f.offer({2, 20}, 4));
  CHECK_FALSE(f.offer({6, 8}, 5));
  std::vector<int> kept;
  for (const auto& e : f.entries) kept.push_back(e.item);
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<int>{0, 2, 3, 4});
  // a point better on both drops the two (3, 10) and (5, 8)
  CHECK(f.offer({2.5, 7}, 6));
  kept.clear();
  for (const auto& e : f.entries) kept.push_back(e.item);
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<int>{4, 6});
  STATIC_REQUIRE(search::dominates<2>({1, 1}, {1, 2}));
  STATIC_REQUIRE_FALSE(search::dominates<2>({1, 1}, {1, 1}));
  STATIC_REQUIRE_FALSE(search::dominates<2>({0, 3}, {1, 2}));
}

TEST_CASE("cost of training: GPU-hours and money for a token budget, worked by hand", "[pareto]") {
  // GPT-3 175B on 1024 GPUs, 1536 x 2048 = 3,145,728 tokens per 30 s iteration, 300 B tokens:
  // 300e9 / 3,145,728 = 95,367.43 iterations; x 30 s x 1024 / 3600 = 813,802.1 GPU-hours;
  // at $2 per GPU-hour $1,627,604.
  const auto c = search::cost_of(1024, 30.0, 1536.0 * 2048, 300e9, 2.0);
  CHECK(c.gpu_hours_per_iteration == Approx(1024 * 30.0 / 3600));  // 8.533
  CHECK(c.iterations == Approx(95'367.43).epsilon(1e-6));
  CHECK(c.gpu_hours == Approx(813'802.1).epsilon(1e-6));
  CHECK(c.money == Approx(1'627'604.2).epsilon(1e-6));
  // no budget: only the per-iteration figure
  const auto none = search::cost_of(8, 1.8, 1000);
  CHECK(none.gpu_hours_per_iteration == Approx(0.004));
  CHECK(none.gpu_hours == 0);
  CHECK(none.money == 0);
  CHECK_THROWS_WITH(search::cost_of(0, 1, 1), "cost: a plan needs at least one device");
  CHECK_THROWS_WITH(search::cost_of(8, std::nan(""), 1),
                    "cost: the iteration time must be a positive number of seconds");
  CHECK_THROWS_WITH(search::cost_of(8, 1, 1, -5),
                    "cost.tokens: must be a non-negative number of tokens");
}

TEST_CASE("a sweep split into parts and merged gives the whole sweep's answer", "[pareto][mpi]") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  const search::transformer_space space{.keep = 25};
  const auto whole = search::sweep(m, c, gpt3_setup, a100, space);
  REQUIRE(whole.best.size() == 25);
  REQUIRE(whole.pareto.size() >= 2);
  for (const int parts : {2, 3, 7}) {
    std::vector<search::transformer_sweep_result> rs;
    for (int p = 0; p < parts; ++p)
      rs.push_back(search::sweep(m, c, gpt3_setup, a100, space, {p, parts}));
    CHECK(rs[0].candidates < whole.candidates);  // each part holds a share
    const auto merged = search::merge(rs, space.keep);
    CHECK(merged.candidates == whole.candidates);
    CHECK(merged.fitting == whole.fitting);
    REQUIRE(merged.best.size() == whole.best.size());
    for (std::size_t i = 0; i < whole.best.size(); ++i) {
      CHECK(same_plan(merged.best[i].strategy, whole.best[i].strategy));
      CHECK(merged.best[i].time.total() == whole.best[i].time.total());
      CHECK(merged.best[i].memory == whole.best[i].memory);
    }
    REQUIRE(merged.pareto.size() == whole.pareto.size());
    for (std::size_t i = 0; i < whole.pareto.size(); ++i)
      CHECK(
          same_plan(merged.pareto.entries[i].item.strategy, whole.pareto.entries[i].item.strategy));
  }
  CHECK_THROWS_WITH(search::sweep(m, c, gpt3_setup, a100, space, {2, 2}),
                    "search: the part to run must lie in [0, parts)");
  // the front: fastest first, memory falling; its fastest plan is the sweep's best; no plan
  // that fits beats a front plan on both time and memory
  const auto& f = whole.pareto.entries;
  CHECK(same_plan(f.front().item.strategy, whole.best.front().strategy));
  for (std::size_t i = 1; i < f.size(); ++i) {
    CHECK(f[i - 1].objectives[0] <= f[i].objectives[0]);
    CHECK(f[i - 1].objectives[1] > f[i].objectives[1]);
    CHECK(f[i].objectives[2] == Approx(1024 * f[i].objectives[0] / 3600));
  }
}

TEST_CASE(
    "a sweep reports its progress and stops when told; degrees that cannot divide the "
    "devices cost nothing",
    "[search]") {
  // GPT-3 175B on 1024 A100s: the default space has 4 tensor degrees x 2 x 1 x 1 x 4
  // micro-batches = 32 layer groups; each group asks once, with the share done before it
  search::transformer_space space;
  std::vector<double> seen;
  space.progress = [&](double f) {
    seen.push_back(f);
    return true;
  };
  const auto plans = gpt3_plans(space);
  REQUIRE(seen.size() >= 2);
  CHECK(seen.front() == 0.0);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(seen.back() < 1.0);
  // told to stop at the third group: a plan_error naming the share done (2 of 32)
  int calls = 0;
  space.progress = [&](double) { return ++calls < 3; };
  CHECK_THROWS_WITH(gpt3_plans(space), "search: stopped at its time limit after 6 % of the space");
  // thousands of listed degrees that cannot divide the devices change nothing: the same plans
  // in the same order
  search::transformer_space wide;
  wide.tensor = {1, 2, 4, 8};
  wide.pipeline = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96};
  const auto base = gpt3_plans(wide);
  for (int odd = 97; odd < 10000; odd += 2) {  // 1024 GPUs: no odd degree above 1 divides them
    wide.tensor.push_back(odd);
    wide.pipeline.push_back(odd);
  }
  const auto same = gpt3_plans(wide);
  REQUIRE(same.size() == base.size());
  for (std::size_t i = 0; i < base.size(); ++i) CHECK(same_plan(same[i], base[i]));
}

TEST_CASE("batch evaluation equals the scalar closed form, plan by plan", "[batch]") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  // a slice of the space: every tensor and pipeline degree, two micro-batches, all the rest
  const auto plans = gpt3_plans({.micro_batch = {1, 2}, .virtual_stages = {1, 2}});
  REQUIRE(plans.size() > 500);
  const auto r = search::evaluate_batch(m, c, gpt3_setup, a100, plans, {.threads = 1});
  REQUIRE(r.size() == static_cast<Eigen::Index>(plans.size()));
  // one lowering per (tensor, sequence parallelism, micro-batch, recomputation): 4 tensor
  // degrees (1, 2, 4, 8), sp only with t > 1 (4 + 3 = 7), x 2 micro-batches x 3 modes = 42
  CHECK(r.groups == 42);
  for (std::size_t i = 0; i < plans.size(); i += 7) {
    const auto e = analytic::evaluate(m, plans[i], c, gpt3_setup, a100);
    const auto k = static_cast<Eigen::Index>(i);
    CHECK(r.iteration_s(k) == e.iteration_time().count());
    CHECK(r.time(k, 0) == e.time.forward.count());
    CHECK(r.time(k, 8) == e.time.data_comm.count());
    CHECK(r.memory_bytes(k) == e.memory.total().count());
    CHECK(r.required_bytes(k) == e.required().count());
    CHECK(r.fits(k) == e.fits());
    CHECK(r.tokens_per_s(k) == Approx(e.tokens_per_second()).epsilon(1e-12));
    CHECK(r.mfu(k) == Approx(e.mfu()).epsilon(1e-12));
  }
  // threads change nothing
  const auto r4 = search::evaluate_batch(m, c, gpt3_setup, a100, plans, {.threads = 4});
  CHECK((r4.iteration_s == r.iteration_s).all());
  CHECK((r4.memory_bytes == r.memory_bytes).all());
  // the fastest fitting plan of the batch is the sweep's best
  const auto s =
      search::sweep(m, c, gpt3_setup, a100, {.micro_batch = {1, 2}, .virtual_stages = {1, 2}});
  Eigen::Index best = -1;
  for (Eigen::Index i = 0; i < r.size(); ++i)
    if (r.fits(i) && (best < 0 || r.iteration_s(i) < r.iteration_s(best))) best = i;
  REQUIRE(best >= 0);
  CHECK(r.iteration_s(best) == s.best.front().time.total().count());
  CHECK(r.fits.count() == s.fitting);
}

TEST_CASE("the collectives memo prices again when a plan's groups are laid out differently",
          "[batch]") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  // t = 8 innermost: one node's NVLink; with data innermost the 8 tensor ranks are 16 apart,
  // one per node, over InfiniBand: the same lowering, a slower tensor all-reduce
  const parallel::nd inner{
      .tensor = {.degree = 8}, .pipeline = {.degree = 8}, .data = {.degree = 16}};
  parallel::nd outer = inner;
  outer.order = {parallel::axis::data, parallel::axis::tensor, parallel::axis::context,
                 parallel::axis::expert, parallel::axis::pipeline};
  const auto lc = analytic::lower_layer(m, a100, gpt3_setup, lower::shard_of(m, inner, gpt3_setup));
  analytic::collectives_memo memo;
  const seconds nvlink = memo(m, inner, c, gpt3_setup, lc).tensor;
  CHECK(nvlink == analytic::collectives_of(m, inner, c, gpt3_setup, lc).tensor);
  const seconds across = memo(m, outer, c, gpt3_setup, lc).tensor;
  CHECK(across == analytic::collectives_of(m, outer, c, gpt3_setup, lc).tensor);
  CHECK(across > 2 * nvlink);
  CHECK(memo(m, inner, c, gpt3_setup, lc).tensor == nvlink);
}

TEST_CASE("the data-collectives memo tells layouts, ZeRO stages and setups apart", "[batch]") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  // data outermost: the 16 data ranks are 64 apart, one per node; data innermost: 8 per node
  // over NVLink, then 2 nodes
  const parallel::nd outer{
      .tensor = {.degree = 8}, .pipeline = {.degree = 8}, .data = {.degree = 16}};
  parallel::nd inner = outer;
  inner.order = {parallel::axis::data, parallel::axis::tensor, parallel::axis::context,
                 parallel::axis::expert, parallel::axis::pipeline};
  parallel::nd zero1 = outer;
  zero1.data.zero = 1;
  const auto n = analytic::parameters_on(m, outer, 0);
  const parallel::calls_per_step calls{};
  auto direct = [&](const parallel::nd& s, const training& tr) {
    return analytic::data_collectives_of(s, c, tr, n, n, calls);
  };
  analytic::data_collectives_memo memo;
  auto memoized = [&](const parallel::nd& s, const training& tr) {
    return memo(s, c, tr, n, n, calls);
  };
  const seconds across = memoized(outer, gpt3_setup).all_reduce.total();
  CHECK(across == direct(outer, gpt3_setup).all_reduce.total());
  const seconds within = memoized(inner, gpt3_setup).all_reduce.total();
  CHECK(within == direct(inner, gpt3_setup).all_reduce.total());
  CHECK(within != across);
  const auto z = memoized(zero1, gpt3_setup);  // ZeRO-1: a reduce-scatter and an all-gather
  CHECK(z.all_reduce.total() == seconds{});
  CHECK(z.reduce_scatter.total() == direct(zero1, gpt3_setup).reduce_scatter.total());
  CHECK(z.all_gather.total() > seconds{});
  CHECK(memoized(outer, gpt3_setup).all_reduce.total() == across);  // remembered
  // bf16 gradients (DeepSpeed's convention): another setup, half the bytes, priced again
  training half = gpt3_setup;
  half.gradients = dtype::bf16;
  const seconds narrow = memoized(outer, half).all_reduce.total();
  CHECK(narrow == direct(outer, half).all_reduce.total());
  CHECK(narrow < 0.6 * across);
}

TEST_CASE("batch evaluation names the plan that breaks a limit", "[batch]") {
  const transformer m = zoo::gpt3_175b();
  const cluster c = presets::dgx_a100(128);
  std::vector<parallel::nd> plans{
      {.tensor = {.degree = 8}, .pipeline = {.degree = 8}, .data = {.degree = 16}},
      {.tensor = {.degree = 64}, .pipeline = {.degree = 8}, .data = {.degree = 2}}};
  CHECK_THROWS_WITH(search::evaluate_batch(m, c, gpt3_setup, a100, plans),
                    Catch::StartsWith("plans[1]: tensor parallelism: the degree must divide"));
  CHECK(search::evaluate_batch(m, c, gpt3_setup, a100, {}).size() == 0);
  CHECK_THROWS_WITH(search::evaluate_batch(m, c, gpt3_setup, a100, plans, {.threads = -2}),
                    Catch::Contains("threads must be 0 (one per hardware thread) or more"));
}
