// A memory budget checked by the compiler: ParaDL's maximum memory per PE (Table III) of a plan
// that is a constant expression goes straight into a static_assert.
#include <cstdio>
#include <strata/strata.hpp>

using namespace strata;

// VGG16 on 8 ABCI V100-16GB. Data parallelism with 256 images per iteration (32 per GPU) holds
// 2 delta sum(B/p (|x_l| + |y_l|) + |w_l|) (ParaDL eq. 7) bytes per GPU.
constexpr plan data_plan{zoo::vgg16(), presets::abci(8), parallel::data{.p = 8},
                         training{.batch = 256}};
static_assert(memory_per_device(data_plan) <= 16_GiB, "VGG16, 32 images per GPU, fits a V100");

// Filter parallelism keeps every layer's full activations on each GPU (eq. 16), so the same
// 256 images would need far more than 16 GiB; 16 images fit.
constexpr plan filter_plan{zoo::vgg16(), presets::abci(8), parallel::filter{.p = 8},
                           training{.batch = 16}};
static_assert(memory_per_device(filter_plan) <= 16_GiB, "VGG16, filter-parallel, 16 images");

int main() {
  std::printf("data   p=8, B=256: %.2f GiB per GPU\n", to_gib(memory_per_device(data_plan)));
  std::printf("filter p=8, B=16:  %.2f GiB per GPU\n", to_gib(memory_per_device(filter_plan)));
}
