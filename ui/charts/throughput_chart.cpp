// Throughput and progress (see throughput_chart.h).
#include "charts/throughput_chart.h"

#include "charts/series_reduction.h"
#include "report/smoothing.h"

#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

RunProgress progressOf(const RunData& run, std::size_t window)
{
    RunProgress p;
    const auto& steps = run.steps();
    p.stepsDone = steps.empty() ? 0 : steps.back().step;
    p.plannedSteps = run.plannedSteps();
    p.elapsedSeconds = run.elapsedSeconds();
    p.remainingSeconds = std::numeric_limits<double>::quiet_NaN();
    const std::size_t n = std::min(window, steps.size());
    double ms = 0, images = 0;
    for (std::size_t i = steps.size() - n; i < steps.size(); ++i) {
        ms += steps[i].timeMs;
        images += steps[i].batch;
    }
    if (ms > 0) p.recentImagesPerSecond = 1000.0 * images / ms;
    if (n > 0 && p.plannedSteps > 0) {
        const bool finished = run.status() == RunStatus::completed || run.status() == RunStatus::stopped ||
                              run.status() == RunStatus::diverged || run.status() == RunStatus::failed;
        p.remainingSeconds = finished ? 0.0 : std::max<std::int64_t>(0, p.plannedSteps - p.stepsDone) * (ms / static_cast<double>(n)) / 1000.0;
    }
    return p;
}

ThroughputChart::ThroughputChart(QWidget* parent)
    : ChartGroup(QStringLiteral("throughput"), parent),
      chart_(makeChart(tr("Throughput"))),
      steps_(makeValueAxis(tr("step"), QStringLiteral("%d"))),
      rate_(makeValueAxis(tr("images/s"), QStringLiteral("%.4g"))),
      pool_(chart_)
{
    chart_->addAxis(steps_, Qt::AlignBottom);
    chart_->addAxis(rate_, Qt::AlignLeft);
    markers_ = new ChangeMarkers(chart_, &pool_);
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    progress_->setFormat(tr("%v / %m steps (%p%)"));
    times_ = new QLabel(this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(makeChartView(chart_, this), 1);
    layout->addWidget(progress_);
    layout->addWidget(times_);
}

QString ThroughputChart::progressText() const { return times_->text(); }

void ThroughputChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const int columns = pixelColumns(chart_);
    setChartTitle(chart_, tr("Throughput"), runs);
    pool_.begin();
    markers_->beginLabels();
    double lastStep = 1, top = 0;
    for (const RunPtr& run : runs) {
        const auto& steps = run->steps();
        if (!steps.empty()) lastStep = std::max(lastStep, static_cast<double>(steps.back().step));
        auto rateAt = [&](std::size_t i) {
            return steps[i].timeMs > 0 ? 1000.0 * steps[i].batch / steps[i].timeMs : std::numeric_limits<double>::quiet_NaN();
        };
        auto stepAt = [&](std::size_t i) { return static_cast<double>(steps[i].step); };
        if (run == runs.front()) {
            const QString rawKey = run->id() + QStringLiteral("/rate/raw");
            auto* rawLine = pool_.take<QLineSeries>(rawKey, {steps_, rate_});
            setSeriesName(rawLine, tr("%1 images/s").arg(run->name()));
            setSeriesPen(rawLine, runPen(faded(run->color(), 60), 1.0));
            reduced_.update(rawLine, rawKey, *run, columns,
                            [&] { return reduceMinMaxPerColumn(steps.size(), stepAt, rateAt, columns); });
            setLegendVisible(chart_, rawLine, false);
        }
        const QString key = run->id() + QStringLiteral("/rate");
        auto* line = pool_.take<QLineSeries>(key, {steps_, rate_});
        setSeriesName(line, tr("%1 images/s (%2 overall)").arg(run->name()).arg(run->imagesPerSecond(), 0, 'f', 0));
        setSeriesPen(line, runPen(run->color(), 2.0));
        // Which arithmetic its products ran in, where it is one of the CPU's two.
        const QString arithmetic = run->arithmeticKind().isEmpty() ? QString() : QStringLiteral(", ") + run->arithmeticKind();
        setLegendLabel(chart_, line,
                       run == runs.front()
                           ? tr("images/s (%1 overall%2)").arg(run->imagesPerSecond(), 0, 'f', 0).arg(arithmetic)
                           : tr("%1 (%2/s%3)").arg(runLabel(run, runs)).arg(run->imagesPerSecond(), 0, 'f', 0).arg(arithmetic));
        const QList<QPointF> smooth = reduced_.update(line, key, *run, columns, [&] {
            std::vector<double> rate(steps.size());
            for (std::size_t i = 0; i < steps.size(); ++i) rate[i] = rateAt(i);
            const std::vector<double> smoothed = exponentialMovingAverage(rate, 0.9);
            return reduceMinMaxPerColumn(steps.size(), stepAt, [&](std::size_t i) { return smoothed[i]; }, columns);
        });
        for (const QPointF& p : smooth) top = std::max(top, p.y());
    }
    const double high = top > 0 ? top * 1.25 : 1.0;
    setStableRange(steps_, 0, lastStep, 0.6);
    setStableRange(rate_, 0, high, 0.5);
    for (const RunPtr& run : runs) markers_->addRun(*run, steps_, rate_, 0, rate_->max());
    pool_.end();
    markers_->placeLabels();

    if (runs.isEmpty()) {
        progress_->setRange(0, 1);
        progress_->setValue(0);
        times_->setText(tr("No run"));
        return;
    }
    const RunProgress p = progressOf(*runs.front());
    const auto planned = static_cast<int>(std::min<std::int64_t>(std::max(p.plannedSteps, p.stepsDone), INT32_MAX));
    progress_->setRange(0, std::max(1, planned));
    progress_->setValue(static_cast<int>(std::min<std::int64_t>(p.stepsDone, INT32_MAX)));
    times_->setText(tr("%1: elapsed %2 · remaining %3 · %4 images/s now")
                        .arg(runs.front()->name(), formatDuration(p.elapsedSeconds), formatDuration(p.remainingSeconds))
                        .arg(p.recentImagesPerSecond, 0, 'f', 0));
}

}  // namespace plab::ui
