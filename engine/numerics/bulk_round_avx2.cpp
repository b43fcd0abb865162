// AVX2 kernels of roundArray(): 8 lanes at a time, bit-identical to roundTo(), for CPUs
// without AVX-512 (most laptops and desktops). Only these functions use AVX2, FMA and F16C,
// through function-level target attributes, and bulk_round.cpp calls them only when
// simdLevel() is avx2. The rounding itself is numerics/round_lanes.h's (F16C for fp16,
// integer lanes for bf16 and tf32).
// Statistics are compares accumulated in vector counters (a compare's all-ones lane is -1,
// so subtracting it counts). The histogram counts each input's exponent byte in four
// interleaved tables; subnormal inputs, which are rare, are binned one by one.
#include "numerics/bulk_round.h"

#define PLAB_SIMD_KERNELS
#include "numerics/simd_support.h"
#include "numerics/round_lanes.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace plab::detail {

#ifdef PLAB_HAVE_X86

namespace {

constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kInfBits = 0x7F800000u;
// Elements between flushes of the 32-bit vector counters (each lane sees 1/8 of them).
constexpr std::size_t kFlushEvery = std::size_t{1} << 28;

struct LaneCounters {
    __m256i zerosIn, nan, infIn, underflow, overflow, subnormal;
    __m256i largestFinite;   // per lane, the largest finite |x| as bits (not a count)
};

PLAB_AVX2 inline void clearCounters(LaneCounters& c)
{
    c.zerosIn = c.nan = c.infIn = c.underflow = c.overflow = c.subnormal = _mm256_setzero_si256();
    c.largestFinite = _mm256_setzero_si256();
}

PLAB_AVX2 inline void flushCounters(LaneCounters& c, RoundingStats& s)
{
    s.zerosIn += laneSum(c.zerosIn);
    s.nan += laneSum(c.nan);
    s.infIn += laneSum(c.infIn);
    s.underflow += laneSum(c.underflow);
    s.overflow += laneSum(c.overflow);
    s.subnormal += laneSum(c.subnormal);
    alignas(32) std::uint32_t largest[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(largest), c.largestFinite);
    s.largestFinite = std::max(s.largestFinite, floatFromBits(*std::max_element(largest, largest + 8)));
    clearCounters(c);
}

// `lanes`: all-ones in the lanes to count.
PLAB_AVX2 inline __m256i countLanes(__m256i counter, __m256i lanes) { return _mm256_sub_epi32(counter, lanes); }

template <Format F, bool kStats, bool kHist>
struct Kernel {
    LaneCounters counters;
    std::uint64_t byteTables[4][256];
    std::uint64_t subnormalInputs = 0;
    GradientHistogram* hist;

    // One vector of 8 values; `valid`: all-ones in the lanes that hold input (the tail's
    // padding lanes are zeros and must not be counted).
    PLAB_AVX2 inline __m256i step(__m256i u, __m256i valid)
    {
        const __m256i zero = _mm256_setzero_si256();
        const __m256i a = _mm256_and_si256(u, set1(kAbsMask));
        const __m256i out = roundLanesAvx2<F>(u, a);
        if constexpr (kHist) {
            alignas(32) std::uint32_t bytes[8];
            _mm256_store_si256(reinterpret_cast<__m256i*>(bytes), _mm256_srli_epi32(a, 23));
            const int lanes = _mm256_movemask_ps(_mm256_castsi256_ps(valid));
            for (int k = 0; k < 8; ++k)
                if (lanes & (1 << k)) ++byteTables[k & 3][bytes[k]];
            // Subnormal inputs: exponent byte 0, nonzero.
            const __m256i sub = _mm256_andnot_si256(_mm256_cmpeq_epi32(a, zero),
                                                    _mm256_cmpgt_epi32(set1(0x00800000u), a));
            if (int m = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(sub, valid)))) {
                alignas(32) std::uint32_t values[8];
                _mm256_store_si256(reinterpret_cast<__m256i*>(values), a);
                for (unsigned bits = static_cast<unsigned>(m); bits != 0; bits &= bits - 1) {
                    ++subnormalInputs;
                    ++hist->bins[static_cast<std::size_t>(
                        GradientHistogram::binOf(subnormalExponent(values[std::countr_zero(bits)])))];
                }
            }
        }
        if constexpr (kStats) {
            const __m256i aOut = _mm256_and_si256(out, set1(kAbsMask));
            const __m256i zeroIn = _mm256_and_si256(valid, _mm256_cmpeq_epi32(a, zero));
            const __m256i infIn = _mm256_and_si256(valid, _mm256_cmpeq_epi32(a, set1(kInfBits)));
            counters.zerosIn = countLanes(counters.zerosIn, zeroIn);
            counters.infIn = countLanes(counters.infIn, infIn);
            counters.nan = countLanes(counters.nan, _mm256_and_si256(valid, _mm256_cmpgt_epi32(a, set1(kInfBits))));
            if constexpr (F != Format::fp32) {  // fp32 leaves values alone: nothing to lose
                counters.underflow = countLanes(
                    counters.underflow, _mm256_andnot_si256(zeroIn, _mm256_and_si256(valid, _mm256_cmpeq_epi32(aOut, zero))));
                counters.overflow = countLanes(
                    counters.overflow,
                    _mm256_andnot_si256(infIn, _mm256_and_si256(valid, _mm256_cmpeq_epi32(aOut, set1(kInfBits)))));
            }
            const std::uint32_t minNormal = F == Format::fp16 ? 0x38800000u : 0x00800000u;
            const __m256i subnormalOut =
                _mm256_andnot_si256(_mm256_cmpeq_epi32(aOut, zero), _mm256_cmpgt_epi32(set1(minNormal), aOut));
            counters.subnormal = countLanes(counters.subnormal, _mm256_and_si256(valid, subnormalOut));
            // Finite inputs (abs bits below inf's, a signed compare of non-negative lanes).
            const __m256i finite = _mm256_and_si256(valid, _mm256_cmpgt_epi32(set1(kInfBits), a));
            counters.largestFinite = _mm256_max_epu32(counters.largestFinite, _mm256_and_si256(finite, a));
        }
        return out;
    }

    PLAB_AVX2 void run(const float* src, float* dst, std::size_t n, RoundingStats* stats)
    {
        const bool writeValues = !(F == Format::fp32 && src == dst);
        clearCounters(counters);
        if constexpr (kHist) std::memset(byteTables, 0, sizeof byteTables);
        RoundingStats totals;
        const __m256i all = _mm256_set1_epi32(-1);
        std::size_t i = 0, sinceFlush = 0;
        for (; i + 8 <= n; i += 8) {
            const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
            const __m256i out = step(u, all);
            if (writeValues) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), out);
            if (kStats && (sinceFlush += 8) >= kFlushEvery) {
                flushCounters(counters, totals);
                sinceFlush = 0;
            }
        }
        if (i < n) {  // the tail, through a padded copy (src and dst may alias)
            const std::size_t rest = n - i;
            alignas(32) float buffer[8] = {};
            alignas(32) std::int32_t lanes[8] = {};
            std::memcpy(buffer, src + i, rest * sizeof(float));
            for (std::size_t k = 0; k < rest; ++k) lanes[k] = -1;
            const __m256i out = step(_mm256_load_si256(reinterpret_cast<const __m256i*>(buffer)),
                                     _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes)));
            _mm256_store_si256(reinterpret_cast<__m256i*>(buffer), out);
            if (writeValues) std::memcpy(dst + i, buffer, rest * sizeof(float));
        }
        if constexpr (kStats) {
            flushCounters(counters, totals);
            totals.count = n;
            *stats += totals;
        }
        if constexpr (kHist) {
            std::uint64_t merged[256];
            for (int b = 0; b < 256; ++b)
                merged[b] = byteTables[0][b] + byteTables[1][b] + byteTables[2][b] + byteTables[3][b];
            addExponentByteCounts(merged, subnormalInputs, *hist);
        }
    }
};

template <Format F, bool kStats, bool kHist>
void runKernel(const float* src, float* dst, std::size_t n, RoundingStats* stats, GradientHistogram* hist)
{
    Kernel<F, kStats, kHist> k;
    k.hist = hist;
    k.run(src, dst, n, stats);
}

template <Format F>
void roundKernelFor(const float* src, float* dst, std::size_t n, RoundingStats* stats, GradientHistogram* hist)
{
    // Separate instantiations so the common no-telemetry case pays nothing for counting.
    if (stats && hist) runKernel<F, true, true>(src, dst, n, stats, hist);
    else if (stats) runKernel<F, true, false>(src, dst, n, stats, hist);
    else if (hist) runKernel<F, false, true>(src, dst, n, stats, hist);
    else runKernel<F, false, false>(src, dst, n, stats, hist);
}

}  // namespace

void roundArrayAvx2(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist)
{
    switch (f) {
    case Format::fp32: roundKernelFor<Format::fp32>(src, dst, n, stats, hist); return;
    case Format::tf32: roundKernelFor<Format::tf32>(src, dst, n, stats, hist); return;
    case Format::fp16: roundKernelFor<Format::fp16>(src, dst, n, stats, hist); return;
    case Format::bf16: roundKernelFor<Format::bf16>(src, dst, n, stats, hist); return;
    }
}

#else  // not x86: bulk_round.cpp keeps to the scalar path (simdLevel() is scalar).

void roundArrayAvx2(Format, const float*, float*, std::size_t, RoundingStats*, GradientHistogram*) {}

#endif

}  // namespace plab::detail
