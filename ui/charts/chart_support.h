// What every chart group shares: the group base class (with presentation mode), a chart
// view that times its own painting for the frame scheduler, a pool of series reused
// across redraws (created on first use, removed when no run needs them), the setting-
// change markers (a vertical line and a label per change), pens in a run's color, short
// legend labels (in presentation mode runs named by what tells them apart, titles that
// fit), axis ranges that only move by steps with ticks their labels can write, the
// palette-driven theme, pixel columns for the reduction, and number formatting.
#pragma once

#include "run_data.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QFont>
#include <QGraphicsSimpleTextItem>
#include <QHash>
#include <QList>
#include <QPen>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QValueAxis>
#include <QWidget>
#include <QXYSeries>

#include <functional>

namespace plab::ui {

// A chart view that measures how long its last paint took (ChartsView budgets each frame
// with redraw + paint time) and is set up to paint cheaply: no scene index (series items
// change geometry every frame, an index would be rebuilt each time), one full-viewport
// update instead of a union of dirty rectangles, no painter-state saving per item.
class TimedChartView : public QChartView {
public:
    TimedChartView(QChart* chart, QWidget* parent);
    qint64 lastPaintNs() const { return lastPaintNs_; }

    // The size that keeps axes readable. Also the size hint: QGraphicsView's would be the
    // scene rect, which QChartView sets to the size the view last had, so a grid once laid
    // out larger (presentation mode, a maximized window) would stay that large, scrolling.
    static constexpr QSize kMinimumSize{280, 200};
    QSize sizeHint() const override { return kMinimumSize.expandedTo(minimumSize()); }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    qint64 lastPaintNs_ = 0;
};

// One of the six chart groups: a widget with one or more charts and maybe controls.
class ChartGroup : public QWidget {
    Q_OBJECT
public:
    ChartGroup(QString name, QWidget* parent);
    const QString& groupName() const { return name_; }

    // How long its chart views took to paint last time (the frame scheduler's estimate).
    qint64 lastPaintNs() const;

    // Presentation mode (projector, screen share): lines at least 3 px, fonts 1.5x,
    // full-contrast text and grid. Off restores the normal look. The next redraw applies
    // the pens; fonts and colors change at once.
    void setPresentationMode(bool on);
    bool presentationMode() const { return presentation_; }

    // Rebuilds what is drawn from the runs (current may be null). Called by ChartsView's
    // frame timer only when some run's revision() moved, or the runs or theme changed.
    virtual void redraw(const RunPtr& current, const QList<RunPtr>& compare) = 0;
    virtual QList<QChart*> charts() const = 0;
    QList<QAbstractSeries*> series() const;

    // Antialiasing triples the paint time of long lines: charts holding more points than
    // this draw without it (ChartsView calls this after each redraw).
    static constexpr qsizetype kAntialiasedPoints = 3000;
    void adaptAntialiasing();

    // Follows the palette: dark theme when the window color is dark.
    virtual void applyPalette(const QPalette& palette);

protected:
    // What else a group lays out differently in presentation mode (called after the mode
    // changed; a redraw follows).
    virtual void presentationModeChanged() {}

    // The runs to draw, current first, without nulls or duplicates.
    static QList<RunPtr> runsToDraw(const RunPtr& current, const QList<RunPtr>& compare);

    // A run's pen as the free runPen(), thickened to >= 3 px (faint lines to >= 2 px) and
    // made opaque in presentation mode. Member lookup makes every group's redraw use it.
    QPen runPen(const QColor& color, qreal width = 2.0, Qt::PenStyle style = Qt::SolidLine) const;

    // How a run is named in a legend or title: its name; in presentation mode only what
    // tells it apart from the other runs drawn (distinguishingName), so labels fit at the
    // large fonts. The series' own names keep the full name (tooltips, tests).
    QString runLabel(const RunPtr& run, const QList<RunPtr>& runs) const;

    // The free setChartTitle() in normal mode. In presentation mode "<shortWhat> · <the
    // watched run's runLabel>" (shortWhat defaults to what), on two lines when one line is
    // wider than the chart; refitted when the chart is resized, not per frame.
    void setChartTitle(QChart* chart, const QString& what, const QList<RunPtr>& runs, const QString& shortWhat = {});

private:
    void applyFonts();
    void fitTitle(QChart* chart);
    QString name_;
    bool presentation_ = false;
    QPalette palette_;
    QFont normalFont_;   // the widget font before presentation mode
    struct TitleParts {
        QString what;
        QString run;
    };
    QHash<QChart*, TitleParts> titles_;   // presentation-mode titles, for refitting on resize
};

// A chart view set up the same everywhere: antialiased, no margins wasted, a minimum
// size that keeps axes readable.
TimedChartView* makeChartView(QChart* chart, QWidget* parent);
QChart* makeChart(const QString& title);
// A value axis whose ticks get labels that say where they are (fitTicksToLabels); set its
// range with setAxisRange or setStableRange.
QValueAxis* makeValueAxis(const QString& title, const QString& labelFormat = QStringLiteral("%g"));
// The smallest difference a printf label format shows: 1 for "%d", 0.01 for "%.2f"; 0 for
// formats that show any value ("%g", "%.3g", "%e").
double labelResolution(const QString& labelFormat);
// Evenly spaced ticks (tickCount of them, ends included) when each lands on a value the
// label format can write; otherwise ticks at multiples of a round interval (1, 2, 2.5 or 5
// x 10^k, a multiple of the resolution) with at most tickCount in the range. An axis of
// steps over 0..1.2 ("%d") so shows 0 and 1 instead of "0 0 0 0 1"; 0..1200 keeps 0, 300,
// ..., 1200. For the range shown: call it after the range changed (setAxisRange does).
void fitTicksToLabels(QValueAxis* axis);
// Sets the range, then the ticks for it, never laying out an old tick interval over the
// new range. Nothing happens when the range is unchanged, so redraws may call it per frame.
void setAxisRange(QValueAxis* axis, double low, double high);

// Width of the plot area in device pixels (at least 100): the columns for reduction.
int pixelColumns(const QChart* chart);

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
// Sets [low, high'] on the axis only when `high` left the shown range or uses less than
// `fill` of it; high' is a round number a little past the data. Moving ranges every
// frame re-lays out every label and the plot area, which costs more than the lines.
void setStableRange(QValueAxis* axis, double low, double high, double fill = 0.5);
// The next round value >= x (1, 1.2, 1.6, 2, 2.4, 3.2, 4, 4.8, 6, 8 x 10^k: four equal
// tick intervals with short labels).
double roundUpForAxis(double x);
QPen runPen(const QColor& color, qreal width = 2.0, Qt::PenStyle style = Qt::SolidLine);
QColor faded(QColor c, int alpha);

// The steps where a run's settings changed: a dashed vertical line across the plot and
// a label with the description at its top; labels follow the plot area when it moves.
class ChangeMarkers : public QObject {
    Q_OBJECT
public:
    ChangeMarkers(QChart* chart, SeriesPool* pool);
    // Adds this run's markers for the current redraw (between pool->begin() and end()),
    // spanning yLow..yHigh of the given axes. Call placeLabels() after the axis ranges are set.
    void addRun(const RunData& run, QAbstractAxis* x, QAbstractAxis* y, double yLow, double yHigh);
    void beginLabels();
    void placeLabels();
    // Leaves this many pixels free at the top of the plot for a caption drawn there.
    void setTopInset(qreal pixels) { topInset_ = pixels; }
    int labelCount() const { return static_cast<int>(labels_.size()); }
    QStringList labelTexts() const;

private:
    struct Label { QGraphicsSimpleTextItem* item; QPointF anchor; QAbstractSeries* series; };
    QChart* chart_;
    SeriesPool* pool_;
    std::vector<Label> labels_;
    int used_ = 0;
    qreal topInset_ = 0;
};

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

private:
    struct Entry {
        const RunData* run = nullptr;
        std::uint64_t revision = 0;
        int columns = 0;
        QList<QPointF> points;
    };
    QHash<QString, Entry> entries_;
};

// "<what> · <the watched run's name>": legends then name only the comparison runs.
void setChartTitle(QChart* chart, const QString& what, const QList<RunPtr>& runs);

// `name` without the comma-separated parts that every one of `names` shares: among "AMP
// FP16, no loss scaling" and "AMP FP16, dynamic loss scaling" the first is "no loss
// scaling". The whole name when nothing is shared or nothing would be left (one run).
QString distinguishingName(const QString& name, const QStringList& names);

QString formatBytes(double bytes);
QString formatDuration(double seconds);
QString formatPercent(double fraction);

}  // namespace plab::ui
