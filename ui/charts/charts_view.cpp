// The six chart groups in one scrollable grid, redrawn from one ~25 Hz timer when a run's
// revision moved (see charts_view.h).
#include "charts/charts_view.h"

#include "charts/histogram_chart.h"
#include "charts/loss_chart.h"
#include "charts/loss_scale_chart.h"
#include "charts/memory_chart.h"
#include "charts/throughput_chart.h"
#include "charts/underflow_chart.h"

#include <QElapsedTimer>
#include <QEvent>
#include <QGridLayout>
#include <QScrollArea>
#include <QTimer>
#include <QVBoxLayout>

namespace plab::ui {

namespace {
constexpr int kFrameIntervalMs = 40;   // 25 Hz, PlotJuggler's pace
constexpr qint64 kFrameBudgetNs = 6'000'000;   // a tick stops starting groups after 6 ms
}

ChartsView::ChartsView(QWidget* parent) : QWidget(parent)
{
    auto* loss = new LossChart;
    auto* scale = new LossScaleChart;
    auto* histogram = new HistogramChart;
    auto* underflow = new UnderflowChart;
    auto* memory = new MemoryChart;
    auto* throughput = new ThroughputChart;
    groups_ = {loss, scale, histogram, underflow, memory, throughput};
    connect(histogram, &HistogramChart::binPicked, this, &ChartsView::histogramBinPicked);

    auto* content = new QWidget;
    auto* grid = new QGridLayout(content);
    grid->setContentsMargins(2, 2, 2, 2);
    grid->setSpacing(4);
    for (int i = 0; i < groups_.size(); ++i) {
        groups_[i]->setMinimumHeight(300);
        grid->addWidget(groups_[i], i / 2, i % 2);
    }
    for (int c = 0; c < 2; ++c) grid->setColumnStretch(c, 1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(content);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);

    for (ChartGroup* g : groups_) g->applyPalette(palette());

    frameTimer_ = new QTimer(this);
    frameTimer_->setInterval(kFrameIntervalMs);
    connect(frameTimer_, &QTimer::timeout, this, &ChartsView::onFrameTimer);
    frameTimer_->start();
}

ChartsView::~ChartsView() = default;

QStringList ChartsView::groupNames()
{
    return {QStringLiteral("loss"),      QStringLiteral("scale"),  QStringLiteral("histogram"),
            QStringLiteral("underflow"), QStringLiteral("memory"), QStringLiteral("throughput")};
}

void ChartsView::setRuns(RunPtr current, const QList<RunPtr>& compare)
{
    current_ = std::move(current);
    compare_ = compare;
    forceRedraw_ = true;
}

QWidget* ChartsView::group(const QString& name) const
{
    for (ChartGroup* g : groups_)
        if (g->groupName() == name) return g;
    return nullptr;
}

QList<QAbstractSeries*> ChartsView::seriesOf(const QString& name) const
{
    for (ChartGroup* g : groups_)
        if (g->groupName() == name) return g->series();
    return {};
}

void ChartsView::redrawNow() { redrawAll(); }

bool ChartsView::runsChanged() const
{
    std::size_t i = 0;
    auto moved = [&](const RunPtr& run) {
        if (!run) return false;
        if (i >= drawnRevisions_.size()) return true;
        const auto& [drawn, revision] = drawnRevisions_[i++];
        return drawn != run.get() || revision != run->revision();
    };
    if (moved(current_)) return true;
    for (const RunPtr& r : compare_)
        if (moved(r)) return true;
    return i != drawnRevisions_.size();
}

void ChartsView::onFrameTimer()
{
    // Hidden charts wait; the first tick after they show draws what arrived meanwhile.
    if (!isVisible()) return;
    if (forceRedraw_ || runsChanged()) {
        // New data: every group is due, in turn from the one after the last drawn.
        forceRedraw_ = false;
        noteDrawnRevisions();
        for (ChartGroup* g : groups_)
            if (!pending_.contains(g)) pending_.append(g);
    }
    QElapsedTimer spent;
    spent.start();
    while (!pending_.isEmpty() && spent.nsecsElapsed() < kFrameBudgetNs) redrawGroup(pending_.takeFirst());
}

void ChartsView::noteDrawnRevisions()
{
    drawnRevisions_.clear();
    if (current_) drawnRevisions_.emplace_back(current_.get(), current_->revision());
    for (const RunPtr& r : compare_)
        if (r) drawnRevisions_.emplace_back(r.get(), r->revision());
}

void ChartsView::redrawGroup(ChartGroup* group)
{
    group->redraw(current_, compare_);
    group->adaptAntialiasing();
}

void ChartsView::redrawAll()
{
    forceRedraw_ = false;
    noteDrawnRevisions();
    pending_.clear();
    for (ChartGroup* g : groups_) redrawGroup(g);
}

void ChartsView::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        for (ChartGroup* g : groups_) g->applyPalette(palette());
        forceRedraw_ = true;   // setTheme reset the series colors
    }
    QWidget::changeEvent(event);
}

}  // namespace plab::ui
