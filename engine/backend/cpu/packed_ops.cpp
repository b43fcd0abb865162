// The CPU's element-wise layer ops on packed 16-bit tensors (see packed_ops.h).
#include "backend/cpu/packed_ops.h"

#include "backend/cpu/layer_ops.h"
#include "numerics/storage_convert.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace plab::cpu {

namespace {

constexpr std::int64_t kChunk = 4096;   // values widened at a time (on the stack)

std::uint16_t nanAbove(Format f) { return f == Format::fp16 ? 0x7C00u : 0x7F80u; }

// x <= 0 for a 16-bit pattern: a zero of either sign, or a negative number (not a NaN).
inline bool atMostZero(std::uint16_t b, std::uint16_t infBits)
{
    const std::uint16_t magnitude = b & 0x7FFFu;
    return magnitude == 0 || ((b & 0x8000u) && magnitude <= infBits);
}

}  // namespace

void addBiasRoundTo16(ThreadPool& pool, Format f, const float* x, std::uint16_t* out, std::int64_t n,
                      const float* bias, std::int64_t period, std::int64_t repeat, RoundingStats* stats,
                      GradientHistogram* hist)
{
    parallelForCounted(pool, n, 1 << 14, stats, hist,
                       [&](std::int64_t begin, std::int64_t end, RoundingStats* s, GradientHistogram* h) {
                           float sum[kChunk];
                           for (std::int64_t first = begin; first < end; first += kChunk) {
                               const std::int64_t last = std::min(end, first + kChunk);
                               for (std::int64_t i = first; i < last;) {   // runs of one bias value
                                   const std::int64_t run = i / repeat, runEnd = std::min(last, (run + 1) * repeat);
                                   const float b = bias[run % period];
                                   for (; i < runEnd; ++i) sum[i - first] = x[i] + b;
                               }
                               roundArrayTo16(f, sum, out + first, static_cast<std::size_t>(last - first), s, h);
                           }
                       });
}

void widen16(ThreadPool& pool, Format f, const std::uint16_t* src, float* dst, std::int64_t n)
{
    pool.parallelFor(n, 1 << 16, [&](std::int64_t b, std::int64_t e) {
        widenArray(f, src + b, dst + b, static_cast<std::size_t>(e - b));
    });
}

void roundTo16(ThreadPool& pool, Format f, const float* src, std::uint16_t* dst, std::int64_t n, RoundingStats* stats,
               GradientHistogram* hist)
{
    parallelForCounted(pool, n, 1 << 16, stats, hist,
                       [&](std::int64_t b, std::int64_t e, RoundingStats* s, GradientHistogram* h) {
                           roundArrayTo16(f, src + b, dst + b, static_cast<std::size_t>(e - b), s, h);
                       });
}

void relu16(ThreadPool& pool, Format f, std::uint16_t* x, std::int64_t n)
{
    const std::uint16_t inf = nanAbove(f);
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) x[i] = atMostZero(x[i], inf) ? std::uint16_t{0} : x[i];
    });
}

void reluBackward16(ThreadPool& pool, Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n)
{
    const std::uint16_t inf = nanAbove(f);
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) g[i] = atMostZero(y[i], inf) ? std::uint16_t{0} : g[i];
    });
}

void maxPool2x2Packed(ThreadPool& pool, Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H,
                      std::int64_t W, std::uint16_t* out, std::uint8_t* argmax)
{
    // A plane widened at a time, pooled by the fp32 kernel (its winners and positions),
    // then the winners' own bits copied: no rounding anywhere.
    const std::int64_t Ho = H / 2, Wo = W / 2;
    pool.parallelFor(planes, 8, [&](std::int64_t p0, std::int64_t p1) {
        std::vector<float> plane(static_cast<std::size_t>(H * W));
        std::vector<float> pooled(static_cast<std::size_t>(Ho * Wo));
        for (std::int64_t p = p0; p < p1; ++p) {
            const std::uint16_t* src = in + p * H * W;
            widenArray(f, src, plane.data(), plane.size());
            std::uint8_t* at = argmax + p * Ho * Wo;
            maxPool2x2Plane(plane.data(), H, W, pooled.data(), at);
            std::uint16_t* dst = out + p * Ho * Wo;
            for (std::int64_t y = 0; y < Ho; ++y)
                for (std::int64_t x = 0; x < Wo; ++x) {
                    const int k = at[y * Wo + x];
                    dst[y * Wo + x] = src[(2 * y + k / 2) * W + 2 * x + k % 2];
                }
        }
    });
}

}  // namespace plab::cpu
