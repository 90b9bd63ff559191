#pragma once
/// @file error.hpp
/// @brief The one exception type strata throws for an invalid model, cluster or plan.
///
/// Checks are written as `if (bad) throw plan_error("sentence naming the mistake")`. At run time
/// that is an ordinary exception; inside a constant expression (a `constexpr` plan, a
/// `static_assert`) the throw is not allowed, so the compiler stops and prints the throwing line,
/// which carries the same sentence.

#include <stdexcept>

namespace strata {

/// Thrown when a model, cluster, strategy or scenario is invalid; `what()` is one sentence.
class plan_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace strata
