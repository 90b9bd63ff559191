// Tensor parallelism must divide the attention heads (Llama-2 7B has 32).
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int tp = 3, dp = 1;
#else
constexpr int tp = 2, dp = 1;
#endif
constexpr transformer_plan bad{zoo::llama2_7b(),
                               make_cluster("tp", presets::a100_sxm4_80gb,
                                            {level{"node", tp* dp, interconnect{5_us, 300_GBps}}}),
                               parallel::nd{.tensor = {.degree = tp}, .data = {.degree = dp}},
                               training{.batch = 8}};
static_assert(peak_memory(bad) > 0_GiB);
