// A plan's policies must model strata::parallel::Policy: a struct without a slot and an apply()
// is refused by name when the plan is named.
#include <strata/strata.hpp>
using namespace strata;
using namespace strata::parallel;

struct two_d_tensor {  // a user policy that forgot its `slot` and `apply`
  int rows = 2, cols = 2;
};

#ifdef STRATA_SHOULD_FAIL
using policy = two_d_tensor;
#else
using policy = tensor_parallel;
#endif
constexpr strata::plan<transformer, data_parallel, policy> p{zoo::llama2_7b(), presets::dgx_a100(1),
                                                             training{.batch = 64},
                                                             data_parallel{.degree = 2}, policy{}};
static_assert(p.strategy().data.degree == 2);
