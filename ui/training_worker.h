// The object that lives on the controller's training thread: loads a run's data, runs the
// engine's Trainer, writes the run record as it goes, and reports back by queued signals.
// Jobs run one after another, in the order the controller queued them.
#pragma once

#include "trainer_metatypes.h"
#include "training_job.h"

#include <QObject>

#include <memory>

namespace plab::ui {

class TrainingWorker : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    // Runs on the worker thread; returns when the run ends (completed, stopped, failed).
    void runJob(const std::shared_ptr<TrainingJob>& job);

signals:
    // The data is loaded, the trainer exists and the record file has been written once.
    void jobStarted(const QString& runId);
    // The job's mailbox went from empty to non-empty.
    void eventsPending(const QString& runId);
    // `trained`: the trainer ran (false: the run ended before training began).
    void jobFinished(const QString& runId, const plab::RunResult& result, bool trained);
};

}  // namespace plab::ui
