// The object that lives on the controller's training thread: loads a run's data, runs the
// engine's Trainer, writes the run record as it goes, and reports back by notices.
// Jobs run one after another, in the order the controller queued them.
#pragma once

#include "trainer_metatypes.h"
#include "training_job.h"

#include <QObject>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace plab::ui {

// What the worker tells the controller about a job, in the order it happened.
struct WorkerNotice {
    enum class Kind {
        started,         // the data is loaded, the trainer exists, the record was written once
        eventsPending,   // the job's mailbox went from empty to non-empty
        finished,        // the run ended; `trained`: the trainer ran (false: it ended before)
    };
    Kind kind;
    QString runId;
    RunResult result{};
    bool trained = false;
};

// Jobs and notices cross between the threads through this object's mutex, never inside
// a queued call or a signal's arguments: Qt orders a posted call before its delivery
// with locks of its own, which ThreadSanitizer does not see (scripts/tsan.sh), and a
// plain mutex says the same to the compiler and to readers. The queued calls carry
// nothing.
class TrainingWorker : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    // Any thread: queues a job; the worker thread runs the jobs one after another, in
    // the order they were queued.
    void enqueue(std::shared_ptr<TrainingJob> job);

    // Any thread (the controller's, after noticesPending): every notice since the last
    // call, oldest first.
    std::vector<WorkerNotice> takeNotices();

signals:
    // Notices went from none to some.
    void noticesPending();

private:
    // Worker thread: runs the oldest queued job (one per enqueue).
    Q_INVOKABLE void runNext();
    // Returns when the run ends (completed, stopped, failed).
    void runJob(const std::shared_ptr<TrainingJob>& job);
    void notify(WorkerNotice notice);

    std::mutex mutex_;
    std::deque<std::shared_ptr<TrainingJob>> queue_;
    std::vector<WorkerNotice> notices_;
};

}  // namespace plab::ui
