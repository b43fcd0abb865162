// Runs a lesson's runs one after another through the TrainingController: starts the
// first, starts the next when the controller reports the previous one finished, and says
// when all have finished. Stopping ends the current run and starts no more.
#pragma once

#include "lessons/lesson_files.h"
#include "trainer_metatypes.h"

#include <QObject>
#include <QStringList>

namespace plab::ui {

class TrainingController;

class LessonRunner : public QObject {
    Q_OBJECT
public:
    explicit LessonRunner(TrainingController* controller, QObject* parent = nullptr);

    // Starts the lesson's runs (an empty data_dir in a run's settings becomes dataDir when
    // that is given). A lesson already running is stopped first.
    void start(const Lesson& lesson, const QString& dataDir = {});
    void stop();
    bool isRunning() const { return next_ >= 0; }
    // Ids of the runs this lesson started so far, in order.
    QStringList runIds() const { return runIds_; }
    bool ownsRun(const QString& runId) const { return runIds_.contains(runId); }
    // The record file of each run started so far (same order as runIds()).
    QStringList recordPaths() const { return recordPaths_; }

signals:
    void runStarted(int index, const QString& runId);
    void runFinished(int index, const QString& runId, const plab::RunResult& result);
    void finished(bool stopped);   // every run finished, or the lesson was stopped

private:
    void startNext();
    void onControllerRunFinished(const QString& runId, const plab::RunResult& result);

    TrainingController* controller_;
    Lesson lesson_;
    QString dataDir_;
    QStringList runIds_;
    QStringList recordPaths_;
    int next_ = -1;   // index of the next run to start; -1 when not running
};

}  // namespace plab::ui
