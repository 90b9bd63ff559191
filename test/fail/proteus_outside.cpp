// A strategy tree as a type: a stage on devices 4-11 of an 8-device cluster (HC1).
#include <strata/proteus/tree.hpp>
using namespace strata::proteus;
#ifdef STRATA_SHOULD_FAIL
using second = stage<4, 4, 2>;
#else
using second = stage<4, 2, 2>;
#endif
using tree = static_tree<8, 12, 12, 8, 2, stage<0, 2, 2>, second>;
static_assert(tree::stages == 2);
