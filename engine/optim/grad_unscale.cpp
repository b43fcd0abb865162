// Unscaling with the finiteness check of GradScaler (the scaled values are checked,
// then multiplied by float(1/double(S))), and gradient-norm clipping.
#include "optim/grad_unscale.h"

#include "nn/parameter_copies.h"
#include "optim/update_rules.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace plab {

namespace {

double sumOfSquares(const Tensor& t)
{
    double sum = 0.0;
    for (std::int64_t i = 0; i < t.size(); ++i) {
        const double x = t[i];
        sum += x * x;
    }
    return sum;
}

bool allFinite(const Tensor& t)
{
    for (std::int64_t i = 0; i < t.size(); ++i)
        if (!std::isfinite(t[i])) return false;
    return true;
}

}  // namespace

UnscaleResult unscaleGradients(const std::vector<Parameter*>& params, float invScale,
                               const PrecisionRecipe& recipe)
{
    UnscaleResult result;
    for (const Parameter* p : params) {
        if (!allFinite(p->grad)) {
            // The step will be skipped; the gradients are of no further use.
            result.foundNonFinite = true;
            result.gradNorm = std::numeric_limits<double>::infinity();
            return result;
        }
    }

    // Beside fp32 masters the gradients are fp32; without masters they are tensors of
    // the storage format, so the product is stored rounded.
    const Format gradFormat = recipe.gradientFormat();
    double sum = 0.0;
    for (Parameter* p : params) {
        Tensor& g = p->grad;
        if (invScale != 1.0f) {
            for (std::int64_t i = 0; i < g.size(); ++i) g[i] *= invScale;
            roundWritten(gradFormat, g.data(), static_cast<std::size_t>(g.size()));
        }
        sum += sumOfSquares(g);
    }
    result.gradNorm = std::sqrt(sum);
    return result;
}

double clipGradNorm(const std::vector<Parameter*>& params, double maxNorm)
{
    if (!std::isfinite(maxNorm) || !(maxNorm > 0.0))
        throw std::invalid_argument("the gradient-norm limit must be a positive finite number, got " +
                                    std::to_string(maxNorm));
    double sum = 0.0;
    for (const Parameter* p : params) sum += sumOfSquares(p->grad);
    const double total = std::sqrt(sum);
    if (!std::isfinite(total)) return total;

    const double clipCoefficient = maxNorm / (total + 1e-6);   // as clip_grad_norm_
    if (clipCoefficient >= 1.0) return total;
    const auto coefficient = static_cast<float>(clipCoefficient);
    for (Parameter* p : params) {
        Tensor& g = p->grad;
        for (std::int64_t i = 0; i < g.size(); ++i) g[i] *= coefficient;
        roundWritten(g.storage(), g.data(), static_cast<std::size_t>(g.size()));
    }
    return total;
}

}  // namespace plab
