// Reduced-format sums that skip zero products (gemm_sparse.h): the steps each row takes,
// and the kernel that takes them in AVX2 lanes with gemm_emulated's step.
#include "backend/cpu/gemm_sparse.h"

#define PLAB_SIMD_KERNELS
#include "backend/cpu/sum_lanes.h"
#include "numerics/simd_support.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace plab::cpu {

namespace {

std::uint32_t patternOf(float x)
{
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

#ifdef PLAB_HAVE_X86
// The scans in AVX2 lanes where the CPU has them; n values from x on.
PLAB_AVX2 std::int64_t zerosIn(const float* x, std::int64_t n)
{
    const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
    __m256i count = _mm256_setzero_si256();   // minus the zeros, per lane
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256i v = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j)), magnitude);
        count = _mm256_add_epi32(count, _mm256_cmpeq_epi32(v, _mm256_setzero_si256()));
    }
    alignas(32) std::int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), count);
    std::int64_t zeros = 0;
    for (std::int32_t c : lanes) zeros -= c;
    for (; j < n; ++j) zeros += (patternOf(x[j]) & 0x7FFFFFFFu) == 0;
    return zeros;
}

PLAB_AVX2 bool anyNonFinite(const float* x, std::int64_t n)
{
    const __m256i exponent = _mm256_set1_epi32(0x7F800000);
    __m256i any = _mm256_setzero_si256();
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256i v = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j)), exponent);
        any = _mm256_or_si256(any, _mm256_cmpeq_epi32(v, exponent));
    }
    bool nonFinite = !_mm256_testz_si256(any, any);
    for (; j < n; ++j) nonFinite |= (patternOf(x[j]) & 0x7F800000u) == 0x7F800000u;
    return nonFinite;
}

// The steps of one row of A stored contiguously, no row of B non-finite: the nonzero
// values' positions from each vector's mask.
PLAB_AVX2 void appendNonzeros(const float* a, std::int64_t K, std::vector<std::int32_t>& ks, std::vector<float>& as)
{
    std::int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        auto mask = static_cast<unsigned>(
            _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(a + k), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
        for (; mask != 0; mask &= mask - 1) {
            const auto at = k + __builtin_ctz(mask);
            ks.push_back(static_cast<std::int32_t>(at));
            as.push_back(a[at]);
        }
    }
    for (; k < K; ++k)
        if (a[k] != 0.0f) {
            ks.push_back(static_cast<std::int32_t>(k));
            as.push_back(a[k]);
        }
}
#endif

}  // namespace

std::vector<std::uint8_t> nonFiniteRows(const float* B, std::int64_t K, std::int64_t N, std::int64_t ldb)
{
    std::vector<std::uint8_t> rows(static_cast<std::size_t>(K));
    for (std::int64_t k = 0; k < K; ++k) {
        const float* b = B + k * ldb;
#ifdef PLAB_HAVE_X86
        if (simdLevel() >= SimdLevel::avx2) {
            rows[static_cast<std::size_t>(k)] = anyNonFinite(b, N);
            continue;
        }
#endif
        bool nonFinite = false;
        for (std::int64_t j = 0; j < N; ++j) nonFinite |= (patternOf(b[j]) & 0x7F800000u) == 0x7F800000u;
        rows[static_cast<std::size_t>(k)] = nonFinite;
    }
    return rows;
}

double zeroShare(const float* X, std::int64_t rows, std::int64_t cols, std::int64_t ld)
{
    if (rows <= 0 || cols <= 0) return 0.0;
    std::int64_t zeros = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* x = X + r * ld;
#ifdef PLAB_HAVE_X86
        if (simdLevel() >= SimdLevel::avx2) {
            zeros += zerosIn(x, cols);
            continue;
        }
#endif
        for (std::int64_t c = 0; c < cols; ++c) zeros += (patternOf(x[c]) & 0x7FFFFFFFu) == 0;
    }
    return static_cast<double>(zeros) / static_cast<double>(rows * cols);
}

SumSteps sumSteps(StridedMatrix A, std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t K,
                  const std::vector<std::uint8_t>& nonFiniteRowsOfB)
{
    if (K > INT32_MAX) throw std::invalid_argument("sumSteps: K does not fit 32 bits.");
    const std::int64_t M = rowEnd - rowBegin;
    const bool anyNonFiniteRow =
        std::any_of(nonFiniteRowsOfB.begin(), nonFiniteRowsOfB.end(), [](std::uint8_t r) { return r != 0; });
    const auto taken = [&](float a, std::int64_t k) {
        return a != 0.0f || nonFiniteRowsOfB[static_cast<std::size_t>(k)];
    };
    SumSteps steps;
    steps.rowBegin = rowBegin;
    steps.rowStart.assign(static_cast<std::size_t>(M) + 1, 0);
    if (A.rowStride == 1 && A.colStride != 1) {
        // A transposed in memory: walk it in memory order, k outer, counting each row's
        // steps first and then placing them.
        for (std::int64_t k = 0; k < K; ++k)
            for (std::int64_t r = 0; r < M; ++r)
                steps.rowStart[static_cast<std::size_t>(r) + 1] += taken(A.at(rowBegin + r, k), k);
        for (std::int64_t r = 0; r < M; ++r)
            steps.rowStart[static_cast<std::size_t>(r) + 1] += steps.rowStart[static_cast<std::size_t>(r)];
        steps.k.resize(static_cast<std::size_t>(steps.rowStart.back()));
        steps.a.resize(steps.k.size());
        std::vector<std::int64_t> next(steps.rowStart.begin(), steps.rowStart.end() - 1);
        for (std::int64_t k = 0; k < K; ++k)
            for (std::int64_t r = 0; r < M; ++r) {
                const float a = A.at(rowBegin + r, k);
                if (!taken(a, k)) continue;
                const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(r)]++);
                steps.k[at] = static_cast<std::int32_t>(k);
                steps.a[at] = a;
            }
        return steps;
    }
    for (std::int64_t r = 0; r < M; ++r) {
#ifdef PLAB_HAVE_X86
        if (A.colStride == 1 && !anyNonFiniteRow && simdLevel() >= SimdLevel::avx2) {
            appendNonzeros(A.data + (rowBegin + r) * A.rowStride, K, steps.k, steps.a);
            steps.rowStart[static_cast<std::size_t>(r) + 1] = static_cast<std::int64_t>(steps.k.size());
            continue;
        }
#endif
        for (std::int64_t k = 0; k < K; ++k) {
            const float a = A.at(rowBegin + r, k);
            if (!taken(a, k)) continue;
            steps.k.push_back(static_cast<std::int32_t>(k));
            steps.a.push_back(a);
        }
        steps.rowStart[static_cast<std::size_t>(r) + 1] = static_cast<std::int64_t>(steps.k.size());
    }
    return steps;
}

#ifdef PLAB_HAVE_X86
namespace {

using namespace sum_lanes;

// Any lane of the V sums is -0 (the pattern 0x80000000, the least as a signed integer).
template <int V>
PLAB_AVX2 inline bool anyNegativeZero(const __m256 (&acc)[V])
{
    __m256i least = _mm256_castps_si256(acc[0]);
    for (int v = 1; v < V; ++v) least = _mm256_min_epi32(least, _mm256_castps_si256(acc[v]));
    const __m256i negativeZero = _mm256_cmpeq_epi32(least, _mm256_set1_epi32(INT32_MIN));
    return !_mm256_testz_si256(negativeZero, negativeZero);
}

// One row's sums over columns [j0, j0 + 8 * V) (the lanes at or past N read zeros and
// are dropped): the row's steps in order; before each step past a gap, and at the end, the
// skipped steps themselves while a sum is -0 (with A's own zero, whose sign decides).
template <Format F, int V, bool Masked>
PLAB_AVX2 void sumRow(const std::int32_t* ks, const float* as, std::int64_t count, std::int64_t i,
                      std::int64_t j0, std::int64_t N, std::int64_t K, StridedMatrix A, const float* B,
                      std::int64_t ldb, float beta, float* C, std::int64_t cRowStride, std::int64_t cColStride)
{
    const std::int64_t width = std::min<std::int64_t>(8 * V, N - j0);
    __m256i lanes[V];
    for (int v = 0; v < V; ++v)
        lanes[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(width - 8 * v)),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const auto load = [&lanes](const float* p, int v) PLAB_AVX2 {
        if constexpr (Masked) return _mm256_maskload_ps(p, lanes[v]);
        else return _mm256_loadu_ps(p);
    };
    float* c = C + i * cRowStride + j0 * cColStride;
    alignas(32) float start[8 * V] = {};
    if (beta != 0.0f)
        for (std::int64_t j = 0; j < width; ++j) start[j] = roundTo(F, beta * c[j * cColStride]);
    __m256 acc[V];
    for (int v = 0; v < V; ++v) acc[v] = _mm256_load_ps(start + 8 * v);

    const auto step = [&](float a, std::int64_t k) PLAB_AVX2 {
        const __m256 av = _mm256_set1_ps(a);
        const float* b = B + k * ldb + j0;
        for (int v = 0; v < V; ++v) acc[v] = stepLanes<F>(av, load(b + 8 * v, v), acc[v]);
    };
    const auto skipped = [&](std::int64_t from, std::int64_t to) PLAB_AVX2 {
        for (std::int64_t k = from; k < to && anyNegativeZero<V>(acc); ++k) step(A.at(i, k), k);
    };
    std::int64_t next = 0;   // the first step not yet taken or passed
    for (std::int64_t e = 0; e < count; ++e) {
        const std::int64_t k = ks[e];
        if (k > next) skipped(next, k);
        step(as[e], k);
        next = k + 1;
    }
    skipped(next, K);

    if (cColStride == 1) {
        for (int v = 0; v < V; ++v) {
            if constexpr (Masked) _mm256_maskstore_ps(c + 8 * v, lanes[v], acc[v]);
            else _mm256_storeu_ps(c + 8 * v, acc[v]);
        }
    } else {
        alignas(32) float sums[8 * V];
        for (int v = 0; v < V; ++v) _mm256_store_ps(sums + 8 * v, acc[v]);
        for (std::int64_t j = 0; j < width; ++j) c[j * cColStride] = sums[j];
    }
}

template <Format F>
PLAB_AVX2 void sumRows(const SumSteps& steps, std::int64_t N, std::int64_t K, StridedMatrix A, const float* B,
                       std::int64_t ldb, float beta, float* C, std::int64_t cRowStride, std::int64_t cColStride)
{
    const auto rows = static_cast<std::int64_t>(steps.rowStart.size()) - 1;
    for (std::int64_t j0 = 0; j0 < N; j0 += 32)
        for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t i = steps.rowBegin + r;
            const auto first = steps.rowStart[static_cast<std::size_t>(r)];
            const auto count = steps.rowStart[static_cast<std::size_t>(r) + 1] - first;
            const auto* ks = steps.k.data() + first;
            const auto* as = steps.a.data() + first;
            if (j0 + 32 <= N)
                sumRow<F, 4, false>(ks, as, count, i, j0, N, K, A, B, ldb, beta, C, cRowStride, cColStride);
            else
                sumRow<F, 4, true>(ks, as, count, i, j0, N, K, A, B, ldb, beta, C, cRowStride, cColStride);
        }
}

}  // namespace
#endif

bool skipsZeroSteps()
{
#ifdef PLAB_HAVE_X86
    return simdLevel() >= SimdLevel::avx2;
#else
    return false;
#endif
}

void gemmAccumulateSkippingZeros(Format f, const SumSteps& steps, std::int64_t N, std::int64_t K,
                                 StridedMatrix A, const float* B, std::int64_t ldb, float beta, float* C,
                                 std::int64_t cRowStride, std::int64_t cColStride)
{
    if (!skipsZeroSteps()) throw std::logic_error("gemmAccumulateSkippingZeros needs the AVX2 lanes.");
#ifdef PLAB_HAVE_X86
    switch (f) {
    case Format::fp16: sumRows<Format::fp16>(steps, N, K, A, B, ldb, beta, C, cRowStride, cColStride); return;
    case Format::bf16: sumRows<Format::bf16>(steps, N, K, A, B, ldb, beta, C, cRowStride, cColStride); return;
    case Format::tf32: sumRows<Format::tf32>(steps, N, K, A, B, ldb, beta, C, cRowStride, cColStride); return;
    case Format::fp32: break;
    }
    throw std::invalid_argument("gemmAccumulateSkippingZeros: fp32 sums are sgemm's.");
#else
    (void)f, (void)steps, (void)N, (void)K, (void)A, (void)B, (void)ldb, (void)beta;
    (void)C, (void)cRowStride, (void)cColStride;
#endif
}

}  // namespace plab::cpu
