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
    for (auto& [key, tap] : taps_) {
        tap.run += tap.step;
        if (tap.libraryStep) ++tap.libraryStepsRun;
    }
}

}  // namespace plab
