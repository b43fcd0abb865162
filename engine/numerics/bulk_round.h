// Bulk rounding of fp32 arrays to a format, in place, with optional statistics.
// The vectorised paths (F16C, AVX-512 FP16/BF16) give the same bits as roundTo().
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

// Name of the code path roundArray uses on this CPU ("avx512", "f16c", "scalar").
const char* bulkRoundPath();

// Forces the scalar path (tests compare the paths bit for bit).
void setBulkRoundForceScalar(bool on);

}  // namespace plab
