// End-to-end test of the main window: with a temporary data folder and runs folder, start
// a short run through the Start action, wait for it to finish, and check that the charts'
// loss series hold the run's points, the runs list shows its accuracy, and a restarted
// window (same runs folder) shows the saved run again.

#include "charts/charts_view.h"
#include "main_window.h"
#include "run_list_model.h"
#include "run_store.h"
#include "settings_panel.h"
#include "test_support.h"
#include "window_test_support.h"
#include "training_controller.h"
#include "checking_backend.h"
#include "record/record_writer.h"
#include "record/run_record.h"
#include "weights/safetensors.h"
#include "data/dataset.h"
#include "train/trainer.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QStatusBar>
#include <QTableView>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QXYSeries>
#include <QTest>
#include <QFile>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <nlohmann/json.hpp>

using namespace plab;
using namespace plab::ui;
using nlohmann::json;
namespace fs = std::filesystem;

class TestUiE2e : public QObject {
    Q_OBJECT
    testing::TempDir dir_;

    MainWindowOptions options() const { return testing::isolatedWindowOptions(dir_.path()); }

    // Points of the series in `group` whose name contains `runName`.
    static int pointsOf(ChartsView* charts, const QString& group, const QString& runName)
    {
        int points = 0;
        for (QAbstractSeries* s : charts->seriesOf(group))
            if (s->name().contains(runName))
                if (auto* xy = qobject_cast<QXYSeries*>(s)) points = std::max(points, static_cast<int>(xy->count()));
        return points;
    }

private slots:
    void initTestCase() { testing::writeSyntheticDataset(dir_.path() / "mnist", 480, 200, 5); }

    void shortRunFromTheWindow()
    {
        QString runName;
        {
            MainWindow window(options());
            QTRY_VERIFY(window.runsLoaded());   // the runs folder is listed off the GUI thread
            window.show();
            QCOMPARE(window.windowTitle(), QStringLiteral("Precision Lab"));
            window.settingsPanel()->setSettings(settingsFromJson(
                json{{"recipe", "amp-fp16"}, {"widths", {4, 8}}, {"batch", 16}, {"epochs", 1}, {"max_steps", 20},
                     {"threads", 1}, {"histogram_every", 5}},
                "test"));
            QSignalSpy finished(window.controller(), &TrainingController::runFinished);
            auto* start = window.findChild<QAction*>(QStringLiteral("startAction"));
            QVERIFY(start && start->isEnabled());
            start->trigger();
            QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
            QCOMPARE(finished.at(0).at(1).value<RunResult>().status, RunStatus::completed);

            RunListModel* model = window.runListModel();
            QCOMPARE(model->rowCount(), 1);
            runName = model->index(0, RunListModel::NameColumn).data().toString();
            QVERIFY(runName.startsWith(QStringLiteral("AMP FP16")));
            QCOMPARE(window.watchedRunId(), model->runAt(0)->id());
            QVERIFY(model->index(0, RunListModel::AccuracyColumn).data().toString().contains(QLatin1Char('%')));
            QCOMPARE(model->index(0, RunListModel::StatusColumn).data().toString(), QStringLiteral("completed"));

            window.chartsView()->redrawNow();
            QVERIFY2(pointsOf(window.chartsView(), QStringLiteral("loss"), runName) > 0, qPrintable(runName));
            QVERIFY(!window.chartsView()->seriesOf(QStringLiteral("scale")).isEmpty());
            QVERIFY(window.bannerText().isEmpty());
            window.close();
        }
        // Restart: the saved run is back, with its points.
        MainWindow restarted(options());
        QTRY_VERIFY(restarted.runsLoaded());   // the runs folder is listed off the GUI thread
        QCOMPARE(restarted.runListModel()->rowCount(), 1);
        QCOMPARE(restarted.runListModel()->index(0, 0).data().toString(), runName);
        restarted.chartsView()->redrawNow();
        QVERIFY(pointsOf(restarted.chartsView(), QStringLiteral("loss"), runName) > 0);
        // The last settings came back too.
        QCOMPARE(restarted.settingsPanel()->settings().recipe.preset, std::string("amp-fp16"));
    }

    // Issue 14 item 1: a mid-run change that the run's backend cannot do (a CPU backend
    // that lacks bf16, standing for a GPU without it) is refused by the trainer's own rule:
    // the panel says why, the run goes on unchanged, and its record says what was refused.
    void refusedLiveChangeIsShownAndRecorded()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-refused").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());   // the runs folder is listed off the GUI thread
        window.controller()->setBackendFactory([](const TrainSettings&) -> std::unique_ptr<ComputeBackend> {
            auto backend = std::make_unique<testing::CheckingBackend>(testing::ConvolutionLibrary::none);
            BackendCapabilities noBf16;
            noBf16.compute = {Format::fp32, Format::tf32, Format::fp16};
            noBf16.sumsInCompute = {Format::tf32, Format::fp16};
            noBf16.limitation = "this test device has no bf16";
            backend->setCapabilities(noBf16);
            return backend;
        });
        window.settingsPanel()->setSettings(settingsFromJson(
            json{{"recipe", "fp32"}, {"widths", {4, 8}}, {"batch", 16}, {"epochs", 1}, {"max_steps", 400},
                 {"threads", 1}, {"histogram_every", 0}},
            "test"));
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(window.controller()->state(), TrainingController::State::training, 30000);
        const QString id = window.controller()->currentRunId();

        // The user picks AMP BF16 in the panel while the run trains.
        auto* preset = window.settingsPanel()->findChild<QComboBox*>(QStringLiteral("presetCombo"));
        QVERIFY(preset);
        const int bf16 = preset->findData(QStringLiteral("amp-bf16"));
        QVERIFY(bf16 >= 0);
        preset->setCurrentIndex(bf16);
        auto* problem = window.settingsPanel()->findChild<QLabel*>(QStringLiteral("problemLabel"));
        QVERIFY(problem);
        QTRY_VERIFY_WITH_TIMEOUT(problem->isVisibleTo(window.settingsPanel()), 10000);
        QVERIFY2(problem->text().contains(QStringLiteral("cannot compute in bf16 (this test device has no bf16)")),
                 qPrintable(problem->text()));

        window.controller()->stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const RunPtr run = window.runStore()->run(id);
        QVERIFY(run);
        QCOMPARE(run->currentSettings().recipe.compute, Format::fp32);
        QVERIFY(run->changes().empty());
        QCOMPARE(run->refusals().size(), std::size_t{1});

        const json record = loadRunRecordDocument(std::filesystem::path(o.runsDir.toStdString()) / (id.toStdString() + ".json"));
        int refused = 0, applied = 0;
        for (const json& e : record["events"]) {
            if (e["type"] == "setting_change") ++applied;
            if (e["type"] != "change_refused") continue;
            ++refused;
            QVERIFY2(e["description"].get<std::string>().find("fp32 -> bf16") != std::string::npos, e.dump().c_str());
            QVERIFY2(e["reason"].get<std::string>().find("cannot compute in bf16") != std::string::npos, e.dump().c_str());
        }
        QCOMPARE(refused, 1);
        QCOMPARE(applied, 0);
        QCOMPARE(record["settings"]["compute"].get<std::string>(), std::string("fp32"));
        for (const json& step : record["steps"]) QCOMPARE(step["loss_scale"].get<double>(), 1.0);
    }

    // Issue 13: every run saves its final weights beside its record; File > Export Weights
    // copies them (checked whole); the panel's "Initial weights" starts a run from them;
    // weights of another model are refused naming the tensor; a deleted run's weights go to
    // the trash with it and come back with Undo.
    void weightsTravelThroughTheApp()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-weights").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());   // the runs folder is listed off the GUI thread
        auto* exportWeights = window.findChild<QAction*>(QStringLiteral("exportWeightsAction"));
        QVERIFY(exportWeights);
        QVERIFY(!exportWeights->isEnabled());   // nothing selected
        const json base{{"recipe", "pure-bf16"}, {"widths", {4, 8}}, {"batch", 16}, {"epochs", 1}, {"max_steps", 6},
                        {"threads", 1}, {"histogram_every", 0}};
        window.settingsPanel()->setSettings(settingsFromJson(base, "test"));
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const QString first = window.runListModel()->runAt(0)->id();
        const QString saved = QDir(o.runsDir).filePath(first + QStringLiteral(".safetensors"));
        QVERIFY2(QFileInfo::exists(saved), qPrintable(saved));
        window.runListView()->selectRow(0);
        QTRY_VERIFY(exportWeights->isEnabled());

        // Issue 34: the run's settings back into the panel (Run > Use These Settings), all but
        // its weights file; and the runs list's context menu offers what can be done with it.
        TrainSettings other = window.settingsPanel()->settings();
        other.batch = 64;
        other.recipe = *PrecisionRecipe::fromPreset("fp32");
        window.settingsPanel()->setSettings(other);
        auto* useSettings = window.findChild<QAction*>(QStringLiteral("useSettingsAction"));
        QVERIFY(useSettings && useSettings->isEnabled());
        useSettings->trigger();
        TrainSettings expected = window.runListModel()->runAt(0)->settings();
        QVERIFY(!expected.saveWeights.empty());
        expected.saveWeights.clear();
        expected.dataDir.clear();   // the app's own (--data-dir), given again when the run starts
        QCOMPARE(settingsToJson(window.settingsPanel()->settings()).dump(), settingsToJson(expected).dump());
        QVERIFY2(window.settingsPanel()->notices().filter(QStringLiteral("Not taken")).isEmpty(),
                 qPrintable(window.settingsPanel()->notices().join(QLatin1Char('\n'))));
        std::unique_ptr<QMenu> menu(window.runContextMenu());
        QStringList offered;
        for (QAction* a : menu->actions())
            if (!a->isSeparator()) offered << a->objectName() + (a->isEnabled() ? QString() : QStringLiteral("(off)"));
        QCOMPARE(offered, QStringList({"useSettingsAction", "renameAction", "exportAction", "exportWeightsAction",
                                       "revealRecordAction", "deleteAction"}));

        const QString exported = QString::fromStdString((dir_.path() / "exported.safetensors").string());
        QCOMPARE(window.exportSelectedWeights(exported), QString());
        const WeightsFile a = readSafetensors(saved.toStdString()), b = readSafetensors(exported.toStdString());
        QCOMPARE(b.tensors.size(), a.tensors.size());
        QCOMPARE(b.tensors.front().name, std::string("conv1.weight"));
        QVERIFY(b.tensors.front().dtype == WeightDtype::bf16);   // a pure recipe's weights, as held
        for (std::size_t i = 0; i < a.tensors.size(); ++i) QVERIFY(a.tensors[i].values == b.tensors[i].values);
        // A damaged weights file is not exported (and the target is left alone).
        QFile::resize(saved, QFileInfo(saved).size() - 3);
        QVERIFY(window.exportSelectedWeights(exported).contains(QStringLiteral("not exported")));
        QVERIFY(readSafetensors(exported.toStdString()).tensors.size() == a.tensors.size());

        // A second run from the exported weights (typed in the panel's field).
        auto* field = window.settingsPanel()->findChild<QLineEdit*>(QStringLiteral("initWeightsEdit"));
        QVERIFY(field);
        field->setText(exported);
        QCOMPARE(QString::fromStdString(window.settingsPanel()->settings().initWeights), exported);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QCOMPARE(finished.at(1).at(1).value<RunResult>().status, RunStatus::completed);
        const RunPtr second = window.runStore()->run(finished.at(1).at(0).toString());
        QVERIFY(second);
        QCOMPARE(QString::fromStdString(second->settings().initWeights), exported);
        QVERIFY(QFileInfo::exists(QString::fromStdString(second->settings().saveWeights)));
        QVERIFY(second->settings().saveWeights != saved.toStdString());   // its own file, not the first run's

        // Weights of another model: refused naming the file and a tensor.
        field->setText(exported);
        TrainSettings mlp = window.settingsPanel()->settings();
        mlp.model.kind = "mlp";
        mlp.model.widths.clear();
        window.settingsPanel()->setSettings(mlp);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
        QVERIFY2(window.bannerText().contains(QStringLiteral("exported.safetensors")) &&
                     window.bannerText().contains(QStringLiteral("fc1.weight")),
                 qPrintable(window.bannerText()));

        // Delete the first run: its weights go to the trash with its record; Undo brings both back.
        QFile::resize(saved, 0);   // (damaged above; any content will do here)
        for (int row = 0; row < window.runListModel()->rowCount(); ++row)
            if (window.runListModel()->runAt(row)->id() == first) window.runListView()->selectRow(row);
        window.findChild<QAction*>(QStringLiteral("deleteAction"))->trigger();
        QVERIFY(!QFileInfo::exists(saved));
        QVERIFY(QFileInfo::exists(QDir(o.runsDir).filePath(QStringLiteral("trash/") + first + QStringLiteral(".safetensors"))));
        QVERIFY(window.statusBar()->currentMessage().startsWith(QStringLiteral("Deleted")));
        window.findChild<QAction*>(QStringLiteral("undoDeleteAction"))->trigger();
        QVERIFY(QFileInfo::exists(saved));
        // The status bar says what is true now (issue 67, item 8): not "Deleted" after the undo.
        QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Restored the deleted run"));
    }

    // Issue 66, finding 1: a record from someone else whose settings name files (batches to
    // write over, batches and data to read): Use These Settings (Ctrl+U) and Start write
    // nothing there; the panel says which paths it did not take.
    void recordSettingsNeverNameAnOutput()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-hostile").string());
        const fs::path victim = dir_.path() / "notes.txt";
        { std::ofstream(victim) << "my notes\n"; }
        QString id;
        {
            MainWindow window(o);
            QTRY_VERIFY(window.runsLoaded());
            window.settingsPanel()->setSettings(settingsFromJson(
                json{{"recipe", "fp32"}, {"widths", {4, 8}}, {"batch", 16}, {"max_steps", 3}, {"threads", 1},
                     {"histogram_every", 0}},
                "test"));
            QSignalSpy finished(window.controller(), &TrainingController::runFinished);
            window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
            QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
            id = finished.at(0).at(0).toString();
        }
        const fs::path record = fs::path(o.runsDir.toStdString()) / (id.toStdString() + ".json");
        json doc = loadRunRecordDocument(record);
        doc["settings"]["write_batches"] = victim.string();
        doc["settings"]["read_batches"] = (dir_.path() / "elsewhere.txt").string();
        doc["settings"]["data_dir"] = "/nonexistent-data";
        doc["settings"]["save_weights"] = victim.string();
        std::ofstream(record) << doc.dump();

        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());
        window.show();
        QTRY_COMPARE(window.runListModel()->rowCount(), 1);
        window.runListView()->selectRow(0);
        auto* useSettings = window.findChild<QAction*>(QStringLiteral("useSettingsAction"));
        QTRY_VERIFY(useSettings->isEnabled());
        useSettings->trigger();   // Run > Use These Settings (Ctrl+U)
        const TrainSettings taken = window.settingsPanel()->settings();
        QVERIFY(taken.writeBatches.empty() && taken.readBatches.empty() && taken.dataDir.empty() && taken.saveWeights.empty());
        const QString notice = window.settingsPanel()->notices().filter(QStringLiteral("Not taken")).join(QString());
        for (const char* key : {"write_batches", "read_batches", "data_dir"})
            QVERIFY2(notice.contains(QLatin1String(key)), qPrintable(notice));
        QVERIFY2(window.settingsPanel()->findChild<QPushButton*>(QStringLiteral("startButton"))
                     ->toolTip().contains(QDir::toNativeSeparators(o.runsDir)),
                 "Start says where the run writes");
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(finished.at(0).at(1).value<RunResult>().status, RunStatus::completed);
        std::ifstream in(victim);
        const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QCOMPARE(kept, std::string("my notes\n"));
    }

    // Issue 67, item 8: the status bar follows the run: "Paused" while paused (it said
    // "Training" then), "Training" again on resume.
    void statusBarFollowsTheRunsState()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-status").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());
        window.settingsPanel()->setSettings(settingsFromJson(
            json{{"recipe", "fp32"}, {"widths", {4, 8}}, {"batch", 16}, {"epochs", 1000}, {"threads", 1},
                 {"histogram_every", 0}},
            "test"));
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(window.controller()->state(), TrainingController::State::training, 30000);
        QTRY_VERIFY(window.statusBar()->currentMessage().startsWith(QStringLiteral("Training")));
        auto* pause = window.findChild<QAction*>(QStringLiteral("pauseAction"));
        pause->trigger();
        QTRY_COMPARE(window.controller()->state(), TrainingController::State::paused);
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Paused")),
                 qPrintable(window.statusBar()->currentMessage()));
        pause->trigger();   // Resume
        QTRY_COMPARE(window.controller()->state(), TrainingController::State::training);
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Training")),
                 qPrintable(window.statusBar()->currentMessage()));
        window.findChild<QAction*>(QStringLiteral("stopAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    }

    // Issue 67, item 1: a watched run whose record another program removes leaves the list
    // and the charts; the next run is watched.
    void runRemovedByAnotherProgramLeavesTheWindow()
    {
        MainWindowOptions o = options();
        const fs::path runs = dir_.path() / "runs-removed";
        fs::create_directories(runs);
        o.runsDir = QString::fromStdString(runs.string());
        const DataSplit data = loadDataset("mnist", dir_.path());
        for (const char* id : {"run-a", "run-b"}) {
            const TrainSettings s = settingsFromJson(json{{"widths", {4, 8}}, {"batch", 16}, {"max_steps", 2}, {"threads", 1}}, "test");
            RunRecorder recorder(runs / (std::string(id) + ".json"), s, data, id);
            Trainer trainer(s, data, [&](const TrainerEvent& e) { recorder.onEvent(e); });
            recorder.finish(trainer.run());
        }
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());
        QTRY_COMPARE(window.runListModel()->rowCount(), 2);
        for (int row = 0; row < window.runListModel()->rowCount(); ++row)
            if (window.runListModel()->runAt(row)->id() == QStringLiteral("run-b")) window.runListView()->selectRow(row);
        QTRY_COMPARE(window.watchedRunId(), QStringLiteral("run-b"));
        fs::remove(runs / "run-b.json");
        QTRY_COMPARE_WITH_TIMEOUT(window.runListModel()->rowCount(), 1, 10000);
        QTRY_VERIFY(window.watchedRunId() != QStringLiteral("run-b"));
    }

    void badDataFolderShowsOneSentence()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-bad").string());
        o.dataDir = QString::fromStdString((dir_.path() / "nowhere").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());   // the runs folder is listed off the GUI thread
        TrainSettings s = window.settingsPanel()->settings();
        s.dataDir.clear();
        window.settingsPanel()->setSettings(s);
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QVERIFY(!window.bannerText().isEmpty());
        QCOMPARE(window.runListModel()->rowCount(), 0);
    }

    // `precision-lab A.json B.json`: both opened and overlaid, the first shown; a file that
    // is not a run record among them is one error sentence.
    void severalRecordsAreCompared()
    {
        const DataSplit split = loadDataset("mnist", dir_.path());
        const auto record = [&](const std::string& recipe, const std::string& name) {
            const fs::path file = dir_.path() / ("compare-" + name + ".json");
            const TrainSettings s = settingsFromJson(json{{"recipe", recipe}, {"widths", {4, 8}}, {"batch", 16},
                                                          {"epochs", 1}, {"max_steps", 6}, {"threads", 1}},
                                                     "test");
            RunRecorder recorder(file, s, split, name);
            Trainer trainer(s, split, [&](const TrainerEvent& e) { recorder.onEvent(e); });
            recorder.finish(trainer.run());
            return QString::fromStdString(file.string());
        };
        const QString fp32 = record("fp32", "fp32-run"), amp = record("amp-fp16", "amp-run");

        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-compare").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());
        QCOMPARE(window.compareRunRecords({amp, fp32}), QString());
        RunListModel* model = window.runListModel();
        QCOMPARE(model->rowCount(), 2);
        QCOMPARE(model->comparedRuns().size(), 2);
        QCOMPARE(model->runAt(model->rowOf(window.watchedRunId()))->name(), QStringLiteral("amp-run"));
        window.chartsView()->redrawNow();
        QVERIFY(pointsOf(window.chartsView(), QStringLiteral("loss"), QStringLiteral("amp-run")) > 0);
        QVERIFY(pointsOf(window.chartsView(), QStringLiteral("loss"), QStringLiteral("fp32-run")) > 0);

        const fs::path config = dir_.path() / "compare-config.json";
        std::ofstream(config) << R"({"recipe": "fp32"})";
        const QString error = window.compareRunRecords({fp32, QString::fromStdString(config.string())});
        QVERIFY(!error.isEmpty());
        QVERIFY2(error.contains(QStringLiteral("compare-config.json")), qPrintable(error));
        QCOMPARE(model->rowCount(), 2);   // checked before any is opened: nothing added

        // A FIFO among them (a file from someone else) is refused unread: no hang.
        const fs::path fifo = dir_.path() / "compare-fifo.json";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const QString fifoError = window.compareRunRecords({fp32, QString::fromStdString(fifo.string())});
        QVERIFY2(fifoError.contains(QStringLiteral("FIFO")), qPrintable(fifoError));
        QCOMPARE(model->rowCount(), 2);
    }

    void badFileIsReportedInTheWindow()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-file").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());   // the runs folder is listed off the GUI thread
        QVERIFY(!window.openFile(QStringLiteral("/no/such/file.json")).isEmpty());
        QVERIFY(!window.bannerText().isEmpty());
    }
};

QTEST_MAIN(TestUiE2e)
#include "tst_ui_e2e.moc"
