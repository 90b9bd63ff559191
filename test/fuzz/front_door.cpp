// libFuzzer target: see targets.hpp.
#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return strata_fuzz::front_door(data, size);
}
