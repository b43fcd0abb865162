// ui_bench: how the live charts hold up (not a test; numbers go to bench/RESULTS.md).
//  (a) time to redraw all six chart groups with 100,000 steps of data: ChartsView::redrawNow()
//      alone, and redraw plus painting the whole view; median of repeats; and the paint of
//      each group alone (what one frame of the round-robin scheduler pays);
//  (b) the gaps between event-loop iterations (1 ms timer ticks) while events stream in: a synthetic producer
//      thread at a fixed step rate (with two 100,000-step comparison runs overlaid), and a
//      real small-cnn Trainer on a std::thread with synthetic MNIST-shaped data (alone and with
//      the two overlays); events reach the GUI thread by queued invocations, as the controller
//      does. Reports p50/p99/max in ms.
// Run offscreen: QT_QPA_PLATFORM=offscreen ui_bench [--steps N] [--repeats N] [--seconds S]
//   [--rate STEPS_PER_S] [--screenshot FILE.png]
// run_data.h first: engine/train/trainer.h names a member emit(), which Qt's emit macro
// would break once a Qt header came before it.
#include "run_data.h"

#include "charts/chart_support.h"
#include "charts/charts_view.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QMetaObject>
#include <QPainter>
#include <QXYSeries>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

using namespace plab;
using namespace plab::ui;

namespace {

struct Options {
    std::int64_t steps = 100000;
    int repeats = 15;
    double seconds = 6.0;
    double rate = 1000.0;   // synthetic steps per second (small-cnn on 2 cores does ~100-300)
    QString screenshot;
};

double percentile(std::vector<double> v, double p)
{
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(std::clamp(p * static_cast<double>(v.size() - 1), 0.0, static_cast<double>(v.size() - 1)));
    return v[i];
}

TrainSettings settingsFor(const char* preset)
{
    TrainSettings s;
    s.recipe = *PrecisionRecipe::fromPreset(preset);
    return s;
}

// The events of one training step as the trainer sends them (histograms every 50 steps).
std::vector<TrainerEvent> stepEvents(std::int64_t step, std::int64_t total, std::mt19937& rng, double lossOffset)
{
    std::vector<TrainerEvent> events;
    std::normal_distribution<double> noise(0.0, 0.05);
    StepEvent e;
    e.step = step;
    e.loss = static_cast<float>(lossOffset + 2.3 * std::exp(-static_cast<double>(step) / 20000.0) + noise(rng));
    e.lossScale = std::exp2(16 - static_cast<int>(step / 7000) % 8);
    e.skipped = step % 2000 == 0;
    e.batch = 32;
    e.timeMs = 4.0 + std::abs(noise(rng)) * 10;
    e.totalSteps = total;
    e.skippedSoFar = step / 2000;
    events.emplace_back(e);
    if (step % 50 == 0) {
        TelemetryEvent t;
        t.step = step;
        for (const char* layer : {"conv1", "conv2", "fc1"})
            for (TensorKind kind : {TensorKind::activation, TensorKind::activationGrad, TensorKind::weightGrad}) {
                LayerTelemetry l;
                l.layer = layer;
                l.kind = kind;
                std::normal_distribution<double> exponent(-12.0, 5.0);
                for (int i = 0; i < 2000; ++i) {
                    const int ex = std::clamp(static_cast<int>(exponent(rng)), -149, 127);
                    ++l.histogram.bins[static_cast<std::size_t>(GradientHistogram::binOf(ex))];
                }
                l.stats.count = 2000;
                l.stats.underflow = rng() % 40;
                l.stats.overflow = rng() % 3;
                t.layers.push_back(l);
            }
        events.emplace_back(t);
    }
    MemoryEvent m;
    m.step = step;
    for (int c = 0; c < kMemoryCategories; ++c) m.memory.live[static_cast<std::size_t>(c)] = (c + 1) << 20;
    m.memory.live[static_cast<std::size_t>(MemoryCategory::workspace)] += (step % 3) << 18;
    m.memory.peak = m.memory.live;
    for (auto v : m.memory.live) m.memory.totalLive += v;
    m.memory.totalPeak = m.memory.totalLive + (1 << 20);
    events.emplace_back(m);
    if (step == total / 2)
        events.emplace_back(SettingChangeEvent{step, "loss scaling dynamic from 65536 -> off",
                                               settingsFor("amp-fp16")});
    return events;
}

RunPtr filledRun(const QString& name, std::int64_t steps, QColor color, double lossOffset)
{
    auto run = std::make_shared<RunData>(QStringLiteral("bench-") + name, settingsFor("amp-fp16"));
    run->setName(name);
    run->setColor(color);
    run->apply(RunStartEvent{"cpu", {}, steps, {}, {}, {}, {}});
    std::mt19937 rng(static_cast<unsigned>(name.size()));
    for (std::int64_t i = 1; i <= steps; ++i)
        for (const TrainerEvent& e : stepEvents(i, steps, rng, lossOffset)) run->apply(e);
    return run;
}

// Gaps between event-loop iterations (a 1 ms timer's ticks; 1 ms when idle) while `produce` runs on a
// worker thread until it returns or `seconds` pass.
struct Gaps {
    std::vector<double> ms;
    std::int64_t events = 0;
};
Gaps measureGaps(double seconds, const std::function<void(std::atomic<bool>& stop, std::atomic<std::int64_t>& events)>& produce)
{
    Gaps gaps;
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> events{0};
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed();
    // A 1 ms precise timer: a zero-interval timer would starve the charts' own 40 ms timer
    // (Qt serves the always-ready zero timer first), hiding exactly the redraws we measure.
    QEventLoop loop;   // not QCoreApplication::exec/quit: quitting the application closes its windows
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(1);
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        gaps.ms.push_back(static_cast<double>(now - last) / 1e6);
        last = now;
        if (now > static_cast<qint64>(seconds * 1e9)) {
            stop = true;
            loop.quit();
        }
    });
    std::thread worker([&] { produce(stop, events); });
    tick.start();
    loop.exec();
    // Stop probing before joining the worker: the join (a trainer finishing its step) is not
    // an event-loop stall, but a tick delivered by the processEvents() below would count it.
    tick.stop();
    stop = true;
    worker.join();
    QCoreApplication::processEvents();   // deliver what the worker posted last
    gaps.events = events;
    return gaps;
}

void report(const char* what, const Gaps& g)
{
    std::printf("%s: event-loop gap p50=%.3f ms p99=%.3f ms max=%.3f ms over %zu iterations, %lld events\n", what,
                percentile(g.ms, 0.5), percentile(g.ms, 0.99), percentile(g.ms, 1.0), g.ms.size(),
                static_cast<long long>(g.events));
}

}  // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    Options o;
    const QStringList args = QCoreApplication::arguments();
    for (int i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == "--steps") o.steps = args[i + 1].toLongLong();
        else if (args[i] == "--repeats") o.repeats = args[i + 1].toInt();
        else if (args[i] == "--seconds") o.seconds = args[i + 1].toDouble();
        else if (args[i] == "--rate") o.rate = args[i + 1].toDouble();
        else if (args[i] == "--screenshot") o.screenshot = args[i + 1];
    }

    ChartsView view;
    view.resize(1600, 1200);
    view.show();
    QCoreApplication::processEvents();

    // (a) Redraw with 100,000 steps: the current run and two overlaid comparison runs.
    QElapsedTimer fill;
    fill.start();
    const RunPtr current = filledRun("amp-fp16", o.steps, QColor(31, 119, 180), 0.0);
    const RunPtr pure = filledRun("pure-fp16", o.steps, QColor(214, 39, 40), 0.4);
    const RunPtr noScale = filledRun("amp-noscale", o.steps, QColor(44, 160, 44), 0.2);
    std::printf("filled 3 runs of %lld steps in %.0f ms (%zu histogram steps each)\n", static_cast<long long>(o.steps),
                static_cast<double>(fill.elapsed()), current->telemetry().size());

    for (const auto& [label, compare] : {std::pair{"1 run", QList<RunPtr>{}}, std::pair{"3 runs", QList<RunPtr>{pure, noScale}}}) {
        view.setRuns(current, compare);
        view.redrawNow();
        QCoreApplication::processEvents();
        std::vector<double> redraw, redrawPaint;
        QImage frame(view.size() * view.devicePixelRatioF(), QImage::Format_ARGB32_Premultiplied);
        for (int r = 0; r < o.repeats; ++r) {
            // Every run moved: a full redraw, nothing reused from the last frame.
            for (const RunPtr& run : QList<RunPtr>{current} + compare) run->setName(run->name());
            QElapsedTimer t;
            t.start();
            view.redrawNow();
            redraw.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
            QPainter painter(&frame);
            view.render(&painter);
            redrawPaint.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
        }
        std::printf("redraw all charts, %lld steps, %s: median %.2f ms (max %.2f); redraw + paint: median %.2f ms (max %.2f)\n",
                    static_cast<long long>(o.steps), label, percentile(redraw, 0.5), percentile(redraw, 1.0),
                    percentile(redrawPaint, 0.5), percentile(redrawPaint, 1.0));
        // A live frame: only the watched run moved (comparison runs are reused).
        std::vector<double> live, livePaint;
        for (int r = 0; r < o.repeats; ++r) {
            current->setName(current->name());
            QElapsedTimer t;
            t.start();
            view.redrawNow();
            live.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
            QPainter painter(&frame);
            view.render(&painter);
            livePaint.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
        }
        std::printf("  live frame (only the watched run moved), %s: redraw median %.2f ms; redraw + paint median %.2f ms\n",
                    label, percentile(live, 0.5), percentile(livePaint, 0.5));
        // Where a full redraw goes: each group's redraw() alone, every run moved.
        std::printf("  full redraw per group (median of %d), %s:", o.repeats, label);
        for (const QString& name : ChartsView::groupNames()) {
            std::vector<double> ms;
            for (int r = 0; r < o.repeats; ++r) {
                for (const RunPtr& run : QList<RunPtr>{current} + compare) run->setName(run->name());
                QElapsedTimer t;
                t.start();
                static_cast<ChartGroup*>(view.group(name))->redraw(current, compare);
                ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
            }
            std::printf(" %s %.2f ms", qPrintable(name), percentile(ms, 0.5));
        }
        std::printf("\n");
        // What one frame of the scheduler pays per group: painting that group alone
        // (grab() runs the widgets' paintEvent()s, the chart views' included).
        std::printf("  paint of one group (grab(), median of %d), %s:", o.repeats, label);
        for (const QString& name : ChartsView::groupNames()) {
            std::vector<double> paint;
            for (int r = 0; r < o.repeats; ++r) {
                QElapsedTimer t;
                t.start();
                view.group(name)->grab();
                paint.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
            }
            std::printf(" %s %.2f ms", qPrintable(name), percentile(paint, 0.5));
        }
        std::printf("\n");
    }
    if (!o.screenshot.isEmpty()) view.grab().save(o.screenshot);

    // (b1) Synthetic producer at a fixed step rate into a fresh run, alone and with the two
    // 100,000-step comparison runs overlaid.
    for (const bool overlays : {false, true}) {
        const RunPtr live = std::make_shared<RunData>("bench-live", settingsFor("amp-fp16"));
        live->setName("live");
        live->setColor(QColor(255, 127, 14));
        view.setRuns(live, overlays ? QList<RunPtr>{pure, noScale} : QList<RunPtr>{});
        QObject receiver;
        int frames = 0;
        QTimer frameProbe;   // samples how far the drawn loss series got: counts redraws that showed new steps
        qsizetype drawnPoints = -1;
        QObject::connect(&frameProbe, &QTimer::timeout, [&] {
            for (QAbstractSeries* series : view.seriesOf("loss"))
                if (series->name() == "live loss (smoothed)")
                    if (const qsizetype n = static_cast<QXYSeries*>(series)->count(); n != drawnPoints) ++frames, drawnPoints = n;
        });
        frameProbe.start(10);
        const Gaps g = measureGaps(o.seconds, [&](std::atomic<bool>& stop, std::atomic<std::int64_t>& events) {
            std::mt19937 rng(3);
            const auto start = std::chrono::steady_clock::now();
            for (std::int64_t step = 1; !stop; ++step) {
                for (const TrainerEvent& e : stepEvents(step, o.steps, rng, 0.1)) {
                    QMetaObject::invokeMethod(&receiver, [live, e] { live->apply(e); }, Qt::QueuedConnection);
                    ++events;
                }
                std::this_thread::sleep_until(start + std::chrono::duration<double>(static_cast<double>(step) / o.rate));
            }
        });
        char what[128];
        std::snprintf(what, sizeof what, "synthetic producer %.0f steps/s, %s", o.rate,
                      overlays ? "2 x 100000-step overlays" : "no overlays");
        report(what, g);
        std::printf("  the live run received %zu steps; %d frames showed new steps\n", live->steps().size(), frames);
    }

    // (b2) A real small-cnn AMP FP16 training run on a worker thread (synthetic data), alone
    // and with the two 100,000-step comparison runs overlaid.
    for (const bool overlays : {false, true}) {
        TrainSettings s = settingsFromJson({{"model", "small-cnn"}, {"recipe", "amp-fp16"}, {"batch", 32}, {"epochs", 1},
                                            {"threads", 1}, {"histogram_every", 50}},
                                           "ui_bench");
        DataSplit data;
        data.name = "synthetic";
        data.description = "synthetic MNIST-shaped data";
        std::mt19937 rng(1);
        for (Dataset* ds : {&data.train, &data.test}) {
            ds->count = ds == &data.train ? 60000 : 500;
            ds->pixels.resize(static_cast<std::size_t>(ds->count) * 784);
            ds->labels.resize(static_cast<std::size_t>(ds->count));
            for (auto& p : ds->pixels) p = static_cast<std::uint8_t>(rng() % 256);
            for (auto& l : ds->labels) l = static_cast<std::uint8_t>(rng() % 10);
        }
        const RunPtr live = std::make_shared<RunData>("bench-trainer", s);
        live->setName("small-cnn amp-fp16");
        live->setColor(QColor(148, 103, 189));
        view.setRuns(live, overlays ? QList<RunPtr>{pure, noScale} : QList<RunPtr>{});
        QObject receiver;
        const Gaps g = measureGaps(o.seconds, [&](std::atomic<bool>& stop, std::atomic<std::int64_t>& events) {
            Trainer trainer(s, data, [&](const TrainerEvent& e) {
                QMetaObject::invokeMethod(&receiver, [live, e] { live->apply(e); }, Qt::QueuedConnection);
                ++events;
                if (stop) trainer.control().stop();
            });
            std::thread watchdog([&] {
                while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
                trainer.control().stop();
            });
            trainer.run();
            stop = true;
            watchdog.join();
        });
        QCoreApplication::processEvents();
        std::printf("trainer: %zu steps in the window (%.0f images/s)\n", live->steps().size(), live->imagesPerSecond());
        report(overlays ? "small-cnn AMP FP16 Trainer on a std::thread, 2 x 100000-step overlays"
                        : "small-cnn AMP FP16 Trainer on a std::thread, no overlays",
               g);
    }
    return 0;
}
