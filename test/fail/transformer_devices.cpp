// tp x pp x dp x cp x ep must equal the cluster's device count (a DGX A100 has 8 GPUs).
#include <strata/strata.hpp>
using namespace strata;
#ifdef STRATA_SHOULD_FAIL
constexpr int dp = 4;
#else
constexpr int dp = 2;
#endif
constexpr transformer_plan bad{zoo::gpt_1_7b(), presets::dgx_a100(1),
                               parallel::nd{.tensor = {.degree = 4}, .data = {.degree = dp}},
                               training{.batch = 16}};
static_assert(iteration_time(bad) > 0_s);
