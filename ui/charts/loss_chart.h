// Chart group "loss": training loss per step (raw, faint; and smoothed) and test accuracy
// on a second axis, for the current run and the comparison runs, with setting changes. A
// comparison run whose curves lie on the watched run's (within a line's width) is named in
// a note on the chart, so a hidden curve is not mistaken for a missing one (in
// presentation mode under the chart: at a class's font sizes it covered the curves).
#pragma once

#include "charts/chart_support.h"

class QLabel;
class QSlider;

class QCheckBox;

namespace plab::ui {

class LossChart : public ChartGroup {
    Q_OBJECT
public:
    explicit LossChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }

    // The smoothed curve's weight (report/smoothing.h), set by the slider under the chart
    // (0 to 0.999, as TensorBoard's); the reports exported from the app use the same.
    double smoothing() const { return smoothing_; }
    void setSmoothing(double weight);
    // The note: which runs' curves coincide ("" when none), for tests.
    QString noteText() const { return noteText_; }
    // The accuracy axis: fitted to the accuracies shown, in whole percents (96.9% and 97.0%
    // had looked the same on 0-100), or 0-100 when asked (the check box under the chart).
    bool accuracyFullRange() const { return accuracyFullRange_; }
    void setAccuracyFullRange(bool full);
    QValueAxis* accuracyAxis() const { return accuracy_; }

protected:
    // Presentation mode shows the curves, not the smoothing control (set it before).
    void presentationModeChanged() override;
    void resizeEvent(QResizeEvent* event) override;

private:
    QChart* chart_;
    QValueAxis* steps_;
    QValueAxis* loss_;
    QValueAxis* accuracy_;
    SeriesPool pool_;
    ChangeMarkers* markers_;
    ReducedPointsCache reduced_;
    void showEvaluations(const RunPtr& run, const QString& idSuffix, QValueAxis* axis, const QString& nameFormat,
                         const QString& legendLabel, const QList<QPointF>& points, bool watched);
    // On the chart, clear of the data where a corner is free; in presentation mode, the
    // label under the chart instead, wrapped to its width.
    void showNote();
    QGraphicsSimpleTextItem* note_;
    QLabel* noteBelow_;
    QWidget* smoothingRow_;
    QSlider* smoothingSlider_;
    QLabel* smoothingValue_;
    QCheckBox* fullRange_;
    bool accuracyFullRange_ = false;
    double smoothing_;
    RunPtr current_;          // the runs of the last redraw, drawn again when the smoothing moves
    QList<RunPtr> compare_;
    QString noteText_;
};

}  // namespace plab::ui
