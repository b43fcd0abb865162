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
#include <vector>

namespace plab {

// The last three are the matmul/conv inputs the FP8 and MX recipes quantise:
// a layer's input activation, its weight, and the gradient of its output.
enum class TensorKind : std::uint8_t {
    activation, activationGrad, weightGrad, quantizedActivation, quantizedWeight, quantizedActivationGrad
};
// "activation", "activation_grad", "weight_grad", "quantized_activation",
// "quantized_weight", "quantized_activation_grad"
std::string_view tensorKindName(TensorKind k);
bool isQuantizedKind(TensorKind k);
std::optional<TensorKind> parseTensorKind(std::string_view s);

struct TapKey {
    std::string layer;
    TensorKind kind;
    auto operator<=>(const TapKey&) const = default;
};

// The scale of a quantised tensor in one step (FP8 and MX recipes).
struct TensorScaling {
    bool present = false;
    bool blocks = false;             // MX, NVFP4: one scale per block, counted in blockScales
    bool tensorScale = false;        // FP8, and NVFP4 beside its blocks: scale and amax are set
    float scale = 1.0f;              // per tensor: the scale the values were multiplied by
    float amax = 0.0f;               // the tensor's largest |x| this step (per tensor)
    GradientHistogram blockScales;   // blocks: each block's scale factor (histogram steps only)
    bool operator==(const TensorScaling&) const = default;
};

struct TapData {
    RoundingStats step;            // this step only
    RoundingStats run;             // accumulated over the run
    GradientHistogram histogram;   // this step, filled only on histogram steps
    TensorScaling scaling;         // this step, quantised kinds only
    std::uint64_t lastSunk = 0;    // the collector's step count when a site last asked for it
    // A library rounded the site's values into 16 bits before the lab's counted rounding, out
    // of any tap's sight (telemetry sampled): at this step, and at how many steps of the run.
    // There its underflow shows as zeros coming in; an inf it made counts as an overflow where
    // no site before it that step made or met an inf or NaN (endStep), else as an inf coming in.
    bool libraryStep = false;
    std::uint64_t libraryStepsRun = 0;
};

class TelemetryCollector {
public:
    // Called by the trainer before each step.
    void beginStep(bool histogramStep);
    bool histogramStep() const { return histogramStep_; }

    // Where a rounding site adds its counts. The returned pointers stay valid until the
    // next beginStep(); hist is null when this is not a histogram step.
    // scaling: where a quantised tensor's scale goes (always set by sink()).
    struct Sink {
        RoundingStats* stats;
        GradientHistogram* hist;
        TensorScaling* scaling = nullptr;
    };
    Sink sink(std::string_view layer, TensorKind kind);
    // Marks the site's values of this step as rounded by a library first (TapData::libraryStep).
    void libraryRounded(std::string_view layer, TensorKind kind);

    // Folds this step's counts into the run totals (called once per step by the trainer, after
    // the backend's flush), first counting a library-rounded site's infs as its overflow
    // where its inputs were finite (TapData::libraryStep).
    void endStep();

    const std::map<TapKey, TapData>& taps() const { return taps_; }
    // This step's sites in the order they first asked for a sink: the order they ran (the
    // layers ask just before each rounding, on one thread). Valid until the next beginStep().
    const std::vector<const TapKey*>& stepOrder() const { return stepOrder_; }
    void clear()
    {
        taps_.clear();
        stepOrder_.clear();
    }

private:
    std::map<TapKey, TapData> taps_;
    std::vector<const TapKey*> stepOrder_;   // into taps_'s nodes (stable)
    std::uint64_t steps_ = 0;                // beginStep() calls
    bool histogramStep_ = false;
};

}  // namespace plab
