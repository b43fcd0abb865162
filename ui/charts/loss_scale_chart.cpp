// The loss scale on a log2 axis with skipped steps (see loss_scale_chart.h).
#include "charts/loss_scale_chart.h"

#include "charts/chart_caption.h"
#include "charts/series_reduction.h"
#include "telemetry/non_finite_sites.h"

#include <QLabel>
#include <QFontMetricsF>
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
    connect(chart_, &QChart::plotAreaChanged, this, [this] {
        placeCaptionClearOfData(chart_, counts_);
        placeLevelLabels();
    });
    // Presentation mode: the counts under the chart (on the plot, lines of large text
    // covered the data and ran past its edge).
    countsBelow_ = makeLabelUnderChart(this, QStringLiteral("skippedCounts"), Qt::RichText);   // one line per run
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(makeChartView(chart_, this), 1);
    layout->addWidget(countsBelow_);
    skipCause_ = makeLabelUnderChart(this, QStringLiteral("skipCause"), Qt::PlainText);
    skipCause_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(skipCause_);
}

namespace {

// "Step 17 skipped: conv2 activation_grad overflowed first: 2^16.2 > 65504 (fp16's
// largest)", and the sites after it; "" when the step at `step` was not skipped.
QString skipText(const RunData& run, double step)
{
    const auto& steps = run.steps();
    const auto it = std::lower_bound(steps.begin(), steps.end(), step,
                                     [](const StepEvent& p, double s) { return static_cast<double>(p.step) < s; });
    if (it == steps.end() || static_cast<double>(it->step) != step || !it->skipped) return {};
    if (it->nonFinite.empty())
        return LossScaleChart::tr("Step %1 skipped: the record names no site that made inf or NaN").arg(it->step);
    QString text = LossScaleChart::tr("Step %1 skipped: %2")
                       .arg(it->step)
                       .arg(QString::fromStdString(skipCauseText(it->nonFinite)));
    const NonFiniteSite* cause = firstNonFiniteCause(it->nonFinite);
    QStringList others;
    for (const NonFiniteSite& s : it->nonFinite)
        if (&s != cause)
            others << QStringLiteral("%1 (%2)").arg(QString::fromStdString(siteName(s)),
                                                     QString::fromStdString(siteCountsText(s)));
    if (!others.isEmpty()) text += LossScaleChart::tr("\nin the order they ran: %1").arg(others.join(QStringLiteral(", ")));
    return text;
}

}  // namespace

QString LossScaleChart::pointDetail(const QAbstractSeries* series, const QPointF& value) const
{
    const auto it = skipSeries_.find(series);
    return it == skipSeries_.end() ? QString() : skipText(*it->second, value.x());
}

void LossScaleChart::pointClicked(const QAbstractSeries* series, const QPointF& value)
{
    const QString text = pointDetail(series, value);
    skipCause_->setText(text);
    skipCause_->setVisible(!text.isEmpty());
}

QString LossScaleChart::clickedSkipText() const
{
    return skipCause_->isVisible() ? skipCause_->text() : QString();
}

void LossScaleChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const int columns = pixelColumns(chart_);
    pool_.begin();
    markers_->beginLabels();

    skipSeries_.clear();
    bool anyFp8 = false;
    double lastStep = 1, lowest = 0, highest = 16;   // log2 S: the usual span 1 .. 65536, so the axis rarely moves
    QStringList counts;
    levels_.clear();   // each run's last log2 S, watched run first
    int unskipped = 0;            // runs left out of the counts (presentation mode)
    QStringList fp8Key;           // the watched run's layers and their shades (presentation mode)
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
        showComparisonInLegend(chart_, line, watched);
        const QList<QPointF> scale = reduced_.update(
            line, lineKey, *run, columns, [&] { return reduceMinMaxPerColumn(steps.size(), stepAt, scaleAt, columns); });
        for (const QPointF& p : scale) {
            lowest = std::min(lowest, p.y());
            highest = std::max(highest, p.y());
        }

        // Skipped steps: a run of at least kBandSteps in a row is one translucent band along
        // the scale line (a run that skips all its steps draws one band, not a marker per
        // step over the other runs' lines); shorter runs get a marker per step.
        std::vector<std::size_t> isolated;
        std::vector<std::pair<std::size_t, std::size_t>> bands;   // [first, last] indices
        for (std::size_t i = 0; i < steps.size();) {
            if (!steps[i].skipped) {
                ++i;
                continue;
            }
            std::size_t end = i;
            while (end + 1 < steps.size() && steps[end + 1].skipped) ++end;
            if (end - i + 1 >= kBandSteps) bands.emplace_back(i, end);
            else
                for (std::size_t k = i; k <= end; ++k) isolated.push_back(k);
            i = end + 1;
        }
        const QString marksKey = run->id() + QStringLiteral("/skipped");
        auto* marks = pool_.take<QScatterSeries>(marksKey, {steps_, scale_});
        skipSeries_[marks] = run;
        const auto skippedCount = static_cast<qlonglong>(run->skippedSteps());
        setSeriesName(marks, tr("%1 skipped steps (%2)").arg(run->name()).arg(skippedCount));
        setLegendLabel(chart_, marks, tr("skipped (%1)").arg(skippedCount));
        setLegendVisible(chart_, marks, watched);
        marks->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        marks->setMarkerSize(7);
        if (marks->color() != run->color()) marks->setColor(run->color());
        if (marks->borderColor() != Qt::red) marks->setBorderColor(Qt::red);
        reduced_.update(marks, marksKey, *run, columns, [&] {
            return reduceMinMaxPerColumn(
                isolated.size(), [&](std::size_t k) { return stepAt(isolated[k]); },
                [&](std::size_t k) { return scaleAt(isolated[k]); }, columns);
        });
        for (std::size_t b = 0; b < bands.size(); ++b) {
            const auto [first, last] = bands[b];
            const QString bandKey = run->id() + QStringLiteral("/skipped-band/") + QString::number(b);
            auto* band = pool_.take<QLineSeries>(bandKey, {steps_, scale_});
            skipSeries_[band] = run;
            setSeriesName(band, tr("%1 skipped steps %2-%3").arg(run->name()).arg(steps[first].step).arg(steps[last].step));
            setLegendVisible(chart_, band, false);
            QColor shade = run->color();
            shade.setAlpha(70);
            QPen pen = cosmeticPen(shade, kBandWidth);
            pen.setCapStyle(Qt::FlatCap);
            setSeriesPen(band, pen);
            const std::size_t n = last - first + 1;
            reduced_.update(band, bandKey, *run, columns, [&] {
                return reduceMinMaxPerColumn(
                    n, [&](std::size_t k) { return stepAt(first + k); }, [&](std::size_t k) { return scaleAt(first + k); },
                    columns);
            });
        }
        // The level each run ends at, labelled on the right-hand axis: 2^17 and 2^18 are
        // told apart there, where the left axis' ticks are several powers apart.
        for (std::size_t i = steps.size(); i-- > 0;)
            if (const double level = scaleAt(i); std::isfinite(level)) {
                levels_.push_back({level, run->color()});
                break;
            }
        // Presentation mode lists only the runs that skipped (four lines of large text would
        // cover the lines), and says so of the others in one.
        if (!presentationMode() || skippedCount > 0)
            counts << tr("%1: %2 skipped of %3 steps").arg(runLabel(run, runs)).arg(skippedCount).arg(steps.size());
        else
            ++unskipped;

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
                // Presentation mode: six entries of large text do not fit a legend row; the
                // layers' shades are keyed under the chart instead.
                setLegendVisible(chart_, line, watched && !presentationMode());
                if (line->points() != points) line->replace(points);
                for (const QPointF& p : points) {
                    lowest = std::min(lowest, p.y());
                    highest = std::max(highest, p.y());
                }
            };
            draw(tr("scale"), lines.scale, Qt::DashLine);
            draw(tr("amax"), lines.amax, Qt::DotLine);
            if (watched)
                fp8Key << QStringLiteral("<span style='color:%1'>■</span>&nbsp;%2").arg(color.name(), name.toHtmlEscaped());
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
    // A faint grid line at every power of two between the labelled ticks, where they are at
    // least 4 px apart, so a level can be counted off.
    const double interval = scale_->tickType() == QValueAxis::TicksDynamic ? scale_->tickInterval()
                                                                          : (high - low) / std::max(1, scale_->tickCount() - 1);
    const double perPower = chart_->plotArea().height() / std::max(1.0, high - low);
    const int minor = interval == std::round(interval) && interval >= 2 && perPower >= 4 ? static_cast<int>(interval) - 1 : 0;
    if (scale_->minorTickCount() != minor) scale_->setMinorTickCount(minor);
    for (const RunPtr& run : runs) markers_->addRun(*run, steps_, scale_, low, high);
    pool_.end();
    markers_->placeLabels();

    counts_->setBrush(chart_->titleBrush());
    if (unskipped > 0) counts << (unskipped == runs.size() ? tr("no step skipped") : tr("no other run skipped a step"));
    const QString countsText = counts.join(QLatin1Char('\n'));
    counts_->setText(countsText);
    counts_->setVisible(!presentationMode());
    QString below = countsText.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"));
    if (!fp8Key.isEmpty())
        below += tr("<br>dashed: gradient scale, dotted: amax · %1").arg(fp8Key.join(QLatin1Char(' ')));
    if (countsBelow_->text() != below) countsBelow_->setText(below);
    countsBelow_->setVisible(presentationMode() && !below.isEmpty());
    placeCaptionClearOfData(chart_, counts_);
    placeLevelLabels();
}

QStringList LossScaleChart::levelLabels() const
{
    QStringList labels;
    for (const QGraphicsSimpleTextItem* item : levelLabels_)
        if (item->isVisible()) labels << item->text();
    return labels;
}

void LossScaleChart::placeLevelLabels()
{
    // Each run's last level, in its colour, beside the plot's right edge at the height of
    // its line; labels that would overlap are moved apart (down, then back up at the bottom)
    // so that each stays readable and near its line. The chart's right margin keeps room.
    // Runs that end at the same level share one label, in the text's colour where their
    // colours differ (four FP8 runs without loss scaling all end at 2^0).
    std::vector<Level> levels;
    for (const Level& l : levels_) {
        auto same = std::find_if(levels.begin(), levels.end(), [&](const Level& k) { return k.log2 == l.log2; });
        if (same == levels.end()) levels.push_back(l);
        else if (same->color != l.color) same->color = chart_->titleBrush().color();
    }
    while (levelLabels_.size() < levels.size()) {
        auto* item = new QGraphicsSimpleTextItem(chart_);
        item->setZValue(20);
        levelLabels_.push_back(item);
    }
    QFont font = scale_->labelsFont();
    font.setBold(true);
    const QFontMetricsF metrics(font);
    qreal widest = 0;
    std::vector<std::pair<qreal, QGraphicsSimpleTextItem*>> placed;   // centre y, item
    const QRectF plot = chart_->plotArea();
    for (std::size_t i = 0; i < levelLabels_.size(); ++i) {
        QGraphicsSimpleTextItem* item = levelLabels_[i];
        if (i >= levels.size() || plot.height() <= 0) {
            item->hide();
            continue;
        }
        const Level& level = levels[i];
        const QString text = level.log2 == std::round(level.log2) ? QStringLiteral("2^%1").arg(static_cast<int>(level.log2))
                                                                  : QStringLiteral("2^%1").arg(level.log2, 0, 'f', 2);
        if (item->text() != text) item->setText(text);
        if (item->font() != font) item->setFont(font);
        item->setBrush(level.color);
        widest = std::max(widest, metrics.horizontalAdvance(text));
        const qreal y = chart_->mapToPosition(QPointF(steps_->min(), level.log2), nullptr).y();
        placed.emplace_back(std::clamp(y, plot.top(), plot.bottom()), item);
        item->show();
    }
    std::sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    // A line of the tallest label apart, and a pixel or two between.
    qreal h = metrics.height();
    for (const auto& [y, item] : placed) h = std::max(h, item->boundingRect().height());
    h = std::ceil(h) + 2;
    for (std::size_t k = 1; k < placed.size(); ++k) placed[k].first = std::max(placed[k].first, placed[k - 1].first + h);
    if (!placed.empty() && placed.back().first > plot.bottom() + h / 2) {
        placed.back().first = plot.bottom() + h / 2;
        for (std::size_t k = placed.size() - 1; k-- > 0;) placed[k].first = std::min(placed[k].first, placed[k + 1].first - h);
    }
    for (const auto& [y, item] : placed) item->setPos(plot.right() + 6, y - h / 2);
    const int room = placed.empty() ? 4 : static_cast<int>(std::ceil(widest)) + 10;
    if (chart_->margins().right() != room) {
        QMargins m = chart_->margins();
        m.setRight(room);
        chart_->setMargins(m);   // moves the plot area: placed again from plotAreaChanged
    }
}

}  // namespace plab::ui
