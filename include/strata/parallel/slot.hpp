#pragma once
/// @file parallel/slot.hpp
/// @brief The slots of a transformer plan's composition (`parallel::nd`) that policy types fill
/// (`parallel/policy.hpp`). A plan fills each slot at most once; a user policy that sets several
/// fields of one axis (hybrid sharding sets the data degree, ZeRO stage and shard group) names
/// that axis.

namespace strata::parallel {

enum class policy_slot { tensor, context, expert, pipeline, data, zero, recompute, micro_batch };

}  // namespace strata::parallel
