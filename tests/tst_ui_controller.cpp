// Tests of the TrainingController: a run starts, streams coalesced events and finishes;
// pause / resume / stop and closing (destroying the controller) mid-run end the worker
// and keep a valid run record; setting changes sent while a run trains or is paused
// reach the steps after them; a superseded run's events are dropped; impossible setting
// changes and bad data folders come back as one sentence. scripts/tsan.sh runs this suite
// under ThreadSanitizer.

#include "record/record_writer.h"
#include "test_support.h"
#include "training_controller.h"

#include <QDir>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <QFileInfo>

#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

using namespace plab;
using namespace plab::ui;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Events the controller delivered, per run, in order.
struct EventLog {
    QHash<QString, QVector<TrainerEvent>> events;
    QHash<QString, int> batches;

    void attach(TrainingController& c)
    {
        QObject::connect(&c, &TrainingController::eventsReceived, [this](const QString& id, const QVector<TrainerEvent>& batch) {
            events[id] += batch;
            ++batches[id];
        });
    }
    template <class T>
    int count(const QString& id) const
    {
        int n = 0;
        for (const auto& e : events.value(id)) n += std::holds_alternative<T>(e) ? 1 : 0;
        return n;
    }
    bool hasStatus(const QString& id, RunStatus status) const
    {
        for (const auto& e : events.value(id))
            if (const auto* s = std::get_if<StatusEvent>(&e); s && s->status == status) return true;
        return false;
    }
};

RunResult resultOf(const QSignalSpy& finished, const QString& id)
{
    for (const auto& args : finished)
        if (args.at(0).toString() == id) return args.at(1).value<RunResult>();
    return {};
}

}  // namespace

class TestUiController : public QObject {
    Q_OBJECT
    testing::TempDir dir_;

    TrainSettings settings(std::int64_t maxSteps, int epochs = 1) const
    {
        return settingsFromJson(json{{"widths", {4, 8}}, {"batch", 16}, {"epochs", epochs}, {"max_steps", maxSteps},
                                     {"threads", 1}, {"histogram_every", 5}, {"data_dir", dir_.path().string()}},
                                "test");
    }
    QString runsDir() const { return QString::fromStdString((dir_.path() / "runs").string()); }

private slots:
    void initTestCase() { testing::writeSyntheticDataset(dir_.path() / "mnist", 480, 200, 7); }

    // Issue 37: two app instances starting runs in one runs folder at the same moment keep
    // both runs (their ids were timestamps checked against records that appear ~0.5 s
    // later: 5 of 6 such pairs left one record). Ten tries of two processes at once.
    void twoInstancesKeepBothRuns()
    {
        const QString runs = QString::fromStdString((dir_.path() / "runs-two").string());
        const QString data = QString::fromStdString(dir_.path().string());
        QStringList ids;
        for (int attempt = 0; attempt < 10; ++attempt) {
            QProcess a, b;
            for (QProcess* p : {&a, &b}) p->start(QCoreApplication::applicationFilePath(), {"--one-run", runs, data});
            for (QProcess* p : {&a, &b}) {
                QVERIFY(p->waitForFinished(120000));
                QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
                ids << QString::fromUtf8(p->readAllStandardOutput()).trimmed();
            }
        }
        QCOMPARE(QSet<QString>(ids.begin(), ids.end()).size(), 20);
        const QStringList records = QDir(runs).entryList({QStringLiteral("*.json")}, QDir::Files);
        QCOMPARE(records.size(), 20);
        for (const QString& id : ids) {
            const json record = loadRunRecordDocument((std::filesystem::path(runs.toStdString()) / (id.toStdString() + ".json")));
            QCOMPARE(record["summary"]["status"].get<std::string>(), std::string("completed"));
        }
        // No lock is left behind once the runs have ended.
        QVERIFY(QDir(runs).entryList({QStringLiteral(".*.lock")}, QDir::Files | QDir::Hidden).isEmpty());
    }

    void runStreamsCoalescedEventsAndFinishes()
    {
        TrainingController c(runsDir());
        EventLog log;
        log.attach(c);
        QSignalSpy started(&c, &TrainingController::runStarted);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        const QString id = c.start(settings(20), QStringLiteral("short"));
        QVERIFY(!id.isEmpty());
        QCOMPARE(c.currentRunId(), id);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(started.count(), 1);
        QCOMPARE(started.at(0).at(0).toString(), id);
        const RunResult r = resultOf(finished, id);
        QCOMPARE(r.status, RunStatus::completed);
        QCOMPARE(r.steps, 20);
        QCOMPARE(log.count<StepEvent>(id), 20);
        QVERIFY(log.count<EvalEvent>(id) >= 1);
        QVERIFY(log.count<RunStartEvent>(id) == 1);
        // Coalesced: fewer batches than events.
        QVERIFY2(log.batches[id] < log.events[id].size(),
                 qPrintable(QStringLiteral("%1 batches for %2 events").arg(log.batches[id]).arg(log.events[id].size())));
        QCOMPARE(c.state(), TrainingController::State::idle);

        const json record = loadRunRecordDocument((dir_.path() / "runs" / (id.toStdString() + ".json")));
        QCOMPARE(record["summary"]["status"].get<std::string>(), std::string("completed"));
        QCOMPARE(record["name"].get<std::string>(), std::string("short"));
        QCOMPARE(record["steps"].size(), std::size_t(20));
    }

    void pauseResumeStopKeepsTheRecord()
    {
        TrainingController c(runsDir());
        EventLog log;
        log.attach(c);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        QSignalSpy states(&c, &TrainingController::stateChanged);
        const QString id = c.start(settings(0, 1000), QStringLiteral("long"));
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(id) >= 3, 30000);

        c.pause();
        QCOMPARE(c.state(), TrainingController::State::paused);
        QTRY_VERIFY_WITH_TIMEOUT(log.hasStatus(id, RunStatus::paused), 10000);
        c.resume();
        QCOMPARE(c.state(), TrainingController::State::training);
        QTRY_VERIFY_WITH_TIMEOUT(log.hasStatus(id, RunStatus::running) && log.count<StepEvent>(id) >= 6, 10000);

        c.stop();
        QCOMPARE(c.state(), TrainingController::State::stopping);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
        QCOMPARE(resultOf(finished, id).status, RunStatus::stopped);
        QCOMPARE(c.state(), TrainingController::State::idle);

        const json record = loadRunRecordDocument(dir_.path() / "runs" / (id.toStdString() + ".json"));
        QCOMPARE(record["summary"]["status"].get<std::string>(), std::string("stopped"));
        QVERIFY(record["steps"].size() >= 6);
    }

    // Issue 11: a record that could not be written (full disk) threw from the trainer's sink,
    // then again from its failure event, and Qt terminated the app (exit 134). The run ends
    // as failed with the reason, the controller stays up and can start the next run.
    void unwritableRecordFailsTheRunNotTheApp()
    {
        const std::filesystem::path gone = dir_.path() / "runs-gone";
        TrainingController c(QString::fromStdString(gone.string()));
        EventLog log;
        log.attach(c);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        const QString id = c.start(settings(0, 1000), QStringLiteral("doomed"));
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(id) >= 3 && std::filesystem::exists(gone), 30000);
        std::filesystem::remove_all(gone);   // every later write of the record fails, as on a full disk
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        const RunResult r = resultOf(finished, id);
        QCOMPARE(r.status, RunStatus::failed);
        QVERIFY2(QString::fromStdString(r.message).contains(QStringLiteral("could not be written")), r.message.c_str());
        QVERIFY(log.hasStatus(id, RunStatus::failed));   // shown, as any failure
        QCOMPARE(c.state(), TrainingController::State::idle);
        QVERIFY(!c.start(settings(5), QStringLiteral("next")).isEmpty());   // still usable
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
    }

    void closingMidRunEndsTheWorkerAndKeepsTheRecord()
    {
        auto c = std::make_unique<TrainingController>(runsDir());
        EventLog log;
        log.attach(*c);
        const QString id = c->start(settings(0, 1000), QStringLiteral("closed"));
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(id) >= 2, 30000);
        c.reset();   // what closing the window does: stop, wait for the thread
        const json record = loadRunRecordDocument(dir_.path() / "runs" / (id.toStdString() + ".json"));
        QCOMPARE(record["summary"]["status"].get<std::string>(), std::string("stopped"));
        QVERIFY(record["steps"].size() >= 2);
    }

    void supersededRunsEventsAreDropped()
    {
        TrainingController c(runsDir());
        EventLog log;
        log.attach(c);
        QSignalSpy started(&c, &TrainingController::runStarted);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        const QString first = c.start(settings(0, 1000), QStringLiteral("first"));
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(first) >= 2, 30000);
        const int firstEventsBefore = log.events[first].size();

        const QString second = c.start(settings(10), QStringLiteral("second"));
        QVERIFY(second != first);
        QCOMPARE(c.currentRunId(), second);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
        QCOMPARE(finished.at(0).at(0).toString(), first);   // the old one ends first
        QCOMPARE(resultOf(finished, first).status, RunStatus::stopped);
        QCOMPARE(resultOf(finished, second).status, RunStatus::completed);
        QCOMPARE(log.events[first].size(), firstEventsBefore);   // nothing after it was superseded
        QCOMPARE(log.count<StepEvent>(second), 10);
        QCOMPARE(started.count(), 2);
        // Its record is kept, ended as stopped.
        const json record = loadRunRecordDocument(dir_.path() / "runs" / (first.toStdString() + ".json"));
        QCOMPARE(record["summary"]["status"].get<std::string>(), std::string("stopped"));
    }

    void impossibleChangesAreRefused()
    {
        TrainingController c(runsDir());
        EventLog log;
        log.attach(c);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        QVERIFY(!c.requestChange(SettingsChange{std::nullopt, 8, std::nullopt}).isEmpty());   // nothing runs

        const QString id = c.start(settings(0, 1000), QStringLiteral("changes"));
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(id) >= 1, 30000);
        QVERIFY(!c.requestChange(SettingsChange{std::nullopt, 0, std::nullopt}).isEmpty());
        QVERIFY(!c.requestChange(SettingsChange{std::nullopt, std::nullopt, -1.0}).isEmpty());
        PrecisionRecipe bad = *PrecisionRecipe::fromPreset("amp-fp16");
        bad.lossScaling.backoffFactor = 1.5;
        const QString sentence = c.requestChange(SettingsChange{bad, std::nullopt, std::nullopt});
        QVERIFY2(sentence.contains(QStringLiteral("backoff")), qPrintable(sentence));

        PrecisionRecipe good = *PrecisionRecipe::fromPreset("amp-fp16");
        QCOMPARE(c.requestChange(SettingsChange{good, 8, 5e-4}), QString());
        QTRY_VERIFY_WITH_TIMEOUT(log.count<SettingChangeEvent>(id) == 1, 10000);
        c.stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    }

    // Issue 11 (the ThreadSanitizer pass, scripts/tsan.sh): every command the window sends
    // while a run trains, on one run: pause, a change while paused, resume, changes while
    // training (the learning rate, the recipe with a static loss scale, one technique),
    // stop; then runs closed (the controller destroyed) while training with a change on
    // its way, and while paused. Two threads: the CPU backend's pool works beside the
    // trainer's thread and the GUI thread.
    void everyCommandWhileTrainingReachesTheRun()
    {
        TrainSettings s = settings(0, 1000);
        s.threads = 2;
        const double startLr = s.optimizer.lr;
        TrainingController c(runsDir());
        EventLog log;
        log.attach(c);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        const QString id = c.start(s, QStringLiteral("commands"));
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(id) >= 3, 60000);

        // A change sent while paused waits for the resume and applies before the next step.
        c.pause();
        QTRY_VERIFY_WITH_TIMEOUT(log.hasStatus(id, RunStatus::paused), 60000);
        const double pausedLr = startLr * 2;
        QCOMPARE(c.requestChange(SettingsChange{std::nullopt, std::nullopt, pausedLr}), QString());
        c.resume();
        QCOMPARE(c.state(), TrainingController::State::training);
        QTRY_VERIFY_WITH_TIMEOUT(log.count<SettingChangeEvent>(id) == 1, 60000);

        // While training: a new recipe (fp16 compute, a static scale of 1024) with a new rate.
        PrecisionRecipe amp = *PrecisionRecipe::fromPreset("amp-fp16");
        amp.lossScaling = LossScaling::fixedScale(1024);
        const double ampLr = startLr / 2;
        QCOMPARE(c.requestChange(SettingsChange{amp, std::nullopt, ampLr}), QString());
        QTRY_VERIFY_WITH_TIMEOUT(log.count<SettingChangeEvent>(id) == 2, 60000);
        // Then one technique off: softmax and loss in fp16.
        PrecisionRecipe noFp32Loss = amp;
        noFp32Loss.fp32SensitiveOps = false;
        QCOMPARE(c.requestChange(SettingsChange{noFp32Loss, std::nullopt, std::nullopt}), QString());
        QTRY_VERIFY_WITH_TIMEOUT(log.count<SettingChangeEvent>(id) == 3, 60000);
        const int stepsBeforeStop = log.count<StepEvent>(id);
        QTRY_VERIFY_WITH_TIMEOUT(log.count<StepEvent>(id) >= stepsBeforeStop + 2, 60000);

        c.stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(resultOf(finished, id).status, RunStatus::stopped);
        QCOMPARE(c.state(), TrainingController::State::idle);

        // Each change reached the steps that followed it, and only those; the one sent
        // while paused came before the first step after the resume.
        QStringList changes;
        int phase = 0;   // settings changes seen so far
        bool paused = false;
        for (const TrainerEvent& e : log.events.value(id)) {
            if (const auto* change = std::get_if<SettingChangeEvent>(&e)) {
                changes << QString::fromStdString(change->description);
                ++phase;
            } else if (const auto* step = std::get_if<StepEvent>(&e)) {
                QVERIFY2(!(paused && phase == 0), "a step ran between the pause and the change sent while paused");
                QCOMPARE(step->lr, phase == 0 ? startLr : phase == 1 ? pausedLr : ampLr);
                if (phase >= 2) QCOMPARE(step->lossScale, 1024.0);
            } else if (const auto* status = std::get_if<StatusEvent>(&e)) {
                paused = paused || status->status == RunStatus::paused;
            }
        }
        QCOMPARE(changes.size(), 3);
        QVERIFY2(changes[0].startsWith(QStringLiteral("lr ")), qPrintable(changes[0]));
        QVERIFY2(changes[1].contains(QStringLiteral("compute fp32 -> fp16")) &&
                     changes[1].contains(QStringLiteral("loss scaling off -> static 1024")),
                 qPrintable(changes[1]));
        QVERIFY2(changes[2].contains(QStringLiteral("fp32 softmax/loss on -> off")), qPrintable(changes[2]));
        const json record = loadRunRecordDocument(dir_.path() / "runs" / (id.toStdString() + ".json"));
        QCOMPARE(record["summary"]["status"].get<std::string>(), std::string("stopped"));
        const json& lastStep = record["steps"].back();
        QCOMPARE(lastStep["loss_scale"].get<double>(), 1024.0);
        QCOMPARE(lastStep["lr"].get<double>(), ampLr);
        int recordedChanges = 0;
        json lastSettings;
        for (const json& e : record["events"])
            if (e["type"] == "setting_change") {
                ++recordedChanges;
                lastSettings = e["settings"];
            }
        QCOMPARE(recordedChanges, 3);
        QCOMPARE(lastSettings["compute"].get<std::string>(), std::string("fp16"));
        QCOMPARE(lastSettings["loss_scale"].get<std::string>(), std::string("static:1024"));
        QCOMPARE(lastSettings["fp32_sensitive_ops"].get<bool>(), false);

        // Closed while training, a change just sent: the worker ends, the record says stopped.
        auto closing = std::make_unique<TrainingController>(runsDir());
        EventLog closingLog;
        closingLog.attach(*closing);
        const QString closedId = closing->start(s, QStringLiteral("closed while training"));
        QTRY_VERIFY_WITH_TIMEOUT(closingLog.count<StepEvent>(closedId) >= 2, 60000);
        QCOMPARE(closing->requestChange(SettingsChange{amp, std::nullopt, ampLr}), QString());
        closing.reset();
        const json closedRecord = loadRunRecordDocument(dir_.path() / "runs" / (closedId.toStdString() + ".json"));
        QCOMPARE(closedRecord["summary"]["status"].get<std::string>(), std::string("stopped"));
        QVERIFY(closedRecord["steps"].size() >= 2);

        // Closed while paused: the stop wakes the paused trainer.
        closing = std::make_unique<TrainingController>(runsDir());
        EventLog pausedLog;
        pausedLog.attach(*closing);
        const QString pausedId = closing->start(s, QStringLiteral("closed while paused"));
        QTRY_VERIFY_WITH_TIMEOUT(pausedLog.count<StepEvent>(pausedId) >= 2, 60000);
        closing->pause();
        QTRY_VERIFY_WITH_TIMEOUT(pausedLog.hasStatus(pausedId, RunStatus::paused), 60000);
        closing.reset();
        const json pausedRecord = loadRunRecordDocument(dir_.path() / "runs" / (pausedId.toStdString() + ".json"));
        QCOMPARE(pausedRecord["summary"]["status"].get<std::string>(), std::string("stopped"));
    }

    // Issue 37: weights a configuration names outside the runs folder that cannot be
    // written (a missing folder) or that would overwrite an input fail the run before its
    // first step, naming the key; they were found only after the last step.
    void unwritableOutputsFailBeforeTraining_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addRow("save_weights in a missing folder") << "save_weights";
        QTest::addRow("write_batches over read_batches") << "write_batches";
    }
    void unwritableOutputsFailBeforeTraining()
    {
        QFETCH(QString, key);
        TrainingController c(runsDir());
        EventLog log;
        log.attach(c);
        QSignalSpy started(&c, &TrainingController::runStarted);
        QSignalSpy failed(&c, &TrainingController::failed);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        TrainSettings s = settings(5);
        if (key == QLatin1String("save_weights")) {
            s.saveWeights = (dir_.path() / "no-such-folder" / "w.safetensors").string();
        } else {
            const fs::path batches = dir_.path() / "batches.txt";
            { std::ofstream(batches) << "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"; }
            s.readBatches = batches.string();
            s.writeBatches = batches.string();
        }
        const QString id = c.start(s, QStringLiteral("bad output"));
        QTRY_COMPARE(finished.count(), 1);
        QCOMPARE(failed.count(), 1);
        QVERIFY2(failed.at(0).at(1).toString().contains(key), qPrintable(failed.at(0).at(1).toString()));
        QCOMPARE(started.count(), 0);
        QCOMPARE(log.count<StepEvent>(id), 0);
        QCOMPARE(resultOf(finished, id).status, RunStatus::failed);
    }

    void badDataFolderFailsWithOneSentence()
    {
        TrainingController c(runsDir());
        QSignalSpy started(&c, &TrainingController::runStarted);
        QSignalSpy failed(&c, &TrainingController::failed);
        QSignalSpy finished(&c, &TrainingController::runFinished);
        TrainSettings s = settings(5);
        s.dataDir = (dir_.path() / "no-such-folder").string();
        const QString id = c.start(s, QStringLiteral("bad data"));
        QTRY_COMPARE(finished.count(), 1);
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(0).toString(), id);
        QVERIFY(!failed.at(0).at(1).toString().isEmpty());
        QCOMPARE(started.count(), 0);
        QCOMPARE(resultOf(finished, id).status, RunStatus::failed);
        QVERIFY(!QFileInfo::exists(QDir(runsDir()).filePath(id + QStringLiteral(".json"))));
    }
};

// `tst_ui_controller --one-run RUNS DATA`: what one app instance does when a run is
// started (a controller on the runs folder, one short run), for twoInstancesKeepBothRuns.
// Prints the run's id and exits 0 when the run completed.
int startOneRun(const QString& runsDir, const QString& dataDir)
{
    TrainingController c(runsDir);
    QSignalSpy finished(&c, &TrainingController::runFinished);
    const TrainSettings s = settingsFromJson(json{{"widths", {4, 8}}, {"batch", 16}, {"max_steps", 3}, {"threads", 1},
                                                  {"histogram_every", 0}, {"data_dir", dataDir.toStdString()}},
                                             "test");
    const QString id = c.start(s, QStringLiteral("instance"));
    if (!finished.wait(60000) && finished.isEmpty()) return 2;
    std::printf("%s\n", qPrintable(id));
    return resultOf(finished, id).status == RunStatus::completed ? 0 : 1;
}

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    if (argc == 4 && std::strcmp(argv[1], "--one-run") == 0) return startOneRun(argv[2], argv[3]);
    TestUiController test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "tst_ui_controller.moc"
