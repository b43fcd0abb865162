// Unscaling with the finiteness check of GradScaler (the scaled values are checked,
// then multiplied by float(1/double(S))), and gradient-norm clipping, as gradient sweeps
// on the backend that holds the gradients.
#include "optim/grad_unscale.h"

#include "backend/backend.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace plab {

namespace {

// The non-empty gradients, rounded when written to the gradient format of each one's layer
// under `recipe` (per-layer precision), or without a recipe to the format each tensor stores.
std::vector<GradientView> gradientViews(const std::vector<Parameter*>& params, const PrecisionRecipe* recipe = nullptr)
{
    std::vector<GradientView> views;
    for (Parameter* p : params)
        if (p->grad.size())
            views.push_back({p->grad.data(), p->grad.size(),
                             recipe ? recipe->forLayer(p->layer).gradientFormat() : p->grad.storage()});
    return views;
}

}  // namespace

UnscaleResult unscaleGradients(const std::vector<Parameter*>& params, float invScale,
                               const PrecisionRecipe& recipe, ComputeBackend& backend)
{
    // Beside fp32 masters the gradients are fp32; without masters they are tensors of
    // the storage format, so the product is stored rounded.
    const SweepResult sweep = backend.gradientSweep(gradientViews(params, &recipe), invScale, SweepSquares::skipped);
    UnscaleResult result;
    result.foundNonFinite = sweep.nonFinite;
    return result;
}

double clipGradNorm(const std::vector<Parameter*>& params, double maxNorm, ComputeBackend& backend)
{
    if (!std::isfinite(maxNorm) || !(maxNorm > 0.0))
        throw std::invalid_argument("the gradient-norm limit must be a positive finite number, got " +
                                    std::to_string(maxNorm));
    const std::vector<GradientView> views = gradientViews(params);
    const SweepResult sweep = backend.gradientSweep(views, 1.0f, SweepSquares::summed);
    if (sweep.nonFinite) return std::numeric_limits<double>::infinity();
    const double total = std::sqrt(sweep.sumOfSquares);

    const double clipCoefficient = maxNorm / (total + 1e-6);   // as clip_grad_norm_
    if (clipCoefficient >= 1.0) return total;
    backend.gradientSweep(views, static_cast<float>(clipCoefficient), SweepSquares::skipped);
    return total;
}

std::string_view clipAtName(ClipAt at) { return at == ClipAt::scaled ? "scaled" : "unscaled"; }

UnscaleResult unscaleAndClip(const std::vector<Parameter*>& params, float invScale, const PrecisionRecipe& recipe,
                             double maxNorm, ClipAt at, ComputeBackend& backend)
{
    if (maxNorm > 0 && at == ClipAt::scaled) clipGradNorm(params, maxNorm, backend);
    const UnscaleResult result = unscaleGradients(params, invScale, recipe, backend);
    if (maxNorm > 0 && at == ClipAt::unscaled && !result.foundNonFinite) clipGradNorm(params, maxNorm, backend);
    return result;
}

}  // namespace plab
