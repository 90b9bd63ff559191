#pragma once
/// @file parallel/strategy.hpp
/// @brief All ParaDL strategies, and `any_strategy` for choosing one at run time.
/// @code
/// strata::parallel::any_strategy s = strata::parallel::data{.p = 8};
/// @endcode

#include <variant>

#include "strata/parallel/cnn/context.hpp"
#include "strata/parallel/cnn/data.hpp"
#include "strata/parallel/cnn/filter.hpp"
#include "strata/parallel/cnn/hybrid.hpp"
#include "strata/parallel/cnn/pipeline.hpp"
#include "strata/parallel/cnn/spatial.hpp"

namespace strata::parallel {

static_assert(Strategy<serial> && Strategy<data> && Strategy<spatial> && Strategy<pipeline> &&
              Strategy<filter> && Strategy<channel> && Strategy<data_filter> &&
              Strategy<data_spatial>);

/// A strategy picked at run time (from a scenario file, in a sweep).
using any_strategy =
    std::variant<serial, data, spatial, pipeline, filter, channel, data_filter, data_spatial>;

}  // namespace strata::parallel
