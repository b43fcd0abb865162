// The chart groups in one scrollable grid, redrawn from one ~25 Hz timer when a run's
// revision moved (see charts_view.h).
#include "charts/charts_view.h"

#include "charts/histogram_chart.h"
#include "lesson/lesson.h"
#include "charts/loss_chart.h"
#include "charts/loss_scale_chart.h"
#include "charts/memory_chart.h"
#include "charts/reconstructions_view.h"
#include "charts/scalars_chart.h"
#include "charts/throughput_chart.h"
#include "charts/underflow_chart.h"
#include "charts/updates_chart.h"

#include <QElapsedTimer>
#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QTextDocumentFragment>
#include <QScrollArea>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace plab::ui {

namespace {
constexpr int kFrameIntervalMs = 40;   // 25 Hz, PlotJuggler's pace
}

ChartsView::ChartsView(QWidget* parent) : QWidget(parent)
{
    auto* loss = new LossChart;
    auto* scale = new LossScaleChart;
    auto* histogram = new HistogramChart;
    auto* underflow = new UnderflowChart;
    auto* updates = new UpdatesChart;
    auto* memory = new MemoryChart;
    auto* throughput = new ThroughputChart;
    // Hidden until a shown run has values a PyTorch script logged of its own.
    auto* scalars = new ScalarsChart;
    // Hidden until a shown run is an autoencoder's with reconstructions.
    auto* reconstructions = new ReconstructionsView;
    groups_ = {loss, scale, reconstructions, histogram, underflow, updates, memory, throughput, scalars};
    costs_.resize(static_cast<std::size_t>(groups_.size()));
    connect(histogram, &HistogramChart::binPicked, this, &ChartsView::histogramBinPicked);

    auto* content = new QWidget;
    grid_ = new QGridLayout(content);
    grid_->setContentsMargins(2, 2, 2, 2);
    grid_->setSpacing(4);
    // Two columns of groups (arrangeGroups); the memory chart shares its group with the
    // batch planner's table and note, so it gets a taller minimum; the scroll area scrolls
    // when the window is smaller than the grid.
    for (ChartGroup* g : groups_) g->installEventFilter(this);
    fitGroupHeights();
    arrangeGroups();
    scroll_ = new QScrollArea(this);
    scroll_->setWidgetResizable(true);
    scroll_->setFrameShape(QFrame::NoFrame);
    scroll_->setWidget(content);
    scroll_->viewport()->installEventFilter(this);
    runKey_ = new QLabel(this);
    runKey_->setObjectName(QStringLiteral("chartsRunKey"));
    runKey_->setWordWrap(true);
    runKey_->setTextFormat(Qt::RichText);
    runKey_->setContentsMargins(6, 2, 6, 2);
    runKey_->hide();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(runKey_);
    layout->addWidget(scroll_);

    for (ChartGroup* g : groups_) g->applyPalette(palette());

    frameTimer_ = new QTimer(this);
    frameTimer_->setInterval(kFrameIntervalMs);
    connect(frameTimer_, &QTimer::timeout, this, &ChartsView::onFrameTimer);
    frameTimer_->start();
}

ChartsView::~ChartsView() = default;

QStringList ChartsView::groupNames()
{
    QStringList names;   // the engine's list: lessons name the same groups
    for (const auto& n : lessonChartNames()) names << QString::fromStdString(n);
    return names;
}

void ChartsView::setRuns(RunPtr current, const QList<RunPtr>& compare)
{
    current_ = std::move(current);
    compare_ = compare;
    forceRedraw_ = true;
    updateRunKey();
}

void ChartsView::updateRunKey()
{
    QList<RunPtr> runs;
    if (current_) runs << current_;
    for (const RunPtr& r : compare_)
        if (r && !runs.contains(r)) runs << r;
    QStringList entries;
    for (const RunPtr& r : runs) {
        const QString name = r->name().toHtmlEscaped();
        entries << QStringLiteral("<span style='color:%1'>■</span>&nbsp;%2")
                       .arg(r->color().name(), r == current_ ? QStringLiteral("<b>%1</b>").arg(name) : name);
    }
    // Entries are separated by wide gaps and wrap between entries, not inside a name.
    const QString text = entries.join(QStringLiteral(" &nbsp;&nbsp; "));
    if (runKey_->text() != text) runKey_->setText(text);
    runKey_->setVisible(presentation_ && runs.size() > 1);
}

QString ChartsView::runKeyText() const
{
    if (runKey_->isHidden()) return {};
    QString text = runKey_->text();
    text.replace(QStringLiteral("&nbsp;"), QStringLiteral(" "));
    return QTextDocumentFragment::fromHtml(text).toPlainText();
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

void ChartsView::setPresentationMode(bool on)
{
    if (presentation_ == on) return;
    presentation_ = on;
    for (ChartGroup* g : groups_) g->setPresentationMode(on);
    updateRunKey();
    fitGroupHeights();
    twoColumnMinimum_ = 0;   // fonts and arrangement changed: measured again
    arrangeGroups();
    fitColumnsToWidth();
    forceRedraw_ = true;   // pens are chosen during a redraw
}

void ChartsView::fitGroupHeights()
{
    // A group's height: kGroupMinimum (the memory group, which holds the planner, more); in
    // presentation mode at least what its charts' minimum heights and its large-font
    // captions and controls add up to (a fixed minimum had squeezed the update charts of a
    // lesson to 40 px under their captions).
    for (ChartGroup* g : groups_) {
        int h = g->groupName() == QLatin1String("memory") ? kMemoryGroupMinimum : kGroupMinimum;
        if (presentation_ && g->layout()) {
            g->layout()->invalidate();
            h = std::max(h, g->layout()->minimumSize().height());
        }
        g->setMinimumHeight(h);
    }
}

void ChartsView::setPresentationFontPixels(int pixels)
{
    bool changed = false;
    for (ChartGroup* g : groups_) {
        changed |= g->presentationFontPixels() != pixels;
        g->setPresentationFontPixels(pixels);
    }
    if (!changed || !presentation_) return;
    fitGroupHeights();
    twoColumnMinimum_ = 0;   // fonts changed: the grid's minimum width is measured again
    fitColumnsToWidth();
    forceRedraw_ = true;     // captions and notes are placed during a redraw
}

bool ChartsView::eventFilter(QObject* watched, QEvent* event)
{
    if (scroll_ && watched == scroll_->viewport() && event->type() == QEvent::Resize) fitColumnsToWidth();
    // ShowToParent / HideToParent: the group itself was shown or hidden (a lesson's charts),
    // not the window around it. Arranged once after the caller has set every group.
    if ((event->type() == QEvent::ShowToParent || event->type() == QEvent::HideToParent) && presentation_ &&
        !arrangePending_) {
        arrangePending_ = true;
        QTimer::singleShot(0, this, [this] {
            arrangePending_ = false;
            arrangeGroups();
        });
    }
    return QWidget::eventFilter(watched, event);
}

void ChartsView::fitColumnsToWidth()
{
    if (!scroll_) return;
    const int available = scroll_->viewport()->width();
    if (columns_ == 2) {
        // What the scroll area compares its viewport with before it scrolls sideways.
        twoColumnMinimum_ = scroll_->widget()->minimumSizeHint().width();
        if (available >= twoColumnMinimum_) return;
        columns_ = 1;
    } else {
        // Back to two once they fit; not measured yet (fonts changed while in one column):
        // try two columns and measure.
        if (twoColumnMinimum_ > 0 && available < twoColumnMinimum_) return;
        columns_ = 2;
    }
    arrangeGroups();
    if (columns_ == 2 && twoColumnMinimum_ == 0) fitColumnsToWidth();
}

void ChartsView::arrangeGroups()
{
    struct Cell {
        ChartGroup* group;
        int row, column, columnSpan;
    };
    QList<Cell> cells;
    if (columns_ == 1) {
        // Hidden groups keep their rows, where they take no space.
        int row = 0;
        for (ChartGroup* g : groups_) cells.append({g, row++, 0, 2});
    } else if (!presentation_) {
        // loss | scale, an autoencoder's reconstructions, histogram | underflow, then updates,
        // memory, throughput and the logged values across both columns.
        static constexpr int kNormal[][3] = {{0, 0, 1}, {0, 1, 1}, {1, 0, 2}, {2, 0, 1}, {2, 1, 1},
                                             {3, 0, 2}, {4, 0, 2}, {5, 0, 2}, {6, 0, 2}};
        for (qsizetype i = 0; i < groups_.size(); ++i) cells.append({groups_[i], kNormal[i][0], kNormal[i][1], kNormal[i][2]});
    } else {
        const QStringList wide{QStringLiteral("underflow"), QStringLiteral("updates"), QStringLiteral("memory"),
                               QStringLiteral("reconstructions")};
        int row = 0;
        qsizetype alone = -1;   // the cell of a narrow group that has its row to itself so far
        for (ChartGroup* g : groups_) {
            if (g->isHidden()) continue;
            if (wide.contains(g->groupName())) {
                cells.append({g, row++, 0, 2});
            } else if (alone >= 0) {
                cells[alone].columnSpan = 1;
                cells.append({g, cells[alone].row, 1, 1});
                alone = -1;
            } else {
                alone = cells.size();
                cells.append({g, row++, 0, 2});
            }
        }
        // Hidden groups stay in the layout, after the shown ones, where they take no space.
        int next = row;
        for (ChartGroup* g : groups_)
            if (g->isHidden()) cells.append({g, next++, 0, 2});
    }
    QString key = presentation_ ? QStringLiteral("presentation:") : QStringLiteral("normal:");
    key += QString::number(columns_);
    for (const Cell& c : cells) key += QStringLiteral("%1@%2,%3,%4;").arg(c.group->groupName()).arg(c.row).arg(c.column).arg(c.columnSpan);
    if (key == arrangement_) return;
    arrangement_ = key;
    for (ChartGroup* g : groups_) grid_->removeWidget(g);
    for (int r = 0; r < grid_->rowCount(); ++r) grid_->setRowStretch(r, 0);
    int columnStretch[2] = {1, 1};
    for (const Cell& c : cells) {
        grid_->addWidget(c.group, c.row, c.column, 1, c.columnSpan);
        if (!presentation_ || c.group->isHidden() || columns_ == 1) continue;
        // The shown rows share the height; the histogram's row and column get more: its
        // group holds the shares table and controls under the chart, its legend names four
        // regions besides the runs.
        const bool histogram = c.group->groupName() == QLatin1String("histogram");
        grid_->setRowStretch(c.row, std::max(grid_->rowStretch(c.row), histogram ? 4 : 3));
        if (histogram && c.columnSpan == 1) {
            columnStretch[c.column] = 4;
            columnStretch[1 - c.column] = 3;
        }
    }
    for (int c = 0; c < 2; ++c) grid_->setColumnStretch(c, columnStretch[c]);
}

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
    learnCosts();
    if (forceRedraw_ || runsChanged()) {
        // New data: every group is due; those still waiting keep their place in line.
        forceRedraw_ = false;
        noteDrawnRevisions();
        for (ChartGroup* g : groups_)
            if (!pending_.contains(g)) pending_.append(g);
    }
    // Paint happens after this returns (the scene posts its dirty region), so the budget
    // uses each group's learned redraw + paint cost, not just the time spent here.
    qint64 planned = 0;
    while (!pending_.isEmpty()) {
        ChartGroup* g = pending_.front();
        Cost& cost = costs_[static_cast<std::size_t>(groups_.indexOf(g))];
        if (planned > 0 && planned + cost.estimateNs > kFrameBudgetNs) break;
        pending_.removeFirst();
        QElapsedTimer t;
        t.start();
        redrawGroup(g);
        cost.redrawNs = t.nsecsElapsed();
        cost.measuring = true;
        planned += std::max(cost.estimateNs, cost.redrawNs);
    }
}

void ChartsView::learnCosts()
{
    for (qsizetype i = 0; i < groups_.size(); ++i) {
        Cost& cost = costs_[static_cast<std::size_t>(i)];
        if (!cost.measuring) continue;
        cost.measuring = false;
        const qint64 measured = cost.redrawNs + groups_[i]->lastPaintNs();
        // Rise at once (a slow frame must not repeat), fall slowly (one cheap frame is not a trend).
        cost.estimateNs = measured > cost.estimateNs ? measured : (3 * cost.estimateNs + measured) / 4;
    }
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
    updateRunKey();   // a run renamed or recoloured
    noteDrawnRevisions();
    pending_.clear();
    for (ChartGroup* g : groups_) redrawGroup(g);
}

void ChartsView::changeEvent(QEvent* event)
{
    // Chart fonts are not widget fonts: a window font change (or presentation mode of the
    // main window) reaches the charts only through applyPalette(), which re-sizes them.
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange ||
        event->type() == QEvent::FontChange) {
        for (ChartGroup* g : groups_) g->applyPalette(palette());
        forceRedraw_ = true;   // setTheme reset the series colors
    }
    QWidget::changeEvent(event);
}

}  // namespace plab::ui
