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
#include "report/run_record.h"

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QXYSeries>
#include <QtTest>

using namespace plab;
using namespace plab::ui;
using nlohmann::json;

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

        const json record = loadRunRecord(std::filesystem::path(o.runsDir.toStdString()) / (id.toStdString() + ".json"));
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

    void badDataFolderShowsOneSentence()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-bad").string());
        o.dataDir = QString::fromStdString((dir_.path() / "nowhere").string());
        MainWindow window(o);
        TrainSettings s = window.settingsPanel()->settings();
        s.dataDir.clear();
        window.settingsPanel()->setSettings(s);
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.findChild<QAction*>(QStringLiteral("startAction"))->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QVERIFY(!window.bannerText().isEmpty());
        QCOMPARE(window.runListModel()->rowCount(), 0);
    }

    void badFileIsReportedInTheWindow()
    {
        MainWindowOptions o = options();
        o.runsDir = QString::fromStdString((dir_.path() / "runs-file").string());
        MainWindow window(o);
        QVERIFY(!window.openFile(QStringLiteral("/no/such/file.json")).isEmpty());
        QVERIFY(!window.bannerText().isEmpty());
    }
};

QTEST_MAIN(TestUiE2e)
#include "tst_ui_e2e.moc"
