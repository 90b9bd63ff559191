#include <strata/strata.hpp>

double other_tu() {
  const auto net = strata::zoo::resnet50();
  return strata::analytic::evaluate(net.view(), strata::parallel::data{.p = 4},
                                    strata::presets::abci(4), {.batch = 64})
      .iteration_time()
      .count();
}
