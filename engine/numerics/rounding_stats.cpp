// Adding up rounding statistics and histograms (per step, per run, across threads).
#include "numerics/rounding_stats.h"

#include <algorithm>
#include <numeric>

namespace plab {

std::optional<double> shareOf(std::uint64_t part, std::uint64_t whole)
{
    if (whole == 0) return std::nullopt;
    return static_cast<double>(part) / static_cast<double>(whole);
}

std::optional<double> underflowShare(const RoundingStats& s) { return shareOf(s.underflow, s.nonzeroFinite()); }
std::optional<double> overflowShare(const RoundingStats& s) { return shareOf(s.overflow, s.nonzeroFinite()); }

RoundingStats& RoundingStats::operator+=(const RoundingStats& o)
{
    count += o.count;
    zerosIn += o.zerosIn;
    underflow += o.underflow;
    subnormal += o.subnormal;
    overflow += o.overflow;
    nan += o.nan;
    infIn += o.infIn;
    largestFinite = std::max(largestFinite, o.largestFinite);
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
