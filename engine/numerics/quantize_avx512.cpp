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

// x (scaled) rounded, saturating, NaN kept, with its statistics counted over `live` lanes.
PLAB_AVX512 inline __m512 roundLanes(const Lanes& L, __m512 x, __mmask16 live, LaneCounts& c)
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
    const __m512i infBits = _mm512_set1_epi32(0x7F800000);
    const __mmask16 nan = _mm512_mask_cmpgt_epu32_mask(live, absBits, infBits);
    const __mmask16 inf = _mm512_mask_cmpeq_epi32_mask(live, absBits, infBits);
    const __mmask16 zero = _mm512_mask_cmpeq_epi32_mask(live, absBits, _mm512_setzero_si512());
    const __mmask16 finite = live & static_cast<__mmask16>(~(nan | inf));
    const __mmask16 saturated = _mm512_mask_cmp_ps_mask(finite, unsaturated, L.maxFinite, _CMP_GT_OQ);
    // min_ps returns its second operand when one is NaN: NaN lanes are put back below.
    __m512 r = _mm512_min_ps(unsaturated, L.maxFinite);
    r = _mm512_mask_mov_ps(r, nan, a);
    const __mmask16 rZero = _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_EQ_OQ);
    c.zerosIn += static_cast<unsigned>(std::popcount(static_cast<unsigned>(zero)));
    c.nan += static_cast<unsigned>(std::popcount(static_cast<unsigned>(nan)));
    c.infIn += static_cast<unsigned>(std::popcount(static_cast<unsigned>(inf)));
    c.overflow += static_cast<unsigned>(std::popcount(static_cast<unsigned>(saturated)));
    c.underflow += static_cast<unsigned>(std::popcount(static_cast<unsigned>(finite & ~zero & rZero)));
    const __mmask16 sub = _mm512_mask_cmp_ps_mask(live & static_cast<__mmask16>(~rZero), r, L.minNormal, _CMP_LT_OQ);
    c.subnormal += static_cast<unsigned>(std::popcount(static_cast<unsigned>(sub)));
    const __m512i sign = _mm512_andnot_si512(absMask, bits);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
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
    __m512 amax = _mm512_setzero_ps();
    __mmask16 sawNaN = 0;
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 live = tailMask(static_cast<std::int64_t>(n - i));
        const __m512 in = _mm512_maskz_loadu_ps(live, src + i);
        const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(in), absMask));
        sawNaN |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
        amax = _mm512_max_ps(a, amax);   // a NaN lane keeps amax (the second operand)
        const __m512 q = roundLanes(L, _mm512_mul_ps(in, vScale), live, counts);
        _mm512_mask_storeu_ps(dst + i, live, _mm512_mul_ps(q, vInv));
    }
    if (sawNaN) return std::numeric_limits<float>::quiet_NaN();
    return _mm512_reduce_max_ps(amax);
}

PLAB_AVX512 void mxRowAvx512(const ElementRule& rule, const float* src, float* dst, std::int64_t cols,
                             LaneCounts& counts, int* blockExponents)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    for (std::int64_t c0 = 0, b = 0; c0 < cols; c0 += 32, ++b) {
        const __mmask16 m0 = tailMask(cols - c0), m1 = tailMask(cols - c0 - 16);
        const __m512 v0 = _mm512_maskz_loadu_ps(m0, src + c0);
        const __m512 v1 = _mm512_maskz_loadu_ps(m1, src + c0 + 16);
        const __m512 a0 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v0), absMask));
        const __m512 a1 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v1), absMask));
        const bool nan = (_mm512_cmp_ps_mask(a0, a0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(a1, a1, _CMP_UNORD_Q)) != 0;
        const float amax = nan ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
        const int e = mxBlockExponent(rule, amax);
        blockExponents[b] = e;
        if (e == kNanExponent) {
            _mm512_mask_storeu_ps(dst + c0, m0, nanLanes);
            _mm512_mask_storeu_ps(dst + c0 + 16, m1, nanLanes);
            counts.nan += static_cast<unsigned>(std::popcount(static_cast<unsigned>(m0)) +
                                                std::popcount(static_cast<unsigned>(m1)));
            continue;
        }
        const __m512 down = _mm512_set1_ps(powerOfTwo(-e)), up = _mm512_set1_ps(powerOfTwo(e));
        _mm512_mask_storeu_ps(dst + c0, m0, _mm512_mul_ps(roundLanes(L, _mm512_mul_ps(v0, down), m0, counts), up));
        if (m1)
            _mm512_mask_storeu_ps(dst + c0 + 16, m1,
                                  _mm512_mul_ps(roundLanes(L, _mm512_mul_ps(v1, down), m1, counts), up));
    }
}

PLAB_AVX512 void columnAmaxAvx512(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                  float* amax)
{
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    for (std::int64_t c = 0; c < cols; c += 16) {
        const __mmask16 live = tailMask(cols - c);
        __m512 m = _mm512_setzero_ps();
        __mmask16 nan = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m512 a = _mm512_castsi512_ps(
                _mm512_and_si512(_mm512_castps_si512(_mm512_maskz_loadu_ps(live, src + r * ld + c)), absMask));
            nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
            m = _mm512_max_ps(a, m);
        }
        _mm512_mask_storeu_ps(amax + c, live, _mm512_mask_mov_ps(m, nan, nanLanes));
    }
}

PLAB_AVX512 void mxBandAvx512(const ElementRule& rule, const float* src, float* dst, std::int64_t rows,
                              std::int64_t cols, std::int64_t ld, const int* exponent, LaneCounts& counts)
{
    const Lanes L = lanesOf(rule);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    for (std::int64_t c = 0; c < cols; c += 16) {
        const __mmask16 live = tailMask(cols - c);
        alignas(64) float down[16] = {}, up[16] = {};
        __mmask16 nanColumns = 0;
        for (int j = 0; j < 16 && c + j < cols; ++j) {
            const int e = exponent[c + j];
            if (e == kNanExponent) {
                nanColumns |= static_cast<__mmask16>(1u << j);
                continue;
            }
            down[j] = powerOfTwo(-e);
            up[j] = powerOfTwo(e);
        }
        const __m512 vDown = _mm512_load_ps(down), vUp = _mm512_load_ps(up);
        const __mmask16 quantised = live & static_cast<__mmask16>(~nanColumns);
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m512 in = _mm512_maskz_loadu_ps(live, src + r * ld + c);
            __m512 out = _mm512_mul_ps(roundLanes(L, _mm512_mul_ps(in, vDown), quantised, counts), vUp);
            out = _mm512_mask_mov_ps(out, nanColumns, nanLanes);
            _mm512_mask_storeu_ps(dst + r * ld + c, live, out);
            counts.nan += static_cast<unsigned>(std::popcount(static_cast<unsigned>(live & nanColumns)));
        }
    }
}

PLAB_AVX512 void nvfp4RowAvx512(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst,
                                std::int64_t cols, LaneCounts& counts, GradientHistogram* blockScales)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    const __m512 vTensor = _mm512_set1_ps(t.tensorScale);
    const __m512 fpMax = _mm512_set1_ps(std::numeric_limits<float>::max());
    for (std::int64_t c0 = 0; c0 < cols; c0 += 16) {
        const __mmask16 m = tailMask(cols - c0);
        const __m512 v = _mm512_maskz_loadu_ps(m, src + c0);
        const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), absMask));
        const auto live = static_cast<unsigned>(m);
        if (_mm512_cmp_ps_mask(a, fpMax, _CMP_NLE_UQ) != 0) {   // a NaN or an infinity
            countNvfp4Scale(blockScales, std::numeric_limits<float>::quiet_NaN());
            _mm512_mask_storeu_ps(dst + c0, m, nanLanes);
            counts.nan += static_cast<unsigned>(std::popcount(live));
            continue;
        }
        const Nvfp4BlockScale s = nvfp4BlockScale(t, _mm512_reduce_max_ps(a));
        countNvfp4Scale(blockScales, s.block * t.decodeTensor);
        if (s.block == 0.0f) {   // lost: signed zeros; counted as the portable code counts in * S_enc
            const __mmask16 zero = _mm512_mask_cmp_ps_mask(m, _mm512_mul_ps(v, vTensor), _mm512_setzero_ps(), _CMP_EQ_OQ);
            counts.zerosIn += static_cast<unsigned>(std::popcount(static_cast<unsigned>(zero)));
            counts.underflow += static_cast<unsigned>(std::popcount(live & ~static_cast<unsigned>(zero)));
            _mm512_mask_storeu_ps(dst + c0, m, _mm512_castsi512_ps(_mm512_andnot_si512(absMask, _mm512_castps_si512(v))));
            continue;
        }
        const __m512 q = roundLanes(L, _mm512_mul_ps(v, _mm512_set1_ps(s.element)), m, counts);
        _mm512_mask_storeu_ps(dst + c0, m, _mm512_div_ps(_mm512_mul_ps(q, _mm512_set1_ps(s.block)), vTensor));
    }
}

PLAB_AVX512 void nvfp4BandAvx512(const ElementRule& rule, const Nvfp4Scales& t, const float* src, float* dst,
                                 std::int64_t rows, std::int64_t cols, std::int64_t ld, const float* blockScale,
                                 const float* elementScale, const bool* nanColumn, LaneCounts& counts)
{
    const Lanes L = lanesOf(rule);
    const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512 nanLanes = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
    const __m512 vTensor = _mm512_set1_ps(t.tensorScale);
    for (std::int64_t c = 0; c < cols; c += 16) {
        const __mmask16 live = tailMask(cols - c);
        __mmask16 nanColumns = 0, zeroColumns = 0;
        for (int j = 0; j < 16 && c + j < cols; ++j) {
            if (nanColumn[c + j]) nanColumns |= static_cast<__mmask16>(1u << j);
            else if (blockScale[c + j] == 0.0f) zeroColumns |= static_cast<__mmask16>(1u << j);
        }
        const __m512 vElement = _mm512_maskz_loadu_ps(live, elementScale + c);
        const __m512 vBlock = _mm512_maskz_loadu_ps(live, blockScale + c);
        const __mmask16 quantised = live & static_cast<__mmask16>(~(nanColumns | zeroColumns));
        const __mmask16 lost = live & zeroColumns;
        for (std::int64_t r = 0; r < rows; ++r) {
            const __m512 in = _mm512_maskz_loadu_ps(live, src + r * ld + c);
            const __m512 q = roundLanes(L, _mm512_mul_ps(in, vElement), quantised, counts);
            __m512 out = _mm512_div_ps(_mm512_mul_ps(q, vBlock), vTensor);
            if (lost) {
                const __mmask16 zero = _mm512_mask_cmp_ps_mask(lost, _mm512_mul_ps(in, vTensor), _mm512_setzero_ps(), _CMP_EQ_OQ);
                counts.zerosIn += static_cast<unsigned>(std::popcount(static_cast<unsigned>(zero)));
                counts.underflow += static_cast<unsigned>(std::popcount(static_cast<unsigned>(lost & ~zero)));
                out = _mm512_mask_mov_ps(out, lost, _mm512_castsi512_ps(_mm512_andnot_si512(absMask, _mm512_castps_si512(in))));
            }
            out = _mm512_mask_mov_ps(out, nanColumns, nanLanes);
            _mm512_mask_storeu_ps(dst + r * ld + c, live, out);
            counts.nan += static_cast<unsigned>(std::popcount(static_cast<unsigned>(live & nanColumns)));
        }
    }
}

#else

float quantizeScaledAvx512(const ElementRule&, const float*, float*, std::size_t, float, float, LaneCounts&) { return 0; }
void mxRowAvx512(const ElementRule&, const float*, float*, std::int64_t, LaneCounts&, int*) {}
void mxBandAvx512(const ElementRule&, const float*, float*, std::int64_t, std::int64_t, std::int64_t, const int*,
                  LaneCounts&) {}
void columnAmaxAvx512(const float*, std::int64_t, std::int64_t, std::int64_t, float*) {}
void nvfp4RowAvx512(const ElementRule&, const Nvfp4Scales&, const float*, float*, std::int64_t, LaneCounts&,
                    GradientHistogram*) {}
void nvfp4BandAvx512(const ElementRule&, const Nvfp4Scales&, const float*, float*, std::int64_t, std::int64_t,
                     std::int64_t, const float*, const float*, const bool*, LaneCounts&) {}

#endif

}  // namespace plab::detail
