// Optimizer state, rounding of written values, and the rounded, counted weight update
// that SGD and Adam share.
#include "optim/update_rules.h"

#include "numerics/bulk_round.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace plab {

void roundWritten(Format f, float* x, std::size_t n)
{
    if (f != Format::fp32 && n) roundArray(f, x, n);
}

bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory)
{
    if (state.size() != elementCount(shape) || state.size() == 0) {
        state = Tensor(shape, format);   // zero-filled
        state.track(memory, MemoryCategory::optimizerState);
        return true;
    }
    if (state.storage() != format) {
        // fp32 -> fp16/bf16 rounds; the other way (a promotion) is exact.
        roundWritten(format, state.data(), static_cast<std::size_t>(state.size()));
        state.setStorage(format);
    }
    return false;
}

PLAB_FMA_CLONES void applyUpdate(Format f, float* p, const float* direction, float alpha, std::size_t n, UpdateCounts& counts)
{
    constexpr std::size_t kBlock = 256;
    std::array<float, kBlock> before{};
    for (std::size_t start = 0; start < n; start += kBlock) {
        const std::size_t len = std::min(kBlock, n - start);
        float* w = p + start;
        const float* d = direction + start;
        for (std::size_t i = 0; i < len; ++i) {
            before[i] = w[i];
            w[i] = std::fma(alpha, d[i], w[i]);
        }
        roundWritten(f, w, len);
        for (std::size_t i = 0; i < len; ++i) {
            // NaN compares unequal to 0 and to itself: a NaN update is nonzero, never lost.
            const double update = static_cast<double>(alpha) * static_cast<double>(d[i]);
            if (update == 0.0) continue;
            ++counts.nonzero;
            if (w[i] == before[i]) ++counts.lost;
            // Adam's eps is 0 in fp16: 0/0 makes NaN weights; an overflow makes inf.
            if (!std::isfinite(w[i]) && std::isfinite(before[i])) ++counts.nonFinite;
        }
    }
}

}  // namespace plab
