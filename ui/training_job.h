// One training run as the controller and the worker thread share it: the run's command
// object (the engine's TrainerControl, which the trainer is given, so stop, pause and
// setting changes live in one place from the start) and the mailbox that carries the
// trainer's events out in batches.
#pragma once

#include "files/record_lock.h"
#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <QString>
#include <QVector>

#include <memory>
#include <mutex>

namespace plab::ui {

class TrainingJob {
public:
    TrainingJob(QString runId, QString runName, TrainSettings settings, QString recordPath)
        : runId(std::move(runId)), runName(std::move(runName)), settings(std::move(settings)),
          recordPath(std::move(recordPath)) {}

    const QString runId;
    const QString runName;
    const TrainSettings settings;
    const QString recordPath;
    // Commands from the GUI thread, before and while the trainer runs.
    const std::shared_ptr<TrainerControl> control = std::make_shared<TrainerControl>();
    // Makes the run's backend instead of the one settings.backend names (tests); called
    // on the worker thread.
    Trainer::BackendFactory makeBackend;
    // The record's lock (record_lock.h), held from the id's reservation until the job is
    // gone (after its record is complete); null when the folder could not take one.
    std::shared_ptr<RecordLock> recordLock;

    // Appends an event; returns true when the mailbox was empty (the GUI needs a nudge).
    bool post(const TrainerEvent& event);
    // Takes every event posted so far (GUI thread).
    QVector<TrainerEvent> takeEvents();

private:
    std::mutex mutex_;
    QVector<TrainerEvent> mailbox_;
};

}  // namespace plab::ui
