// Over 500 lines: one header is the single source both the device kernels and the host tests compile.
// Per-element and per-row arithmetic of the CUDA kernels, written once for the device and
// the host: the fp32 -> fp16/bf16/tf32 rounding on bit patterns (a line-by-line port of
// engine/numerics/format.cpp), the classification of one rounded element into the
// RoundingStats / GradientHistogram counters, the index maps of im2col / col2im, pooling
// and the block transpose, ReLU, one row of softmax cross-entropy, and one element of the
// gradient sweep, SGD and Adam (engine/numerics/update_math.cpp, op for op).
// The kernels (kernels.cu) call these functions; the host tests (tests/tst_cuda_*.cpp) call
// the same functions on the host and compare them with the CPU reference, so the arithmetic
// of the kernels is checked bit for bit even on machines without a GPU.
// C++17 and free of CUDA headers: nvcc compiles it at C++17, g++ at C++20.
#pragma once

#include "numerics/update_rounding.h"   // C++17 and host/device too: stochastic rounding's bits

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PLAB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PLAB_HOST_DEVICE inline
#endif

// Fast math would replace the IEEE operations these functions are checked against (flushed
// subnormals, approximate division, square root and transcendentals, NaN tests folded
// away). g++ and clang announce -ffast-math with __FAST_MATH__, and older CUDA headers
// keyed on __USE_FAST_MATH__; nvcc 13 defines neither for --use_fast_math (it only tells
// its device compiler), so the plugin's CMakeLists.txt also refuses that flag and pins
// -ftz=false -prec-div=true -prec-sqrt=true.
#if defined(__USE_FAST_MATH__) || defined(__FAST_MATH__)
#error "kernel_math.h needs IEEE arithmetic: build without --use_fast_math / -ffast-math"
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

// ---- Packed 16-bit tensors (ComputeBackend's packed ops) ------------------------------
// The fp32 pattern of a 16-bit pattern of format f (kFp16 or kBf16): exact, except that an
// fp16 NaN comes out quiet, as the CPU's widening (F16C's vcvtph2ps and its portable
// twin) gives it. bf16 widens by the shift alone, on the CPU too.
PLAB_HOST_DEVICE std::uint32_t widenBits16(int f, std::uint16_t h)
{
    if (f != kFp16) return static_cast<std::uint32_t>(h) << 16;
    const std::uint32_t u = fp16BitsToFp32Bits(h);
    return (u & kAbsMask) > kInfBits ? u | 0x00400000u : u;
}
// The 16-bit pattern of an fp32 pattern in format f, rounded to nearest even (exact for a
// value the format holds, as roundBits leaves them).
PLAB_HOST_DEVICE std::uint16_t narrowBits16(int f, std::uint32_t u)
{
    return f == kFp16 ? fp32ToFp16Bits(u) : fp32ToBf16Bits(u);
}
// x <= 0 for a 16-bit pattern: a zero of either sign or a negative number, not a NaN (the
// CPU's packed ReLU, cpu/packed_ops.cpp).
PLAB_HOST_DEVICE bool atMostZeroBits16(int f, std::uint16_t b)
{
    const std::uint16_t magnitude = b & 0x7FFFu, inf = f == kFp16 ? 0x7C00u : 0x7F80u;
    return magnitude == 0 || ((b & 0x8000u) && magnitude <= inf);
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
// the cols index of its kk-th term (kk = ky * k + kx), or -1 where none, cols's rows colsLd
// apart (0: count * H * W). The kernel sums the terms in kk order starting from +0, which is
// the order of the CPU's shiftedAdd.
PLAB_HOST_DEVICE std::int64_t col2imTerm(const ConvShape& g, std::int64_t count,
                                         std::int64_t dstIndex, int kk, std::int64_t colsLd = 0)
{
    const std::int64_t hw = g.height * g.width, k2 = static_cast<std::int64_t>(g.kernel) * g.kernel;
    const std::int64_t plane = dstIndex / hw, p = dstIndex % hw;
    const std::int64_t c = plane / count, n = plane % count;
    const std::int64_t ky = kk / g.kernel, kx = kk % g.kernel;
    // cols[(c, ky, kx)][n, oy, ox] reads src[oy + ky - pad][ox + kx - pad]: solve for o.
    const std::int64_t oy = p / g.width - (ky - g.pad), ox = p % g.width - (kx - g.pad);
    if (oy < 0 || oy >= g.height || ox < 0 || ox >= g.width) return -1;
    return (c * k2 + kk) * (colsLd != 0 ? colsLd : count * hw) + n * hw + oy * g.width + ox;
}

// col2im writes element `blockIndex` of the (C, count, H, W) block of samples
// [n0, n0 + count) into the whole activation tensor (C, batch, H, W): its index there.
PLAB_HOST_DEVICE std::int64_t col2imTarget(const ConvShape& g, std::int64_t n0, std::int64_t count,
                                           std::int64_t blockIndex)
{
    const std::int64_t hw = g.height * g.width;
    const std::int64_t plane = blockIndex / hw, c = plane / count, n = plane % count;
    return (c * g.batch + n0 + n) * hw + blockIndex % hw;
}

// ---- fp32 arithmetic, one IEEE operation at a time ------------------------------------
// On the device the _rn intrinsics: nvcc would otherwise contract a * b + c into an FMA
// (and --use_fast_math would approximate / and sqrt). On the host the plain operators:
// g++ targets baseline x86-64 here, which has no FMA instruction to contract into, and
// std::fma / std::sqrt are exactly rounded, as the CPU reference (update_math.cpp) uses them.

PLAB_HOST_DEVICE std::uint32_t floatBits(float x)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}

PLAB_HOST_DEVICE float floatFromBits(std::uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
#endif
}

// x rounded to format f (a no-op for fp32): what writing a tensor of format f stores.
PLAB_HOST_DEVICE float roundFloat(int f, float x) { return floatFromBits(roundBits(f, floatBits(x))); }

PLAB_HOST_DEVICE bool isFiniteFloat(float x) { return (floatBits(x) & kAbsMask) < kInfBits; }

PLAB_HOST_DEVICE float addRn(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

PLAB_HOST_DEVICE float subRn(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

PLAB_HOST_DEVICE float mulRn(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

PLAB_HOST_DEVICE float divRn(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

PLAB_HOST_DEVICE float sqrtRn(float a)
{
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(a);
#else
    return std::sqrt(a);
#endif
}

PLAB_HOST_DEVICE float fmaRn(float a, float b, float c)
{
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

// The CPU's squares of the gradient sweep: a double product, never fused with the sum.
PLAB_HOST_DEVICE double squareRn(double x)
{
#if defined(__CUDA_ARCH__)
    return __dmul_rn(x, x);
#else
    return x * x;
#endif
}

// Transcendentals of the loss: CUDA's expf/logf (2 and 1 ulp) and exp/log in double
// (1 ulp) on the device, the C library's on the host. These are the one place where the
// device and the CPU may round differently (see docs/CUDA.md).
#if defined(__CUDA_ARCH__)
PLAB_HOST_DEVICE float maxNum(float a, float b) { return fmaxf(a, b); }   // a NaN is ignored
PLAB_HOST_DEVICE float expFloat(float x) { return expf(x); }
PLAB_HOST_DEVICE float logFloat(float x) { return logf(x); }
PLAB_HOST_DEVICE double expDouble(double x) { return exp(x); }
PLAB_HOST_DEVICE double logDouble(double x) { return log(x); }
#else
PLAB_HOST_DEVICE float maxNum(float a, float b) { return std::fmax(a, b); }
PLAB_HOST_DEVICE float expFloat(float x) { return std::exp(x); }
PLAB_HOST_DEVICE float logFloat(float x) { return std::log(x); }
PLAB_HOST_DEVICE double expDouble(double x) { return std::exp(x); }
PLAB_HOST_DEVICE double logDouble(double x) { return std::log(x); }
#endif

// ---- Layer ops -------------------------------------------------------------------------

// The bias of element i of addBiasRound: bias[(i / repeat) % period].
PLAB_HOST_DEVICE std::int64_t biasIndex(std::int64_t i, std::int64_t period, std::int64_t repeat)
{
    return (i / repeat) % period;
}

// max(0, x) with a NaN kept a NaN; -0 becomes +0. Backward: no gradient where y <= 0.
PLAB_HOST_DEVICE float reluValue(float x) { return x <= 0.0f ? 0.0f : x; }
PLAB_HOST_DEVICE float reluGradient(float y, float g) { return y <= 0.0f ? 0.0f : g; }

// Pooling geometry: planes of H x W in, planes of (H/2) x (W/2) out (odd sizes floor).
struct PoolShape {
    std::int64_t planes, height, width;
    PLAB_HOST_DEVICE std::int64_t outHeight() const { return height / 2; }
    PLAB_HOST_DEVICE std::int64_t outWidth() const { return width / 2; }
};

// The input index of the top-left element of output element o's 2x2 window.
PLAB_HOST_DEVICE std::int64_t poolWindowStart(const PoolShape& s, std::int64_t o)
{
    const std::int64_t ho = s.outHeight(), wo = s.outWidth();
    const std::int64_t plane = o / (ho * wo), y = (o / wo) % ho, x = o % wo;
    return (plane * s.height + 2 * y) * s.width + 2 * x;
}

// The first maximum of a 2x2 window and its position 0..3 (row-major); a NaN beats any
// number, and the first NaN stays. The best value is carried in a register rather than
// read back as v[position]: an index known only at run time puts the window in local
// memory on the device.
struct PoolMax {
    float value;
    int position;
};

PLAB_HOST_DEVICE void poolMaxStep(PoolMax& best, float x, int position)
{
    if (x > best.value || (x != x && best.value == best.value)) best = {x, position};
}

PLAB_HOST_DEVICE PoolMax poolMax(float topLeft, float topRight, float bottomLeft, float bottomRight)
{
    PoolMax best{topLeft, 0};
    poolMaxStep(best, topRight, 1);
    poolMaxStep(best, bottomLeft, 2);
    poolMaxStep(best, bottomRight, 3);
    return best;
}

// The window position of the first maximum of v[0..3], as poolMax.
PLAB_HOST_DEVICE int poolWinner(const float* v) { return poolMax(v[0], v[1], v[2], v[3]).position; }

// Backward, as a gather: the output element whose window holds input element i, and i's
// position in it, or -1 for the last row / column of an odd-sized plane (no window).
PLAB_HOST_DEVICE std::int64_t poolOutputOf(const PoolShape& s, std::int64_t i, int* position)
{
    const std::int64_t ho = s.outHeight(), wo = s.outWidth();
    const std::int64_t plane = i / (s.height * s.width), y = (i / s.width) % s.height, x = i % s.width;
    if (y / 2 >= ho || x / 2 >= wo) return -1;
    *position = static_cast<int>((y % 2) * 2 + x % 2);
    return (plane * ho + y / 2) * wo + x / 2;
}

// out (B, A, inner) = in (A, B, inner): the in index of out element o.
PLAB_HOST_DEVICE std::int64_t transposeBlocksSource(std::int64_t A, std::int64_t B, std::int64_t inner,
                                                    std::int64_t o)
{
    const std::int64_t block = o / inner, b = block / A, a = block % A;
    return (a * B + b) * inner + o % inner;
}

// ---- Softmax cross-entropy, one row of logits (classes values) ---------------------------

// argmax(row) == label, the first maximum winning (a NaN never wins, as on the CPU).
PLAB_HOST_DEVICE bool predictsLabel(const float* row, std::int64_t classes, int label)
{
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < classes; ++j)
        if (row[j] > row[best]) best = j;
    return best == label;
}

// The fp32 path (autocast): max-shifted log-sum-exp with the exponentials summed in
// double; prob[j] = exp(x[j] - lse) in fp32. Returns the row's loss, double(lse - x[label]).
PLAB_HOST_DEVICE double softmaxRowFp32(const float* row, std::int64_t classes, int label, float* prob)
{
    float m = row[0];
    for (std::int64_t j = 1; j < classes; ++j) m = maxNum(m, row[j]);
    double sum = 0.0;   // terms in (0, 1]
    for (std::int64_t j = 0; j < classes; ++j) sum += expDouble(static_cast<double>(subRn(row[j], m)));
    const float lse = addRn(m, static_cast<float>(logDouble(sum)));
    for (std::int64_t j = 0; j < classes; ++j) prob[j] = expFloat(subRn(row[j], lse));
    return static_cast<double>(subRn(lse, row[label]));
}

// The emulated path (fp32-sensitive ops off): every intermediate rounded to f, in the
// order of the CPU's loss. Returns the row's log-probability of its label.
PLAB_HOST_DEVICE float softmaxRowEmulated(int f, const float* row, std::int64_t classes, int label, float* prob)
{
    float m = row[0];
    for (std::int64_t j = 1; j < classes; ++j) m = maxNum(m, row[j]);
    float sum = 0.0f;
    for (std::int64_t j = 0; j < classes; ++j) {
        prob[j] = roundFloat(f, expFloat(roundFloat(f, subRn(row[j], m))));   // exp values, for now
        sum = roundFloat(f, addRn(sum, prob[j]));
    }
    const float lse = roundFloat(f, logFloat(sum));
    const float logProb = roundFloat(f, subRn(roundFloat(f, subRn(row[label], m)), lse));
    for (std::int64_t j = 0; j < classes; ++j) prob[j] = roundFloat(f, divRn(prob[j], sum));
    return logProb;
}

// The batch mean from the per-row results, summed sequentially in row order as the CPU
// does: in double for the fp32 path, rounding after every step for the emulated one.
PLAB_HOST_DEVICE float lossMeanFp32(const double* rowLosses, std::int64_t n)
{
    double total = 0.0;
    for (std::int64_t i = 0; i < n; ++i) total += rowLosses[i];
    return static_cast<float>(total / static_cast<double>(n));
}

PLAB_HOST_DEVICE float lossMeanEmulated(int f, const double* rowLogProbs, std::int64_t n)
{
    float total = 0.0f;
    for (std::int64_t i = 0; i < n; ++i) total = roundFloat(f, subRn(total, static_cast<float>(rowLogProbs[i])));
    return roundFloat(f, divRn(total, static_cast<float>(n)));
}

// d loss / d logit: (p - onehot) / N * lossScale in fp32, in that order.
PLAB_HOST_DEVICE float softmaxGradient(float prob, bool isLabel, float batch, float lossScale)
{
    return mulRn(divRn(subRn(prob, isLabel ? 1.0f : 0.0f), batch), lossScale);
}

// ---- Gradient sweep and optimizers (engine/numerics/update_math.h) -----------------------

// A gradient multiplied by the sweep's multiplier in fp32 and stored in its format.
PLAB_HOST_DEVICE float sweepScaled(int f, float x, float multiplier) { return roundFloat(f, mulRn(x, multiplier)); }

// Counter slots of one optimizer update (plab::UpdateCounts), and their bits in a mask.
// The optimizer state's counts have two bits each, one per state tensor (SGD's buffer or
// Adam's m; Adam's v): an element of each may be counted (UpdateCounts::stateFlushed,
// stateNonFinite add both).
enum UpdateSlot : int {
    kUpdateNonzero = 0,
    kUpdateLost = 1,
    kUpdateNonFinite = 2,
    kUpdateStateFlushed = 3,
    kUpdateStateFlushed2 = 4,
    kUpdateStateNonFinite = 5,
    kUpdateStateNonFinite2 = 6,
    kUpdateSlots = 7
};

// The state bits of one state element (which: 0 the first state tensor, 1 the second): flushed
// when the fp32 arithmetic without the state's roundings (shadow) is nonzero and the stored
// value is 0; made non-finite when finite before and not after (update_math.cpp's rule).
PLAB_HOST_DEVICE unsigned stateMask(int which, float shadow, float before, float after)
{
    unsigned mask = 0;
    if (shadow != 0.0f && after == 0.0f) mask |= 1u << (kUpdateStateFlushed + which);
    if (isFiniteFloat(before) && !isFiniteFloat(after)) mask |= 1u << (kUpdateStateNonFinite + which);
    return mask;
}

// plab::SgdScalars and plab::AdamScalars without the C++20 engine headers.
struct SgdStep {
    float momentum, negLr;
    bool useMomentum, firstStep;
};
struct AdamStep {
    float beta1, oneMinusBeta1, beta2, oneMinusBeta2, invBiasCorrection2Sqrt, eps, negStepSize;
};

// How a tensor's writes to the weights round (plab::WeightWrite without its pointer): the
// rounding (update_rounding::Mode) and stochastic rounding's key. The element functions
// take the element's index in its tensor and its Kahan compensation (nullptr unless kahan)
// beside it.
struct WeightWriteRule {
    int rounding = update_rounding::kNearest;
    unsigned long long key = 0;
};

// w = round_f(fma(alpha, d, w)), as applyUpdate, by the rule's rounding; returns the
// UpdateSlot bits it counts. The update alpha * d is evaluated in double (exact for two
// floats): zero means no update; a NaN update compares unequal to 0, so it counts as
// nonzero and never as lost. Kahan: comp.add_(d, alpha); param.add_(comp);
// comp.add_(prev.sub_(param)), each rounded to f; lost when neither w nor comp changed.
PLAB_HOST_DEVICE unsigned applyUpdateElement(int f, float& w, float d, float alpha, const WeightWriteRule& rule = {},
                                             unsigned long long index = 0, float* comp = nullptr)
{
    const float before = w;
    bool kept = true;
    if (rule.rounding == update_rounding::kStochastic) {
        const std::uint32_t bits = update_rounding::randomBits(rule.key, index);
        w = floatFromBits(update_rounding::stochasticRoundBits(f, floatBits(fmaRn(alpha, d, before)), bits));
        kept = w != before;
    } else if (rule.rounding == update_rounding::kKahan) {
        const float compBefore = *comp;
        const float owed = roundFloat(f, fmaRn(alpha, d, compBefore));
        w = roundFloat(f, addRn(before, owed));
        const float taken = roundFloat(f, subRn(before, w));
        *comp = roundFloat(f, addRn(owed, taken));
        kept = w != before || *comp != compBefore;
    } else {
        w = roundFloat(f, fmaRn(alpha, d, before));
        kept = w != before;
    }
    const double update = static_cast<double>(alpha) * static_cast<double>(d);
    if (update == 0.0) return 0u;
    unsigned mask = 1u << kUpdateNonzero;
    if (!kept) mask |= 1u << kUpdateLost;
    if (!isFiniteFloat(w) && isFiniteFloat(before)) mask |= 1u << kUpdateNonFinite;
    return mask;
}

// torch.optim.SGD on one element: the gradient as a tensor of format f holds it, then
// buf = clone(grad) or buf.mul_(momentum).add_(grad) stored in the state's format sf, then
// param.add_(buf, alpha=-lr), written by the rule.
PLAB_HOST_DEVICE unsigned sgdElement(const SgdStep& s, int f, int sf, float& w, float gradIn, float& buf,
                                     const WeightWriteRule& rule = {}, unsigned long long index = 0,
                                     float* comp = nullptr)
{
    const float grad = roundFloat(f, gradIn);
    if (!s.useMomentum) return applyUpdateElement(f, w, grad, s.negLr, rule, index, comp);
    unsigned state = 0;
    if (s.firstStep) {
        buf = roundFloat(sf, grad);
        state = stateMask(0, grad, 0.0f, buf);
    } else {
        const float before = buf, scaled = mulRn(buf, s.momentum);
        buf = roundFloat(sf, scaled);
        buf = roundFloat(sf, addRn(buf, grad));
        state = stateMask(0, addRn(scaled, grad), before, buf);
    }
    return state | applyUpdateElement(f, w, buf, s.negLr, rule, index, comp);
}

// torch.optim.Adam on one element, each op rounded when it writes a tensor: the gradient
// and the weights in format f, the moments and denom in the state's format sf:
// exp_avg.mul_(b1).add_(g, 1-b1); exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2);
// denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps); param.addcdiv_(exp_avg, denom, -step).
PLAB_HOST_DEVICE unsigned adamElement(const AdamStep& s, int f, int sf, float& w, float gradIn, float& m, float& v,
                                      const WeightWriteRule& rule = {}, unsigned long long index = 0,
                                      float* comp = nullptr)
{
    const float grad = roundFloat(f, gradIn);
    const float mBefore = m, vBefore = v;
    m = roundFloat(sf, mulRn(m, s.beta1));
    m = roundFloat(sf, fmaRn(s.oneMinusBeta1, grad, m));
    v = roundFloat(sf, mulRn(v, s.beta2));
    v = roundFloat(sf, fmaRn(mulRn(s.oneMinusBeta2, grad), grad, v));
    const unsigned state = stateMask(0, fmaRn(s.oneMinusBeta1, grad, mulRn(mBefore, s.beta1)), mBefore, m) |
                           stateMask(1, fmaRn(mulRn(s.oneMinusBeta2, grad), grad, mulRn(vBefore, s.beta2)), vBefore, v);
    float denom = roundFloat(sf, sqrtRn(v));
    denom = roundFloat(sf, mulRn(denom, s.invBiasCorrection2Sqrt));
    denom = roundFloat(sf, addRn(denom, s.eps));
    return state | applyUpdateElement(f, w, divRn(m, denom), s.negStepSize, rule, index, comp);   // the ratio stays fp32
}

}  // namespace plab::cudakernels
