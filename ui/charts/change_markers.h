// The setting-change markers of a chart: a dashed vertical line and a label per change.
#pragma once

#include "charts/chart_series.h"
#include "run_data.h"

#include <QAbstractAxis>
#include <QChart>
#include <QGraphicsSimpleTextItem>
#include <QObject>
#include <QPointF>
#include <QStringList>

#include <vector>

namespace plab::ui {

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

}  // namespace plab::ui
