// Series kept across redraws: a pool of series by key, reduced points cached per run
// revision, setters that repaint only on change, and the pens runs are drawn with.
#pragma once

#include "run_data.h"

#include <QAreaSeries>
#include <QChart>
#include <QHash>
#include <QList>
#include <QPen>
#include <QPointF>
#include <QSet>
#include <QString>
#include <QXYSeries>

#include <cstdint>
#include <functional>

namespace plab::ui {

// The series of one chart kept by key across redraws. begin() marks every series unused,
// take() returns (creating when needed) and marks used, end() deletes the unused ones.
class SeriesPool {
public:
    explicit SeriesPool(QChart* chart) : chart_(chart) {}
    void begin();
    // Creates with `make` (attached to the axes) when the key is new.
    QAbstractSeries* take(const QString& key, const std::function<QAbstractSeries*()>& make,
                          const QList<QAbstractAxis*>& axes);
    template <class S>
    S* take(const QString& key, const QList<QAbstractAxis*>& axes)
    {
        return static_cast<S*>(take(key, [] { return new S; }, axes));
    }
    void end();

private:
    QChart* chart_;
    QHash<QString, QAbstractSeries*> series_;
    QHash<QString, bool> used_;
};

// An area series that owns its two boundary lines (QAreaSeries does not: they leaked with
// every area a pool removed).
QAreaSeries* makeAreaSeries();

// Sets what a reused series shows only when it changed (each setter repaints).
void setSeriesName(QAbstractSeries* s, const QString& name);
void setSeriesPen(QXYSeries* s, const QPen& pen);
void setLegendVisible(QChart* chart, QAbstractSeries* s, bool visible);
// The legend shows `label` instead of the series' full name (which keeps the run's name for
// tooltips and tests): legends stay short enough not to be elided.
void setLegendLabel(QChart* chart, QAbstractSeries* s, const QString& label);
// A cosmetic pen (its width in pixels at any zoom) in a run's colour. Chart groups draw
// with ChartGroup::runPen, which thickens it in presentation mode.
QPen cosmeticPen(const QColor& color, qreal width = 2.0, Qt::PenStyle style = Qt::SolidLine);
QColor faded(QColor c, int alpha);

// Reduced points per series, recomputed only when the run's revision or the pixel columns
// moved: a finished comparison run costs nothing per frame. update() replaces the series'
// points only when they changed (or the series is new), so QtCharts re-lays out nothing else.
class ReducedPointsCache {
public:
    // The points, as an implicitly shared copy (cheap): a reference into the cache would
    // dangle after the next update() that grows it.
    QList<QPointF> update(QXYSeries* series, const QString& key, const RunData& run, int columns,
                          const std::function<QList<QPointF>()>& compute);
    void retain(const QSet<QString>& keys);   // forget series that are gone
    void clear() { entries_.clear(); }         // every series computed again (a setting changed)

private:
    struct Entry {
        const RunData* run = nullptr;
        std::uint64_t revision = 0;
        int columns = 0;
        QList<QPointF> points;
    };
    QHash<QString, Entry> entries_;
};

}  // namespace plab::ui
