// The chart group base class (one of the seven groups of charts, with presentation mode for
// projectors) and the chart view that times its own painting for the frame scheduler.
#pragma once

#include "run_data.h"

#include <QChartView>
#include <QGraphicsSimpleTextItem>
#include <QRubberBand>
#include <QFont>
#include <QHash>
#include <QList>
#include <QPalette>
#include <QPen>
#include <QString>
#include <QWidget>

namespace plab::ui {

class ChartGroup;

// A chart view that measures how long its last paint took (ChartsView budgets each frame
// with redraw + paint time) and is set up to paint cheaply: no scene index (series items
// change geometry every frame, an index would be rebuilt each time), one full-viewport
// update instead of a union of dirty rectangles, no painter-state saving per item.
//
// It also zooms and tells values: drag a rectangle over the plot to zoom into it (the axes
// then stay there while runs train on); a right click or a double click shows the whole
// range again. Hovering shows the value of the nearest point (within 12 px) as a tool tip,
// with what the chart's group says of it (ChartGroup::pointDetail); a click on a point
// tells the group (ChartGroup::pointClicked).
class TimedChartView : public QChartView {
public:
    TimedChartView(QChart* chart, QWidget* parent);
    qint64 lastPaintNs() const { return lastPaintNs_; }

    // Zooms into `rect` (view coordinates, cut to the plot area); false when it is too small
    // (under 8 px either way: a click, not a drag).
    bool zoomTo(const QRect& rect);
    void resetZoom();
    bool zoomed() const { return zoomed_; }
    // "<series>\n<x axis> <x> · <y axis> <y>" of the point nearest `viewPos` within 12 px,
    // and its group's pointDetail on further lines, or "" (what the hover tool tip shows).
    QString valueTextAt(const QPoint& viewPos) const;
    // A click at viewPos: the group's pointClicked with the nearest point (none: null).
    void clickAt(const QPoint& viewPos);

    // The size that keeps axes readable. Also the size hint: QGraphicsView's would be the
    // scene rect, which QChartView sets to the size the view last had, so a grid once laid
    // out larger (presentation mode, a maximized window) would stay that large, scrolling.
    static constexpr QSize kMinimumSize{280, 200};
    QSize sizeHint() const override { return kMinimumSize.expandedTo(minimumSize()); }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;

private:
    struct Nearest {
        const QAbstractSeries* series = nullptr;
        QPointF value;   // in the series' axes
        QString text;
    };
    Nearest nearestPoint(const QPoint& viewPos) const;
    ChartGroup* group() const;   // the group this view is in, or null

    qint64 lastPaintNs_ = 0;
    QRubberBand* band_ = nullptr;
    QPoint bandOrigin_;
    bool zoomed_ = false;
    QGraphicsSimpleTextItem* zoomNote_ = nullptr;   // "zoomed: right-click for the whole range"
};

// One of the seven chart groups: a widget with one or more charts and maybe controls.
class ChartGroup : public QWidget {
    Q_OBJECT
public:
    // The shade of a run's color for its li-th layer (per-layer lines).
    static QColor layerColor(const QColor& runColor, std::size_t li);
    ChartGroup(QString name, QWidget* parent);
    const QString& groupName() const { return name_; }

    // How long its chart views took to paint last time (the frame scheduler's estimate).
    qint64 lastPaintNs() const;

    // Presentation mode (projector, screen share): lines at least 3 px, fonts 1.5x,
    // full-contrast text and grid. Off restores the normal look. The next redraw applies
    // the pens; fonts and colors change at once.
    void setPresentationMode(bool on);
    bool presentationMode() const { return presentation_; }
    // The presentation fonts' size in pixels, chosen for the window (PresentationMode scales
    // it with the window: 24 px at 1920x1080): titles, tick labels, legends, axis titles,
    // captions and the group's controls all get at least this. 0 (the default): 1.5x the
    // normal fonts. Applies at once while presentation mode is on, and when it next is.
    void setPresentationFontPixels(int pixels);
    int presentationFontPixels() const { return presentationPixels_; }
    // The smallest height each chart of a group is given: TimedChartView::kMinimumSize's;
    // in presentation mode growing with the fonts, kPresentationChartHeight at 1920x1080's
    // 24 px (240 at 1280x720's 16 px), so that a projected chart's ticks and
    // axis titles have room whatever else its group holds (ChartsView lets the group grow
    // to fit, and scrolls).
    static constexpr int kPresentationChartHeight = 300;
    static int chartMinimumHeight(bool presentation, int fontPixels);

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

    // What a point of one of its series means beyond its value, for the hover tool tip (the
    // loss-scale chart: why a skipped step skipped); "" for nothing more.
    virtual QString pointDetail(const QAbstractSeries* /*series*/, const QPointF& /*value*/) const { return {}; }
    // A click on the plot: the nearest point within 12 px (series null: none), so a group
    // can keep its detail in view.
    virtual void pointClicked(const QAbstractSeries* /*series*/, const QPointF& /*value*/) {}

protected:
    // What else a group lays out differently in presentation mode (called after the mode
    // changed; a redraw follows).
    virtual void presentationModeChanged() {}

    // The runs to draw, current first, without nulls or duplicates.
    static QList<RunPtr> runsToDraw(const RunPtr& current, const QList<RunPtr>& compare);

    // A run's pen: cosmeticPen(), thickened to >= 3 px (faint lines to >= 2 px) and made
    // opaque in presentation mode.
    QPen runPen(const QColor& color, qreal width = 2.0, Qt::PenStyle style = Qt::SolidLine) const;

    // How a run is named in a legend or title: its name; in presentation mode only what
    // tells it apart from the other runs drawn (distinguishingName), so labels fit at the
    // large fonts. The series' own names keep the full name (tooltips, tests).
    QString runLabel(const RunPtr& run, const QList<RunPtr>& runs) const;
    // A comparison run's entry in a legend: shown in normal mode; in presentation mode the
    // charts' run key (ChartsView) names each run once for every chart, so the legends keep
    // only what the watched run's lines are ("loss", "test acc.", "skipped (8)").
    void showComparisonInLegend(QChart* chart, QAbstractSeries* series, bool watched) const;

    // "<what> · <the watched run's name>" (legends then name only the comparison runs). In
    // presentation mode "<shortWhat> · <the watched run's runLabel>" (shortWhat defaults to
    // what), on two lines when one line is wider than the chart; refitted when the chart is
    // resized, not per frame.
    void setChartTitle(QChart* chart, const QString& what, const QList<RunPtr>& runs, const QString& shortWhat = {});

private:
    void applyFonts();
    void fitChartHeights();   // chartMinimumHeight on each chart view
    // A presentation-mode font `factor` times the base size: presentationPixels_, or 1.5x
    // the normal font when none is set.
    QFont presentationFont(qreal factor) const;
    void fitTitle(QChart* chart);
    QString name_;
    bool presentation_ = false;
    int presentationPixels_ = 0;
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

}  // namespace plab::ui
