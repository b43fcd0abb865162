// Building, writing and reading run records.
#include "record/record_writer.h"

#include "backend/backend.h"
#include "error.h"
#include "json/json_input.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <sys/utsname.h>
#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

// JSON holds no NaN or infinity: those are written as null (read back as NaN).
json finiteOrNull(float x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::string isoNow()
{
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// A share, or null when there was nothing to share (rounding_stats.h).
json shareJson(const std::optional<double>& share) { return share ? json(*share) : json(nullptr); }

}  // namespace

json machineInfo(int threads)
{
    json m;
    std::string cpu = "unknown";
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; std::getline(info, line);)
        if (line.rfind("model name", 0) == 0) {
            cpu = line.substr(line.find(':') + 2);
            break;
        }
    utsname u{};
    uname(&u);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    m["cpu"] = cpu;
    m["logical_cores"] = std::thread::hardware_concurrency();
    m["threads"] = threads;
    m["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
    m["hostname"] = host;
    return m;
}

json versionInfo()
{
    json v;
#ifdef PLAB_VERSION
    v["precision_lab"] = PLAB_VERSION;
#endif
#if defined(__clang__)
    v["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    v["compiler"] = std::string("g++ ") + __VERSION__;
#endif
    v["nlohmann_json"] = std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                         std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                         std::to_string(NLOHMANN_JSON_VERSION_PATCH);
    return v;
}

void writeJsonAtomically(const std::filesystem::path& file, const json& doc)
{
    std::string text = doc.dump(1);
    text += '\n';
    writeFileAtomically(file, text);
}

void renameRunRecord(const std::filesystem::path& file, const std::string& name)
{
    json record = loadRunRecordDocument(file);
    record["name"] = name;
    writeJsonAtomically(file, record);
}

RunRecorder::RunRecorder(std::filesystem::path out, const TrainSettings& settings, const DataSplit& data,
                         std::string name)
    : out_(std::move(out)), started_(std::chrono::steady_clock::now())
{
    record_ = {
        {"format_version", kRunRecordFormatVersion},
        {"name", name},
        {"created_at", isoNow()},
        {"recipe", recipeToJson(settings.recipe)},
        {"settings", settingsToJson(settings)},
        {"seed", settings.seed},
        {"machine", machineInfo(settings.threads)},
        {"versions", versionInfo()},
        {"backend", {{"name", settings.backend}}},
        {"data", {{"name", data.name}, {"description", data.description},
                  {"train_images", data.train.count}, {"test_images", data.test.count}}},
        {"steps", json::array()},
        {"events", json::array()},
        {"evals", json::array()},
        {"telemetry", json::array()},
        {"memory", {{"categories", json::array()}, {"samples", json::array()}, {"peak", json::object()}}},
    };
    for (int c = 0; c < kMemoryCategories; ++c)
        record_["memory"]["categories"].push_back(std::string(memoryCategoryName(static_cast<MemoryCategory>(c))));
    updateSummary(status_, "");
    lastFlush_ = std::chrono::steady_clock::now();
    if (!out_.empty()) flush();
}

RunRecord RunRecorder::runRecord() const { return readRunRecord(record_, out_.empty() ? "the run record" : out_.string()); }

void RunRecorder::onEvent(const TrainerEvent& event)
{
    if (const auto* e = std::get_if<RunStartEvent>(&event)) {
        record_["backend"]["name"] = e->backend;
        if (!e->arithmetic.empty()) record_["backend"]["arithmetic"] = e->arithmetic;
        record_["versions"]["backend"] = e->versions;
        if (e->deviceBeforeRun) record_["memory"]["device_before_run"] = *e->deviceBeforeRun;
    } else if (const auto* e = std::get_if<StepEvent>(&event)) {
        json step = {{"step", e->step}, {"epoch", e->epoch},
                     {"loss", std::isfinite(e->loss) ? json(e->loss) : json(nullptr)},
                     {"loss_scale", e->lossScale}, {"skipped", e->skipped},
                     {"lr", e->lr}, {"batch", e->batch}, {"time_ms", e->timeMs}};
        if (!e->nonFinite.empty()) step["non_finite"] = nonFiniteSitesToJson(e->nonFinite);
        record_["steps"].push_back(std::move(step));
        record_["summary"]["steps"] = e->step;
        record_["summary"]["skipped_steps"] = e->skippedSoFar;
    } else if (const auto* e = std::get_if<EvalEvent>(&event)) {
        record_["evals"].push_back({{"step", e->step}, {"epoch", e->epoch},
                                    {"test_accuracy", e->testAccuracy}, {"test_loss", e->testLoss}});
        bestAccuracy_ = std::max(bestAccuracy_, e->testAccuracy);
        record_["summary"]["test_accuracy"] = e->testAccuracy;
        record_["summary"]["best_test_accuracy"] = bestAccuracy_;
    } else if (const auto* e = std::get_if<TelemetryEvent>(&event)) {
        json layers = json::array();
        lastTotals_.clear();
        lastTotalsStep_ = e->step;
        for (const auto& l : e->layers) {
            json entry = {{"layer", l.layer}, {"kind", std::string(tensorKindName(l.kind))},
                          {"stats", roundingStatsToJson(l.stats)}};
            if (e->hasHistograms) entry["histogram"] = histogramToJson(l.histogram);
            if (l.scaling.present && l.scaling.tensorScale) {
                entry["scale"] = l.scaling.scale;
                entry["amax"] = finiteOrNull(l.scaling.amax);
            }
            if (l.scaling.present && l.scaling.blocks && e->hasHistograms)
                entry["block_scales"] = histogramToJson(l.scaling.blockScales);
            if (l.kind == TensorKind::weightGrad) {
                entry["lost_updates"] = l.update.lost;
                entry["nonzero_updates"] = l.update.nonzero;
                entry["non_finite_updates"] = l.update.nonFinite;
                entry["state_flushed"] = l.update.stateFlushed;
                entry["state_non_finite"] = l.update.stateNonFinite;
            }
            layers.push_back(std::move(entry));
            lastTotals_.push_back({l.layer, l.kind, l.runStats, l.runUpdate});
        }
        if (e->hasHistograms)
            record_["telemetry"].push_back({{"step", e->step}, {"loss_scale", e->lossScale}, {"layers", layers}});
    } else if (const auto* e = std::get_if<MemoryEvent>(&event)) {
        json bytes = json::array();
        for (auto b : e->memory.live) bytes.push_back(b);
        if (e->device) bytes.push_back(e->device->used);   // compared, not written, with the categories
        // A sample when something changed, so a long run's series stays small.
        if (bytes != lastMemoryBytes_) {
            lastMemoryBytes_ = bytes;
            if (e->device) bytes.erase(bytes.end() - 1);
            json sample{{"step", e->step}, {"elapsed_ms", e->elapsedMs}, {"bytes", bytes}, {"total", e->memory.totalLive}};
            if (e->device) {
                sample["device_used"] = e->device->used;
                sample["device_total"] = e->device->total;
            }
            record_["memory"]["samples"].push_back(std::move(sample));
        }
        json peak;
        for (int c = 0; c < kMemoryCategories; ++c)
            peak[std::string(memoryCategoryName(static_cast<MemoryCategory>(c)))] = e->memory.peak[static_cast<std::size_t>(c)];
        peak["total"] = e->memory.totalPeak;
        record_["memory"]["peak"] = peak;
        if (e->memory.peakPhase) record_["memory"]["peak_phase"] = memoryPhaseName(*e->memory.peakPhase);
        // The same per phase: a training step's peak apart from an evaluation's.
        for (const auto& [phase, key] : {std::pair{MemoryPhase::training, "training_peak"},
                                         std::pair{MemoryPhase::evaluation, "evaluation_peak"}}) {
            const MemoryPeaks& p = e->memory.phasePeak[static_cast<std::size_t>(phase)];
            json j;
            for (int c = 0; c < kMemoryCategories; ++c)
                j[std::string(memoryCategoryName(static_cast<MemoryCategory>(c)))] = p.bytes[static_cast<std::size_t>(c)];
            j["total"] = p.total;
            record_["memory"][key] = j;
        }
    } else if (const auto* e = std::get_if<StatusEvent>(&event)) {
        status_ = std::string(runStatusName(e->status));
        record_["events"].push_back({{"step", e->step}, {"type", "status"},
                                     {"status", std::string(runStatusName(e->status))},
                                     {"message", e->message}});
    } else if (const auto* e = std::get_if<SettingChangeEvent>(&event)) {
        record_["events"].push_back({{"step", e->step}, {"type", "setting_change"},
                                     {"description", e->description},
                                     {"settings", settingsToJson(e->settings)}});
    } else if (const auto* e = std::get_if<ChangeRefusedEvent>(&event)) {
        record_["events"].push_back({{"step", e->step}, {"type", "change_refused"},
                                     {"description", e->description}, {"reason", e->reason}});
    }
    // ScalarEvent: the lab's trainer logs no values of its own; the probe writes them.
    flushIfDue();
}

void RunRecorder::updateSummary(const std::string& status, const std::string& message)
{
    json& s = record_["summary"];
    s["status"] = status;
    s["message"] = message;
    if (!s.contains("test_accuracy")) s["test_accuracy"] = nullptr;
    if (!s.contains("best_test_accuracy")) s["best_test_accuracy"] = nullptr;
    if (!s.contains("steps")) s["steps"] = 0;
    if (!s.contains("skipped_steps")) s["skipped_steps"] = 0;

    // Fractions over the run, from the latest run totals: for gradients, the nonzero
    // values that became zero (or +-inf) over the nonzero values rounded.
    json underflow = json::object(), overflow = json::object(), lost = json::object();
    json actUnderflow = json::object(), madeNonFinite = json::object();
    json stateFlushed = json::object(), stateNonFinite = json::object();
    // And every rounding site's counts over every step of the run (the snapshots count only
    // theirs): what overflowed at a step no snapshot fell on is there too.
    json runRounding = json::array();
    for (const LayerTotals& t : lastTotals_) {
        if (t.stats.count > 0)
            runRounding.push_back({{"layer", t.layer}, {"kind", std::string(tensorKindName(t.kind))},
                                   {"stats", roundingStatsToJson(t.stats)}});
        if (t.kind == TensorKind::weightGrad) {
            // A layer whose gradients are never rounded (fp32) has update counts only.
            if (t.stats.count > 0) {
                underflow[t.layer] = shareJson(underflowShare(t.stats));
                overflow[t.layer] = shareJson(overflowShare(t.stats));
            }
            lost[t.layer] = shareJson(t.updates.lostShare());
            madeNonFinite[t.layer] = t.updates.nonFinite;
            stateFlushed[t.layer] = t.updates.stateFlushed;
            stateNonFinite[t.layer] = t.updates.stateNonFinite;
        } else if (t.kind == TensorKind::activationGrad) {
            actUnderflow[t.layer] = shareJson(underflowShare(t.stats));
        }
    }
    s["underflow_fraction"] = underflow;
    s["overflow_fraction"] = overflow;
    s["lost_update_fraction"] = lost;
    s["activation_grad_underflow_fraction"] = actUnderflow;
    s["weights_made_non_finite"] = madeNonFinite;
    s["optimizer_state_flushed"] = stateFlushed;
    s["optimizer_state_made_non_finite"] = stateNonFinite;
    s["run_rounding"] = std::move(runRounding);
    s["run_rounding_through_step"] = lastTotalsStep_;
}

void RunRecorder::finish(const RunResult& result)
{
    updateSummary(std::string(runStatusName(result.status)), result.message);
    json& s = record_["summary"];
    s["steps"] = result.steps;
    s["skipped_steps"] = result.skippedSteps;
    s["images_per_second"] = result.imagesPerSecond;
    s["finished_at"] = isoNow();
    if (out_.empty()) return;
    try {
        flush();
        writeError_.clear();   // the final version is on disk after all
    } catch (const std::exception& e) {
        writeError_ = e.what();
        throw;
    }
}

void RunRecorder::flushIfDue()
{
    const auto now = std::chrono::steady_clock::now();
    // After a failed write the record stays in memory; finish() tries once more.
    if (out_.empty() || !writeError_.empty() || now - lastFlush_ < std::chrono::seconds(1)) return;
    updateSummary(status_, "");
    try {
        flush();
    } catch (const std::exception& e) {
        writeError_ = e.what();   // the caller ends the run (writeError()); never thrown from onEvent
    }
}

void RunRecorder::flush()
{
    writeJsonAtomically(out_, record_);
    lastFlush_ = std::chrono::steady_clock::now();
}

}  // namespace plab
