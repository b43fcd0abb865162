// Applying trainer events to a run's UI-side state.
#include "run_data.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

RunData::RunData(QString id, TrainSettings settings)
    : id_(std::move(id)), name_(id_), settings_(settings), current_(std::move(settings))
{
}

std::shared_ptr<RunData> RunData::fromListing(QString id, const RunListing& l, SeriesLoader loader)
{
    auto run = std::make_shared<RunData>(std::move(id), l.settings);
    run->current_ = l.current;
    run->name_ = l.name.empty() ? run->id_ : QString::fromStdString(l.name);
    // As replaying the record and finishing it would leave them (RunStore's loader).
    run->status_ = l.status;
    run->statusMessage_ = QString::fromStdString(l.message);
    run->interrupted_ = l.unfinished;
    run->plannedSteps_ = l.plannedSteps;
    run->backend_ = QString::fromStdString(l.backend);
    run->versions_ = l.versions;
    run->arithmetic_ = QString::fromStdString(l.arithmetic);
    run->judgedFormat_ = l.judgedFormat;
    run->sourceAsRun_ = l.sourceAsRun;
    run->changes_ = l.changes;
    run->refusals_ = l.refusals;
    run->skipped_ = l.skippedSteps;
    run->images_ = l.images;
    run->stepMs_ = l.stepMs;
    run->finalImagesPerSecond_ = l.imagesPerSecond;
    run->listedLastAccuracy_ = l.lastAccuracy;
    run->listedBestAccuracy_ = l.bestAccuracy;
    run->loader_ = std::move(loader);
    return run;
}

const RunData& RunData::ensureSeries() const
{
    if (loader_) {
        // Called from const accessors of an object that is never itself const: reading the
        // series is a cache fill, invisible to the caller but for the time it takes.
        auto& self = const_cast<RunData&>(*this);
        const SeriesLoader loader = std::move(self.loader_);
        self.loader_ = nullptr;
        loader(self);
    }
    return *this;
}

void RunData::adoptSeries(RunData&& full)
{
    steps_ = std::move(full.steps_);
    evals_ = std::move(full.evals_);
    telemetry_ = std::move(full.telemetry_);
    memory_ = std::move(full.memory_);
    scalars_ = std::move(full.scalars_);
    loader_ = nullptr;
    ++revision_;
}

void RunData::setSeriesError(const QString& error)
{
    statusMessage_ = error;
    loader_ = nullptr;
    ++revision_;
}

void RunData::releaseSeries(SeriesLoader loader)
{
    if (loader_ || isLive() || recordPath_.isEmpty()) return;
    listedLastAccuracy_ = lastAccuracy();
    listedBestAccuracy_ = bestAccuracy();
    std::vector<StepPoint>().swap(steps_);
    std::vector<EvalEvent>().swap(evals_);
    std::vector<TelemetryEvent>().swap(telemetry_);
    std::vector<MemoryEvent>().swap(memory_);
    std::vector<ScalarEvent>().swap(scalars_);
    loader_ = std::move(loader);
    ++revision_;
}

void RunData::apply(const TrainerEvent& event)
{
    ++revision_;
    if (const auto* e = std::get_if<StepEvent>(&event)) {
        steps_.push_back(StepPoint::of(*e));
        skipped_ = e->skippedSoFar;
        images_ += e->batch;
        stepMs_ += e->timeMs;
        if (e->totalSteps > 0) plannedSteps_ = e->totalSteps;
    } else if (const auto* e = std::get_if<EvalEvent>(&event)) {
        evals_.push_back(*e);
    } else if (const auto* e = std::get_if<TelemetryEvent>(&event)) {
        if (e->hasHistograms) telemetry_.push_back(*e);
    } else if (const auto* e = std::get_if<MemoryEvent>(&event)) {
        // Keep a sample when the bytes changed (or the peak moved), so long runs stay small.
        if (memory_.empty() || memory_.back().memory.live != e->memory.live ||
            memory_.back().memory.totalPeak != e->memory.totalPeak)
            memory_.push_back(*e);
        else
            memory_.back().memory.peak = e->memory.peak;
    } else if (const auto* e = std::get_if<StatusEvent>(&event)) {
        status_ = e->status;
        statusMessage_ = QString::fromStdString(e->message);
    } else if (const auto* e = std::get_if<SettingChangeEvent>(&event)) {
        changes_.push_back(*e);
        current_ = e->settings;
    } else if (const auto* e = std::get_if<ChangeRefusedEvent>(&event)) {
        refusals_.push_back(*e);
    } else if (const auto* e = std::get_if<ScalarEvent>(&event)) {
        scalars_.push_back(*e);
    } else if (const auto* e = std::get_if<RunStartEvent>(&event)) {
        backend_ = QString::fromStdString(e->backend);
        versions_ = e->versions;
        arithmetic_ = QString::fromStdString(e->arithmetic);
        plannedSteps_ = e->plannedSteps;
        deviceBeforeRun_ = e->deviceBeforeRun;
        judgedFormat_ = e->judgedFormat;
        sourceAsRun_ = e->sourceAsRun;
    }
}

void RunData::finish(const RunResult& r)
{
    ++revision_;
    status_ = r.status;
    statusMessage_ = QString::fromStdString(r.message);
    finalImagesPerSecond_ = r.imagesPerSecond;
    skipped_ = r.skippedSteps;
}

void RunData::replaceContents(const RunData& other)
{
    const QString id = id_, name = name_, path = recordPath_;
    const QColor color = color_;
    const std::uint64_t revision = std::max(revision_, other.revision_);
    *this = other;
    id_ = id;
    name_ = name;
    recordPath_ = path;
    color_ = color;
    revision_ = revision + 1;
}

double RunData::lastAccuracy() const
{
    if (loader_) return listedLastAccuracy_;
    return evals_.empty() ? std::numeric_limits<double>::quiet_NaN() : evals_.back().testAccuracy;
}

double RunData::bestAccuracy() const
{
    if (loader_) return listedBestAccuracy_;
    if (evals_.empty()) return std::numeric_limits<double>::quiet_NaN();
    double best = 0.0;
    for (const auto& e : evals_) best = std::max(best, e.testAccuracy);
    return best;
}

double RunData::imagesPerSecond() const
{
    if (finalImagesPerSecond_ > 0) return finalImagesPerSecond_;
    return stepMs_ > 0 ? 1000.0 * static_cast<double>(images_) / stepMs_ : 0.0;
}

double RunData::elapsedSeconds() const { return stepMs_ / 1000.0; }

MemorySnapshot RunData::peakMemory() const
{
    const auto& memory = this->memory();
    return memory.empty() ? MemorySnapshot{} : memory.back().memory;
}

QString RunData::arithmeticKind() const
{
    const std::string phrase = arithmetic_.toStdString();
    const std::string_view kind = plab::arithmeticKind(phrase);
    return QString::fromUtf8(kind.data(), qsizetype(kind.size()));
}

}  // namespace plab::ui
