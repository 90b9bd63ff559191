// A strategy tree as a type: 3 batch parts x 2 micro-batches do not divide a global batch of 8.
#include <strata/proteus/tree.hpp>
using namespace strata::proteus;
#ifdef STRATA_SHOULD_FAIL
using only = stage<0, 3, 2>;
#else
using only = stage<0, 2, 2>;
#endif
using tree = static_tree<8, 12, 12, 8, 2, only>;
static_assert(tree::stages == 1);
