// The trainer's telemetry and memory events (train/trainer.h): a snapshot of every tap with
// the optimizer's update counts (and the gradient accumulation's before it), the layers whose updates fp32 itself can lose, the backend's
// scratch counted as workspace, and the memory accountant's figures.
#include "train/trainer.h"
#include "train/trainer_state.h"

#include <algorithm>
#include <chrono>
#include <tuple>

namespace plab {

void Trainer::emitTelemetry(State& st, double lossScale, bool withHistograms)
{
    TelemetryEvent te;
    te.step = st.step;
    te.lossScale = lossScale;
    te.hasHistograms = withHistograms;
    for (const auto& [key, tap] : st.telemetry.taps()) {
        LayerTelemetry lt;
        lt.layer = key.layer;
        lt.kind = key.kind;
        lt.stats = tap.step;
        if (withHistograms) lt.histogram = tap.histogram;
        lt.runStats = tap.run;
        lt.runLibrarySteps = static_cast<std::int64_t>(tap.libraryStepsRun);
        lt.scaling = tap.scaling;
        if (!withHistograms) lt.scaling.blockScales = {};
        if (key.kind == TensorKind::weightGrad) {
            std::tie(lt.update, lt.runUpdate) = st.updates[key.layer];
        }
        te.layers.push_back(std::move(lt));
    }
    // Layers whose weight gradients have no rounding tap (fp32 storage: nothing is rounded)
    // still have updates that fp32 itself can lose: their counts go out as a weight_grad
    // entry without values (count 0), so an fp32 run's lost updates are measured like any.
    for (const auto& [layer, counts] : st.updates) {
        const bool tapped = std::any_of(te.layers.begin(), te.layers.end(), [&](const LayerTelemetry& l) {
            return l.layer == layer && l.kind == TensorKind::weightGrad;
        });
        if (tapped) continue;
        LayerTelemetry lt;
        lt.layer = layer;
        lt.kind = TensorKind::weightGrad;
        std::tie(lt.update, lt.runUpdate) = counts;
        te.layers.push_back(std::move(lt));
    }
    st.lastTelemetryStep = st.step;
    emitEvent(te);
}

void Trainer::countBackendScratch(State& st)
{
    const std::int64_t now = st.backend->scratchBytes();
    if (now > st.backendScratch) st.memory.add(MemoryCategory::workspace, now - st.backendScratch);
    if (now < st.backendScratch) st.memory.remove(MemoryCategory::workspace, st.backendScratch - now);
    st.backendScratch = now;
}

void Trainer::emitMemory(State& st)
{
    using Clock = std::chrono::steady_clock;
    MemoryEvent e{st.step, std::chrono::duration<double, std::milli>(Clock::now() - st.started).count(),
                  st.memory.snapshot(), st.backend ? st.backend->deviceMemory() : std::nullopt};
    emitEvent(e);
}

void Trainer::countUpdates(State& st)
{
    for (auto& [layer, counts] : st.updates) counts.first = {};
    for (std::size_t i = 0; i < st.params.size(); ++i) {
        const Parameter* p = st.params[i];
        UpdateCounts step = p->lastUpdate;
        if (i < st.accumulation.size()) {   // what the step's gradient accumulation lost, skipped or not
            step.accumulated = st.accumulation[i].nonzero;
            step.accumulationLost = st.accumulation[i].lost;
        }
        auto& [thisStep, run] = st.updates[p->layer];
        thisStep += step;
        run += step;
    }
}

}  // namespace plab
