// AVX-512 kernels of numerics/quantize: 16 lanes at a time, the same element rule as the
// portable code ((a + 2^(q+23)) - 2^(q+23) at the quantum 2^q, saturation, NaN kept) and
// the same statistics by mask counts. Only these functions use AVX-512, through
// function-level target attributes; quantize.cpp calls them when the CPU has AVX-512F/BW
// and no histogram is asked for (histogram steps take the portable path). The tests
// compare both paths bit for bit.
#include "numerics/quantize_kernels.h"

#include "numerics/format.h"
#define PLAB_SIMD_KERNELS
#include "numerics/simd_support.h"

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
    __m512i minNormalLog2, maxExponent, mantissaPlus150;
    __m512 maxFinite, minNormal;
};

PLAB_AVX512 Lanes lanesOf(const ElementRule& r)
{
    return {_mm512_set1_epi32(r.minNormalLog2), _mm512_set1_epi32(r.maxExponent),
            _mm512_set1_epi32(150 - r.mantissaBits), _mm512_set1_ps(r.maxFinite), _mm512_set1_ps(r.minNormal)};
}

// Per-lane counts of roundLanes, folded into LaneCounts by flush() at the end of each
// kernel call (a lane counts at most one value per 16, so 32 bits hold any tensor below
// 2^36 values). The statistics follow from them: underflow = zero results - zero inputs,
// subnormal = results below the smallest normal - zero results.
struct Tally {
    __m512i zerosIn, zeroOut, belowNormal, saturated, nan, inf;
};

PLAB_AVX512 inline Tally emptyTally()
{
    const __m512i z = _mm512_setzero_si512();
    return {z, z, z, z, z, z};
}

// c += 1 in the lanes of m.
PLAB_AVX512 PLAB_INLINE void countLanes(__m512i& c, __mmask16 m) { c = _mm512_mask_sub_epi32(c, m, c, _mm512_set1_epi32(-1)); }

PLAB_AVX512 inline std::uint64_t laneSum(__m512i c)
{
    const __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(c));
    const __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(c, 1));
    return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi)));
}

// (By value: a Tally whose address escapes is kept in memory through the whole loop.)
PLAB_AVX512 inline void flush(const Tally t, LaneCounts& c)
{
    c.addTally(laneSum(t.zerosIn), laneSum(t.zeroOut), laneSum(t.belowNormal), laneSum(t.saturated), laneSum(t.nan),
               laneSum(t.inf));
}

// x (scaled) rounded, saturating, NaN kept, with its statistics counted over `live` lanes.
// kFinite: the caller knows every live x is finite (an MX block whose amax is), so NaN
// and infinity need no test.
template <bool kFinite>
PLAB_AVX512 PLAB_INLINE __m512 roundLanes(const Lanes& L, __m512 x, __mmask16 live, Tally& t)
{
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i absBits = _mm512_and_si512(bits, absMask);
    const __m512 a = _mm512_castsi512_ps(absBits);
    __m512i e = _mm512_sub_epi32(_mm512_srli_epi32(absBits, 23), _mm512_set1_epi32(127));
    e = _mm512_min_epi32(_mm512_max_epi32(e, L.minNormalLog2), L.maxExponent);
    // magic = 2^(e - mantissa + 23), as the exponent field e - mantissa + 150.
    const __m512 magic = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e, L.mantissaPlus150), 23));
    const __m512 unsaturated = _mm512_sub_ps(_mm512_add_ps(a, magic), magic);
    // min_ps returns its second operand when one is NaN: NaN lanes are put back below.
    __m512 r = _mm512_min_ps(unsaturated, L.maxFinite);
    __mmask16 finite = live;
    if constexpr (!kFinite) {
        const __m512i infBits = _mm512_set1_epi32(0x7F800000);
        const __mmask16 nan = _mm512_mask_cmpgt_epu32_mask(live, absBits, infBits);
        const __mmask16 inf = _mm512_mask_cmpeq_epi32_mask(live, absBits, infBits);
        finite = live & static_cast<__mmask16>(~(nan | inf));
        r = _mm512_mask_mov_ps(r, nan, a);
        countLanes(t.nan, nan);
        countLanes(t.inf, inf);
    }
    countLanes(t.saturated, _mm512_mask_cmp_ps_mask(finite, unsaturated, L.maxFinite, _CMP_GT_OQ));
    countLanes(t.zerosIn, _mm512_mask_testn_epi32_mask(live, absBits, absBits));
    countLanes(t.zeroOut, _mm512_mask_cmp_ps_mask(live, r, _mm512_setzero_ps(), _CMP_EQ_OQ));
    countLanes(t.belowNormal, _mm512_mask_cmp_ps_mask(live, r, L.minNormal, _CMP_LT_OQ));
    // r with x's sign: (r & absMask) | (x & ~absMask).
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(r), bits, absMask, 0xE4));
}

// 2^e for e in [-127, 127] in each lane (2^-127 subnormal), as powerOfTwo.
PLAB_AVX512 inline __m512 powerOfTwoLanes(__m512i e)
{
    const __m512i normal = _mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23);
    const __mmask16 subnormal = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(-126));
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(normal, subnormal, _mm512_set1_epi32(1 << 22)));
}

// MX block exponents from amax bits (|x| as integers: their order is the floats' order,
// NaN above infinity above every finite value): floor(log2 amax) - emax (+1 where
// rule.ceilAbove says so) clamped to [-127, 127] (zeros and fp32 subnormals fall below -127 and clamp to it); *nonFinite gets the
// lanes whose amax is NaN or infinite.
PLAB_AVX512 inline __m512i blockExponentLanes(const ElementRule& rule, __m512i amaxBits, __mmask16* nonFinite)
{
    *nonFinite = _mm512_cmpge_epu32_mask(amaxBits, _mm512_set1_epi32(0x7F800000));
    __m512i e = _mm512_sub_epi32(_mm512_srli_epi32(amaxBits, 23), _mm512_set1_epi32(127 + rule.emax));
    // ceil: one more where the mantissa field passes the largest finite's (never for floor).
    const __mmask16 up = _mm512_cmpgt_epu32_mask(_mm512_and_si512(amaxBits, _mm512_set1_epi32(0x7FFFFF)),
                                                 _mm512_set1_epi32(static_cast<int>(rule.ceilAbove)));
    e = _mm512_mask_add_epi32(e, up, e, _mm512_set1_epi32(1));
    return _mm512_min_epi32(_mm512_max_epi32(e, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
}

// Lane j: the largest lane of m[j] (unsigned), for 16 vectors at once: four rounds that
// each halve the lanes per vector and pair the vectors up (45 instructions where 16
// separate reductions take about 130).
PLAB_AVX512 inline __m512i lanesMaxima(const __m512i (&m)[16])
{
    __m512i y[8], z[4], w[2];
    // y[b]: 128-bit chunks 0-1 hold m[b]'s lanes folded in two, chunks 2-3 m[b + 8]'s.
    for (int b = 0; b < 8; ++b)
        y[b] = _mm512_max_epu32(_mm512_shuffle_i32x4(m[b], m[b + 8], 0x44), _mm512_shuffle_i32x4(m[b], m[b + 8], 0xEE));
    // z[b]: chunks hold m[b], m[b + 8], m[b + 4], m[b + 12], four lanes each.
    for (int b = 0; b < 4; ++b)
        z[b] = _mm512_max_epu32(_mm512_shuffle_i32x4(y[b], y[b + 4], 0x88), _mm512_shuffle_i32x4(y[b], y[b + 4], 0xDD));
    // w[b]: in chunk c, lanes 0 and 2 hold z[b]'s vector, lanes 1 and 3 z[b + 2]'s.
    for (int b = 0; b < 2; ++b)
        w[b] = _mm512_max_epu32(_mm512_unpacklo_epi32(z[b], z[b + 2]), _mm512_unpackhi_epi32(z[b], z[b + 2]));
    // Chunk c, lanes 0..3: the maxima of m[o], m[o + 2], m[o + 1], m[o + 3], o = {0, 8, 4, 12}[c].
    const __m512i r = _mm512_max_epu32(_mm512_unpacklo_epi64(w[0], w[1]), _mm512_unpackhi_epi64(w[0], w[1]));
    const __m512i order = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
    return _mm512_permutexvar_epi32(order, r);
}

// The lanes of the next 16 values when `left` remain (none when left <= 0).
PLAB_AVX512 inline __mmask16 tailMask(std::int64_t left)
{
    if (left <= 0) return 0;
    return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

}  // namespace

PLAB_AVX512 float quantizeScaledAvx512(const ElementRule& rule, const float* src, float* dst, std::size_t n,
                                       float scale, float scaleInv, LaneCounts& counts)
{
    const Lanes L = lanesOf(rule);
    const __m512 vScale = _mm512_set1_ps(scale), vInv = _mm512_set1_ps(scaleInv);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    Tally t = emptyTally();
    __m512 amax = _mm512_setzero_ps();
    __mmask16 sawNaN = 0;
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 live = tailMask(static_cast<std::int64_t>(n - i));
        const __m512 in = _mm512_maskz_loadu_ps(live, src + i);
        const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(in), absMask));
        sawNaN |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
        amax = _mm512_max_ps(a, amax);   // a NaN lane keeps amax (the second operand)
        const __m512 q = roundLanes<false>(L, _mm512_mul_ps(in, vScale), live, t);
        _mm512_mask_storeu_ps(dst + i, live, _mm512_mul_ps(q, vInv));
    }
    flush(t, counts);
    if (sawNaN) return std::numeric_limits<float>::quiet_NaN();
    return _mm512_reduce_max_ps(amax);
}

PLAB_AVX512 float amaxAvx512(const float* src, std::size_t n)
{
    // |x| as integers: NaN above infinity above every finite value, so the largest is NaN
    // when one is.
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    __m512i largest = _mm512_setzero_si512();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 live = tailMask(static_cast<std::int64_t>(n - i));
        largest = _mm512_max_epu32(largest, _mm512_and_si512(_mm512_maskz_loadu_epi32(live, src + i), absMask));
    }
    const auto bits = static_cast<std::uint32_t>(_mm512_reduce_max_epu32(largest));
    return bits > 0x7F800000u ? std::numeric_limits<float>::quiet_NaN() : std::bit_cast<float>(bits);
}

PLAB_AVX512 void mxRowAvx512(const ElementRule& rule, const float* src, float* dst, std::int64_t cols,
                             LaneCounts& counts, int* blockExponents)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    Tally t = emptyTally();
    const std::int64_t blocks = (cols + kMxBlockSize - 1) / kMxBlockSize;
    // Sixteen blocks at a time: their amax together (one vector), then their values.
    for (std::int64_t b0 = 0; b0 < blocks; b0 += 16) {
        const int group = static_cast<int>(std::min<std::int64_t>(16, blocks - b0));
        const bool whole = cols - b0 * kMxBlockSize >= 16 * kMxBlockSize;   // no tail in these blocks
        auto lanes = [&](std::int64_t left) { return whole ? static_cast<__mmask16>(0xFFFF) : tailMask(left); };
        __m512i largest[16];
        for (int j = 0; j < 16; ++j) {
            const std::int64_t c = (b0 + j) * kMxBlockSize;
            const __m512i v0 = _mm512_maskz_loadu_epi32(lanes(cols - c), src + c);
            const __m512i v1 = _mm512_maskz_loadu_epi32(lanes(cols - c - 16), src + c + 16);
            largest[j] = _mm512_max_epu32(_mm512_and_si512(v0, absMask), _mm512_and_si512(v1, absMask));
        }
        __mmask16 nanBlocks = 0;
        const __m512i e = blockExponentLanes(rule, lanesMaxima(largest), &nanBlocks);
        _mm512_mask_storeu_epi32(blockExponents + b0, tailMask(group),
                                 _mm512_mask_mov_epi32(e, nanBlocks, _mm512_set1_epi32(kNanExponent)));
        alignas(64) float down[16], up[16];
        _mm512_store_ps(down, powerOfTwoLanes(_mm512_sub_epi32(_mm512_setzero_si512(), e)));
        _mm512_store_ps(up, powerOfTwoLanes(e));
        for (int j = 0; j < group; ++j) {
            const std::int64_t c0 = (b0 + j) * kMxBlockSize;
            const __mmask16 m0 = lanes(cols - c0), m1 = lanes(cols - c0 - 16);
            if ((nanBlocks >> j) & 1u) {
                _mm512_mask_storeu_ps(dst + c0, m0, nanLanes);
                _mm512_mask_storeu_ps(dst + c0 + 16, m1, nanLanes);
                countLanes(t.nan, m0);
                countLanes(t.nan, m1);
                continue;
            }
            const __m512 vDown = _mm512_set1_ps(down[j]), vUp = _mm512_set1_ps(up[j]);
            const __m512 v0 = _mm512_maskz_loadu_ps(m0, src + c0);
            const __m512 v1 = _mm512_maskz_loadu_ps(m1, src + c0 + 16);
            _mm512_mask_storeu_ps(dst + c0, m0, _mm512_mul_ps(roundLanes<true>(L, _mm512_mul_ps(v0, vDown), m0, t), vUp));
            if (m1)
                _mm512_mask_storeu_ps(dst + c0 + 16, m1,
                                      _mm512_mul_ps(roundLanes<true>(L, _mm512_mul_ps(v1, vDown), m1, t), vUp));
        }
    }
    flush(t, counts);
}

PLAB_AVX512 void mxBandAvx512(const ElementRule& rule, const float* src, float* dst, std::int64_t rows,
                              std::int64_t cols, std::int64_t ld, int* blockExponents, LaneCounts& counts)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    Tally t = emptyTally();
    // Sixteen columns at a time: the band's amax down each (rows x 64 bytes, in the cache
    // for the second pass), their exponents together, then the values.
    for (std::int64_t c = 0; c < cols; c += 16) {
        const __mmask16 live = tailMask(cols - c);
        __m512i largest = _mm512_setzero_si512();
        for (std::int64_t r = 0; r < rows; ++r)
            largest = _mm512_max_epu32(largest, _mm512_and_si512(_mm512_maskz_loadu_epi32(live, src + r * ld + c), absMask));
        __mmask16 nanColumns = 0;
        const __m512i e = blockExponentLanes(rule, largest, &nanColumns);
        nanColumns &= live;
        if (blockExponents)
            _mm512_mask_storeu_epi32(blockExponents + c, live,
                                     _mm512_mask_mov_epi32(e, nanColumns, _mm512_set1_epi32(kNanExponent)));
        const __m512 vDown = powerOfTwoLanes(_mm512_sub_epi32(_mm512_setzero_si512(), e)), vUp = powerOfTwoLanes(e);
        const __mmask16 quantised = live & static_cast<__mmask16>(~nanColumns);
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m512 in = _mm512_maskz_loadu_ps(live, src + r * ld + c);
            __m512 out = _mm512_mul_ps(roundLanes<true>(L, _mm512_mul_ps(in, vDown), quantised, t), vUp);
            out = _mm512_mask_mov_ps(out, nanColumns, nanLanes);
            _mm512_mask_storeu_ps(dst + r * ld + c, live, out);
            countLanes(t.nan, nanColumns);
        }
    }
    flush(t, counts);
}

// NVFP4 block scales from each lane's block amax (finite), as nvfp4BlockScale: S_b =
// E4M3(amax * (S_enc * 1/6)), saturating, and the element multiplier
// min(1 / (S_b * (1 / S_enc)), fp32 max).
PLAB_AVX512 PLAB_INLINE void nvfp4ScaleLanes(const Nvfp4Scales& t, __m512 amax, __m512* block, __m512* element)
{
    static const Lanes e4m3 = lanesOf(ElementRule::of(MiniFormat::e4m3));
    Tally uncounted = emptyTally();
    *block = roundLanes<false>(e4m3, _mm512_mul_ps(amax, _mm512_set1_ps(t.perAmax)), 0xFFFF, uncounted);
    const __m512 decode = _mm512_mul_ps(*block, _mm512_set1_ps(t.decodeTensor));
    // 1 / 0 = inf becomes fp32's largest, as std::min does.
    *element = _mm512_min_ps(_mm512_div_ps(_mm512_set1_ps(1.0f), decode), _mm512_set1_ps(std::numeric_limits<float>::max()));
}

// Counts the block scale factors S_b / S_enc of `lanes` lanes (NaN where nonFinite).
PLAB_AVX512 void countNvfp4Lanes(GradientHistogram* blockScales, const Nvfp4Scales& t, __m512 block, __mmask16 nonFinite,
                                 int lanes)
{
    if (!blockScales) return;
    alignas(64) float decode[16];
    _mm512_store_ps(decode, _mm512_mul_ps(block, _mm512_set1_ps(t.decodeTensor)));
    for (int j = 0; j < lanes; ++j)
        countNvfp4Scale(blockScales, ((nonFinite >> j) & 1u) ? std::numeric_limits<float>::quiet_NaN() : decode[j]);
}

PLAB_AVX512 void nvfp4RowAvx512(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst,
                                std::int64_t cols, LaneCounts& counts, GradientHistogram* blockScales)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    const __m512 vTensor = _mm512_set1_ps(t.tensorScale);
    Tally tally = emptyTally();
    const std::int64_t blocks = (cols + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
    // Sixteen blocks (one vector each) at a time: their amax and scales in lanes, then their values.
    for (std::int64_t b0 = 0; b0 < blocks; b0 += 16) {
        const int group = static_cast<int>(std::min<std::int64_t>(16, blocks - b0));
        const bool whole = cols - b0 * kNvfp4BlockSize >= 16 * kNvfp4BlockSize;
        auto lanes = [&](std::int64_t left) { return whole ? static_cast<__mmask16>(0xFFFF) : tailMask(left); };
        __m512i largest[16];
        for (int j = 0; j < 16; ++j) {
            const std::int64_t c = (b0 + j) * kNvfp4BlockSize;
            largest[j] = _mm512_and_si512(_mm512_maskz_loadu_epi32(lanes(cols - c), src + c), absMask);
        }
        const __m512i amax = lanesMaxima(largest);
        const __mmask16 nonFinite = _mm512_cmpge_epu32_mask(amax, _mm512_set1_epi32(0x7F800000));
        __m512 vBlock, vElement;
        nvfp4ScaleLanes(t, _mm512_castsi512_ps(amax), &vBlock, &vElement);
        countNvfp4Lanes(blockScales, t, vBlock, nonFinite, group);
        alignas(64) float block[16], element[16];
        _mm512_store_ps(block, vBlock);
        _mm512_store_ps(element, vElement);
        for (int j = 0; j < group; ++j) {
            const std::int64_t c0 = (b0 + j) * kNvfp4BlockSize;
            const __mmask16 m = lanes(cols - c0);
            if ((nonFinite >> j) & 1u) {   // a NaN or an infinity
                _mm512_mask_storeu_ps(dst + c0, m, nanLanes);
                countLanes(tally.nan, m);
                continue;
            }
            const __m512 v = _mm512_maskz_loadu_ps(m, src + c0);
            if (block[j] == 0.0f) {   // lost: signed zeros; counted as the portable code counts in * S_enc
                const __mmask16 zero = _mm512_mask_cmp_ps_mask(m, _mm512_mul_ps(v, vTensor), _mm512_setzero_ps(), _CMP_EQ_OQ);
                counts.zerosIn += static_cast<unsigned>(std::popcount(static_cast<unsigned>(zero)));
                counts.underflow += static_cast<unsigned>(std::popcount(static_cast<unsigned>(m & ~zero)));
                _mm512_mask_storeu_ps(dst + c0, m, _mm512_castsi512_ps(_mm512_andnot_si512(absMask, _mm512_castps_si512(v))));
                continue;
            }
            const __m512 q = roundLanes<false>(L, _mm512_mul_ps(v, _mm512_set1_ps(element[j])), m, tally);
            _mm512_mask_storeu_ps(dst + c0, m, _mm512_div_ps(_mm512_mul_ps(q, _mm512_set1_ps(block[j])), vTensor));
        }
    }
    flush(tally, counts);
}

PLAB_AVX512 void nvfp4BandAvx512(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst,
                                 std::int64_t rows, std::int64_t cols, std::int64_t ld, LaneCounts& counts,
                                 GradientHistogram* blockScales)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    const __m512 vTensor = _mm512_set1_ps(t.tensorScale);
    Tally tally = emptyTally();
    for (std::int64_t c = 0; c < cols; c += 16) {
        const __mmask16 live = tailMask(cols - c);
        __m512i largest = _mm512_setzero_si512();
        for (std::int64_t r = 0; r < rows; ++r)
            largest = _mm512_max_epu32(largest, _mm512_and_si512(_mm512_maskz_loadu_epi32(live, src + r * ld + c), absMask));
        const __mmask16 nanColumns = live & _mm512_cmpge_epu32_mask(largest, _mm512_set1_epi32(0x7F800000));
        __m512 vBlock, vElement;
        nvfp4ScaleLanes(t, _mm512_castsi512_ps(largest), &vBlock, &vElement);
        countNvfp4Lanes(blockScales, t, vBlock, nanColumns, static_cast<int>(std::min<std::int64_t>(16, cols - c)));
        const __mmask16 lost =
            live & static_cast<__mmask16>(~nanColumns) & _mm512_cmp_ps_mask(vBlock, _mm512_setzero_ps(), _CMP_EQ_OQ);
        const __mmask16 quantised = live & static_cast<__mmask16>(~(nanColumns | lost));
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m512 in = _mm512_maskz_loadu_ps(live, src + r * ld + c);
            const __m512 q = roundLanes<false>(L, _mm512_mul_ps(in, vElement), quantised, tally);
            __m512 out = _mm512_div_ps(_mm512_mul_ps(q, vBlock), vTensor);
            if (lost) {
                const __mmask16 zero = _mm512_mask_cmp_ps_mask(lost, _mm512_mul_ps(in, vTensor), _mm512_setzero_ps(), _CMP_EQ_OQ);
                counts.zerosIn += static_cast<unsigned>(std::popcount(static_cast<unsigned>(zero)));
                counts.underflow += static_cast<unsigned>(std::popcount(static_cast<unsigned>(lost & ~zero)));
                out = _mm512_mask_mov_ps(out, lost, _mm512_castsi512_ps(_mm512_andnot_si512(absMask, _mm512_castps_si512(in))));
            }
            out = _mm512_mask_mov_ps(out, nanColumns, nanLanes);
            _mm512_mask_storeu_ps(dst + r * ld + c, live, out);
            countLanes(tally.nan, nanColumns);
        }
    }
    flush(tally, counts);
}

PLAB_AVX512 void encodeCodesAvx512(const CodeRule& r, const float* q, std::uint8_t* codes, std::size_t n)
{
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF), mantissaMask = _mm512_set1_epi32(0x7FFFFF);
    const __m512i rebias = _mm512_set1_epi32(r.bias - 127), headShift = _mm512_set1_epi32(r.mantissaBits);
    const __m512i tailShift = _mm512_set1_epi32(23 - r.mantissaBits);
    const __m512i leastNormal = _mm512_set1_epi32(r.minNormalLog2 + 127), infinity = _mm512_set1_epi32(0x7F800000);
    const __m512i nanCode = _mm512_set1_epi32(0x7F), signBit = _mm512_set1_epi32(0x80);
    const __m512 perSubnormal = _mm512_set1_ps(r.perSubnormal);
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
        const __m512i bits = _mm512_castps_si512(_mm512_maskz_loadu_ps(live, q + i));
        const __m512i a = _mm512_and_si512(bits, absMask);
        const __m512i field = _mm512_srli_epi32(a, 23);
        const __m512i normal = _mm512_or_si512(_mm512_sllv_epi32(_mm512_add_epi32(field, rebias), headShift),
                                               _mm512_srlv_epi32(_mm512_and_si512(a, mantissaMask), tailShift));
        const __m512i subnormal = _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_castsi512_ps(a), perSubnormal));
        __m512i code = _mm512_mask_blend_epi32(_mm512_cmpge_epi32_mask(field, leastNormal), subnormal, normal);
        code = _mm512_mask_blend_epi32(_mm512_cmpgt_epi32_mask(a, infinity), code, nanCode);
        code = _mm512_or_si512(code, _mm512_and_si512(_mm512_srli_epi32(bits, 24), signBit));
        _mm512_mask_cvtepi32_storeu_epi8(codes + i, live, code);
    }
}

PLAB_AVX512 void decodeCodesAvx512(const CodeRule& r, const std::uint8_t* codes, float* dst, std::size_t n,
                                   float scaleInv)
{
    const __m512 inv = _mm512_set1_ps(scaleInv), subnormal = _mm512_set1_ps(r.subnormal);
    const __m512i magnitudeMask = _mm512_set1_epi32(0x7F), signBit = _mm512_set1_epi32(0x80);
    const __m512i shift = _mm512_set1_epi32(23 - r.mantissaBits), rebias = _mm512_set1_epi32((127 - r.bias) << 23);
    const __m512i leastNormal = _mm512_set1_epi32(1 << r.mantissaBits);
    const __m512i firstSpecial = _mm512_set1_epi32(r.firstSpecial), infinityCode = _mm512_set1_epi32(r.infinity);
    const __m512i nan = _mm512_set1_epi32(0x7FC00000), infinity = _mm512_set1_epi32(0x7F800000);
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 live = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
        const __m512i code = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(live, codes + i));
        const __m512i magnitude = _mm512_and_si512(code, magnitudeMask);
        const __m512i normal = _mm512_add_epi32(_mm512_sllv_epi32(magnitude, shift), rebias);
        const __m512i small = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(magnitude), subnormal));
        __m512i bits = _mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(magnitude, leastNormal), normal, small);
        bits = _mm512_mask_blend_epi32(_mm512_cmpge_epi32_mask(magnitude, firstSpecial), bits, nan);
        bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(magnitude, infinityCode), bits, infinity);
        bits = _mm512_or_si512(bits, _mm512_slli_epi32(_mm512_and_si512(code, signBit), 24));
        _mm512_mask_storeu_ps(dst + i, live, _mm512_mul_ps(_mm512_castsi512_ps(bits), inv));
    }
}

#else

float quantizeScaledAvx512(const ElementRule&, const float*, float*, std::size_t, float, float, LaneCounts&) { return 0; }
float amaxAvx512(const float*, std::size_t) { return 0; }
void mxRowAvx512(const ElementRule&, const float*, float*, std::int64_t, LaneCounts&, int*) {}
void mxBandAvx512(const ElementRule&, const float*, float*, std::int64_t, std::int64_t, std::int64_t, int*,
                  LaneCounts&) {}
void nvfp4RowAvx512(const ElementRule&, const Nvfp4Scales&, const float*, float*, std::int64_t, LaneCounts&,
                    GradientHistogram*) {}
void nvfp4BandAvx512(const ElementRule&, const Nvfp4Scales&, const float*, float*, std::int64_t, std::int64_t,
                     std::int64_t, LaneCounts&, GradientHistogram*) {}

void encodeCodesAvx512(const CodeRule&, const float*, std::uint8_t*, std::size_t) {}
void decodeCodesAvx512(const CodeRule&, const std::uint8_t*, float*, std::size_t, float) {}

#endif

}  // namespace plab::detail
