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

RunStatus statusFromName(const std::string& name)
{
    for (auto s : {RunStatus::starting, RunStatus::running, RunStatus::paused, RunStatus::completed,
                   RunStatus::stopped, RunStatus::diverged, RunStatus::failed})
        if (runStatusName(s) == name) return s;
    return RunStatus::failed;
}

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

// A byte count of a memory category (0 when absent).
std::int64_t bytesOr(const json& obj, const std::string& key, const std::string& origin)
{
    return obj.contains(key) ? jsonWhole(obj.at(key), 0, kMaxCount, origin + ": memory \"" + key + "\"") : 0;
}

}  // namespace

ReplayedRun replayRecord(const json& record, const std::string& origin)
{
    ReplayedRun out;
    try {
        out.settings = settingsFromJson(record.at("settings"), origin + " settings");
        std::vector<Timed> timed;

        const auto& steps = record.at("steps");
        const std::int64_t lastStep = steps.empty() ? 0 : jsonWhole(steps.back().at("step"), 0, kMaxStep, origin + ": a step's \"step\"");
        const auto& summary = record.at("summary");
        const std::string status = summary.value("status", "running");
        RunStartEvent start;
        start.backend = record.at("backend").value("name", "cpu");
        if (record.contains("versions") && record["versions"].contains("backend"))
            start.versions = record["versions"]["backend"].get<std::vector<std::string>>();
        // The plan is not recorded: a completed run did what it planned (whatever batch-size
        // changes did to the plan); any other is measured against its settings' plan.
        const std::int64_t trainImages = record.contains("data") && record["data"].contains("train_images")
                                             ? jsonWhole(record["data"]["train_images"], 0, kMaxCount, origin + ": \"train_images\"")
                                             : 0;
        start.plannedSteps = status == "completed"
                                 ? lastStep
                                 : std::max(lastStep, plannedSteps(out.settings, trainImages));
        timed.push_back({-1, 0, start});

        std::int64_t skipped = 0;
        for (const auto& s : steps) {
            StepEvent e;
            e.step = jsonWhole(s.at("step"), 0, kMaxStep, origin + ": a step's \"step\"");
            e.epoch = static_cast<int>(jsonWhole(s.at("epoch"), 0, kMaxInt, origin + ": step " + std::to_string(e.step) + " \"epoch\""));
            e.loss = jsonFloat(s.at("loss"), origin + ": step " + std::to_string(e.step) + " \"loss\"");
            e.lossScale = jsonReal(s.at("loss_scale"), origin + ": step " + std::to_string(e.step) + " \"loss_scale\"");
            e.skipped = s.at("skipped").get<bool>();
            e.lr = jsonReal(s.at("lr"), origin + ": step " + std::to_string(e.step) + " \"lr\"");
            e.batch = static_cast<int>(jsonWhole(s.at("batch"), 1, kMaxInt, origin + ": step " + std::to_string(e.step) + " \"batch\""));
            e.timeMs = s.value("time_ms", 0.0);
            skipped += e.skipped ? 1 : 0;
            e.skippedSoFar = skipped;
            timed.push_back({e.step, 1, e});
        }
        for (const auto& ev : record.at("events")) {
            const std::int64_t step = jsonWhole(ev.at("step"), 0, kMaxStep, origin + ": an event's \"step\"");
            if (ev.at("type") == "setting_change")
                timed.push_back({step, 2, SettingChangeEvent{step, ev.at("description").get<std::string>(),
                                                                 ev.at("settings").dump()}});
            else if (ev.at("type") == "status")
                timed.push_back({step, 3, StatusEvent{statusFromName(ev.at("status").get<std::string>()), step,
                                                      ev.value("message", "")}});
        }
        for (const auto& ev : record.at("evals")) {
            const std::string where = origin + ": an evaluation's ";
            const std::int64_t step = jsonWhole(ev.at("step"), 0, kMaxStep, where + "\"step\"");
            timed.push_back({step, 4,
                             EvalEvent{step, static_cast<int>(jsonWhole(ev.at("epoch"), 0, kMaxInt, where + "\"epoch\"")),
                                       jsonReal(ev.at("test_accuracy"), where + "\"test_accuracy\""),
                                       jsonReal(ev.at("test_loss"), where + "\"test_loss\"")}});
        }
        for (const auto& t : record.at("telemetry")) {
            TelemetryEvent e;
            e.step = jsonWhole(t.at("step"), 0, kMaxStep, origin + ": a telemetry \"step\"");
            e.lossScale = jsonReal(t.at("loss_scale"), origin + ": telemetry \"loss_scale\"");
            for (const auto& l : t.at("layers")) {
                LayerTelemetry lt;
                lt.layer = l.at("layer").get<std::string>();
                lt.kind = parseTensorKind(l.at("kind").get<std::string>()).value_or(TensorKind::activation);
                lt.stats = roundingStatsFromJson(l.at("stats"));
                if (l.contains("histogram")) lt.histogram = histogramFromJson(l["histogram"]);
                lt.update.lost = l.contains("lost_updates") ? jsonWhole(l["lost_updates"], 0, kMaxCount, origin + ": \"lost_updates\"") : 0;
                lt.update.nonzero = l.contains("nonzero_updates") ? jsonWhole(l["nonzero_updates"], 0, kMaxCount, origin + ": \"nonzero_updates\"") : 0;
                lt.update.nonFinite = l.contains("non_finite_updates") ? jsonWhole(l["non_finite_updates"], 0, kMaxCount, origin + ": \"non_finite_updates\"") : 0;
                e.layers.push_back(std::move(lt));
            }
            timed.push_back({e.step, 5, e});
        }
        const auto& memory = record.at("memory");
        for (const auto& m : memory.at("samples")) {
            MemoryEvent e;
            e.step = jsonWhole(m.at("step"), 0, kMaxStep, origin + ": a memory sample's \"step\"");
            e.elapsedMs = m.value("elapsed_ms", 0.0);
            const auto& bytes = m.at("bytes");
            for (int c = 0; c < kMemoryCategories && c < static_cast<int>(bytes.size()); ++c)
                e.memory.live[static_cast<std::size_t>(c)] = jsonWhole(bytes[static_cast<std::size_t>(c)], 0, kMaxCount, origin + ": memory \"bytes\"");
            e.memory.totalLive = jsonWhole(m.at("total"), 0, kMaxCount, origin + ": memory \"total\"");
            if (m.contains("device_used"))
                e.device = DeviceMemoryInfo{static_cast<std::uint64_t>(jsonWhole(m.at("device_used"), 0, kMaxCount, origin + ": \"device_used\"")),
                                            m.contains("device_total") ? static_cast<std::uint64_t>(jsonWhole(m["device_total"], 0, kMaxCount, origin + ": \"device_total\"")) : 0};
            timed.push_back({e.step, 6, e});
        }
        // The peaks of the whole run, on a last memory sample.
        if (memory.contains("peak") && !memory["peak"].empty() && !memory.at("samples").empty()) {
            MemoryEvent e = std::get<MemoryEvent>(timed.back().event);
            for (int c = 0; c < kMemoryCategories; ++c)
                e.memory.peak[static_cast<std::size_t>(c)] =
                    bytesOr(memory["peak"], std::string(memoryCategoryName(static_cast<MemoryCategory>(c))), origin);
            e.memory.totalPeak = bytesOr(memory["peak"], "total", origin);
            // A training step's peak apart from an evaluation's (records since format 2 of
            // lessons; older records have none and keep zeros).
            for (const auto& [phase, key] : {std::pair{MemoryPhase::training, "training_peak"},
                                             std::pair{MemoryPhase::evaluation, "evaluation_peak"}}) {
                if (!memory.contains(key) || !memory[key].is_object()) continue;
                MemoryPeaks& p = e.memory.phasePeak[static_cast<std::size_t>(phase)];
                for (int c = 0; c < kMemoryCategories; ++c)
                    p.bytes[static_cast<std::size_t>(c)] =
                        bytesOr(memory[key], std::string(memoryCategoryName(static_cast<MemoryCategory>(c))), origin);
                p.total = bytesOr(memory[key], "total", origin);
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
