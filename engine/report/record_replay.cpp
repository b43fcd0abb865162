// Turning a run record back into trainer events.
#include "report/record_replay.h"

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

}  // namespace

ReplayedRun replayRecord(const json& record, const std::string& origin)
{
    ReplayedRun out;
    try {
        out.settings = settingsFromJson(record.at("settings"), origin + " settings");
        std::vector<Timed> timed;

        const auto& steps = record.at("steps");
        const std::int64_t lastStep = steps.empty() ? 0 : steps.back().at("step").get<std::int64_t>();
        const auto& summary = record.at("summary");
        const std::string status = summary.value("status", "running");
        RunStartEvent start;
        start.backend = record.at("backend").value("name", "cpu");
        if (record.contains("versions") && record["versions"].contains("backend"))
            start.versions = record["versions"]["backend"].get<std::vector<std::string>>();
        // The plan is not recorded: a completed run did what it planned (whatever batch-size
        // changes did to the plan); any other is measured against its settings' plan.
        const std::int64_t trainImages = record.contains("data") ? record["data"].value("train_images", std::int64_t{0}) : 0;
        start.plannedSteps = status == "completed"
                                 ? lastStep
                                 : std::max(lastStep, plannedSteps(out.settings, trainImages));
        timed.push_back({-1, 0, start});

        std::int64_t skipped = 0;
        for (const auto& s : steps) {
            StepEvent e;
            e.step = s.at("step").get<std::int64_t>();
            e.epoch = s.at("epoch").get<int>();
            e.loss = s.at("loss").is_null() ? std::numeric_limits<float>::quiet_NaN() : s["loss"].get<float>();
            e.lossScale = s.at("loss_scale").get<double>();
            e.skipped = s.at("skipped").get<bool>();
            e.lr = s.at("lr").get<double>();
            e.batch = s.at("batch").get<int>();
            e.timeMs = s.value("time_ms", 0.0);
            skipped += e.skipped ? 1 : 0;
            e.skippedSoFar = skipped;
            timed.push_back({e.step, 1, e});
        }
        for (const auto& ev : record.at("events")) {
            const std::int64_t step = ev.at("step").get<std::int64_t>();
            if (ev.at("type") == "setting_change")
                timed.push_back({step, 2, SettingChangeEvent{step, ev.at("description").get<std::string>(),
                                                                 ev.at("settings").dump()}});
            else if (ev.at("type") == "status")
                timed.push_back({step, 3, StatusEvent{statusFromName(ev.at("status").get<std::string>()), step,
                                                      ev.value("message", "")}});
        }
        for (const auto& ev : record.at("evals"))
            timed.push_back({ev.at("step").get<std::int64_t>(), 4,
                             EvalEvent{ev.at("step").get<std::int64_t>(), ev.at("epoch").get<int>(),
                                       ev.at("test_accuracy").get<double>(), ev.at("test_loss").get<double>()}});
        for (const auto& t : record.at("telemetry")) {
            TelemetryEvent e;
            e.step = t.at("step").get<std::int64_t>();
            e.lossScale = t.at("loss_scale").get<double>();
            for (const auto& l : t.at("layers")) {
                LayerTelemetry lt;
                lt.layer = l.at("layer").get<std::string>();
                lt.kind = parseTensorKind(l.at("kind").get<std::string>()).value_or(TensorKind::activation);
                lt.stats = roundingStatsFromJson(l.at("stats"));
                if (l.contains("histogram")) lt.histogram = histogramFromJson(l["histogram"]);
                lt.update.lost = l.value("lost_updates", std::int64_t{0});
                lt.update.nonzero = l.value("nonzero_updates", std::int64_t{0});
                lt.update.nonFinite = l.value("non_finite_updates", std::int64_t{0});
                e.layers.push_back(std::move(lt));
            }
            timed.push_back({e.step, 5, e});
        }
        const auto& memory = record.at("memory");
        for (const auto& m : memory.at("samples")) {
            MemoryEvent e;
            e.step = m.at("step").get<std::int64_t>();
            e.elapsedMs = m.value("elapsed_ms", 0.0);
            const auto& bytes = m.at("bytes");
            for (int c = 0; c < kMemoryCategories && c < static_cast<int>(bytes.size()); ++c)
                e.memory.live[static_cast<std::size_t>(c)] = bytes[static_cast<std::size_t>(c)].get<std::int64_t>();
            e.memory.totalLive = m.at("total").get<std::int64_t>();
            if (m.contains("device_used"))
                e.device = DeviceMemoryInfo{m.at("device_used").get<std::uint64_t>(), m.value("device_total", std::uint64_t{0})};
            timed.push_back({e.step, 6, e});
        }
        // The peaks of the whole run, on a last memory sample.
        if (memory.contains("peak") && !memory["peak"].empty() && !memory.at("samples").empty()) {
            MemoryEvent e = std::get<MemoryEvent>(timed.back().event);
            for (int c = 0; c < kMemoryCategories; ++c)
                e.memory.peak[static_cast<std::size_t>(c)] =
                    memory["peak"].value(std::string(memoryCategoryName(static_cast<MemoryCategory>(c))), std::int64_t{0});
            e.memory.totalPeak = memory["peak"].value("total", std::int64_t{0});
            // A training step's peak apart from an evaluation's (records since format 2 of
            // lessons; older records have none and keep zeros).
            for (const auto& [phase, key] : {std::pair{MemoryPhase::training, "training_peak"},
                                             std::pair{MemoryPhase::evaluation, "evaluation_peak"}}) {
                if (!memory.contains(key) || !memory[key].is_object()) continue;
                MemoryPeaks& p = e.memory.phasePeak[static_cast<std::size_t>(phase)];
                for (int c = 0; c < kMemoryCategories; ++c)
                    p.bytes[static_cast<std::size_t>(c)] =
                        memory[key].value(std::string(memoryCategoryName(static_cast<MemoryCategory>(c))), std::int64_t{0});
                p.total = memory[key].value("total", std::int64_t{0});
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
