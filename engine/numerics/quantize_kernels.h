// Internal to numerics/quantize: the element rule both the portable code (quantize.cpp)
// and the AVX-512 and AVX2 kernels (quantize_avx512.cpp, quantize_avx2.cpp) apply, and the kernels' entry points (run
// where numerics/simd_level.h's simdLevel() says so).
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/rounding_stats.h"

#include <cstddef>
#include <cstdint>

namespace plab::detail {

// A format's rounding, from minifloat's table: magnitudes in binade e (clamped to
// [minNormalLog2, maxExponent]) round at the quantum 2^(e - mantissaBits); above maxFinite
// they saturate.
struct ElementRule {
    int minNormalLog2;
    int maxExponent;      // the binade of the largest finite value
    int mantissaBits;
    int emax;             // OCP MX's emax of the element format
    float maxFinite;
    float minNormal;
    // MX scale rounding ceil: a block's exponent is one more where its amax's fp32 mantissa
    // field exceeds this one, the largest finite's (amax / 2^(floor - emax) would pass the
    // largest finite); all ones (never) for floor.
    std::uint32_t ceilAbove = 0xFFFFFFFFu;
    static ElementRule of(MiniFormat f, MxScaleRounding mxScale = MxScaleRounding::floor);
};

// Counts of the statistics of quantize.h, without the histogram.
struct LaneCounts {
    std::uint64_t zerosIn = 0, nan = 0, infIn = 0, underflow = 0, subnormal = 0, overflow = 0;
    void addTo(RoundingStats& s, std::uint64_t count) const;
    // Adds the vector kernels' totals, which count zero results and results below the
    // smallest normal: underflow = zero results - zero inputs, subnormal = results below
    // the smallest normal - zero results.
    void addTally(std::uint64_t zeroInputs, std::uint64_t zeroResults, std::uint64_t belowNormal,
                  std::uint64_t saturated, std::uint64_t nanInputs, std::uint64_t infInputs)
    {
        zerosIn += zeroInputs;
        underflow += zeroResults - zeroInputs;
        subnormal += belowNormal - zeroResults;
        overflow += saturated;
        nan += nanInputs;
        infIn += infInputs;
    }
};

// 2^e as fp32 for e in [-127, 127] (the subnormal 2^-127 included): MX scales. With the
// elements' lowest bit at least 2^-9, P * 2^e and x * 2^-e of a block are exact in fp32.
inline float powerOfTwo(int e)
{
    return e >= -126 ? floatFromBits(static_cast<std::uint32_t>(e + 127) << 23) : floatFromBits(1u << (e + 149));
}

// FP8 held as codes (quantizeToCodes, decodeScaled): the fields of an 8-bit format.
struct CodeRule {
    int bias;
    int mantissaBits;
    int minNormalLog2;
    float perSubnormal;   // 2^-minSubnormalLog2: a subnormal's magnitude times this is its code
    float subnormal;      // 2^minSubnormalLog2: the value of code 1
    int firstSpecial;     // the least magnitude code of an infinity or NaN (E4M3 0x7F, E5M2 0x7C)
    int infinity;         // the magnitude code of infinity (E5M2 0x7C; E4M3 none: 0x100)
    static CodeRule of(MiniFormat f);
};

// The code of q, a value of the format or NaN (S.1111111, E4M3's and E5M2's NaN): sign,
// biased exponent and the mantissa's top bits for a normal, the multiple of the smallest
// subnormal for a subnormal (exact: q * perSubnormal is an integer below 2^mantissaBits).
inline std::uint8_t codeOf(const CodeRule& r, float q)
{
    const std::uint32_t bits = bitsOf(q);
    const std::uint32_t sign = (bits >> 31) << 7, a = bits & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return static_cast<std::uint8_t>(sign | 0x7Fu);
    const int field = static_cast<int>(a >> 23);
    if (field >= r.minNormalLog2 + 127)
        return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(field - 127 + r.bias) << r.mantissaBits |
                                         (a & 0x7FFFFFu) >> (23 - r.mantissaBits));
    return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(floatFromBits(a) * r.perSubnormal));
}

// codes[i] = codeOf(r, q[i]), 16 or 8 lanes at a time.
void encodeCodesAvx512(const CodeRule& r, const float* q, std::uint8_t* codes, std::size_t n);
void encodeCodesAvx2(const CodeRule& r, const float* q, std::uint8_t* codes, std::size_t n);
// dst[i] = the value of codes[i] times scaleInv, from the code's fields (a normal's
// exponent rebiased, a subnormal's multiple converted and scaled, infinity and NaN
// patterns), 16 or 8 lanes at a time.
void decodeCodesAvx512(const CodeRule& r, const std::uint8_t* codes, float* dst, std::size_t n, float scaleInv);
void decodeCodesAvx2(const CodeRule& r, const std::uint8_t* codes, float* dst, std::size_t n, float scaleInv);
// The same for one code.
inline float valueOf(const CodeRule& r, std::uint8_t code)
{
    const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80) << 24, magnitude = code & 0x7Fu;
    std::uint32_t bits = 0;
    if (static_cast<int>(magnitude) >= r.firstSpecial)
        bits = static_cast<int>(magnitude) == r.infinity ? 0x7F800000u : 0x7FC00000u;
    else if (magnitude >> r.mantissaBits)
        bits = (magnitude << (23 - r.mantissaBits)) + (static_cast<std::uint32_t>(127 - r.bias) << 23);
    else
        bits = bitsOf(static_cast<float>(magnitude) * r.subnormal);
    return floatFromBits(bits | sign);
}

// Per tensor: as quantizeScaled without a histogram; returns the amax of src.
float quantizeScaledAvx512(const ElementRule& rule, const float* src, float* dst, std::size_t n, float scale,
                           float scaleInv, LaneCounts& counts);

// As amaxOf.
float amaxAvx512(const float* src, std::size_t n);

// An MX block's shared exponent from its amax (MX v1.0 section 6.3): floor(log2 amax) -
// emax (plus one where rule.ceilAbove says so), clamped to [-127, 127], -127 for zeros,
// kNanExponent for a NaN or infinite amax.
inline constexpr int kNanExponent = 1000;
int mxBlockExponent(const ElementRule& rule, float amax);

// MX blocks of one row of `cols` values: each block's exponent from its amax, as
// quantizeMxBlocks; blockExponents receives each block's exponent (kNanExponent: NaN scale).
void mxRowAvx512(const ElementRule& rule, const float* src, float* dst, std::int64_t cols, LaneCounts& counts,
                 int* blockExponents);

// MX blocks down the columns of a band of `rows` (<= kMxBlockSize) rows, row stride ld,
// each column's exponent chosen from its amax as quantizeMxBlocks does; blockExponents
// (may be null) receives them (kNanExponent: NaN scale).
void mxBandAvx512(const ElementRule& rule, const float* src, float* dst, std::int64_t rows, std::int64_t cols,
                  std::int64_t ld, int* blockExponents, LaneCounts& counts);

// NVFP4 (minifloat.h): one block's scales from its amax (finite), shared by the portable
// code and the kernels: S_b = e4m3(largest * (S_enc * (1/6))) and the element multiplier
// min(1 / (S_b * (1 / S_enc)), fp32 max).
struct Nvfp4Scales {
    float tensorScale;    // S_enc
    float decodeTensor;   // 1 / S_enc
    float perAmax;        // S_enc * (1/6)
    static Nvfp4Scales of(float tensorAmax);
};
struct Nvfp4BlockScale {
    float block;     // S_b (0: the block's values are lost)
    float element;   // the multiplier of the block's values
};
Nvfp4BlockScale nvfp4BlockScale(const Nvfp4Scales& t, float largest);
// Counts a block's scale factor S_b / S_enc in blockScales (may be null): the bin of its
// exponent, zeros for 0, nonFinite for NaN.
void countNvfp4Scale(GradientHistogram* blockScales, float decode);

// NVFP4 blocks of 16 along one row of `cols` values (rule: E2M1's), as quantizeNvfp4Blocks.
void nvfp4RowAvx512(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst, std::int64_t cols,
                    LaneCounts& counts, GradientHistogram* blockScales);
// NVFP4 blocks down the columns of a band of `rows` (<= 16) rows, row stride ld, each
// column's scales chosen from its amax, as quantizeNvfp4Blocks (blockScales may be null).
void nvfp4BandAvx512(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst, std::int64_t rows,
                     std::int64_t cols, std::int64_t ld, LaneCounts& counts, GradientHistogram* blockScales);

// The AVX2 kernels (quantize_avx2.cpp): as the AVX-512 ones above, 8 lanes at a time.
float quantizeScaledAvx2(const ElementRule& rule, const float* src, float* dst, std::size_t n, float scale,
                         float scaleInv, LaneCounts& counts);
float amaxAvx2(const float* src, std::size_t n);
void mxRowAvx2(const ElementRule& rule, const float* src, float* dst, std::int64_t cols, LaneCounts& counts,
               int* blockExponents);
void mxBandAvx2(const ElementRule& rule, const float* src, float* dst, std::int64_t rows, std::int64_t cols,
                std::int64_t ld, int* blockExponents, LaneCounts& counts);
void nvfp4RowAvx2(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst, std::int64_t cols,
                  LaneCounts& counts, GradientHistogram* blockScales);
void nvfp4BandAvx2(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst, std::int64_t rows,
                   std::int64_t cols, std::int64_t ld, LaneCounts& counts, GradientHistogram* blockScales);

}  // namespace plab::detail
