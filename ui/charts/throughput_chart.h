// Chart group "throughput": images per second over steps (raw faint, smoothed bold) for
// the current and comparison runs, and the current run's progress: a progress bar with
// steps done of planned, elapsed and estimated remaining time.
#pragma once

#include "charts/chart_support.h"

QT_BEGIN_NAMESPACE
class QLabel;
class QProgressBar;
QT_END_NAMESPACE

namespace plab::ui {

struct RunProgress {
    std::int64_t stepsDone = 0;
    std::int64_t plannedSteps = 0;   // 0 when unknown
    double elapsedSeconds = 0;       // sum of step times
    double remainingSeconds = 0;     // NaN when unknown
    double recentImagesPerSecond = 0;
};
// Remaining time from the mean step time of the last `window` steps.
RunProgress progressOf(const RunData& run, std::size_t window = 100);

class ThroughputChart : public ChartGroup {
    Q_OBJECT
public:
    explicit ThroughputChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }
    QProgressBar* progressBar() const { return progress_; }
    QString progressText() const;

private:
    QChart* chart_;
    QValueAxis* steps_;
    QValueAxis* rate_;
    SeriesPool pool_;
    ChangeMarkers* markers_;
    ReducedPointsCache reduced_;
    QProgressBar* progress_;
    QLabel* times_;
};

}  // namespace plab::ui
