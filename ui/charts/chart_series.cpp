// Series pools, cached reduced points and pens (see chart_series.h).
#include "charts/chart_series.h"

#include <QGraphicsLayout>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>

namespace plab::ui {

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

QPen cosmeticPen(const QColor& color, qreal width, Qt::PenStyle style)
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

}  // namespace plab::ui
