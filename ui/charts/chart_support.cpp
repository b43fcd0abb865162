// Shared chart plumbing (see chart_support.h).
#include "charts/chart_support.h"

#include <QElapsedTimer>
#include <QFontMetricsF>
#include <QLegendMarker>
#include <QLineSeries>
#include <QGraphicsLayout>
#include <QLogValueAxis>
#include <QPainter>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace plab::ui {

namespace {
constexpr qreal kPresentationFontScale = 1.5;
constexpr qreal kPresentationMinWidth = 3.0;   // main lines
constexpr qreal kPresentationFaintWidth = 2.0;   // raw, dashed and marker lines

// The font `factor` times as large, whether it was sized in points or pixels.
QFont scaledFont(QFont f, qreal factor)
{
    if (f.pointSizeF() > 0) f.setPointSizeF(f.pointSizeF() * factor);
    else if (f.pixelSize() > 0) f.setPixelSize(std::max(1, static_cast<int>(std::lround(f.pixelSize() * factor))));
    return f;
}
}

TimedChartView::TimedChartView(QChart* chart, QWidget* parent) : QChartView(chart, parent)
{
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(kMinimumSize);
    setFrameShape(QFrame::NoFrame);
    setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
    setOptimizationFlags(QGraphicsView::DontSavePainterState | QGraphicsView::DontAdjustForAntialiasing);
    if (scene()) scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
}

void TimedChartView::paintEvent(QPaintEvent* event)
{
    QElapsedTimer t;
    t.start();
    QChartView::paintEvent(event);
    lastPaintNs_ = t.nsecsElapsed();
}

ChartGroup::ChartGroup(QString name, QWidget* parent) : QWidget(parent), name_(std::move(name))
{
    setObjectName(name_);
}

qint64 ChartGroup::lastPaintNs() const
{
    qint64 ns = 0;
    for (const auto* view : findChildren<TimedChartView*>()) ns += view->lastPaintNs();
    return ns;
}

QPen ChartGroup::runPen(const QColor& color, qreal width, Qt::PenStyle style) const
{
    if (!presentation_) return plab::ui::runPen(color, width, style);
    const bool faint = color.alpha() < 255 || width < 1.5 || style != Qt::SolidLine;
    QColor c = color;
    if (c.alpha() < 255) c.setAlpha(std::max(c.alpha(), 140));   // raw curves stay behind, but visible
    return plab::ui::runPen(c, std::max(width * 1.5, faint ? kPresentationFaintWidth : kPresentationMinWidth), style);
}

QString ChartGroup::runLabel(const RunPtr& run, const QList<RunPtr>& runs) const
{
    if (!presentation_ || runs.size() < 2) return run->name();
    QStringList names;
    names.reserve(runs.size());
    for (const RunPtr& r : runs) names << r->name();
    return distinguishingName(run->name(), names);
}

void ChartGroup::setChartTitle(QChart* chart, const QString& what, const QList<RunPtr>& runs, const QString& shortWhat)
{
    if (!presentation_) {
        plab::ui::setChartTitle(chart, what, runs);
        return;
    }
    if (!titles_.contains(chart))
        connect(chart, &QGraphicsWidget::geometryChanged, this, [this, chart] { fitTitle(chart); });
    TitleParts& parts = titles_[chart];
    parts.what = shortWhat.isEmpty() ? what : shortWhat;
    parts.run = runs.isEmpty() ? QString() : runLabel(runs.front(), runs);
    fitTitle(chart);
}

void ChartGroup::fitTitle(QChart* chart)
{
    const auto it = titles_.constFind(chart);
    if (!presentation_ || it == titles_.constEnd()) return;
    const TitleParts& parts = it.value();
    QString title = parts.run.isEmpty() ? parts.what : QStringLiteral("%1 · %2").arg(parts.what, parts.run);
    // The title gets the chart's width less its margins and the text item's own margins;
    // before the first layout (width 0) one line is assumed.
    const qreal room = chart->size().width() - chart->margins().left() - chart->margins().right() - 16;
    if (!parts.run.isEmpty() && room > 0 && QFontMetricsF(chart->titleFont()).horizontalAdvance(title) > room)
        title = parts.what.toHtmlEscaped() + QStringLiteral("<br>") + parts.run.toHtmlEscaped();   // titles are HTML
    if (chart->title() != title) chart->setTitle(title);
}

void ChartGroup::setPresentationMode(bool on)
{
    if (presentation_ == on) return;
    if (on) normalFont_ = QWidget::font();
    presentation_ = on;
    // Child widgets (combos, labels, the planner table) follow the group's font; an empty
    // QFont resolves nothing, so the inherited font comes back.
    if (on) {
        setFont(scaledFont(QWidget::font(), kPresentationFontScale));
    } else {
        setFont(QFont());
    }
    applyPalette(palette_);
    presentationModeChanged();
}

void ChartGroup::adaptAntialiasing()
{
    for (QChart* chart : charts()) {
        qsizetype points = 0;
        for (QAbstractSeries* s : chart->series())
            if (auto* xy = qobject_cast<QXYSeries*>(s)) points += xy->count();
        const bool smooth = points <= kAntialiasedPoints;
        if (const auto* scene = chart->scene())
            for (QGraphicsView* view : scene->views())
                if (view->renderHints().testFlag(QPainter::Antialiasing) != smooth)
                    view->setRenderHint(QPainter::Antialiasing, smooth);
    }
}

QList<QAbstractSeries*> ChartGroup::series() const
{
    QList<QAbstractSeries*> all;
    for (QChart* chart : charts()) all += chart->series();
    return all;
}

void ChartGroup::applyPalette(const QPalette& palette)
{
    palette_ = palette;
    const bool dark = palette.color(QPalette::Window).lightness() < 128;
    // Presentation mode: pure black/white and a grid that survives a projector.
    const QColor base = presentation_ ? (dark ? QColor(Qt::black) : QColor(Qt::white)) : palette.color(QPalette::Base);
    const QColor text = presentation_ ? (dark ? QColor(Qt::white) : QColor(Qt::black)) : palette.color(QPalette::Text);
    for (QChart* chart : charts()) {
        const auto theme = dark ? QChart::ChartThemeDark : QChart::ChartThemeLight;
        if (chart->theme() != theme) chart->setTheme(theme);   // resets series colors and fonts: redraw follows
        chart->setBackgroundBrush(base);
        chart->setPlotAreaBackgroundVisible(false);
        chart->setTitleBrush(text);
        chart->legend()->setLabelColor(text);
        for (QAbstractAxis* axis : chart->axes()) {
            axis->setLabelsColor(text);
            axis->setTitleBrush(text);
            QPen grid = axis->gridLinePen();
            if (presentation_) {
                grid.setColor(faded(text, 110));
                grid.setWidthF(1.0);
            } else {
                grid.setColor(faded(text, 40));
            }
            axis->setGridLinePen(grid);
        }
    }
    applyFonts();
}

void ChartGroup::applyFonts()
{
    // Fonts are derived from the widget font each time, so turning presentation off
    // restores exactly the normal sizes.
    const qreal scale = presentation_ ? kPresentationFontScale : 1.0;
    const QFont normal = presentation_ ? normalFont_ : QWidget::font();
    auto sized = [&](qreal factor, bool bold) {
        QFont f = scaledFont(normal, factor * scale);
        f.setBold(bold);
        return f;
    };
    for (QChart* chart : charts()) {
        chart->setTitleFont(sized(1.0, true));
        chart->legend()->setFont(sized(0.85, false));
        for (QAbstractAxis* axis : chart->axes()) {
            axis->setLabelsFont(sized(0.85, false));
            axis->setTitleFont(sized(0.9, presentation_));
        }
        // Our own captions on the chart (marker labels, counts, peaks).
        for (QGraphicsItem* item : chart->childItems())
            if (auto* caption = qgraphicsitem_cast<QGraphicsSimpleTextItem*>(item)) caption->setFont(sized(0.85, false));
    }
}

QList<RunPtr> ChartGroup::runsToDraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    QList<RunPtr> runs;
    if (current) runs.append(current);
    for (const RunPtr& r : compare)
        if (r && !runs.contains(r)) runs.append(r);
    return runs;
}

TimedChartView* makeChartView(QChart* chart, QWidget* parent) { return new TimedChartView(chart, parent); }

QChart* makeChart(const QString& title)
{
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->legend()->setShowToolTips(true);
    QFont f = chart->legend()->font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    chart->legend()->setFont(f);
    // Geometry animations would repaint for 1 s after every frame's data update.
    chart->setAnimationOptions(QChart::NoAnimation);
    return chart;
}

QValueAxis* makeValueAxis(const QString& title, const QString& labelFormat)
{
    auto* axis = new QValueAxis;
    axis->setTitleText(title);
    axis->setLabelFormat(labelFormat);
    QObject::connect(axis, &QValueAxis::labelFormatChanged, axis, [axis] { fitTicksToLabels(axis); });
    fitTicksToLabels(axis);
    return axis;
}

void setAxisRange(QValueAxis* axis, double low, double high)
{
    if (axis->min() == low && axis->max() == high) return;
    // Even ticks while the range moves: QtCharts lays the axis out at once, and an old
    // interval over the new range could be thousands of ticks (1 over 100,000 steps).
    if (axis->tickType() != QValueAxis::TicksFixed) axis->setTickType(QValueAxis::TicksFixed);
    axis->setRange(low, high);
    fitTicksToLabels(axis);
}

double labelResolution(const QString& labelFormat)
{
    // The first conversion: flags, width, precision, conversion letter.
    static const QRegularExpression conversion(QStringLiteral("%[-+ #0']*\\d*(?:\\.(\\d*))?[hlLqjzt]*([a-zA-Z])"));
    const QRegularExpressionMatch m = conversion.match(labelFormat);
    if (!m.hasMatch()) return 0.0;
    const QChar letter = m.captured(2).front();
    if (letter == QLatin1Char('d') || letter == QLatin1Char('i') || letter == QLatin1Char('u')) return 1.0;
    if (letter == QLatin1Char('f') || letter == QLatin1Char('F')) {
        const int decimals = m.capturedStart(1) >= 0 ? m.captured(1).toInt() : 6;   // "%f" has 6, "%.f" 0
        return std::pow(10.0, -decimals);
    }
    return 0.0;
}

void fitTicksToLabels(QValueAxis* axis)
{
    const double resolution = labelResolution(axis->labelFormat());
    const double low = axis->min(), high = axis->max(), span = high - low;
    const int count = std::max(2, axis->tickCount());
    // A value the labels write exactly: a whole number of resolutions (to rounding error).
    auto writable = [&](double v) {
        const double units = v / resolution;
        return std::abs(units - std::round(units)) <= 1e-9 + 1e-12 * std::abs(units);
    };
    bool evenTicksFit = true;
    if (resolution > 0 && span > 0 && std::isfinite(span))
        for (int i = 0; i < count && evenTicksFit; ++i) evenTicksFit = writable(low + span * i / (count - 1));
    if (evenTicksFit) {
        if (axis->tickType() != QValueAxis::TicksFixed) axis->setTickType(QValueAxis::TicksFixed);
        return;
    }
    // The smallest round interval that puts at most `count` ticks in the range.
    double interval = 0;
    double decade = std::pow(10.0, std::floor(std::log10(std::max(span / (count - 1), resolution))));
    for (int decades = 0; decades < 4 && interval == 0; ++decades, decade *= 10)
        for (double m : {1.0, 2.0, 2.5, 5.0}) {
            const double candidate = m * decade;
            if (candidate < resolution * (1 - 1e-9) || !writable(candidate)) continue;
            if (std::floor(high / candidate) - std::ceil(low / candidate) + 1 <= count) {
                interval = candidate;
                break;
            }
        }
    if (interval == 0) {   // not for a finite range (1 x 10^k is found within two decades); a safety net
        if (axis->tickType() != QValueAxis::TicksFixed) axis->setTickType(QValueAxis::TicksFixed);
        return;
    }
    // Interval before type: the interval always belongs to the range shown.
    axis->setTickAnchor(0.0);   // ticks at multiples of the interval: 0 is one when in range
    axis->setTickInterval(interval);
    if (axis->tickType() != QValueAxis::TicksDynamic) axis->setTickType(QValueAxis::TicksDynamic);
}

int pixelColumns(const QChart* chart)
{
    qreal width = chart->plotArea().width();
    if (width < 100) width = 800;   // not laid out yet (hidden, offscreen before the first show)
    qreal ratio = 1.0;
    if (const auto* scene = chart->scene(); scene && !scene->views().isEmpty())
        ratio = scene->views().first()->devicePixelRatioF();
    // One column per three device pixels: with first/min/max/last per column that is still
    // more than a point per pixel and every spike stays; QtCharts strokes each series'
    // outline on every replace (for its hover shape), so points cost even when not painted.
    return std::max(100, static_cast<int>(std::ceil(width * std::clamp(ratio, 1.0, 2.0) / 3.0)));
}

void SeriesPool::begin()
{
    for (auto it = used_.begin(); it != used_.end(); ++it) it.value() = false;
}

QAbstractSeries* SeriesPool::take(const QString& key, const std::function<QAbstractSeries*()>& make,
                                  const QList<QAbstractAxis*>& axes)
{
    QAbstractSeries*& s = series_[key];
    if (!s) {
        s = make();
        s->setName(key);
        chart_->addSeries(s);
        for (QAbstractAxis* axis : axes) s->attachAxis(axis);
    }
    used_[key] = true;
    return s;
}

void SeriesPool::end()
{
    for (auto it = used_.begin(); it != used_.end();) {
        if (it.value()) {
            ++it;
            continue;
        }
        if (QAbstractSeries* s = series_.take(it.key())) {
            chart_->removeSeries(s);
            delete s;
        }
        it = used_.erase(it);
    }
}

QAreaSeries* makeAreaSeries()
{
    auto* upper = new QLineSeries;
    auto* lower = new QLineSeries;
    auto* area = new QAreaSeries(upper, lower);
    upper->setParent(area);
    lower->setParent(area);
    return area;
}

void setSeriesName(QAbstractSeries* s, const QString& name)
{
    if (s->name() != name) s->setName(name);
}

void setSeriesPen(QXYSeries* s, const QPen& pen)
{
    if (s->pen() != pen) s->setPen(pen);
}

void setLegendVisible(QChart* chart, QAbstractSeries* s, bool visible)
{
    // Unconditional: isVisible() is false while the chart is hidden, so comparing first
    // would skip hiding a marker that then appears when the chart shows. (Setting the same
    // explicit state again costs nothing.)
    for (QLegendMarker* m : chart->legend()->markers(s)) m->setVisible(visible);
}

void setLegendLabel(QChart* chart, QAbstractSeries* s, const QString& label)
{
    bool changed = false;
    for (QLegendMarker* m : chart->legend()->markers(s))
        if (m->label() != label) {
            m->setLabel(label);
            changed = true;
        }
    // QLegend keeps the old entries' widths until something else lays it out: a label that
    // grew (a lesson switching the watched run) was drawn over its neighbour.
    if (changed)
        if (QGraphicsLayout* layout = chart->legend()->layout()) layout->invalidate();
}

double roundUpForAxis(double x)
{
    if (!(x > 0) || !std::isfinite(x)) return 1.0;
    static constexpr double kSteps[] = {1.0, 1.2, 1.6, 2.0, 2.4, 3.2, 4.0, 4.8, 6.0, 8.0, 10.0};
    const double decade = std::pow(10.0, std::floor(std::log10(x)));
    for (double m : kSteps)
        if (m * decade >= x * (1 - 1e-12)) return m * decade;
    return 10.0 * decade;
}

void setStableRange(QValueAxis* axis, double low, double high, double fill)
{
    if (!(high > low)) high = low + 1.0;
    const double shown = axis->max() - low;
    if (axis->min() == low && high <= axis->max() && high - low >= fill * shown) return;
    // A little past the data, rounded, so steady growth moves the range rarely.
    setAxisRange(axis, low, low + roundUpForAxis((high - low) * 1.02));
}

QPen runPen(const QColor& color, qreal width, Qt::PenStyle style)
{
    QPen pen(color, width, style);
    pen.setCosmetic(true);
    return pen;
}

QColor faded(QColor c, int alpha)
{
    c.setAlpha(alpha);
    return c;
}

ChangeMarkers::ChangeMarkers(QChart* chart, SeriesPool* pool) : QObject(chart), chart_(chart), pool_(pool)
{
    connect(chart_, &QChart::plotAreaChanged, this, &ChangeMarkers::placeLabels);
}

void ChangeMarkers::beginLabels() { used_ = 0; }

void ChangeMarkers::addRun(const RunData& run, QAbstractAxis* x, QAbstractAxis* y, double yLow, double yHigh)
{
    for (const SettingChangeEvent& change : run.changes()) {
        const QString description = QString::fromStdString(change.description);
        const QString key = QStringLiteral("%1 setting change at step %2: %3").arg(run.name()).arg(change.step).arg(description);
        auto* line = pool_->take<QLineSeries>(key, {x, y});
        const QList<QPointF> points{QPointF(change.step, yLow), QPointF(change.step, yHigh)};
        if (line->points() != points) line->replace(points);
        setSeriesPen(line, runPen(run.color(), 1.5, Qt::DashLine));
        setLegendVisible(chart_, line, false);

        if (used_ >= static_cast<int>(labels_.size())) {
            auto* item = new QGraphicsSimpleTextItem(chart_);
            item->setZValue(20);
            item->setFont(chart_->legend()->font());   // the group's font size (presentation mode too)
            labels_.push_back({item, {}, nullptr});
        }
        Label& label = labels_[static_cast<std::size_t>(used_++)];
        label.item->setText(QStringLiteral("step %1: %2").arg(change.step).arg(description));
        label.item->setBrush(run.color());
        label.item->setToolTip(key);
        label.anchor = QPointF(change.step, yHigh);
        label.series = line;
    }
}

void ChangeMarkers::placeLabels()
{
    const QRectF area = chart_->plotArea();
    for (std::size_t i = 0; i < labels_.size(); ++i) {
        Label& label = labels_[i];
        const bool shown = static_cast<int>(i) < used_ && label.series && area.width() > 0;
        label.item->setVisible(shown);
        if (!shown) continue;
        const QPointF at = chart_->mapToPosition(label.anchor, label.series);
        const qreal row = static_cast<qreal>(i % 4) * (label.item->boundingRect().height() + 1);
        qreal left = at.x() + 3;
        if (left + label.item->boundingRect().width() > area.right())
            left = std::max(area.left(), at.x() - 3 - label.item->boundingRect().width());
        label.item->setPos(left, area.top() + 2 + topInset_ + row);
        label.item->setVisible(at.x() >= area.left() - 1 && at.x() <= area.right() + 1);
    }
}

QStringList ChangeMarkers::labelTexts() const
{
    QStringList texts;
    for (int i = 0; i < used_; ++i) texts << labels_[static_cast<std::size_t>(i)].item->text();
    return texts;
}

QList<QPointF> ReducedPointsCache::update(QXYSeries* series, const QString& key, const RunData& run,
                                                 int columns, const std::function<QList<QPointF>()>& compute)
{
    Entry& e = entries_[key];
    const bool stale = e.run != &run || e.revision != run.revision() || e.columns != columns;
    if (stale) {
        e.run = &run;
        e.revision = run.revision();
        e.columns = columns;
        e.points = compute();
    }
    if (stale || series->count() != e.points.size()) series->replace(e.points);
    return e.points;   // a shared copy: the entry itself moves when the hash grows
}

void ReducedPointsCache::retain(const QSet<QString>& keys)
{
    for (auto it = entries_.begin(); it != entries_.end();)
        it = keys.contains(it.key()) ? std::next(it) : entries_.erase(it);
}

void setChartTitle(QChart* chart, const QString& what, const QList<RunPtr>& runs)
{
    const QString title = runs.isEmpty() ? what : QStringLiteral("%1 · %2").arg(what, runs.front()->name());
    if (chart->title() != title) chart->setTitle(title);
}

QString distinguishingName(const QString& name, const QStringList& names)
{
    const QString separator = QStringLiteral(", ");
    const QStringList parts = name.split(separator);
    QStringList kept;
    for (const QString& part : parts) {
        const bool shared = std::all_of(names.begin(), names.end(),
                                        [&](const QString& other) { return other.split(separator).contains(part); });
        if (!shared) kept << part;
    }
    return kept.isEmpty() ? name : kept.join(separator);
}

QString formatBytes(double bytes)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (std::abs(bytes) >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    return QStringLiteral("%1 %2").arg(bytes, 0, 'f', u == 0 ? 0 : (bytes < 10 ? 2 : 1)).arg(units[u]);
}

QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("–");
    const auto total = static_cast<long long>(std::llround(seconds));
    const long long h = total / 3600, m = (total / 60) % 60, s = total % 60;
    if (h > 0) return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QLatin1Char('0')).arg(s, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(m).arg(s, 2, 10, QLatin1Char('0'));
}

QString formatPercent(double fraction)
{
    if (!std::isfinite(fraction)) return QStringLiteral("–");
    const double p = 100.0 * fraction;
    if (p != 0.0 && std::abs(p) < 0.01) return QStringLiteral("%1%").arg(p, 0, 'g', 2);
    return QStringLiteral("%1%").arg(p, 0, 'f', 2);
}

}  // namespace plab::ui
