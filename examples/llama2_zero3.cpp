// Does Llama-2 7B train on one node of 8 x A100-40GB? With plain data parallelism each GPU holds
// 18 bytes per parameter (121 GB): no. ZeRO-3 shards weights, gradients and optimizer states
// eight ways (15 GB per GPU), and full recomputation keeps activations to a layer input per
// layer. The compiler checks it.
#include <cstdio>
#include <strata/strata.hpp>

using namespace strata;

constexpr transformer_plan zero3{zoo::llama2_7b(), presets::dgx_a100_40gb(1),
                                 parallel::nd{.data = {.degree = 8, .zero = 3},
                                              .recomputation = parallel::recompute::full,
                                              .micro_batch = 1},
                                 training{.batch = 64, .sequence = 4096}};
static_assert(peak_memory(zero3) <= 40_GiB, "Llama-2 7B with ZeRO-3 fits 8 x A100-40GB");

constexpr transformer_plan plain{
    zoo::llama2_7b(), presets::dgx_a100_40gb(1),
    parallel::nd{
        .data = {.degree = 8}, .recomputation = parallel::recompute::full, .micro_batch = 1},
    training{.batch = 64, .sequence = 4096}};
static_assert(peak_memory(plain) > 40_GiB, "plain data parallelism does not");

int main() {
  std::printf("Llama-2 7B, 8 x A100-40GB, ZeRO-3: %.2f GiB per GPU, %.2f s per iteration\n",
              to_gib(peak_memory(zero3)), iteration_time(zero3).count());
  std::printf("Llama-2 7B, 8 x A100-40GB, plain data parallelism: %.2f GiB per GPU\n",
              to_gib(peak_memory(plain)));
}
