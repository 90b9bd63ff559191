// ZeRO shards over data-parallel ranks: a plan with zero<N> and no data_parallel policy is a
// composition the rules forbid, refused when the plan is named.
#include <strata/strata.hpp>
using namespace strata;
using namespace strata::parallel;

#ifdef STRATA_SHOULD_FAIL
constexpr strata::plan p{zoo::llama2_7b(), presets::dgx_a100(1), training{.batch = 64},
                         tensor_parallel{.degree = 8}, zero<1>{}};
#else
constexpr strata::plan p{
    zoo::llama2_7b(), presets::dgx_a100(1), training{.batch = 64}, tensor_parallel{.degree = 8},
    zero<1>{},        data_parallel{}};
#endif
static_assert(p.strategy().tensor.degree == 8);
