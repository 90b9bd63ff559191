// ParaDL Table III: data parallelism needs p <= B.
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int batch = 8;
#else
constexpr int batch = 16;
#endif
constexpr plan bad{zoo::resnet50(), presets::abci(16), parallel::data{.p = 16},
                   training{.batch = batch}};
static_assert(iteration_time(bad) > 0_s);
