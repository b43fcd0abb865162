// Where the bins of a gradient histogram (log2|x| before rounding, one bin per power of
// two) fall in a number format: flushed to zero (below half the smallest subnormal),
// subnormal, normal, overflow (beyond the largest finite value); and the share of a
// histogram's values in each region, and how each region is drawn. The one definition the
// app's histogram chart, the report's histogram and the format explorer all use.
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/rounding_stats.h"

#include <cstdint>
#include <string>

namespace plab {

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
// The same for a format below 16 bits (FP8, FP6, FP4): "overflow" is what saturates.
FormatRegions formatRegions(MiniFormat f);

// A format whose regions a histogram is judged in: the compute format of a run, or for a
// quantised kind the element format its values were given to.
struct RegionFormat {
    std::string name;          // "fp16", "e5m2", "fp4-e2m1"
    FormatRegions regions;
    int minSubnormalLog2 = 0;
    int minNormalLog2 = 0;
    double maxFinite = 0;
    static RegionFormat of(Format f);
    static RegionFormat of(MiniFormat f);
    bool operator==(const RegionFormat& o) const { return name == o.name; }
};

struct RegionShares {
    std::uint64_t values = 0;   // nonzero finite values in the histogram (the denominator)
    double flushed = 0, subnormal = 0, normal = 0, overflow = 0;   // fractions of values
    double zeros = 0;           // exact zeros, as a fraction of all values (zeros + nonFinite included)
    double nonFinite = 0;       // inf/NaN inputs, as a fraction of all values
};
// shiftBins moves every bin first: what the histogram would look like under a loss scale
// 2^shiftBins times the one it was recorded at (the format explorer's "scale S" table).
RegionShares regionShares(const GradientHistogram& h, Format f, int shiftBins = 0);
RegionShares regionShares(const GradientHistogram& h, const FormatRegions& regions, int shiftBins = 0);

// The four regions in order (flushed, subnormal, normal, overflow): a key for names of
// drawn items, the label a legend shows, and the translucent shading (RGBA) drawn over a
// plot. Boundaries between them: formatRegions.
struct RegionStyle {
    const char* key;
    const char* label;
    std::uint8_t red, green, blue, alpha;
};
inline constexpr RegionStyle kRegionStyles[4] = {
    {"flushed", "flushed to zero", 220, 50, 50, 45},
    {"subnormal", "subnormal", 240, 160, 30, 55},
    {"normal", "normal", 60, 170, 90, 30},
    {"overflow", "overflow", 160, 60, 200, 50},
};

}  // namespace plab
