// Format regions over histogram bins (see format_regions.h).
#include "telemetry/format_regions.h"

#include <cmath>

namespace plab {

FormatRegions formatRegions(Format f)
{
    const FormatInfo& info = formatInfo(f);
    return {info.minSubnormalLog2 - 1, info.minNormalLog2, info.maxExponent + 1};
}

FormatRegions formatRegions(MiniFormat f)
{
    const MiniFormatInfo& info = miniFormatInfo(f);
    return {info.minSubnormalLog2 - 1, info.minNormalLog2, std::ilogb(info.maxFinite) + 1};
}

RegionFormat RegionFormat::of(Format f)
{
    const FormatInfo& info = formatInfo(f);
    return {std::string(info.name), formatRegions(f), info.minSubnormalLog2, info.minNormalLog2, info.maxFinite};
}

RegionFormat RegionFormat::of(MiniFormat f)
{
    const MiniFormatInfo& info = miniFormatInfo(f);
    return {std::string(info.name), formatRegions(f), info.minSubnormalLog2, info.minNormalLog2, info.maxFinite};
}

RegionShares regionShares(const GradientHistogram& h, Format f, int shiftBins)
{
    return regionShares(h, formatRegions(f), shiftBins);
}

RegionShares regionShares(const GradientHistogram& h, const FormatRegions& r, int shiftBins)
{
    std::uint64_t flushed = 0, subnormal = 0, normal = 0, overflow = 0;
    for (int bin = 0; bin < GradientHistogram::kBins; ++bin) {
        const std::uint64_t n = h.bins[static_cast<std::size_t>(bin)];
        if (n == 0) continue;
        const int e = GradientHistogram::exponentOf(bin) + shiftBins;   // may leave fp32's range: regions decide
        if (e < r.flushedBelow)
            flushed += n;
        else if (e < r.normalFrom)
            subnormal += n;
        else if (e < r.overflowFrom)
            normal += n;
        else
            overflow += n;
    }
    RegionShares s;
    s.values = flushed + subnormal + normal + overflow;
    if (s.values > 0) {
        const auto total = static_cast<double>(s.values);
        s.flushed = static_cast<double>(flushed) / total;
        s.subnormal = static_cast<double>(subnormal) / total;
        s.normal = static_cast<double>(normal) / total;
        s.overflow = static_cast<double>(overflow) / total;
    }
    const std::uint64_t all = s.values + h.zeros + h.nonFinite;
    if (all > 0) {
        s.zeros = static_cast<double>(h.zeros) / static_cast<double>(all);
        s.nonFinite = static_cast<double>(h.nonFinite) / static_cast<double>(all);
    }
    return s;
}

}  // namespace plab
