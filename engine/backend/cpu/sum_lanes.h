// The sums of a GEMM kept in a reduced format, one step of k across eight AVX2 lanes: the
// exact step (fmaRoundedTo() in lanes) and the fast step that takes it wherever that is
// provably the same rounding. Shared by the dense kernels (gemm_emulated.cpp) and the ones
// that skip zero products (gemm_sparse.cpp). Include after defining PLAB_SIMD_KERNELS.
#pragma once

#include "numerics/format.h"
#include "numerics/round_lanes.h"
#include "numerics/simd_support.h"

#ifdef PLAB_HAVE_X86
#include <immintrin.h>

#include <cstdint>

namespace plab::cpu::sum_lanes {

// The vector paths: fmaRoundedTo() in lanes, 8 output elements a vector at the avx2 level
// (2 rows times 32 columns of sums kept in registers through the whole sum over k), 16 at
// avx512 (4 rows times 32 columns), so that many chains of dependent steps overlap. A step is
// one fp32 FMA rounded to the format wherever that is provably the same rounding
// (lanesOffTheFastStep); the rare others are taken exactly by exactStepLanes. There,
// vectors whose products are exact in fp32 take fp32 steps; the others do, lane by lane,
// what fmaRoundedTo() does:
//   product = a * b in double (exact), sum = product + c, TwoSum's error of that addition;
//   an inexact sum with an even last bit moves one ulp towards the error (round to odd);
//   double -> float to nearest, then back one ulp towards zero if that went outward and
//   the last bit set if inexact (round to odd); then roundTo(f) of that float.

// Four lanes: round-to-odd float of a * b + c in double.
PLAB_AVX2 inline __m128 fmaToOddLanes(__m256d a, __m128 b, __m128 c)
{
    const __m256d product = _mm256_mul_pd(a, _mm256_cvtps_pd(b));   // exact
    const __m256d addend = _mm256_cvtps_pd(c);
    const __m256d sum = _mm256_add_pd(product, addend);
    const __m256d bVirtual = _mm256_sub_pd(sum, product);
    const __m256d error = _mm256_add_pd(_mm256_sub_pd(product, _mm256_sub_pd(sum, bVirtual)),
                                        _mm256_sub_pd(addend, bVirtual));
    // error != 0 (ordered: an infinite or NaN sum has a NaN error and is left alone) and
    // the sum's last bit even: one ulp towards the error's sign.
    const __m256i sumBits = _mm256_castpd_si256(sum);
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i evenLast = _mm256_cmpeq_epi64(_mm256_and_si256(sumBits, one), _mm256_setzero_si256());
    const __m256i fix = _mm256_and_si256(evenLast, _mm256_castpd_si256(_mm256_cmp_pd(error, _mm256_setzero_pd(), _CMP_NEQ_OQ)));
    // +1 when error and sum have one sign (away from zero), -1 when not.
    const __m256i signsDiffer = _mm256_srli_epi64(_mm256_xor_si256(sumBits, _mm256_castpd_si256(error)), 63);
    const __m256i step = _mm256_sub_epi64(one, _mm256_add_epi64(signsDiffer, signsDiffer));
    const __m256d odd = _mm256_castsi256_pd(_mm256_add_epi64(sumBits, _mm256_and_si256(step, fix)));

    // Double -> float, round to odd.
    const __m128 nearest = _mm256_cvtpd_ps(odd);
    const __m256d back = _mm256_cvtps_pd(nearest);
    const __m256d absMask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
    const __m256d inexact = _mm256_cmp_pd(back, odd, _CMP_NEQ_OQ);
    const __m256d outward = _mm256_cmp_pd(_mm256_and_pd(back, absMask), _mm256_and_pd(odd, absMask), _CMP_GT_OQ);
    // 64-bit masks to 32-bit lanes: the low half of each (all ones or all zeros).
    const __m256i pickLow = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const __m128i inexact32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(inexact), pickLow));
    const __m128i outward32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(outward), pickLow));
    __m128i bits = _mm_add_epi32(_mm_castps_si128(nearest), outward32);   // all ones = -1: one ulp inward
    bits = _mm_or_si128(bits, _mm_and_si128(inexact32, _mm_set1_epi32(1)));
    return _mm_castsi128_ps(bits);
}

// Eight lanes: roundTo(F, a * b + c) with one rounding, the double lanes above taking four
// at a time. Out of line: the callers keep their sums in registers around it.
template <Format F>
[[gnu::noinline, gnu::cold]] PLAB_AVX2 __m256 exactStepDouble(__m256 a, __m256 b, __m256 c)
{
    const __m256d aWide = _mm256_cvtps_pd(_mm256_castps256_ps128(a));   // a is one value in every lane
    const __m128 lo = fmaToOddLanes(aWide, _mm256_castps256_ps128(b), _mm256_castps256_ps128(c));
    const __m128 hi = fmaToOddLanes(aWide, _mm256_extractf128_ps(b, 1), _mm256_extractf128_ps(c, 1));
    const __m256i u = _mm256_castps_si256(_mm256_set_m128(hi, lo));
    return _mm256_castsi256_ps(detail::roundLanesAvx2<F>(u, _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF))));
}

// Eight lanes: roundTo(F, a * b + c) with one rounding, a the same value in every lane.
// Where every lane's product is exact in fp32 (always for fp16 operands, whose products have
// 22 bits and lie above 2^-48; for bf16 and tf32 unless it leaves fp32's range), the sum is
// made round-to-odd in fp32 itself (TwoSum in fp32 is exact, subnormals included; 24 bits
// >= the format's 11 + 2, so the second rounding is correct): half the work of the double
// lanes, which the other vectors take.
template <Format F>
PLAB_AVX2 inline __m256 exactStepLanes(__m256 a, __m256 b, __m256 c)
{
    const __m256 product = _mm256_mul_ps(a, b);
    // Exact when the FMA's error is 0 and, for a tiny product, one operand is 0 (below
    // 2^-100 an error could round away; above it any error is at least 2^-147).
    const __m256 error = _mm256_fmsub_ps(a, b, product);
    const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 zero = _mm256_setzero_ps();
    const __m256 tiny = _mm256_cmp_ps(_mm256_and_ps(product, absMask), _mm256_set1_ps(0x1p-100f), _CMP_LT_OQ);
    const __m256 zeroOperand = _mm256_or_ps(_mm256_cmp_ps(a, zero, _CMP_EQ_OQ), _mm256_cmp_ps(b, zero, _CMP_EQ_OQ));
    const __m256 exact = _mm256_and_ps(_mm256_cmp_ps(error, zero, _CMP_EQ_OQ), _mm256_or_ps(_mm256_andnot_ps(tiny, _mm256_castsi256_ps(_mm256_set1_epi32(-1))), zeroOperand));
    if (_mm256_movemask_ps(exact) != 0xFF) [[unlikely]] return exactStepDouble<F>(a, b, c);
    const __m256 sum = _mm256_add_ps(product, c);
    const __m256 bVirtual = _mm256_sub_ps(sum, product);
    const __m256 sumError = _mm256_add_ps(_mm256_sub_ps(product, _mm256_sub_ps(sum, bVirtual)), _mm256_sub_ps(c, bVirtual));
    const __m256i sumBits = _mm256_castps_si256(sum);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i evenLast = _mm256_cmpeq_epi32(_mm256_and_si256(sumBits, one), _mm256_setzero_si256());
    const __m256i fix = _mm256_and_si256(evenLast, _mm256_castps_si256(_mm256_cmp_ps(sumError, zero, _CMP_NEQ_OQ)));
    const __m256i signsDiffer = _mm256_srli_epi32(_mm256_xor_si256(sumBits, _mm256_castps_si256(sumError)), 31);
    const __m256i step = _mm256_sub_epi32(one, _mm256_add_epi32(signsDiffer, signsDiffer));
    const __m256i u = _mm256_add_epi32(sumBits, _mm256_and_si256(step, fix));
    return _mm256_castsi256_ps(detail::roundLanesAvx2<F>(u, _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF))));
}

// The bits of the fast step's tests (below) for format F: the fp32 bits rounding drops, a
// tie among them, half an ulp of F. For fp16 (which keeps tf32's 10 fraction bits in its
// normal range): magnitude + fp16Shift, compared as signed, puts [2^-14, 65520) at the
// bottom, [INT_MIN, fp16Top]; overflow, inf, NaN, zero and the subnormal range lie above.
template <Format F>
struct FastStepBits {
    static constexpr std::uint32_t dropped = F == Format::bf16 ? 0xFFFFu : 0x1FFFu;
    static constexpr std::uint32_t tie = (dropped + 1) / 2;
    static constexpr std::uint32_t half = tie;
    static constexpr std::uint32_t kept = ~dropped;
    static constexpr std::uint32_t fp16Shift = 0x47800000u;   // 0x80000000 - 2^-14's pattern
    static constexpr std::uint32_t fp16Top = 0x8EFFEFFFu;     // 65520's pattern, shifted, less one
};

// The lanes where rounding s = fl32(a * b + c) to F may differ from rounding the exact
// a * b + c: s exactly halfway between two neighbours in F (the exact sum may lie on either
// side of that tie), and NaN. Anywhere else both round alike: every tie of F is an fp32
// value, and s is the fp32 value nearest the exact sum, so no tie lies between them unless
// s is that tie. For fp16 also every s outside its normal range (a nonzero s below 2^-14,
// whose ties lie at other bits, and from 65520 up, where it overflows), so that
// roundOffTies can round the others as tf32.
template <Format F>
PLAB_AVX2 inline __m256i lanesOffTheFastStep(__m256 s)
{
    using Bits = FastStepBits<F>;
    const __m256i u = _mm256_castps_si256(s);
    const __m256i tie = _mm256_cmpeq_epi32(_mm256_and_si256(u, detail::set1(Bits::dropped)), detail::set1(Bits::tie));
    if constexpr (F == Format::fp16) {
        const __m256i magnitude = _mm256_and_si256(u, detail::set1(0x7FFFFFFFu));
        const __m256i w = _mm256_add_epi32(magnitude, detail::set1(Bits::fp16Shift));
        const __m256i outside = _mm256_andnot_si256(_mm256_cmpeq_epi32(magnitude, _mm256_setzero_si256()),
                                                    _mm256_cmpgt_epi32(w, detail::set1(Bits::fp16Top)));
        return _mm256_or_si256(tie, outside);
    } else {
        return _mm256_or_si256(tie, _mm256_castps_si256(_mm256_cmp_ps(s, s, _CMP_UNORD_Q)));
    }
}

// roundTo(F, s) for the lanes lanesOffTheFastStep leaves: neither ties nor NaN (and for
// fp16 in its normal range), so ties-to-even and ties-away are both the nearest value:
// half an ulp added to the pattern, the dropped bits cleared.
template <Format F>
PLAB_AVX2 inline __m256 roundOffTies(__m256 s)
{
    using Bits = FastStepBits<F>;
    const __m256i u = _mm256_castps_si256(s);
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_add_epi32(u, detail::set1(Bits::half)), detail::set1(Bits::kept)));
}

// Out of line, so that the 16 registers stay with the sums in the loop around it.
template <Format F>
[[gnu::noinline, gnu::cold]] PLAB_AVX2 __m256 exactStepOutOfLine(__m256 a, __m256 b, __m256 c)
{
    return exactStepLanes<F>(a, b, c);
}

// One step of k in eight lanes: the fast step, or where a lane may be off the exact one.
template <Format F>
PLAB_AVX2 inline __m256 stepLanes(__m256 a, __m256 b, __m256 c)
{
    const __m256 s = _mm256_fmadd_ps(a, b, c);
    const __m256i off = lanesOffTheFastStep<F>(s);
    if (!_mm256_testz_si256(off, off)) [[unlikely]] return exactStepOutOfLine<F>(a, b, c);
    return roundOffTies<F>(s);
}

}  // namespace plab::cpu::sum_lanes
#endif
