// The libFuzzer program for every target of targets.hpp: STRATA_FUZZ_TARGET names the one to
// fuzz (test/fuzz/run.sh sets it). One program, built once, instead of one per target: each
// would compile the same readers (about 3 minutes each under the sanitizers).
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "targets.hpp"

namespace {
int (*target)(const std::uint8_t*, std::size_t) = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("STRATA_FUZZ_TARGET");
  target = name == nullptr ? nullptr : strata_fuzz::named(name);
  if (target == nullptr) {
    std::fprintf(stderr, "fuzz_strata: set STRATA_FUZZ_TARGET to one of: %s\n",
                 strata_fuzz::target_names);
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return target(data, size);
}
