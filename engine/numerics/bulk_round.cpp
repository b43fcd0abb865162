// Bulk rounding of fp32 arrays: the portable scalar path, the shared histogram folding,
// and the dispatch to the AVX-512 or AVX2 kernels (bulk_round_avx512.cpp,
// bulk_round_avx2.cpp) by simdLevel().
// Every path gives the bits of roundTo() and the same statistics.
#include "numerics/bulk_round.h"

#include "numerics/simd_support.h"

#include <algorithm>
#include <bit>

namespace plab {

namespace detail {

// Defined in bulk_round_avx512.cpp and bulk_round_avx2.cpp (compiled with function-level
// target attributes, so this file and its callers stay baseline x86-64).
void roundArrayAvx512(Format f, const float* src, float* dst, std::size_t n,
                      RoundingStats* stats, GradientHistogram* hist);
void roundArrayAvx2(Format f, const float* src, float* dst, std::size_t n,
                    RoundingStats* stats, GradientHistogram* hist);

void addExponentByteCounts(const std::uint64_t (&byteCounts)[256], std::uint64_t subnormalInputs,
                           GradientHistogram& hist)
{
    constexpr int kBiasedToBin = -127 - GradientHistogram::kMinExponent;  // 22
    for (int b = 1; b <= 254; ++b) hist.bins[static_cast<std::size_t>(b + kBiasedToBin)] += byteCounts[b];
    hist.nonFinite += byteCounts[255];
    hist.zeros += byteCounts[0] - subnormalInputs;
}

int subnormalExponent(std::uint32_t absBits)
{
    return GradientHistogram::kMinExponent + std::bit_width(absBits) - 1;
}

}  // namespace detail

namespace {

constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kInfBits = 0x7F800000u;

// The reference path: one element at a time with roundTo(). Also what the tests compare
// the vector kernels with (simdLevel() capped at scalar).
void roundArrayScalar(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                      GradientHistogram* hist)
{
    // Four interleaved tables, so that runs of equal exponents (gradients cluster in a few
    // binades) do not serialise on one counter's load-increment-store.
    std::uint64_t byteCounts[4][256] = {};
    std::uint64_t subnormalInputs = 0;
    RoundingStats local;
    std::uint32_t largestFiniteBits = 0;
    const std::uint32_t minNormalBits = (f == Format::fp16) ? 0x38800000u : 0x00800000u;

    for (std::size_t i = 0; i < n; ++i) {
        const float in = src[i];  // read before the write: src and dst may alias
        const float out = roundTo(f, in);
        dst[i] = out;
        const std::uint32_t a = bitsOf(in) & kAbsMask;
        if (hist) {
            const std::uint32_t biased = a >> 23;
            ++byteCounts[i & 3][biased];
            if (biased == 0 && a != 0) {
                ++subnormalInputs;
                ++hist->bins[static_cast<std::size_t>(
                    GradientHistogram::binOf(detail::subnormalExponent(a)))];
            }
        }
        if (stats) {
            const std::uint32_t aOut = bitsOf(out) & kAbsMask;
            local.zerosIn += (a == 0);
            local.nan += (a > kInfBits);
            local.infIn += (a == kInfBits);
            local.underflow += (a != 0 && aOut == 0);
            local.overflow += (a != kInfBits && aOut == kInfBits);
            local.subnormal += (aOut != 0 && aOut < minNormalBits);
            if (a < kInfBits) largestFiniteBits = std::max(largestFiniteBits, a);
        }
    }
    if (stats) {
        local.count = n;
        local.largestFinite = floatFromBits(largestFiniteBits);
        *stats += local;
    }
    if (hist) {
        std::uint64_t merged[256];
        for (int b = 0; b < 256; ++b)
            merged[b] = byteCounts[0][b] + byteCounts[1][b] + byteCounts[2][b] + byteCounts[3][b];
        detail::addExponentByteCounts(merged, subnormalInputs, *hist);
    }
}

}  // namespace

void roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                GradientHistogram* hist)
{
    if (n == 0) return;
    switch (simdLevel()) {
    case SimdLevel::avx512: detail::roundArrayAvx512(f, src, dst, n, stats, hist); return;
    case SimdLevel::avx2: detail::roundArrayAvx2(f, src, dst, n, stats, hist); return;
    case SimdLevel::scalar: roundArrayScalar(f, src, dst, n, stats, hist); return;
    }
}

void roundArray(Format f, float* x, std::size_t n, RoundingStats* stats, GradientHistogram* hist)
{
    roundArray(f, x, x, n, stats, hist);
}

const char* bulkRoundPath() { return simdLevelName(simdLevel()); }

}  // namespace plab
