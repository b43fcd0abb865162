// 2x2 max pooling of one plane (cpu_ops.h): the portable window rule, and the same rule in
// 16 AVX-512 or 8 AVX2 lanes, which give the portable code's bits and positions (the first
// maximum wins, the first NaN propagates, the winner's own bits are stored).
#include "backend/cpu/cpu_ops.h"

#define PLAB_SIMD_KERNELS
#include "numerics/simd_support.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace plab::cpu {

namespace {

// One window: the first maximum wins; the first NaN propagates (as PyTorch's max_pool2d).
// Without branches (the choice is a bit mask over the values' bits; GCC turns a float ?:
// into a jump here): ReLU's zeros and a quantised recipe's repeated values make the
// comparisons unpredictable. (A tree of the two rows' pairs gives the same winners but
// measured slower than this chain.)
inline void poolWindow(const float (&v)[4], float* value, std::uint8_t* position)
{
    std::uint32_t bits = std::bit_cast<std::uint32_t>(v[0]), at = 0;
    for (std::uint32_t k = 1; k < 4; ++k) {
        const float best = std::bit_cast<float>(bits);
        const std::uint32_t take = static_cast<std::uint32_t>((v[k] > best) | ((v[k] != v[k]) & (best == best)));
        const std::uint32_t mask = 0u - take;
        bits = (std::bit_cast<std::uint32_t>(v[k]) & mask) | (bits & ~mask);
        at = (k & mask) | (at & ~mask);
    }
    *value = std::bit_cast<float>(bits);
    *position = static_cast<std::uint8_t>(at);
}

// Outputs [x, Wo) of one row pair, window by window.
void poolRowPortable(const float* r0, const float* r1, std::int64_t x, std::int64_t Wo, float* dst,
                     std::uint8_t* pos)
{
    for (; x < Wo; ++x) {
        const float v[4] = {r0[2 * x], r0[2 * x + 1], r1[2 * x], r1[2 * x + 1]};
        poolWindow(v, dst + x, pos + x);
    }
}

#if defined(PLAB_HAVE_X86)
// The window rule on lanes: take v where v > best, or where v is NaN and best is not; a
// masked move keeps the taken value's bits (a zero's sign, a NaN's payload). A row's last
// windows take masked loads and stores: MNIST's planes are rows of 14 and 7 windows, fewer
// than one pass of lanes.
PLAB_AVX512 void poolRowAvx512(const float* r0, const float* r1, std::int64_t Wo, float* dst, std::uint8_t* pos)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (std::int64_t x = 0; x < Wo; x += 16) {
        const auto k = static_cast<std::uint32_t>(std::min<std::int64_t>(16, Wo - x));   // windows this pass
        const std::uint32_t inputs = k == 16 ? ~0u : (1u << (2 * k)) - 1u;              // their 2k columns
        const auto lo = static_cast<__mmask16>(inputs & 0xFFFFu), hi = static_cast<__mmask16>(inputs >> 16);
        const auto outputs = static_cast<__mmask16>((1u << k) - 1u);
        const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * x), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * x + 16);
        const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * x), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * x + 16);
        const __m512 v[4] = {_mm512_permutex2var_ps(a0, even, a1), _mm512_permutex2var_ps(a0, odd, a1),
                             _mm512_permutex2var_ps(b0, even, b1), _mm512_permutex2var_ps(b0, odd, b1)};
        __m512 best = v[0];
        __m512i at = _mm512_setzero_si512();
        for (int j = 1; j < 4; ++j) {
            const __mmask16 take = _mm512_cmp_ps_mask(v[j], best, _CMP_GT_OQ) |
                                   (_mm512_cmp_ps_mask(v[j], v[j], _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q));
            best = _mm512_mask_mov_ps(best, take, v[j]);
            at = _mm512_mask_mov_epi32(at, take, _mm512_set1_epi32(j));
        }
        _mm512_mask_storeu_ps(dst + x, outputs, best);
        _mm512_mask_cvtepi32_storeu_epi8(pos + x, outputs, at);
    }
}

// Even and odd elements of 16 consecutive floats (the first `count` loaded, the rest 0),
// in order: the shuffle takes them per 128-bit lane, the permute puts the lanes' halves
// back in order.
PLAB_AVX2 inline void splitEvenOdd(const float* p, std::int64_t count, __m256& evens, __m256& odds)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 lo, hi;
    if (count >= 16) {
        lo = _mm256_loadu_ps(p);
        hi = _mm256_loadu_ps(p + 8);
    } else {
        lo = _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane));
        hi = _mm256_maskload_ps(p + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count) - 8), lane));
    }
    evens = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
    odds = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}

PLAB_AVX2 void poolRowAvx2(const float* r0, const float* r1, std::int64_t Wo, float* dst, std::uint8_t* pos)
{
    for (std::int64_t x = 0; x < Wo; x += 8) {
        const std::int64_t k = std::min<std::int64_t>(8, Wo - x);   // windows this pass
        __m256 v[4];
        splitEvenOdd(r0 + 2 * x, 2 * k, v[0], v[1]);
        splitEvenOdd(r1 + 2 * x, 2 * k, v[2], v[3]);
        __m256 best = v[0];
        __m256i at = _mm256_setzero_si256();
        for (int j = 1; j < 4; ++j) {
            const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v[j], best, _CMP_GT_OQ),
                                             _mm256_and_ps(_mm256_cmp_ps(v[j], v[j], _CMP_UNORD_Q),
                                                           _mm256_cmp_ps(best, best, _CMP_ORD_Q)));
            best = _mm256_blendv_ps(best, v[j], take);
            at = _mm256_blendv_epi8(at, _mm256_set1_epi32(j), _mm256_castps_si256(take));
        }
        const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(at), _mm256_extracti128_si256(at, 1));
        const auto bytes = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_packus_epi16(words, words)));
        if (k == 8) {
            _mm256_storeu_ps(dst + x, best);
            std::memcpy(pos + x, &bytes, 8);
        } else {
            const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            _mm256_maskstore_ps(dst + x, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k)), lane), best);
            std::memcpy(pos + x, &bytes, static_cast<std::size_t>(k));
        }
    }
}
#endif

}  // namespace

void maxPool2x2Plane(const float* src, std::int64_t H, std::int64_t W, float* out, std::uint8_t* argmax)
{
    const std::int64_t Ho = H / 2, Wo = W / 2;
    const SimdLevel level = simdLevel();
    for (std::int64_t y = 0; y < Ho; ++y) {
        const float* r0 = src + 2 * y * W;
        const float* r1 = r0 + W;
        float* dst = out + y * Wo;
        std::uint8_t* pos = argmax + y * Wo;
#if defined(PLAB_HAVE_X86)
        if (level >= SimdLevel::avx512) {
            poolRowAvx512(r0, r1, Wo, dst, pos);
            continue;
        }
        if (level >= SimdLevel::avx2) {
            poolRowAvx2(r0, r1, Wo, dst, pos);
            continue;
        }
#else
        (void)level;
#endif
        poolRowPortable(r0, r1, 0, Wo, dst, pos);
    }
}

}  // namespace plab::cpu
