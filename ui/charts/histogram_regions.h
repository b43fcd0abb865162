// Where the bins of a gradient histogram (log2|x| before rounding, one bin per power of
// two) fall in a number format: flushed to zero (below half the smallest subnormal),
// subnormal, normal, overflow (beyond the largest finite value); and the share of a
// histogram's values in each region. Pure arithmetic for the histogram chart and tests.
#pragma once

#include "numerics/format.h"
#include "numerics/rounding_stats.h"

#include <cstdint>

namespace plab::ui {

// Region boundaries as bin exponents e (bin e holds |x| in [2^e, 2^(e+1))).
// Bins with e < flushedBelow round to zero: |x| < 2^(minSubnormal - 1), half the smallest
// subnormal (2^-25 for fp16). Bins from subnormalFrom (= flushedBelow) up to
// normalFrom - 1 become subnormal (the bin just under the smallest subnormal rounds up to
// it, except its exact tie); bins from normalFrom (minNormalLog2) to maxExponent are
// normal; bins with e >= overflowFrom (maxExponent + 1, above 65504 for fp16) overflow.
// At the resolution of one bin the top bin [2^max, 2^(max+1)) counts as normal although
// its last half-ulp rounds to inf.
struct FormatRegions {
    int flushedBelow;
    int normalFrom;
    int overflowFrom;
};
FormatRegions formatRegions(Format f);

struct RegionShares {
    std::uint64_t values = 0;   // nonzero finite values in the histogram (the denominator)
    double flushed = 0, subnormal = 0, normal = 0, overflow = 0;   // fractions of values
    double zeros = 0;           // exact zeros, as a fraction of all values (zeros + nonFinite included)
    double nonFinite = 0;       // inf/NaN inputs, as a fraction of all values
};
// shiftBins moves every bin first: what the histogram would look like under a loss scale
// 2^shiftBins times the one it was recorded at (the format explorer's "scale S" table).
RegionShares regionShares(const GradientHistogram& h, Format f, int shiftBins = 0);

}  // namespace plab::ui
