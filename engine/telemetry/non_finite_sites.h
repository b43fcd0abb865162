// Why a step went non-finite: the rounding sites of one step that made or met inf/NaN, in
// the order they ran, with the largest finite magnitude each rounded against its format's
// largest finite value. The trainer keeps them for every step dynamic scaling skips
// (StepEvent::nonFinite); the record, the loss-scale chart, `plab report`, the CSV and the
// TensorBoard export show them (skipCauseText is the one phrasing).
#pragma once

#include "telemetry/format_regions.h"
#include "telemetry/telemetry.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace plab {

struct NonFiniteSite {
    std::string layer;
    TensorKind kind = TensorKind::activation;
    std::uint64_t overflow = 0;   // finite values this rounding made +-inf
    std::uint64_t infIn = 0;      // inputs that were +-inf already
    std::uint64_t nan = 0;        // NaN inputs
    // The largest finite |x| the site rounded this step; empty where the backend does not
    // measure it (RoundingStats::largestFinite: the CUDA plugin).
    std::optional<double> largestFinite;
    std::string format;           // the format the site rounds to ("fp16")
    double formatMax = 0;         // its largest finite value (65504)
    bool operator==(const NonFiniteSite&) const = default;
};

// This step's sites (TelemetryCollector::stepOrder) whose counts show an overflow, an inf
// or a NaN, in the order they ran (a quantised kind's overflow, which counts saturation to
// a finite value too, is left out: only its inf and NaN inputs count); formatOf names the format each site rounds to. At most
// kMaxNonFiniteSites of them (a step that skips is usually non-finite everywhere after its
// first site, and a record keeps every skipped step's list), plus the first that overflowed
// where it came later.
inline constexpr std::size_t kMaxNonFiniteSites = 8;
std::vector<NonFiniteSite> nonFiniteSites(const TelemetryCollector& telemetry,
                                          const std::function<RegionFormat(const std::string& layer, TensorKind)>& formatOf);

// The site that made the step non-finite: the first that overflowed; where none did, the
// first that met inf or NaN (made by arithmetic between roundings: an fp32 sum, the loss).
// Null for an empty list.
const NonFiniteSite* firstNonFiniteCause(const std::vector<NonFiniteSite>& sites);

// The site as people name it: "conv2 activation_grad".
std::string siteName(const NonFiniteSite& site);

// What one site did, for people: "4 overflowed, 12 inf in, 3 NaN" (the non-zero counts).
std::string siteCountsText(const NonFiniteSite& site);

// One line for people: "conv2 activation_grad overflowed first: 2^16.2 > 65504 (fp16's
// largest)"; "fc1 activation met inf first (2 values): made before any rounding
// overflowed"; empty for an empty list.
std::string skipCauseText(const std::vector<NonFiniteSite>& sites);

}  // namespace plab
