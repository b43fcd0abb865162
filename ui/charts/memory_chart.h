// Chart group "memory": bytes per category (weights, master weights, gradients, optimizer
// state, activations, workspace) of the current run as a stacked area over steps, the
// peak written and drawn, comparison runs' totals overlaid, and the batch-size planner:
// the largest batch that fits in N GiB under each precision preset (the seed CNN's
// "590 in fp32 vs 1000 in fp16" question) from the engine's accounting.
#pragma once

#include "charts/batch_planner.h"
#include "charts/chart_support.h"

#include <map>
#include <optional>

QT_BEGIN_NAMESPACE
class QDoubleSpinBox;
class QLabel;
class QTableWidget;
QT_END_NAMESPACE

namespace plab::ui {

class MemoryChart : public ChartGroup {
    Q_OBJECT
public:
    explicit MemoryChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }

    QTableWidget* plannerTable() const { return planner_; }
    void setBudgetGiB(double gib);
    QString peakText() const { return peak_->text(); }

protected:
    void presentationModeChanged() override;

private:
    static constexpr int kChartStretch = 3;     // of the group's width, beside the planner's 2
    static constexpr int kPlannerStretch = 2;
    void drawStack(const RunData& run, int columns, double& top);
    void updatePlanner();
    const ModelFootprint* footprintOf(const ModelSpec& spec, const OptimizerConfig& optimizer);

    QChart* chart_;
    QValueAxis* steps_;
    QValueAxis* bytes_;
    SeriesPool pool_;
    ChangeMarkers* markers_;
    QGraphicsSimpleTextItem* peak_;
    QDoubleSpinBox* budget_;
    ReducedPointsCache totals_;   // comparison runs' total lines
    QTableWidget* planner_;
    QLabel* plannerNote_;
    std::map<std::string, std::optional<ModelFootprint>> footprints_;   // by model kind + widths + optimizer state
    RunPtr current_;
    std::optional<ModelSpec> plannedRunModel_;
    // Workspace per sample as measured by the runs shown of the watched run's model, by preset
    // (a training step's peak over its batch): each recipe plans with its own.
    std::map<std::string, double> measuredWorkspace_;
    // What the stack was last built from: rebuilt only when the run moved.
    const RunData* stackRun_ = nullptr;
    std::uint64_t stackRevision_ = 0;
    int stackColumns_ = 0;
    double deviceTop_ = 0;   // MiB: the highest device-in-use sample of the stack's run
};

}  // namespace plab::ui
