// Harness sanity check: this file compiles with or without STRATA_SHOULD_FAIL, so the
// must-not-compile harness has to report it as a failure (the test is marked WILL_FAIL).
#include <strata/strata.hpp>
static_assert(strata::zoo::resnet50().params() == 25'557'032);
