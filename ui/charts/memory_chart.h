// Chart group "memory": bytes per category (weights, master weights, gradients, optimizer
// state, activations, workspace) of the current run as a stacked area over steps, the
// peak written and drawn, comparison runs' totals overlaid, and the batch-size planner:
// the largest batch that fits in N GiB under each precision preset (the seed CNN's
// "590 in fp32 vs 1000 in fp16" question), as the engine's memory check admits it
// (train/memory_check.h: one model of memory for the check and the planner).
#pragma once

#include "charts/chart_support.h"
#include "train/memory_check.h"

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
    // "AMP FP16: peak 45.4 MiB during an evaluation, workspace up to 17.5 MiB · held at the
    // end: a step's 11.7 MiB, an evaluation's 39.0 MiB": the peak of the sum and when it was
    // reached, the phases' end figures apart.
    static QString peakLine(const QString& run, const MemorySnapshot& peak);

protected:
    void presentationModeChanged() override;

private:
    static constexpr int kChartStretch = 3;     // of the group's width, beside the planner's 2
    static constexpr int kPlannerStretch = 2;
    void drawStack(const RunData& run, const MemorySnapshot& peaks, int columns, double& top);
    void updatePlanner();
    // The presets' estimates for these settings (cached by what the estimate depends on:
    // the model, the optimizer's state, the recipe's other fields); null for a bad spec.
    const std::vector<PresetEstimate>* estimatesFor(const TrainSettings& settings);

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
    std::map<std::string, std::optional<std::vector<PresetEstimate>>> estimates_;
    RunPtr current_;
    std::optional<TrainSettings> plannedRun_;   // the watched run's settings
    // Workspace per sample measured by the runs shown of the watched run's model, with their
    // recipes (a training step's workspace over its batch): what the memory check leaves out.
    std::vector<std::pair<PrecisionRecipe, double>> measuredWorkspace_;
    // What the stack was last built from: rebuilt only when the run moved.
    const RunData* stackRun_ = nullptr;
    std::uint64_t stackRevision_ = 0;
    int stackColumns_ = 0;
    double deviceTop_ = 0;   // MiB: the highest device-in-use sample of the stack's run
};

}  // namespace plab::ui
