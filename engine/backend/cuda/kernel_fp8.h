// Per-element arithmetic of the CUDA backend's FP8 recipes, written once for
// the device and the host as kernel_math.h is: the per-tensor quantisation of one element
// (a line-by-line port of roundSigned / roundUnsaturated in engine/numerics/quantize.cpp),
// its RoundingStats counters, the amax as a bit pattern, and the FP8 code of a quantised
// value for cuBLASLt. tests/tst_cuda_kernel_math.cpp checks every function on the host
// against the CPU reference (numerics/quantize.h, numerics/minifloat.h).
// C++17 and free of CUDA headers.
#pragma once

#include "backend/cuda/kernel_math.h"

namespace plab::cudakernels {

// Mirrors the first two plab::MiniFormat values (static_assert'ed in cuda_fp8.cpp): the
// element formats per-tensor scaling quantises to.
enum Fp8Format : int { kE4m3 = 0, kE5m2 = 1 };

// What rounding to an FP8 format needs (numerics/quantize_kernels.h's ElementRule).
struct Fp8Rule {
    int minNormalLog2;   // 1 - bias
    int maxExponent;     // floor(log2 of the largest finite)
    int mantissaBits;
    int bias;
    float maxFinite;
    float minNormal;     // 2^minNormalLog2
};

PLAB_HOST_DEVICE Fp8Rule fp8Rule(int format)
{
    if (format == kE5m2) return {-14, 15, 2, 15, 57344.0f, 0x1p-14f};
    return {-6, 8, 3, 7, 448.0f, 0x1p-6f};
}

// |a| (finite, >= 0) rounded to the format's precision before saturation: in the binade e
// of a (clamped to the normal range), a multiple of 2^q, q = e - mantissa bits, by
// (a + 2^(q+23)) - 2^(q+23), which rounds to nearest even at 2^q; the subtraction is exact.
PLAB_HOST_DEVICE float fp8RoundUnsaturated(const Fp8Rule& rule, float a)
{
    int e = static_cast<int>(floatBits(a) >> 23) - 127;   // fp32 subnormals: -127
    e = e < rule.minNormalLog2 ? rule.minNormalLog2 : (e > rule.maxExponent ? rule.maxExponent : e);
    const int q = e - rule.mantissaBits;
    const float magic = floatFromBits(static_cast<std::uint32_t>(q + 23 + 127) << 23);
    return subRn(addRn(a, magic), magic);
}

// x rounded to the format as a signed value, saturating: NaN stays NaN, an infinity becomes
// the largest finite value of its sign like any value above it. *magnitude: |result|;
// *saturated: a finite x that rounded above the largest finite value.
PLAB_HOST_DEVICE float fp8Quantize(const Fp8Rule& rule, float x, float* magnitude, bool* saturated)
{
    *saturated = false;
    const std::uint32_t u = floatBits(x);
    const std::uint32_t a = u & kAbsMask;
    if (a > kInfBits) {
        *magnitude = x;
        return x;
    }
    float r = rule.maxFinite;
    if (a != kInfBits) {
        r = fp8RoundUnsaturated(rule, floatFromBits(a));
        if (r > rule.maxFinite) {
            r = rule.maxFinite;
            *saturated = true;
        }
    }
    *magnitude = r;
    return floatFromBits(floatBits(r) | (u & ~kAbsMask));
}

// The RoundingStats counters (CounterSlot bits) of one element given to the format: x the
// scaled value, r its rounded magnitude, as numerics/quantize.cpp counts them (underflow:
// nonzero finite to 0; subnormal: a nonzero result below the smallest normal; overflow: a
// finite value saturated).
PLAB_HOST_DEVICE unsigned fp8StatMask(const Fp8Rule& rule, std::uint32_t x, float r, bool saturated)
{
    const std::uint32_t a = x & kAbsMask;
    unsigned mask = 0;
    mask |= (a == 0) ? (1u << kZerosIn) : 0u;
    mask |= (a > kInfBits) ? (1u << kNan) : 0u;
    mask |= (a == kInfBits) ? (1u << kInfIn) : 0u;
    mask |= (a != 0 && a < kInfBits && r == 0.0f) ? (1u << kUnderflow) : 0u;
    mask |= (r != 0.0f && r < rule.minNormal) ? (1u << kSubnormal) : 0u;
    mask |= saturated ? (1u << kOverflow) : 0u;
    return mask;
}

// One element of the per-tensor quantisation, as the kernels and their host emulation
// compute it: x = in * scale (a NaN as it is), q its value in the format (fp8Quantize),
// the counters' mask (fp8StatMask); the value written is q * scaleInv, or q's code
// (fp8Code) where the operand is held as codes.
struct Fp8Element {
    float x;
    float q;
    unsigned statMask;
};
PLAB_HOST_DEVICE Fp8Element fp8Element(const Fp8Rule& rule, float in, float scale)
{
    // A NaN is not multiplied: the device's multiply returns its canonical NaN (positive),
    // where the CPU's keeps the operand's sign, which the NaN's code carries (S.1111111).
    const bool nan = (floatBits(in) & kAbsMask) > kInfBits;
    Fp8Element e{nan ? in : mulRn(in, scale), 0.0f, 0u};
    float r = 0.0f;
    bool saturated = false;
    e.q = fp8Quantize(rule, e.x, &r, &saturated);
    e.statMask = fp8StatMask(rule, floatBits(e.x), r, saturated);
    return e;
}

// The amax as an unsigned key: |x|'s bit pattern, ordered as the magnitudes are, with every
// NaN above infinity. The largest key of a tensor is its amax; amaxFromKey makes it a float
// (NaN when a NaN was there), as numerics' amaxOf returns it.
PLAB_HOST_DEVICE std::uint32_t amaxKey(float x) { return floatBits(x) & kAbsMask; }
PLAB_HOST_DEVICE float amaxFromKey(std::uint32_t key)
{
    return floatFromBits(key > kInfBits ? 0x7FC00000u : key);
}

// The FP8 code (sign, exponent, mantissa) of q, a value of the format (as fp8Quantize
// returns it) or NaN: the format's NaN (E4M3 S.1111.111, E5M2 S.11111.11); an infinity,
// which quantisation never returns, as E5M2's infinity or E4M3's NaN.
PLAB_HOST_DEVICE std::uint8_t fp8Code(int format, float q)
{
    const Fp8Rule rule = fp8Rule(format);
    const std::uint32_t u = floatBits(q);
    const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
    const std::uint32_t a = u & kAbsMask;
    if (a > kInfBits || (a == kInfBits && format == kE4m3)) return static_cast<std::uint8_t>(sign | 0x7Fu);
    if (a == kInfBits) return static_cast<std::uint8_t>(sign | 0x7Cu);
    if (a == 0) return sign;
    const int e = static_cast<int>(a >> 23) - 127;
    if (e < rule.minNormalLog2) {
        // A subnormal of the format: q / 2^(minNormalLog2 - mantissaBits), an integer below
        // 2^mantissaBits (the multiplication by a power of two is exact).
        const float steps = mulRn(floatFromBits(a),
                                  floatFromBits(static_cast<std::uint32_t>(127 - rule.minNormalLog2 + rule.mantissaBits)
                                                << 23));
        return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(steps));
    }
    const std::uint32_t exponent = static_cast<std::uint32_t>(e + rule.bias);
    const std::uint32_t mantissa = (a & 0x007FFFFFu) >> (23 - rule.mantissaBits);
    return static_cast<std::uint8_t>(sign | (exponent << rule.mantissaBits) | mantissa);
}

// The value of an FP8 code (sign, exponent, mantissa) of `format`: a normal's exponent
// rebiased, a subnormal's multiple of the smallest subnormal (exact), E5M2's infinities,
// and NaN (E4M3 S.1111.111, E5M2 S.11111.xx) as fp32's quiet NaN of that sign; as the
// CPU's decoding (numerics/quantize_kernels.h, valueOf) gives it.
PLAB_HOST_DEVICE float fp8Value(int format, std::uint8_t code)
{
    const Fp8Rule rule = fp8Rule(format);
    const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80u) << 24, magnitude = code & 0x7Fu;
    const std::uint32_t firstSpecial = format == kE5m2 ? 0x7Cu : 0x7Fu;
    std::uint32_t bits = 0;
    if (magnitude >= firstSpecial)
        bits = format == kE5m2 && magnitude == 0x7Cu ? kInfBits : 0x7FC00000u;
    else if (magnitude >> rule.mantissaBits)
        bits = (magnitude << (23 - rule.mantissaBits)) + (static_cast<std::uint32_t>(127 - rule.bias) << 23);
    else   // magnitude * 2^(minNormalLog2 - mantissaBits): both exact
        bits = floatBits(mulRn(static_cast<float>(magnitude),
                               floatFromBits(static_cast<std::uint32_t>(127 + rule.minNormalLog2 - rule.mantissaBits)
                                             << 23)));
    return floatFromBits(bits | sign);
}
// What a held code stands for in the arithmetic: its value times the scale's inverse,
// rounded once (the value quantisation writes, q * scaleInv).
PLAB_HOST_DEVICE float fp8Decoded(int format, std::uint8_t code, float scaleInv)
{
    return mulRn(fp8Value(format, code), scaleInv);
}

// The code of an operand value the quantiser wrote (x = q * scaleInv, rounded once in fp32):
// x * scale is within a few fp32 ulps of q, and rounding it to the format gives q again
// (the format's neighbours of q are 2^-4 relative or more away), unless x fell into fp32's
// subnormals (a scale near fp32's largest value), where the emulation's operand has already
// lost bits of q.
PLAB_HOST_DEVICE std::uint8_t fp8CodeOfOperand(int format, float x, float scale)
{
    float magnitude = 0.0f;
    bool saturated = false;
    return fp8Code(format, fp8Quantize(fp8Rule(format), mulRn(x, scale), &magnitude, &saturated));
}

}  // namespace plab::cudakernels
