// A run's record as the UI holds it, and its UI-side state.
#include "run_data.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

RunData::RunData(QString id, TrainSettings settings) : id_(std::move(id)), name_(id_), current_(settings)
{
    record_.settings = std::move(settings);
    record_.backend = record_.settings.backend;   // as RunRecord::start has it, until the run says
    record_.summary.status = std::string(runStatusName(RunStatus::starting));
}

std::shared_ptr<RunData> RunData::fromListing(QString id, const RunListing& l, SeriesLoader loader)
{
    auto run = std::make_shared<RunData>(std::move(id), l.settings);
    run->current_ = l.current;
    run->name_ = l.name.empty() ? run->id_ : QString::fromStdString(l.name);
    // As reading the record would leave them (fromRecord, RunStore's loader).
    run->status_ = l.status;
    run->statusMessage_ = QString::fromStdString(l.message);
    run->interrupted_ = l.unfinished;
    run->plannedSteps_ = l.plannedSteps;
    run->record_.name = l.name;
    run->record_.backend = l.backend;
    run->record_.versions.backend = l.versions;
    if (!l.arithmetic.empty()) run->record_.arithmetic = l.arithmetic;
    run->record_.judgedFormat = l.judgedFormat;
    run->record_.sourceAsRun = l.sourceAsRun;
    run->changes_ = l.changes;
    run->refusals_ = l.refusals;
    run->skipped_ = l.skippedSteps;
    run->images_ = l.images;
    run->stepMs_ = l.stepMs;
    run->finalImagesPerSecond_ = l.imagesPerSecond;
    run->listedLastAccuracy_ = l.lastAccuracy;
    run->listedLastTestLoss_ = l.lastTestLoss;
    run->listedBestAccuracy_ = l.bestAccuracy;
    run->loader_ = std::move(loader);
    return run;
}

std::shared_ptr<RunData> RunData::fromRecord(QString id, RunRecord record, bool finished)
{
    // The facts a runs list shows are the record's (listingOf); a record another process
    // still writes shows the status its last status event gave, and no speed or end yet.
    auto run = fromListing(std::move(id), listingOf(record), {});
    if (!finished) {
        run->interrupted_ = false;
        run->finalImagesPerSecond_ = 0.0;
        run->status_ = RunStatus::starting;
        run->statusMessage_.clear();
        for (const RecordedEvent& event : record.events)
            if (const auto* e = std::get_if<StatusEvent>(&event)) {
                run->status_ = e->status;
                run->statusMessage_ = QString::fromStdString(e->message);
            }
    }
    run->record_ = std::move(record);
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
    record_ = std::move(full.record_);
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
    listedLastTestLoss_ = lastTestLoss();
    listedBestAccuracy_ = bestAccuracy();
    std::vector<StepEvent>().swap(record_.steps);
    std::vector<EvalEvent>().swap(record_.evals);
    std::vector<TelemetryEvent>().swap(record_.telemetry);
    std::vector<MemoryEvent>().swap(record_.memory.samples);
    std::vector<ScalarEvent>().swap(record_.scalars);
    loader_ = std::move(loader);
    ++revision_;
}

void RunData::apply(const TrainerEvent& event)
{
    ++revision_;
    record_.apply(event);
    // What the UI keeps beside the record: the live status and plan, running sums for
    // the speed, the changes apart.
    if (const auto* e = std::get_if<StepEvent>(&event)) {
        skipped_ = e->skippedSoFar;
        images_ += e->batch;
        stepMs_ += e->timeMs;
        if (e->totalSteps > 0) plannedSteps_ = e->totalSteps;
    } else if (const auto* e = std::get_if<StatusEvent>(&event)) {
        status_ = e->status;
        statusMessage_ = QString::fromStdString(e->message);
    } else if (const auto* e = std::get_if<SettingChangeEvent>(&event)) {
        changes_.push_back(*e);
        current_ = e->settings;
    } else if (const auto* e = std::get_if<ChangeRefusedEvent>(&event)) {
        refusals_.push_back(*e);
    } else if (const auto* e = std::get_if<RunStartEvent>(&event)) {
        plannedSteps_ = e->plannedSteps;
    }
}

void RunData::finish(const RunResult& r)
{
    ++revision_;
    status_ = r.status;
    statusMessage_ = QString::fromStdString(r.message);
    finalImagesPerSecond_ = r.imagesPerSecond;
    skipped_ = r.skippedSteps;
    record_.finish(r);
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
    const auto& evals = record_.evals;
    return evals.empty() ? std::numeric_limits<double>::quiet_NaN() : evals.back().testAccuracy;
}

double RunData::lastTestLoss() const
{
    if (loader_) return listedLastTestLoss_;
    const auto& evals = record_.evals;
    return evals.empty() ? std::numeric_limits<double>::quiet_NaN() : evals.back().testLoss;
}

double RunData::bestAccuracy() const
{
    if (loader_) return listedBestAccuracy_;
    if (record_.evals.empty()) return std::numeric_limits<double>::quiet_NaN();
    double best = 0.0;
    for (const auto& e : record_.evals) best = std::max(best, e.testAccuracy);
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
    const RunRecord& r = record();
    if (r.memory.samples.empty()) return {};
    MemorySnapshot s = r.memory.samples.back().memory;
    if (r.memory.peak) {
        s.peak = r.memory.peak->bytes;
        s.totalPeak = r.memory.peak->total;
    }
    s.peakPhase = r.memory.peakPhase;
    if (r.memory.trainingPeak) s.phasePeak[static_cast<std::size_t>(MemoryPhase::training)] = *r.memory.trainingPeak;
    if (r.memory.evaluationPeak) s.phasePeak[static_cast<std::size_t>(MemoryPhase::evaluation)] = *r.memory.evaluationPeak;
    return s;
}

QString RunData::arithmeticKind() const
{
    const std::string phrase = record_.arithmetic.value_or("");
    const std::string_view kind = plab::arithmeticKind(phrase);
    return QString::fromUtf8(kind.data(), qsizetype(kind.size()));
}

}  // namespace plab::ui
