// Exact scalar conversions between fp32 and the reduced formats (fp16, bf16, tf32).
// These are the reference path: the bulk kernels in bulk_round*.cpp must agree with
// them bit for bit. All rounding is done with integer operations on the fp32 bit
// pattern, so the result never depends on MXCSR (FTZ/DAZ) or the compiler's flags.
#include "numerics/format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace plab {

namespace {

constexpr std::uint32_t kSignBit = 0x80000000u;
constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kFp32Inf = 0x7F800000u;
constexpr std::uint32_t kFp32QuietBit = 0x00400000u;

// The formats' facts, in the order of the Format enum.
const std::array<FormatInfo, 4> kFormatInfos{{
    {Format::fp32, "fp32", 8, 23, 4, -149, -126, 127, static_cast<double>(FLT_MAX)},
    {Format::tf32, "tf32", 8, 10, 4, -136, -126, 127, std::ldexp(2.0 - std::ldexp(1.0, -10), 127)},
    {Format::fp16, "fp16", 5, 10, 2, -24, -14, 15, 65504.0},
    {Format::bf16, "bf16", 8, 7, 2, -133, -126, 127, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)},
}};

}  // namespace

const FormatInfo& formatInfo(Format f) { return kFormatInfos[static_cast<std::size_t>(f)]; }

std::uint32_t encodeBits(Format f, float representable)
{
    switch (f) {
    case Format::fp16: return fp32ToFp16Bits(representable);
    case Format::bf16: return fp32ToBf16Bits(representable);
    case Format::tf32: return bitsOf(representable) >> (23 - formatInfo(f).mantissaBits);
    case Format::fp32: break;
    }
    return bitsOf(representable);
}

float decodeBits(Format f, std::uint32_t encoding)
{
    switch (f) {
    case Format::fp16: return fp16BitsToFp32(static_cast<std::uint16_t>(encoding));
    case Format::bf16: return bf16BitsToFp32(static_cast<std::uint16_t>(encoding));
    case Format::tf32: return floatFromBits(encoding << (23 - formatInfo(f).mantissaBits));
    case Format::fp32: break;
    }
    return floatFromBits(encoding);
}

std::uint32_t storedBits(Format f, float representable)
{
    return formatInfo(f).packable16() ? encodeBits(f, representable) : bitsOf(representable);
}

std::span<const FormatInfo> formats() { return kFormatInfos; }

std::string_view formatName(Format f) { return formatInfo(f).name; }

std::optional<Format> parseFormat(std::string_view name)
{
    for (const FormatInfo& info : kFormatInfos)
        if (info.name == name) return info.format;
    return std::nullopt;
}

// --- fp16 -------------------------------------------------------------------------

std::uint16_t fp32ToFp16Bits(float x)
{
    const std::uint32_t u = bitsOf(x);
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & kAbsMask;

    if (a > kFp32Inf)  // NaN: keep the top payload bits and set the quiet bit, as vcvtps2ph does
        return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
    if (a >= 0x477FF000u)  // >= 65520 (halfway above 65504, whose mantissa is odd): +-inf
        return static_cast<std::uint16_t>(sign | 0x7C00u);
    if (a >= 0x38800000u) {  // >= 2^-14: normal fp16. Round the 13 dropped bits to even;
        // a carry out of the mantissa correctly bumps the exponent.
        const std::uint32_t rounded = a + 0x0FFFu + ((a >> 13) & 1u);
        return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
    }
    // Subnormal fp16 (or zero): the result is round(|x| / 2^-24) in units of 2^-24.
    // |x| = m * 2^(e - 150) for biased exponent e >= 1, so |x| / 2^-24 = m >> (126 - e).
    const std::uint32_t biasedExp = a >> 23;
    const std::uint32_t shift = 126u - biasedExp;  // >= 14 here
    if (biasedExp == 0 || shift > 24)  // below 2^-25: rounds to zero (m < 2^24 rules out a tie)
        return sign;
    const std::uint32_t m = (a & 0x007FFFFFu) | 0x00800000u;
    std::uint32_t q = m >> shift;
    const std::uint32_t rest = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u))) ++q;  // may reach 0x400 = min normal: fine
    return static_cast<std::uint16_t>(sign | q);
}

float fp16BitsToFp32(std::uint16_t h)
{
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1Fu;
    const std::uint32_t man = h & 0x03FFu;
    if (exp == 0x1F) return floatFromBits(sign | kFp32Inf | (man << 13));  // inf / NaN payload
    if (exp != 0) return floatFromBits(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0) return floatFromBits(sign);
    // Subnormal fp16 = man * 2^-24: normalise so the leading 1 becomes implicit.
    const int lead = std::bit_width(man) - 1;            // 0..9
    const std::uint32_t fp32Exp = static_cast<std::uint32_t>(lead - 24 + 127);
    const std::uint32_t fraction = (man << (23 - lead)) & 0x007FFFFFu;
    return floatFromBits(sign | (fp32Exp << 23) | fraction);
}

// --- bf16 ---------------------------------------------------------------------------

std::uint16_t fp32ToBf16Bits(float x)
{
    const std::uint32_t u = bitsOf(x);
    if ((u & kAbsMask) > kFp32Inf)  // NaN: truncate, set the quiet bit so it cannot become inf
        return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    // Round to nearest even on the low 16 bits. Works for subnormals and carries into the
    // exponent; FLT_MAX-ish values carry into 0x7F80 = inf, as IEEE requires.
    const std::uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(rounded >> 16);
}

float bf16BitsToFp32(std::uint16_t b) { return floatFromBits(static_cast<std::uint32_t>(b) << 16); }

// --- tf32 ---------------------------------------------------------------------------

float roundToTf32(float x)
{
    const std::uint32_t u = bitsOf(x);
    if ((u & kAbsMask) > kFp32Inf)  // NaN: a payload only in the low 13 bits must not become inf
        return floatFromBits((u & 0xFFFFE000u) | kFp32QuietBit);
    // Ties away from zero: add half an ulp to the magnitude (sign-magnitude layout), then
    // truncate. Near FLT_MAX the carry reaches the exponent field and yields inf exactly.
    return floatFromBits((u + 0x1000u) & 0xFFFFE000u);
}

float roundTo(Format f, float x)
{
    switch (f) {
    case Format::fp32: return x;
    case Format::tf32: return roundToTf32(x);
    case Format::fp16: return fp16BitsToFp32(fp32ToFp16Bits(x));
    case Format::bf16: return bf16BitsToFp32(fp32ToBf16Bits(x));
    }
    return x;
}

float roundDoubleTo(Format f, double x)
{
    if (std::isnan(x)) return std::signbit(x) ? -std::numeric_limits<float>::quiet_NaN()
                                              : std::numeric_limits<float>::quiet_NaN();
    if (x == 0.0 || std::isinf(x)) return static_cast<float>(x);
    const FormatInfo& info = formatInfo(f);
    const double magnitude = std::fabs(x);
    // Quantum (ulp) of the binade holding |x|; below the min normal the quantum is fixed.
    int exp2 = 0;
    std::frexp(magnitude, &exp2);  // magnitude = [0.5, 1) * 2^exp2
    const int binade = std::max(exp2 - 1, info.minNormalLog2);
    const int quantumLog2 = binade - info.mantissaBits;
    // Scaling by a power of two is exact; steps = magnitude / quantum < 2^(mantissa+1).
    const double steps = std::ldexp(magnitude, -quantumLog2);
    double whole = std::floor(steps);
    const double fraction = steps - whole;  // exact: both are doubles of the same binade or finer
    const bool tiesAway = (f == Format::tf32);
    if (fraction > 0.5 || (fraction == 0.5 && (tiesAway || std::fmod(whole, 2.0) != 0.0)))
        whole += 1.0;
    const double rounded = std::ldexp(whole, quantumLog2);
    // IEEE: round as if the exponent were unbounded, then overflow if beyond the max finite.
    const double result = rounded > info.maxFinite ? HUGE_VAL : rounded;
    return static_cast<float>(std::signbit(x) ? -result : result);  // exact in fp32
}

// --- classes ------------------------------------------------------------------------

std::string_view valueClassName(ValueClass c)
{
    switch (c) {
    case ValueClass::zero: return "zero";
    case ValueClass::subnormal: return "subnormal";
    case ValueClass::normal: return "normal";
    case ValueClass::inf: return "inf";
    case ValueClass::nan: return "nan";
    }
    return "unknown";
}

ValueClass classify(Format f, float representable)
{
    const std::uint32_t a = bitsOf(representable) & kAbsMask;
    if (a > kFp32Inf) return ValueClass::nan;
    if (a == kFp32Inf) return ValueClass::inf;
    if (a == 0) return ValueClass::zero;
    // fp16's min normal 2^-14 is fp32 pattern 0x38800000; the others share fp32's 2^-126.
    const std::uint32_t minNormal = (f == Format::fp16) ? 0x38800000u : 0x00800000u;
    return a < minNormal ? ValueClass::subnormal : ValueClass::normal;
}

}  // namespace plab
