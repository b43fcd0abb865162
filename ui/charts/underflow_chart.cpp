// Underflow and overflow fractions per layer over steps (see underflow_chart.h).
#include "charts/underflow_chart.h"

#include "charts/series_reduction.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

double underflowFraction(const RoundingStats& s)
{
    const std::uint64_t values = s.nonzeroFinite();
    return values > 0 ? static_cast<double>(s.underflow) / static_cast<double>(values)
                      : std::numeric_limits<double>::quiet_NaN();
}

double overflowFraction(const RoundingStats& s)
{
    const std::uint64_t values = s.nonzeroFinite();
    return values > 0 ? static_cast<double>(s.overflow) / static_cast<double>(values)
                      : std::numeric_limits<double>::quiet_NaN();
}

UnderflowChart::UnderflowChart(QWidget* parent)
    : ChartGroup(QStringLiteral("underflow"), parent),
      underflow_(makeChart(tr("Underflow (nonzero → 0)"))),
      overflow_(makeChart(tr("Overflow (finite → inf)"))),
      underflowPool_(underflow_),
      overflowPool_(overflow_)
{
    panels_[0] = makePanel(underflow_);
    panels_[0].pool = &underflowPool_;
    panels_[0].markers = new ChangeMarkers(underflow_, &underflowPool_);
    panels_[0].reduced = &reducedUnderflow_;
    panels_[1] = makePanel(overflow_);
    panels_[1].pool = &overflowPool_;
    panels_[1].markers = new ChangeMarkers(overflow_, &overflowPool_);
    panels_[1].reduced = &reducedOverflow_;

    kindBox_ = new QComboBox(this);
    for (TensorKind k : {TensorKind::weightGrad, TensorKind::activationGrad, TensorKind::activation})
        kindBox_->addItem(QString::fromUtf8(tensorKindName(k)).replace(QLatin1Char('_'), QLatin1Char(' ')),
                          static_cast<int>(k));
    kindBox_->setToolTip(tr("Which rounding sites: weight gradients, activation gradients or activations"));
    connect(kindBox_, &QComboBox::currentIndexChanged, this, [this] { redraw(current_, compare_); });

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Tensor kind:"), this));
    controls->addWidget(kindBox_);
    controls->addStretch(1);
    auto* charts = new QHBoxLayout;
    charts->addWidget(makeChartView(underflow_, this));
    charts->addWidget(makeChartView(overflow_, this));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(charts, 1);
    layout->addLayout(controls);
}

UnderflowChart::Panel UnderflowChart::makePanel(QChart* chart)
{
    Panel p{chart, makeValueAxis(tr("step"), QStringLiteral("%d")), makeValueAxis(tr("% of values"), QStringLiteral("%.3g")),
            nullptr, nullptr, nullptr};
    chart->addAxis(p.steps, Qt::AlignBottom);
    chart->addAxis(p.fraction, Qt::AlignLeft);
    return p;
}

void UnderflowChart::setKind(TensorKind k) { kindBox_->setCurrentIndex(kindBox_->findData(static_cast<int>(k))); }

TensorKind UnderflowChart::kind() const { return static_cast<TensorKind>(kindBox_->currentData().toInt()); }

void UnderflowChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    current_ = current;
    compare_ = compare;
    const QList<RunPtr> runs = runsToDraw(current, compare);
    drawPanel(panels_[0], runs, false);
    drawPanel(panels_[1], runs, true);
}

void UnderflowChart::drawPanel(Panel& panel, const QList<RunPtr>& runs, bool overflow)
{
    // Layers differ by shade and width, not by dash pattern: dashed polylines of thousands
    // of points take hundreds of milliseconds to paint.
    static const qreal kLayerWidths[] = {2.4, 1.6, 1.0};
    const TensorKind k = kind();
    const int columns = pixelColumns(panel.chart);
    // Half-width panels: a short title (the run's name must fit); the axis says what is counted.
    setChartTitle(panel.chart, overflow ? tr("Overflow") : tr("Underflow"), runs);
    const QString axisTitle = overflow ? tr("% of finite → inf") : tr("% of nonzero → 0");
    if (panel.fraction->titleText() != axisTitle) panel.fraction->setTitleText(axisTitle);
    panel.chart->setToolTip(overflow ? tr("Share of finite values rounded to infinity, per layer")
                                     : tr("Share of nonzero values rounded to zero, per layer"));
    panel.pool->begin();
    panel.markers->beginLabels();
    double lastStep = 1, top = 0;
    for (const RunPtr& run : runs) {
        const auto& telemetry = run->telemetry();
        if (telemetry.empty()) continue;
        if (!run->steps().empty()) lastStep = std::max(lastStep, static_cast<double>(run->steps().back().step));
        // Layers of this kind, in the order the engine reports them. Every histogram step
        // reports the same layers, so the first and the last event name them all: scanning
        // all of a 100,000-step run's events cost milliseconds per frame.
        std::vector<std::string> layers;
        for (const TelemetryEvent* t : {&telemetry.front(), &telemetry.back()})
            for (const LayerTelemetry& l : t->layers)
                if (l.kind == k && std::find(layers.begin(), layers.end(), l.layer) == layers.end())
                    layers.push_back(l.layer);
        for (std::size_t li = 0; li < layers.size(); ++li) {
            const QString layer = QString::fromStdString(layers[li]);
            const QString key = run->id() + QLatin1Char('/') + layer + QLatin1Char('/') + QString::number(static_cast<int>(k));
            auto* line = panel.pool->take<QLineSeries>(key, {panel.steps, panel.fraction});
            setSeriesName(line, tr("%1 %2 %3").arg(run->name(), layer, overflow ? tr("overflow") : tr("underflow")));
            QColor color = run->color();
            if (li > 0) color = li % 2 ? color.lighter(100 + 25 * static_cast<int>(li)) : color.darker(100 + 20 * static_cast<int>(li));
            setSeriesPen(line, runPen(color, kLayerWidths[li % std::size(kLayerWidths)]));
            // The watched run (named in the title) lists its layers; a comparison run one entry.
            const bool watched = run == runs.front();
            setLegendLabel(panel.chart, line, watched ? layer : runLabel(run, runs));
            setLegendVisible(panel.chart, line, watched || li == 0);
            const QList<QPointF>& points = panel.reduced->update(line, key, *run, columns, [&] {
                std::vector<double> x, y;
                x.reserve(telemetry.size());
                y.reserve(telemetry.size());
                for (const TelemetryEvent& t : telemetry)
                    for (const LayerTelemetry& l : t.layers)
                        if (l.kind == k && l.layer == layers[li]) {
                            x.push_back(static_cast<double>(t.step));
                            y.push_back(100.0 * (overflow ? overflowFraction(l.stats) : underflowFraction(l.stats)));
                        }
                return reduceMinMaxPerColumn(
                    x.size(), [&](std::size_t i) { return x[i]; }, [&](std::size_t i) { return y[i]; }, columns);
            });
            for (const QPointF& p : points) top = std::max(top, p.y());
            const bool fewPoints = points.size() < 60;
            if (line->pointsVisible() != fewPoints) line->setPointsVisible(fewPoints);
        }
    }
    const double high = top > 0 ? top * 1.1 : 1.0;
    setStableRange(panel.steps, 0, lastStep, 0.6);
    setStableRange(panel.fraction, 0, high, 0.4);
    for (const RunPtr& run : runs) panel.markers->addRun(*run, panel.steps, panel.fraction, 0, panel.fraction->max());
    panel.pool->end();
    panel.markers->placeLabels();
}

}  // namespace plab::ui
