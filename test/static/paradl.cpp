// Compiling this file is the test: plans are constant expressions.
#include <strata/strata.hpp>

using namespace strata;

static_assert(Strategy<parallel::data>);
static_assert(!Strategy<int>);
static_assert(Layer<conv> && Layer<relu> && !Layer<double>);

// Zoo models are built at compile time.
static_assert(zoo::resnet50().params() == 25'557'032);
static_assert(zoo::vgg16().params() == 138'357'544);

// A memory budget as a static_assert: ResNet-50, 16 images per V100 (ParaDL eq. 7).
constexpr plan rn{zoo::resnet50(), presets::abci(16), parallel::data{.p = 16},
                  training{.batch = 256}};
static_assert(memory_per_device(rn) <= 16_GiB);
static_assert(memory_per_device(rn) > 9.1_GiB && memory_per_device(rn) < 9.3_GiB);  // 9.18 GiB
// compute at half of 15.7 TFLOP/s (50.8 ms, test/unit/paradl.cpp) + eq. (6)'s 15.94 ms below
static_assert(iteration_time(rn) > 66_ms && iteration_time(rn) < 67.5_ms);

// The data-parallel gradient exchange equals eq. (6) written out.
constexpr auto rep = evaluate(rn);
constexpr double m = 4.0 * 25'557'032;  // delta sum |w_l|
constexpr double eq6 = 2.0 * 15 * (20.31e-6 + m / 16 / 12.5e9);
static_assert(rep.time.data_comm.count() - eq6 < 1e-12 && eq6 - rep.time.data_comm.count() < 1e-12);

// Every strategy evaluates at compile time.
constexpr auto vgg = zoo::vgg16();
constexpr auto abci = presets::abci(32);
constexpr training setup{.batch = 256};
static_assert(analytic::evaluate(vgg.view(), parallel::filter{.p = 32}, abci, setup).devices == 32);
static_assert(analytic::evaluate(vgg.view(), parallel::channel{.p = 32}, abci, setup).devices ==
              32);
static_assert(analytic::evaluate(vgg.view(), parallel::spatial{.ph = 4}, abci, setup).devices == 4);
static_assert(analytic::evaluate(vgg.view(), parallel::pipeline{.p = 4, .segments = 8}, abci, setup)
                  .devices == 4);
static_assert(analytic::evaluate(vgg.view(), parallel::data_spatial{.p1 = 8, .inner = {.ph = 4}},
                                 abci, setup)
                  .devices == 32);
