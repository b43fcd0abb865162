// Chart group "scale": the loss scale S per step on a log2 axis (labels at every power of
// two, or every 2^k when more would not fit), each skipped step
// (non-finite gradients, update skipped) marked, and the skipped count written on the
// chart per run, in the corner of the plot that hides the least data.
#pragma once

#include "charts/chart_support.h"

#include <QLogValueAxis>

namespace plab::ui {

class LossScaleChart : public ChartGroup {
    Q_OBJECT
public:
    explicit LossScaleChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }
    QString countsText() const { return counts_->text(); }

private:
    QChart* chart_;
    QValueAxis* steps_;
    QLogValueAxis* scale_;
    SeriesPool pool_;
    ChangeMarkers* markers_;
    ReducedPointsCache reduced_;
    QGraphicsSimpleTextItem* counts_;
};

}  // namespace plab::ui
