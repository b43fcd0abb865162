// Internal to the CPU kernels: the vector kernels' lane helpers (bulk rounding, the quantisers,
// reduced-format accumulation in backend/cpu/gemm_emulated.cpp), among them rounding fp32
// lanes to a format bit for bit as roundTo() (numerics/format.h), in 8 and in 16 lanes. Include after defining PLAB_SIMD_KERNELS and
// including numerics/simd_support.h.
#pragma once

#include "numerics/format.h"
#include "numerics/simd_support.h"

#include <cstdint>

#ifdef PLAB_HAVE_X86

namespace plab::detail {

PLAB_AVX2 inline __m256i set1(std::uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }

// The sum of the 8 unsigned 32-bit lanes of a counter.
PLAB_AVX2 inline std::uint64_t laneSum(__m256i v)
{
    alignas(32) std::uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
    std::uint64_t s = 0;
    for (std::uint32_t x : lanes) s += x;
    return s;
}

// u: 8 fp32 patterns; absBits: u & 0x7FFFFFFF. Returns roundTo(F, u) lane by lane.
//   fp16: vcvtps2ph with round-to-nearest-even, then vcvtph2ps (F16C, exact IEEE; fp32
//         subnormal inputs round to +-0 either way).
//   bf16: integer round-to-nearest-even on the bit pattern, NaN lanes truncated with the
//         quiet bit set.
//   tf32: integer round-half-away on the bit pattern, NaN lanes as for bf16.
template <Format F>
PLAB_AVX2 inline __m256i roundLanesAvx2(__m256i u, __m256i absBits)
{
    if constexpr (F == Format::fp16) {
        const __m128i half = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm256_castps_si256(_mm256_cvtph_ps(half));
    } else if constexpr (F == Format::bf16 || F == Format::tf32) {
        constexpr bool bf16 = (F == Format::bf16);
        const __m256i keepMask = set1(bf16 ? 0xFFFF0000u : 0xFFFFE000u);
        __m256i bias;
        if constexpr (bf16)  // 0x7FFF + lowest kept bit: ties go to even
            bias = _mm256_add_epi32(set1(0x7FFF), _mm256_and_si256(_mm256_srli_epi32(u, 16), set1(1)));
        else  // half an ulp on the magnitude: ties go away from zero
            bias = set1(0x1000);
        const __m256i rounded = _mm256_and_si256(_mm256_add_epi32(u, bias), keepMask);
        // absBits <= 0x7FFFFFFF, so the signed compare is the unsigned one.
        const __m256i isNan = _mm256_cmpgt_epi32(absBits, set1(0x7F800000u));
        const __m256i nanOut = _mm256_or_si256(_mm256_and_si256(u, keepMask), set1(0x00400000u));
        return _mm256_blendv_epi8(rounded, nanOut, isNan);
    } else {
        (void)absBits;
        return u;  // fp32: values unchanged, only counted
    }
}

// The same in 16 lanes (AVX-512F).
template <Format F>
PLAB_AVX512 inline __m512i roundLanesAvx512(__m512i u, __m512i absBits)
{
    if constexpr (F == Format::fp16) {
        const __m256i half = _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm512_castps_si512(_mm512_cvtph_ps(half));
    } else if constexpr (F == Format::bf16 || F == Format::tf32) {
        constexpr bool bf16 = (F == Format::bf16);
        const __m512i keepMask = _mm512_set1_epi32(bf16 ? 0xFFFF0000u : 0xFFFFE000u);
        __m512i bias;
        if constexpr (bf16)  // 0x7FFF + lowest kept bit: ties go to even
            bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
        else  // half an ulp on the magnitude: ties go away from zero
            bias = _mm512_set1_epi32(0x1000);
        const __m512i rounded = _mm512_and_si512(_mm512_add_epi32(u, bias), keepMask);
        const __mmask16 isNan = _mm512_cmpgt_epi32_mask(absBits, _mm512_set1_epi32(0x7F800000));
        const __m512i nanOut = _mm512_or_si512(_mm512_and_si512(u, keepMask), _mm512_set1_epi32(0x00400000));
        return _mm512_mask_mov_epi32(rounded, isNan, nanOut);
    } else {
        (void)absBits;
        return u;  // fp32: values unchanged, only counted
    }
}

}  // namespace plab::detail

#endif
