// Per-layer, per-kind rounding statistics for the current step and the whole run.
#include "telemetry/telemetry.h"

namespace plab {

std::string_view tensorKindName(TensorKind k)
{
    switch (k) {
    case TensorKind::activation: return "activation";
    case TensorKind::activationGrad: return "activation_grad";
    case TensorKind::weightGrad: return "weight_grad";
    case TensorKind::quantizedActivation: return "quantized_activation";
    case TensorKind::quantizedWeight: return "quantized_weight";
    case TensorKind::quantizedActivationGrad: return "quantized_activation_grad";
    }
    return "unknown";
}

std::optional<TensorKind> parseTensorKind(std::string_view s)
{
    for (auto k : {TensorKind::activation, TensorKind::activationGrad, TensorKind::weightGrad,
                   TensorKind::quantizedActivation, TensorKind::quantizedWeight, TensorKind::quantizedActivationGrad})
        if (tensorKindName(k) == s) return k;
    return std::nullopt;
}

bool isQuantizedKind(TensorKind k)
{
    return k == TensorKind::quantizedActivation || k == TensorKind::quantizedWeight ||
           k == TensorKind::quantizedActivationGrad;
}

void TelemetryCollector::beginStep(bool histogramStep)
{
    histogramStep_ = histogramStep;
    ++steps_;
    stepOrder_.clear();
    for (auto& [key, tap] : taps_) {
        tap.step = {};
        tap.histogram = {};
        tap.scaling = {};
        tap.libraryStep = false;
    }
}

TelemetryCollector::Sink TelemetryCollector::sink(std::string_view layer, TensorKind kind)
{
    const auto [it, added] = taps_.try_emplace(TapKey{std::string(layer), kind});
    TapData& tap = it->second;
    if (tap.lastSunk != steps_ || added) {
        tap.lastSunk = steps_;
        stepOrder_.push_back(&it->first);
    }
    return {&tap.step, histogramStep_ ? &tap.histogram : nullptr, &tap.scaling};
}

void TelemetryCollector::libraryRounded(std::string_view layer, TensorKind kind)
{
    sink(layer, kind);
    taps_.find(TapKey{std::string(layer), kind})->second.libraryStep = true;
}

void TelemetryCollector::endStep()
{
    // Where a library rounded a site first, an inf the lab's rounding met there is the
    // library's overflow when no site that ran before it this step made or met an inf or a
    // NaN: every 16-bit tensor the library read passed a counted rounding, so its inputs
    // were finite. (A quantised kind's overflow counts saturations, no infs.)
    bool nonFiniteBefore = false;
    for (const TapKey* key : stepOrder_) {
        TapData& tap = taps_.find(*key)->second;
        RoundingStats& s = tap.step;
        if (tap.libraryStep && !nonFiniteBefore) {
            s.overflow += s.infIn;
            s.infIn = 0;
        }
        nonFiniteBefore = nonFiniteBefore || s.infIn + s.nan + (isQuantizedKind(key->kind) ? 0 : s.overflow) > 0;
    }
    for (auto& [key, tap] : taps_) {
        tap.run += tap.step;
        if (tap.libraryStep) ++tap.libraryStepsRun;
    }
}

}  // namespace plab
