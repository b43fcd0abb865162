// Chart group "scale": the loss scale S per step, plotted as log2 S on a value axis whose
// labels read 2^k (2^16, not 65536 or 134217728), each skipped step
// (non-finite gradients, update skipped) marked, and the skipped count written on the
// chart per run, in the corner of the plot that hides the least data (under the chart in
// presentation mode). kBandSteps or more skipped steps in a row are one translucent band
// instead (a run that skips every step is one band, not a marker per step). The level each
// run ends at is labelled on the right in the run's colour (2^17 against 2^18), and a faint
// grid line marks every power of two between ticks. Under a per-tensor FP8 recipe, each
// layer's gradient scale (quantized_activation_grad) at the histogram steps, dashed, on the
// same axis. Hovering a skipped step's marker or band says why it skipped (the rounding
// site that overflowed first, from the record's StepEvent::nonFinite); a click keeps that
// under the chart.
#pragma once

#include "charts/chart_support.h"

#include <QColor>

#include <map>
#include <vector>

QT_BEGIN_NAMESPACE
class QLabel;
QT_END_NAMESPACE

namespace plab::ui {

class LossScaleChart : public ChartGroup {
    Q_OBJECT
public:
    explicit LossScaleChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }
    QString countsText() const { return counts_->text(); }
    // The labels beside the plot's right edge: each run's last level (tests).
    QStringList levelLabels() const;
    // The line under the chart a click on a skipped step left ("" when none is shown).
    QString clickedSkipText() const;

    QString pointDetail(const QAbstractSeries* series, const QPointF& value) const override;
    void pointClicked(const QAbstractSeries* series, const QPointF& value) override;

    static constexpr std::size_t kBandSteps = 10;
    static constexpr qreal kBandWidth = 14.0;

private:
    void placeLevelLabels();

    QChart* chart_;
    QValueAxis* steps_;
    QValueAxis* scale_;   // log2 S; labels "2^%d"
    struct Level {
        double log2;
        QColor color;
    };
    std::vector<Level> levels_;   // each run's last log2 S, watched run first
    std::vector<QGraphicsSimpleTextItem*> levelLabels_;   // owned by the chart
    QLabel* countsBelow_;
    QLabel* skipCause_;   // a clicked skipped step's why
    std::map<const QAbstractSeries*, RunPtr> skipSeries_;   // markers and bands -> their run
    SeriesPool pool_;
    ChangeMarkers* markers_;
    ReducedPointsCache reduced_;
    QGraphicsSimpleTextItem* counts_;
};

}  // namespace plab::ui
