// Telemetry taps at every rounding site: per layer ("conv1", "fc1", ..., "loss") and
// tensor kind, the rounding statistics of the current step and of the whole run, and
// (on histogram steps) the histogram of |x| before rounding.
#pragma once

#include "numerics/rounding_stats.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace plab {

enum class TensorKind : std::uint8_t { activation, activationGrad, weightGrad };
std::string_view tensorKindName(TensorKind k);   // "activation", "activation_grad", "weight_grad"
std::optional<TensorKind> parseTensorKind(std::string_view s);

struct TapKey {
    std::string layer;
    TensorKind kind;
    auto operator<=>(const TapKey&) const = default;
};

struct TapData {
    RoundingStats step;            // this step only
    RoundingStats run;             // accumulated over the run
    GradientHistogram histogram;   // this step, filled only on histogram steps
};

class TelemetryCollector {
public:
    // Called by the trainer before each step.
    void beginStep(bool histogramStep);
    bool histogramStep() const { return histogramStep_; }

    // Where a rounding site adds its counts. The returned pointers stay valid until the
    // next beginStep(); hist is null when this is not a histogram step.
    struct Sink { RoundingStats* stats; GradientHistogram* hist; };
    Sink sink(std::string_view layer, TensorKind kind);

    // Folds this step's counts into the run totals (called once per step by the trainer).
    void endStep();

    const std::map<TapKey, TapData>& taps() const { return taps_; }
    void clear() { taps_.clear(); }

private:
    std::map<TapKey, TapData> taps_;
    bool histogramStep_ = false;
};

}  // namespace plab
