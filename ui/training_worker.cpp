// One run on the training thread: data, trainer, run record, events out.
#include "training_worker.h"

#include "files/output_paths.h"

#include "data/dataset.h"
#include "record/recorded_run.h"
#include "train/trainer.h"

#include <filesystem>
#include <utility>

namespace plab::ui {

namespace {

RunResult endedBeforeTraining(RunStatus status, std::string message)
{
    RunResult r;
    r.status = status;
    r.message = std::move(message);
    return r;
}

}  // namespace

void TrainingWorker::enqueue(std::shared_ptr<TrainingJob> job)
{
    {
        const std::lock_guard lock(mutex_);
        queue_.push_back(std::move(job));
    }
    // By name: a queued call that carries nothing (a functor would itself cross threads).
    QMetaObject::invokeMethod(this, "runNext", Qt::QueuedConnection);
}

std::vector<WorkerNotice> TrainingWorker::takeNotices()
{
    const std::lock_guard lock(mutex_);
    return std::exchange(notices_, {});
}

void TrainingWorker::notify(WorkerNotice notice)
{
    bool first = false;
    {
        const std::lock_guard lock(mutex_);
        first = notices_.empty();
        notices_.push_back(std::move(notice));
    }
    if (first) emit noticesPending();
}

void TrainingWorker::runNext()
{
    std::shared_ptr<TrainingJob> job;
    {
        const std::lock_guard lock(mutex_);
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
    }
    runJob(job);
}

void TrainingWorker::runJob(const std::shared_ptr<TrainingJob>& job)
{
    const QString id = job->runId;
    if (job->control->stopRequested()) {
        notify({WorkerNotice::Kind::finished, id, endedBeforeTraining(RunStatus::stopped, "stopped before it started"), false});
        return;
    }

    // Outputs first: weights or batches the settings name outside the runs
    // folder (a pasted or loaded configuration) must be writable, not a folder and not an
    // input, found now and not after the last step.
    const TrainSettings& settings = job->settings;
    try {
        checkOutputPaths({{"the run record", job->recordPath.toStdString()},
                          {"save_weights", settings.saveWeights},
                          {"write_batches", settings.writeBatches}},
                         {{"init_weights", settings.initWeights}, {"read_batches", settings.readBatches}});
    } catch (const std::exception& e) {
        notify({WorkerNotice::Kind::finished, id, endedBeforeTraining(RunStatus::failed, e.what()), false});
        return;
    }

    // Data next: a bad data folder is the user's to fix and is reported before any record exists.
    const std::filesystem::path dataDir = settings.dataDir.empty() ? defaultDataDir() : std::filesystem::path(settings.dataDir);
    DataSplit data;
    std::string notice;
    try {
        data = loadDataset(settings.dataset, dataDir, &notice);
    } catch (const std::exception& e) {
        notify({WorkerNotice::Kind::finished, id, endedBeforeTraining(RunStatus::failed, e.what()), false});
        return;
    }
    if (job->control->stopRequested()) {
        notify({WorkerNotice::Kind::finished, id, endedBeforeTraining(RunStatus::stopped, "stopped before it started"), false});
        return;
    }

    auto observer = [&](const TrainerEvent& e) {
        if (job->post(e)) notify({WorkerNotice::Kind::eventsPending, id});
    };
    std::unique_ptr<RecordedRun> run;
    try {
        const std::filesystem::path recordPath = job->recordPath.toStdString();
        run = std::make_unique<RecordedRun>(settings, data, recordPath, job->runName.toStdString(), observer,
                                            job->makeBackend, job->control);
        if (recordPath.has_parent_path()) std::filesystem::create_directories(recordPath.parent_path());
    } catch (const std::exception& e) {
        notify({WorkerNotice::Kind::finished, id, endedBeforeTraining(RunStatus::failed, e.what()), false});
        return;
    }

    notify({WorkerNotice::Kind::started, id});
    if (!notice.empty() && job->post(StatusEvent{RunStatus::starting, 0, notice}))
        notify({WorkerNotice::Kind::eventsPending, id});
    const RunResult result = run->run();
    notify({WorkerNotice::Kind::finished, id, result, true});
}

}  // namespace plab::ui
