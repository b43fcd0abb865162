// Turning a run record back into trainer events.
#include "report/record_replay.h"

#include "json/json_input.h"

#include "error.h"
#include "report/run_record.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab {

using nlohmann::json;

namespace {

// An unknown status reads as failed.
RunStatus statusFromName(const std::string& name) { return parseRunStatus(name).value_or(RunStatus::failed); }

// Every event with the step it belongs to, so that the merge keeps the trainer's order:
// within one step, changes come before the step, evaluations and telemetry after it.
struct Timed {
    std::int64_t step;
    int order;
    TrainerEvent event;
};

// Bounds of what a record may hold: steps and counts far beyond any run, small enough that
// no arithmetic on them overflows.
constexpr std::int64_t kMaxStep = std::int64_t{1} << 53;
constexpr std::int64_t kMaxCount = std::int64_t{1} << 62;
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

// Runs `read`; a field check that fails there is rethrown naming the record and the place
// ("steps[12]"). Built only then: replaying a long record builds no message strings.
template <class Read>
void readAt(const std::string& origin, const char* section, Read&& read)
{
    try {
        read();
    } catch (const InputError& e) {
        throw InputError(origin + ": " + section + ": " + e.what());
    }
}
template <class Read>
void readAt(const std::string& origin, const char* section, std::size_t index, Read&& read)
{
    try {
        read();
    } catch (const InputError& e) {
        throw InputError(origin + ": " + section + "[" + std::to_string(index) + "]: " + e.what());
    }
}

// The byte counts of one memory category list ("peak", "training_peak", ...): 0 when absent.
void readPeaks(const json& obj, std::array<std::int64_t, kMemoryCategories>& bytes, std::int64_t& total)
{
    for (int c = 0; c < kMemoryCategories; ++c)
        bytes[static_cast<std::size_t>(c)] =
            jsonWholeOr(obj, memoryCategoryName(static_cast<MemoryCategory>(c)), 0, kMaxCount);
    total = jsonWholeOr(obj, "total", 0, kMaxCount);
}

}  // namespace

ReplayedRun replayRecord(const json& record, const std::string& origin)
{
    ReplayedRun out;
    try {
        out.settings = settingsFromJson(record.at("settings"), origin + " settings");
        std::vector<Timed> timed;

        const auto& steps = record.at("steps");
        std::int64_t lastStep = 0;
        if (!steps.empty())
            readAt(origin, "steps", steps.size() - 1, [&] { lastStep = jsonWhole(steps.back().at("step"), 0, kMaxStep, "\"step\""); });
        const auto& summary = record.at("summary");
        const std::string status = summary.value("status", "running");
        RunStartEvent start;
        start.backend = record.at("backend").value("name", "cpu");
        if (const json& b = record["backend"]; b.contains("arithmetic") && b["arithmetic"].is_string())
            start.arithmetic = b["arithmetic"].get<std::string>();
        if (record.contains("versions") && record["versions"].contains("backend"))
            start.versions = record["versions"]["backend"].get<std::vector<std::string>>();
        // The plan is not recorded: a completed run did what it planned (whatever batch-size
        // changes did to the plan); any other is measured against its settings' plan.
        std::int64_t trainImages = 0;
        if (record.contains("data"))
            readAt(origin, "data", [&] { trainImages = jsonWholeOr(record["data"], "train_images", 0, kMaxCount); });
        start.plannedSteps = status == "completed"
                                 ? lastStep
                                 : std::max(lastStep, plannedSteps(out.settings, trainImages));
        timed.push_back({-1, 0, start});

        std::int64_t skipped = 0;
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const auto& s = steps[i];
            StepEvent e;
            readAt(origin, "steps", i, [&] {
                e.step = jsonWhole(s.at("step"), 0, kMaxStep, "\"step\"");
                e.epoch = static_cast<int>(jsonWhole(s.at("epoch"), 0, kMaxInt, "\"epoch\""));
                e.loss = jsonFloat(s.at("loss"), "\"loss\"");
                e.lossScale = jsonReal(s.at("loss_scale"), "\"loss_scale\"");
                e.lr = jsonReal(s.at("lr"), "\"lr\"");
                e.batch = static_cast<int>(jsonWhole(s.at("batch"), 1, kMaxInt, "\"batch\""));
            });
            e.skipped = s.at("skipped").get<bool>();
            e.timeMs = s.value("time_ms", 0.0);
            skipped += e.skipped ? 1 : 0;
            e.skippedSoFar = skipped;
            timed.push_back({e.step, 1, e});
        }
        const auto& events = record.at("events");
        for (std::size_t i = 0; i < events.size(); ++i) {
            const auto& ev = events[i];
            std::int64_t step = 0;
            readAt(origin, "events", i, [&] { step = jsonWhole(ev.at("step"), 0, kMaxStep, "\"step\""); });
            if (ev.at("type") == "setting_change")
                timed.push_back({step, 2, SettingChangeEvent{step, ev.at("description").get<std::string>(),
                                                                 settingsFromJson(ev.at("settings"), origin + " events[" + std::to_string(i) + "] settings")}});
            else if (ev.at("type") == "change_refused")
                timed.push_back({step, 2, ChangeRefusedEvent{step, ev.at("description").get<std::string>(),
                                                                 ev.at("reason").get<std::string>()}});
            else if (ev.at("type") == "status")
                timed.push_back({step, 3, StatusEvent{statusFromName(ev.at("status").get<std::string>()), step,
                                                      ev.value("message", "")}});
        }
        const auto& evals = record.at("evals");
        for (std::size_t i = 0; i < evals.size(); ++i) {
            const auto& ev = evals[i];
            EvalEvent e;
            readAt(origin, "evals", i, [&] {
                e = EvalEvent{jsonWhole(ev.at("step"), 0, kMaxStep, "\"step\""),
                              static_cast<int>(jsonWhole(ev.at("epoch"), 0, kMaxInt, "\"epoch\"")),
                              jsonReal(ev.at("test_accuracy"), "\"test_accuracy\""), jsonReal(ev.at("test_loss"), "\"test_loss\"")};
            });
            timed.push_back({e.step, 4, e});
        }
        const auto& telemetry = record.at("telemetry");
        for (std::size_t i = 0; i < telemetry.size(); ++i) {
            const auto& t = telemetry[i];
            TelemetryEvent e;
            readAt(origin, "telemetry", i, [&] {
                e.step = jsonWhole(t.at("step"), 0, kMaxStep, "\"step\"");
                e.lossScale = jsonReal(t.at("loss_scale"), "\"loss_scale\"");
                for (const auto& l : t.at("layers")) {
                    LayerTelemetry lt;
                    lt.layer = l.at("layer").get<std::string>();
                    lt.kind = parseTensorKind(l.at("kind").get<std::string>()).value_or(TensorKind::activation);
                    lt.stats = roundingStatsFromJson(l.at("stats"));
                    if (l.contains("histogram")) lt.histogram = histogramFromJson(l["histogram"]);
                    if (l.contains("scale")) {
                        lt.scaling.present = lt.scaling.tensorScale = true;
                        lt.scaling.scale = static_cast<float>(jsonReal(l.at("scale"), "\"scale\""));
                        lt.scaling.amax = l.at("amax").is_null() ? std::numeric_limits<float>::quiet_NaN()
                                                                 : static_cast<float>(jsonReal(l.at("amax"), "\"amax\""));
                    }
                    if (l.contains("block_scales")) {
                        lt.scaling.present = lt.scaling.blocks = true;
                        lt.scaling.blockScales = histogramFromJson(l.at("block_scales"));
                    }
                    lt.update.lost = jsonWholeOr(l, "lost_updates", 0, kMaxCount);
                    lt.update.nonzero = jsonWholeOr(l, "nonzero_updates", 0, kMaxCount);
                    lt.update.nonFinite = jsonWholeOr(l, "non_finite_updates", 0, kMaxCount);
                    lt.update.stateFlushed = jsonWholeOr(l, "state_flushed", 0, kMaxCount);   // older records: none
                    lt.update.stateNonFinite = jsonWholeOr(l, "state_non_finite", 0, kMaxCount);
                    e.layers.push_back(std::move(lt));
                }
            });
            timed.push_back({e.step, 5, e});
        }
        const auto& memory = record.at("memory");
        const auto& samples = memory.at("samples");
        for (std::size_t i = 0; i < samples.size(); ++i) {
            const auto& m = samples[i];
            MemoryEvent e;
            readAt(origin, "memory samples", i, [&] {
                e.step = jsonWhole(m.at("step"), 0, kMaxStep, "\"step\"");
                const auto& bytes = m.at("bytes");
                for (int c = 0; c < kMemoryCategories && c < static_cast<int>(bytes.size()); ++c)
                    e.memory.live[static_cast<std::size_t>(c)] = jsonWhole(bytes[static_cast<std::size_t>(c)], 0, kMaxCount, "\"bytes\"");
                e.memory.totalLive = jsonWhole(m.at("total"), 0, kMaxCount, "\"total\"");
                if (m.contains("device_used"))
                    e.device = DeviceMemoryInfo{static_cast<std::uint64_t>(jsonWhole(m.at("device_used"), 0, kMaxCount, "\"device_used\"")),
                                                static_cast<std::uint64_t>(jsonWholeOr(m, "device_total", 0, kMaxCount))};
            });
            e.elapsedMs = m.value("elapsed_ms", 0.0);
            timed.push_back({e.step, 6, e});
        }
        // The peaks of the whole run, on a last memory sample.
        if (memory.contains("peak") && !memory["peak"].empty() && !samples.empty()) {
            MemoryEvent e = std::get<MemoryEvent>(timed.back().event);
            readAt(origin, "memory peak", [&] { readPeaks(memory["peak"], e.memory.peak, e.memory.totalPeak); });
            // A training step's peak apart from an evaluation's (records since format 2 of
            // lessons; older records have none and keep zeros).
            for (const auto& [phase, key] : {std::pair{MemoryPhase::training, "training_peak"},
                                             std::pair{MemoryPhase::evaluation, "evaluation_peak"}}) {
                if (!memory.contains(key) || !memory[key].is_object()) continue;
                MemoryPeaks& p = e.memory.phasePeak[static_cast<std::size_t>(phase)];
                readAt(origin, key, [&] { readPeaks(memory[key], p.bytes, p.total); });
            }
            timed.push_back({std::numeric_limits<std::int64_t>::max(), 6, e});
        }
        std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) {
            return a.step != b.step ? a.step < b.step : a.order < b.order;
        });
        out.events.reserve(timed.size());
        for (auto& t : timed) out.events.push_back(std::move(t.event));

        out.interrupted = status == "running" || status == "starting" || status == "paused";
        out.result.status = out.interrupted ? RunStatus::stopped : statusFromName(status);
        out.result.message = out.interrupted ? "interrupted: the record ends at step " + std::to_string(lastStep)
                                             : summary.value("message", "");
        out.result.testAccuracy = summary.at("test_accuracy").is_number() ? summary["test_accuracy"].get<double>() : 0.0;
        out.result.steps = lastStep;
        out.result.skippedSteps = skipped;
        out.result.imagesPerSecond = summary.value("images_per_second", 0.0);
    } catch (const json::exception& e) {
        throw InputError(origin + ": the run record is incomplete or damaged (" + e.what() + ")");
    }
    return out;
}

}  // namespace plab
