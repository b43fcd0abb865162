// Chart group "updates": what the optimizer's updates did to the stored weights, per layer
// at each histogram step, for the weights of the watched run and the comparison runs:
// - lost to rounding: nonzero updates that left the stored weight unchanged (the update
//   was smaller than half the spacing of the weight's format), as a share of nonzero updates;
// - zero gradient: weight-gradient elements that were zero (exactly, or flushed to zero by
//   rounding), whose update is zero because there was nothing to apply, not lost;
// - made non-finite: weights the update turned into inf or NaN (a count).
// While a shown run accumulates gradients over micro-batches, a choice puts in the first
// panel's place the micro-batch gradients its accumulation buffer lost instead: additions
// that left the buffer unchanged, as a share of the nonzero ones added.
// Runs that round no weights (fp32) have nothing to count; the panels say so.
#pragma once

#include "charts/layer_panels.h"

namespace plab::ui {

class UpdatesChart : public LayerPanelsGroup {
    Q_OBJECT
public:
    explicit UpdatesChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    // The lost-updates panel's last note line: the shown FP32 run of the watched run's model
    // named as the reference, or a note that fp32 loses updates too.
    QString fp32Reference(const QList<RunPtr>& runs) const;
    QList<QChart*> charts() const override { return {lost_, zero_, nonFinite_}; }

    // The note on each panel (why it is empty, which lines coincide), for tests.
    QString lostNote() const { return noteText(panels_[0]); }
    // "updates" or "additions": what the first panel counts (the choice shows only while a
    // shown run accumulates gradients).
    void showLost(const QString& what);
    QString zeroNote() const { return noteText(panels_[1]); }
    QString nonFiniteNote() const { return noteText(panels_[2]); }

protected:
    void presentationModeChanged() override;   // short axis titles beside the narrow panels

private:
    static QStringList axisTitles(bool presentation);

private:
    QComboBox* lostWhat_;   // the first panel: the optimizer's lost updates or the buffer's lost additions
    QChart* lost_;
    QChart* zero_;
    QChart* nonFinite_;
    SeriesPool pools_[3];
    ReducedPointsCache reduced_[3];
    Panel panels_[3];
    RunPtr current_;   // as last drawn, for the "All layers" box
    QList<RunPtr> compare_;
};

// Lost updates as a percentage of this step's nonzero updates (NaN without any).
double lostUpdatePercent(const LayerTelemetry& l);
// Weight-gradient elements that were zero after rounding, as a percentage of all (NaN when none).
double zeroGradientPercent(const LayerTelemetry& l);

}  // namespace plab::ui
