// Everything the UI knows about one run: its RunRecord (record/run_record.h), built by
// applying the trainer's events in order as a live run goes, or read from a saved record,
// plus what only the UI needs (its id, shown name, colour, record path, live status and
// revision). Owned and touched by the GUI thread only; charts read it when they redraw.
//
// A saved run may be known from its listing only (the runs folder index): the
// runs list's facts are there, and its series (steps, evaluations, telemetry, memory, logged scalars)
// are read from its record the first time anything asks for them, so a folder of
// thousands costs memory for what is shown.
#pragma once

#include "record/run_record.h"
#include "report/runs_index.h"
#include "train/events.h"
#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <QColor>
#include <QString>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace plab::ui {

class RunData {
public:
    explicit RunData(QString id, TrainSettings settings);

    // Fills the run's series (the loader calls adoptSeries, or setSeriesError).
    using SeriesLoader = std::function<void(RunData&)>;
    // A saved run from its listing; `loader` reads its series when they are first asked for.
    static std::shared_ptr<RunData> fromListing(QString id, const RunListing& listing, SeriesLoader loader);
    // A saved run from its record. `finished`: the record's end is taken as the run's (its
    // summary, or "interrupted" for one cut short); false for a record another process still
    // writes, which stays as its status events left it.
    static std::shared_ptr<RunData> fromRecord(QString id, RunRecord record, bool finished = true);
    // Whether the series are here (false: a listing whose series were not read yet).
    bool hasSeries() const { return !loader_; }
    // Takes the record of `full`, this run read again (its id, name, colour and path stay).
    void adoptSeries(RunData&& full);
    // The record could not be read again: no series, and the reason as its status message.
    void setSeriesError(const QString& error);
    // Drops the series of a saved run that is no longer shown; `loader` reads them again.
    // Ignored for a live run and one without a record.
    void releaseSeries(SeriesLoader loader);

    void apply(const TrainerEvent& e);   // appends; bumps revision()
    void finish(const RunResult& r);

    const QString& id() const { return id_; }             // stable key (file stem of the record)
    QString name() const { return name_; }
    void setName(const QString& n) { name_ = n; ++revision_; }
    const TrainSettings& settings() const { return record_.settings; }   // as the run started
    const TrainSettings& currentSettings() const { return current_; }  // after changes
    QColor color() const { return color_; }
    void setColor(QColor c) { color_ = c; }

    // A saved run whose record never got its final summary (the app or machine died).
    bool interrupted() const { return interrupted_; }
    void setInterrupted(bool interrupted) { interrupted_ = interrupted; ++revision_; }
    // The record on disk (empty for a run not saved).
    QString recordPath() const { return recordPath_; }
    void setRecordPath(const QString& path) { recordPath_ = path; }
    // Still training (or about to): its record is being written by the trainer.
    bool isLive() const
    {
        return !interrupted_ && (status_ == RunStatus::starting || status_ == RunStatus::running ||
                                 status_ == RunStatus::paused);
    }
    // Takes every recorded fact of `other` (the same run read again), keeping this
    // run's id, name, colour and record path; revision() keeps increasing.
    void replaceContents(const RunData& other);

    RunStatus status() const { return status_; }
    QString statusMessage() const { return statusMessage_; }
    std::int64_t plannedSteps() const { return plannedSteps_; }
    QString backend() const { return QString::fromStdString(record_.backend); }
    const std::vector<std::string>& backendVersions() const { return record_.versions.backend; }
    // How its products ran and why, as the run started ("hardware: AVX-512 BF16 via ...").
    QString arithmetic() const { return QString::fromStdString(record_.arithmetic.value_or("")); }
    // Its first word when it is "hardware" or "exact" (16-bit products); empty otherwise.
    QString arithmeticKind() const;
    // A device backend's bytes in use before the run placed anything (RunStartEvent).
    std::optional<std::uint64_t> deviceBeforeRun() const { return record_.memory.deviceBeforeRun; }
    // A PyTorch probe's record: the format its telemetry judged against ("fp16") and what the
    // training ran as ("fp32"); empty for the lab's own runs (RunStartEvent::judgedFormat).
    const std::string& judgedFormat() const { return record_.judgedFormat; }
    const std::string& sourceAsRun() const { return record_.sourceAsRun; }

    // The record, its series read first when this is a listing (see hasSeries).
    const RunRecord& record() const { return ensureSeries().record_; }
    // The series (the record's): the histogram steps' telemetry, the memory samples where
    // the bytes changed.
    const std::vector<StepEvent>& steps() const { return record().steps; }
    const std::vector<EvalEvent>& evals() const { return record().evals; }
    const std::vector<TelemetryEvent>& telemetry() const { return record().telemetry; }
    const std::vector<MemoryEvent>& memory() const { return record().memory.samples; }
    // Values the training logged of its own (a probe's probe.log), in the order logged.
    const std::vector<ScalarEvent>& scalars() const { return record().scalars; }
    const std::vector<SettingChangeEvent>& changes() const { return changes_; }
    // Changes asked for while the run went on and refused (nothing changed).
    const std::vector<ChangeRefusedEvent>& refusals() const { return refusals_; }

    std::int64_t skippedSteps() const { return skipped_; }
    // NaN before the first evaluation. Neither reads the series of a listing.
    double lastAccuracy() const;
    double lastTestLoss() const;   // the last evaluation's mean loss (an autoencoder's test MSE); NaN: none
    double bestAccuracy() const;
    double imagesPerSecond() const;       // over the run so far (or the final figure)
    double elapsedSeconds() const;        // sum of step times
    // The last sample's bytes with the run's peaks; reads the series of a listing.
    MemorySnapshot peakMemory() const;

    // Increases with every change; charts redraw only when it moved.
    std::uint64_t revision() const { return revision_; }

private:
    const RunData& ensureSeries() const;

    QString id_;
    QString name_;
    RunRecord record_;
    TrainSettings current_;   // the last change's settings, else the start's
    QColor color_;
    bool interrupted_ = false;
    QString recordPath_;
    RunStatus status_ = RunStatus::starting;
    QString statusMessage_;
    std::int64_t plannedSteps_ = 0;
    // The record's changes and refusals apart (a listing's too, whose record has no events).
    std::vector<SettingChangeEvent> changes_;
    std::vector<ChangeRefusedEvent> refusals_;
    std::int64_t skipped_ = 0;
    std::int64_t images_ = 0;
    double stepMs_ = 0.0;
    double finalImagesPerSecond_ = 0.0;
    std::uint64_t revision_ = 0;
    SeriesLoader loader_;   // set while the series are not here
    double listedLastAccuracy_ = std::numeric_limits<double>::quiet_NaN();
    double listedLastTestLoss_ = std::numeric_limits<double>::quiet_NaN();
    double listedBestAccuracy_ = std::numeric_limits<double>::quiet_NaN();
};

using RunPtr = std::shared_ptr<RunData>;
using ConstRunPtr = std::shared_ptr<const RunData>;

}  // namespace plab::ui
