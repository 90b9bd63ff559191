#pragma once
/// @file strata.hpp
/// @brief The umbrella header: everything in strata's constexpr core.
///
/// Optional parts with extra dependencies live in their own headers (`strata/io/...` needs
/// nlohmann/json).

#include "strata/analytic/evaluate.hpp"
#include "strata/analytic/report.hpp"
#include "strata/analytic/transformer.hpp"
#include "strata/analytic/zero.hpp"
#include "strata/comm/collectives.hpp"
#include "strata/comm/lin_model.hpp"
#include "strata/comm/placement.hpp"
#include "strata/detail/cmath.hpp"
#include "strata/error.hpp"
#include "strata/hardware/cluster.hpp"
#include "strata/hardware/device.hpp"
#include "strata/hardware/kernels.hpp"
#include "strata/hardware/mesh.hpp"
#include "strata/hardware/presets.hpp"
#include "strata/limits.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"
#include "strata/model/transformer.hpp"
#include "strata/model/transformer_zoo.hpp"
#include "strata/model/zoo.hpp"
#include "strata/parallel/context.hpp"
#include "strata/parallel/data.hpp"
#include "strata/parallel/filter.hpp"
#include "strata/parallel/hybrid.hpp"
#include "strata/parallel/nd.hpp"
#include "strata/parallel/pipeline.hpp"
#include "strata/parallel/spatial.hpp"
#include "strata/parallel/strategy.hpp"
#include "strata/plan.hpp"
#include "strata/training.hpp"
#include "strata/units.hpp"
#include "strata/version.hpp"
