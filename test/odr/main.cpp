// Two translation units include strata and are linked together: any non-inline definition in a
// header would be a duplicate symbol here.
#include <strata/strata.hpp>

double other_tu();

int main() {
  const auto net = strata::zoo::resnet50();
  const double here = strata::analytic::evaluate(net.view(), strata::parallel::data{.p = 4},
                                                 strata::presets::abci(4), {.batch = 64})
                          .iteration_time()
                          .count();
  return here == other_tu() ? 0 : 1;
}
