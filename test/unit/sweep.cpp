#include <catch2/catch.hpp>
#include <strata/search/paradl_sweep.hpp>
#include <strata/strata.hpp>

namespace unit_sweep {

using namespace strata;

TEST_CASE("the ParaDL strategy space") {
  // 64 devices, degrees 2 .. 64 (6 values): serial 1; data, filter, channel 3 x 6; spatial 6;
  // pipeline 6 stage counts x 7 segment counts; data+filter and data+spatial 2 x 15 pairs with
  // p1 p2 <= 64: 1 + 18 + 6 + 42 + 30 = 97.
  int n = 0, pipelines = 0;
  for (const auto& s : search::paradl_strategies(64)) {
    ++n;
    pipelines += std::holds_alternative<parallel::pipeline>(s) ? 1 : 0;
  }
  CHECK(n == 97);
  CHECK(pipelines == 42);
  CHECK_THROWS_WITH(search::paradl_strategies(0), Catch::Contains("at least one device"));
}

TEST_CASE("ranking prunes and sorts") {
  const auto net = zoo::resnet50();
  const training t{.batch = 1024, .dataset = 1'281'167};
  const auto ranked = search::rank(net.view(), presets::abci(64), t, search::paradl_strategies(64));
  REQUIRE(!ranked.empty());
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    CHECK(ranked[i].result.fits());
    if (i > 0) CHECK(ranked[i - 1].result.epoch_time() <= ranked[i].result.epoch_time());
  }
  // 16 images per GPU: data parallelism on all 64 GPUs is the fastest plan that fits 16 GiB
  CHECK(std::holds_alternative<parallel::data>(ranked.front().strategy));
  CHECK(ranked.front().result.devices == 64);
  // the same evaluation as analytic::evaluate
  CHECK(ranked.front().result.epoch_time() ==
        analytic::evaluate(net.view(), parallel::data{64}, presets::abci(64), t).epoch_time());
  // without the memory filter more plans survive
  const auto all = search::rank(net.view(), presets::abci(64), t, search::paradl_strategies(64),
                                /*must_fit=*/false);
  CHECK(all.size() > ranked.size());
}

}  // namespace unit_sweep
