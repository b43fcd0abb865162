// Bringing a parameter's copies in line with a recipe: the fp32 master, the weights the
// layers compute with, and their memory accounting. Used by Model::applyRecipe (start of
// a run and every mid-run recipe change) and by the optimizers (after every update), so
// the rule lives in one place; the formats come from PrecisionRecipe.
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"
#include "tensor/memory.h"

namespace plab {
class ComputeBackend;
}

namespace plab {

// With recipe.keepsMasterCopy(): creates the fp32 master from `value` when there is none
// (a promotion, exact: every value of a reduced format is an fp32 value) and refreshes
// `value` from it. Otherwise: moves the master into `value` when there is one (a demotion,
// as model.half() casts the fp32 weights once) and drops it. Then `value` is rounded to
// recipe.weightFormat() and tracked as weights, the master as master weights.
// Every copy is first placed where the backend keeps its tensors.
void alignParameterWithRecipe(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                              ComputeBackend& backend);

// value = roundTo(recipe.weightFormat(), master) for every element, when a master exists.
void refreshComputeCopy(Parameter& p, const PrecisionRecipe& recipe, ComputeBackend& backend);

// Moves every tensor of the parameter to the backend's memory (host or device).
void placeParameter(Parameter& p, ComputeBackend& backend);

}  // namespace plab
