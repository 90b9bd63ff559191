// The one definition of the unit tests' front door (front_door.hpp).
#include "front_door.hpp"

namespace strata_test {
strata::io::scenario_evaluation evaluate_scenario(const nlohmann::json& j,
                                                  const strata::io::evaluate_request& o,
                                                  std::string_view shipped) {
  return strata::io::evaluate_scenario(j, o, shipped);
}
}  // namespace strata_test
