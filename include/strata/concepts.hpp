#pragma once
/// @file concepts.hpp
/// @brief Every concept of the library, gathered: each is defined beside the type it describes
/// (as mp-units keeps `quantity` and `quantity_concepts` together) and constrains the entry
/// points that take such a type, so misuse is one error naming the concept.
///
/// | concept | what models it | defined in |
/// |---|---|---|
/// | `Model` | `transformer`, `model<N>` | `model/model.hpp` |
/// | `Layer` | the layer policies (`conv`, `linear`, ...) | `model/layer.hpp` |
/// | `Quantity` | `bytes`, `seconds`, `flops`, ... | `units.hpp` |
/// | `frameworks::Recipe` | `frameworks::megatron`, `huggingface`, ... and types derived from them
/// | `frameworks/recipe.hpp` | | `parallel::Policy` | `tensor_parallel`, `pipeline_parallel`,
/// `data_parallel`, `zero<N>`, `recomputation<R>`, `micro_batch`, user policies |
/// `parallel/policy.hpp` | | `Strategy` | ParaDL's strategies (`parallel::data`, `spatial`, ...) |
/// `parallel/cnn/context.hpp` | | `lower::LoweringVisitor` | what the lowering hands kernels,
/// collectives and kept tensors to | `lower/ops.hpp` | | `sim::TransformerPlan`, `sim::Executor` |
/// plans the simulator runs; `sim::event_executor` | `sim/transformer.hpp` |

#include "strata/frameworks/recipe.hpp"
#include "strata/lower/ops.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"
#include "strata/parallel/cnn/context.hpp"
#include "strata/parallel/policy.hpp"
#include "strata/sim/transformer.hpp"
#include "strata/units.hpp"
