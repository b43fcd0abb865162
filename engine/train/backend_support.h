// The backend support policy, in one place: what a backend can run of a recipe (its
// capabilities against each layer's switches) and the arithmetic it runs a recipe's
// products in. The trainer checks a run's recipe and every live change with recipeProblem
// (TrainerControl is handed the same check).
#pragma once

#include "amp/recipe.h"
#include "backend/backend.h"

#include <string>

namespace plab {

// Why the backend described by `info` (its capabilities) cannot run `recipe`, or "".
[[nodiscard]] std::string recipeProblem(const PrecisionRecipe& recipe, const BackendInfo& info);

// The record's arithmetic phrase for the recipe's products on `backend`; with per-layer
// precision, each layer whose arithmetic differs is named after the recipe's.
std::string arithmeticOf(const PrecisionRecipe& recipe, const ComputeBackend& backend);

}  // namespace plab
