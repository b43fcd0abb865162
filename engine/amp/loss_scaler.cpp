// The loss scaler: PyTorch GradScaler's update rule (torch/amp/grad_scaler.py and the
// _amp_update_scale_ kernel), with TensorFlow's floor and Apex's cap as optional clamps.
//
// PyTorch keeps the scale in an fp32 tensor and computes scale * factor in double
// before storing it back, so every new scale here is rounded to float the same way;
// the value stays a double in the API only because it is read as one.
#include "amp/loss_scaler.h"

#include "error.h"

#include <algorithm>
#include <cmath>

namespace plab {

namespace {

double asFp32(double x) { return static_cast<double>(static_cast<float>(x)); }

// The floor (TensorFlow: 1) and cap (Apex: 2^24), applied after growth or backoff as
// both libraries do: max(scale / 2, floor), min(scale * 2, cap).
double clampToBounds(double scale, const LossScaling& cfg)
{
    if (cfg.minScale) scale = std::max(scale, *cfg.minScale);
    if (cfg.maxScale) scale = std::min(scale, *cfg.maxScale);
    return asFp32(scale);
}

void throwIfImpossible(const LossScaling& cfg)
{
    if (auto problem = cfg.validate(); !problem.empty()) throw InputError(problem);
}

}  // namespace

LossScaler::LossScaler(const LossScaling& cfg) : cfg_(cfg)
{
    throwIfImpossible(cfg_);
    scale_ = cfg_.mode == LossScaleMode::off ? 1.0 : asFp32(cfg_.initScale);
}

double LossScaler::scale() const { return scale_; }

float LossScaler::inverseScale() const
{
    // GradScaler: inv_scale = self._scale.double().reciprocal().float()
    return static_cast<float>(1.0 / scale_);
}

bool LossScaler::update(bool foundNonFinite)
{
    switch (cfg_.mode) {
    case LossScaleMode::off:
        // Nothing guards the weights: a non-finite gradient is applied, and that is how
        // an unscaled run diverges (the trainer detects divergence from the loss).
        return false;
    case LossScaleMode::fixed:
        // PyTorch has no static mode (a GradScaler with growth and backoff 1 is the
        // closest, and it skips), Apex's static scaler does not skip. We skip: applying
        // an inf/NaN gradient would turn the weights into NaN at once, and a static
        // scaler cannot back off to avoid the next one. The scale never changes.
        return foundNonFinite;
    case LossScaleMode::dynamic:
        break;
    }

    if (foundNonFinite) {
        scale_ = clampToBounds(scale_ * cfg_.backoffFactor, cfg_);
        cleanSteps_ = 0;
        return true;
    }
    ++cleanSteps_;
    // PyTorch tests `== growth_interval`; `>=` is the same in normal running and also
    // grows at once when reconfigure() shortened the interval below the current count.
    if (cleanSteps_ >= cfg_.growthInterval) {
        const float grown = static_cast<float>(scale_ * cfg_.growthFactor);
        if (std::isfinite(grown)) scale_ = static_cast<double>(grown);
        scale_ = clampToBounds(scale_, cfg_);
        cleanSteps_ = 0;
    }
    return false;
}

void LossScaler::reconfigure(const LossScaling& cfg)
{
    throwIfImpossible(cfg);
    const bool staysDynamic = cfg_.mode == LossScaleMode::dynamic && cfg.mode == LossScaleMode::dynamic;
    cfg_ = cfg;
    if (staysDynamic) {
        // The scale found so far is the valuable state: keep it (and the clean-step
        // count), only bringing it inside the new bounds.
        scale_ = clampToBounds(scale_, cfg_);
        return;
    }
    scale_ = cfg_.mode == LossScaleMode::off ? 1.0 : asFp32(cfg_.initScale);
    cleanSteps_ = 0;
}

}  // namespace plab
