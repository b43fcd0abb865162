// A recipe in words, for the comparison of runs and the report.
#pragma once

#include "amp/recipe.h"

#include <string>

namespace plab {

// "AMP FP16", or for a custom recipe the preset's name and each switch that differs from the
// preset: "Pure BF16 with Kahan-compensated updates", "AMP FP16 without loss scaling".
std::string recipePhraseOf(const PrecisionRecipe& recipe);

// "off", "static", "dynamic": the loss scaling's mode as settings and records name it.
std::string lossScaleModeName(LossScaleMode mode);

}  // namespace plab
