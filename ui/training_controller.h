// The one object through which the UI drives the engine. It owns the training thread
// (a TrainingWorker moved onto a QThread), has command methods (start, pause, resume,
// stop, requestChange) and signals that carry values.
//
// Policies:
// - One run trains at a time. start() while a run is live stops that run (its record is
//   kept, with status "stopped") and queues the new one behind it on the same thread;
//   the window asks the user before doing so.
// - Every start() ends with exactly one runFinished(id, result). The events of a run
//   that a newer start() superseded are dropped from then on (never shown); only its
//   runStarted and runFinished are still delivered, so that it shows in the list (the
//   run store then reloads it from its record).
// - Events are coalesced: the worker drops them into the job's mailbox and nudges the
//   GUI thread once (a notice, see TrainingWorker); the controller drains the mailbox at most every batchInterval()
//   (40 ms, ~25 batches a second) and emits them as one eventsReceived batch.
// - Every run saves its final weights as <runs folder>/<id>.safetensors (its settings'
//   save_weights), unless its settings name a file outside the runs folder.
#pragma once

#include "trainer_metatypes.h"
#include "training_job.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QThread>
#include <QTimer>

#include <functional>
#include <memory>

namespace plab::ui {

class TrainingWorker;

class TrainingController : public QObject {
    Q_OBJECT
public:
    enum class State { idle, loading, training, paused, stopping };
    Q_ENUM(State)

    // Records go to runsDir/<run id>.json.
    explicit TrainingController(QString runsDir, QObject* parent = nullptr);
    ~TrainingController() override;   // stops every run and waits for the thread

    QString runsDir() const { return runsDir_; }
    void setRunsDir(const QString& dir) { runsDir_ = dir; }

    // Queues a run and returns its id (the record's file stem). The settings are used as
    // given; an empty dataDir means the default data folder.
    QString start(const TrainSettings& settings, const QString& runName);
    void pause();
    void resume();
    void stop();
    // Sends a change to the live run (applied before its next step). Returns an error
    // sentence, and sends nothing, when a value is impossible or no run is live.
    [[nodiscard]] QString requestChange(const SettingsChange& change);
    // Stops every run and waits for the training thread to end (closing the window).
    void shutdown();

    State state() const { return state_; }
    bool isLive() const { return state_ != State::idle; }
    QString currentRunId() const;
    int batchInterval() const { return batchIntervalMs_; }
    void setBatchInterval(int ms) { batchIntervalMs_ = ms; }

    // A fresh run id, "run-20240131-142501" (with "-2", "-3"... when taken in `folder`),
    // reserved across processes: its record's lock is created exclusively (record_lock.h)
    // and given to `lock` (null when the folder takes no lock; the id is then only checked
    // against the records there and `taken`, this controller's own jobs). Two app
    // instances starting runs at once get two ids.
    static QString newRunId(const QString& folder, std::shared_ptr<RecordLock>* lock = nullptr,
                            const std::function<bool(const QString&)>& taken = {});

    // Tests: the runs started from now on train on backends this makes (called on the
    // training thread), e.g. one that refuses a recipe.
    void setBackendFactory(Trainer::BackendFactory make) { makeBackend_ = std::move(make); }

signals:
    void runStarted(const QString& runId, const plab::TrainSettings& settings, const QString& runName,
                    const QString& recordPath);
    void eventsReceived(const QString& runId, const QVector<plab::TrainerEvent>& events);
    void runFinished(const QString& runId, const plab::RunResult& result);
    // The current run could not start or failed: one sentence for people.
    void failed(const QString& runId, const QString& sentence);
    void stateChanged(plab::ui::TrainingController::State state);

private:
    void onWorkerNotices();
    void onJobStarted(const QString& runId);
    void onEventsPending(const QString& runId);
    void onJobFinished(const QString& runId, const plab::RunResult& result, bool trained);
    void drainCurrent();
    void setState(State s);

    QString runsDir_;
    QThread thread_;
    TrainingWorker* worker_ = nullptr;
    std::shared_ptr<TrainingJob> current_;
    QHash<QString, std::shared_ptr<TrainingJob>> jobs_;   // queued or running, until finished
    QTimer drainTimer_;
    QElapsedTimer sinceDrain_;
    int batchIntervalMs_ = 40;
    Trainer::BackendFactory makeBackend_;
    State state_ = State::idle;
};

}  // namespace plab::ui
