// A strategy tree as a type: two pipeline stages on devices 0-3 and 2-5 overlap (Proteus §V-A
// needs the subgraphs of one level on equal or disjoint device groups).
#include <strata/proteus/tree.hpp>
using namespace strata::proteus;
#ifdef STRATA_SHOULD_FAIL
using second = stage<2, 2, 2>;
#else
using second = stage<4, 2, 2>;
#endif
using tree = static_tree<8, 12, 12, 8, 2, stage<0, 2, 2>, second>;
static_assert(tree::stages == 2);
