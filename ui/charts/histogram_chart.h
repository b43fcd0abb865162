// Chart group "histogram": the histogram of log2|x| of one layer's tensor kind (values as
// the engine records them: scaled by the loss scale, before rounding) at one histogram
// step, over the regions of the chosen run's compute format (flushed to zero, subnormal,
// normal, overflow) with the share of values in each written under the chart. Every run
// is judged in its own format: a comparison run in another format gets its boundaries
// drawn as lines in its color, and its shares computed against its own ranges. Combos pick
// the layer and kind, a slider moves through the histogram steps, comparison runs are
// overlaid at their nearest earlier histogram step, and clicking a bin reports it. Under a
// block-scaled recipe (MX, NVFP4) the "block scales" box shows the histogram of the
// quantised tensor's block scales instead (log2 of each block's scale factor, no regions),
// with the share of blocks whose scale is 0 (blocks of zeros, and under NVFP4 blocks whose
// values lie below E4M3's range once the tensor is scaled: lost).
#pragma once

#include "charts/chart_support.h"
#include "telemetry/format_regions.h"

#include <utility>
#include <vector>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
QT_END_NAMESPACE

namespace plab::ui {

// The part of the log2 axis a histogram chart shows, [low, high], and the top of its share
// axis: the bins that hold values, 3 exponents of margin, widened to the formats' region
// boundaries that lie within 40 exponents of them (formats.front() is the chosen run's);
// without values, the chosen format's regions (no formats: [-10, 10]). Pure, for tests.
struct HistogramWindow {
    int low = 0;
    int high = 0;
    double top = 100.0;   // percent: 1.15 x the largest bin's share, or 100
};
HistogramWindow histogramWindow(const std::vector<const GradientHistogram*>& drawn,
                                const std::vector<FormatRegions>& formats);

class HistogramChart : public ChartGroup {
    Q_OBJECT
public:
    explicit HistogramChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }

    // Selection (tests and the main window may drive it).
    void setSelection(const QString& layer, TensorKind kind);
    void setHistogramIndex(int index);      // into the current run's telemetry()
    QString layer() const;
    TensorKind kind() const;
    QString sharesText() const;
    // The block scales view: asked for (the box) and possible (the tap has blocks).
    void setBlockScalesShown(bool on);
    bool blockScalesShown() const;
    // The step of the histogram picked on the slider (the watched run's); 0 while the
    // chart follows the latest one (and before any).
    std::int64_t shownStep() const { return shownStep_; }

    // The bin under a point of the plot (chart coordinates), as an exponent.
    void pickAt(const QPointF& chartPosition);

signals:
    void binPicked(const QString& layer, const QString& kind, int exponent);

protected:
    void presentationModeChanged() override;

private:
    struct RunShares {
        QString run;      // the run's label
        QString format;   // the run's compute format, whose regions the shares are of
        RegionShares shares;
        // What the rounding counted as clipped to the format's largest value or made inf, as a
        // share of the nonzero finite values, where it is more than the overflow region's
        // share: a format's largest value can lie inside a power-of-two bin (FP4's 6 in
        // [4, 8), E4M3's 448 in [256, 512)), whose values the regions count as normal.
        std::optional<double> clipped;
    };
    struct Drawn {   // a run's histogram at the step drawn
        RunPtr run;
        const LayerTelemetry* tap;
        std::int64_t step;
    };
    // redraw's parts: the controls (returns the chosen run's step), the shading, other
    // formats' boundary lines, the outlines (and the shares), the texts under the chart.
    std::int64_t followControls(const RunPtr& chosen);
    void drawRegions(const RegionFormat& format, const HistogramWindow& w);
    void drawOtherBoundaries(const std::vector<std::pair<RunPtr, RegionFormat>>& otherFormats, const HistogramWindow& w);
    std::vector<RunShares> drawOutlines(const std::vector<Drawn>& drawn, const RunPtr& chosen, const QList<RunPtr>& runs,
                                        const HistogramWindow& w);
    // The block scales view's outlines and its lines under the chart.
    QString drawBlockScales(const std::vector<Drawn>& drawn, const RunPtr& chosen, const QList<RunPtr>& runs,
                            const HistogramWindow& w);
    void setAxisTitles(bool blockScales);
    void showNotes(const RunPtr& chosen, const QList<RunPtr>& runs, bool nothingDrawn,
                   const std::vector<RunShares>& shares, std::int64_t step);
    // The shares under the chart: one line per run; in presentation mode a table.
    static QString sharesLines(const std::vector<RunShares>& shares);
    static QString sharesTable(const std::vector<RunShares>& shares, const QColor& background);
    void refillLayers(const RunData& run);
    void redrawSelf() { redraw(current_, compare_); }

    QChart* chart_;
    QValueAxis* exponents_;
    QValueAxis* share_;
    SeriesPool pool_;
    QLabel* shares_;   // under the chart, wrapped (one line per run is too long); a table in presentation mode
    QComboBox* layerBox_;
    QComboBox* kindBox_;
    QCheckBox* blockScalesBox_;
    bool showingBlockScales_ = false;
    QSlider* stepSlider_;
    QLabel* stepLabel_;
    QLabel* changesLabel_;
    RunPtr current_;
    QList<RunPtr> compare_;
    std::int64_t shownStep_ = 0;
    bool followLatest_ = true;
    bool updatingControls_ = false;
};

}  // namespace plab::ui
