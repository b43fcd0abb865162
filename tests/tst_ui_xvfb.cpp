// The app on a real X server with no window manager (Xvfb, as CI and a kiosk machine run
// it), not the offscreen platform the other UI suites use: the window maps and is exposed,
// and File > Open Run Record's dialog gets the keyboard focus, takes a typed path and opens
// the run. CTest runs this suite under xvfb-run with QT_QPA_PLATFORM=xcb (tests/CMakeLists.txt).
#include "main_window.h"
#include "record/record_writer.h"
#include "run_list_model.h"
#include "test_support.h"
#include "train/trainer.h"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QGuiApplication>
#include <QLineEdit>
#include <QTest>
#include <QTimer>

#include <nlohmann/json.hpp>

using namespace plab;
using namespace plab::ui;

class TestUiXvfb : public QObject {
    Q_OBJECT
    testing::TempDir dir_;

private slots:
    void initTestCase()
    {
        if (QGuiApplication::platformName() != QLatin1String("xcb"))
            QSKIP("needs an X server (CTest runs this suite under xvfb-run with QT_QPA_PLATFORM=xcb)");
    }

    void openRunRecordByTheDialog()
    {
        // A record made elsewhere (outside the app's runs folder), as a colleague sends one.
        testing::writeSyntheticDataset(dir_.path() / "mnist", 64, 32, 7);
        const DataSplit data = loadDataset("mnist", dir_.path());
        const TrainSettings s = settingsFromJson(nlohmann::json{{"recipe", "amp-fp16"}, {"widths", {4, 8}}, {"batch", 16},
                                                                {"max_steps", 3}, {"threads", 1}},
                                                 "test");
        const auto record = dir_.path() / "from-a-colleague.json";
        RunRecorder recorder(record, s, data, "colleague's run");
        Trainer trainer(s, data, [&](const TrainerEvent& e) { recorder.onEvent(e); });
        recorder.finish(trainer.run());

        MainWindowOptions o;
        o.dataDir = QString::fromStdString(dir_.path().string());
        o.runsDir = QString::fromStdString((dir_.path() / "runs").string());
        o.settingsFile = QString::fromStdString((dir_.path() / "settings.ini").string());
        MainWindow window(o);
        QTRY_VERIFY(window.runsLoaded());
        window.resize(1280, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        // The dialog, once shown: it must have the keyboard (no window manager gives it the
        // focus), then the path is typed into its file name field and Enter opens it.
        bool dialogActive = false, typed = false;
        QString focusIn;
        QTimer poll;
        poll.setInterval(50);
        QObject::connect(&poll, &QTimer::timeout, &window, [&] {
            auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
            if (!dialog || !dialog->isVisible() || typed) return;
            if (!QTest::qWaitForWindowActive(dialog, 5000)) return;   // then the check below fails
            dialogActive = dialog->isActiveWindow();
            QWidget* focus = QApplication::focusWidget();
            focusIn = focus ? focus->objectName() : QString();
            auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
            if (!name) return;
            typed = true;
            QTest::keyClicks(name, QString::fromStdString(record.string()));
            QTest::keyClick(name, Qt::Key_Return);
        });
        poll.start();
        auto* open = window.findChild<QAction*>(QStringLiteral("openRunAction"));
        QVERIFY(open);
        QTimer::singleShot(20000, &window, [] {   // never hang: a dialog still open is rejected
            if (auto* d = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) d->reject();
        });
        open->trigger();   // returns when the dialog closes
        poll.stop();
        QVERIFY2(typed, "the file dialog never showed");
        QVERIFY2(dialogActive, "the file dialog did not become the active window");
        QCOMPARE(focusIn, QStringLiteral("fileNameEdit"));
        QTRY_COMPARE(window.runListModel()->rowCount(), 1);
        QVERIFY(window.runListModel()->runAt(0)->name().contains(QStringLiteral("colleague")));
        QCOMPARE(window.watchedRunId(), window.runListModel()->runAt(0)->id());
        window.close();
    }
};

QTEST_MAIN(TestUiXvfb)
#include "tst_ui_xvfb.moc"
