// The sites of a step that made or met inf/NaN, and the one line that names the first.
#include "telemetry/non_finite_sites.h"

#include <cmath>
#include <cstdio>

namespace plab {

std::vector<NonFiniteSite> nonFiniteSites(const TelemetryCollector& telemetry,
                                          const std::function<RegionFormat(const std::string&, TensorKind)>& formatOf)
{
    std::vector<NonFiniteSite> out;
    bool overflowKept = false;
    for (const TapKey* key : telemetry.stepOrder()) {
        RoundingStats s = telemetry.taps().at(*key).step;
        // A quantised site's overflow count holds saturations too (a clip to the largest
        // finite value, engine/numerics/quantize.cpp): it makes no inf, so only what
        // arrives as inf or NaN there counts.
        if (isQuantizedKind(key->kind)) s.overflow = 0;
        if (s.overflow == 0 && s.infIn == 0 && s.nan == 0) continue;
        if (out.size() >= kMaxNonFiniteSites && (overflowKept || s.overflow == 0)) continue;
        overflowKept = overflowKept || s.overflow > 0;
        NonFiniteSite site{key->layer, key->kind, s.overflow, s.infIn, s.nan, std::nullopt, {}, 0};
        if (s.largestFinite > 0) site.largestFinite = s.largestFinite;
        const RegionFormat f = formatOf(key->layer, key->kind);
        site.format = f.name;
        site.formatMax = f.maxFinite;
        out.push_back(std::move(site));
    }
    return out;
}

const NonFiniteSite* firstNonFiniteCause(const std::vector<NonFiniteSite>& sites)
{
    for (const NonFiniteSite& s : sites)
        if (s.overflow > 0) return &s;
    return sites.empty() ? nullptr : &sites.front();
}

namespace {

// 65504, 3.39e+38: the format's largest finite value as people quote it.
std::string maxText(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 1e7 ? "%.3g" : "%.0f", v);
    return buf;
}

std::string countText(std::uint64_t n, const char* what)
{
    return std::to_string(n) + " " + what;
}

}  // namespace

std::string siteName(const NonFiniteSite& site) { return site.layer + " " + std::string(tensorKindName(site.kind)); }

std::string siteCountsText(const NonFiniteSite& site)
{
    std::string text;
    const auto add = [&](std::uint64_t n, const char* what) {
        if (n == 0) return;
        text += (text.empty() ? "" : ", ") + countText(n, what);
    };
    add(site.overflow, "overflowed");
    add(site.infIn, "inf in");
    add(site.nan, "NaN");
    return text;
}

std::string skipCauseText(const std::vector<NonFiniteSite>& sites)
{
    const NonFiniteSite* s = firstNonFiniteCause(sites);
    if (!s) return {};
    const std::string where = siteName(*s);
    if (s->overflow > 0) {
        std::string text = where + " overflowed first";
        if (s->largestFinite) {
            char buf[64];
            std::snprintf(buf, sizeof buf, ": 2^%.1f > %s", std::log2(*s->largestFinite), maxText(s->formatMax).c_str());
            text += buf;
        } else {
            text += ": " + countText(s->overflow, s->overflow == 1 ? "value" : "values") + " past " +
                    maxText(s->formatMax);
        }
        return text + " (" + s->format + "'s largest)";
    }
    std::string met;
    if (s->infIn > 0) met = countText(s->infIn, "inf");
    if (s->nan > 0) met += (met.empty() ? "" : ", ") + countText(s->nan, "NaN");
    return where + " met inf/NaN first (" + met + "): made by arithmetic before any rounding overflowed";
}

}  // namespace plab
