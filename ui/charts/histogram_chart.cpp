// The gradient histogram against the format's regions (see histogram_chart.h).
#include "charts/histogram_chart.h"

#include "charts/layer_panels.h"
#include "nn/model.h"
#include "train/region_format.h"

#include <QAreaSeries>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QMouseEvent>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace plab::ui {

namespace {

// A chart view that turns a left click in the plot area into a chart position.
class ClickableChartView : public TimedChartView {
public:
    ClickableChartView(QChart* chart, QWidget* parent, std::function<void(QPointF)> onClick)
        : TimedChartView(chart, parent), onClick_(std::move(onClick))
    {
        setCursor(Qt::CrossCursor);
    }

protected:
    void mousePressEvent(QMouseEvent* event) override
    {
        if (event->button() == Qt::LeftButton) onClick_(mapToScene(event->position().toPoint()));
        TimedChartView::mousePressEvent(event);   // a drag still zooms
    }

private:
    std::function<void(QPointF)> onClick_;
};

const LayerTelemetry* findLayer(const TelemetryEvent& t, const std::string& layer, TensorKind kind)
{
    for (const LayerTelemetry& l : t.layers)
        if (l.layer == layer && l.kind == kind) return &l;
    return nullptr;
}

// The histogram event of a run at or before `step` (the first one when all are later).
const TelemetryEvent* telemetryAt(const RunData& run, std::int64_t step)
{
    const auto& all = run.telemetry();
    if (all.empty()) return nullptr;
    auto it = std::upper_bound(all.begin(), all.end(), step,
                               [](std::int64_t s, const TelemetryEvent& t) { return s < t.step; });
    return it == all.begin() ? &all.front() : &*(it - 1);
}

}  // namespace

HistogramChart::HistogramChart(QWidget* parent)
    : ChartGroup(QStringLiteral("histogram"), parent),
      chart_(makeChart(tr("Histogram of log2|x| (scaled, before rounding)"))),
      exponents_(makeValueAxis(tr("log2 |x|"), QStringLiteral("%d"))),
      share_(makeValueAxis(tr("% of nonzero"), QStringLiteral("%.3g"))),
      pool_(chart_)
{
    chart_->addAxis(exponents_, Qt::AlignBottom);
    chart_->addAxis(share_, Qt::AlignLeft);

    layerBox_ = new QComboBox(this);
    layerBox_->setToolTip(tr("Layer whose tensor is shown"));
    // A transformer taps some 60 places: names in full, a list that scrolls.
    layerBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    layerBox_->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Fixed);   // never cut ("block2.ln1.su")
    layerBox_->setMaxVisibleItems(24);
    kindBox_ = new QComboBox(this);
    for (TensorKind k : {TensorKind::weightGrad, TensorKind::activationGrad, TensorKind::activation,
                         TensorKind::quantizedActivationGrad, TensorKind::quantizedActivation, TensorKind::quantizedWeight})
        kindBox_->addItem(QString::fromUtf8(tensorKindName(k)).replace(QLatin1Char('_'), QLatin1Char(' ')),
                          static_cast<int>(k));
    kindBox_->setToolTip(tr("Tensor kind: weight gradients, activation gradients, activations, or under an FP8, MX or "
                            "NVFP4 recipe the quantised matmul inputs (judged in their element format)"));
    blockScalesBox_ = new QCheckBox(tr("block scales"), this);
    blockScalesBox_->setObjectName(QStringLiteral("blockScalesBox"));
    blockScalesBox_->setToolTip(tr("Under MX or NVFP4: the histogram of the quantised tensor's block scales (log2 of "
                                   "each block's scale factor) instead of its values"));
    blockScalesBox_->setEnabled(false);
    blockScalesBox_->setVisible(false);   // shown where the tap has block scales (room for the layer's name)
    stepSlider_ = new QSlider(Qt::Horizontal, this);
    stepSlider_->setToolTip(tr("Move through the histogram steps of the run being watched"));
    stepLabel_ = new QLabel(this);
    changesLabel_ = new QLabel(this);
    changesLabel_->setWordWrap(true);
    shares_ = new QLabel(this);
    shares_->setWordWrap(true);
    shares_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto onSelection = [this] {
        if (!updatingControls_) redrawSelf();
    };
    connect(layerBox_, &QComboBox::currentIndexChanged, this, onSelection);
    connect(kindBox_, &QComboBox::currentIndexChanged, this, onSelection);
    connect(blockScalesBox_, &QCheckBox::toggled, this, onSelection);
    connect(stepSlider_, &QSlider::valueChanged, this, [this](int) {
        if (updatingControls_) return;
        followLatest_ = stepSlider_->value() == stepSlider_->maximum();
        redrawSelf();
    });

    // The tap's choices on one row, the step on the next: on one row a long kind ("quantized
    // activation grad") and the step's text did not fit beside the names in presentation mode.
    auto* controls = new QHBoxLayout;
    controls->addWidget(layerBox_);
    controls->addWidget(kindBox_);
    controls->addWidget(blockScalesBox_);
    controls->addStretch(1);
    auto* stepRow = new QHBoxLayout;
    stepRow->addWidget(stepSlider_, 1);
    stepRow->addWidget(stepLabel_);
    kindBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    kindBox_->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Fixed);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new ClickableChartView(chart_, this, [this](QPointF p) { pickAt(p); }), 1);
    layout->addWidget(shares_);
    layout->addLayout(controls);
    layout->addLayout(stepRow);
    layout->addWidget(changesLabel_);
}

void HistogramChart::presentationModeChanged() { setAxisTitles(showingBlockScales_); }

void HistogramChart::setAxisTitles(bool blockScales)
{
    // Presentation mode's short title leaves what the values are to the axis.
    const QString x = blockScales          ? tr("log2 block scale")
                      : presentationMode() ? tr("log2 |x| (scaled, before rounding)")
                                           : tr("log2 |x|");
    if (exponents_->titleText() != x) exponents_->setTitleText(x);
    // Projected, a vertical title has the height of a short plot: "%" (the table under the
    // chart says of what).
    const QString y = presentationMode() ? tr("%") : blockScales ? tr("% of blocks") : tr("% of nonzero");
    if (share_->titleText() != y) share_->setTitleText(y);
}

void HistogramChart::setBlockScalesShown(bool on) { blockScalesBox_->setChecked(on); }

bool HistogramChart::blockScalesShown() const { return showingBlockScales_; }

void HistogramChart::setSelection(const QString& layer, TensorKind kind)
{
    updatingControls_ = true;
    if (layerBox_->findText(layer) < 0) layerBox_->addItem(layer);
    layerBox_->setCurrentText(layer);
    kindBox_->setCurrentIndex(kindBox_->findData(static_cast<int>(kind)));
    updatingControls_ = false;
    redrawSelf();
}

void HistogramChart::setHistogramIndex(int index)
{
    stepSlider_->setValue(index);
}

QString HistogramChart::layer() const { return layerBox_->currentText(); }

TensorKind HistogramChart::kind() const { return static_cast<TensorKind>(kindBox_->currentData().toInt()); }

void HistogramChart::pickAt(const QPointF& chartPosition)
{
    // A bin of block scales is no value range for the explorer.
    if (showingBlockScales_ || !chart_->plotArea().contains(chartPosition) || chart_->series().isEmpty()) return;
    const QPointF value = chart_->mapToValue(chartPosition, chart_->series().constFirst());
    const int exponent = static_cast<int>(std::floor(value.x()));
    emit binPicked(layer(), QString::fromUtf8(tensorKindName(kind())), exponent);
}

void HistogramChart::refillLayers(const RunData& run)
{
    // Every histogram step reports the same layers: the first and last events name them
    // all (scanning every event of a long run cost milliseconds per frame).
    if (run.telemetry().empty()) return;
    // A layer with update counts but no values (an fp32 run's weight gradients: nothing is
    // rounded) has no histogram to show.
    std::vector<std::string> layers;
    for (const TelemetryEvent* t : {&run.telemetry().front(), &run.telemetry().back()})
        for (const LayerTelemetry& l : t->layers)
            if (l.stats.count > 0 && std::find(layers.begin(), layers.end(), l.layer) == layers.end())
                layers.push_back(l.layer);
    sortInModelOrder(layers, parameterLayerNames(run.settings().model));
    QStringList names;
    for (const std::string& layer : layers) names << QString::fromStdString(layer);
    QStringList have;
    for (int i = 0; i < layerBox_->count(); ++i) have << layerBox_->itemText(i);
    if (names == have || names.isEmpty()) return;
    const QString keep = layerBox_->currentText();
    layerBox_->clear();
    layerBox_->addItems(names);
    // Keep the choice; else the first layer with weight gradients (the classic view).
    if (names.contains(keep)) {
        layerBox_->setCurrentText(keep);
    } else {
        for (const LayerTelemetry& l : run.telemetry().back().layers)
            if (l.kind == kind() && l.stats.count > 0) {
                layerBox_->setCurrentText(QString::fromStdString(l.layer));
                break;
            }
    }
}

HistogramWindow histogramWindow(const std::vector<const GradientHistogram*>& drawn,
                                const std::vector<FormatRegions>& formats)
{
    int lowBin = GradientHistogram::kBins, highBin = -1;
    double topShare = 0;
    for (const GradientHistogram* h : drawn) {
        const double values = static_cast<double>(h->total() - h->zeros - h->nonFinite);
        for (int b = 0; b < GradientHistogram::kBins; ++b) {
            const auto n = h->bins[static_cast<std::size_t>(b)];
            if (n == 0) continue;
            lowBin = std::min(lowBin, b);
            highBin = std::max(highBin, b);
            topShare = std::max(topShare, 100.0 * static_cast<double>(n) / values);
        }
    }
    HistogramWindow w{-10, 10, topShare > 0 ? topShare * 1.15 : 100.0};
    if (!formats.empty()) {
        w.low = formats.front().flushedBelow - 4;
        w.high = formats.front().overflowFrom + 4;
    }
    if (highBin >= 0) {
        const int dataLow = GradientHistogram::exponentOf(lowBin), dataHigh = GradientHistogram::exponentOf(highBin) + 1;
        constexpr int kNear = 40;
        w.low = dataLow - 3;
        w.high = dataHigh + 3;
        for (const FormatRegions& r : formats)
            for (int boundary : {r.flushedBelow, r.normalFrom, r.overflowFrom})
                if (boundary >= dataLow - kNear && boundary <= dataHigh + kNear) {
                    w.low = std::min(w.low, boundary - 3);
                    w.high = std::max(w.high, boundary + 3);
                }
    }
    w.low = std::max(w.low, GradientHistogram::kMinExponent - 1);
    w.high = std::min(w.high, GradientHistogram::kMaxExponent + 2);
    return w;
}


void HistogramChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    current_ = current;
    compare_ = compare;
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const RunPtr chosen = runs.isEmpty() ? nullptr : runs.front();
    setChartTitle(chart_, tr("Histogram of log2|x| (scaled, before rounding)"), runs, tr("Histogram of log2|x|"));

    // What to draw: the chosen run's histogram at the slider's step, the others' nearest.
    const std::int64_t step = followControls(chosen);
    const int index = std::min(stepSlider_->value(), chosen ? static_cast<int>(chosen->telemetry().size()) - 1 : -1);
    const std::string layerName = layer().toStdString();
    std::vector<Drawn> drawn;
    for (const RunPtr& run : runs) {
        const TelemetryEvent* t = run == chosen ? (index >= 0 ? &run->telemetry()[static_cast<std::size_t>(index)] : nullptr)
                                                : telemetryAt(*run, step);
        if (const LayerTelemetry* tap = t ? findLayer(*t, layerName, kind()) : nullptr) drawn.push_back({run, tap, t->step});
    }
    // The block scales view, where the box asks for it and the chosen run's tap has blocks.
    const bool blocksHere = !drawn.empty() && drawn.front().run == chosen && drawn.front().tap->scaling.blocks;
    blockScalesBox_->setEnabled(blocksHere);
    blockScalesBox_->setVisible(blocksHere);
    showingBlockScales_ = blocksHere && blockScalesBox_->isChecked();
    setAxisTitles(showingBlockScales_);
    if (showingBlockScales_) {
        std::erase_if(drawn, [](const Drawn& d) { return !d.tap->scaling.blocks; });
        std::vector<const GradientHistogram*> scales;
        for (const Drawn& d : drawn) scales.push_back(&d.tap->scaling.blockScales);
        const HistogramWindow window = histogramWindow(scales, {});
        setAxisRange(exponents_, window.low, window.high);
        setAxisRange(share_, 0, window.top);
        pool_.begin();
        const QString text = drawBlockScales(drawn, chosen, runs, window);
        pool_.end();
        showNotes(chosen, runs, false, {}, step);
        if (shares_->text() != text) shares_->setText(text);
        return;
    }

    const RegionFormat format = chosen ? regionFormatFor(chosen->currentSettings(), chosen->judgedFormat(), layerName, kind())
                                       : RegionFormat::of(Format::fp16);
    // The formats of the drawn runs other than the chosen run's: their boundaries are lines.
    std::vector<std::pair<RunPtr, RegionFormat>> otherFormats;
    for (const Drawn& d : drawn) {
        const RegionFormat f = regionFormatFor(d.run->currentSettings(), d.run->judgedFormat(), layerName, kind());
        const bool seen = std::any_of(otherFormats.begin(), otherFormats.end(), [&](const auto& o) { return o.second == f; });
        if (f != format && !seen) otherFormats.emplace_back(d.run, f);
    }

    // Where: the window over the data and the boundaries near it.
    std::vector<const GradientHistogram*> histograms;
    for (const Drawn& d : drawn) histograms.push_back(&d.tap->histogram);
    std::vector<FormatRegions> regions{format.regions};
    for (const auto& [run, f] : otherFormats) regions.push_back(f.regions);
    const HistogramWindow window = histogramWindow(histograms, regions);
    setAxisRange(exponents_, window.low, window.high);
    setAxisRange(share_, 0, window.top);

    // Drawing, then the texts under the chart.
    pool_.begin();
    drawRegions(format, window);
    drawOtherBoundaries(otherFormats, window);
    const std::vector<RunShares> shares = drawOutlines(drawn, chosen, runs, window);
    pool_.end();
    showNotes(chosen, runs, drawn.empty(), shares, step);
}

std::int64_t HistogramChart::followControls(const RunPtr& chosen)
{
    // Controls follow the chosen run: its layers, and its histogram steps on the slider.
    updatingControls_ = true;
    const int count = chosen ? static_cast<int>(chosen->telemetry().size()) : 0;
    if (chosen) refillLayers(*chosen);
    stepSlider_->setRange(0, std::max(0, count - 1));
    if (followLatest_) stepSlider_->setValue(stepSlider_->maximum());
    updatingControls_ = false;
    const int index = std::min(stepSlider_->value(), count - 1);
    const std::int64_t step = index >= 0 ? chosen->telemetry()[static_cast<std::size_t>(index)].step : 0;
    shownStep_ = followLatest_ ? 0 : step;
    stepLabel_->setText(count > 0 ? tr("step %1 (%2 of %3)").arg(step).arg(index + 1).arg(count) : tr("no histograms yet"));
    return step;
}

}  // namespace plab::ui
