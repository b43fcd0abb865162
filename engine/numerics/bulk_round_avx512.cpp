// AVX-512 kernels of roundArray(): 16 lanes at a time, bit-identical to roundTo().
// Only these functions use AVX-512, through function-level target attributes (no
// directory-wide flags), and bulk_round.cpp calls them only when simdLevel() is avx512.
//   fp16: vcvtps2ph with round-to-nearest-even, then vcvtph2ps (both exact IEEE; fp32
//         subnormal inputs round to +-0 either way, so DAZ cannot change a result).
//   bf16: integer round-to-nearest-even on the bit pattern (vcvtneps2bf16 would flush
//         fp32 subnormals and differs on NaN), NaN lanes truncated with the quiet bit set.
//   tf32: integer round-half-away on the bit pattern, NaN lanes as for bf16.
// Statistics are mask compares accumulated in vector counters. The histogram stores the
// exponent byte of each input and counts a block's bytes by vector compares when its
// values span few binades (the usual case), or in lookup tables when they do not.
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

// Elements per histogram block: the exponent bytes of one block fit in L1.
constexpr std::size_t kBlock = 4096;
// Elements between flushes of the 32-bit vector counters (each lane sees 1/16 of them).
constexpr std::size_t kFlushEvery = std::size_t{1} << 28;

// Per-lane counters of one call, flushed into RoundingStats before they could overflow.
struct LaneCounters {
    __m512i zerosIn, nan, infIn, underflow, overflow, subnormal;
    __m512i largestFinite;   // per lane, the largest finite |x| as bits (not a count)
};

PLAB_AVX512 inline void clearCounters(LaneCounters& c)
{
    c.zerosIn = c.nan = c.infIn = c.underflow = c.overflow = c.subnormal = _mm512_setzero_si512();
    c.largestFinite = _mm512_setzero_si512();
}

PLAB_AVX512 inline std::uint64_t laneSum(__m512i v)
{
    // Lanes hold at most kFlushEvery / 16 each, so their 32-bit sum cannot overflow.
    return static_cast<std::uint32_t>(_mm512_reduce_add_epi32(v));
}

PLAB_AVX512 inline void flushCounters(LaneCounters& c, RoundingStats& s)
{
    s.zerosIn += laneSum(c.zerosIn);
    s.nan += laneSum(c.nan);
    s.infIn += laneSum(c.infIn);
    s.underflow += laneSum(c.underflow);
    s.overflow += laneSum(c.overflow);
    s.subnormal += laneSum(c.subnormal);
    s.largestFinite = std::max(s.largestFinite, floatFromBits(_mm512_reduce_max_epu32(c.largestFinite)));
    clearCounters(c);
}

PLAB_AVX512 inline __m512i countLanes(__m512i counter, __mmask16 lanes)
{
    return _mm512_mask_sub_epi32(counter, lanes, counter, _mm512_set1_epi32(-1));  // +1
}

// Histogram bins for the fp32 subnormal inputs among `lanes` (rare: a slow loop is fine).
PLAB_AVX512 inline void binSubnormalInputs(__m512i absBits, __mmask16 lanes, GradientHistogram& hist)
{
    alignas(64) std::uint32_t values[16];
    _mm512_store_si512(values, absBits);
    for (unsigned m = lanes; m != 0; m &= m - 1) {
        const std::uint32_t a = values[std::countr_zero(m)];
        ++hist.bins[static_cast<std::size_t>(GradientHistogram::binOf(subnormalExponent(a)))];
    }
}

// Counts exponent bytes into four interleaved tables (runs of one exponent are common).
// About one cycle per byte, whatever the spread of exponents.
inline void countBytesInTables(const std::uint8_t* bytes, std::size_t count,
                               std::uint64_t (&tables)[4][256])
{
    std::size_t j = 0;
    for (; j + 4 <= count; j += 4) {
        ++tables[0][bytes[j]];
        ++tables[1][bytes[j + 1]];
        ++tables[2][bytes[j + 2]];
        ++tables[3][bytes[j + 3]];
    }
    for (; j < count; ++j) ++tables[0][bytes[j]];
}

PLAB_AVX512 inline std::uint64_t sumOfBytes(__m512i v)
{
    // vpsadbw against zero gives eight 64-bit partial sums.
    return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(_mm512_sad_epu8(v, _mm512_setzero_si512())));
}

// Adds to tables[0][values[k]], k < used, how many of the first `count` bytes (count <=
// kBlock) equal values[k]: four values in one pass, one load per 64 bytes, and four
// independent counters so that the masked adds do not wait on each other.
PLAB_AVX512 inline void countFourByteValues(const std::uint8_t* bytes, std::size_t count,
                                            const unsigned (&values)[4], int used,
                                            std::uint64_t (&tables)[4][256])
{
    static_assert(kBlock / 64 <= 255, "byte counters would overflow");
    const __m512i minusOne = _mm512_set1_epi8(-1);
    __m512i target[4], hits[4];
    for (int k = 0; k < 4; ++k) {
        target[k] = _mm512_set1_epi8(static_cast<char>(values[k]));
        hits[k] = _mm512_setzero_si512();
    }
    std::size_t offset = 0;
    for (; offset + 64 <= count; offset += 64) {
        const __m512i chunk = _mm512_load_si512(bytes + offset);
        for (int k = 0; k < 4; ++k)
            hits[k] = _mm512_mask_sub_epi8(hits[k], _mm512_cmpeq_epi8_mask(chunk, target[k]), hits[k], minusOne);
    }
    if (offset < count) {
        const __mmask64 tail = ~__mmask64{0} >> (64 - (count - offset));
        const __m512i chunk = _mm512_maskz_loadu_epi8(tail, bytes + offset);
        for (int k = 0; k < 4; ++k)
            hits[k] = _mm512_mask_sub_epi8(hits[k], _mm512_mask_cmpeq_epi8_mask(tail, chunk, target[k]),
                                           hits[k], minusOne);
    }
    // A block has at most kBlock / 64 chunks, so no byte counter has wrapped.
    for (int k = 0; k < used; ++k) tables[0][values[k]] += sumOfBytes(hits[k]);
}

// Counts one block's exponent bytes when its finite nonzero values span few binades, as
// activations and gradients do: a compare pass per byte value present (the span, plus 0
// for zeros and subnormals, 255 for inf/NaN), 64 bytes at a time. About (span + 2) / 64
// cycles per element, against about one for the tables.
PLAB_AVX512 inline void countBytesByCompare(const std::uint8_t* bytes, std::size_t count,
                                            unsigned lowest, unsigned highest,
                                            std::uint64_t (&tables)[4][256])
{
    // Values 0 and 255 first, then the span, four at a time.
    unsigned group[4] = {0, 255, 0, 0};
    int used = 2;
    for (unsigned value = lowest; value <= highest; ++value) {
        group[used++] = value;
        if (used == 4) {
            countFourByteValues(bytes, count, group, 4, tables);
            used = 0;
        }
    }
    if (used > 0) countFourByteValues(bytes, count, group, used, tables);  // the rest: ignored
}

// Above this many distinct binades in a block, the tables are cheaper.
constexpr unsigned kMaxSpanForCompare = 48;

template <Format F, bool kStats, bool kHist>
PLAB_AVX512 void roundKernel(const float* src, float* dst, std::size_t n, RoundingStats* stats,
                             GradientHistogram* hist)
{
    const __m512i absMask = _mm512_set1_epi32(kAbsMask);
    const __m512i infBits = _mm512_set1_epi32(kInfBits);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i byteMask = _mm512_set1_epi32(0xFF);
    const __m512i byte254 = _mm512_set1_epi32(254);
    // A result r (abs bits) is subnormal when r - 1 < minNormal - 1 (unsigned): 0 wraps.
    const __m512i minNormalLess1 =
        _mm512_set1_epi32((F == Format::fp16 ? 0x38800000 : 0x00800000) - 1);
    const bool writeValues = !(F == Format::fp32 && src == dst);

    LaneCounters counters;
    clearCounters(counters);
    RoundingStats totals;
    alignas(64) std::uint8_t exponentBytes[kBlock];
    std::uint64_t byteTables[4][256];
    if constexpr (kHist) std::memset(byteTables, 0, sizeof byteTables);
    std::uint64_t subnormalInputs = 0;

    std::size_t sinceFlush = 0;
    for (std::size_t blockStart = 0; blockStart < n; blockStart += kBlock) {
        const std::size_t blockLen = std::min(kBlock, n - blockStart);
        // Smallest and largest exponent byte of the block's finite nonzero normal inputs.
        __m512i lowestByte = _mm512_set1_epi32(255), highestByte = zero;
        for (std::size_t j = 0; j < blockLen; j += 16) {
            const std::size_t i = blockStart + j;
            const __mmask16 valid = (blockLen - j >= 16)
                ? __mmask16(0xFFFF)
                : static_cast<__mmask16>((1u << (blockLen - j)) - 1u);
            const __m512i u = _mm512_maskz_loadu_epi32(valid, src + i);
            const __m512i a = _mm512_and_si512(u, absMask);
            const __m512i out = detail::roundLanesAvx512<F>(u, a);
            if (writeValues) _mm512_mask_storeu_epi32(dst + i, valid, out);

            if constexpr (kHist) {
                const __m512i biased = _mm512_and_si512(_mm512_srli_epi32(u, 23), byteMask);
                _mm512_mask_cvtepi32_storeu_epi8(exponentBytes + j, valid, biased);
                const __mmask16 ordinary =  // byte in 1..254: (byte - 1) < 254 unsigned
                    _mm512_mask_cmplt_epu32_mask(valid, _mm512_sub_epi32(biased, one), byte254);
                lowestByte = _mm512_mask_min_epu32(lowestByte, ordinary, lowestByte, biased);
                highestByte = _mm512_mask_max_epu32(highestByte, ordinary, highestByte, biased);
                const __mmask16 subnormalIn = _mm512_mask_cmpeq_epi32_mask(
                    _mm512_mask_cmpneq_epi32_mask(valid, a, zero), biased, zero);
                if (subnormalIn) {
                    subnormalInputs += static_cast<unsigned>(std::popcount(unsigned{subnormalIn}));
                    binSubnormalInputs(a, subnormalIn, *hist);
                }
            }
            if constexpr (kStats) {
                const __m512i aOut = _mm512_and_si512(out, absMask);
                const __mmask16 zeroIn = _mm512_mask_cmpeq_epi32_mask(valid, a, zero);
                const __mmask16 infIn = _mm512_mask_cmpeq_epi32_mask(valid, a, infBits);
                counters.zerosIn = countLanes(counters.zerosIn, zeroIn);
                counters.infIn = countLanes(counters.infIn, infIn);
                counters.nan = countLanes(counters.nan, _mm512_mask_cmpgt_epi32_mask(valid, a, infBits));
                if constexpr (F != Format::fp32) {  // fp32 leaves values alone: nothing to lose
                    counters.underflow = countLanes(
                        counters.underflow, _mm512_mask_cmpeq_epi32_mask(valid & ~zeroIn, aOut, zero));
                    counters.overflow = countLanes(
                        counters.overflow, _mm512_mask_cmpeq_epi32_mask(valid & ~infIn, aOut, infBits));
                }
                counters.subnormal = countLanes(
                    counters.subnormal,
                    _mm512_mask_cmplt_epu32_mask(valid, _mm512_sub_epi32(aOut, one), minNormalLess1));
                counters.largestFinite = _mm512_mask_max_epu32(
                    counters.largestFinite, _mm512_mask_cmplt_epu32_mask(valid, a, infBits), counters.largestFinite, a);
            }
        }
        if constexpr (kHist) {
            const unsigned lowest = _mm512_reduce_min_epu32(lowestByte);
            const unsigned highest = _mm512_reduce_max_epu32(highestByte);
            if (lowest > highest)  // no finite nonzero normal input in the block
                countBytesByCompare(exponentBytes, blockLen, 1, 0, byteTables);
            else if (highest - lowest + 1 <= kMaxSpanForCompare)
                countBytesByCompare(exponentBytes, blockLen, lowest, highest, byteTables);
            else
                countBytesInTables(exponentBytes, blockLen, byteTables);
        }
        sinceFlush += blockLen;
        if (kStats && sinceFlush >= kFlushEvery) {
            flushCounters(counters, totals);
            sinceFlush = 0;
        }
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

template <Format F>
void roundKernelFor(const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist)
{
    // Separate instantiations so the common no-telemetry case pays nothing for counting.
    if (stats && hist) roundKernel<F, true, true>(src, dst, n, stats, hist);
    else if (stats) roundKernel<F, true, false>(src, dst, n, stats, hist);
    else if (hist) roundKernel<F, false, true>(src, dst, n, stats, hist);
    else roundKernel<F, false, false>(src, dst, n, stats, hist);
}

}  // namespace

void roundArrayAvx512(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                      GradientHistogram* hist)
{
    switch (f) {
    case Format::fp32: roundKernelFor<Format::fp32>(src, dst, n, stats, hist); return;
    case Format::tf32: roundKernelFor<Format::tf32>(src, dst, n, stats, hist); return;
    case Format::fp16: roundKernelFor<Format::fp16>(src, dst, n, stats, hist); return;
    case Format::bf16: roundKernelFor<Format::bf16>(src, dst, n, stats, hist); return;
    }
}

#else  // not x86: no AVX-512 kernels; bulk_round.cpp keeps to the scalar path.

void roundArrayAvx512(Format, const float*, float*, std::size_t, RoundingStats*, GradientHistogram*) {}

#endif

}  // namespace plab::detail
