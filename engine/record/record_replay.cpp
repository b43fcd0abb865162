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

void copyPeak(const RecordedPeak& from, const std::vector<std::string>& categories,
              std::array<std::int64_t, kMemoryCategories>& bytes, std::int64_t& total)
{
    bytes.fill(0);
    for (int c = 0; c < kMemoryCategories; ++c) {
        const auto name = std::string(memoryCategoryName(static_cast<MemoryCategory>(c)));
        const auto it = std::find(categories.begin(), categories.end(), name);
        if (it != categories.end() && static_cast<std::size_t>(it - categories.begin()) < from.bytes.size())
            bytes[static_cast<std::size_t>(c)] = from.bytes[static_cast<std::size_t>(it - categories.begin())];
    }
    total = from.total;
}

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
    for (const MemoryPoint& m : record.memory.samples) {
        MemoryEvent e;
        e.step = m.step;
        e.elapsedMs = m.elapsedMs;
        for (int c = 0; c < kMemoryCategories && c < static_cast<int>(m.bytes.size()); ++c)
            e.memory.live[static_cast<std::size_t>(c)] = m.bytes[static_cast<std::size_t>(c)];
        e.memory.totalLive = m.total;
        e.device = m.device;
        timed.push_back({e.step, 6}, e);
    }
    // The peaks of the whole run, on a last memory sample.
    if (record.memory.peak.recorded && !record.memory.samples.empty()) {
        MemoryEvent e = std::get<MemoryEvent>(out.events.back());
        copyPeak(record.memory.peak, record.memory.categories, e.memory.peak, e.memory.totalPeak);
        e.memory.peakPhase = record.memory.peakPhase;
        // A training step's peak apart from an evaluation's (older records have none and
        // keep zeros).
        for (const auto& [phase, peak] : {std::pair{MemoryPhase::training, &record.memory.trainingPeak},
                                          std::pair{MemoryPhase::evaluation, &record.memory.evaluationPeak}}) {
            if (!peak->recorded) continue;
            MemoryPeaks& p = e.memory.phasePeak[static_cast<std::size_t>(phase)];
            copyPeak(*peak, record.memory.categories, p.bytes, p.total);
        }
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
