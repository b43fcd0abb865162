// precision-lab: the desktop application.
//   precision-lab [--start] [--data-dir DIR] [--runs-dir DIR] [--theme light|dark]
//                 [--lesson FILE [--run-lesson [--reveal]]] [--presentation] [--explore NUMBER]
//                 [--screenshot PNG [--screenshot-delay SECONDS]] [FILE ...]
// FILE is a run record (opened and shown as a run) or a config JSON (loaded into the
// settings panel); --start begins a run with those settings at once. Several FILEs are
// run records compared: all overlaid, the first shown. A bad file opens the
// window anyway, with the error shown in it. --screenshot saves the window after the
// delay and quits (used to make the documentation's screenshots under Xvfb). --lesson opens
// a lesson (--run-lesson also runs it; --reveal shows its explanation once the runs have
// finished, and a screenshot then waits for the lesson: its delay counts from the end),
// --presentation starts in presentation mode, --explore shows a number in the explorer.
#include "app_theme.h"
#include "charts/charts_view.h"
#include "explorer/format_explorer.h"
#include "lessons/lesson_panel.h"
#include "main_window.h"
#include "run_list_model.h"
#include "training_controller.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QMessageBox>
#include <QPixmap>
#include <QTimer>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string_view>

int main(int argc, char** argv)
{
    std::signal(SIGXFSZ, SIG_IGN);   // past ulimit -f a write fails (an error shown), never the process
    // --help and --version only print: they answer without a display. QApplication aborts
    // where it finds none, so a text-only application parses the same options for them.
    const bool textOnly = std::any_of(argv + 1, argv + argc, [](const char* a) {
        const std::string_view arg(a);
        return arg == "--help" || arg == "--help-all" || arg == "-h" || arg == "-?" || arg == "--version" || arg == "-v";
    });
    std::unique_ptr<QCoreApplication> owner = textOnly ? std::make_unique<QCoreApplication>(argc, argv)
                                                       : std::make_unique<QApplication>(argc, argv);
    QCoreApplication& app = *owner;
    QCoreApplication::setOrganizationName(QStringLiteral("Precision Lab"));
    QCoreApplication::setApplicationName(QStringLiteral("precision-lab"));
    QCoreApplication::setApplicationVersion(QStringLiteral(PLAB_VERSION));
    if (!textOnly) {
        QApplication::setApplicationDisplayName(QStringLiteral("Precision Lab"));
        QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/precision-lab.svg")));
        // The desktop entry's id (the AppStream id): Wayland compositors match the window to it.
        QGuiApplication::setDesktopFileName(QStringLiteral("io.github.precisionlab.PrecisionLab"));
    }

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Precision Lab: watch mixed-precision training live."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption start(QStringLiteral("start"), QStringLiteral("Start a run with the settings at once."));
    const QCommandLineOption dataDir(QStringLiteral("data-dir"), QStringLiteral("Data folder (default: the per-user folder the set-up fills)."),
                                     QStringLiteral("DIR"));
    const QCommandLineOption runsDir(QStringLiteral("runs-dir"), QStringLiteral("Runs folder (default: ~/.local/share/precision-lab/runs)."),
                                     QStringLiteral("DIR"));
    const QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("light or dark (default: as last time)."),
                                   QStringLiteral("THEME"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Save the window as PNG after the delay, then quit."),
                                        QStringLiteral("PNG"));
    const QCommandLineOption screenshotDelay(QStringLiteral("screenshot-delay"), QStringLiteral("Seconds before --screenshot (default 10)."),
                                             QStringLiteral("SECONDS"), QStringLiteral("10"));
    const QCommandLineOption lesson(QStringLiteral("lesson"), QStringLiteral("Open a lesson file."), QStringLiteral("FILE"));
    const QCommandLineOption runLesson(QStringLiteral("run-lesson"), QStringLiteral("Run the lesson's runs at once."));
    const QCommandLineOption reveal(QStringLiteral("reveal"),
                                    QStringLiteral("With --run-lesson: reveal the explanation when the runs have finished "
                                                   "(a screenshot's delay then counts from there)."));
    const QCommandLineOption presentation(QStringLiteral("presentation"), QStringLiteral("Start in presentation mode."));
    const QCommandLineOption explore(QStringLiteral("explore"), QStringLiteral("Show NUMBER in the format explorer."),
                                     QStringLiteral("NUMBER"));
    parser.addOptions({start, dataDir, runsDir, theme, screenshot, screenshotDelay, lesson, runLesson, reveal, presentation, explore});
    parser.addPositionalArgument(QStringLiteral("FILE"),
                                 QStringLiteral("A run record to show, or a config JSON to load; several run records are "
                                                "compared (overlaid, the first shown)."),
                                 QStringLiteral("[FILE ...]"));
    parser.process(app);   // --help and --version print and exit here
    if (textOnly) {
        // "--help" given as another option's value (--lesson --help): not a request for help.
        std::fputs("precision-lab: --help or --version was read as another option's value; give it on its own "
                   "to print the help or the version\n",
                   stderr);
        return 2;
    }

    plab::ui::MainWindowOptions options;
    options.dataDir = parser.value(dataDir);
    options.runsDir = parser.value(runsDir);
    plab::ui::MainWindow window(options);
    if (parser.isSet(theme)) {
        const bool dark = parser.value(theme) == QLatin1String("dark");
        if (auto* toggle = window.findChild<QAction*>(QStringLiteral("darkThemeAction"))) toggle->setChecked(dark);
        plab::ui::applyTheme(dark);
    }
    window.show();

    QString error;
    bool isConfig = false;
    const QStringList files = parser.positionalArguments();
    if (files.size() > 1) {
        error = window.compareRunRecords(files);
        if (error.isEmpty() && parser.isSet(start))
            error = QObject::tr("--start needs one config file; the %1 run records given are compared as they are.")
                        .arg(files.size());
    } else if (!files.isEmpty()) {
        const QString file = files.constFirst();
        const int runsBefore = window.runListModel()->rowCount();
        error = window.openFile(file);
        isConfig = error.isEmpty() && window.runListModel()->rowCount() == runsBefore;
        if (error.isEmpty() && !isConfig && parser.isSet(start))
            error = QObject::tr("--start needs a config file; %1 is a run record, shown as it is.").arg(file);
    }
    if (!error.isEmpty()) {
        auto* box = new QMessageBox(QMessageBox::Warning, QStringLiteral("Precision Lab"), error, QMessageBox::Ok, &window);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();   // non-blocking: the window stays usable
    } else if (parser.isSet(start)) {
        QTimer::singleShot(0, &window, [&window] { window.startRun(); });
    }

    if (error.isEmpty() && parser.isSet(lesson)) {
        error = window.openLesson(parser.value(lesson));
        if (error.isEmpty() && parser.isSet(runLesson))
            QTimer::singleShot(0, &window, [&window] { window.lessonPanel()->runLesson(); });
    }
    // Presentation mode first: it hides the docks a lesson does not need, and the explorer
    // asked for here is then shown beside the lesson panel.
    if (parser.isSet(presentation)) window.setPresentationMode(true);
    if (parser.isSet(explore)) {
        if (auto* dock = window.findChild<QDockWidget*>(QStringLiteral("explorerDock"))) {
            dock->show();
            // Room for every format's row (asked for, the explorer is what is looked at), once
            // the window is laid out.
            QTimer::singleShot(0, &window, [&window, dock] {
                window.resizeDocks({dock}, {std::max(dock->height(), window.height() * 2 / 3)}, Qt::Vertical);
                window.resizeDocks({dock}, {std::max(dock->width(), 560)}, Qt::Horizontal);
            });
        }
        window.formatExplorer()->setText(parser.value(explore));
    }

    const bool afterLesson = error.isEmpty() && parser.isSet(lesson) && parser.isSet(runLesson) && parser.isSet(reveal);
    if (afterLesson)
        QObject::connect(window.lessonPanel(), &plab::ui::LessonPanel::lessonFinished, &window, [&window] { window.lessonPanel()->reveal(); });
    if (parser.isSet(screenshot)) {
        const QString png = parser.value(screenshot);
        const int delayMs = static_cast<int>(1000 * parser.value(screenshotDelay).toDouble());
        auto shoot = [&window, png] {
            window.chartsView()->redrawNow();
            // Legends and captions are laid out in the event loop after a redraw: grab then.
            QTimer::singleShot(500, &window, [&window, png] {
                const bool saved = window.grab().save(png);
                std::fprintf(stderr, saved ? "precision-lab: screenshot saved to %s\n" : "precision-lab: could not save %s\n",
                             qPrintable(png));
                window.close();
            });
        };
        if (afterLesson)
            QObject::connect(window.lessonPanel(), &plab::ui::LessonPanel::lessonFinished, &window,
                             [&window, delayMs, shoot] { QTimer::singleShot(delayMs, &window, shoot); });
        else
            QTimer::singleShot(delayMs, &window, shoot);
    }
    return app.exec();
}
