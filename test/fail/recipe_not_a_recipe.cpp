// A framework recipe type derives from frameworks::recipe; a struct that only looks like one is
// refused by the Recipe concept.
#include <strata/strata.hpp>
using namespace strata;

struct my_stack {  // not derived from a recipe
  bool autocast = true;
};
struct my_hf : recipes::huggingface {
  constexpr my_hf() { workspace = 0; }
};

#ifdef STRATA_SHOULD_FAIL
using stack = my_stack;
#else
using stack = my_hf;
#endif
constexpr training t{.framework = frameworks::rules_of(stack{})};
static_assert(t.framework.autocast);
