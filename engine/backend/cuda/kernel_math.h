// Per-element arithmetic of the CUDA kernels, written once for the device and the host:
// the fp32 -> fp16/bf16/tf32 rounding on bit patterns (a line-by-line port of
// engine/numerics/format.cpp), the classification of one rounded element into the
// RoundingStats / GradientHistogram counters, and the index maps of im2col / col2im.
// The kernels (kernels.cu) call these functions; tests/tst_cuda_backend.cpp calls the same
// functions on the host and compares them with the CPU reference, so the arithmetic of the
// kernels is checked bit for bit even on machines without a GPU.
// C++17 and free of CUDA headers: nvcc compiles it at C++17, g++ at C++20.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PLAB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PLAB_HOST_DEVICE inline
#endif

namespace plab::cudakernels {

// Mirrors plab::Format (static_assert'ed in cuda_backend.cpp): the kernels must not include
// engine headers, which need C++20.
enum RoundFormat : int { kFp32 = 0, kTf32 = 1, kFp16 = 2, kBf16 = 3 };

// Layout of the device counter block the rounding kernel adds to: the RoundingStats
// counters except `count` (the host knows n), then the histogram bins, zeros, nonFinite.
enum CounterSlot : int {
    kZerosIn = 0,
    kUnderflow = 1,
    kSubnormal = 2,
    kOverflow = 3,
    kNan = 4,
    kInfIn = 5,
    kStatSlots = 6,
    kHistMinExponent = -149,                      // GradientHistogram::kMinExponent
    kHistBins = 277,                              // GradientHistogram::kBins
    kHistFirst = kStatSlots,                      // bins[0] .. bins[276]
    kHistZeros = kHistFirst + kHistBins,
    kHistNonFinite = kHistZeros + 1,
    kCounterSlots = kHistNonFinite + 1            // 285
};

constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kInfBits = 0x7F800000u;

// Number of significant bits of x (std::bit_width), without <bit> (C++20) or intrinsics.
PLAB_HOST_DEVICE int bitWidth(std::uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return 32 - __clz(static_cast<int>(x));
#else
    int w = 0;
    while (x != 0) {
        ++w;
        x >>= 1;
    }
    return w;
#endif
}

// fp32 -> fp16 bits: round to nearest even, subnormals kept, overflow to inf, NaN quiet
// with its top payload bits (as vcvtps2ph does; the CPU reference does the same).
PLAB_HOST_DEVICE std::uint16_t fp32ToFp16Bits(std::uint32_t u)
{
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & kAbsMask;
    if (a > kInfBits) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
    if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);   // >= 65520: inf
    if (a >= 0x38800000u) {   // normal fp16: round the 13 dropped bits to even
        const std::uint32_t rounded = a + 0x0FFFu + ((a >> 13) & 1u);
        return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
    }
    // Subnormal fp16 or zero: round(|x| / 2^-24) = m >> (126 - e), ties to even.
    const std::uint32_t biasedExp = a >> 23;
    const std::uint32_t shift = 126u - biasedExp;
    if (biasedExp == 0 || shift > 24) return sign;
    const std::uint32_t m = (a & 0x007FFFFFu) | 0x00800000u;
    std::uint32_t q = m >> shift;
    const std::uint32_t rest = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
}

PLAB_HOST_DEVICE std::uint32_t fp16BitsToFp32Bits(std::uint16_t h)
{
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1Fu;
    const std::uint32_t man = h & 0x03FFu;
    if (exp == 0x1F) return sign | kInfBits | (man << 13);
    if (exp != 0) return sign | ((exp + 112u) << 23) | (man << 13);
    if (man == 0) return sign;
    const int lead = bitWidth(man) - 1;   // subnormal: make the leading 1 implicit
    const std::uint32_t fp32Exp = static_cast<std::uint32_t>(lead - 24 + 127);
    const std::uint32_t fraction = (man << (23 - lead)) & 0x007FFFFFu;
    return sign | (fp32Exp << 23) | fraction;
}

// fp32 -> bf16 bits: round to nearest even on the low 16 bits; NaN truncated and quieted
// so that a payload only in the low bits cannot turn into inf.
PLAB_HOST_DEVICE std::uint16_t fp32ToBf16Bits(std::uint32_t u)
{
    if ((u & kAbsMask) > kInfBits) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    const std::uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(rounded >> 16);
}

// fp32 -> tf32, ties away from zero (cvt.rna.tf32.f32), as an fp32 pattern.
PLAB_HOST_DEVICE std::uint32_t roundTf32Bits(std::uint32_t u)
{
    if ((u & kAbsMask) > kInfBits) return (u & 0xFFFFE000u) | 0x00400000u;
    return (u + 0x1000u) & 0xFFFFE000u;
}

// u rounded to format f, as the fp32 pattern that represents the result exactly.
PLAB_HOST_DEVICE std::uint32_t roundBits(int f, std::uint32_t u)
{
    switch (f) {
    case kTf32: return roundTf32Bits(u);
    case kFp16: return fp16BitsToFp32Bits(fp32ToFp16Bits(u));
    case kBf16: return static_cast<std::uint32_t>(fp32ToBf16Bits(u)) << 16;
    default: return u;
    }
}

// Which RoundingStats counters one element adds to (bit k = CounterSlot k), from its
// input and rounded patterns: the rules of roundArrayScalar in engine/numerics.
PLAB_HOST_DEVICE unsigned statMask(int f, std::uint32_t in, std::uint32_t out)
{
    const std::uint32_t a = in & kAbsMask, aOut = out & kAbsMask;
    const std::uint32_t minNormal = (f == kFp16) ? 0x38800000u : 0x00800000u;
    unsigned mask = 0;
    mask |= (a == 0) ? (1u << kZerosIn) : 0u;
    mask |= (a > kInfBits) ? (1u << kNan) : 0u;
    mask |= (a == kInfBits) ? (1u << kInfIn) : 0u;
    mask |= (a != 0 && aOut == 0) ? (1u << kUnderflow) : 0u;
    mask |= (a != kInfBits && aOut == kInfBits) ? (1u << kOverflow) : 0u;
    mask |= (aOut != 0 && aOut < minNormal) ? (1u << kSubnormal) : 0u;
    return mask;
}

// The counter slot of |x| in the histogram: bin floor(log2|x|) of the value before
// rounding (fp32 subnormals by their leading bit), or the zeros / nonFinite slot.
PLAB_HOST_DEVICE int histogramSlot(std::uint32_t in)
{
    const std::uint32_t a = in & kAbsMask;
    if (a == 0) return kHistZeros;
    if (a >= kInfBits) return kHistNonFinite;
    const int biased = static_cast<int>(a >> 23);
    const int exponent = biased != 0 ? biased - 127 : kHistMinExponent + bitWidth(a) - 1;
    return kHistFirst + exponent - kHistMinExponent;
}

// Geometry of a same-size stride-1 convolution (plab::ConvGeometry without C++20).
struct ConvShape {
    std::int64_t channels, batch, height, width;
    int kernel, pad;
};

// im2col over `count` samples of src (C, batch, H, W) starting at sample n0: the src index
// that cols[row][col] copies, or -1 where the patch reads the zero padding.
// row = c * k * k + ky * k + kx, col = n * H * W + y * W + x (n relative to n0).
PLAB_HOST_DEVICE std::int64_t im2colSource(const ConvShape& g, std::int64_t n0, std::int64_t count,
                                           std::int64_t row, std::int64_t col)
{
    const std::int64_t hw = g.height * g.width, k2 = static_cast<std::int64_t>(g.kernel) * g.kernel;
    const std::int64_t c = row / k2, kk = row % k2;
    const std::int64_t ky = kk / g.kernel, kx = kk % g.kernel;
    const std::int64_t n = col / hw, p = col % hw;
    const std::int64_t sy = p / g.width + ky - g.pad, sx = p % g.width + kx - g.pad;
    if (n >= count || sy < 0 || sy >= g.height || sx < 0 || sx >= g.width) return -1;
    return (c * g.batch + n0 + n) * hw + sy * g.width + sx;
}

// col2im, the adjoint: for element `dstIndex` of the (C, count, H, W) block being written,
// the cols index of its kk-th term (kk = ky * k + kx), or -1 where none. The kernel sums
// the terms in kk order starting from +0, which is the order of the CPU's shiftedAdd.
PLAB_HOST_DEVICE std::int64_t col2imTerm(const ConvShape& g, std::int64_t count,
                                         std::int64_t dstIndex, int kk)
{
    const std::int64_t hw = g.height * g.width, k2 = static_cast<std::int64_t>(g.kernel) * g.kernel;
    const std::int64_t plane = dstIndex / hw, p = dstIndex % hw;
    const std::int64_t c = plane / count, n = plane % count;
    const std::int64_t ky = kk / g.kernel, kx = kk % g.kernel;
    // cols[(c, ky, kx)][n, oy, ox] reads src[oy + ky - pad][ox + kx - pad]: solve for o.
    const std::int64_t oy = p / g.width - (ky - g.pad), ox = p % g.width - (kx - g.pad);
    if (oy < 0 || oy >= g.height || ox < 0 || ox >= g.width) return -1;
    return (c * k2 + kk) * (count * hw) + n * hw + oy * g.width + ox;
}

}  // namespace plab::cudakernels
