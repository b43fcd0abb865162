// AVX-512 and AVX2 (+F16C) kernels of narrowArray / widenArray, bit-identical to the
// portable code: fp16 through the hardware conversions (vcvtps2ph with round-to-nearest-
// even, which quiets a NaN keeping its top payload bits, as fp32ToFp16Bits does;
// vcvtph2ps, exact but for quieting a signaling NaN), bf16 through integer lanes (round to nearest even on the low 16
// bits; a NaN truncated with its quiet bit set). Tails run the portable code.
#include "numerics/storage_convert.h"

#define PLAB_SIMD_KERNELS
#include "numerics/simd_support.h"

namespace plab::detail {

#ifdef PLAB_HAVE_X86

namespace {

void narrowTail(Format f, const float* src, std::uint16_t* dst, std::size_t i, std::size_t n)
{
    for (; i < n; ++i) dst[i] = narrowBits(f, src[i]);
}

void widenTail(Format f, const std::uint16_t* src, float* dst, std::size_t i, std::size_t n)
{
    for (; i < n; ++i) dst[i] = widenBits(f, src[i]);
}

PLAB_AVX512 __m512i bf16Lanes512(__m512 x)
{
    const __m512i u = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb)), 16);
    const __m512i quietNan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x0040));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_blend_epi32(nan, rounded, quietNan);
}

PLAB_AVX2 __m256i bf16Lanes256(__m256 x)
{
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)), 16);
    const __m256i quietNan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x0040));
    // |u| > inf bits, as signed compares: both sides are below 2^31.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                           _mm256_set1_epi32(0x7F800000));
    return _mm256_blendv_epi8(rounded, quietNan, nan);
}

}  // namespace

PLAB_AVX512 void narrowArrayAvx512(Format f, const float* src, std::uint16_t* dst, std::size_t n)
{
    std::size_t i = 0;
    if (f == Format::fp16) {
        for (; i + 16 <= n; i += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                                _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
        for (; i + 16 <= n; i += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(bf16Lanes512(_mm512_loadu_ps(src + i))));
    }
    narrowTail(f, src, dst, i, n);
}

PLAB_AVX512 void widenArrayAvx512(Format f, const std::uint16_t* src, float* dst, std::size_t n)
{
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
        const __m512 x = f == Format::fp16 ? _mm512_cvtph_ps(h)
                                           : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        _mm512_storeu_ps(dst + i, x);
    }
    widenTail(f, src, dst, i, n);
}

PLAB_AVX2 void narrowArrayAvx2(Format f, const float* src, std::uint16_t* dst, std::size_t n)
{
    std::size_t i = 0;
    if (f == Format::fp16) {
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
        for (; i + 16 <= n; i += 16) {
            // packus of two vectors of values in [0, 65535] interleaves 128-bit halves:
            // the permute puts them back in order.
            const __m256i lo = bf16Lanes256(_mm256_loadu_ps(src + i));
            const __m256i hi = bf16Lanes256(_mm256_loadu_ps(src + i + 8));
            const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
        }
    }
    narrowTail(f, src, dst, i, n);
}

PLAB_AVX2 void widenArrayAvx2(Format f, const std::uint16_t* src, float* dst, std::size_t n)
{
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        const __m256 x = f == Format::fp16 ? _mm256_cvtph_ps(h)
                                           : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        _mm256_storeu_ps(dst + i, x);
    }
    widenTail(f, src, dst, i, n);
}

#else   // not x86: simdLevel() is always scalar, these are never called

void narrowArrayAvx512(Format, const float*, std::uint16_t*, std::size_t) {}
void widenArrayAvx512(Format, const std::uint16_t*, float*, std::size_t) {}
void narrowArrayAvx2(Format, const float*, std::uint16_t*, std::size_t) {}
void widenArrayAvx2(Format, const std::uint16_t*, float*, std::size_t) {}

#endif

}  // namespace plab::detail
