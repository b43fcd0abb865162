// The loss scale on a log2 axis with skipped steps (see loss_scale_chart.h).
#include "charts/loss_scale_chart.h"

#include "charts/chart_caption.h"
#include "charts/series_reduction.h"

#include <QLineSeries>
#include <QScatterSeries>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace plab::ui {

LossScaleChart::LossScaleChart(QWidget* parent)
    : ChartGroup(QStringLiteral("scale"), parent),
      chart_(makeChart(tr("Loss scale (log2) and skipped steps"))),
      steps_(makeValueAxis(tr("step"), QStringLiteral("%d"))),
      scale_(makeValueAxis(tr("loss scale S"), QStringLiteral("2^%d"))),
      pool_(chart_)
{
    // The line is log2 S, so each halving is the same height and every label is a whole
    // power of two written as one ("2^27" reads at a glance; 134217728 does not).
    chart_->addAxis(steps_, Qt::AlignBottom);
    chart_->addAxis(scale_, Qt::AlignLeft);
    markers_ = new ChangeMarkers(chart_, &pool_);
    counts_ = new QGraphicsSimpleTextItem(chart_);
    counts_->setZValue(20);
    connect(chart_, &QChart::plotAreaChanged, this, [this] { placeCaptionClearOfData(chart_, counts_); });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(makeChartView(chart_, this));
}

void LossScaleChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const int columns = pixelColumns(chart_);
    pool_.begin();
    markers_->beginLabels();

    bool anyFp8 = false;
    double lastStep = 1, lowest = 0, highest = 16;   // log2 S: the usual span 1 .. 65536, so the axis rarely moves
    QStringList counts;
    for (const RunPtr& run : runs) {
        const auto& steps = run->steps();
        if (!steps.empty()) lastStep = std::max(lastStep, static_cast<double>(steps.back().step));
        auto stepAt = [&](std::size_t i) { return static_cast<double>(steps[i].step); };
        // log2 S is what the axis shows; reduce in that space so extrema stay exact.
        auto scaleAt = [&](std::size_t i) {
            return steps[i].lossScale > 0 ? std::log2(steps[i].lossScale) : std::numeric_limits<double>::quiet_NaN();
        };
        const QString lineKey = run->id() + QStringLiteral("/scale");
        auto* line = pool_.take<QLineSeries>(lineKey, {steps_, scale_});
        setSeriesName(line, tr("%1 loss scale").arg(run->name()));
        setSeriesPen(line, runPen(run->color(), 2.0));
        const bool watched = run == runs.front();
        setLegendLabel(chart_, line, watched ? tr("loss scale") : runLabel(run, runs));
        const QList<QPointF> scale = reduced_.update(
            line, lineKey, *run, columns, [&] { return reduceMinMaxPerColumn(steps.size(), stepAt, scaleAt, columns); });
        for (const QPointF& p : scale) {
            lowest = std::min(lowest, p.y());
            highest = std::max(highest, p.y());
        }

        const QString marksKey = run->id() + QStringLiteral("/skipped");
        auto* marks = pool_.take<QScatterSeries>(marksKey, {steps_, scale_});
        const auto skippedCount = static_cast<qlonglong>(run->skippedSteps());
        setSeriesName(marks, tr("%1 skipped steps (%2)").arg(run->name()).arg(skippedCount));
        setLegendLabel(chart_, marks, tr("skipped (%1)").arg(skippedCount));
        setLegendVisible(chart_, marks, watched);
        marks->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        marks->setMarkerSize(7);
        if (marks->color() != run->color()) marks->setColor(run->color());
        if (marks->borderColor() != Qt::red) marks->setBorderColor(Qt::red);
        reduced_.update(marks, marksKey, *run, columns, [&] {
            std::vector<std::size_t> skippedAt;
            for (std::size_t i = 0; i < steps.size(); ++i)
                if (steps[i].skipped) skippedAt.push_back(i);
            return reduceMinMaxPerColumn(
                skippedAt.size(), [&](std::size_t k) { return stepAt(skippedAt[k]); },
                [&](std::size_t k) { return scaleAt(skippedAt[k]); }, columns);
        });
        counts << tr("%1: %2 skipped of %3 steps").arg(runLabel(run, runs)).arg(skippedCount).arg(steps.size());

        // FP8 and NVFP4 recipes: each layer's per-tensor gradient scale at the
        // histogram steps, dashed, on the same log2 axis (both multiply the gradients before a
        // cast), and the amax of that step's gradient, dotted: delayed scaling sets the scale
        // from the amaxes of the steps before (largest finite / amax), current scaling and
        // NVFP4's tensor scale (448 * 6 / amax) from its own.
        struct Fp8Lines {
            QList<QPointF> scale, amax;
        };
        std::map<std::string, Fp8Lines> fp8;
        for (const TelemetryEvent& t : run->telemetry())
            for (const LayerTelemetry& l : t.layers)
                if (l.kind == TensorKind::quantizedActivationGrad && l.scaling.present && l.scaling.tensorScale &&
                    l.scaling.scale > 0) {
                    Fp8Lines& lines = fp8[l.layer];
                    const auto step = static_cast<double>(t.step);
                    lines.scale.append(QPointF(step, std::log2(static_cast<double>(l.scaling.scale))));
                    if (l.scaling.amax > 0 && std::isfinite(l.scaling.amax))
                        lines.amax.append(QPointF(step, std::log2(static_cast<double>(l.scaling.amax))));
                }
        std::size_t li = 0;
        anyFp8 |= !fp8.empty();
        for (const auto& [layer, lines] : fp8) {
            const QString name = QString::fromStdString(layer);
            const QColor color = layerColor(run->color(), li++);
            const auto draw = [&](const QString& what, const QList<QPointF>& points, Qt::PenStyle style) {
                auto* line = pool_.take<QLineSeries>(run->id() + QStringLiteral("/fp8/") + name + QLatin1Char('/') + what,
                                                    {steps_, scale_});
                setSeriesName(line, tr("%1 %2 gradient tensor %3").arg(run->name(), name, what));
                setSeriesPen(line, runPen(color, 1.5, style));
                setLegendLabel(chart_, line, watched ? tr("%1 %2").arg(name, what) : runLabel(run, runs));   // the title says "gradient"
                setLegendVisible(chart_, line, watched);
                if (line->points() != points) line->replace(points);
                for (const QPointF& p : points) {
                    lowest = std::min(lowest, p.y());
                    highest = std::max(highest, p.y());
                }
            };
            draw(tr("scale"), lines.scale, Qt::DashLine);
            draw(tr("amax"), lines.amax, Qt::DotLine);
        }
    }

    if (anyFp8)
        setChartTitle(chart_, tr("Loss scale, gradient tensor scales and amaxes (log2), skipped steps"), runs,
                      tr("Loss and tensor scales"));
    else
        setChartTitle(chart_, tr("Loss scale (log2) and skipped steps"), runs, tr("Loss scale and skipped steps"));
    // Whole multiples of 3 in log2 at both ends (at least 2^0 .. 2^18), so ticks land on
    // whole powers of two; the range only changes when the scale leaves it, so labels are
    // not re-laid out every frame.
    const double low = 3.0 * std::floor(lowest / 3.0);
    const double high = 3.0 * std::ceil((highest + 0.5) / 3.0);
    setStableRange(steps_, 0, lastStep, 0.6);
    setAxisRange(scale_, low, high);
    for (const RunPtr& run : runs) markers_->addRun(*run, steps_, scale_, low, high);
    pool_.end();
    markers_->placeLabels();

    counts_->setBrush(chart_->titleBrush());
    counts_->setText(counts.join(QLatin1Char('\n')));
    placeCaptionClearOfData(chart_, counts_);
}

}  // namespace plab::ui
