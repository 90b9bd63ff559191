// ParaDL Table III: pipeline parallelism needs p <= G; this model has 3 layers.
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int p = 4;
#else
constexpr int p = 3;
#endif
constexpr auto net =
    sequential("mlp", shape{.c = 784}, linear{.features = 128}, relu{}, linear{.features = 10});
constexpr plan bad{net, presets::abci(4), parallel::pipeline{.p = p, .segments = 2},
                   training{.batch = 8}};
static_assert(iteration_time(bad) > 0_s);
