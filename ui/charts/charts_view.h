// The seven live chart groups of Precision Lab (loss/accuracy, loss scale, gradient
// histograms, underflow/overflow, updates lost/zero/non-finite, memory with the
// batch-size planner, throughput), an eighth of the values a PyTorch script logged of
// its own (shown only while a shown run has some) and a ninth of an autoencoder's
// reconstructions (shown only while a shown run has them), for the run being watched and
// the runs overlaid for comparison. Data arrival only marks the view dirty; one ~25 Hz
// timer redraws the groups when some run's revision() moved, in turn (round robin), each
// tick only as many as fit a budget measured with their painting, so the event loop never
// waits for all of them at once.
#pragma once

#include "run_data.h"

#include <QList>
#include <QString>
#include <QWidget>

#include <memory>
#include <utility>
#include <vector>

QT_BEGIN_NAMESPACE
class QAbstractSeries;
class QGridLayout;
class QLabel;
class QScrollArea;
class QTimer;
QT_END_NAMESPACE

namespace plab::ui {

class ChartGroup;

class ChartsView : public QWidget {
    Q_OBJECT
public:
    explicit ChartsView(QWidget* parent = nullptr);
    ~ChartsView() override;

    // The run being watched (may be null) and the runs selected for comparison (overlays).
    void setRuns(RunPtr current, const QList<RunPtr>& compare);

    // The chart groups: "loss", "scale", "histogram", "underflow", "updates", "memory",
    // "throughput" (groupNames: the ones lessons name and show or hide), and "scalars" and
    // "reconstructions", which show and hide themselves with what the shown runs hold.
    QWidget* group(const QString& name) const;
    static QStringList groupNames();

    // Series currently drawn in a group (names contain the run's name), for tests.
    QList<QAbstractSeries*> seriesOf(const QString& group) const;

    // Forces the pending redraw (tests); normally a ~25 Hz timer redraws when a run's
    // revision() moved.
    void redrawNow();

    // Presentation mode (projector, screen share): lines >= 3 px, fonts 1.5x, full-contrast
    // text and grid on every chart, short run names in legends and titles, and only the
    // shown groups in the grid, without empty cells (arrangeGroups); false restores the
    // normal look and grid. Takes effect at once.
    void setPresentationMode(bool on);
    bool presentationMode() const { return presentation_; }
    // Presentation fonts of this many pixels on every group (ChartGroup::
    // setPresentationFontPixels; 0: 1.5x the normal fonts). The main window's presentation
    // mode sets it from the window's size.
    void setPresentationFontPixels(int pixels);
    // Presentation mode's run key above the charts: each run drawn, once, in its colour
    // (the watched run first, in bold), so legends need not repeat the runs. As plain
    // text for tests; "" when hidden.
    QString runKeyText() const;

    // Columns of the grid now: 2, or 1 while the view is too narrow for two columns of
    // readable charts (docks open beside it), so that it scrolls down, never sideways.
    int columns() const { return columns_; }

signals:
    void histogramBinPicked(const QString& layer, const QString& kind, int exponent);

protected:
    void changeEvent(QEvent* event) override;   // palette and font changes re-theme the charts
    bool eventFilter(QObject* watched, QEvent* event) override;   // a group shown or hidden

private:
    // Normal mode: the fixed two-column grid (hidden groups leave their cells empty).
    // Presentation mode: the shown groups only, in the same order; two narrow groups share
    // a row, a wide one (underflow's two panels, memory with its planner) or a narrow one
    // left alone spans both columns. One column: every group in its own row, in order.
    // Moves widgets only when the arrangement changes.
    void arrangeGroups();
    // Two columns while the viewport is at least as wide as the two-column grid's minimum
    // width (measured from the layout when it last had two columns), else one.
    void fitColumnsToWidth();
    void fitGroupHeights();   // each group's minimum height (presentation mode: what it holds)
    static constexpr int kGroupMinimum = 300;
    static constexpr int kMemoryGroupMinimum = 400;   // the chart beside the planner's table
    void onFrameTimer();
    bool runsChanged() const;
    void redrawAll();
    void noteDrawnRevisions();
    void redrawGroup(ChartGroup* group);
    void learnCosts();
    void updateRunKey();

    RunPtr current_;
    QList<RunPtr> compare_;
    QList<ChartGroup*> groups_;
    QTimer* frameTimer_ = nullptr;
    QGridLayout* grid_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    QLabel* runKey_ = nullptr;
    int columns_ = 2;
    int twoColumnMinimum_ = 0;       // the grid's minimum width in two columns; 0: not measured
    QString arrangement_;            // what arrangeGroups() last laid out
    bool arrangePending_ = false;    // a group's visibility changed; arranged once per event-loop turn
    std::vector<std::pair<const RunData*, std::uint64_t>> drawnRevisions_;   // at the last redraw
    bool forceRedraw_ = true;
    // A frame starts another group only while the estimated redraw + paint of all it started
    // stays under this: with the 16 ms target, what is left covers the trainer's queued
    // events and an estimate that was too low.
    static constexpr qint64 kFrameBudgetNs = 9'000'000;
    // Groups still to redraw for the latest data, oldest first; a frame redraws them in turn
    // while their estimated cost fits its budget (at least one per frame).
    QList<ChartGroup*> pending_;
    // Per group (same order as groups_): what a redraw costs, data update plus the paint
    // that follows it in the next event-loop iteration; learned after each frame.
    struct Cost {
        qint64 redrawNs = 0;     // last data update
        qint64 estimateNs = kFrameBudgetNs;   // smoothed redraw + paint; unknown counts as a whole frame
        bool measuring = false;  // redrawn last frame: its paint time is due
    };
    std::vector<Cost> costs_;
    bool presentation_ = false;
};

}  // namespace plab::ui
