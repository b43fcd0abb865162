// Memory by category as a stacked area, and the batch-size planner (see memory_chart.h).
#include "charts/memory_chart.h"

#include <QAreaSeries>
#include <QDoubleSpinBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace plab::ui {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Bottom to top of the stack: what is fixed by the model first, then what grows with the batch.
constexpr MemoryCategory kStackOrder[] = {MemoryCategory::weights,        MemoryCategory::masterWeights,
                                          MemoryCategory::gradients,      MemoryCategory::optimizerState,
                                          MemoryCategory::activations,    MemoryCategory::workspace};
QColor categoryColor(MemoryCategory c)
{
    switch (c) {
    case MemoryCategory::weights: return QColor(66, 133, 244, 190);
    case MemoryCategory::masterWeights: return QColor(52, 168, 83, 190);
    case MemoryCategory::gradients: return QColor(251, 188, 5, 190);
    case MemoryCategory::optimizerState: return QColor(171, 71, 188, 190);
    case MemoryCategory::activations: return QColor(234, 67, 53, 190);
    case MemoryCategory::workspace: return QColor(120, 144, 156, 190);
    }
    return Qt::gray;
}

QString categoryLabel(MemoryCategory c)
{
    return QString::fromUtf8(memoryCategoryName(c)).replace(QLatin1Char('_'), QLatin1Char(' '));
}

// What a category holds, where its name does not say: the legend's words.
QString categoryLegend(MemoryCategory c)
{
    if (c == MemoryCategory::workspace) return MemoryChart::tr("workspace (kernels' scratch)");
    return categoryLabel(c);
}

// What a category holds, for the hover text, where its name does not say ("" elsewhere).
QString categoryMeaning(MemoryCategory c)
{
    if (c == MemoryCategory::workspace)
        return MemoryChart::tr(": the layers' scratch (gradients passed between layers, lowered convolutions) and "
                               "the native kernels' (packed operands, oneDNN's scratchpads)");
    return {};
}

std::string specKey(const ModelSpec& spec)
{
    std::string key = spec.kind;
    for (int w : spec.widths) {
        key += '/';
        key += std::to_string(w);
    }
    return key;
}

// Indices of the memory samples to draw: all when few, else per pixel column the sample
// with the largest total (peaks stay exact) and the column's last one.
std::vector<std::size_t> samplesToDraw(const std::vector<MemoryEvent>& events, int columns)
{
    std::vector<std::size_t> picks;
    const std::size_t n = events.size();
    if (n <= static_cast<std::size_t>(columns) * 2) {
        for (std::size_t i = 0; i < n; ++i) picks.push_back(i);
        return picks;
    }
    const double x0 = static_cast<double>(events.front().step);
    const double span = std::max(1.0, static_cast<double>(events.back().step) - x0);
    long long column = -1;
    std::size_t best = 0, last = 0;
    auto flush = [&] {
        if (column < 0) return;
        picks.push_back(std::min(best, last));
        if (best != last) picks.push_back(std::max(best, last));
    };
    for (std::size_t i = 0; i < n; ++i) {
        const auto c = std::min<long long>(columns - 1, static_cast<long long>((static_cast<double>(events[i].step) - x0) / span * columns));
        if (c != column) {
            flush();
            column = c;
            best = last = i;
            continue;
        }
        if (events[i].memory.totalLive > events[best].memory.totalLive) best = i;
        last = i;
    }
    flush();
    return picks;
}

}  // namespace

MemoryChart::MemoryChart(QWidget* parent)
    : ChartGroup(QStringLiteral("memory"), parent),
      chart_(makeChart(tr("Memory by category"))),
      steps_(makeValueAxis(tr("step"), QStringLiteral("%d"))),
      bytes_(makeValueAxis(tr("MiB"), QStringLiteral("%.4g"))),
      pool_(chart_)
{
    chart_->addAxis(steps_, Qt::AlignBottom);
    chart_->addAxis(bytes_, Qt::AlignLeft);
    markers_ = new ChangeMarkers(chart_, &pool_);
    peak_ = new QGraphicsSimpleTextItem(chart_);
    peak_->setZValue(20);
    connect(chart_, &QChart::plotAreaChanged, this,
            [this](const QRectF& area) { peak_->setPos(area.left() + 6, area.top() + 4); });

    budget_ = new QDoubleSpinBox(this);
    budget_->setRange(0.25, 4096);
    budget_->setSingleStep(0.5);
    budget_->setDecimals(2);
    budget_->setSuffix(tr(" GiB"));
    budget_->setValue(4.0);
    const QString assumption =
        tr("The largest batch the engine's memory check admits before a run (train/memory_check.h): every "
           "weight, master weight, gradient and optimizer-state element at the 4 bytes the CPU backend holds, "
           "plus batch x the activations it keeps for backward (16-bit ones packed). The last column adds the "
           "workspace a shown run of that recipe measured per sample. Not counted: the CUDA context, cuDNN "
           "workspaces, the allocator's slack, so a real GPU fits a different number.");
    budget_->setToolTip(assumption);
    connect(budget_, &QDoubleSpinBox::valueChanged, this, &MemoryChart::updatePlanner);

    planner_ = new QTableWidget(this);
    planner_->setToolTip(assumption);
    planner_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    planner_->setSelectionMode(QAbstractItemView::NoSelection);
    planner_->verticalHeader()->setVisible(true);
    planner_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    planner_->setMinimumWidth(260);
    plannerNote_ = new QLabel(this);
    plannerNote_->setWordWrap(true);
    plannerNote_->setToolTip(assumption);

    auto* budgetRow = new QHBoxLayout;
    budgetRow->addWidget(new QLabel(tr("Largest batch that fits in"), this));
    budgetRow->addWidget(budget_);
    budgetRow->addStretch(1);
    auto* plannerColumn = new QVBoxLayout;
    plannerColumn->addLayout(budgetRow);
    plannerColumn->addWidget(planner_, 1);
    plannerColumn->addWidget(plannerNote_);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(makeChartView(chart_, this), kChartStretch);
    layout->addLayout(plannerColumn, kPlannerStretch);
    updatePlanner();
}

void MemoryChart::setBudgetGiB(double gib) { budget_->setValue(gib); }

void MemoryChart::presentationModeChanged()
{
    // Six categories and the comparison runs' totals do not fit one row of large legend
    // text: presentation mode lists them beside the plot, one per line. The planner's
    // table then takes the width its columns need, the chart the rest.
    const bool on = presentationMode();
    chart_->legend()->setAlignment(on ? Qt::AlignRight : Qt::AlignBottom);
    planner_->setSizeAdjustPolicy(on ? QAbstractScrollArea::AdjustToContents : QAbstractScrollArea::AdjustIgnored);
    if (auto* row = qobject_cast<QHBoxLayout*>(layout())) row->setStretch(1, on ? 0 : kPlannerStretch);
}

void MemoryChart::drawStack(const RunData& run, const MemorySnapshot& peaks, int columns, double& top)
{
    const auto& events = run.memory();
    const bool fresh = stackRun_ != &run || stackRevision_ != run.revision() || stackColumns_ != columns;
    // A device backend's own view (cudaMemGetInfo), over the stack: what the device holds
    // beyond the engine's accounting (library workspaces, the allocator's cache, context).
    const bool onDevice = std::any_of(events.begin(), events.end(), [](const MemoryEvent& e) { return e.device.has_value(); });
    const QString deviceKey = run.id() + QStringLiteral("/memory/device");
    // What the run itself holds there: in use minus what was in use before it placed
    // anything (the CUDA context, other processes), comparable with the accounting.
    const bool heldByRun = onDevice && run.deviceBeforeRun().has_value();
    const QString heldKey = run.id() + QStringLiteral("/memory/device-held");
    if (!fresh) {
        for (MemoryCategory c : kStackOrder)   // keep the series alive, unchanged
            pool_.take(run.id() + QStringLiteral("/memory/") + categoryLabel(c),
                       [] { return makeAreaSeries(); }, {steps_, bytes_});
        if (onDevice) pool_.take<QLineSeries>(deviceKey, {steps_, bytes_});
        if (heldByRun) pool_.take<QLineSeries>(heldKey, {steps_, bytes_});
        if (onDevice) top = std::max(top, deviceTop_);
        return;
    }
    stackRun_ = &run;
    stackRevision_ = run.revision();
    stackColumns_ = columns;
    const std::vector<std::size_t> picks = samplesToDraw(events, columns);
    // Step shape: a sample holds until the next one (the events are kept only on change).
    const double lastStep = run.steps().empty() ? 0.0 : static_cast<double>(run.steps().back().step);
    std::vector<double> below(picks.size() * 2, 0.0);
    for (MemoryCategory c : kStackOrder) {
        const auto ci = static_cast<std::size_t>(c);
        QList<QPointF> upper, lower;
        upper.reserve(static_cast<qsizetype>(picks.size() * 2));
        lower.reserve(static_cast<qsizetype>(picks.size() * 2));
        for (std::size_t k = 0; k < picks.size(); ++k) {
            const MemoryEvent& e = events[picks[k]];
            const double x0 = static_cast<double>(e.step);
            const double x1 = k + 1 < picks.size() ? static_cast<double>(events[picks[k + 1]].step) : std::max(x0, lastStep);
            const double v = static_cast<double>(e.memory.live[ci]) / kMiB;
            for (int j = 0; j < 2; ++j) {
                double& base = below[k * 2 + static_cast<std::size_t>(j)];
                const double x = j == 0 ? x0 : x1;
                lower.append(QPointF(x, base));
                base += v;
                upper.append(QPointF(x, base));
                top = std::max(top, base);
            }
        }
        auto* area = static_cast<QAreaSeries*>(pool_.take(
            run.id() + QStringLiteral("/memory/") + categoryLabel(c),
            [] { return makeAreaSeries(); }, {steps_, bytes_}));
        const qint64 peak = peaks.peak[ci];
        setSeriesName(area, tr("%1 %2 (peak %3)%4")
                                .arg(run.name(), categoryLabel(c), formatBytes(static_cast<double>(peak)), categoryMeaning(c)));
        setLegendLabel(chart_, area, categoryLegend(c));
        area->upperSeries()->replace(upper);
        area->lowerSeries()->replace(lower);
        if (area->brush().color() != categoryColor(c)) area->setBrush(categoryColor(c));
        const QPen edge(categoryColor(c).darker(130), 1);
        if (area->pen() != edge) area->setPen(edge);
    }
    deviceTop_ = 0;
    if (!onDevice) return;
    QList<QPointF> used, held;
    const std::uint64_t before = run.deviceBeforeRun().value_or(0);
    for (std::size_t k = 0; k < picks.size(); ++k) {
        const MemoryEvent& e = events[picks[k]];
        if (!e.device) continue;
        const double x0 = static_cast<double>(e.step);
        const double x1 = k + 1 < picks.size() ? static_cast<double>(events[picks[k + 1]].step) : std::max(x0, lastStep);
        const double v = static_cast<double>(e.device->used) / kMiB;
        used << QPointF(x0, v) << QPointF(x1, v);
        deviceTop_ = std::max(deviceTop_, v);
        const double h = static_cast<double>(e.device->used > before ? e.device->used - before : 0) / kMiB;
        held << QPointF(x0, h) << QPointF(x1, h);
    }
    top = std::max(top, deviceTop_);
    auto* line = pool_.take<QLineSeries>(deviceKey, {steps_, bytes_});
    setSeriesName(line, tr("%1 device memory in use (whole device)").arg(run.name()));
    setSeriesPen(line, QPen(palette().color(QPalette::WindowText), 1.5, Qt::DashLine));
    setLegendLabel(chart_, line, tr("device in use"));
    line->replace(used);
    if (!heldByRun) return;
    auto* heldLine = pool_.take<QLineSeries>(heldKey, {steps_, bytes_});
    setSeriesName(heldLine, tr("%1 device memory held by the run (in use minus the %2 in use before it started)")
                                .arg(run.name(), formatBytes(static_cast<double>(before))));
    setSeriesPen(heldLine, QPen(palette().color(QPalette::WindowText), 1.5, Qt::DotLine));
    setLegendLabel(chart_, heldLine, tr("held by the run"));
    heldLine->replace(held);
}

void MemoryChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const int columns = pixelColumns(chart_);
    setChartTitle(chart_, tr("Memory by category"), runs);
    pool_.begin();
    markers_->beginLabels();
    double lastStep = 1, top = 0;
    QStringList peaks;
    for (const RunPtr& run : runs) {
        if (!run->steps().empty()) lastStep = std::max(lastStep, static_cast<double>(run->steps().back().step));
        const MemorySnapshot peak = run->peakMemory();
        top = std::max(top, static_cast<double>(peak.totalPeak) / kMiB);
        peaks << peakLine(runLabel(run, runs), peak);   // the peak, and the phases' end figures apart
        if (run == runs.front()) {
            drawStack(*run, peak, columns, top);
        } else {
            // Comparison runs: the total only, in the run's color (recomputed only when the
            // run moved: a finished comparison run costs nothing per frame).
            const QString key = run->id() + QStringLiteral("/memory/total");
            auto* line = pool_.take<QLineSeries>(key, {steps_, bytes_});
            setSeriesName(line, tr("%1 total").arg(run->name()));
            setSeriesPen(line, runPen(run->color(), 2.0));
            setLegendLabel(chart_, line, tr("%1 total").arg(runLabel(run, runs)));
            totals_.update(line, key, *run, columns, [&] {
                const auto& events = run->memory();
                const std::vector<std::size_t> picks = samplesToDraw(events, columns);
                QList<QPointF> total;
                total.reserve(static_cast<qsizetype>(picks.size() * 2));
                for (std::size_t k = 0; k < picks.size(); ++k) {
                    const MemoryEvent& e = events[picks[k]];
                    const double x1 = k + 1 < picks.size() ? static_cast<double>(events[picks[k + 1]].step)
                                                           : static_cast<double>(run->steps().empty() ? e.step : run->steps().back().step);
                    total.append(QPointF(static_cast<double>(e.step), static_cast<double>(e.memory.totalLive) / kMiB));
                    total.append(QPointF(std::max(x1, static_cast<double>(e.step)), static_cast<double>(e.memory.totalLive) / kMiB));
                }
                return total;
            });
        }
        // The peak of the sum as a dashed line.
        auto* peakSeries = pool_.take<QLineSeries>(run->id() + QStringLiteral("/memory/peak"), {steps_, bytes_});
        setSeriesName(peakSeries, tr("%1 peak %2").arg(run->name(), formatBytes(static_cast<double>(peak.totalPeak))));
        setSeriesPen(peakSeries, runPen(run->color(), 1.2, Qt::DotLine));
        const double peakMiB = static_cast<double>(peak.totalPeak) / kMiB;
        if (const QList<QPointF> flat{{0.0, peakMiB}, {lastStep, peakMiB}}; peakSeries->points() != flat) peakSeries->replace(flat);
        setLegendVisible(chart_, peakSeries, false);
    }
    const double high = top > 0 ? top * 1.12 : 1.0;
    setStableRange(steps_, 0, lastStep, 0.6);
    setStableRange(bytes_, 0, high, 0.5);
    // Marker labels start below the peak caption at the top left.
    markers_->setTopInset(static_cast<qreal>(peaks.size()) * QFontMetricsF(peak_->font()).height() + 4);
    for (const RunPtr& run : runs) markers_->addRun(*run, steps_, bytes_, 0, bytes_->max());
    pool_.end();
    markers_->placeLabels();
    peak_->setBrush(chart_->titleBrush());
    peak_->setText(peaks.join(QLatin1Char('\n')));
    peak_->setPos(chart_->plotArea().left() + 6, chart_->plotArea().top() + 4);

    // The planner's third column follows the run being watched: its model and settings, and
    // the workspace the runs shown of that model measured, with their recipes.
    std::optional<TrainSettings> watched;
    std::vector<std::pair<PrecisionRecipe, double>> workspace;
    if (!runs.isEmpty()) {
        watched = runs.front()->settings();
        for (const RunPtr& run : runs) {
            if (!(run->settings().model == watched->model) || run->memory().empty()) continue;
            const MemorySnapshot peak = run->peakMemory();
            const auto ws = static_cast<std::size_t>(MemoryCategory::workspace);
            const std::int64_t trainingWorkspace = peak.phasePeak[static_cast<std::size_t>(MemoryPhase::training)].bytes[ws];
            const std::int64_t bytes = trainingWorkspace > 0 ? trainingWorkspace : peak.peak[ws];
            const int batch = run->settings().batch;
            if (batch > 0 && bytes > 0) workspace.emplace_back(run->settings().recipe, static_cast<double>(bytes) / batch);
        }
    }
    if (watched != plannedRun_ || workspace != measuredWorkspace_ || current_ != current) {
        plannedRun_ = watched;
        measuredWorkspace_ = workspace;
        current_ = current;
        updatePlanner();
    }
}

namespace {

// Two recipes that hold the same memory: loss scaling takes none.
bool sameMemory(const PrecisionRecipe& a, PrecisionRecipe b)
{
    b.lossScaling = a.lossScaling;
    return a == b;
}

}  // namespace

QString MemoryChart::peakLine(const QString& run, const MemorySnapshot& peak)
{
    // One peak, the highest the sum reached, and when; the phases' own figures beside it as
    // what they are (each sampled at a phase's end), never as parts of a sum.
    const auto& training = peak.phasePeak[static_cast<std::size_t>(MemoryPhase::training)];
    const auto& evaluation = peak.phasePeak[static_cast<std::size_t>(MemoryPhase::evaluation)];
    // A record without memory (the PyTorch probe on the CPU) says so, never "peak 0 B".
    if (peak.totalPeak <= 0) return tr("%1: memory not measured").arg(run);
    QString line = tr("%1: peak %2").arg(run, formatBytes(static_cast<double>(peak.totalPeak)));
    if (peak.peakPhase)
        line += *peak.peakPhase == MemoryPhase::evaluation ? tr(" during an evaluation") : tr(" during a training step");
    const std::int64_t workspace = peak.peak[static_cast<std::size_t>(MemoryCategory::workspace)];
    if (workspace > 0) line += tr(", workspace up to %1").arg(formatBytes(static_cast<double>(workspace)));
    QStringList ends;
    if (training.total > 0) ends << tr("a step's %1").arg(formatBytes(static_cast<double>(training.total)));
    if (evaluation.total > 0) ends << tr("an evaluation's %1").arg(formatBytes(static_cast<double>(evaluation.total)));
    if (!ends.isEmpty()) line += tr(" · held at the end: %1").arg(ends.join(tr(", ")));
    return line;
}

const std::vector<PresetEstimate>* MemoryChart::estimatesFor(const TrainSettings& settings)
{
    // The presets replace the recipe: the estimate depends on the model and the optimizer's
    // state alone.
    const std::string key = specKey(settings.model) + '|' + settings.optimizer.kind +
                            (settings.optimizer.momentum != 0.0 ? "|momentum" : "");
    auto [it, added] = estimates_.try_emplace(key);
    if (added) {
        try {
            it->second = presetEstimates(settings);
        } catch (const std::exception&) {
            it->second.reset();   // a bad spec: no column for it
        }
    }
    return it->second ? &*it->second : nullptr;
}

void MemoryChart::updatePlanner()
{
    const auto budget = static_cast<std::int64_t>(budget_->value() * static_cast<double>(kGiB));
    TrainSettings seed;
    seed.model.kind = "seed-cnn";
    seed.model.widths.clear();
    if (current_) seed.optimizer = current_->currentSettings().optimizer;
    const std::vector<PresetEstimate>* seedRows = estimatesFor(seed);
    const bool runColumn = plannedRun_ && !(plannedRun_->model == seed.model);
    const std::vector<PresetEstimate>* runRows = runColumn ? estimatesFor(*plannedRun_) : nullptr;

    // The rows: the presets, and the watched run's own recipe where it is none of them.
    struct Row {
        QString name;
        PrecisionRecipe recipe;
        std::optional<MemoryEstimate> seed, run;
    };
    std::vector<Row> rows;
    if (seedRows)
        for (std::size_t i = 0; i < seedRows->size(); ++i) {
            const PresetEstimate& p = (*seedRows)[i];
            Row row{QString::fromStdString(p.displayName), p.recipe, p.estimate, std::nullopt};
            if (runRows && i < runRows->size()) row.run = (*runRows)[i].estimate;
            rows.push_back(std::move(row));
        }
    if (plannedRun_ && std::none_of(rows.begin(), rows.end(), [&](const Row& r) { return sameMemory(r.recipe, plannedRun_->recipe); })) {
        Row own{tr("this run's recipe"), plannedRun_->recipe, std::nullopt, std::nullopt};
        try {
            own.run = estimateRunMemory(*plannedRun_);
        } catch (const std::exception&) {
        }
        if (!runColumn) std::swap(own.seed, own.run);   // the run is of the seed CNN itself
        rows.push_back(std::move(own));
    }
    const bool anyMeasured = runColumn && !measuredWorkspace_.empty();

    QStringList headers{tr("seed-cnn"), tr("vs FP32")};
    if (runColumn) headers << QString::fromStdString(plannedRun_->model.kind);
    if (anyMeasured) headers << tr("+ measured workspace");
    planner_->setColumnCount(static_cast<int>(headers.size()));
    planner_->setHorizontalHeaderLabels(headers);
    planner_->setRowCount(static_cast<int>(rows.size()));
    const auto cell = [&](int row, int column, const QString& text, const QString& tip) {
        auto* item = new QTableWidgetItem(text);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        item->setToolTip(tip);
        planner_->setItem(row, column, item);
    };
    const auto estimateTip = [&](const MemoryEstimate& e) {
        const QString tip = tr("fixed %1 + %2 per sample, as the memory check before a run counts them on the CPU backend")
                                .arg(formatBytes(static_cast<double>(e.fixedBytes)), formatBytes(static_cast<double>(e.perSampleBytes)));
        if (e.parts <= 1) return tip;
        return tip + tr("; in %1 micro-batches, one held at a time, with the accumulation buffers in the fixed part").arg(e.parts);
    };
    QStringList rowNames;
    const double fp32Batch =
        !rows.empty() && rows.front().seed ? static_cast<double>(largestBatchWithin(*rows.front().seed, budget)) : 0.0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto row = static_cast<int>(r);
        const Row& x = rows[r];
        rowNames << x.name;
        if (x.seed) {
            const std::int64_t batch = largestBatchWithin(*x.seed, budget);
            cell(row, 0, QString::number(batch), estimateTip(*x.seed));
            cell(row, 1,
                 fp32Batch > 0 ? QStringLiteral("x%1").arg(static_cast<double>(batch) / fp32Batch, 0, 'f', 2)
                               : QStringLiteral("–"),
                 {});
        } else {
            cell(row, 0, QStringLiteral("–"), tr("The run's own recipe is planned for its own model only."));
            cell(row, 1, QStringLiteral("–"), {});
        }
        if (!runColumn) continue;
        if (x.run) cell(row, 2, QString::number(largestBatchWithin(*x.run, budget)), estimateTip(*x.run));
        else cell(row, 2, QStringLiteral("–"), {});
        if (!anyMeasured) continue;
        const auto measured = std::find_if(measuredWorkspace_.begin(), measuredWorkspace_.end(),
                                           [&](const auto& m) { return sameMemory(m.first, x.recipe); });
        if (measured == measuredWorkspace_.end() || !x.run) {
            cell(row, 3, QStringLiteral("–"),
                 tr("No run of this recipe with this model is shown: its workspace is not measured. Overlay one to "
                    "plan with it."));
            continue;
        }
        MemoryEstimate with = *x.run;
        with.perSampleBytes += static_cast<std::int64_t>(std::ceil(measured->second));
        cell(row, 3, QString::number(largestBatchWithin(with, budget)),
             tr("%1, plus %2 of workspace per sample measured by a run of this recipe (the memory check leaves "
                "workspace out)")
                 .arg(estimateTip(*x.run), formatBytes(measured->second)));
    }
    planner_->setVerticalHeaderLabels(rowNames);
    plannerNote_->setText(tr("The largest batch the memory check before a run admits (weights, gradients, state and "
                             "activations as the CPU backend holds them). The seed walkthrough fit 590 images in fp32 "
                             "and 1000 in fp16 (x1.69) on a 2021 GPU."));
}

}  // namespace plab::ui
