// Chart group "underflow": per layer, the fraction of nonzero finite values that rounding
// flushed to zero (underflow) and that became inf (overflow), at each histogram step, for
// weight gradients (or activation gradients / activations, selectable), for the current
// run and the comparison runs, with setting changes marked.
#pragma once

#include "charts/layer_panels.h"

QT_BEGIN_NAMESPACE
class QComboBox;
QT_END_NAMESPACE

namespace plab::ui {

// underflow / (count - zerosIn - nan - infIn), NaN when there were no such values.
double underflowFraction(const RoundingStats& s);
double overflowFraction(const RoundingStats& s);

class UnderflowChart : public LayerPanelsGroup {
    Q_OBJECT
public:
    explicit UnderflowChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {underflow_, overflow_}; }
    void setKind(TensorKind kind);
    TensorKind kind() const;

    // The note on each panel: why it is empty, or which runs' lines coincide (tests).
    QString underflowNote() const { return noteText(panels_[0]); }
    QString overflowNote() const { return noteText(panels_[1]); }

private:
    void drawRounding(Panel& panel, const QList<RunPtr>& runs, bool overflow);

    QChart* underflow_;
    QChart* overflow_;
    SeriesPool underflowPool_;
    SeriesPool overflowPool_;
    Panel panels_[2];
    ReducedPointsCache reducedUnderflow_;
    ReducedPointsCache reducedOverflow_;
    QComboBox* kindBox_;
    RunPtr current_;
    QList<RunPtr> compare_;
};

}  // namespace plab::ui
