// Commands and the event mailbox of one training run, shared by the GUI and worker threads.
#include "training_job.h"

namespace plab::ui {

void TrainingJob::stop()
{
    std::lock_guard lock(mutex_);
    stop_ = true;
    if (control_) control_->stop();
}

void TrainingJob::setPaused(bool paused)
{
    std::lock_guard lock(mutex_);
    paused_ = paused;
    if (!control_) return;
    if (paused)
        control_->pause();
    else
        control_->resume();
}

bool TrainingJob::stopRequested() const
{
    std::lock_guard lock(mutex_);
    return stop_;
}

void TrainingJob::requestChange(const SettingsChange& change)
{
    std::lock_guard lock(mutex_);
    if (control_) {
        control_->requestChange(change);   // already validated by the controller
        return;
    }
    if (change.recipe) pendingChange_.recipe = change.recipe;
    if (change.batch) pendingChange_.batch = change.batch;
    if (change.lr) pendingChange_.lr = change.lr;
}

void TrainingJob::attach(TrainerControl* control)
{
    std::lock_guard lock(mutex_);
    control_ = control;
    if (stop_) control_->stop();
    if (paused_) control_->pause();
    if (!pendingChange_.empty()) control_->requestChange(pendingChange_);
    pendingChange_ = {};
}

void TrainingJob::detach()
{
    std::lock_guard lock(mutex_);
    control_ = nullptr;
}

bool TrainingJob::post(const TrainerEvent& event)
{
    std::lock_guard lock(mutex_);
    const bool wasEmpty = mailbox_.isEmpty();
    mailbox_.push_back(event);
    return wasEmpty;
}

QVector<TrainerEvent> TrainingJob::takeEvents()
{
    std::lock_guard lock(mutex_);
    QVector<TrainerEvent> out;
    out.swap(mailbox_);
    return out;
}

}  // namespace plab::ui
