// Tests of the main window's classroom actions: presentation mode (bigger fonts, docks
// hidden, only the lesson's charts; toggling back restores them), the configuration
// copied and pasted as one line of JSON through the clipboard (with one clear sentence
// for bad input), and File > Export of a finished run (PDF, HTML, CSV, JSON records).

#include "charts/charts_view.h"
#include "export/run_export.h"
#include "lessons/lesson_panel.h"
#include "main_window.h"
#include "run_list_model.h"
#include "settings_panel.h"
#include "test_support.h"
#include "training_controller.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDockWidget>
#include <QSignalSpy>
#include <QtTest>

using namespace plab;
using namespace plab::ui;
using nlohmann::json;

class TestUiPresentation : public QObject {
    Q_OBJECT
    testing::TempDir dir_;

    MainWindowOptions options() const
    {
        MainWindowOptions o;
        o.dataDir = QString::fromStdString(dir_.path().string());
        o.runsDir = QString::fromStdString((dir_.path() / "runs").string());
        o.settingsFile = QString::fromStdString((dir_.path() / "settings.ini").string());
        return o;
    }

    static QList<QDockWidget*> visibleDocks(MainWindow& w)
    {
        QList<QDockWidget*> docks;
        for (QDockWidget* d : w.findChildren<QDockWidget*>())
            if (d->isVisible()) docks << d;
        return docks;
    }

private slots:
    void initTestCase() { testing::writeSyntheticDataset(dir_.path() / "mnist", 256, 64, 3); }

    void presentationTogglesAndRestores()
    {
        MainWindow window(options());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const qreal normalSize = window.font().pointSizeF();
        const QList<QDockWidget*> docksBefore = visibleDocks(window);
        QVERIFY(!docksBefore.isEmpty());
        auto* toggle = window.findChild<QAction*>(QStringLiteral("presentationAction"));
        QVERIFY(toggle);
        QVERIFY(toggle->shortcuts().contains(QKeySequence(Qt::Key_F11)));

        toggle->trigger();
        QVERIFY(window.presentationMode());
        QVERIFY(window.font().pointSizeF() > 1.4 * normalSize);
        QVERIFY(window.chartsView()->presentationMode());
        QVERIFY(visibleDocks(window).isEmpty());   // no lesson open: every dock hidden
        for (const QString& g : ChartsView::groupNames()) QVERIFY(window.chartsView()->group(g)->isVisible());

        toggle->trigger();
        QVERIFY(!window.presentationMode());
        QCOMPARE(window.font().pointSizeF(), normalSize);
        QVERIFY(!window.chartsView()->presentationMode());
        QTRY_COMPARE(visibleDocks(window), docksBefore);
    }

    // Closing the window in presentation mode must not save its hidden docks as the
    // layout of the next start (found by looking at a screenshot after a lesson).
    void closingInPresentationModeKeepsTheNormalLayout()
    {
        QStringList docksBefore;
        {
            MainWindow window(options());
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            for (QDockWidget* d : visibleDocks(window)) docksBefore << d->objectName();
            QVERIFY(!docksBefore.isEmpty());
            window.findChild<QAction*>(QStringLiteral("presentationAction"))->trigger();
            QVERIFY(window.presentationMode());
            window.close();
        }
        MainWindow reopened(options());
        reopened.show();
        QVERIFY(QTest::qWaitForWindowExposed(&reopened));
        QVERIFY(!reopened.presentationMode());
        QStringList docksAfter;
        for (QDockWidget* d : visibleDocks(reopened)) docksAfter << d->objectName();
        QCOMPARE(docksAfter, docksBefore);
    }

    void presentationShowsOnlyTheLessonsCharts()
    {
        MainWindow window(options());
        window.show();
        QCOMPARE(window.openLesson(QStringLiteral(PLAB_SOURCE_DIR "/resources/lessons/01-underflow-without-loss-scaling.json")),
                 QString());
        window.setPresentationMode(true);
        auto* lessonDock = window.findChild<QDockWidget*>(QStringLiteral("lessonDock"));
        QCOMPARE(visibleDocks(window), QList<QDockWidget*>{lessonDock});   // the question stays on screen
        QVERIFY(window.chartsView()->group(QStringLiteral("histogram"))->isVisible());
        QVERIFY(!window.chartsView()->group(QStringLiteral("memory"))->isVisible());
        window.setPresentationMode(false);
        QVERIFY(window.findChild<QDockWidget*>(QStringLiteral("settingsDock"))->isVisible());
    }

    void configurationAsOneLine()
    {
        MainWindow window(options());
        window.settingsPanel()->setSettings(settingsFromJson(json{{"recipe", "amp-bf16"}, {"batch", 48}, {"seed", 7}}, "test"));
        const QString line = window.copyConfiguration();
        QVERIFY(!line.contains(QLatin1Char('\n')));
        QCOMPARE(QApplication::clipboard()->text(), line);

        MainWindow other(options());
        QApplication::clipboard()->setText(line);
        QCOMPARE(other.pasteConfiguration(), QString());
        QCOMPARE(other.settingsPanel()->settings(), window.settingsPanel()->settings());

        QApplication::clipboard()->setText(QStringLiteral("recipe=fp16"));
        const QString error = other.pasteConfiguration();
        QVERIFY(error.contains(QStringLiteral("JSON object")));
        QCOMPARE(other.bannerText(), error);
        QApplication::clipboard()->setText(QStringLiteral(R"({"batch": -3})"));
        QVERIFY(other.pasteConfiguration().contains(QStringLiteral("batch")));
        QCOMPARE(other.settingsPanel()->settings(), window.settingsPanel()->settings());   // unchanged
    }

    void exportAFinishedRun()
    {
        MainWindow window(options());
        window.show();
        window.settingsPanel()->setSettings(settingsFromJson(
            json{{"recipe", "amp-fp16"}, {"widths", {4, 8}}, {"batch", 16}, {"max_steps", 8}, {"threads", 1},
                 {"histogram_every", 2}},
            "test"));
        QSignalSpy finished(window.controller(), &TrainingController::runFinished);
        window.startRun();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QTRY_COMPARE(window.exportableRecords().size(), 1);

        ExportRequest request;
        request.recordFiles = window.exportableRecords();
        request.folder = QString::fromStdString((dir_.path() / "export").string());
        QCOMPARE(window.exportRuns(request), QString());
        const QDir out(request.folder);
        QVERIFY(QFileInfo(out.filePath(QStringLiteral("report.pdf"))).size() > 1000);
        QVERIFY(QFileInfo(out.filePath(QStringLiteral("report.html"))).size() > 1000);
        QCOMPARE(QDir(out.filePath(QStringLiteral("records"))).entryList({QStringLiteral("*.json")}).size(), 1);
        QVERIFY(!QDir(out.filePath(QStringLiteral("csv"))).entryList({QStringLiteral("*.csv")}).isEmpty());

        ExportRequest nothing;
        nothing.folder = request.folder;
        QVERIFY(window.exportRuns(nothing).startsWith(QStringLiteral("Nothing to export")));
        ExportRequest unwritable = request;
        unwritable.folder = QStringLiteral("/proc/no-such-place");
        QVERIFY(window.exportRuns(unwritable).startsWith(QStringLiteral("The export failed")));
    }
};

QTEST_MAIN(TestUiPresentation)
#include "tst_ui_presentation.moc"
