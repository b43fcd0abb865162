// startup_bench: the app's start-up with a runs folder of thousands (issue 37, finding 8).
//   QT_QPA_PLATFORM=offscreen startup_bench --record TEMPLATE.json [--runs 5000] [--repeats 5]
//                                           [--folder DIR]
// Fills DIR (default: a temporary folder) with --runs copies of a real run record, then
// starts the main window on it in a fresh process per measurement, --repeats times in each
// of two states: "first start" (no index: every record parsed, on the scan's threads) and
// "next start" (the index the first start wrote). Each process reports, from the start of
// main(): the window shown, the runs list complete (all rows), the longest event-loop gap
// while the list filled (a 5 ms timer: how long the window was unresponsive), its peak
// resident memory, and the same after the last run's charts are shown. Medians printed.
#include "charts/charts_view.h"
#include "main_window.h"
#include "report/runs_index.h"
#include "run_list_model.h"
#include "run_store.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

using namespace plab::ui;
namespace fs = std::filesystem;

namespace {

double peakRssMiB()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// One start: prints "window_ms list_ms max_gap_ms rss_mib rows shown_ms shown_rss_mib".
int child(const QString& folder, const QElapsedTimer& sinceMain)
{
    QTemporaryDir scratch;
    MainWindowOptions options;
    options.runsDir = folder;
    options.settingsFile = scratch.filePath(QStringLiteral("settings.ini"));
    options.dataDir = scratch.path();
    MainWindow window(options);
    window.resize(1400, 900);
    window.show();
    QCoreApplication::processEvents();
    const double windowMs = static_cast<double>(sinceMain.nsecsElapsed()) / 1e6;

    double maxGap = 0.0;
    QElapsedTimer tick;
    tick.start();
    QTimer probe;
    probe.setInterval(5);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        maxGap = std::max(maxGap, static_cast<double>(tick.nsecsElapsed()) / 1e6);
        tick.restart();
    });
    probe.start();
    while (!window.runsLoaded()) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    QCoreApplication::processEvents();
    probe.stop();
    const double listMs = static_cast<double>(sinceMain.nsecsElapsed()) / 1e6;
    const double listRss = peakRssMiB();
    const int rows = window.runListModel()->rowCount();

    // The newest run is watched once the list is complete: its charts read its record.
    QElapsedTimer shown;
    shown.start();
    window.chartsView()->redrawNow();
    const RunPtr watched = window.runListModel()->runAt(rows - 1);
    const bool drawn = watched && !watched->steps().empty();
    std::printf("%.1f %.1f %.1f %.1f %d %.1f %.1f %d\n", windowMs, listMs, maxGap, listRss, rows,
                static_cast<double>(shown.nsecsElapsed()) / 1e6, peakRssMiB(), drawn ? 1 : 0);
    return 0;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    QElapsedTimer sinceMain;
    sinceMain.start();
    QApplication app(argc, argv);
    const QStringList args = QCoreApplication::arguments();
    if (args.size() == 3 && args[1] == QLatin1String("--child")) return child(args[2], sinceMain);

    QString record, folder;
    int runs = 5000, repeats = 5;
    for (int i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == "--record") record = args[i + 1];
        else if (args[i] == "--runs") runs = args[i + 1].toInt();
        else if (args[i] == "--repeats") repeats = args[i + 1].toInt();
        else if (args[i] == "--folder") folder = args[i + 1];
    }
    if (record.isEmpty() || runs < 1 || repeats < 1) {
        std::fprintf(stderr, "usage: startup_bench --record TEMPLATE.json [--runs N] [--repeats R] [--folder DIR]\n");
        return 2;
    }
    QTemporaryDir temporary;
    if (folder.isEmpty()) folder = temporary.filePath(QStringLiteral("runs"));
    const fs::path dir = folder.toStdString();
    fs::create_directories(dir);
    // Copies, not links: each record is its own file, read from disk (the page cache, after
    // the first start) like a folder the app filled over months.
    for (int i = 0; i < runs; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "run-%05d.json", i);
        if (!fs::exists(dir / name)) fs::copy_file(record.toStdString(), dir / name);
    }
    std::printf("%d records of %.0f KiB in %s\n", runs, static_cast<double>(fs::file_size(record.toStdString())) / 1024.0,
                qPrintable(folder));

    for (const bool withIndex : {false, true}) {
        std::vector<double> window, list, gap, rss, shown, shownRss;
        for (int r = 0; r < repeats; ++r) {
            if (!withIndex) fs::remove(dir / plab::kRunsIndexFileName);
            QProcess p;
            p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
            p.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--child"), folder});
            if (!p.waitForFinished(600000) || p.exitCode() != 0) {
                std::fprintf(stderr, "startup_bench: a start failed\n");
                return 1;
            }
            double w, l, g, m, s, sm;
            int rows, drawn;
            if (std::sscanf(p.readAllStandardOutput().constData(), "%lf %lf %lf %lf %d %lf %lf %d", &w, &l, &g, &m, &rows,
                            &s, &sm, &drawn) != 8 || rows != runs || !drawn) {
                std::fprintf(stderr, "startup_bench: a start did not list all %d runs or draw the newest\n", runs);
                return 1;
            }
            window.push_back(w), list.push_back(l), gap.push_back(g), rss.push_back(m), shown.push_back(s),
                shownRss.push_back(sm);
        }
        std::printf("%s (median of %d): window shown %.0f ms, list complete %.0f ms, longest event-loop gap %.0f ms, "
                    "peak RSS %.0f MiB; the newest run's charts %.0f ms later, peak RSS %.0f MiB\n",
                    withIndex ? "next start (index)" : "first start (no index)", repeats, median(window), median(list),
                    median(gap), median(rss), median(shown), median(shownRss));
    }
    return 0;
}
