// The front door (io::evaluate_scenario) compiled once for the unit tests: a test translation
// unit that calls it through this declaration parses io/evaluate.hpp but does not generate its
// code again (every inline function the front door reaches, about 40 s of an -O3 or ASan build
// per translation unit). front_door.cpp holds the one definition.
#pragma once
#include <string_view>

#include <strata/io/evaluate.hpp>

namespace strata_test {
strata::io::scenario_evaluation evaluate_scenario(const nlohmann::json& j,
                                                  const strata::io::evaluate_request& o = {},
                                                  std::string_view shipped = {});
}  // namespace strata_test
