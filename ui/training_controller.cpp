// The controller: commands to the training thread, coalesced events back.
#include "training_controller.h"

#include "training_worker.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>

namespace plab::ui {

void registerTrainerMetaTypes()
{
    qRegisterMetaType<plab::TrainerEvent>();
    qRegisterMetaType<QVector<plab::TrainerEvent>>();
    qRegisterMetaType<plab::RunResult>();
    qRegisterMetaType<plab::TrainSettings>();
    qRegisterMetaType<plab::SettingsChange>();
}

TrainingController::TrainingController(QString runsDir, QObject* parent)
    : QObject(parent), runsDir_(std::move(runsDir))
{
    registerTrainerMetaTypes();
    worker_ = new TrainingWorker;   // no parent: it moves to the thread, deleted after it ends
    worker_->moveToThread(&thread_);
    connect(worker_, &TrainingWorker::noticesPending, this, &TrainingController::onWorkerNotices);
    thread_.setObjectName(QStringLiteral("training"));
    thread_.start();

    drainTimer_.setSingleShot(true);
    connect(&drainTimer_, &QTimer::timeout, this, &TrainingController::drainCurrent);
    sinceDrain_.start();
}

TrainingController::~TrainingController()
{
    shutdown();
    delete worker_;
}

void TrainingController::shutdown()
{
    for (const auto& job : std::as_const(jobs_)) job->control->stop();
    if (thread_.isRunning()) {
        thread_.quit();
        thread_.wait();
    }
}

QString TrainingController::newRunId(const QString& folder, std::shared_ptr<RecordLock>* lock,
                                     const std::function<bool(const QString&)>& taken)
{
    const QString base = QStringLiteral("run-") + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QDir().mkpath(folder);
    for (int n = 1;; ++n) {
        const QString id = n == 1 ? base : base + QStringLiteral("-%1").arg(n);
        const QString record = QDir(folder).filePath(id + QStringLiteral(".json"));
        // A weights file of that name is taken too: the run's own goes there, and Delete moves it.
        if (QFileInfo::exists(record) || QFileInfo::exists(QDir(folder).filePath(id + QStringLiteral(".safetensors"))) ||
            (taken && taken(id)))
            continue;
        if (!lock) return id;
        RecordLock::Outcome outcome{};
        std::unique_ptr<RecordLock> taken = RecordLock::acquire(record.toStdString(), &outcome);
        if (outcome == RecordLock::Outcome::held) continue;   // another process is starting this id
        // Created: the record may have appeared between the check and the lock (its writer
        // then released the lock): the id is taken after all.
        if (taken && QFileInfo::exists(record)) continue;
        *lock = std::move(taken);
        return id;
    }
}

QString TrainingController::currentRunId() const
{
    return current_ ? current_->runId : QString();
}

QString TrainingController::start(const TrainSettings& settings, const QString& runName)
{
    if (current_) current_->control->stop();   // superseded: its record is kept, its events dropped from now on

    std::shared_ptr<RecordLock> lock;
    const QString id = newRunId(runsDir_, &lock, [this](const QString& candidate) { return jobs_.contains(candidate); });
    const QString recordPath = QDir(runsDir_).filePath(id + QStringLiteral(".json"));
    // Every run saves its final weights beside its record (File > Export Weights copies
    // them), unless its settings name a file outside the runs folder. A path inside the
    // runs folder is another run's (a pasted or reopened configuration): never reused.
    TrainSettings runSettings = settings;
    const QString named = QString::fromStdString(settings.saveWeights);
    if (named.isEmpty() || QFileInfo(named).absoluteDir() == QDir(runsDir_))
        runSettings.saveWeights = QDir(runsDir_).filePath(id + QStringLiteral(".safetensors")).toStdString();
    auto job = std::make_shared<TrainingJob>(id, runName.isEmpty() ? id : runName, runSettings, recordPath);
    job->makeBackend = makeBackend_;
    job->recordLock = std::move(lock);
    jobs_.insert(id, job);
    current_ = job;
    drainTimer_.stop();
    setState(State::loading);
    worker_->enqueue(job);
    return id;
}

void TrainingController::pause()
{
    if (state_ != State::training && state_ != State::loading) return;
    current_->control->pause();
    setState(State::paused);
}

void TrainingController::resume()
{
    if (state_ != State::paused) return;
    current_->control->resume();
    setState(State::training);
}

void TrainingController::stop()
{
    if (!current_ || state_ == State::idle) return;
    current_->control->stop();
    setState(State::stopping);
}

QString TrainingController::requestChange(const SettingsChange& change)
{
    if (!current_ || state_ == State::idle || state_ == State::stopping)
        return tr("No run is training; the setting applies to the next run.");
    if (change.empty()) return {};
    // Checked once, by the run's own rules (the recipe's, and what its backend can run
    // once the trainer knows it); a refusal is also in the run's record.
    return QString::fromStdString(current_->control->requestChange(change));
}

void TrainingController::setState(State s)
{
    if (s == state_) return;
    state_ = s;
    emit stateChanged(s);
}

void TrainingController::onWorkerNotices()
{
    for (const WorkerNotice& n : worker_->takeNotices()) {
        switch (n.kind) {
        case WorkerNotice::Kind::started: onJobStarted(n.runId); break;
        case WorkerNotice::Kind::eventsPending: onEventsPending(n.runId); break;
        case WorkerNotice::Kind::finished: onJobFinished(n.runId, n.result, n.trained); break;
        }
    }
}

void TrainingController::onJobStarted(const QString& runId)
{
    // A superseded run that got this far has a record too: it is announced (its events
    // are not), so that the list shows it.
    const auto job = jobs_.value(runId);
    if (!job) return;
    if (job == current_ && state_ == State::loading) setState(State::training);
    emit runStarted(runId, job->settings, job->runName, job->recordPath);
}

void TrainingController::onEventsPending(const QString& runId)
{
    const auto job = jobs_.value(runId);
    if (!job) return;
    if (job != current_) {
        job->takeEvents();   // superseded: dropped, never shown
        return;
    }
    if (drainTimer_.isActive()) return;
    const qint64 wait = batchIntervalMs_ - sinceDrain_.elapsed();
    drainTimer_.start(static_cast<int>(std::max<qint64>(0, wait)));
}

void TrainingController::drainCurrent()
{
    if (!current_) return;
    QVector<TrainerEvent> events = current_->takeEvents();
    sinceDrain_.restart();
    if (!events.isEmpty()) emit eventsReceived(current_->runId, events);
}

void TrainingController::onJobFinished(const QString& runId, const RunResult& result, bool trained)
{
    const auto job = jobs_.take(runId);
    if (!job) return;
    if (job != current_) {
        job->takeEvents();
        emit runFinished(runId, result);
        return;
    }
    drainTimer_.stop();
    drainCurrent();   // what the run said before it ended, then the end
    current_.reset();
    setState(State::idle);
    if (result.status == RunStatus::failed) {
        const QString sentence = QString::fromStdString(result.message);
        emit failed(runId, trained ? tr("The run failed: %1").arg(sentence) : sentence);
    }
    emit runFinished(runId, result);
}

}  // namespace plab::ui
