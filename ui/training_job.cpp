// The event mailbox of one training run, shared by the GUI and worker threads.
#include "training_job.h"

namespace plab::ui {

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
