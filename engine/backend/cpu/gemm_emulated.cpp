// Over 500 lines: the portable, AVX2 and AVX-512 kernels of one emulation and the tiles they share, kept side by side so they stay the same arithmetic.
// Reduced-format accumulation for GEMM: an exact scalar emulation of "round after every
// FMA" for any format, the same emulation across AVX2 lanes (the output elements are
// independent: each keeps its own order of k), and the AVX-512 FP16 kernel that does the
// same in hardware for fp16.
#include "backend/cpu/gemm_emulated.h"

#define PLAB_SIMD_KERNELS
#include "numerics/round_lanes.h"
#include "numerics/simd_support.h"
#include "numerics/storage_convert.h"
#include "backend/cpu/sum_lanes.h"

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
    if (simdLevel() < SimdLevel::avx512) return false;   // capped (PLAB_SIMD_MAX or a test)
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

namespace {

// The starting sums: C = beta * C rounded to f once (0 where beta is 0, whatever C holds).
void scaleRows(Format f, std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N, float beta, float* C,
               std::int64_t ldc)
{
    for (std::int64_t i = rowBegin; i < rowEnd; ++i) {
        float* c = C + i * ldc;   // (N)
        for (std::int64_t j = 0; j < N; ++j) c[j] = beta == 0.0f ? 0.0f : roundTo(f, beta * c[j]);
    }
}

}  // namespace

void gemmAccumulateScalar(Format f, std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N,
                          std::int64_t K, const float* A, std::int64_t lda, const float* B,
                          std::int64_t ldb, float beta, float* C, std::int64_t ldc)
{
    scaleRows(f, rowBegin, rowEnd, N, beta, C, ldc);
    for (std::int64_t i = rowBegin; i < rowEnd; ++i) {
        float* c = C + i * ldc;   // (N)
        for (std::int64_t k = 0; k < K; ++k) {
            const float a = A[i * lda + k];
            const float* b = B + k * ldb;   // row k of B, (N)
            for (std::int64_t j = 0; j < N; ++j) c[j] = fmaRoundedTo(f, a, b[j], c[j]);
        }
    }
}

#ifdef PLAB_HAVE_X86
namespace {

using namespace sum_lanes;

// The same in sixteen lanes (AVX-512F); vectors whose products are not all exact in fp32
// take the double lanes in halves of eight.
template <Format F>
[[gnu::noinline, gnu::cold]] PLAB_AVX512 __m512 exactStepDouble16(__m512 a, __m512 b, __m512 c)
{
    const __m256 a8 = _mm512_castps512_ps256(a);
    const __m256 lo = exactStepLanes<F>(a8, _mm512_castps512_ps256(b), _mm512_castps512_ps256(c));
    const __m256 hi = exactStepLanes<F>(a8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(b), 1)),
                                        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1)));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

template <Format F>
PLAB_AVX512 inline __m512 exactStepLanes16(__m512 a, __m512 b, __m512 c)
{
    const __m512 product = _mm512_mul_ps(a, b);
    const __m512 error = _mm512_fmsub_ps(a, b, product);
    const __m512 zero = _mm512_setzero_ps();
    const __mmask16 tiny = _mm512_cmp_ps_mask(_mm512_abs_ps(product), _mm512_set1_ps(0x1p-100f), _CMP_LT_OQ);
    const __mmask16 zeroOperand = _mm512_cmp_ps_mask(a, zero, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(b, zero, _CMP_EQ_OQ);
    const __mmask16 exact = _mm512_cmp_ps_mask(error, zero, _CMP_EQ_OQ) & static_cast<__mmask16>(~tiny | zeroOperand);
    if (exact != 0xFFFF) [[unlikely]] return exactStepDouble16<F>(a, b, c);
    const __m512 sum = _mm512_add_ps(product, c);
    const __m512 bVirtual = _mm512_sub_ps(sum, product);
    const __m512 sumError = _mm512_add_ps(_mm512_sub_ps(product, _mm512_sub_ps(sum, bVirtual)), _mm512_sub_ps(c, bVirtual));
    const __m512i sumBits = _mm512_castps_si512(sum);
    const __m512i one = _mm512_set1_epi32(1);
    // An inexact sum with an even last bit: one ulp towards the error (+1 on the pattern
    // when both have one sign, -1 when not).
    const __mmask16 fix = _mm512_testn_epi32_mask(sumBits, one) & _mm512_cmp_ps_mask(sumError, zero, _CMP_NEQ_OQ);
    const __m512i signsDiffer = _mm512_srli_epi32(_mm512_xor_si512(sumBits, _mm512_castps_si512(sumError)), 31);
    const __m512i step = _mm512_sub_epi32(one, _mm512_add_epi32(signsDiffer, signsDiffer));
    const __m512i u = _mm512_mask_add_epi32(sumBits, fix, sumBits, step);
    return _mm512_castsi512_ps(detail::roundLanesAvx512<F>(u, _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF))));
}

// Rows [i0, i0 + R) times columns [j0, j0 + 8 * V) of C, which already holds beta * C
// rounded: R * V vectors of sums kept in registers through K steps of k (a block of the
// whole sum, see accumulatePanel), each k's vectors of B loaded once for the R rows.
// Masked: V is 1 and only the lanes in `lanes` are read and written (the last columns,
// fewer than 8; the others sum zeros and are dropped).
template <Format F, int R, int V, bool Masked = false>
PLAB_AVX2 void accumulateBlock(std::int64_t i0, std::int64_t j0, std::int64_t K, const float* A, std::int64_t lda,
                               const float* B, std::int64_t ldb, float* C, std::int64_t ldc,
                               __m256i lanes)
{
    static_assert(!Masked || V == 1);
    const auto load = [lanes](const float* p) PLAB_AVX2 {
        if constexpr (Masked) return _mm256_maskload_ps(p, lanes);
        else return _mm256_loadu_ps(p);
    };
    __m256 acc[R][V];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) acc[r][v] = load(C + (i0 + r) * ldc + j0 + 8 * v);
    for (std::int64_t k = 0; k < K; ++k) {
        const float* b = B + k * ldb + j0;   // row k of B
        __m256 bk[V];
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) bk[v] = load(b + 8 * v);
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) {
            const __m256 a = _mm256_set1_ps(A[(i0 + r) * lda + k]);
#pragma GCC unroll 4
            for (int v = 0; v < V; ++v) acc[r][v] = stepLanes<F>(a, bk[v], acc[r][v]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) {
            float* c = C + (i0 + r) * ldc + j0 + 8 * v;
            if constexpr (Masked) _mm256_maskstore_ps(c, lanes, acc[r][v]);
            else _mm256_storeu_ps(c, acc[r][v]);
        }
}

// The sums are taken in tiles: a panel of at most 32 columns of C, and within it blocks of
// kSumBlock steps of k, each for every row of the caller's range before the next block
// (C holds the sums, values of the format, between blocks; each keeps its order of k). A
// tile of B (kSumBlock rows times 32 columns, 16 KiB) then stays in L1 for all the rows;
// without the blocks, every block of rows streamed the panel's K rows from memory again
// (14 MiB apart for a filter gradient with K = 12544).
constexpr std::int64_t kSumBlock = 128;

// The tiles of one panel in that order: tile(i, rows, k0, kn) for rows [i, i + rows) and
// steps [k0, k0 + kn) of k, rows being R or, for the last rows of the range, 1.
template <int R, class Tile>
void forEachSumTile(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t K, const Tile& tile)
{
    for (std::int64_t k0 = 0; k0 < K; k0 += kSumBlock) {
        const std::int64_t kn = std::min(kSumBlock, K - k0);
        std::int64_t i = rowBegin;
        for (; i + R <= rowEnd; i += R) tile(i, R, k0, kn);
        for (; i < rowEnd; ++i) tile(i, 1, k0, kn);
    }
}

// Columns [j0, j0 + 8 * V) of rows [rowBegin, rowEnd), two rows at a time.
template <Format F, int V, bool Masked = false>
PLAB_AVX2 void accumulatePanel(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t j0, std::int64_t K,
                               const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float* C,
                               std::int64_t ldc, __m256i lanes)
{
    forEachSumTile<2>(rowBegin, rowEnd, K, [=](std::int64_t i, int rows, std::int64_t k0, std::int64_t kn) PLAB_AVX2 {
        if (rows == 2) accumulateBlock<F, 2, V, Masked>(i, j0, kn, A + k0, lda, B + k0 * ldb, ldb, C, ldc, lanes);
        else accumulateBlock<F, 1, V, Masked>(i, j0, kn, A + k0, lda, B + k0 * ldb, ldb, C, ldc, lanes);
    });
}

// Rows [rowBegin, rowEnd) of C, all N columns.
template <Format F>
PLAB_AVX2 void gemmAccumulateAvx2For(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N, std::int64_t K,
                                     const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float* C,
                                     std::int64_t ldc)
{
    std::int64_t j0 = 0;
    const __m256i all = _mm256_set1_epi32(-1);
    for (; j0 + 32 <= N; j0 += 32) accumulatePanel<F, 4>(rowBegin, rowEnd, j0, K, A, lda, B, ldb, C, ldc, all);
    for (; j0 + 8 <= N; j0 += 8) accumulatePanel<F, 1>(rowBegin, rowEnd, j0, K, A, lda, B, ldb, C, ldc, all);
    if (j0 < N) {
        const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(N - j0)),
                                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        accumulatePanel<F, 1, true>(rowBegin, rowEnd, j0, K, A, lda, B, ldb, C, ldc, lanes);
    }
}

// The AVX-512 level: the same fast step in sixteen lanes, its tests writing mask registers,
// four rows times 32 columns of sums in registers; a vector with a lane off takes the exact
// step as two halves of eight.
// t: s's pattern plus half an ulp of F. s is a tie exactly when t's dropped bits are 0.
template <Format F>
PLAB_AVX512 inline __mmask16 lanesOffTheFastStep16(__m512 s, __m512i t)
{
    using Bits = FastStepBits<F>;
    const __mmask16 tie = _mm512_testn_epi32_mask(t, _mm512_set1_epi32(static_cast<int>(Bits::dropped)));
    if constexpr (F == Format::fp16) {
        const __m512i magnitude = _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(0x7FFFFFFF));
        const __m512i w = _mm512_add_epi32(magnitude, _mm512_set1_epi32(static_cast<int>(Bits::fp16Shift)));
        return tie | _mm512_mask_cmpgt_epi32_mask(_mm512_test_epi32_mask(magnitude, magnitude), w,
                                                  _mm512_set1_epi32(static_cast<int>(Bits::fp16Top)));
    } else {
        return tie | _mm512_cmp_ps_mask(s, s, _CMP_UNORD_Q);
    }
}

template <Format F>
PLAB_AVX512 inline __m512 stepLanes16(__m512 a, __m512 b, __m512 c)
{
    using Bits = FastStepBits<F>;
    const __m512 s = _mm512_fmadd_ps(a, b, c);
    const __m512i t = _mm512_add_epi32(_mm512_castps_si512(s), _mm512_set1_epi32(static_cast<int>(Bits::half)));
    if (lanesOffTheFastStep16<F>(s, t) != 0) [[unlikely]] return exactStepLanes16<F>(a, b, c);
    return _mm512_castsi512_ps(_mm512_and_si512(t, _mm512_set1_epi32(static_cast<int>(Bits::kept))));
}

// Rows [i0, i0 + R) times columns [j0, j0 + 16 * V) of C, as accumulateBlock; the last
// vector reads and writes only the lanes in lastLanes (the others sum zeros, dropped).
template <Format F, int R, int V>
PLAB_AVX512 void accumulateBlock16(std::int64_t i0, std::int64_t j0, std::int64_t K, const float* A,
                                   std::int64_t lda, const float* B, std::int64_t ldb, float* C, std::int64_t ldc,
                                   __mmask16 lastLanes)
{
    const auto lanes = [lastLanes](int v) { return v == V - 1 ? lastLanes : static_cast<__mmask16>(0xFFFF); };
    __m512 acc[R][V];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[r][v] = _mm512_maskz_loadu_ps(lanes(v), C + (i0 + r) * ldc + j0 + 16 * v);
    for (std::int64_t k = 0; k < K; ++k) {
        const float* b = B + k * ldb + j0;   // row k of B
        __m512 bk[V];
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) bk[v] = _mm512_maskz_loadu_ps(lanes(v), b + 16 * v);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m512 a = _mm512_set1_ps(A[(i0 + r) * lda + k]);
#pragma GCC unroll 2
            for (int v = 0; v < V; ++v) acc[r][v] = stepLanes16<F>(a, bk[v], acc[r][v]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(C + (i0 + r) * ldc + j0 + 16 * v, lanes(v), acc[r][v]);
}

// As accumulatePanel: columns [j0, j0 + 16 * V) of rows [rowBegin, rowEnd), four rows at a time.
template <Format F, int V>
PLAB_AVX512 void accumulatePanel16(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t j0, std::int64_t K,
                                   const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float* C,
                                   std::int64_t ldc, __mmask16 lastLanes)
{
    forEachSumTile<4>(rowBegin, rowEnd, K, [=](std::int64_t i, int rows, std::int64_t k0, std::int64_t kn) PLAB_AVX512 {
        if (rows == 4) accumulateBlock16<F, 4, V>(i, j0, kn, A + k0, lda, B + k0 * ldb, ldb, C, ldc, lastLanes);
        else accumulateBlock16<F, 1, V>(i, j0, kn, A + k0, lda, B + k0 * ldb, ldb, C, ldc, lastLanes);
    });
}

template <Format F>
PLAB_AVX512 void gemmAccumulateAvx512For(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N, std::int64_t K,
                                         const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float* C,
                                         std::int64_t ldc)
{
    std::int64_t j0 = 0;
    for (; j0 + 32 <= N; j0 += 32) accumulatePanel16<F, 2>(rowBegin, rowEnd, j0, K, A, lda, B, ldb, C, ldc, 0xFFFF);
    for (; j0 < N; j0 += 16) {
        const std::int64_t left = std::min<std::int64_t>(16, N - j0);
        accumulatePanel16<F, 1>(rowBegin, rowEnd, j0, K, A, lda, B, ldb, C, ldc, static_cast<__mmask16>((1u << left) - 1u));
    }
}

template <Format F>
void gemmAccumulateLanes(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N, std::int64_t K, const float* A,
                         std::int64_t lda, const float* B, std::int64_t ldb, float* C, std::int64_t ldc)
{
    if (simdLevel() >= SimdLevel::avx512) gemmAccumulateAvx512For<F>(rowBegin, rowEnd, N, K, A, lda, B, ldb, C, ldc);
    else gemmAccumulateAvx2For<F>(rowBegin, rowEnd, N, K, A, lda, B, ldb, C, ldc);
}

}  // namespace
#endif

void gemmAccumulateVector(Format f, std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N, std::int64_t K,
                          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                          std::int64_t ldc)
{
#ifdef PLAB_HAVE_X86
    if (simdLevel() >= SimdLevel::avx2 && f != Format::fp32) {
        scaleRows(f, rowBegin, rowEnd, N, beta, C, ldc);
        switch (f) {
        case Format::fp16: gemmAccumulateLanes<Format::fp16>(rowBegin, rowEnd, N, K, A, lda, B, ldb, C, ldc); return;
        case Format::bf16: gemmAccumulateLanes<Format::bf16>(rowBegin, rowEnd, N, K, A, lda, B, ldb, C, ldc); return;
        case Format::tf32: gemmAccumulateLanes<Format::tf32>(rowBegin, rowEnd, N, K, A, lda, B, ldb, C, ldc); return;
        case Format::fp32: break;
        }
    }
#endif
    gemmAccumulateScalar(f, rowBegin, rowEnd, N, K, A, lda, B, ldb, beta, C, ldc);
}

void packFp16(const float* src, std::uint16_t* dst, std::int64_t n)
{
    // narrowArray rounds as fp32ToFp16Bits does, in vcvtps2ph's lanes where the CPU has them.
    narrowArray(Format::fp16, src, dst, static_cast<std::size_t>(n));
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
