// Over 500 lines: the run store and its model share one temporary runs folder.
// Tests of the RunStore and the RunListModel (under QAbstractItemModelTester): saved
// records load at start-up, rename is written to the record, delete moves the record to
// the trash folder and undo restores it, a new store over the same folder ("restart")
// sees the same runs, an interrupted record reopens as interrupted, an external record is
// copied in, and a damaged record is reported without being touched.

#include "data/dataset.h"
#include "files/record_lock.h"
#include "record/run_record.h"
#include "record/record_writer.h"
#include "report/runs_index.h"
#include "run_list_model.h"
#include "run_store.h"
#include "test_support.h"
#include "train/trainer.h"

#include <QAbstractItemModelTester>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <QSysInfo>

#include <cmath>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

using namespace plab;
using namespace plab::ui;
using nlohmann::json;
namespace fs = std::filesystem;

class TestUiModels : public QObject {
    Q_OBJECT
    testing::TempDir data_;
    DataSplit split_;

    // Trains a tiny run and writes its record to `file`.
    void writeRecord(const fs::path& file, const std::string& recipe, const std::string& name)
    {
        const TrainSettings s = settingsFromJson(json{{"recipe", recipe}, {"widths", {4, 8}}, {"batch", 16}, {"epochs", 1},
                                                      {"max_steps", 12}, {"threads", 1}, {"histogram_every", 4}},
                                                 "test");
        RunRecorder recorder(file, s, split_, name);
        Trainer trainer(s, split_, [&](const TrainerEvent& e) { recorder.onEvent(e); });
        recorder.finish(trainer.run());
    }

    static QString q(const fs::path& p) { return QString::fromStdString(p.string()); }

    // `count` records run-0…0.json to run-<count-1>.json (`digits` wide): one trained, the
    // others its copies.
    void writeRecordCopies(const fs::path& dir, int count, int digits)
    {
        auto file = [&](int i) { return dir / QStringLiteral("run-%1.json").arg(i, digits, 10, QLatin1Char('0')).toStdString(); };
        writeRecord(file(0), "fp32", "");
        for (int i = 1; i < count; ++i) fs::copy_file(file(0), file(i));
    }

private slots:
    void initTestCase()
    {
        testing::writeSyntheticDataset(data_.path() / "mnist", 320, 100, 3);
        split_ = loadDataset("mnist", data_.path());
    }

    void savedRunsLoadIntoTheModel()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "baseline");
        writeRecord(runs.path() / "run-b.json", "amp-fp16", "");
        RunStore store(q(runs.path()));
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(store.loadAll(), QStringList());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.columnCount(), int(RunListModel::ColumnCount));
        QCOMPARE(model.index(0, RunListModel::NameColumn).data().toString(), QStringLiteral("baseline"));
        QCOMPARE(model.index(1, RunListModel::NameColumn).data().toString(), QStringLiteral("run-b"));   // no name: the id
        QCOMPARE(model.index(1, RunListModel::RecipeColumn).data().toString(), QStringLiteral("AMP FP16"));
        QCOMPARE(model.index(0, RunListModel::StatusColumn).data().toString(), QStringLiteral("completed"));
        QVERIFY(model.index(0, RunListModel::AccuracyColumn).data().toString().contains(QLatin1Char('%')));
        QVERIFY(model.index(0, RunListModel::NameColumn).data(Qt::DecorationRole).value<QColor>().isValid());
        QVERIFY(model.index(0, RunListModel::NameColumn).data(Qt::DecorationRole) !=
                model.index(1, RunListModel::NameColumn).data(Qt::DecorationRole));
        QCOMPARE(store.runs()[0]->steps().size(), std::size_t(12));   // read as a live run builds it
        // Issue 10: a training step's memory peak apart from an evaluation's, as recorded.
        std::ifstream in(runs.path() / "run-a.json");
        const json record = json::parse(in);
        const MemorySnapshot peak = store.runs()[0]->peakMemory();
        const auto& training = peak.phasePeak[static_cast<std::size_t>(MemoryPhase::training)];
        const auto& evaluation = peak.phasePeak[static_cast<std::size_t>(MemoryPhase::evaluation)];
        QVERIFY(training.total > 0 && evaluation.total > 0);
        QCOMPARE(training.total, record.at("memory").at("training_peak").at("total").get<std::int64_t>());
        QCOMPARE(evaluation.bytes[static_cast<std::size_t>(MemoryCategory::activations)],
                 record.at("memory").at("evaluation_peak").at("activations").get<std::int64_t>());
    }

    // The app's run is a RunRecord: one built live from the trainer's events is the one its
    // file reads back as, and shows the same facts (a mid-run change included).
    void liveRunAndItsSavedRecordAreTheSame()
    {
        testing::TempDir runs;
        const TrainSettings s = settingsFromJson(json{{"recipe", "amp-fp16"}, {"widths", {4, 8}}, {"batch", 16},
                                                      {"epochs", 1}, {"max_steps", 12}, {"threads", 1},
                                                      {"histogram_every", 4}},
                                                 "test");
        const fs::path file = runs.path() / "live.json";
        RunRecorder recorder(file, s, split_, "live");
        auto live = std::make_shared<RunData>(QStringLiteral("live"), s);
        auto control = std::make_shared<TrainerControl>();
        Trainer trainer(s, split_, [&](const TrainerEvent& e) {
            recorder.onEvent(e);
            live->apply(e);
            if (const auto* step = std::get_if<StepEvent>(&e); step && step->step == 5) {
                SettingsChange lower;
                lower.lr = live->currentSettings().optimizer.lr / 2;
                QVERIFY(control->requestChange(lower).empty());
            }
        }, {}, control);
        const RunResult result = trainer.run();
        recorder.finish(result);
        live->finish(result);
        QCOMPARE(live->changes().size(), std::size_t{1});

        const RunPtr saved = RunData::fromRecord(QStringLiteral("live"), loadRunRecord(file));
        RunRecord built = live->record();
        built.name = saved->record().name;   // the app names its record when it saves it
        built.createdAt = saved->record().createdAt;
        built.settingKeys = saved->record().settingKeys;
        built.machine = saved->record().machine;
        built.versions.precisionLab = saved->record().versions.precisionLab;
        built.versions.compiler = saved->record().versions.compiler;
        built.versions.nlohmannJson = saved->record().versions.nlohmannJson;
        built.data = saved->record().data;
        built.summary.finishedAt = saved->record().summary.finishedAt;
        QVERIFY(built.steps == saved->steps() && built.telemetry == saved->telemetry());
        QVERIFY(built.memory == saved->record().memory && built.events == saved->record().events);
        QVERIFY(built.summary == saved->record().summary);
        QVERIFY(built == saved->record());
        QCOMPARE(saved->status(), live->status());
        QCOMPARE(saved->statusMessage(), live->statusMessage());
        QCOMPARE(saved->plannedSteps(), live->plannedSteps());
        QCOMPARE(saved->skippedSteps(), live->skippedSteps());
        QCOMPARE(saved->imagesPerSecond(), live->imagesPerSecond());
        QCOMPARE(saved->elapsedSeconds(), live->elapsedSeconds());
        QVERIFY(saved->currentSettings() == live->currentSettings());
        QCOMPARE(saved->peakMemory(), live->peakMemory());
    }

    void savedRunsKnowTheirPlan()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "done");
        // The same run stopped at step 5, planned by epochs alone: 320 images / batch 16.
        json stopped = loadRunRecordDocument(runs.path() / "run-a.json");
        stopped["steps"].erase(stopped["steps"].begin() + 5, stopped["steps"].end());
        stopped["summary"]["status"] = "stopped";
        stopped["settings"]["max_steps"] = 0;
        std::ofstream(runs.path() / "run-b.json") << stopped.dump();
        RunStore store(q(runs.path()));
        QCOMPARE(store.loadAll(), QStringList());
        QCOMPARE(store.runs().size(), 2);
        QCOMPARE(store.runs()[0]->plannedSteps(), std::int64_t(12));   // completed: what it did
        QCOMPARE(store.runs()[1]->plannedSteps(), std::int64_t(20));   // 5 of 20
    }

    void checkingRowsSelectsRunsForComparison()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "a");
        writeRecord(runs.path() / "run-b.json", "pure-fp16", "b");
        RunStore store(q(runs.path()));
        store.loadAll();
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy changed(&model, &RunListModel::comparisonChanged);
        QVERIFY(model.setData(model.index(1, 0), Qt::Checked, Qt::CheckStateRole));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(model.comparedRuns().size(), 1);
        QCOMPARE(model.comparedRuns()[0]->name(), QStringLiteral("b"));
        QCOMPARE(model.index(1, 0).data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
        QVERIFY(model.setData(model.index(1, 0), Qt::Unchecked, Qt::CheckStateRole));
        QVERIFY(model.comparedRuns().isEmpty());
        QCOMPARE(model.index(1, RunListModel::RecipeColumn).data().toString(), QStringLiteral("Pure FP16"));
    }

    void renameIsWrittenToTheRecordAndSurvivesARestart()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "old name");
        {
            RunStore store(q(runs.path()));
            store.loadAll();
            RunListModel model(&store);
            QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
            QVERIFY(model.flags(model.index(0, 0)) & Qt::ItemIsEditable);
            QVERIFY(!(model.flags(model.index(0, RunListModel::StatusColumn)) & Qt::ItemIsEditable));
            QSignalSpy failed(&model, &RunListModel::renameFailed);
            QVERIFY(!model.setData(model.index(0, 0), QStringLiteral("   ")));   // a run needs a name
            QCOMPARE(failed.count(), 1);
            QVERIFY(model.setData(model.index(0, 0), QStringLiteral("fp32 baseline")));
            QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("fp32 baseline"));
        }
        QCOMPARE(loadRunRecordDocument(runs.path() / "run-a.json")["name"].get<std::string>(), std::string("fp32 baseline"));
        RunStore restarted(q(runs.path()));
        restarted.loadAll();
        QCOMPARE(restarted.runs()[0]->name(), QStringLiteral("fp32 baseline"));
    }

    void deleteMovesToTrashAndUndoRestores()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "a");
        writeRecord(runs.path() / "run-b.json", "amp-bf16", "b");
        writeRecord(runs.path() / "run-c.json", "tf32", "c");
        RunStore store(q(runs.path()));
        store.loadAll();
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setCompared(QStringLiteral("run-b"), true);

        QVERIFY(!store.canUndoRemove());
        QCOMPARE(store.remove(QStringLiteral("run-b")), QString());
        QCOMPARE(model.rowCount(), 2);
        QVERIFY(model.comparedRuns().isEmpty());
        QVERIFY(!fs::exists(runs.path() / "run-b.json"));
        QVERIFY(fs::exists(runs.path() / "trash" / "run-b.json"));   // never lost
        QVERIFY(store.canUndoRemove());
        QVERIFY(store.undoRemoveText().contains(QStringLiteral("b")));
        {
            RunStore restarted(q(runs.path()));   // a deleted run stays deleted after a restart
            restarted.loadAll();
            QCOMPARE(restarted.count(), 2);
        }
        QCOMPARE(store.undoRemove(), QString());
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("b"));   // back in its place
        QVERIFY(fs::exists(runs.path() / "run-b.json"));
        QVERIFY(!store.canUndoRemove());
        QVERIFY(!store.undoRemove().isEmpty());
    }

    // A record whose settings name another record (or any file) as its weights: deleting it
    // moves only its own record and the weights file the app named for it ("<id>.safetensors"
    // beside it), never a path read from the record (issue 66, finding 2).
    void deleteTouchesOnlyWhatTheAppMadeForTheRun()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "a");
        writeRecord(runs.path() / "victim.json", "fp32", "victim");
        json hostile = loadRunRecordDocument(runs.path() / "run-a.json");
        hostile["settings"]["save_weights"] = (runs.path() / "victim.json").string();
        std::ofstream(runs.path() / "run-a.json") << hostile.dump();
        { std::ofstream(runs.path() / "run-a.safetensors") << "its own weights"; }
        RunStore store(q(runs.path()));
        store.loadAll();
        QCOMPARE(store.count(), 2);
        QCOMPARE(store.remove(QStringLiteral("run-a")), QString());
        QVERIFY(fs::exists(runs.path() / "victim.json"));   // untouched
        QVERIFY(!fs::exists(runs.path() / "trash" / "victim.json"));
        QVERIFY(fs::exists(runs.path() / "trash" / "run-a.json"));
        QVERIFY(fs::exists(runs.path() / "trash" / "run-a.safetensors"));   // its own weights went with it
        QVERIFY(!fs::exists(runs.path() / "run-a.safetensors"));
        QVERIFY(store.run(QStringLiteral("victim")));
        QCOMPARE(store.undoRemove(), QString());
        QVERIFY(fs::exists(runs.path() / "run-a.json"));
        QVERIFY(fs::exists(runs.path() / "run-a.safetensors"));   // back beside its record
        QVERIFY(fs::exists(runs.path() / "victim.json"));

        // A link named like the run's weights is not followed: only the record moves.
        fs::create_symlink(runs.path() / "victim.json", runs.path() / "run-b.safetensors");
        writeRecord(runs.path() / "run-b.json", "fp32", "b");
        RunStore again(q(runs.path()));
        again.loadAll();
        QCOMPARE(again.remove(QStringLiteral("run-b")), QString());
        QVERIFY(fs::is_symlink(runs.path() / "run-b.safetensors"));
        QVERIFY(fs::exists(runs.path() / "victim.json"));
    }

    // Issue 67, item 1: the runs folder is watched. A record that another process writes
    // there after start-up (plab train --out) joins the list while it is written, is followed
    // to its end, and a rename or removal by another program is seen too; no fixed sleep.
    void recordsWrittenByOthersAppearAndLeave()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "a");
        RunStore store(q(runs.path()));
        QCOMPARE(store.loadAll(), QStringList());
        store.watchFolder();
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QProcess plab;
        plab.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        plab.start(QStringLiteral(PLAB_CLI_PATH),
                   {"train", "--data-dir", q(data_.path()), "--widths", "4,8", "--batch", "16", "--epochs", "40",
                    "--threads", "1", "--quiet", "--name", "from the CLI", "--out", q(runs.path() / "cli.json")});
        QVERIFY(plab.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(store.run(QStringLiteral("cli")), 20000);
        const RunPtr cli = store.run(QStringLiteral("cli"));
        QCOMPARE(cli->name(), QStringLiteral("from the CLI"));
        if (plab.state() == QProcess::Running) QVERIFY(cli->isLive());   // followed while written
        QVERIFY(plab.waitForFinished(120000));
        QCOMPARE(plab.exitCode(), 0);
        QTRY_VERIFY_WITH_TIMEOUT(!cli->isLive(), 10000);
        QCOMPARE(cli->status(), RunStatus::completed);
        QCOMPARE(cli->steps().back().step, std::int64_t(40 * 20));   // all of it, 320 images / 16 a step
        // Renamed by another program: the old entry leaves, the new one comes.
        fs::rename(runs.path() / "cli.json", runs.path() / "cli-renamed.json");
        QTRY_VERIFY_WITH_TIMEOUT(store.run(QStringLiteral("cli-renamed")) && !store.run(QStringLiteral("cli")), 10000);
        // Removed by another program: it leaves the list.
        fs::remove(runs.path() / "run-a.json");
        QTRY_VERIFY_WITH_TIMEOUT(!store.run(QStringLiteral("run-a")), 10000);
        QCOMPARE(model.rowCount(), 1);
    }

    void interruptedRecordReopensAsInterrupted()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "amp-fp16", "crashed");
        // What a crash leaves: the last periodic write, summary still "running".
        json record = loadRunRecordDocument(runs.path() / "run-a.json");
        record["summary"]["status"] = "running";
        record["summary"].erase("finished_at");
        record["steps"].erase(record["steps"].begin() + 8, record["steps"].end());
        writeJsonAtomically(runs.path() / "run-a.json", record);

        RunStore store(q(runs.path()));
        QCOMPARE(store.loadAll(), QStringList());
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.index(0, RunListModel::StatusColumn).data().toString(), QStringLiteral("interrupted"));
        QCOMPARE(store.runs()[0]->steps().size(), std::size_t(8));
        QVERIFY(!store.runs()[0]->isLive());
        QCOMPARE(store.remove(QStringLiteral("run-a")), QString());   // it can be deleted like any other
    }

    // Issue 37: a record another process is still writing (its lock names a live writer)
    // shows as live and follows the record as it grows; it is interrupted only once its
    // writer is gone. It showed as "interrupted" and never refreshed.
    void recordStillBeingWrittenIsLive()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-cli.json", "amp-fp16", "from the CLI");
        const json done = loadRunRecordDocument(runs.path() / "run-cli.json");
        json partial = done;
        partial["summary"]["status"] = "running";
        partial["summary"].erase("finished_at");
        partial["steps"].erase(partial["steps"].begin() + 5, partial["steps"].end());
        json events = json::array();   // not yet the final status event
        for (const auto& e : partial["events"])
            if (e.value("status", std::string()) != "completed") events.push_back(e);
        partial["events"] = events;
        writeJsonAtomically(runs.path() / "run-cli.json", partial);
        {   // the writer: this process, alive
            std::ofstream(recordLockPath(runs.path() / "run-cli.json")) << ::getpid() << ' ' << QSysInfo::machineHostName().toStdString() << '\n';
        }
        RunStore store(q(runs.path()));
        QCOMPARE(store.loadAll(), QStringList());
        RunListModel model(&store);
        const RunPtr run = store.runs()[0];
        QVERIFY(run->isLive());
        QVERIFY(!run->interrupted());
        QCOMPARE(run->steps().size(), std::size_t(5));
        QVERIFY(model.index(0, RunListModel::StatusColumn).data().toString() != QStringLiteral("interrupted"));
        // It grows, then ends: the store follows it.
        partial["steps"] = done["steps"];
        writeJsonAtomically(runs.path() / "run-cli.json", partial);
        QTRY_COMPARE_WITH_TIMEOUT(run->steps().size(), done["steps"].size(), 5000);
        QVERIFY(run->isLive());
        writeJsonAtomically(runs.path() / "run-cli.json", done);
        fs::remove(recordLockPath(runs.path() / "run-cli.json"));
        QTRY_VERIFY_WITH_TIMEOUT(!run->isLive(), 5000);
        QCOMPARE(run->status(), RunStatus::completed);
        QVERIFY(!run->interrupted());

        // A writer that is gone (a pid of this host that no longer runs) leaves it interrupted.
        QProcess gone;
        gone.start(QStringLiteral("true"));
        QVERIFY(gone.waitForStarted());
        const qint64 gonePid = gone.processId();
        QVERIFY(gone.waitForFinished());
        writeJsonAtomically(runs.path() / "run-dead.json", partial);
        std::ofstream(recordLockPath(runs.path() / "run-dead.json")) << gonePid << ' '
                                                                     << QSysInfo::machineHostName().toStdString() << '\n';
        RunStore again(q(runs.path()));
        QCOMPARE(again.loadAll(), QStringList());
        QVERIFY(again.run(QStringLiteral("run-dead"))->interrupted());
    }

    void externalRecordIsCopiedIn()
    {
        testing::TempDir runs, elsewhere;
        writeRecord(elsewhere.path() / "from-cli.json", "pure-bf16", "");
        RunStore store(q(runs.path()));
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QString error;
        const RunPtr run = store.openRecord(q(elsewhere.path() / "from-cli.json"), &error);
        QVERIFY2(run, qPrintable(error));
        QCOMPARE(model.rowCount(), 1);
        QVERIFY(fs::exists(runs.path() / "from-cli.json"));
        QVERIFY(fs::exists(elsewhere.path() / "from-cli.json"));   // the original stays
        QCOMPARE(store.openRecord(q(runs.path() / "from-cli.json"), &error), run);   // already there: found
        QCOMPARE(model.rowCount(), 1);
        QVERIFY(!store.openRecord(q(elsewhere.path() / "missing.json"), &error));
        QVERIFY(!error.isEmpty());
    }

    void damagedRecordIsReportedAndLeftAlone()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "good");
        { std::ofstream(runs.path() / "run-z.json") << "{\"format_version\": 1, \"steps\": ["; }
        RunStore store(q(runs.path()));
        const QStringList problems = store.loadAll();
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems[0].contains(QStringLiteral("run-z.json")), qPrintable(problems[0]));
        QCOMPARE(store.count(), 1);
        QVERIFY(fs::exists(runs.path() / "run-z.json"));
        QString error;
        QVERIFY(!store.openRecord(q(runs.path() / "run-z.json"), &error));
        QVERIFY(!error.isEmpty());
    }

    // Issue 11: numbers out of range in a record ("step": 1e300, "batch": 1e20) were
    // converted to integers, undefined behaviour; each is refused naming the field.
    void outOfRangeNumbersAreRefused_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("mentions");
        QTest::addRow("step") << "step" << "1e300" << "\"step\" must be a whole number";
        QTest::addRow("epoch") << "epoch" << "1e300" << "\"epoch\" must be a whole number";
        QTest::addRow("batch") << "batch" << "1e20" << "\"batch\" must be a whole number";
        QTest::addRow("negative batch") << "batch" << "-1" << "\"batch\" must be a whole number";
        QTest::addRow("fractional step") << "step" << "2.5" << "\"step\" must be a whole number";
        QTest::addRow("string loss") << "loss" << "\"low\"" << "\"loss\" must be a number";
    }
    void outOfRangeNumbersAreRefused()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "good");
        std::ifstream in(runs.path() / "run-a.json");
        json record = json::parse(in);
        record["steps"][0][field.toStdString()] = json::parse(value.toStdString());
        std::ofstream(runs.path() / "run-b.json") << record.dump();
        RunStore store(q(runs.path()));
        const QStringList problems = store.loadAll();
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems[0].contains(QStringLiteral("run-b.json")) && problems[0].contains(mentions), qPrintable(problems[0]));
        QCOMPARE(store.count(), 1);
    }

    // Issue 11: a record nested 100,000 deep in the runs folder crashed the app on every
    // start (replaying it recursed per level). It is listed as unreadable with the reason.
    void deeplyNestedRecordDoesNotStopTheStart()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "good");
        {
            std::ofstream deep(runs.path() / "run-deep.json");
            deep << "{\"format_version\": 1, \"settings\": {\"batch\": " << std::string(100000, '[')
                 << std::string(100000, ']') << "}}";
        }
        RunStore store(q(runs.path()));
        const QStringList problems = store.loadAll();
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems[0].contains(QStringLiteral("run-deep.json")) && problems[0].contains(QStringLiteral("nested")),
                 qPrintable(problems[0]));
        QCOMPARE(store.count(), 1);
    }

    // Issue 37, a runs folder of thousands: a saved run is listed from its listing (the
    // folder's index, or the record read once) and shows the same row, status, plan,
    // changes and figures as the whole record read; its series are read from the record
    // when first asked for.
    static RunPtr replayedWhole(const fs::path& file)
    {
        return RunData::fromRecord(QString::fromStdString(file.stem().string()), loadRunRecord(file));
    }
    static void compareListed(const RunData& listed, const RunData& whole)
    {
        QCOMPARE(listed.name(), whole.name());
        QCOMPARE(listed.status(), whole.status());
        QCOMPARE(listed.statusMessage(), whole.statusMessage());
        QCOMPARE(listed.interrupted(), whole.interrupted());
        QCOMPARE(listed.isLive(), whole.isLive());
        QCOMPARE(listed.plannedSteps(), whole.plannedSteps());
        QCOMPARE(listed.backend(), whole.backend());
        QCOMPARE(listed.arithmetic(), whole.arithmetic());
        QVERIFY(listed.backendVersions() == whole.backendVersions());
        QVERIFY(listed.settings() == whole.settings());
        QVERIFY(listed.currentSettings() == whole.currentSettings());
        QCOMPARE(listed.skippedSteps(), whole.skippedSteps());
        QCOMPARE(listed.imagesPerSecond(), whole.imagesPerSecond());
        QCOMPARE(listed.elapsedSeconds(), whole.elapsedSeconds());
        QCOMPARE(std::isnan(listed.lastAccuracy()), std::isnan(whole.lastAccuracy()));
        if (!std::isnan(whole.lastAccuracy())) {
            QCOMPARE(listed.lastAccuracy(), whole.lastAccuracy());
            QCOMPARE(listed.bestAccuracy(), whole.bestAccuracy());
        }
        QCOMPARE(listed.changes().size(), whole.changes().size());
        for (std::size_t i = 0; i < whole.changes().size(); ++i) {
            QCOMPARE(listed.changes()[i].step, whole.changes()[i].step);
            QCOMPARE(listed.changes()[i].description, whole.changes()[i].description);
            QVERIFY(listed.changes()[i].settings == whole.changes()[i].settings);
        }
        QCOMPARE(listed.refusals().size(), whole.refusals().size());
        for (std::size_t i = 0; i < whole.refusals().size(); ++i)
            QCOMPARE(listed.refusals()[i].reason, whole.refusals()[i].reason);
    }

    void listedRunsShowWhatTheirRecordsSay()
    {
        testing::TempDir runs;
        writeRecord(runs.path() / "run-a.json", "fp32", "baseline");
        writeRecord(runs.path() / "run-b.json", "amp-fp16", "");
        // A run that changed a setting and had one refused.
        json changed = loadRunRecordDocument(runs.path() / "run-b.json");
        TrainSettings after = readRunRecord(changed, "b").settings;
        after.batch = 8;
        changed["events"].push_back({{"step", 3}, {"type", "setting_change"}, {"description", "batch: 16 -> 8"},
                                     {"settings", settingsToJson(after)}});
        changed["events"].push_back({{"step", 4}, {"type", "change_refused"}, {"description", "compute fp16 -> fp8"},
                                     {"reason", "not on this backend"}});
        changed["name"] = "changed";
        writeJsonAtomically(runs.path() / "run-c.json", changed);
        // What a crash leaves: the summary still "running", steps cut short, no writer.
        json crashed = loadRunRecordDocument(runs.path() / "run-a.json");
        crashed["summary"]["status"] = "running";
        crashed["summary"].erase("finished_at");
        crashed["summary"].erase("images_per_second");
        crashed["steps"].erase(crashed["steps"].begin() + 7, crashed["steps"].end());
        writeJsonAtomically(runs.path() / "run-d.json", crashed);

        for (const bool fromIndex : {false, true}) {   // the first store builds the index, the second reads it
            QCOMPARE(fs::exists(runs.path() / kRunsIndexFileName), fromIndex);
            RunStore store(q(runs.path()));
            RunListModel model(&store);
            QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
            QCOMPARE(store.loadAll(), QStringList());
            QCOMPARE(store.count(), 4);
            QCOMPARE(RunsIndex::load(runs.path()).size(), std::size_t(4));
            for (const RunPtr& run : store.runs()) {
                QVERIFY2(!run->hasSeries(), qPrintable(run->id()));
                const RunPtr whole = replayedWhole(run->recordPath().toStdString());
                compareListed(*run, *whole);
                if (QTest::currentTestFailed()) return;
                for (int column = 0; column < RunListModel::ColumnCount; ++column)   // the whole row
                    for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole), int(RunListModel::SortValueRole)})
                        model.index(store.indexOf(run->id()), column).data(role);
                QVERIFY(!run->hasSeries());
                // Its series, read when asked for, are the record's.
                QCOMPARE(run->steps().size(), whole->steps().size());
                QVERIFY(run->hasSeries());
                QCOMPARE(run->evals().size(), whole->evals().size());
                QCOMPARE(run->telemetry().size(), whole->telemetry().size());
                QCOMPARE(run->memory().size(), whole->memory().size());
                compareListed(*run, *whole);
                if (QTest::currentTestFailed()) return;
            }
            QVERIFY(store.run(QStringLiteral("run-d"))->interrupted());
            QCOMPARE(store.run(QStringLiteral("run-c"))->changes().size(), std::size_t(1));
        }
    }

    // The index is a cache: used while a record is unchanged, read again when it changed,
    // rebuilt when it is damaged or lies about its own fields, and never a reason to hang.
    void runsIndexIsACacheOfTheRecords()
    {
        testing::TempDir runs;
        for (const char* name : {"run-a", "run-b", "run-c"})
            writeRecord(runs.path() / (std::string(name) + ".json"), "fp32", name);
        const std::atomic<bool> never{false};
        std::vector<ScannedRecord> seen;
        auto scan = [&] {
            seen.clear();
            return scanRunsFolder(runs.path(), [&](std::vector<ScannedRecord>&& b) { for (auto& r : b) seen.push_back(std::move(r)); },
                                  never, RunsScanOptions{2, 2});
        };
        QCOMPARE(scan(), std::size_t(3));   // no index yet: every record read
        QCOMPARE(seen.size(), std::size_t(3));
        QCOMPARE(seen[0].id, std::string("run-a"));
        QCOMPARE(seen[2].listing->name, std::string("run-c"));
        QCOMPARE(scan(), std::size_t(0));   // all from the index
        QCOMPARE(seen[1].listing->name, std::string("run-b"));

        writeRecord(runs.path() / "run-b.json", "amp-bf16", "renamed");   // rewritten
        QCOMPARE(scan(), std::size_t(1));
        QCOMPARE(seen[1].listing->name, std::string("renamed"));
        QCOMPARE(seen[1].listing->settings.recipe.preset, std::string("amp-bf16"));

        fs::remove(runs.path() / "run-c.json");
        QCOMPARE(scan(), std::size_t(0));
        QCOMPARE(seen.size(), std::size_t(2));
        QCOMPARE(RunsIndex::load(runs.path()).size(), std::size_t(2));   // its entry is dropped

        // An entry whose stamp matches but whose listing is not one: the record is read.
        json index = json::parse(std::ifstream(runs.path() / kRunsIndexFileName));
        index["records"]["run-a.json"]["listing"]["steps"] = -5;
        index["records"]["run-b.json"]["size"] = "large";
        std::ofstream(runs.path() / kRunsIndexFileName) << index.dump();
        QCOMPARE(scan(), std::size_t(2));
        QCOMPARE(seen[0].listing->name, std::string("run-a"));
        QCOMPARE(scan(), std::size_t(0));   // and the index is whole again

        for (const char* damaged : {"{not json", "[]", "{\"format\": \"precision-lab runs index\", \"version\": 99}"}) {
            std::ofstream(runs.path() / kRunsIndexFileName) << damaged;
            QCOMPARE(scan(), std::size_t(2));
            QCOMPARE(seen.size(), std::size_t(2));
            QVERIFY(seen[0].error.empty() && seen[1].error.empty());
        }

        // A scan cancelled after its first record (the app closed) keeps what it read.
        fs::remove(runs.path() / kRunsIndexFileName);
        std::atomic<bool> stop{false};
        scanRunsFolder(runs.path(), [&](std::vector<ScannedRecord>&&) { stop = true; }, stop, RunsScanOptions{1, 1});
        QCOMPARE(RunsIndex::load(runs.path()).size(), std::size_t(1));

        // An index that is a FIFO is no index: the records are read, nothing waits for a writer.
        fs::remove(runs.path() / kRunsIndexFileName);
        QCOMPARE(::mkfifo((runs.path() / kRunsIndexFileName).c_str(), 0600), 0);
        QCOMPARE(scan(), std::size_t(2));
        QCOMPARE(seen.size(), std::size_t(2));

        // A FIFO named like a record is no record; a link to one is refused with a reason.
        QCOMPARE(::mkfifo((runs.path() / "pipe.json").c_str(), 0600), 0);
        fs::create_symlink(runs.path() / "pipe.json", runs.path() / "link.json");
        fs::create_directory(runs.path() / "folder.json");
        scan();
        QCOMPARE(seen.size(), std::size_t(3));
        QCOMPARE(seen[0].id, std::string("link"));
        QVERIFY(!seen[0].listing);
        QVERIFY2(seen[0].error.find("not a regular file") != std::string::npos, seen[0].error.c_str());
    }

    // Memory for what is shown: the series of the runs shown and of the last few shown
    // are kept, the others dropped and read again when shown; a record gone meanwhile is
    // reported, not a crash.
    void seriesAreKeptForWhatIsShown()
    {
        testing::TempDir runs;
        writeRecordCopies(runs.path(), 12, 2);
        RunStore store(q(runs.path()));
        QCOMPARE(store.loadAll(), QStringList());
        QCOMPARE(store.count(), 12);
        const std::size_t steps = store.runs()[0]->steps().size();
        QVERIFY(steps > 0);
        for (const RunPtr& run : store.runs()) {   // each shown in turn
            QCOMPARE(run->steps().size(), steps);
            store.keepSeriesOf({run});
        }
        int kept = 0;
        for (const RunPtr& run : store.runs()) kept += run->hasSeries() ? 1 : 0;
        QCOMPARE(kept, 9);   // the one shown and the eight shown before it
        QVERIFY(!store.runs()[0]->hasSeries());
        QVERIFY(store.runs()[11]->hasSeries());
        QCOMPARE(store.runs()[0]->steps().size(), steps);   // read again

        QSignalSpy problems(&store, &RunStore::problem);
        fs::remove(runs.path() / "run-01.json");
        QVERIFY(!store.runs()[1]->hasSeries());
        QVERIFY(store.runs()[1]->steps().empty());
        QVERIFY(store.runs()[1]->statusMessage().contains(QStringLiteral("run-01.json")));
        QTRY_COMPARE(problems.count(), 1);
    }

    // The app lists the folder on a thread of its own, in batches; closing it meanwhile
    // stops the thread.
    void backgroundListingFillsTheModel()
    {
        testing::TempDir runs;
        writeRecordCopies(runs.path(), 60, 3);
        {
            RunStore store(q(runs.path()));
            store.loadAllInBackground();   // closed at once: cancelled and joined
        }
        fs::remove(runs.path() / kRunsIndexFileName);
        RunStore store(q(runs.path()));
        RunListModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy finished(&store, &RunStore::loadingFinished);
        store.loadAllInBackground();
        QVERIFY(store.isLoading());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QVERIFY(!store.isLoading());
        QCOMPARE(finished.at(0).at(0).toStringList(), QStringList());
        QCOMPARE(model.rowCount(), 60);
        QCOMPARE(store.runs().front()->id(), QStringLiteral("run-000"));
        QCOMPARE(store.runs().back()->id(), QStringLiteral("run-059"));
    }
};

QTEST_MAIN(TestUiModels)
#include "tst_ui_models.moc"
