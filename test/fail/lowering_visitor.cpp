// The lowering hands operations to a LoweringVisitor; a visitor with none of kernel(),
// collective() or save() (here a misspelt `kernels`) would see nothing and is refused.
#include <strata/strata.hpp>
using namespace strata;

struct counter {
  int n = 0;
#ifdef STRATA_SHOULD_FAIL
  constexpr void kernels(const lower::kernel_op&) { ++n; }
#else
  constexpr void kernel(const lower::kernel_op&) { ++n; }
#endif
};
constexpr int kernels = [] {
  counter c;
  const transformer m = zoo::gpt2_124m();
  lower::layer(m, lower::shard{1, 1024, 1024, 1, false, 1, 1, parallel::recompute::none},
               training{}, lower::phase::forward, c);
  return c.n;
}();
static_assert(kernels > 0);
