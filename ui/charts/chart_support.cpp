// Shared chart plumbing (see chart_support.h).
#include "charts/chart_support.h"

#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace plab::ui {

ChartGroup::ChartGroup(QString name, QWidget* parent) : QWidget(parent), name_(std::move(name))
{
    setObjectName(name_);
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
    const bool dark = palette.color(QPalette::Window).lightness() < 128;
    for (QChart* chart : charts()) {
        const auto theme = dark ? QChart::ChartThemeDark : QChart::ChartThemeLight;
        if (chart->theme() != theme) chart->setTheme(theme);   // resets series colors: redraw follows
        chart->setBackgroundBrush(palette.color(QPalette::Base));
        chart->setPlotAreaBackgroundVisible(false);
        chart->setTitleBrush(palette.color(QPalette::Text));
        chart->legend()->setLabelColor(palette.color(QPalette::Text));
        for (QAbstractAxis* axis : chart->axes()) {
            axis->setLabelsColor(palette.color(QPalette::Text));
            axis->setTitleBrush(palette.color(QPalette::Text));
        }
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

QChartView* makeChartView(QChart* chart, QWidget* parent)
{
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(280, 200);
    view->setFrameShape(QFrame::NoFrame);
    return view;
}

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
    return chart;
}

QValueAxis* makeValueAxis(const QString& title, const QString& labelFormat)
{
    auto* axis = new QValueAxis;
    axis->setTitleText(title);
    axis->setLabelFormat(labelFormat);
    return axis;
}

int pixelColumns(const QChart* chart)
{
    qreal width = chart->plotArea().width();
    if (width < 100) width = 800;   // not laid out yet (hidden, offscreen before the first show)
    qreal ratio = 1.0;
    if (const auto* scene = chart->scene(); scene && !scene->views().isEmpty())
        ratio = scene->views().first()->devicePixelRatioF();
    // One column per two device pixels: min/max still traces every spike, and half the
    // points halve what QtCharts copies and paints each frame.
    return std::max(100, static_cast<int>(std::ceil(width * std::clamp(ratio, 1.0, 2.0) / 2.0)));
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
    for (QLegendMarker* m : chart->legend()->markers(s))
        if (m->isVisible() != visible) m->setVisible(visible);
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
        label.item->setPos(left, area.top() + 2 + row);
        label.item->setVisible(at.x() >= area.left() - 1 && at.x() <= area.right() + 1);
    }
}

QStringList ChangeMarkers::labelTexts() const
{
    QStringList texts;
    for (int i = 0; i < used_; ++i) texts << labels_[static_cast<std::size_t>(i)].item->text();
    return texts;
}

const QList<QPointF>& ReducedPointsCache::update(QXYSeries* series, const QString& key, const RunData& run,
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
    return e.points;
}

void ReducedPointsCache::retain(const QSet<QString>& keys)
{
    for (auto it = entries_.begin(); it != entries_.end();)
        it = keys.contains(it.key()) ? std::next(it) : entries_.erase(it);
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
