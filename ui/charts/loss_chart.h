// Chart group "loss": training loss per step (raw, faint; and smoothed) and test accuracy
// on a second axis, for the current run and the comparison runs, with setting changes.
#pragma once

#include "charts/chart_support.h"

namespace plab::ui {

class LossChart : public ChartGroup {
    Q_OBJECT
public:
    explicit LossChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }

    static constexpr double kSmoothingWeight = 0.95;

private:
    QChart* chart_;
    QValueAxis* steps_;
    QValueAxis* loss_;
    QValueAxis* accuracy_;
    SeriesPool pool_;
    ChangeMarkers* markers_;
    ReducedPointsCache reduced_;
};

}  // namespace plab::ui
