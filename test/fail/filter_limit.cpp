// ParaDL Table III: filter parallelism needs p <= min F_l; VGG16's first layers have 64 filters.
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int p = 128;
#else
constexpr int p = 64;
#endif
constexpr plan bad{zoo::vgg16(), presets::abci(128), parallel::filter{.p = p},
                   training{.batch = 32}};
static_assert(iteration_time(bad) > 0_s);
