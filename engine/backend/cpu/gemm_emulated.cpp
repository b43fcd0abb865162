// Reduced-format accumulation for GEMM: an exact scalar emulation of "round after every
// FMA" for any format, and the AVX-512 FP16 kernel that does the same in hardware for fp16.
#include "backend/cpu/gemm_emulated.h"

// GCC 12's AVX-512 intrinsic headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_* placeholders (a false positive fixed in later GCC releases).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cpuid.h>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace plab::cpu {

float roundToOddFloat(double x)
{
    float f = static_cast<float>(x);
    if (!std::isfinite(x) || static_cast<double>(f) == x) return f;
    // Truncate toward zero (an overflow to inf comes back to FLT_MAX), then make it odd.
    if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
    return floatFromBits(bitsOf(f) | 1u);
}

float fmaRoundedTo(Format f, float a, float b, float c)
{
    const double product = static_cast<double>(a) * static_cast<double>(b);   // exact
    double sum = product + static_cast<double>(c);
    if (std::isfinite(sum)) {
        // TwoSum: the exact sum is sum + error. Turn the nearest rounding into round-to-odd.
        const double bVirtual = sum - product;
        const double error = (product - (sum - bVirtual)) + (static_cast<double>(c) - bVirtual);
        if (error != 0.0) {
            std::uint64_t bits;
            std::memcpy(&bits, &sum, sizeof bits);
            if ((bits & 1u) == 0)
                sum = std::nextafter(sum, error > 0 ? std::numeric_limits<double>::infinity()
                                                    : -std::numeric_limits<double>::infinity());
        }
    }
    return roundTo(f, roundToOddFloat(sum));
}

bool cpuHasAvx512Fp16()
{
#if !PLAB_HAVE_AVX512FP16
    return false;   // this build has no kernel for it
#endif
    static const bool has = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
        const bool avx512f = ebx & (1u << 16), avx512bw = ebx & (1u << 30), avx512vl = ebx & (1u << 31);
        const bool fp16 = edx & (1u << 23);
        // The OS must save the zmm state (XCR0 bits 1, 2, 5, 6, 7).
        unsigned xcr0Low = 0, xcr0High = 0;
        __asm__("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
        const bool osZmm = (xcr0Low & 0xe6u) == 0xe6u;
        return avx512f && avx512bw && avx512vl && fp16 && osZmm;
    }();
    return has;
}

void gemmAccumulateScalar(Format f, std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N,
                          std::int64_t K, const float* A, std::int64_t lda, const float* B,
                          std::int64_t ldb, float beta, float* C, std::int64_t ldc)
{
    for (std::int64_t i = rowBegin; i < rowEnd; ++i) {
        float* c = C + i * ldc;   // (N)
        for (std::int64_t j = 0; j < N; ++j) c[j] = beta == 0.0f ? 0.0f : roundTo(f, beta * c[j]);
        for (std::int64_t k = 0; k < K; ++k) {
            const float a = A[i * lda + k];
            const float* b = B + k * ldb;   // row k of B, (N)
            for (std::int64_t j = 0; j < N; ++j) c[j] = fmaRoundedTo(f, a, b[j], c[j]);
        }
    }
}

void packFp16(const float* src, std::uint16_t* dst, std::int64_t n)
{
    for (std::int64_t i = 0; i < n; ++i) dst[i] = fp32ToFp16Bits(src[i]);
}

// The AVX-512 FP16 kernel needs a compiler with its intrinsics (g++ 12, clang 15); other
// compilers (clang 14, used for the fuzzers) build the exact scalar path only.
#if PLAB_HAVE_AVX512FP16
namespace {

#define PLAB_FP16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16")))

// 32 fp32 values of C (masked) times beta, rounded to fp16 once.
PLAB_FP16_TARGET inline __m512h loadInitial(const float* c, __mmask32 mask, float beta)
{
    if (beta == 0.0f) return _mm512_setzero_ph();
    const __m512 scale = _mm512_set1_ps(beta);
    const __m512 lo = _mm512_mul_ps(_mm512_maskz_loadu_ps(static_cast<__mmask16>(mask), c), scale);
    const __m512 hi = _mm512_mul_ps(_mm512_maskz_loadu_ps(static_cast<__mmask16>(mask >> 16), c + 16), scale);
    const __m256i lo16 = _mm512_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i hi16 = _mm512_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_castsi512_ph(_mm512_inserti64x4(_mm512_castsi256_si512(lo16), hi16, 1));
}

PLAB_FP16_TARGET inline void storeResult(float* c, __mmask32 mask, __m512h acc)
{
    const __m512i bits = _mm512_castph_si512(acc);
    _mm512_mask_storeu_ps(c, static_cast<__mmask16>(mask), _mm512_cvtph_ps(_mm512_castsi512_si256(bits)));
    _mm512_mask_storeu_ps(c + 16, static_cast<__mmask16>(mask >> 16),
                          _mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1)));
}

inline __mmask32 laneMask(std::int64_t remaining)
{
    if (remaining >= 32) return 0xffffffffu;
    if (remaining <= 0) return 0;
    return static_cast<__mmask32>((1u << remaining) - 1u);
}

// R rows of C times 64 columns (two vectors of 32 fp16 lanes): 2R accumulators, k in order.
template <int R>
PLAB_FP16_TARGET void kernelRows(std::int64_t i0, std::int64_t N, std::int64_t K,
                                 const std::uint16_t* A16, const std::uint16_t* B16, float beta,
                                 float* C, std::int64_t ldc)
{
    for (std::int64_t j0 = 0; j0 < N; j0 += 64) {
        const __mmask32 m0 = laneMask(N - j0), m1 = laneMask(N - j0 - 32);
        __m512h acc[R][2];
        for (int r = 0; r < R; ++r) {
            acc[r][0] = loadInitial(C + (i0 + r) * ldc + j0, m0, beta);
            acc[r][1] = loadInitial(C + (i0 + r) * ldc + j0 + 32, m1, beta);
        }
        for (std::int64_t k = 0; k < K; ++k) {
            const std::uint16_t* b = B16 + k * N + j0;
            const __m512h b0 = _mm512_castsi512_ph(_mm512_maskz_loadu_epi16(m0, b));
            const __m512h b1 = _mm512_castsi512_ph(_mm512_maskz_loadu_epi16(m1, b + 32));
            for (int r = 0; r < R; ++r) {
                const __m512h a = _mm512_castsi512_ph(
                    _mm512_set1_epi16(static_cast<short>(A16[(i0 + r) * K + k])));
                acc[r][0] = _mm512_fmadd_ph(a, b0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ph(a, b1, acc[r][1]);
            }
        }
        for (int r = 0; r < R; ++r) {
            storeResult(C + (i0 + r) * ldc + j0, m0, acc[r][0]);
            if (m1) storeResult(C + (i0 + r) * ldc + j0 + 32, m1, acc[r][1]);
        }
    }
}

}  // namespace

void gemmAccumulateFp16Avx512(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N,
                              std::int64_t K, const std::uint16_t* A16, const std::uint16_t* B16,
                              float beta, float* C, std::int64_t ldc)
{
    std::int64_t i = rowBegin;
    for (; i + 4 <= rowEnd; i += 4) kernelRows<4>(i, N, K, A16, B16, beta, C, ldc);
    for (; i < rowEnd; ++i) kernelRows<1>(i, N, K, A16, B16, beta, C, ldc);
}

#else
void gemmAccumulateFp16Avx512(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N,
                              std::int64_t K, const std::uint16_t* A16, const std::uint16_t* B16,
                              float beta, float* C, std::int64_t ldc)
{
    (void)rowBegin, (void)rowEnd, (void)N, (void)K, (void)A16, (void)B16, (void)beta, (void)C, (void)ldc;
    throw std::logic_error("gemmAccumulateFp16Avx512 without AVX-512 FP16 support in this build");
}
#endif

}  // namespace plab::cpu
