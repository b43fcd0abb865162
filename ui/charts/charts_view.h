// The six live chart groups of Precision Lab (loss/accuracy, loss scale, gradient
// histograms, underflow/overflow, memory with the batch-size planner, throughput) for the
// run being watched and the runs overlaid for comparison. Data arrival only marks the view
// dirty; one ~25 Hz timer redraws the groups when some run's revision() moved, in turn
// within a small time budget per tick, so the event loop never waits for all six at once.
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

    // The chart groups: "loss", "scale", "histogram", "underflow", "memory", "throughput".
    QWidget* group(const QString& name) const;
    static QStringList groupNames();

    // Series currently drawn in a group (names contain the run's name), for tests.
    QList<QAbstractSeries*> seriesOf(const QString& group) const;

    // Forces the pending redraw (tests); normally a ~25 Hz timer redraws when a run's
    // revision() moved.
    void redrawNow();

signals:
    void histogramBinPicked(const QString& layer, const QString& kind, int exponent);

protected:
    void changeEvent(QEvent* event) override;   // palette changes re-theme the charts

private:
    void onFrameTimer();
    bool runsChanged() const;
    void redrawAll();
    void noteDrawnRevisions();
    void redrawGroup(ChartGroup* group);

    RunPtr current_;
    QList<RunPtr> compare_;
    QList<ChartGroup*> groups_;
    QTimer* frameTimer_ = nullptr;
    std::vector<std::pair<const RunData*, std::uint64_t>> drawnRevisions_;   // at the last redraw
    bool forceRedraw_ = true;
    // Groups still to redraw for the latest data; a frame redraws them in turn until its
    // time budget is spent, so one tick never stalls the event loop for all six at once.
    QList<ChartGroup*> pending_;
};

}  // namespace plab::ui
