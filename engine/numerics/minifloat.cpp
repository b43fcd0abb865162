// Conversions of minifloat.h. One rule for all five formats: the magnitude, exact in
// double, is divided by the quantum of its binade (a power of two: exact), rounded to the
// nearest integer with ties to even (nearbyint in the default rounding mode), and
// multiplied back; a result above the largest finite value overflows.
#include "numerics/minifloat.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace plab {

namespace {

constexpr std::array<MiniFormatInfo, 5> kInfo{{
    {MiniFormat::e4m3, "e4m3", 4, 3, 7, false, true, 448.0, -6, -9},
    {MiniFormat::e5m2, "e5m2", 5, 2, 15, true, true, 57344.0, -14, -16},
    {MiniFormat::e2m3, "fp6-e2m3", 2, 3, 1, false, false, 7.5, 0, -3},
    {MiniFormat::e3m2, "fp6-e3m2", 3, 2, 3, false, false, 28.0, -2, -4},
    {MiniFormat::e2m1, "fp4-e2m1", 2, 1, 1, false, false, 6.0, 0, -1},
}};

// The all-ones exponent with the all-ones mantissa: E4M3's only NaN, one of E5M2's.
std::uint8_t nanBits(const MiniFormatInfo& i, bool negative)
{
    const int magnitudeBits = i.exponentBits + i.mantissaBits;
    return static_cast<std::uint8_t>((negative ? 1u << magnitudeBits : 0u) | ((1u << magnitudeBits) - 1u));
}

std::uint8_t infBits(const MiniFormatInfo& i, bool negative)   // E5M2: S.11111.00
{
    const int magnitudeBits = i.exponentBits + i.mantissaBits;
    return static_cast<std::uint8_t>((negative ? 1u << magnitudeBits : 0u) |
                                     (((1u << i.exponentBits) - 1u) << i.mantissaBits));
}

// The pattern of a finite magnitude that f represents exactly.
std::uint8_t patternOf(const MiniFormatInfo& i, double magnitude, bool negative)
{
    const unsigned sign = negative ? 1u << (i.exponentBits + i.mantissaBits) : 0u;
    if (magnitude == 0.0) return static_cast<std::uint8_t>(sign);
    if (magnitude < std::ldexp(1.0, i.minNormalLog2)) {   // subnormal: exponent field 0
        const auto m = static_cast<unsigned>(std::ldexp(magnitude, -i.minSubnormalLog2));
        return static_cast<std::uint8_t>(sign | m);
    }
    int e = 0;
    std::frexp(magnitude, &e);   // magnitude in [2^(e-1), 2^e)
    const int exponent = e - 1;
    const auto m = static_cast<unsigned>(std::ldexp(magnitude, i.mantissaBits - exponent)) - (1u << i.mantissaBits);
    return static_cast<std::uint8_t>(sign | (static_cast<unsigned>(exponent + i.bias) << i.mantissaBits) | m);
}

}  // namespace

const MiniFormatInfo& miniFormatInfo(MiniFormat f) { return kInfo[static_cast<std::size_t>(f)]; }

std::span<const MiniFormatInfo> miniFormats() { return kInfo; }

std::span<const MxFormatInfo> mxFormats()
{
    static constexpr MxFormatInfo kMx[] = {{"mxfp8", MiniFormat::e4m3},
                                           {"mxfp8-e5m2", MiniFormat::e5m2},
                                           {"mxfp6-e2m3", MiniFormat::e2m3},
                                           {"mxfp6-e3m2", MiniFormat::e3m2},
                                           {"mxfp4", MiniFormat::e2m1}};
    return kMx;
}

std::optional<MiniFormat> parseMiniFormat(std::string_view name)
{
    for (const auto& i : kInfo)
        if (i.name == name) return i.format;
    return std::nullopt;
}

std::optional<std::uint8_t> encodeMini(MiniFormat f, float x, Overflow overflow)
{
    const MiniFormatInfo& i = miniFormatInfo(f);
    const bool negative = std::signbit(x);
    if (std::isnan(x)) {
        if (!i.hasNaN) return std::nullopt;
        return nanBits(i, negative);
    }
    auto overflowed = [&]() -> std::uint8_t {
        if (overflow == Overflow::nonFinite && i.hasInf) return infBits(i, negative);
        if (overflow == Overflow::nonFinite && i.hasNaN) return nanBits(i, negative);
        return patternOf(i, i.maxFinite, negative);   // saturate (FP6 and FP4 always)
    };
    const double a = std::fabs(static_cast<double>(x));
    if (std::isinf(a)) return overflowed();
    if (a == 0.0) return patternOf(i, 0.0, negative);
    int e = 0;
    std::frexp(a, &e);
    const int exponent = std::max(e - 1, i.minNormalLog2);   // below the normals: the subnormals' quantum
    const int quantumLog2 = exponent - i.mantissaBits;
    const double rounded = std::ldexp(std::nearbyint(std::ldexp(a, -quantumLog2)), quantumLog2);
    if (rounded > i.maxFinite) return overflowed();
    return patternOf(i, rounded, negative);
}

float decodeMini(MiniFormat f, std::uint8_t bits)
{
    const MiniFormatInfo& i = miniFormatInfo(f);
    const int magnitudeBits = i.exponentBits + i.mantissaBits;
    const bool negative = (bits >> magnitudeBits) & 1u;
    const unsigned exponentField = (bits >> i.mantissaBits) & ((1u << i.exponentBits) - 1u);
    const unsigned mantissa = bits & ((1u << i.mantissaBits) - 1u);
    const unsigned allOnes = (1u << i.exponentBits) - 1u;
    double magnitude = 0.0;
    if (i.hasInf && exponentField == allOnes) {   // E5M2: IEEE-style specials
        magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else if (i.hasNaN && exponentField == allOnes && mantissa == (1u << i.mantissaBits) - 1u) {   // E4M3
        magnitude = std::numeric_limits<double>::quiet_NaN();
    } else if (exponentField == 0) {
        magnitude = std::ldexp(static_cast<double>(mantissa), i.minSubnormalLog2);
    } else {
        magnitude = std::ldexp(static_cast<double>((1u << i.mantissaBits) + mantissa),
                               static_cast<int>(exponentField) - i.bias - i.mantissaBits);
    }
    const auto value = static_cast<float>(magnitude);
    return negative ? -value : value;
}

float roundToMini(MiniFormat f, float x, Overflow overflow)
{
    const auto bits = encodeMini(f, x, overflow);
    return bits ? decodeMini(f, *bits) : std::numeric_limits<float>::quiet_NaN();
}

int mxElementEmax(MiniFormat f)
{
    const MiniFormatInfo& i = miniFormatInfo(f);
    int e = 0;
    std::frexp(i.maxFinite, &e);   // maxFinite in [2^(e-1), 2^e)
    return e - 1;
}

float MxBlock::value(std::size_t i) const
{
    if (nanScale) return std::numeric_limits<float>::quiet_NaN();
    return static_cast<float>(std::ldexp(static_cast<double>(elements[i]), scaleExponent));
}

std::string_view mxScaleRoundingName(MxScaleRounding r) { return r == MxScaleRounding::ceil ? "ceil" : "floor"; }

std::optional<MxScaleRounding> parseMxScaleRounding(std::string_view name)
{
    if (name == "floor") return MxScaleRounding::floor;
    if (name == "ceil") return MxScaleRounding::ceil;
    return std::nullopt;
}

MxBlock mxQuantize(MiniFormat element, const float* values, std::size_t count, MxScaleRounding rounding)
{
    if (count > static_cast<std::size_t>(kMxBlockSize))
        throw std::invalid_argument("an MX block holds at most 32 values, got " + std::to_string(count));
    MxBlock block;
    double largest = 0.0;
    for (std::size_t i = 0; i < count; ++i) {
        if (!std::isfinite(values[i])) block.nanScale = true;
        largest = std::max(largest, std::fabs(static_cast<double>(values[i])));
    }
    if (block.nanScale) {
        block.elements.assign(count, std::numeric_limits<float>::quiet_NaN());
        return block;
    }
    if (largest > 0.0) {
        int e = 0;
        std::frexp(largest, &e);   // floor(log2(largest)) = e - 1
        int exponent = e - 1 - mxElementEmax(element);
        // ceil: one more where the amax over 2^exponent would pass the largest finite (the
        // division is exact in double: a power-of-two scaling).
        if (rounding == MxScaleRounding::ceil && std::ldexp(largest, -exponent) > miniFormatInfo(element).maxFinite)
            ++exponent;
        block.scaleExponent = std::clamp(exponent, -127, 127);
    }
    block.elements.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        // V_i / X is exact in double (a power-of-two scaling of an fp32 value); one rounding.
        const double scaled = std::ldexp(static_cast<double>(values[i]), -block.scaleExponent);
        block.elements.push_back(roundToMini(element, static_cast<float>(scaled), Overflow::saturate));
    }
    return block;
}

float nvfp4TensorScale(float tensorAmax)
{
    if (!(tensorAmax > 0.0f) || !std::isfinite(tensorAmax)) return 1.0f;
    const float scale = 448.0f * 6.0f / tensorAmax;
    return std::isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

float Nvfp4Block::decodeScale() const
{
    if (nanScale) return std::numeric_limits<float>::quiet_NaN();
    return blockScale * (1.0f / tensorScale);
}

float Nvfp4Block::value(std::size_t i) const
{
    if (nanScale) return std::numeric_limits<float>::quiet_NaN();
    return (elements[i] * blockScale) / tensorScale;
}

Nvfp4Block nvfp4Quantize(const float* values, std::size_t count, float tensorScale)
{
    if (count > static_cast<std::size_t>(kNvfp4BlockSize))
        throw std::invalid_argument("an NVFP4 block holds at most 16 values, got " + std::to_string(count));
    Nvfp4Block block;
    block.tensorScale = tensorScale;
    float largest = 0.0f;
    for (std::size_t i = 0; i < count; ++i) {
        if (!std::isfinite(values[i])) block.nanScale = true;
        largest = std::max(largest, std::fabs(values[i]));
    }
    if (block.nanScale) {
        block.scaleBits = 0x7f;
        block.blockScale = std::numeric_limits<float>::quiet_NaN();
        block.elements.assign(count, std::numeric_limits<float>::quiet_NaN());
        return block;
    }
    const float wanted = largest * (tensorScale * (1.0f / 6.0f));
    block.scaleBits = *encodeMini(MiniFormat::e4m3, wanted, Overflow::saturate);
    block.blockScale = decodeMini(MiniFormat::e4m3, block.scaleBits);
    if (block.blockScale == 0.0f) {   // the block's values all underflowed with their scale
        for (std::size_t i = 0; i < count; ++i) block.elements.push_back(std::copysign(0.0f, values[i]));
        return block;
    }
    const float elementScale =
        std::min(1.0f / (block.blockScale * (1.0f / tensorScale)), std::numeric_limits<float>::max());
    block.elements.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
        block.elements.push_back(roundToMini(MiniFormat::e2m1, values[i] * elementScale, Overflow::saturate));
    return block;
}

}  // namespace plab
