// Progress, time and throughput of the watched run.
#include "run_progress_widget.h"

#include "charts/chart_support.h"
#include "charts/throughput_chart.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>

#include <cmath>

namespace plab::ui {

RunProgressWidget::RunProgressWidget(QWidget* parent) : QWidget(parent)
{
    bar_ = new QProgressBar(this);
    bar_->setObjectName(QStringLiteral("runProgressBar"));
    bar_->setRange(0, 100);
    bar_->setMaximumWidth(220);
    bar_->setTextVisible(true);
    time_ = new QLabel(this);
    time_->setObjectName(QStringLiteral("runTimeLabel"));
    throughput_ = new QLabel(this);
    throughput_->setObjectName(QStringLiteral("runThroughputLabel"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(bar_);
    layout->addWidget(time_);
    layout->addWidget(throughput_);
    showRun(nullptr);
}

void RunProgressWidget::showRun(const RunData* run)
{
    if (!run) {
        bar_->setValue(0);
        bar_->setFormat(tr("no run"));
        time_->clear();
        throughput_->clear();
        return;
    }
    // The same progress and estimate as the throughput chart.
    const RunProgress progress = progressOf(*run);
    const std::int64_t done = progress.stepsDone;
    const std::int64_t planned = progress.plannedSteps;
    const int percent = planned > 0 ? static_cast<int>(std::min<std::int64_t>(100, 100 * done / planned)) : 0;
    bar_->setValue(run->isLive() ? percent : (run->status() == RunStatus::completed ? 100 : percent));
    if (planned > 0)
        bar_->setFormat(tr("step %1 / %2").arg(done).arg(planned));
    else   // no plan known (a PyTorch probe's record while it is written): the step, not a share
        bar_->setFormat(run->status() == RunStatus::running ? tr("step %1 · running").arg(done) : tr("step %1").arg(done));
    QString time = tr("elapsed %1").arg(formatDuration(progress.elapsedSeconds));
    if (run->isLive() && done > 0 && planned > done && std::isfinite(progress.remainingSeconds))
        time += tr(" · remaining %1").arg(formatDuration(progress.remainingSeconds));
    time_->setText(time);
    const double ips = run->imagesPerSecond();
    QString throughput = ips > 0 ? tr("%1 images/s").arg(QLocale().toString(ips, 'f', 0)) : QString();
    // Which arithmetic the products ran in ("hardware", "exact"), the reason as the tooltip.
    if (!throughput.isEmpty() && !run->arithmeticKind().isEmpty())
        throughput += tr(" · %1 arithmetic").arg(run->arithmeticKind());
    throughput_->setText(throughput);
    throughput_->setToolTip(run->arithmetic());
}

QString RunProgressWidget::timeText() const { return time_->text(); }
QString RunProgressWidget::throughputText() const { return throughput_->text(); }
int RunProgressWidget::progressPercent() const { return bar_->value(); }

QString RunProgressWidget::progressText() const { return bar_->format(); }

}  // namespace plab::ui
