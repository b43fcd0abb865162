// A run's record as the trainer's events build it, and what it is asked (run_record.h);
// its JSON both ways is in run_record_json.cpp.
#include "record/run_record.h"

#include "nn/model_kinds.h"
#include "tensor/memory.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <thread>
#include <unistd.h>
#include <sys/utsname.h>

namespace plab {

namespace {

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

// A telemetry layer as a record's snapshot holds it (RunRecord::telemetry).
LayerTelemetry snapshotOf(const LayerTelemetry& l)
{
    LayerTelemetry s;
    s.layer = l.layer;
    s.kind = l.kind;
    s.stats = l.stats;
    if (l.kind == TensorKind::weightGrad) s.update = l.update;
    s.histogram = l.histogram;
    if (l.scaling.present && l.scaling.tensorScale) {
        s.scaling.present = s.scaling.tensorScale = true;
        s.scaling.scale = l.scaling.scale;
        s.scaling.amax = std::isfinite(l.scaling.amax) ? l.scaling.amax : std::numeric_limits<float>::quiet_NaN();
    }
    if (l.scaling.present && l.scaling.blocks) {
        s.scaling.present = s.scaling.blocks = true;
        s.scaling.blockScales = l.scaling.blockScales;
    }
    return s;
}

}  // namespace

RecordedMachine thisMachine(int threads)
{
    RecordedMachine m;
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
    m.cpu = cpu;
    m.logicalCores = static_cast<std::int64_t>(std::thread::hardware_concurrency());
    m.threads = threads;
    m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
    m.hostname = host;
    return m;
}

RecordedVersions thisBuild()
{
    RecordedVersions v;
#ifdef PLAB_VERSION
    v.precisionLab = PLAB_VERSION;
#endif
#if defined(__clang__)
    v.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    v.compiler = std::string("g++ ") + __VERSION__;
#endif
    v.nlohmannJson = std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." + std::to_string(NLOHMANN_JSON_VERSION_MINOR) +
                     "." + std::to_string(NLOHMANN_JSON_VERSION_PATCH);
    return v;
}

void sortLayersInModelOrder(std::vector<std::string>& layers)
{
    const auto rank = [](const std::string& layer) { return layer == "input" ? 0 : layer == "loss" ? 2 : 1; };
    std::stable_sort(layers.begin(), layers.end(),
                     [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
}

std::vector<LayerFractions> summaryLayersInOrder(std::map<std::string, LayerFractions> byLayer)
{
    std::vector<std::string> names;
    for (std::uint8_t bit = 1; bit != 0 && bit <= kListsAccumulationLost; bit = static_cast<std::uint8_t>(bit << 1))
        for (const auto& [name, f] : byLayer)
            if ((f.listed & bit) && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    sortLayersInModelOrder(names);
    std::vector<LayerFractions> out;
    out.reserve(names.size());
    for (const auto& name : names) out.push_back(std::move(byLayer.at(name)));
    return out;
}

const LayerFractions* RecordedSummary::layer(const std::string& name) const
{
    for (const auto& l : layers)
        if (l.layer == name) return &l;
    return nullptr;
}

const RecordedSummary::SiteTotals* RecordedSummary::runTotals(const std::string& layer, TensorKind kind) const
{
    for (const auto& t : runRounding)
        if (t.layer == layer && t.kind == kind) return &t;
    return nullptr;
}

RunRecord RunRecord::start(const TrainSettings& settings, const DataSplit& data, std::string name)
{
    RunRecord r;
    r.name = std::move(name);
    r.createdAt = isoNow();
    r.settings = settings;
    for (const SettingKey& key : plab::settingKeys()) r.settingKeys.emplace_back(key.key);
    std::sort(r.settingKeys.begin(), r.settingKeys.end());   // as a read record lists them (JSON's order)
    r.machine = thisMachine(settings.threads);
    r.versions = thisBuild();
    r.backend = settings.backend;
    r.data = {data.name, data.description, data.train.count, data.test.count};
    r.summary.status = std::string(runStatusName(RunStatus::starting));
    r.summary.hasRunRounding = true;
    return r;
}

void RunRecord::apply(const TrainerEvent& event)
{
    if (const auto* e = std::get_if<RunStartEvent>(&event)) {
        backend = e->backend;
        if (!e->arithmetic.empty()) arithmetic = e->arithmetic;
        versions.backend = e->versions;
        if (e->deviceBeforeRun) memory.deviceBeforeRun = e->deviceBeforeRun;
        judgedFormat = e->judgedFormat;
        sourceAsRun = e->sourceAsRun;
    } else if (const auto* e = std::get_if<StepEvent>(&event)) {
        StepEvent& kept = steps.emplace_back(*e);
        kept.totalSteps = kept.skippedSoFar = 0;
        if (!kept.lossFinite()) kept.loss = std::numeric_limits<double>::quiet_NaN();
        summary.steps = e->step;
        summary.skippedSteps = e->skippedSoFar;
    } else if (const auto* e = std::get_if<EvalEvent>(&event)) {
        EvalEvent& kept = evals.emplace_back(*e);
        if (!kept.reconstructions.empty()) {
            reconstructions = std::move(kept.reconstructions);
            kept.reconstructions.clear();
            reconstructedAtStep = e->step;
        }
        if (modelTask(settings.model.kind) == ModelTask::reconstruct) {
            summary.testMse = e->testLoss;
            summary.bestTestMse = std::min(summary.bestTestMse.value_or(e->testLoss), e->testLoss);
        } else {
            summary.testAccuracy = e->testAccuracy;
            summary.bestTestAccuracy = std::max(summary.bestTestAccuracy.value_or(e->testAccuracy), e->testAccuracy);
        }
    } else if (const auto* e = std::get_if<TelemetryEvent>(&event)) {
        // A snapshot on histogram steps; the run totals (every event's, the last one's at
        // the run's end) are the summary's.
        if (e->hasHistograms) {
            TelemetryEvent p{e->step, e->lossScale, true, {}};
            p.layers.reserve(e->layers.size());
            for (const LayerTelemetry& l : e->layers) p.layers.push_back(snapshotOf(l));
            telemetry.push_back(std::move(p));
        }
        // For gradients, the nonzero values that became zero (or +-inf) over the nonzero
        // values rounded; a layer whose gradients are never rounded (fp32) has update counts only.
        std::map<std::string, LayerFractions> byLayer;
        summary.runRounding.clear();
        for (const LayerTelemetry& l : e->layers) {
            if (l.runStats.count > 0) summary.runRounding.push_back({l.layer, l.kind, l.runStats, l.runLibrarySteps});
            if (l.kind != TensorKind::weightGrad && l.kind != TensorKind::activationGrad) continue;
            LayerFractions& f = byLayer[l.layer];
            f.layer = l.layer;
            if (l.kind == TensorKind::activationGrad) {
                // Where a library rounded them first at some steps (telemetry sampled), what
                // underflowed there is among the zeros that came in: no share is known.
                f.activationGradUnderflow =
                    l.runLibrarySteps > 0 ? std::optional<double>() : underflowShare(l.runStats);
                f.listed |= kListsActivationGradUnderflow;
                continue;
            }
            if (l.runStats.count > 0) {
                f.underflow = underflowShare(l.runStats);
                f.overflow = overflowShare(l.runStats);
                f.listed |= kListsUnderflow | kListsOverflow;
            }
            f.lostUpdate = l.runUpdate.lostShare();
            f.weightsMadeNonFinite = l.runUpdate.nonFinite;
            f.stateFlushed = l.runUpdate.stateFlushed;
            f.stateMadeNonFinite = l.runUpdate.stateNonFinite;
            f.listed |= kListsLostUpdate | kListsWeightsMadeNonFinite | kListsStateFlushed | kListsStateMadeNonFinite;
            if (l.runUpdate.accumulated > 0) {
                f.accumulationLost = l.runUpdate.accumulationLostShare();
                f.listed |= kListsAccumulationLost;
            }
        }
        summary.layers = summaryLayersInOrder(std::move(byLayer));
        summary.hasRunRounding = true;
        summary.runRoundingThroughStep = e->step;
    } else if (const auto* e = std::get_if<MemoryEvent>(&event)) {
        // A sample when something changed (the device's bytes in use included), so a long
        // run's series stays small.
        const auto used = [](const MemoryEvent& m) { return m.device ? std::optional(m.device->used) : std::nullopt; };
        if (memory.samples.empty() || memory.samples.back().memory.live != e->memory.live ||
            used(memory.samples.back()) != used(*e)) {
            MemoryEvent sample{e->step, e->elapsedMs, {}, e->device};
            sample.memory.live = e->memory.live;
            sample.memory.totalLive = e->memory.totalLive;
            memory.samples.push_back(std::move(sample));
        }
        memory.peak = MemoryPeaks{e->memory.peak, e->memory.totalPeak};
        if (e->memory.peakPhase) memory.peakPhase = e->memory.peakPhase;
        // The same per phase: a training step's peak apart from an evaluation's.
        memory.trainingPeak = e->memory.phasePeak[static_cast<std::size_t>(MemoryPhase::training)];
        memory.evaluationPeak = e->memory.phasePeak[static_cast<std::size_t>(MemoryPhase::evaluation)];
    } else if (const auto* e = std::get_if<StatusEvent>(&event)) {
        summary.status = std::string(runStatusName(e->status));
        events.emplace_back(*e);
    } else if (const auto* e = std::get_if<SettingChangeEvent>(&event)) {
        events.emplace_back(*e);
    } else if (const auto* e = std::get_if<ChangeRefusedEvent>(&event)) {
        events.emplace_back(*e);
    } else if (const auto* e = std::get_if<ScalarEvent>(&event)) {
        scalars.push_back(*e);   // the lab's trainer logs none; a probe's training does
    }
}

void RunRecord::finish(const RunResult& result)
{
    summary.status = std::string(runStatusName(result.status));
    summary.message = result.message;
    summary.steps = result.steps;
    summary.skippedSteps = result.skippedSteps;
    summary.imagesPerSecond = result.imagesPerSecond;
    summary.finishedAt = isoNow();
}

const TrainSettings& RunRecord::finalSettings() const
{
    const TrainSettings* last = &settings;
    for (const auto& e : events)
        if (const auto* change = std::get_if<SettingChangeEvent>(&e)) last = &change->settings;
    return *last;
}

bool RunRecord::interrupted() const
{
    return summary.status == "running" || summary.status == "starting" || summary.status == "paused";
}

std::int64_t RunRecord::lastStep() const { return steps.empty() ? 0 : steps.back().step; }

std::int64_t RunRecord::stepsPlanned() const
{
    const std::int64_t last = lastStep();
    if (summary.status == "completed") return last;
    if (!sourceKind.empty()) return 0;
    return std::max(last, plannedSteps(settings, data.trainImages));
}

RunResult RunRecord::result() const
{
    RunResult out;
    const std::int64_t last = lastStep();
    out.status = interrupted() ? RunStatus::stopped : parseRunStatus(summary.status).value_or(RunStatus::failed);
    out.message = interrupted() ? "interrupted: the record ends at step " + std::to_string(last) : summary.message;
    out.testAccuracy = summary.testAccuracy.value_or(0.0);
    out.testLoss = evals.empty() ? std::numeric_limits<double>::quiet_NaN() : evals.back().testLoss;
    out.steps = last;
    out.skippedSteps = std::count_if(steps.begin(), steps.end(), [](const StepEvent& p) { return p.skipped; });
    out.imagesPerSecond = summary.imagesPerSecond;
    return out;
}

std::vector<std::string> RunRecord::scalarNames() const
{
    std::vector<std::string> names;
    for (const ScalarEvent& s : scalars)
        if (std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
    return names;
}

}  // namespace plab
