// Gradient accumulation's arithmetic (grad_accumulation.h).
#include "optim/grad_accumulation.h"

#include <algorithm>
#include <cmath>

namespace plab {

AccumulationCounts accumulateGradient(float* buffer, const float* grad, std::int64_t n, Format f, bool first)
{
    AccumulationCounts counts;
    if (first) {
        for (std::int64_t i = 0; i < n; ++i) buffer[i] = roundTo(f, grad[i]);
        return counts;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        const float before = buffer[i];
        const float after = roundTo(f, before + roundTo(f, grad[i]));
        if (grad[i] != 0.0f && std::isfinite(grad[i])) {
            ++counts.nonzero;
            if (after == before) ++counts.lost;
        }
        buffer[i] = after;
    }
    return counts;
}

std::int64_t accumulationParts(std::int64_t batch, int steps)
{
    return std::max<std::int64_t>(1, std::min<std::int64_t>(batch, steps));
}

std::int64_t accumulationPartStart(std::int64_t batch, std::int64_t parts, std::int64_t k)
{
    return batch * k / parts;
}

}  // namespace plab
