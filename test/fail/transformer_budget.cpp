// Llama-2 7B on 8 x A100-40GB: plain data parallelism holds 18 B per parameter (121 GB) per GPU
// and cannot fit; ZeRO-3 shards it to 15 GB.
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int zero = 0;
#else
constexpr int zero = 3;
#endif
constexpr transformer_plan p{
    zoo::llama2_7b(), presets::dgx_a100_40gb(1),
    parallel::nd{.data = {.degree = 8, .zero = zero}, .recomputation = parallel::recompute::full},
    training{.batch = 64}};
static_assert(peak_memory(p) <= 40_GiB, "Llama-2 7B does not fit 8 x A100-40GB");
