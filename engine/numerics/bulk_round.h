// Bulk rounding of fp32 arrays to a format, in place, with optional statistics.
// The vectorised paths (AVX2 with F16C, AVX-512) give the same bits as roundTo().
#pragma once

#include "numerics/format.h"
#include "numerics/rounding_stats.h"

#include <cstddef>

namespace plab {

// Rounds x[0..n) to format f in place. When stats / hist are non-null the counts of
// this call are ADDED to them (histogram of |x| before rounding).
void roundArray(Format f, float* x, std::size_t n, RoundingStats* stats = nullptr,
                GradientHistogram* hist = nullptr);

// Same, reading from src and writing to dst (may alias).
void roundArray(Format f, const float* src, float* dst, std::size_t n,
                RoundingStats* stats = nullptr, GradientHistogram* hist = nullptr);

// Name of the code path roundArray uses now ("avx512", "avx2", "scalar"): simdLevel()'s
// (numerics/simd_level.h; tests cap it to compare the paths bit for bit).
const char* bulkRoundPath();

}  // namespace plab
