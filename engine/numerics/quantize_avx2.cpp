// AVX2 kernels of numerics/quantize, for CPUs without AVX-512: 8 lanes at a time, the same
// element rule as the portable code ((a + 2^(q+23)) - 2^(q+23) at the quantum 2^q,
// saturation, NaN kept) and the same statistics by lane counts. Blocks are taken one at a
// time (an MX block is four vectors, an NVFP4 block two) and their scales chosen by the
// portable code's own functions. Only these functions use AVX2, through function-level
// target attributes; quantize.cpp calls them when simdLevel() is avx2 and no histogram is
// asked for. The tests compare every path with the portable one bit for bit.
#include "numerics/quantize_kernels.h"

#include "numerics/format.h"
#define PLAB_SIMD_KERNELS
#include "numerics/simd_support.h"
#include "numerics/round_lanes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace plab::detail {

#ifdef PLAB_HAVE_X86

namespace {

#define PLAB_INLINE inline __attribute__((always_inline))

// The rule's constants in lanes.
struct Lanes {
    __m256i minNormalLog2, maxExponent, mantissaPlus150;
    __m256 maxFinite, minNormal;
};

PLAB_AVX2 Lanes lanesOf(const ElementRule& r)
{
    return {_mm256_set1_epi32(r.minNormalLog2), _mm256_set1_epi32(r.maxExponent),
            _mm256_set1_epi32(150 - r.mantissaBits), _mm256_set1_ps(r.maxFinite), _mm256_set1_ps(r.minNormal)};
}

// Per-lane counts, as the AVX-512 kernels keep them: underflow = zero results - zero
// inputs, subnormal = results below the smallest normal - zero results. A lane counts at
// most one value in 8, so 32 bits hold any tensor below 2^35 values.
struct Tally {
    __m256i zerosIn, zeroOut, belowNormal, saturated, nan, inf;
};

PLAB_AVX2 inline Tally emptyTally()
{
    const __m256i z = _mm256_setzero_si256();
    return {z, z, z, z, z, z};
}

// c += 1 in the lanes of m (all ones there: -1).
PLAB_AVX2 PLAB_INLINE void countLanes(__m256i& c, __m256i m) { c = _mm256_sub_epi32(c, m); }

PLAB_AVX2 inline void flush(const Tally t, LaneCounts& c)
{
    c.addTally(laneSum(t.zerosIn), laneSum(t.zeroOut), laneSum(t.belowNormal), laneSum(t.saturated), laneSum(t.nan),
               laneSum(t.inf));
}

PLAB_AVX2 PLAB_INLINE __m256i maskOf(__m256 m) { return _mm256_castps_si256(m); }

// x (scaled) rounded, saturating, NaN kept, with its statistics counted over `live` lanes.
// kFinite: every live x is finite (an MX block whose amax is).
template <bool kFinite>
PLAB_AVX2 PLAB_INLINE __m256 roundLanes(const Lanes& L, __m256 x, __m256i live, Tally& t)
{
    const __m256i absMask = set1(0x7FFFFFFF);
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i absBits = _mm256_and_si256(bits, absMask);
    const __m256 a = _mm256_castsi256_ps(absBits);
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(absBits, 23), set1(127));
    e = _mm256_min_epi32(_mm256_max_epi32(e, L.minNormalLog2), L.maxExponent);
    // magic = 2^(e - mantissa + 23), as the exponent field e - mantissa + 150.
    const __m256 magic = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, L.mantissaPlus150), 23));
    const __m256 unsaturated = _mm256_sub_ps(_mm256_add_ps(a, magic), magic);
    // min_ps returns its second operand when one is NaN: NaN lanes are put back below.
    __m256 r = _mm256_min_ps(unsaturated, L.maxFinite);
    __m256i finite = live;
    if constexpr (!kFinite) {
        const __m256i infBits = set1(0x7F800000);
        // absBits <= 0x7FFFFFFF: the signed compare is the unsigned one.
        const __m256i nan = _mm256_and_si256(live, _mm256_cmpgt_epi32(absBits, infBits));
        const __m256i inf = _mm256_and_si256(live, _mm256_cmpeq_epi32(absBits, infBits));
        finite = _mm256_andnot_si256(_mm256_or_si256(nan, inf), live);
        r = _mm256_blendv_ps(r, a, _mm256_castsi256_ps(nan));
        countLanes(t.nan, nan);
        countLanes(t.inf, inf);
    }
    countLanes(t.saturated, _mm256_and_si256(finite, maskOf(_mm256_cmp_ps(unsaturated, L.maxFinite, _CMP_GT_OQ))));
    countLanes(t.zerosIn, _mm256_and_si256(live, _mm256_cmpeq_epi32(absBits, _mm256_setzero_si256())));
    countLanes(t.zeroOut, _mm256_and_si256(live, maskOf(_mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_EQ_OQ))));
    countLanes(t.belowNormal, _mm256_and_si256(live, maskOf(_mm256_cmp_ps(r, L.minNormal, _CMP_LT_OQ))));
    // r with x's sign.
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(r), absMask),
                                               _mm256_andnot_si256(absMask, bits)));
}

// All ones in the lanes of the next 8 values when `left` remain (none when left <= 0).
PLAB_AVX2 PLAB_INLINE __m256i tailMask(std::int64_t left)
{
    const int n = static_cast<int>(std::clamp<std::int64_t>(left, 0, 8));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

PLAB_AVX2 PLAB_INLINE __m256 load(const float* p, __m256i live) { return _mm256_maskload_ps(p, live); }
PLAB_AVX2 PLAB_INLINE void store(float* p, __m256i live, __m256 v) { _mm256_maskstore_ps(p, live, v); }
PLAB_AVX2 PLAB_INLINE __m256i absBitsOf(const float* p, __m256i live)
{
    return _mm256_and_si256(_mm256_castps_si256(load(p, live)), set1(0x7FFFFFFF));
}

// The bits of the largest |value| down each of eight columns of a band (rows x 8 at
// `src`, row stride ld), stored per column: a band kernel's block amax.
PLAB_AVX2 inline void columnAmaxBits(const float* src, std::int64_t rows, std::int64_t ld, __m256i live, std::uint32_t* amax)
{
    __m256i largest = _mm256_setzero_si256();
    for (std::int64_t r = 0; r < rows; ++r) largest = _mm256_max_epu32(largest, absBitsOf(src + r * ld, live));
    _mm256_store_si256(reinterpret_cast<__m256i*>(amax), largest);
}

// The largest lane (unsigned).
PLAB_AVX2 inline std::uint32_t maxLane(__m256i v)
{
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(m));
}

PLAB_AVX2 inline int popcountLanes(__m256i m) { return std::popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m)))); }

// An MX block's exponent from its amax bits, as mxBlockExponent (|x| as integers: NaN above
// infinity above every finite value; zeros and fp32 subnormals clamp to -127).
inline int blockExponentOf(const ElementRule& rule, std::uint32_t amaxBits)
{
    if (amaxBits >= 0x7F800000u) return kNanExponent;
    const int up = (amaxBits & 0x7FFFFFu) > rule.ceilAbove ? 1 : 0;   // ceil: past the largest finite
    return std::clamp(static_cast<int>(amaxBits >> 23) - 127 - rule.emax + up, -127, 127);
}

}  // namespace

PLAB_AVX2 float quantizeScaledAvx2(const ElementRule& rule, const float* src, float* dst, std::size_t n, float scale,
                                   float scaleInv, LaneCounts& counts)
{
    const Lanes L = lanesOf(rule);
    const __m256 vScale = _mm256_set1_ps(scale), vInv = _mm256_set1_ps(scaleInv);
    Tally t = emptyTally();
    __m256 amax = _mm256_setzero_ps();
    __m256 sawNaN = _mm256_setzero_ps();
    for (std::size_t i = 0; i < n; i += 8) {
        const __m256i live = tailMask(static_cast<std::int64_t>(n - i));
        const __m256 in = load(src + i, live);
        const __m256 a = _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(in), set1(0x7FFFFFFF)));
        sawNaN = _mm256_or_ps(sawNaN, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
        amax = _mm256_max_ps(a, amax);   // a NaN lane keeps amax (the second operand)
        const __m256 q = roundLanes<false>(L, _mm256_mul_ps(in, vScale), live, t);
        store(dst + i, live, _mm256_mul_ps(q, vInv));
    }
    flush(t, counts);
    if (_mm256_movemask_ps(sawNaN)) return std::numeric_limits<float>::quiet_NaN();
    return std::bit_cast<float>(maxLane(_mm256_castps_si256(amax)));   // |x| >= 0: integer order is float order
}

PLAB_AVX2 float amaxAvx2(const float* src, std::size_t n)
{
    __m256i largest = _mm256_setzero_si256();
    for (std::size_t i = 0; i < n; i += 8)
        largest = _mm256_max_epu32(largest, absBitsOf(src + i, tailMask(static_cast<std::int64_t>(n - i))));
    const std::uint32_t bits = maxLane(largest);
    return bits > 0x7F800000u ? std::numeric_limits<float>::quiet_NaN() : std::bit_cast<float>(bits);
}

PLAB_AVX2 void mxRowAvx2(const ElementRule& rule, const float* src, float* dst, std::int64_t cols, LaneCounts& counts,
                         int* blockExponents)
{
    static_assert(kMxBlockSize == 32, "an MX block is four vectors of 8");
    const Lanes L = lanesOf(rule);
    const __m256 nanLanes = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
    Tally t = emptyTally();
    for (std::int64_t b = 0, c0 = 0; c0 < cols; ++b, c0 += kMxBlockSize) {
        __m256i live[4], largest = _mm256_setzero_si256();
        for (int v = 0; v < 4; ++v) {
            live[v] = tailMask(cols - c0 - 8 * v);
            largest = _mm256_max_epu32(largest, absBitsOf(src + c0 + 8 * v, live[v]));
        }
        const int e = blockExponentOf(rule, maxLane(largest));
        blockExponents[b] = e;
        if (e == kNanExponent) {
            for (int v = 0; v < 4; ++v) {
                store(dst + c0 + 8 * v, live[v], nanLanes);
                countLanes(t.nan, live[v]);
            }
            continue;
        }
        const __m256 down = _mm256_set1_ps(powerOfTwo(-e)), up = _mm256_set1_ps(powerOfTwo(e));
        for (int v = 0; v < 4; ++v) {
            const __m256 in = load(src + c0 + 8 * v, live[v]);
            store(dst + c0 + 8 * v, live[v], _mm256_mul_ps(roundLanes<true>(L, _mm256_mul_ps(in, down), live[v], t), up));
        }
    }
    flush(t, counts);
}

PLAB_AVX2 void mxBandAvx2(const ElementRule& rule, const float* src, float* dst, std::int64_t rows, std::int64_t cols,
                          std::int64_t ld, int* blockExponents, LaneCounts& counts)
{
    const Lanes L = lanesOf(rule);
    const __m256 nanLanes = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
    Tally t = emptyTally();
    // Eight columns at a time: the band's amax down each, their exponents, then the values.
    for (std::int64_t c = 0; c < cols; c += 8) {
        const __m256i live = tailMask(cols - c);
        alignas(32) std::uint32_t amax[8];
        columnAmaxBits(src + c, rows, ld, live, amax);
        alignas(32) float down[8], up[8];
        alignas(32) std::int32_t nan[8];
        const int lanes = static_cast<int>(std::min<std::int64_t>(8, cols - c));
        for (int j = 0; j < 8; ++j) {
            const int e = j < lanes ? blockExponentOf(rule, amax[j]) : 0;
            if (j < lanes && blockExponents) blockExponents[c + j] = e;
            nan[j] = e == kNanExponent ? -1 : 0;
            down[j] = e == kNanExponent ? 1.0f : powerOfTwo(-e);
            up[j] = e == kNanExponent ? 1.0f : powerOfTwo(e);
        }
        const __m256i nanColumns = _mm256_and_si256(live, _mm256_load_si256(reinterpret_cast<const __m256i*>(nan)));
        const __m256i quantised = _mm256_andnot_si256(nanColumns, live);
        const __m256 vDown = _mm256_load_ps(down), vUp = _mm256_load_ps(up);
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m256 in = load(src + r * ld + c, live);
            __m256 out = _mm256_mul_ps(roundLanes<true>(L, _mm256_mul_ps(in, vDown), quantised, t), vUp);
            out = _mm256_blendv_ps(out, nanLanes, _mm256_castsi256_ps(nanColumns));
            store(dst + r * ld + c, live, out);
            countLanes(t.nan, nanColumns);
        }
    }
    flush(t, counts);
}

PLAB_AVX2 void nvfp4RowAvx2(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst,
                            std::int64_t cols, LaneCounts& counts, GradientHistogram* blockScales)
{
    static_assert(kNvfp4BlockSize == 16, "an NVFP4 block is two vectors of 8");
    const Lanes L = lanesOf(rule);
    const __m256 nanLanes = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
    const __m256 vTensor = _mm256_set1_ps(t.tensorScale);
    const __m256i signMask = set1(0x80000000u);
    Tally tally = emptyTally();
    for (std::int64_t c0 = 0; c0 < cols; c0 += kNvfp4BlockSize) {
        const __m256i live[2] = {tailMask(cols - c0), tailMask(cols - c0 - 8)};
        const std::uint32_t amaxBits =
            maxLane(_mm256_max_epu32(absBitsOf(src + c0, live[0]), absBitsOf(src + c0 + 8, live[1])));
        if (amaxBits >= 0x7F800000u) {   // a NaN or an infinity
            countNvfp4Scale(blockScales, std::numeric_limits<float>::quiet_NaN());
            for (int v = 0; v < 2; ++v) {
                store(dst + c0 + 8 * v, live[v], nanLanes);
                countLanes(tally.nan, live[v]);
            }
            continue;
        }
        const Nvfp4BlockScale scale = nvfp4BlockScale(t, std::bit_cast<float>(amaxBits));
        countNvfp4Scale(blockScales, scale.block * t.decodeTensor);
        for (int v = 0; v < 2; ++v) {
            const __m256 in = load(src + c0 + 8 * v, live[v]);
            if (scale.block == 0.0f) {   // lost: signed zeros; counted as the portable code counts in * S_enc
                const __m256i zero =
                    _mm256_and_si256(live[v], maskOf(_mm256_cmp_ps(_mm256_mul_ps(in, vTensor), _mm256_setzero_ps(), _CMP_EQ_OQ)));
                counts.zerosIn += static_cast<unsigned>(popcountLanes(zero));
                counts.underflow += static_cast<unsigned>(popcountLanes(_mm256_andnot_si256(zero, live[v])));
                store(dst + c0 + 8 * v, live[v], _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(in), signMask)));
                continue;
            }
            const __m256 q = roundLanes<false>(L, _mm256_mul_ps(in, _mm256_set1_ps(scale.element)), live[v], tally);
            store(dst + c0 + 8 * v, live[v], _mm256_div_ps(_mm256_mul_ps(q, _mm256_set1_ps(scale.block)), vTensor));
        }
    }
    flush(tally, counts);
}

PLAB_AVX2 void nvfp4BandAvx2(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst,
                             std::int64_t rows, std::int64_t cols, std::int64_t ld, LaneCounts& counts,
                             GradientHistogram* blockScales)
{
    const Lanes L = lanesOf(rule);
    const __m256 nanLanes = _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN());
    const __m256 vTensor = _mm256_set1_ps(t.tensorScale);
    const __m256i signMask = set1(0x80000000u);
    Tally tally = emptyTally();
    for (std::int64_t c = 0; c < cols; c += 8) {
        const __m256i live = tailMask(cols - c);
        alignas(32) std::uint32_t amax[8];
        columnAmaxBits(src + c, rows, ld, live, amax);
        alignas(32) float block[8], element[8];
        alignas(32) std::int32_t nan[8], lost[8];
        const int lanes = static_cast<int>(std::min<std::int64_t>(8, cols - c));
        for (int j = 0; j < 8; ++j) {
            nan[j] = lost[j] = 0;
            block[j] = element[j] = 1.0f;
            if (j >= lanes) continue;
            if (amax[j] >= 0x7F800000u) {
                nan[j] = -1;
                countNvfp4Scale(blockScales, std::numeric_limits<float>::quiet_NaN());
                continue;
            }
            const Nvfp4BlockScale s = nvfp4BlockScale(t, std::bit_cast<float>(amax[j]));
            countNvfp4Scale(blockScales, s.block * t.decodeTensor);
            block[j] = s.block;
            element[j] = s.element;
            lost[j] = s.block == 0.0f ? -1 : 0;
        }
        const __m256i nanColumns = _mm256_load_si256(reinterpret_cast<const __m256i*>(nan));
        const __m256i lostColumns = _mm256_load_si256(reinterpret_cast<const __m256i*>(lost));
        const __m256i quantised = _mm256_andnot_si256(_mm256_or_si256(nanColumns, lostColumns), live);
        const __m256 vBlock = _mm256_load_ps(block), vElement = _mm256_load_ps(element);
        const bool anyLost = _mm256_movemask_ps(_mm256_castsi256_ps(lostColumns)) != 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m256 in = load(src + r * ld + c, live);
            const __m256 q = roundLanes<false>(L, _mm256_mul_ps(in, vElement), quantised, tally);
            __m256 out = _mm256_div_ps(_mm256_mul_ps(q, vBlock), vTensor);
            if (anyLost) {
                const __m256i zero = _mm256_and_si256(
                    lostColumns, maskOf(_mm256_cmp_ps(_mm256_mul_ps(in, vTensor), _mm256_setzero_ps(), _CMP_EQ_OQ)));
                counts.zerosIn += static_cast<unsigned>(popcountLanes(zero));
                counts.underflow += static_cast<unsigned>(popcountLanes(_mm256_andnot_si256(zero, lostColumns)));
                out = _mm256_blendv_ps(out, _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(in), signMask)),
                                       _mm256_castsi256_ps(lostColumns));
            }
            out = _mm256_blendv_ps(out, nanLanes, _mm256_castsi256_ps(nanColumns));
            store(dst + r * ld + c, live, out);
            countLanes(tally.nan, nanColumns);
        }
    }
    flush(tally, counts);
}

PLAB_AVX2 void encodeCodesAvx2(const CodeRule& r, const float* q, std::uint8_t* codes, std::size_t n)
{
    const __m256i absMask = _mm256_set1_epi32(0x7FFFFFFF), mantissaMask = _mm256_set1_epi32(0x7FFFFF);
    const __m256i rebias = _mm256_set1_epi32(r.bias - 127), headShift = _mm256_set1_epi32(r.mantissaBits);
    const __m256i tailShift = _mm256_set1_epi32(23 - r.mantissaBits);
    const __m256i belowNormal = _mm256_set1_epi32(r.minNormalLog2 + 126), infinity = _mm256_set1_epi32(0x7F800000);
    const __m256i nanCode = _mm256_set1_epi32(0x7F), signBit = _mm256_set1_epi32(0x80);
    const __m256 perSubnormal = _mm256_set1_ps(r.perSubnormal);
    // The low byte of each 32-bit lane, gathered into the low 4 bytes of each 128-bit half.
    const __m256i lowBytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                              12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(q + i));
        const __m256i a = _mm256_and_si256(bits, absMask);
        const __m256i field = _mm256_srli_epi32(a, 23);
        const __m256i normal = _mm256_or_si256(_mm256_sllv_epi32(_mm256_add_epi32(field, rebias), headShift),
                                               _mm256_srlv_epi32(_mm256_and_si256(a, mantissaMask), tailShift));
        const __m256i subnormal = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_castsi256_ps(a), perSubnormal));
        __m256i code = _mm256_blendv_epi8(subnormal, normal, _mm256_cmpgt_epi32(field, belowNormal));
        code = _mm256_blendv_epi8(code, nanCode, _mm256_cmpgt_epi32(a, infinity));
        code = _mm256_or_si256(code, _mm256_and_si256(_mm256_srli_epi32(bits, 24), signBit));
        const __m256i packed = _mm256_shuffle_epi8(code, lowBytes);
        const __m128i eight = _mm_unpacklo_epi32(_mm256_castsi256_si128(packed), _mm256_extracti128_si256(packed, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), eight);
    }
    for (; i < n; ++i) codes[i] = codeOf(r, q[i]);
}

PLAB_AVX2 void decodeCodesAvx2(const CodeRule& r, const std::uint8_t* codes, float* dst, std::size_t n,
                               float scaleInv)
{
    const __m256 inv = _mm256_set1_ps(scaleInv), subnormal = _mm256_set1_ps(r.subnormal);
    const __m256i magnitudeMask = _mm256_set1_epi32(0x7F), signBit = _mm256_set1_epi32(0x80);
    const __m256i shift = _mm256_set1_epi32(23 - r.mantissaBits), rebias = _mm256_set1_epi32((127 - r.bias) << 23);
    const __m256i belowNormal = _mm256_set1_epi32((1 << r.mantissaBits) - 1);
    const __m256i belowSpecial = _mm256_set1_epi32(r.firstSpecial - 1), infinityCode = _mm256_set1_epi32(r.infinity);
    const __m256i nan = _mm256_set1_epi32(0x7FC00000), infinity = _mm256_set1_epi32(0x7F800000);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i code = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i)));
        const __m256i magnitude = _mm256_and_si256(code, magnitudeMask);
        const __m256i normal = _mm256_add_epi32(_mm256_sllv_epi32(magnitude, shift), rebias);
        const __m256i small = _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), subnormal));
        __m256i bits = _mm256_blendv_epi8(small, normal, _mm256_cmpgt_epi32(magnitude, belowNormal));
        bits = _mm256_blendv_epi8(bits, nan, _mm256_cmpgt_epi32(magnitude, belowSpecial));
        bits = _mm256_blendv_epi8(bits, infinity, _mm256_cmpeq_epi32(magnitude, infinityCode));
        bits = _mm256_or_si256(bits, _mm256_slli_epi32(_mm256_and_si256(code, signBit), 24));
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_castsi256_ps(bits), inv));
    }
    for (; i < n; ++i) dst[i] = valueOf(r, codes[i]) * scaleInv;
}

#else

float quantizeScaledAvx2(const ElementRule&, const float*, float*, std::size_t, float, float, LaneCounts&) { return 0; }
float amaxAvx2(const float*, std::size_t) { return 0; }
void mxRowAvx2(const ElementRule&, const float*, float*, std::int64_t, LaneCounts&, int*) {}
void mxBandAvx2(const ElementRule&, const float*, float*, std::int64_t, std::int64_t, std::int64_t, int*, LaneCounts&) {}
void nvfp4RowAvx2(const ElementRule&, const Nvfp4Scales&, const float*, float*, std::int64_t, LaneCounts&,
                  GradientHistogram*) {}
void nvfp4BandAvx2(const ElementRule&, const Nvfp4Scales&, const float*, float*, std::int64_t, std::int64_t,
                   std::int64_t, LaneCounts&, GradientHistogram*) {}

void encodeCodesAvx2(const CodeRule&, const float*, std::uint8_t*, std::size_t) {}
void decodeCodesAvx2(const CodeRule&, const std::uint8_t*, float*, std::size_t, float) {}

#endif

}  // namespace plab::detail
