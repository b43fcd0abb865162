// Narrowing to and widening from 16-bit storage: the portable reference and the dispatch to
// storage_convert_simd.cpp's kernels by simdLevel().
#include "numerics/storage_convert.h"

#include "numerics/bulk_round.h"
#include "numerics/simd_level.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace plab {

namespace detail {
// storage_convert_simd.cpp (function-level target attributes).
void narrowArrayAvx512(Format f, const float* src, std::uint16_t* dst, std::size_t n);
void widenArrayAvx512(Format f, const std::uint16_t* src, float* dst, std::size_t n);
void narrowArrayAvx2(Format f, const float* src, std::uint16_t* dst, std::size_t n);
void widenArrayAvx2(Format f, const std::uint16_t* src, float* dst, std::size_t n);
}  // namespace detail

namespace {

void requireSixteenBits(Format f, const char* what)
{
    if (f != Format::fp16 && f != Format::bf16)
        throw std::invalid_argument(std::string(what) + ": 16-bit storage is fp16 or bf16, not " +
                                    std::string(formatName(f)));
}

}  // namespace

std::uint16_t narrowBits(Format f, float x) { return f == Format::fp16 ? fp32ToFp16Bits(x) : fp32ToBf16Bits(x); }

float widenBits(Format f, std::uint16_t bits)
{
    if (f == Format::bf16) return bf16BitsToFp32(bits);
    const float x = fp16BitsToFp32(bits);
    // A signaling NaN made quiet, as the F16C conversion does.
    return (bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) ? floatFromBits(bitsOf(x) | 0x00400000u) : x;
}

void narrowArray(Format f, const float* src, std::uint16_t* dst, std::size_t n)
{
    requireSixteenBits(f, "narrowArray");
    switch (simdLevel()) {
    case SimdLevel::avx512: detail::narrowArrayAvx512(f, src, dst, n); return;
    case SimdLevel::avx2: detail::narrowArrayAvx2(f, src, dst, n); return;
    case SimdLevel::scalar: break;
    }
    for (std::size_t i = 0; i < n; ++i) dst[i] = narrowBits(f, src[i]);
}

void widenArray(Format f, const std::uint16_t* src, float* dst, std::size_t n)
{
    requireSixteenBits(f, "widenArray");
    switch (simdLevel()) {
    case SimdLevel::avx512: detail::widenArrayAvx512(f, src, dst, n); return;
    case SimdLevel::avx2: detail::widenArrayAvx2(f, src, dst, n); return;
    case SimdLevel::scalar: break;
    }
    for (std::size_t i = 0; i < n; ++i) dst[i] = widenBits(f, src[i]);
}

void roundArrayTo16(Format f, const float* src, std::uint16_t* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist)
{
    requireSixteenBits(f, "roundArrayTo16");
    // The rounding tap on a cache-sized chunk, then its (exact) narrowing: one pass over
    // memory, with roundArray's own statistics.
    constexpr std::size_t kChunk = 4096;
    float rounded[kChunk];
    for (std::size_t first = 0; first < n; first += kChunk) {
        const std::size_t m = std::min(kChunk, n - first);
        roundArray(f, src + first, rounded, m, stats, hist);
        narrowArray(f, rounded, dst + first, m);
    }
}

}  // namespace plab
