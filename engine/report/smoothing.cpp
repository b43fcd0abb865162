// The loss curves' smoothing (see smoothing.h).
#include "report/smoothing.h"

#include <cmath>
#include <limits>

namespace plab {

std::vector<double> exponentialMovingAverage(std::span<const double> values, double weight)
{
    std::vector<double> out(values.size(), std::numeric_limits<double>::quiet_NaN());
    double average = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (!std::isfinite(values[i])) continue;
        average = weight * average + (1.0 - weight) * values[i];
        norm = weight * norm + (1.0 - weight);
        out[i] = average / norm;
    }
    return out;
}

std::vector<double> smoothedLosses(std::span<const StepEvent> steps, double weight)
{
    std::vector<double> losses(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) losses[i] = steps[i].loss;
    return exponentialMovingAverage(losses, weight);
}

}  // namespace plab
