// Loss scaling with the semantics PyTorch's GradScaler documents: a step with any
// non-finite (scaled) gradient is skipped, the scale backs off and the clean-step count
// resets; after growthInterval consecutive clean steps the scale grows (only if the
// grown scale is finite) and the count resets.
#pragma once

#include "amp/recipe.h"

namespace plab {

class LossScaler {
public:
    // Throws InputError with LossScaling::validate()'s sentence for an impossible
    // setting (so does reconfigure()).
    explicit LossScaler(const LossScaling& cfg = {});

    // The factor the loss is multiplied by this step (1 when scaling is off).
    double scale() const;
    // float(1 / double(S)): what the gradients are multiplied by to unscale.
    float inverseScale() const;

    // Reports the outcome of the step that used scale(): foundNonFinite when any scaled
    // gradient was inf or NaN. Returns true when the optimizer step must be skipped.
    bool update(bool foundNonFinite);

    int cleanSteps() const { return cleanSteps_; }
    const LossScaling& config() const { return cfg_; }
    // Mid-run change of settings; keeps the current scale when the mode stays dynamic.
    void reconfigure(const LossScaling& cfg);

private:
    LossScaling cfg_;
    double scale_ = 1.0;
    int cleanSteps_ = 0;
};

}  // namespace plab
