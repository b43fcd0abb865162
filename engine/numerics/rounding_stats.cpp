// Adding up rounding statistics and histograms (per step, per run, across threads).
#include "numerics/rounding_stats.h"

#include <numeric>

namespace plab {

RoundingStats& RoundingStats::operator+=(const RoundingStats& o)
{
    count += o.count;
    zerosIn += o.zerosIn;
    underflow += o.underflow;
    subnormal += o.subnormal;
    overflow += o.overflow;
    nan += o.nan;
    infIn += o.infIn;
    return *this;
}

std::uint64_t GradientHistogram::total() const
{
    return std::accumulate(bins.begin(), bins.end(), std::uint64_t{0}) + zeros + nonFinite;
}

GradientHistogram& GradientHistogram::operator+=(const GradientHistogram& o)
{
    for (std::size_t i = 0; i < bins.size(); ++i) bins[i] += o.bins[i];
    zeros += o.zeros;
    nonFinite += o.nonFinite;
    return *this;
}

}  // namespace plab
