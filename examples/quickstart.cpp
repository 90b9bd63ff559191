#include <cstdio>
#include <strata/strata.hpp>

using namespace strata;

int main() {
  // ResNet-50 with data parallelism on 16 ABCI V100s, 256 images per iteration.
  constexpr plan p{zoo::resnet50(), presets::abci(16), parallel::data{.p = 16},
                   training{.batch = 256, .dataset = 1'281'167}};
  static_assert(memory_per_device(p) <= 16_GiB);  // a plan that cannot fit does not compile
  constexpr report r = evaluate(p);
  std::printf("iteration %.1f ms, epoch %.0f s, %.2f GiB per GPU\n", to_ms(r.iteration_time()),
              r.epoch_time().count(), to_gib(r.memory.total()));
}
