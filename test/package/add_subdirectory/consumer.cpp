#include <cstdio>
#include <strata/strata.hpp>

int main() {
  using namespace strata;
  constexpr plan p{zoo::resnet50(), presets::abci(16), parallel::data{.p = 16},
                   training{.batch = 256}};
  static_assert(memory_per_device(p) <= 16_GiB);
  std::printf("resnet50 fits: %d\n", evaluate(p).fits() ? 1 : 0);
}
