// The bulk quantisers of quantize.h. One element rule for every format: a magnitude a in
// binade e (clamped to the format's normal range) is rounded to a multiple of the quantum
// 2^q, q = e - mantissa bits, by (a + 2^(q+23)) - 2^(q+23): the sum lies in [2^(q+23),
// 2^(q+24)), where fp32's step is 2^q, so the addition rounds a to nearest even at the
// quantum and the subtraction is exact. A result above the largest finite saturates.
#include "numerics/quantize.h"

#include "numerics/format.h"
#include "numerics/quantize_kernels.h"
#include "numerics/simd_support.h"
#include "numerics/storage_convert.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace plab {

namespace {

constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kInfBits = 0x7F800000u;

using detail::ElementRule;

// |a| (finite, >= 0) rounded to the format's precision, before saturation (may exceed
// maxFinite).
float roundUnsaturated(const ElementRule& rule, float a)
{
    const int e = static_cast<int>(bitsOf(a) >> 23) - 127;   // fp32 subnormals: -127
    const int q = std::clamp(e, rule.minNormalLog2, rule.maxExponent) - rule.mantissaBits;
    const float magic = floatFromBits(static_cast<std::uint32_t>(q + 23 + 127) << 23);
    return (a + magic) - magic;
}


// Counts of one thread's share, folded into the caller's at the end.
struct Counts {
    RoundingStats stats;
    std::uint64_t byteCounts[256] = {};   // histogram by fp32 exponent byte
    std::uint64_t subnormalInputs = 0;
    GradientHistogram* hist = nullptr;

    // x: the value given to the format (scaled); r: its rounded magnitude; saturated: x was
    // finite and rounded above the largest finite value.
    void add(float x, float r, bool saturated, const ElementRule& rule)
    {
        const std::uint32_t a = bitsOf(x) & kAbsMask;
        stats.zerosIn += (a == 0);
        stats.nan += (a > kInfBits);
        stats.infIn += (a == kInfBits);
        stats.underflow += (a != 0 && a < kInfBits && r == 0.0f);
        stats.subnormal += (r != 0.0f && r < rule.minNormal);
        stats.overflow += saturated;
        if (hist) {
            ++byteCounts[a >> 23];
            if ((a >> 23) == 0 && a != 0) {
                ++subnormalInputs;
                ++hist->bins[static_cast<std::size_t>(GradientHistogram::binOf(detail::subnormalExponent(a)))];
            }
        }
    }

    void finish(std::uint64_t count, RoundingStats* out)
    {
        stats.count += count;
        if (out) *out += stats;
        if (hist) detail::addExponentByteCounts(byteCounts, subnormalInputs, *hist);
    }
};

// x rounded as a signed value, saturating: NaN stays NaN, an infinity becomes the largest
// finite value like any value above it. *magnitude: |result|; *saturated: a finite x that
// rounded above the largest finite value.
float roundSigned(const ElementRule& rule, float x, float* magnitude, bool* saturated)
{
    *saturated = false;
    if (std::isnan(x)) {
        *magnitude = x;
        return x;
    }
    const float a = std::fabs(x);
    float r = rule.maxFinite;
    if (!std::isinf(a)) {
        r = roundUnsaturated(rule, a);
        if (r > rule.maxFinite) {
            r = rule.maxFinite;
            *saturated = true;
        }
    }
    *magnitude = r;
    return std::signbit(x) ? -r : r;
}

}  // namespace

namespace detail {

CodeRule CodeRule::of(MiniFormat f)
{
    const MiniFormatInfo& i = miniFormatInfo(f);
    const int infinity = i.hasInf ? (((1 << i.exponentBits) - 1) << i.mantissaBits) : 0x100;
    const int firstSpecial = i.hasInf ? infinity : 0x7F;   // E4M3: S.1111.111 only
    return {i.bias, i.mantissaBits, i.minNormalLog2, std::ldexp(1.0f, -i.minSubnormalLog2),
            std::ldexp(1.0f, i.minSubnormalLog2), firstSpecial, infinity};
}

ElementRule ElementRule::of(MiniFormat f, MxScaleRounding mxScale)
{
    const MiniFormatInfo& i = miniFormatInfo(f);
    ElementRule rule{i.minNormalLog2, std::ilogb(i.maxFinite), i.mantissaBits, mxElementEmax(f),
                     static_cast<float>(i.maxFinite), std::ldexp(1.0f, i.minNormalLog2)};
    if (mxScale == MxScaleRounding::ceil) rule.ceilAbove = bitsOf(rule.maxFinite) & 0x7FFFFFu;
    return rule;
}

int mxBlockExponent(const ElementRule& rule, float amax)
{
    if (!std::isfinite(amax)) return kNanExponent;
    if (amax == 0.0f) return -127;
    // floor(log2 amax): the exponent field of a normal fp32 value (ilogb for subnormals).
    const std::uint32_t bits = bitsOf(amax);
    const int biased = static_cast<int>(bits >> 23);
    const int log2 = biased > 0 ? biased - 127 : std::ilogb(amax);
    const int up = (bits & 0x7FFFFFu) > rule.ceilAbove ? 1 : 0;   // ceil: the amax would pass the largest finite
    return std::clamp(log2 - rule.emax + up, -127, 127);
}

void LaneCounts::addTo(RoundingStats& s, std::uint64_t count) const
{
    s.count += count;
    s.zerosIn += zerosIn;
    s.nan += nan;
    s.infIn += infIn;
    s.underflow += underflow;
    s.subnormal += subnormal;
    s.overflow += overflow;
}

}  // namespace detail

const char* quantizePath() { return simdLevelName(simdLevel()); }

float amaxOf(const float* src, std::size_t n)
{
    switch (simdLevel()) {
    case SimdLevel::avx512: return detail::amaxAvx512(src, n);
    case SimdLevel::avx2: return detail::amaxAvx2(src, n);
    case SimdLevel::scalar: break;
    }
    float amax = 0.0f;
    bool nan = false;
    for (std::size_t i = 0; i < n; ++i) {
        const float a = std::fabs(src[i]);
        nan |= std::isnan(a);
        amax = a > amax ? a : amax;
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}

float quantizeScaled(MiniFormat f, const float* src, float* dst, std::size_t n, float scale, float scaleInv,
                     RoundingStats* stats, GradientHistogram* hist)
{
    const ElementRule rule = ElementRule::of(f);
    const SimdLevel level = simdLevel();
    if (!hist && level != SimdLevel::scalar) {
        detail::LaneCounts lanes;
        const float amax = level == SimdLevel::avx512 ? detail::quantizeScaledAvx512(rule, src, dst, n, scale, scaleInv, lanes)
                                       : detail::quantizeScaledAvx2(rule, src, dst, n, scale, scaleInv, lanes);
        if (stats) lanes.addTo(*stats, n);
        return amax;
    }
    Counts counts;
    counts.hist = hist;
    float amax = 0.0f;
    bool nan = false;
    for (std::size_t i = 0; i < n; ++i) {
        const float in = src[i];   // read before the write: src and dst may alias
        const float a = std::fabs(in);
        nan |= std::isnan(a);
        amax = a > amax ? a : amax;
        const float x = in * scale;
        float r = 0.0f;
        bool saturated = false;
        const float q = roundSigned(rule, x, &r, &saturated);
        dst[i] = q * scaleInv;
        if (stats || hist) counts.add(x, r, saturated, rule);
    }
    counts.finish(n, stats);
    return nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}

namespace {

void requireFp8(MiniFormat f, const char* what)
{
    if (f != MiniFormat::e4m3 && f != MiniFormat::e5m2)
        throw std::invalid_argument(std::string(what) + " holds FP8 (E4M3 or E5M2) codes only, not " +
                                    std::string(miniFormatInfo(f).name) + ".");
}

}  // namespace

float quantizeToCodes(MiniFormat f, const float* src, std::uint8_t* codes, std::size_t n, float scale,
                      RoundingStats* stats, GradientHistogram* hist)
{
    requireFp8(f, "quantizeToCodes");
    const detail::CodeRule rule = detail::CodeRule::of(f);
    const SimdLevel level = simdLevel();
    // Chunk by chunk through a buffer in the cache: quantizeScaled's values unscaled (its
    // counts are of x and its rounding, not of what it writes), then their codes.
    constexpr std::size_t kChunk = 1024;
    float q[kChunk];
    float amax = 0.0f;
    bool nan = false;
    for (std::size_t b = 0; b < n; b += kChunk) {
        const std::size_t m = std::min(kChunk, n - b);
        const float a = quantizeScaled(f, src + b, q, m, scale, 1.0f, stats, hist);
        nan |= std::isnan(a);
        amax = std::max(amax, a);
        if (level == SimdLevel::avx512)
            detail::encodeCodesAvx512(rule, q, codes + b, m);
        else if (level == SimdLevel::avx2)
            detail::encodeCodesAvx2(rule, q, codes + b, m);
        else
            for (std::size_t i = 0; i < m; ++i) codes[b + i] = detail::codeOf(rule, q[i]);
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}

namespace {
constexpr std::size_t kWidenChunk = 1024;

// part(wide, b, m) for each cache-sized chunk [b, b + m) of the patterns, widened; the
// largest amax part returns (NaN if one is NaN).
template <class Part>
float inWidenedChunks(Format from, const std::uint16_t* src, std::size_t n, const Part& part)
{
    float wide[kWidenChunk];
    float amax = 0.0f;
    bool nan = false;
    for (std::size_t b = 0; b < n; b += kWidenChunk) {
        const std::size_t m = std::min(kWidenChunk, n - b);
        widenArray(from, src + b, wide, m);
        const float a = part(wide, b, m);
        nan |= std::isnan(a);
        amax = std::max(amax, a);
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}
}  // namespace

float quantizeToCodes(MiniFormat f, Format from, const std::uint16_t* src, std::uint8_t* codes, std::size_t n,
                      float scale, RoundingStats* stats, GradientHistogram* hist)
{
    return inWidenedChunks(from, src, n, [&](const float* wide, std::size_t b, std::size_t m) {
        return quantizeToCodes(f, wide, codes + b, m, scale, stats, hist);
    });
}

float quantizeScaled(MiniFormat f, Format from, const std::uint16_t* src, float* dst, std::size_t n, float scale,
                     float scaleInv, RoundingStats* stats, GradientHistogram* hist)
{
    return inWidenedChunks(from, src, n, [&](const float* wide, std::size_t b, std::size_t m) {
        return quantizeScaled(f, wide, dst + b, m, scale, scaleInv, stats, hist);
    });
}

float amaxOf(Format from, const std::uint16_t* src, std::size_t n)
{
    float wide[kWidenChunk];
    float amax = 0.0f;
    for (std::size_t b = 0; b < n; b += kWidenChunk) {
        const std::size_t m = std::min(kWidenChunk, n - b);
        widenArray(from, src + b, wide, m);
        const float a = amaxOf(wide, m);
        if (std::isnan(a)) return a;
        amax = std::max(amax, a);
    }
    return amax;
}

void decodeScaled(MiniFormat f, const std::uint8_t* codes, float* dst, std::size_t n, float scaleInv)
{
    requireFp8(f, "decodeScaled");
    const detail::CodeRule rule = detail::CodeRule::of(f);
    switch (simdLevel()) {
    case SimdLevel::avx512: detail::decodeCodesAvx512(rule, codes, dst, n, scaleInv); return;
    case SimdLevel::avx2: detail::decodeCodesAvx2(rule, codes, dst, n, scaleInv); return;
    default: break;
    }
    for (std::size_t i = 0; i < n; ++i) dst[i] = detail::valueOf(rule, codes[i]) * scaleInv;
}

float fp8ScaleFor(MiniFormat f, float amax, float previous, int margin)
{
    // transformer_engine/pytorch/fp8.py, _default_sf_compute: sf = (fp8_max / amax) / 2^margin,
    // kept where amax is not > 0 or not finite, fp32 max where it overflows.
    if (!(amax > 0.0f) || !std::isfinite(amax)) return previous;
    const float fp8Max = static_cast<float>(miniFormatInfo(f).maxFinite);
    const float sf = (fp8Max / amax) / std::ldexp(1.0f, margin);
    if (std::isinf(sf)) return std::numeric_limits<float>::max();
    return sf;
}

void quantizeMxBlocks(MiniFormat f, const float* src, float* dst, std::int64_t rows, std::int64_t cols,
                      std::int64_t ld, bool alongRows, RoundingStats* stats, GradientHistogram* hist,
                      GradientHistogram* blockScales, MxScaleRounding rounding)
{
    const ElementRule rule = ElementRule::of(f, rounding);
    auto countExponent = [&](int e) {
        if (!blockScales) return;
        if (e == detail::kNanExponent)
            ++blockScales->nonFinite;
        else
            ++blockScales->bins[static_cast<std::size_t>(GradientHistogram::binOf(e))];
    };
    const SimdLevel level = simdLevel();
    if (!hist && level != SimdLevel::scalar) {
        const bool wide = level == SimdLevel::avx512;
        detail::LaneCounts lanes;
        // The kernels choose the exponents (the row kernel writes them out, the band kernel
        // when asked); they are kept only to be counted.
        const auto rowBlocks = static_cast<std::size_t>((cols + kMxBlockSize - 1) / kMxBlockSize);
        std::vector<int> exponents(alongRows ? rowBlocks : blockScales ? static_cast<std::size_t>(cols) : 0);
        for (std::int64_t r = 0; alongRows && r < rows; ++r) {
            if (wide) detail::mxRowAvx512(rule, src + r * ld, dst + r * ld, cols, lanes, exponents.data());
            else detail::mxRowAvx2(rule, src + r * ld, dst + r * ld, cols, lanes, exponents.data());
            if (blockScales)
                for (int e : exponents) countExponent(e);
        }
        for (std::int64_t r0 = 0; !alongRows && r0 < rows; r0 += kMxBlockSize) {
            const std::int64_t at = r0 * ld;
            const std::int64_t band = std::min<std::int64_t>(rows - r0, kMxBlockSize);
            if (wide)
                detail::mxBandAvx512(rule, src + at, dst + at, band, cols, ld, blockScales ? exponents.data() : nullptr, lanes);
            else
                detail::mxBandAvx2(rule, src + at, dst + at, band, cols, ld, blockScales ? exponents.data() : nullptr, lanes);
            for (int e : exponents) countExponent(e);
        }
        if (stats) lanes.addTo(*stats, static_cast<std::uint64_t>(rows * cols));
        return;
    }
    Counts counts;
    counts.hist = hist;

    // One element: x / 2^e rounded, written as P * 2^e (both exact, see powerOfTwo); a
    // block with a NaN scale (kNanExponent) is NaN throughout.
    auto quantizeOne = [&](float in, int e, float* out) {
        if (e == detail::kNanExponent) {
            *out = std::numeric_limits<float>::quiet_NaN();
            if (stats || hist) counts.add(std::numeric_limits<float>::quiet_NaN(), 0.0f, false, rule);
            return;
        }
        const float x = in * detail::powerOfTwo(-e);
        float r = 0.0f;
        bool saturated = false;
        const float p = roundSigned(rule, x, &r, &saturated);
        *out = p * detail::powerOfTwo(e);
        if (stats || hist) counts.add(x, r, saturated, rule);
    };

    if (alongRows) {
        for (std::int64_t r = 0; r < rows; ++r) {
            const float* s = src + r * ld;
            float* d = dst + r * ld;
            for (std::int64_t c0 = 0; c0 < cols; c0 += kMxBlockSize) {
                const std::int64_t c1 = std::min<std::int64_t>(cols, c0 + kMxBlockSize);
                const int e = detail::mxBlockExponent(rule, amaxOf(s + c0, static_cast<std::size_t>(c1 - c0)));
                countExponent(e);
                for (std::int64_t c = c0; c < c1; ++c) quantizeOne(s[c], e, d + c);
            }
        }
    } else {
        // Blocks down the columns, taken a band of kMxBlockSize rows at a time: the band's
        // amax per column is gathered row by row (contiguous reads), then applied.
        std::vector<float> amax(static_cast<std::size_t>(cols));
        std::vector<int> exponent(static_cast<std::size_t>(cols));
        for (std::int64_t r0 = 0; r0 < rows; r0 += kMxBlockSize) {
            const std::int64_t r1 = std::min<std::int64_t>(rows, r0 + kMxBlockSize);
            std::fill(amax.begin(), amax.end(), 0.0f);
            for (std::int64_t r = r0; r < r1; ++r) {
                const float* s = src + r * ld;
                for (std::int64_t c = 0; c < cols; ++c) {
                    // A NaN wins and stays: once there, nothing replaces it.
                    float& m = amax[static_cast<std::size_t>(c)];
                    const float a = std::fabs(s[c]);
                    if (!std::isnan(m) && !(a <= m)) m = a;
                }
            }
            for (std::size_t c = 0; c < amax.size(); ++c) {
                exponent[c] = detail::mxBlockExponent(rule, amax[c]);
                countExponent(exponent[c]);
            }
            for (std::int64_t r = r0; r < r1; ++r)
                for (std::int64_t c = 0; c < cols; ++c)
                    quantizeOne(src[r * ld + c], exponent[static_cast<std::size_t>(c)], dst + r * ld + c);
        }
    }
    counts.finish(static_cast<std::uint64_t>(rows * cols), stats);
}

namespace detail {

Nvfp4Scales Nvfp4Scales::of(float tensorAmax)
{
    const float scale = nvfp4TensorScale(tensorAmax);
    return {scale, 1.0f / scale, scale * (1.0f / 6.0f)};
}

Nvfp4BlockScale nvfp4BlockScale(const Nvfp4Scales& t, float largest)
{
    static const ElementRule e4m3 = ElementRule::of(MiniFormat::e4m3);
    float ignored = 0.0f;
    bool saturated = false;
    const float block = roundSigned(e4m3, largest * t.perAmax, &ignored, &saturated);
    return {block, std::min(1.0f / (block * t.decodeTensor), std::numeric_limits<float>::max())};
}

void countNvfp4Scale(GradientHistogram* blockScales, float decode)
{
    if (!blockScales) return;
    const std::uint32_t bits = bitsOf(decode) & kAbsMask;
    if (bits > kInfBits)
        ++blockScales->nonFinite;
    else if (bits == 0)
        ++blockScales->zeros;
    else if ((bits >> 23) == 0)
        ++blockScales->bins[static_cast<std::size_t>(GradientHistogram::binOf(subnormalExponent(bits)))];
    else
        ++blockScales->bins[static_cast<std::size_t>(GradientHistogram::binOf(static_cast<int>(bits >> 23) - 127))];
}

}  // namespace detail

void quantizeNvfp4Blocks(const float* src, float* dst, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         bool alongRows, float tensorAmax, RoundingStats* stats, GradientHistogram* hist,
                         GradientHistogram* blockScales)
{
    const ElementRule element = ElementRule::of(MiniFormat::e2m1);
    const detail::Nvfp4Scales t = detail::Nvfp4Scales::of(tensorAmax);
    const SimdLevel level = simdLevel();
    if (!hist && level != SimdLevel::scalar) {
        const bool wide = level == SimdLevel::avx512;
        detail::LaneCounts lanes;
        if (alongRows) {
            for (std::int64_t r = 0; r < rows; ++r)
                if (wide) detail::nvfp4RowAvx512(element, t, src + r * ld, dst + r * ld, cols, lanes, blockScales);
                else detail::nvfp4RowAvx2(element, t, src + r * ld, dst + r * ld, cols, lanes, blockScales);
        } else {
            for (std::int64_t r0 = 0; r0 < rows; r0 += kNvfp4BlockSize) {
                const std::int64_t band = std::min<std::int64_t>(rows - r0, kNvfp4BlockSize);
                if (wide)
                    detail::nvfp4BandAvx512(element, t, src + r0 * ld, dst + r0 * ld, band, cols, ld, lanes, blockScales);
                else
                    detail::nvfp4BandAvx2(element, t, src + r0 * ld, dst + r0 * ld, band, cols, ld, lanes, blockScales);
            }
        }
        if (stats) lanes.addTo(*stats, static_cast<std::uint64_t>(rows * cols));
        return;
    }
    Counts counts;
    counts.hist = hist;
    const bool counting = stats || hist;

    // One block of `count` values at src[i * step], i < count.
    auto quantizeBlock = [&](const float* s, float* d, std::int64_t count, std::int64_t step) {
        float largest = 0.0f;
        bool nonFinite = false;
        for (std::int64_t i = 0; i < count; ++i) {
            const float a = std::fabs(s[i * step]);
            nonFinite |= !std::isfinite(a);
            largest = a > largest ? a : largest;
        }
        if (nonFinite) {
            detail::countNvfp4Scale(blockScales, std::numeric_limits<float>::quiet_NaN());
            for (std::int64_t i = 0; i < count; ++i) {
                d[i * step] = std::numeric_limits<float>::quiet_NaN();
                if (counting) counts.add(std::numeric_limits<float>::quiet_NaN(), 0.0f, false, element);
            }
            return;
        }
        const detail::Nvfp4BlockScale scale = detail::nvfp4BlockScale(t, largest);
        detail::countNvfp4Scale(blockScales, scale.block * t.decodeTensor);
        if (scale.block == 0.0f) {
            for (std::int64_t i = 0; i < count; ++i) {
                const float in = s[i * step];
                d[i * step] = std::signbit(in) ? -0.0f : 0.0f;
                if (counting) counts.add(in * t.tensorScale, 0.0f, false, element);
            }
            return;
        }
        for (std::int64_t i = 0; i < count; ++i) {
            const float x = s[i * step] * scale.element;
            float r = 0.0f;
            bool sat = false;
            const float p = roundSigned(element, x, &r, &sat);
            d[i * step] = (p * scale.block) / t.tensorScale;
            if (counting) counts.add(x, r, sat, element);
        }
    };

    for (std::int64_t r = 0; alongRows && r < rows; ++r)
        for (std::int64_t c0 = 0; c0 < cols; c0 += kNvfp4BlockSize)
            quantizeBlock(src + r * ld + c0, dst + r * ld + c0, std::min<std::int64_t>(kNvfp4BlockSize, cols - c0), 1);
    for (std::int64_t r0 = 0; !alongRows && r0 < rows; r0 += kNvfp4BlockSize)
        for (std::int64_t c = 0; c < cols; ++c)
            quantizeBlock(src + r0 * ld + c, dst + r0 * ld + c, std::min<std::int64_t>(kNvfp4BlockSize, rows - r0), ld);
    counts.finish(static_cast<std::uint64_t>(rows * cols), stats);
}

}  // namespace plab
