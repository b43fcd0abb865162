// Running a lesson's runs in sequence (see lesson_runner.h).
#include "lessons/lesson_runner.h"

#include "training_controller.h"

namespace plab::ui {

LessonRunner::LessonRunner(TrainingController* controller, QObject* parent) : QObject(parent), controller_(controller)
{
    connect(controller_, &TrainingController::runFinished, this, &LessonRunner::onControllerRunFinished);
    connect(controller_, &TrainingController::runStarted, this,
            [this](const QString& runId, const TrainSettings&, const QString&, const QString& recordPath) {
                const auto index = runIds_.indexOf(runId);
                if (index >= 0 && index < recordPaths_.size()) recordPaths_[index] = recordPath;
            });
}

void LessonRunner::start(const Lesson& lesson, const QString& dataDir)
{
    if (isRunning()) stop();
    lesson_ = lesson;
    dataDir_ = dataDir;
    runIds_.clear();
    recordPaths_.clear();
    next_ = 0;
    startNext();
}

void LessonRunner::stop()
{
    if (!isRunning()) return;
    next_ = -1;
    if (controller_->isLive() && ownsRun(controller_->currentRunId())) controller_->stop();
    emit finished(true);
}

void LessonRunner::startNext()
{
    const int index = next_;
    const LessonRun& run = lesson_.runs[static_cast<std::size_t>(index)];
    TrainSettings settings = run.settings;
    if (settings.dataDir.empty() && !dataDir_.isEmpty()) settings.dataDir = dataDir_.toStdString();
    ++next_;
    runIds_ << QString();
    recordPaths_ << QString();
    const QString id = controller_->start(settings, QString::fromStdString(run.name));
    runIds_.back() = id;
    emit runStarted(index, id);
}

void LessonRunner::onControllerRunFinished(const QString& runId, const RunResult& result)
{
    const int index = int(runIds_.indexOf(runId));
    if (index < 0 || !isRunning() || index != runIds_.size() - 1) return;   // not the lesson's current run
    emit runFinished(index, runId, result);
    if (static_cast<std::size_t>(next_) < lesson_.runs.size()) {
        startNext();
        return;
    }
    next_ = -1;
    emit finished(false);
}

}  // namespace plab::ui
