// Loss and accuracy against step (see loss_chart.h).
#include "charts/loss_chart.h"

#include "charts/chart_caption.h"
#include "charts/layer_panels.h"
#include "charts/series_reduction.h"
#include "report/smoothing.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

LossChart::LossChart(QWidget* parent)
    : ChartGroup(QStringLiteral("loss"), parent),
      chart_(makeChart(tr("Loss (train) and accuracy (test)"))),
      steps_(makeValueAxis(tr("step"), QStringLiteral("%d"))),
      loss_(makeValueAxis(tr("loss"), QStringLiteral("%.3g"))),
      accuracy_(makeValueAxis(tr("test accuracy %"), QStringLiteral("%.0f"))),
      pool_(chart_),
      smoothing_(kDefaultSmoothing)
{
    chart_->addAxis(steps_, Qt::AlignBottom);
    chart_->addAxis(loss_, Qt::AlignLeft);
    chart_->addAxis(accuracy_, Qt::AlignRight);
    setAxisRange(accuracy_, 0, 100);
    markers_ = new ChangeMarkers(chart_, &pool_);
    note_ = makeChartCaption(chart_);
    noteBelow_ = makeLabelUnderChart(this, QStringLiteral("coincideNote"), Qt::PlainText);   // lines broken by showNote()
    // The smoothing, as TensorBoard's slider: 0 (raw) to 0.999, in thousandths.
    auto* smoothingLabel = new QLabel(tr("Smoothing"));
    smoothingSlider_ = new QSlider(Qt::Horizontal);
    smoothingSlider_->setObjectName(QStringLiteral("smoothingSlider"));
    smoothingSlider_->setRange(0, static_cast<int>(kMaxSmoothing * 1000));
    smoothingSlider_->setValue(static_cast<int>(std::lround(smoothing_ * 1000)));
    smoothingSlider_->setToolTip(tr("Weight of the exponential moving average of the loss (0: the raw loss)"));
    smoothingLabel->setBuddy(smoothingSlider_);
    smoothingValue_ = new QLabel;
    smoothingValue_->setText(QString::number(smoothing_, 'f', 3));
    connect(smoothingSlider_, &QSlider::valueChanged, this, [this](int thousandths) { setSmoothing(thousandths / 1000.0); });
    smoothingRow_ = new QWidget(this);
    auto* controls = new QHBoxLayout(smoothingRow_);
    controls->setContentsMargins(0, 0, 0, 0);
    controls->addWidget(smoothingLabel);
    controls->addWidget(smoothingSlider_, 1);
    controls->addWidget(smoothingValue_);
    fullRange_ = new QCheckBox(tr("Accuracy 0–100 %"));
    fullRange_->setObjectName(QStringLiteral("accuracyFullRange"));
    fullRange_->setToolTip(tr("The accuracy axis from 0 to 100 % instead of fitted to the accuracies shown"));
    connect(fullRange_, &QCheckBox::toggled, this, &LossChart::setAccuracyFullRange);
    controls->addWidget(fullRange_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(makeChartView(chart_, this), 1);
    layout->addWidget(noteBelow_);
    layout->addWidget(smoothingRow_);
}

void LossChart::presentationModeChanged()
{
    smoothingRow_->setVisible(!presentationMode());
    showNote();
}

void LossChart::setSmoothing(double weight)
{
    weight = std::clamp(weight, 0.0, kMaxSmoothing);
    if (weight == smoothing_) return;
    smoothing_ = weight;
    const int thousandths = static_cast<int>(std::lround(weight * 1000));
    if (smoothingSlider_->value() != thousandths) smoothingSlider_->setValue(thousandths);
    smoothingValue_->setText(QString::number(weight, 'f', 3));
    reduced_.clear();   // the smoothed curves are made again
    redraw(current_, compare_);
}

void LossChart::setAccuracyFullRange(bool full)
{
    if (fullRange_->isChecked() != full) fullRange_->setChecked(full);
    if (full == accuracyFullRange_) return;
    accuracyFullRange_ = full;
    redraw(current_, compare_);
}

void LossChart::showNote()
{
    // On the plot where it fits clear of the curves; else (and projected) under it.
    const bool below = !setChartCaptionIfClear(chart_, note_, noteText_, !presentationMode());
    const QString wrapped = below ? wrapToWidth(noteText_, noteBelow_->font(), std::max(80, width() - 8)) : QString();
    if (noteBelow_->text() != wrapped) noteBelow_->setText(wrapped);
    noteBelow_->setVisible(below);
}

void LossChart::resizeEvent(QResizeEvent* event)
{
    ChartGroup::resizeEvent(event);
    if (noteBelow_->isVisible()) showNote();
}

// One run's evaluations as points joined by a dash-dot line in its lighter colour, on
// `axis`: the test accuracy of a classifier, or an autoencoder's test MSE.
void LossChart::showEvaluations(const RunPtr& run, const QString& idSuffix, QValueAxis* axis, const QString& nameFormat,
                                const QString& legendLabel, const QList<QPointF>& points, bool watched)
{
    auto* series = pool_.take<QLineSeries>(run->id() + idSuffix, {steps_, axis});
    setSeriesName(series, nameFormat.arg(run->name()));
    setSeriesPen(series, runPen(run->color().lighter(140), 2.0, Qt::DashDotLine));
    series->setPointsVisible(true);
    if (series->points() != points) series->replace(points);
    setLegendVisible(chart_, series, watched);
    setLegendLabel(chart_, series, legendLabel);
}

void LossChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    current_ = current;
    compare_ = compare;
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const int columns = pixelColumns(chart_);
    // Autoencoders have no accuracy: their test MSE is drawn on the loss axis.
    const bool anyClassifies = runs.isEmpty() || std::any_of(runs.begin(), runs.end(), [](const RunPtr& run) {
                                   return modelTask(run->settings().model.kind) == ModelTask::classify;
                               });
    const bool anyReconstructs = std::any_of(runs.begin(), runs.end(), [](const RunPtr& run) {
        return modelTask(run->settings().model.kind) == ModelTask::reconstruct;
    });
    if (!anyClassifies)
        setChartTitle(chart_, tr("Loss (train) and MSE (test)"), runs, tr("Loss and test MSE"));
    else if (anyReconstructs)
        setChartTitle(chart_, tr("Loss (train), accuracy and MSE (test)"), runs, tr("Loss, test accuracy and MSE"));
    else
        setChartTitle(chart_, tr("Loss (train) and accuracy (test)"), runs, tr("Loss and test accuracy"));
    accuracy_->setVisible(anyClassifies);
    fullRange_->setVisible(anyClassifies);
    pool_.begin();
    markers_->beginLabels();

    double lastStep = 1, smoothedMax = 0, rawMax = 0;
    double accuracyLow = std::numeric_limits<double>::infinity(), accuracyHigh = -accuracyLow;
    std::vector<std::pair<RunPtr, QList<QPointF>>> smoothedLines;   // shared copies: cache entries move
    for (const RunPtr& run : runs) {
        const auto& steps = run->steps();
        if (!steps.empty()) lastStep = std::max(lastStep, static_cast<double>(steps.back().step));

        auto stepAt = [&](std::size_t i) { return static_cast<double>(steps[i].step); };

        const QString rawKey = run->id() + QStringLiteral("/raw");
        auto* rawSeries = pool_.take<QLineSeries>(rawKey, {steps_, loss_});
        setSeriesName(rawSeries, tr("%1 loss").arg(run->name()));
        setSeriesPen(rawSeries, runPen(faded(run->color(), 70), 1.0));
        const QList<QPointF> raw = reduced_.update(rawSeries, rawKey, *run, columns, [&] {
            return reduceMinMaxPerColumn(
                steps.size(), stepAt, [&](std::size_t i) { return steps[i].loss; }, columns);
        });
        setLegendVisible(chart_, rawSeries, false);

        const QString smoothKey = run->id() + QStringLiteral("/smoothed");
        auto* smoothSeries = pool_.take<QLineSeries>(smoothKey, {steps_, loss_});
        setSeriesName(smoothSeries, tr("%1 loss (smoothed)").arg(run->name()));
        setSeriesPen(smoothSeries, runPen(run->color(), 2.0));
        // The title names the watched run; comparison runs get one legend entry each.
        const bool watched = run == runs.front();
        // Presentation mode: "loss", as the axis says, so three runs fit one legend row.
        const QString smoothLabel = presentationMode() ? tr("loss") : tr("loss (smoothed)");
        setLegendLabel(chart_, smoothSeries, watched ? smoothLabel : runLabel(run, runs));
        showComparisonInLegend(chart_, smoothSeries, watched);
        const QList<QPointF> smooth = reduced_.update(smoothSeries, smoothKey, *run, columns, [&] {
            const std::vector<double> smoothed = smoothedLosses(steps, smoothing_);
            return reduceMinMaxPerColumn(steps.size(), stepAt, [&](std::size_t i) { return smoothed[i]; }, columns);
        });
        smoothedLines.emplace_back(run, smooth);
        // A run with only a few finite losses (one that diverged at once) is drawn as points:
        // a line of one point draws nothing, and the chart had looked empty.
        rawSeries->setPointsVisible(raw.size() < 3);
        smoothSeries->setPointsVisible(smooth.size() < 3);
        for (const QPointF& p : raw) rawMax = std::max(rawMax, p.y());
        for (const QPointF& p : smooth) smoothedMax = std::max(smoothedMax, p.y());

        // An autoencoder has no accuracy: its test MSE is drawn on the loss axis (its loss).
        if (modelTask(run->settings().model.kind) == ModelTask::reconstruct) {
            QList<QPointF> mse;
            for (const EvalEvent& e : run->evals())
                if (std::isfinite(e.testLoss)) mse.append(QPointF(e.step, e.testLoss));
            showEvaluations(run, QStringLiteral("/test-mse"), loss_, tr("%1 test MSE"), tr("test MSE"), mse, watched);
            for (const QPointF& p : mse) rawMax = std::max(rawMax, p.y());
            continue;
        }
        QList<QPointF> accuracy;
        accuracy.reserve(static_cast<qsizetype>(run->evals().size()));
        for (const EvalEvent& e : run->evals()) {
            accuracy.append(QPointF(e.step, 100.0 * e.testAccuracy));
            if (std::isfinite(e.testAccuracy)) {
                accuracyLow = std::min(accuracyLow, 100.0 * e.testAccuracy);
                accuracyHigh = std::max(accuracyHigh, 100.0 * e.testAccuracy);
            }
        }
        showEvaluations(run, QStringLiteral("/accuracy"), accuracy_, tr("%1 test accuracy"), tr("test acc."), accuracy,
                        watched);
    }

    // Raw spikes may dwarf the curve; keep the smoothed curve readable (up to 3x its max).
    double top = rawMax;
    if (smoothedMax > 0) top = std::min(rawMax, 3.0 * smoothedMax);
    if (!(top > 0)) top = 1.0;
    setStableRange(steps_, 0, lastStep, 0.6);
    setStableRange(loss_, 0, top * 1.05, 0.5);
    // Accuracy fitted to the data: whole percents around what the runs reached (at least 2
    // points wide), so that 96.9% and 97.0% are told apart; 0-100 before any evaluation.
    if (accuracyFullRange_ || !(accuracyHigh >= accuracyLow)) {
        setAxisRange(accuracy_, 0, 100);
    } else {
        double low = std::max(0.0, std::floor(accuracyLow) - 1.0);
        double high = std::min(100.0, std::ceil(accuracyHigh) + 1.0);
        if (high - low < 2.0) {
            if (low + 2.0 <= 100.0)
                high = low + 2.0;
            else
                low = high - 2.0;
        }
        setAxisRange(accuracy_, low, high);
    }
    for (const RunPtr& run : runs) markers_->addRun(*run, steps_, loss_, 0, loss_->max());
    pool_.end();
    markers_->placeLabels();

    // Curves within 1% of their axis (about a line's width) hide each other: say so, of the
    // loss and, only where they lie as close on the accuracy axis, of the accuracy.
    const double accuracyTolerance = 0.01 * (accuracy_->max() - accuracy_->min()) / 100.0;   // a fraction
    QStringList same;
    for (std::size_t j = 1; j < smoothedLines.size(); ++j)
        for (std::size_t i = 0; i < j; ++i) {   // one note per run that an earlier run's curves hide or cover
            const RunPtr& below = smoothedLines[j].first;
            const RunPtr& above = smoothedLines[i].first;
            if (!linesCoincide(smoothedLines[i].second, smoothedLines[j].second, 0.01 * loss_->max())) continue;
            const auto& a = above->evals();
            const auto& b = below->evals();
            const bool accuracyToo = !a.empty() && a.size() == b.size() &&
                                     std::equal(a.begin(), a.end(), b.begin(), [accuracyTolerance](const EvalEvent& x, const EvalEvent& y) {
                                         return x.step == y.step &&
                                                std::abs(x.testAccuracy - y.testAccuracy) <= accuracyTolerance;
                                     });
            same << (accuracyToo ? tr("%1 and %2 coincide: loss and accuracy") : tr("%1 and %2 coincide: loss"))
                        .arg(runLabel(above, runs), runLabel(below, runs));
            break;   // one note per hidden run
        }
    // A diverged run says where and why (its finite steps are drawn up to there).
    for (const RunPtr& run : runs)
        if (run->status() == RunStatus::diverged)
            same << tr("%1 %2").arg(runLabel(run, runs), run->statusMessage().isEmpty() ? tr("diverged")
                                                                                        : run->statusMessage());
    noteText_ = runs.isEmpty() ? tr("No run to show: start a run (Ctrl+R), or pick runs in the run list.")
                               : same.join(QLatin1Char('\n'));
    showNote();
}

}  // namespace plab::ui
