// One training run as the controller and the worker thread share it: the commands the
// GUI sends (stop, pause, setting changes) before and after the engine's Trainer exists,
// and the mailbox that carries the trainer's events out in batches.
#pragma once

#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <QString>
#include <QVector>

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

    // ---- commands (GUI thread) ------------------------------------------------------
    void stop();
    void setPaused(bool paused);
    bool stopRequested() const;
    // Queues a change for the trainer (now, or as soon as it exists).
    void requestChange(const SettingsChange& change);

    // ---- the worker's side ---------------------------------------------------------
    // Connects the running trainer's control and replays the commands sent so far.
    void attach(TrainerControl* control);
    void detach();

    // Appends an event; returns true when the mailbox was empty (the GUI needs a nudge).
    bool post(const TrainerEvent& event);
    // Takes every event posted so far (GUI thread).
    QVector<TrainerEvent> takeEvents();

private:
    mutable std::mutex mutex_;
    TrainerControl* control_ = nullptr;
    bool stop_ = false;
    bool paused_ = false;
    SettingsChange pendingChange_;
    QVector<TrainerEvent> mailbox_;
};

}  // namespace plab::ui
