// Chart group "scale": the loss scale S per step, plotted as log2 S on a value axis whose
// labels read 2^k (2^16, not 65536 or 134217728), each skipped step
// (non-finite gradients, update skipped) marked, and the skipped count written on the
// chart per run, in the corner of the plot that hides the least data. Under a per-tensor FP8
// recipe, each layer's gradient scale (quantized_activation_grad) at the histogram steps,
// dashed, on the same axis.
#pragma once

#include "charts/chart_support.h"

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
    QValueAxis* scale_;   // log2 S; labels "2^%d"
    SeriesPool pool_;
    ChangeMarkers* markers_;
    ReducedPointsCache reduced_;
    QGraphicsSimpleTextItem* counts_;
};

}  // namespace plab::ui
