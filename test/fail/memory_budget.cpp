// 64 VGG16 images per V100 need ~29 GiB under ParaDL eq. (7); 16 need ~7.6 GiB.
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int per_gpu = 64;
#else
constexpr int per_gpu = 16;
#endif
constexpr plan p{zoo::vgg16(), presets::abci(8), parallel::data{.p = 8},
                 training{.batch = 8 * per_gpu}};
static_assert(memory_per_device(p) <= 16_GiB, "the VGG16 plan does not fit a 16 GiB V100");
