// A RunRecord back into the trainer's own events (replayRecord, run_record.h).
#include "record/run_record.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace plab {

namespace {

// Every event with the step it belongs to, so that the merge keeps the trainer's order:
// within one step, changes come before the step, evaluations and telemetry after it.
// The events are large (a TrainerEvent is as large as its largest kind, a setting change's
// whole settings): they are kept once, in out.events, and sorted through their keys.
struct Timed {
    std::vector<std::pair<std::int64_t, int>> keys;   // (step, order) of each event
    std::vector<TrainerEvent>& events;

    void push_back(std::pair<std::int64_t, int> key, TrainerEvent&& event)
    {
        keys.push_back(key);
        events.push_back(std::move(event));
    }
};

}  // namespace

ReplayedRun replayRecord(const RunRecord& record)
{
    ReplayedRun out;
    out.settings = record.settings;
    Timed timed{{}, out.events};
    const std::size_t count = record.steps.size() + record.events.size() + record.evals.size() +
                              record.telemetry.size() + record.memory.samples.size() + record.scalars.size() + 2;
    timed.keys.reserve(count);
    out.events.reserve(count);

    RunStartEvent start;
    start.backend = record.backend;
    start.arithmetic = record.arithmetic.value_or("");
    start.versions = record.versions.backend;
    start.deviceBeforeRun = record.memory.deviceBeforeRun;
    start.judgedFormat = record.judgedFormat;
    start.sourceAsRun = record.sourceAsRun;
    start.plannedSteps = record.stepsPlanned();
    timed.push_back({-1, 0}, start);

    std::int64_t skipped = 0;   // so far, at each step
    for (const StepPoint& p : record.steps) {
        StepEvent e;
        e.step = p.step;
        e.epoch = p.epoch;
        e.loss = p.loss ? static_cast<float>(*p.loss) : std::numeric_limits<float>::quiet_NaN();
        e.lossScale = p.lossScale;
        e.lr = p.lr;
        e.batch = p.batch;
        e.skipped = p.skipped;
        e.timeMs = p.timeMs;
        e.nonFinite = p.nonFinite;
        skipped += e.skipped ? 1 : 0;
        e.skippedSoFar = skipped;
        timed.push_back({e.step, 1}, e);
    }
    for (const RecordedEvent& ev : record.events) {
        const int order = std::holds_alternative<StatusEvent>(ev) ? 3 : 2;
        std::visit([&](const auto& e) { timed.push_back({e.step, order}, e); }, ev);
    }
    for (const EvalEvent& e : record.evals) timed.push_back({e.step, 4}, e);
    for (const ScalarEvent& e : record.scalars) timed.push_back({e.step, 4}, e);
    for (const TelemetryEvent& t : record.telemetry) timed.push_back({t.step, 5}, t);
    for (const MemoryEvent& m : record.memory.samples) timed.push_back({m.step, 6}, m);
    // The peaks of the whole run, on a last memory sample.
    if (record.memory.peak && !record.memory.samples.empty()) {
        MemoryEvent e = record.memory.samples.back();
        e.memory.peak = record.memory.peak->bytes;
        e.memory.totalPeak = record.memory.peak->total;
        e.memory.peakPhase = record.memory.peakPhase;
        // A training step's peak apart from an evaluation's (older records have none and
        // keep zeros).
        const auto phase = [&](MemoryPhase p) -> MemoryPeaks& { return e.memory.phasePeak[static_cast<std::size_t>(p)]; };
        if (record.memory.trainingPeak) phase(MemoryPhase::training) = *record.memory.trainingPeak;
        if (record.memory.evaluationPeak) phase(MemoryPhase::evaluation) = *record.memory.evaluationPeak;
        timed.push_back({std::numeric_limits<std::int64_t>::max(), 6}, e);
    }
    // Sorted by (step, order) through an index, then put in that order in place (each cycle
    // of the permutation followed once): the events are never copied.
    const auto& keys = timed.keys;
    std::vector<std::uint32_t> order(keys.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
    for (std::size_t start = 0; start < order.size(); ++start) {
        if (order[start] == start) continue;
        // Position i takes the event at order[i]; follow the cycle from `start`.
        TrainerEvent held = std::move(out.events[start]);
        std::size_t at = start;
        while (order[at] != start) {
            const std::size_t from = order[at];
            out.events[at] = std::move(out.events[from]);
            order[at] = static_cast<std::uint32_t>(at);
            at = from;
        }
        out.events[at] = std::move(held);
        order[at] = static_cast<std::uint32_t>(at);
    }

    out.interrupted = record.interrupted();
    out.result = record.result();
    return out;
}

}  // namespace plab
