// The gradient histogram against the format's regions (see histogram_chart.h).
#include "charts/histogram_chart.h"

#include "charts/layer_panels.h"
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
        QChartView::mousePressEvent(event);
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

// A region's shading as drawn over the plot (telemetry/format_regions.h).
QColor shadingOf(const RegionStyle& r) { return QColor(r.red, r.green, r.blue, r.alpha); }

// A region's shading as it looks over `background`, opaque (for a table cell).
QColor shadingOver(const QColor& shading, const QColor& background)
{
    const double a = shading.alphaF();
    auto mix = [a](int fg, int bg) { return static_cast<int>(std::lround(a * fg + (1 - a) * bg)); };
    return QColor(mix(shading.red(), background.red()), mix(shading.green(), background.green()),
                  mix(shading.blue(), background.blue()));
}

}  // namespace

QString HistogramChart::sharesLines(const std::vector<RunShares>& shares)
{
    QStringList lines;
    for (const RunShares& r : shares)
        lines << tr("%1 (%2 regions): flushed %3 · subnormal %4 · normal %5 · overflow %6 · zeros %7 · inf/NaN %8")
                     .arg(r.run, r.format, formatPercent(r.shares.flushed), formatPercent(r.shares.subnormal),
                          formatPercent(r.shares.normal), formatPercent(r.shares.overflow), formatPercent(r.shares.zeros),
                          formatPercent(r.shares.nonFinite));
    return lines.join(QLatin1Char('\n'));
}

QString HistogramChart::sharesTable(const std::vector<RunShares>& shares, const QColor& background)
{
    // One row per run under the region names (three lines instead of two wrapped lines per
    // run at presentation font sizes). Zeros and inf/NaN get a column only when some run has
    // any: they are rare, and the four regions are what the legend's colors show.
    const bool zeros = std::any_of(shares.begin(), shares.end(), [](const RunShares& r) { return r.shares.zeros > 0; });
    const bool nonFinite = std::any_of(shares.begin(), shares.end(), [](const RunShares& r) { return r.shares.nonFinite > 0; });
    auto cell = [](const QString& text) { return QStringLiteral("<td align=\"right\">%1</td>").arg(text); };
    // Each run in its own format's regions: the row names the format.
    QString html = QStringLiteral("<table cellspacing=\"0\" cellpadding=\"2\"><tr><th align=\"left\">%1</th>")
                       .arg(tr("run (format)").toHtmlEscaped());
    // The four regions' headers in their shading: the key to the plot's colors.
    const QString regionHeads[] = {tr("flushed"), tr("subnormal"), tr("normal"), tr("overflow")};
    for (int i = 0; i < 4; ++i)
        html += QStringLiteral("<th align=\"right\" bgcolor=\"%1\">&nbsp;%2&nbsp;</th>")
                    .arg(shadingOver(shadingOf(kRegionStyles[i]), background).name(), regionHeads[i].toHtmlEscaped());
    QStringList heads;
    if (zeros) heads << tr("zeros");
    if (nonFinite) heads << tr("inf/NaN");
    for (const QString& head : heads) html += QStringLiteral("<th align=\"right\">&nbsp;%1</th>").arg(head.toHtmlEscaped());
    html += QStringLiteral("</tr>");
    for (const RunShares& r : shares) {
        html += QStringLiteral("<tr><td>%1 (%2)</td>").arg(r.run.toHtmlEscaped(), r.format.toHtmlEscaped());
        for (double v : {r.shares.flushed, r.shares.subnormal, r.shares.normal, r.shares.overflow}) html += cell(formatPercent(v));
        if (zeros) html += cell(formatPercent(r.shares.zeros));
        if (nonFinite) html += cell(formatPercent(r.shares.nonFinite));
        html += QStringLiteral("</tr>");
    }
    return html + QStringLiteral("</table>");
}

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

    auto* controls = new QHBoxLayout;
    controls->addWidget(layerBox_);
    controls->addWidget(kindBox_);
    controls->addWidget(blockScalesBox_);
    controls->addWidget(stepSlider_, 1);
    controls->addWidget(stepLabel_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new ClickableChartView(chart_, this, [this](QPointF p) { pickAt(p); }), 1);
    layout->addWidget(shares_);
    layout->addLayout(controls);
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
    const QString y = blockScales ? tr("% of blocks") : tr("% of nonzero");
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
    QStringList names;
    for (const TelemetryEvent* t : {&run.telemetry().front(), &run.telemetry().back()})
        for (const LayerTelemetry& l : t->layers) {
            const QString name = QString::fromStdString(l.layer);
            if (!names.contains(name)) names << name;
        }
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
            if (l.kind == kind()) {
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

namespace {

RegionFormat regionFormatOf(const RunData& run, const std::string& layer, TensorKind kind)
{
    return regionFormatFor(run.currentSettings(), layer, kind);
}

}  // namespace

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

    const RegionFormat format = chosen ? regionFormatOf(*chosen, layerName, kind()) : RegionFormat::of(Format::fp16);
    // The formats of the drawn runs other than the chosen run's: their boundaries are lines.
    std::vector<std::pair<RunPtr, RegionFormat>> otherFormats;
    for (const Drawn& d : drawn) {
        const RegionFormat f = regionFormatOf(*d.run, layerName, kind());
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

void HistogramChart::drawRegions(const RegionFormat& format, const HistogramWindow& w)
{
    // Shaded regions of the chosen run's format (compute, or a quantised kind's element format).
    const FormatRegions& regions = format.regions;
    const RegionFormat& info = format;
    const QString formatText = QString::fromStdString(format.name);
    const double bounds[] = {static_cast<double>(w.low), static_cast<double>(regions.flushedBelow),
                             static_cast<double>(regions.normalFrom), static_cast<double>(regions.overflowFrom),
                             static_cast<double>(w.high)};
    const QString ranges[] = {
        tr("|x| < 2^%1").arg(info.minSubnormalLog2 - 1),
        tr("2^%1 .. 2^%2").arg(info.minSubnormalLog2 - 1).arg(info.minNormalLog2),
        tr("2^%1 .. %2").arg(info.minNormalLog2).arg(info.maxFinite, 0, 'g', 6),
        tr("> %1").arg(info.maxFinite, 0, 'g', 6),
    };
    for (int i = 0; i < 4; ++i) {
        const RegionStyle& style = kRegionStyles[i];
        const double a = std::max(bounds[i], static_cast<double>(w.low));
        const double b = std::min(bounds[i + 1], static_cast<double>(w.high));
        auto* area = static_cast<QAreaSeries*>(
            pool_.take(QStringLiteral("region/") + QLatin1String(style.key), [] { return makeAreaSeries(); }, {exponents_, share_}));
        setSeriesName(area, tr("%1 %2 (%3)").arg(formatText, tr(style.label), ranges[i]));
        setLegendLabel(chart_, area, i == 0 ? tr("%1 %2").arg(formatText, tr(style.label)) : tr(style.label));
        const QList<QPointF> upper = b > a ? QList<QPointF>{{a, w.top}, {b, w.top}} : QList<QPointF>{};
        const QList<QPointF> lower = b > a ? QList<QPointF>{{a, 0.0}, {b, 0.0}} : QList<QPointF>{};
        area->upperSeries()->replace(upper);
        area->lowerSeries()->replace(lower);
        if (const QColor color = shadingOf(style); area->brush().color() != color) area->setBrush(color);
        if (area->pen().style() != Qt::NoPen) area->setPen(Qt::NoPen);
        // Presentation mode: the shares table's headers, in these colors, name the regions;
        // the legend keeps its one row for the runs.
        setLegendVisible(chart_, area, b > a && !presentationMode());
    }
}

void HistogramChart::drawOtherBoundaries(const std::vector<std::pair<RunPtr, RegionFormat>>& otherFormats,
                                         const HistogramWindow& w)
{
    // Another format's boundaries: one polyline of vertical segments in its first run's
    // color, dashed (a handful of points: dashing costs nothing here).
    for (const auto& [run, f] : otherFormats) {
        const FormatRegions& r = f.regions;
        QList<QPointF> marks;
        for (int boundary : {r.flushedBelow, r.normalFrom, r.overflowFrom}) {
            if (boundary < w.low || boundary > w.high) continue;
            marks.append(QPointF(boundary, 0.0));
            marks.append(QPointF(boundary, w.top));
            marks.append(QPointF(boundary, 0.0));
        }
        const QString name = QString::fromStdString(f.name);
        auto* line = pool_.take<QLineSeries>(QStringLiteral("bounds/") + name, {exponents_, share_});
        setSeriesName(line, tr("%1 region boundaries (flushed below 2^%2, normal from 2^%3, overflow from 2^%4)")
                                .arg(name).arg(r.flushedBelow).arg(r.normalFrom).arg(r.overflowFrom));
        setLegendLabel(chart_, line, tr("%1 boundaries").arg(name));
        setSeriesPen(line, runPen(run->color(), 1.5, Qt::DashLine));
        if (line->points() != marks) line->replace(marks);
    }
}

std::vector<HistogramChart::RunShares> HistogramChart::drawOutlines(const std::vector<Drawn>& drawn, const RunPtr& chosen,
                                                                    const QList<RunPtr>& runs, const HistogramWindow& w)
{
    // One step outline per run; each run's shares against its own format.
    std::vector<RunShares> shares;
    const QString kindText = QString::fromUtf8(tensorKindName(kind()));
    for (const Drawn& d : drawn) {
        const GradientHistogram& h = d.tap->histogram;
        const double values = static_cast<double>(h.total() - h.zeros - h.nonFinite);
        QList<QPointF> outline;
        outline.reserve((w.high - w.low + 1) * 2);
        for (int e = w.low; e < w.high; ++e) {
            const int bin = GradientHistogram::binOf(e);
            const double share = bin >= 0 && bin < GradientHistogram::kBins && values > 0
                                     ? 100.0 * static_cast<double>(h.bins[static_cast<std::size_t>(bin)]) / values
                                     : 0.0;
            outline.append(QPointF(e, share));
            outline.append(QPointF(e + 1, share));
        }
        auto* line = pool_.take<QLineSeries>(d.run->id() + QStringLiteral("/histogram"), {exponents_, share_});
        setSeriesName(line, tr("%1 %2 %3 at step %4").arg(d.run->name(), layer(), kindText).arg(d.step));
        setSeriesPen(line, runPen(d.run->color(), d.run == chosen ? 2.5 : 1.8, d.run == chosen ? Qt::SolidLine : Qt::DashLine));
        // The kind is in the combo under the chart: presentation mode's larger legend names the layer only.
        const QString watchedLabel = presentationMode() ? layer() : tr("%1 %2").arg(layer(), kindText);
        setLegendLabel(chart_, line, d.run == chosen ? watchedLabel : runLabel(d.run, runs));
        if (line->points() != outline) line->replace(outline);

        const RegionFormat own = regionFormatOf(*d.run, layer().toStdString(), kind());
        shares.push_back({runLabel(d.run, runs), QString::fromStdString(own.name), regionShares(h, own.regions)});
    }
    return shares;
}

QString HistogramChart::drawBlockScales(const std::vector<Drawn>& drawn, const RunPtr& chosen, const QList<RunPtr>& runs,
                                       const HistogramWindow& w)
{
    // One outline per run over the blocks' scale exponents (as % of the blocks), and a line
    // per run: how many blocks, the range of their scales, the shares that rounded to 0 or
    // were NaN.
    QStringList lines;
    const QString kindText = QString::fromUtf8(tensorKindName(kind()));
    for (const Drawn& d : drawn) {
        const GradientHistogram& h = d.tap->scaling.blockScales;
        const double blocks = static_cast<double>(h.total());
        QList<QPointF> outline;
        std::optional<int> low, high;
        for (int e = w.low; e < w.high; ++e) {
            const int bin = GradientHistogram::binOf(e);
            const bool inside = bin >= 0 && bin < GradientHistogram::kBins;
            const auto n = inside ? h.bins[static_cast<std::size_t>(bin)] : 0;
            if (n > 0) {
                if (!low) low = e;
                high = e;
            }
            const double share = blocks > 0 ? 100.0 * static_cast<double>(n) / blocks : 0.0;
            outline.append(QPointF(e, share));
            outline.append(QPointF(e + 1, share));
        }
        auto* line = pool_.take<QLineSeries>(d.run->id() + QStringLiteral("/blockScales"), {exponents_, share_});
        setSeriesName(line, tr("%1 %2 %3 block scales at step %4").arg(d.run->name(), layer(), kindText).arg(d.step));
        setSeriesPen(line, runPen(d.run->color(), d.run == chosen ? 2.5 : 1.8, d.run == chosen ? Qt::SolidLine : Qt::DashLine));
        setLegendLabel(chart_, line, d.run == chosen ? tr("%1 block scales").arg(layer()) : runLabel(d.run, runs));
        if (line->points() != outline) line->replace(outline);

        QString text = tr("%1: %2 blocks").arg(runLabel(d.run, runs)).arg(h.total());
        if (low) text += tr(", scales 2^%1 .. 2^%2").arg(*low).arg(*high + 1);
        if (h.zeros > 0) text += tr(", %1 with a scale of 0 (blocks of zeros, or of values too small for the block scale's format: lost)").arg(formatPercent(static_cast<double>(h.zeros) / blocks));
        if (h.nonFinite > 0) text += tr(", %1 NaN (a NaN or an infinity in the block)").arg(formatPercent(static_cast<double>(h.nonFinite) / blocks));
        lines << text;
    }
    if (lines.isEmpty()) return tr("No block scales at this step (they are recorded on histogram steps).");
    return lines.join(QLatin1Char('\n'));
}

void HistogramChart::showNotes(const RunPtr& chosen, const QList<RunPtr>& runs, bool nothingDrawn,
                               const std::vector<RunShares>& shares, std::int64_t step)
{
    QString text;
    if (nothingDrawn && chosen) {
        const QString kinds = kindsWithData({chosen});
        if (chosen->telemetry().empty())
            text = tr("No histogram yet: the first comes with the run's first telemetry snapshot.");
        else if (kinds.isEmpty())
            text = tr("%1 rounds no tensor (fp32 keeps every value as it is), so there is no histogram to show.")
                       .arg(runLabel(chosen, runs));
        else
            text = tr("%1 %2 is not rounded in %3, so it has no histogram: pick another layer or tensor kind "
                      "(kinds with data: %4).")
                       .arg(layer(), QString::fromUtf8(tensorKindName(kind())).replace(QLatin1Char('_'), QLatin1Char(' ')),
                            runLabel(chosen, runs), kinds);
    } else if (!chosen) {
        text = tr("No run to show: start a run, or pick runs in the run list.");
    } else if (!shares.empty()) {
        text = presentationMode() ? sharesTable(shares, shares_->palette().color(shares_->backgroundRole()))
                                  : sharesLines(shares);
    }
    if (shares_->text() != text) shares_->setText(text);

    // Setting changes of the chosen run up to this histogram step.
    QStringList changes;
    if (chosen)
        for (const SettingChangeEvent& c : chosen->changes())
            changes << (c.step <= step ? tr("step %1: %2") : tr("(later) step %1: %2"))
                           .arg(c.step)
                           .arg(QString::fromStdString(c.description));
    changesLabel_->setText(changes.isEmpty() ? QString() : tr("Setting changes — %1").arg(changes.join(QStringLiteral("; "))));
    changesLabel_->setVisible(!changes.isEmpty());
}

QString HistogramChart::sharesText() const { return shares_->text(); }

}  // namespace plab::ui
