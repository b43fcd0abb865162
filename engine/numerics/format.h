// Number formats of Precision Lab and exact scalar conversions between them.
// fp32 -> fp16/bf16: round to nearest, ties to even, subnormals kept, overflow to +-inf,
// NaN stays NaN with its sign (quiet bit set). fp32 -> tf32: round to nearest, ties away
// from zero, as CUDA's cvt.rna.tf32.f32; a tf32 value is an fp32 pattern with the low 13
// bits zero. Every value of a reduced format is held in fp32 exactly.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace plab {

enum class Format : std::uint8_t { fp32, tf32, fp16, bf16 };

// Whether an element of f is a 16-bit pattern in memory (fp16, bf16: packed storage and
// 16-bit products take exactly these; FormatInfo::storageBytes 2, which tst_format checks).
// Header-only, for the CUDA plugin, which links no engine library.
constexpr bool packable16(Format f) { return f == Format::fp16 || f == Format::bf16; }

// Static facts about a format, from its definition (IEEE 754 for fp16, fp32).
struct FormatInfo {
    Format format;
    std::string_view name;        // "fp32", "tf32", "fp16", "bf16"
    int exponentBits;
    int mantissaBits;             // explicit fraction bits
    int storageBytes;             // bytes one element occupies in memory (tf32: 4)
    int minSubnormalLog2;         // log2 of the smallest positive subnormal
    int minNormalLog2;            // log2 of the smallest positive normal
    int maxExponent;              // largest finite value is (2 - 2^-mantissaBits) * 2^maxExponent
    double maxFinite;

    // Traits that follow from the row: the encoding's width (sign, exponent, fraction: 19
    // for tf32), the exponent's bias, and whether an element is a 16-bit pattern in memory.
    constexpr int bits() const { return 1 + exponentBits + mantissaBits; }
    constexpr int exponentBias() const { return (1 << (exponentBits - 1)) - 1; }
    constexpr bool packable16() const { return plab::packable16(format); }
};

const FormatInfo& formatInfo(Format f);
// Every format, in the order of the Format enum: what settings, the panel and per-layer
// precision offer.
std::span<const FormatInfo> formats();
std::string_view formatName(Format f);
std::optional<Format> parseFormat(std::string_view name);

// Scalar conversions (bit-exact reference path).
std::uint16_t fp32ToFp16Bits(float x);
float fp16BitsToFp32(std::uint16_t h);
std::uint16_t fp32ToBf16Bits(float x);
float bf16BitsToFp32(std::uint16_t b);
float roundToTf32(float x);

// A value of format f (already rounded to it) as its encoding, sign, exponent and fraction
// in the low bits() bits (tf32: 19 bits), and back; and as it is stored in memory,
// storageBytes wide (tf32: its fp32 container).
std::uint32_t encodeBits(Format f, float representable);
float decodeBits(Format f, std::uint32_t encoding);
std::uint32_t storedBits(Format f, float representable);

// x rounded to format f, returned as the fp32 value that represents it exactly.
float roundTo(Format f, float x);

// x (a double) rounded directly to format f, with f's rounding rule (ties to even; ties
// away for tf32), subnormals kept and overflow to +-inf. One rounding step, unlike
// roundTo(f, float(x)), which rounds twice. NaN gives a quiet NaN with x's sign.
float roundDoubleTo(Format f, double x);

enum class ValueClass : std::uint8_t { zero, subnormal, normal, inf, nan };
std::string_view valueClassName(ValueClass c);
// Class of an (already rounded) value as seen in format f.
ValueClass classify(Format f, float representable);

inline std::uint32_t bitsOf(float x) { return std::bit_cast<std::uint32_t>(x); }
inline float floatFromBits(std::uint32_t u) { return std::bit_cast<float>(u); }

}  // namespace plab
