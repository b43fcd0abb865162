// A recipe in words, for the comparison of runs and the report.
#pragma once

#include "amp/recipe.h"

#include <string>
#include <string_view>

namespace plab {

// "AMP FP16", or for a custom recipe the preset's name and each switch that differs from the
// preset: "Pure BF16 with Kahan-compensated updates", "AMP FP16 without loss scaling".
std::string recipePhraseOf(const PrecisionRecipe& recipe);
// Whether recipePhraseOf says a settings key's value (or that it departs from the preset, as
// "with custom loss scaling"): the preset, the compute format, master weights, the optimizer
// state, update rounding, fp32 accumulation and softmax/loss, and the loss-scaling keys. The
// comparison's labels leave these to the phrase.
bool recipePhraseSays(std::string_view settingKey);

// "off", "static", "dynamic": the loss scaling's mode as settings and records name it.
std::string lossScaleModeName(LossScaleMode mode);

}  // namespace plab
