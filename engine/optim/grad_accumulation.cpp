// Gradient accumulation's arithmetic (grad_accumulation.h).
#include "optim/grad_accumulation.h"

#include "numerics/bulk_round.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace plab {

AccumulationCounts accumulateGradient(float* buffer, const float* grad, std::int64_t n, Format f, bool first)
{
    AccumulationCounts counts;
    if (first) {
        roundArray(f, grad, buffer, static_cast<std::size_t>(n));
        return counts;
    }
    // In chunks, each rounded with the vectorised bulk rounding (the same bits as roundTo):
    // the contributions, then their sums with the buffer.
    constexpr std::int64_t chunk = 512;
    std::array<float, chunk> sum;
    for (std::int64_t lo = 0; lo < n; lo += chunk) {
        const auto m = static_cast<std::size_t>(std::min(chunk, n - lo));
        float* b = buffer + lo;
        const float* g = grad + lo;
        roundArray(f, g, sum.data(), m);
        for (std::size_t i = 0; i < m; ++i) sum[i] += b[i];
        roundArray(f, sum.data(), m);
        for (std::size_t i = 0; i < m; ++i) {
            if (g[i] != 0.0f && std::isfinite(g[i])) {
                ++counts.nonzero;
                if (sum[i] == b[i]) ++counts.lost;
            }
            b[i] = sum[i];
        }
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
