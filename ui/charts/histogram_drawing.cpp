// The histogram chart's drawing: the regions' shading, other formats' boundaries, the
// runs' outlines with their shares, the block-scale view and the shares' text (see
// histogram_chart.h).
#include "charts/histogram_chart.h"

#include "charts/layer_panels.h"
#include "train/region_format.h"

#include <QAreaSeries>
#include <QLabel>
#include <QLineSeries>

#include <algorithm>
#include <cmath>
#include <optional>

namespace plab::ui {

namespace {

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
    for (const RunShares& r : shares) {
        QString line = tr("%1 (%2 regions): flushed %3 · subnormal %4 · normal %5 · overflow %6 · zeros %7 · inf/NaN %8")
                           .arg(r.run, r.format, formatPercent(r.shares.flushed), formatPercent(r.shares.subnormal),
                                formatPercent(r.shares.normal), formatPercent(r.shares.overflow), formatPercent(r.shares.zeros),
                                formatPercent(r.shares.nonFinite));
        if (r.clipped)
            line += tr(" · clipped %1, counted by the rounding (the largest value lies inside a bin)").arg(formatPercent(*r.clipped));
        lines << line;
    }
    return lines.join(QLatin1Char('\n'));
}

QString HistogramChart::sharesTable(const std::vector<RunShares>& shares, const QColor& background)
{
    // One row per run under the region names (three lines instead of two wrapped lines per
    // run at presentation font sizes). Zeros and inf/NaN get a column only when some run has
    // any: they are rare, and the four regions are what the legend's colors show. Where a
    // run's name is long (lesson 12's "MXFP4, fc1's forward pass in bf16 (fp4-e2m1)"), its
    // column, squeezed by the numbers', wrapped it into four or five lines and the table took
    // the height of the plot above it: then each run's name has a row of its own across the
    // table, its shares the row under it, two lines a run.
    constexpr int kLongName = 16;   // characters of "run (format)" that fit the squeezed column
    const bool zeros = std::any_of(shares.begin(), shares.end(), [](const RunShares& r) { return r.shares.zeros > 0; });
    const bool nonFinite = std::any_of(shares.begin(), shares.end(), [](const RunShares& r) { return r.shares.nonFinite > 0; });
    const bool clipped = std::any_of(shares.begin(), shares.end(), [](const RunShares& r) { return r.clipped.has_value(); });
    const bool stacked = std::any_of(shares.begin(), shares.end(), [](const RunShares& r) {
        return r.run.size() + r.format.size() + 3 > kLongName;
    });
    auto cell = [](const QString& text) { return QStringLiteral("<td align=\"right\">%1</td>").arg(text); };
    // Each run in its own format's regions: the row names the format.
    QString html = QStringLiteral("<table cellspacing=\"0\" cellpadding=\"2\"><tr>");
    if (!stacked) html += QStringLiteral("<th align=\"left\">%1</th>").arg(tr("run (format)").toHtmlEscaped());
    // The four regions' headers in their shading: the key to the plot's colors.
    const QString regionHeads[] = {tr("flushed"), tr("subnormal"), tr("normal"), tr("overflow")};
    for (int i = 0; i < 4; ++i)
        html += QStringLiteral("<th align=\"right\" bgcolor=\"%1\">&nbsp;%2&nbsp;</th>")
                    .arg(shadingOver(shadingOf(kRegionStyles[i]), background).name(), regionHeads[i].toHtmlEscaped());
    QStringList heads;
    if (zeros) heads << tr("zeros");
    if (nonFinite) heads << tr("inf/NaN");
    if (clipped) heads << tr("clipped (counted)");   // the format's largest value inside a bin
    for (const QString& head : heads) html += QStringLiteral("<th align=\"right\">&nbsp;%1</th>").arg(head.toHtmlEscaped());
    html += QStringLiteral("</tr>");
    const int columns = 4 + static_cast<int>(heads.size());
    for (const RunShares& r : shares) {
        const QString name = QStringLiteral("%1 (%2)").arg(r.run.toHtmlEscaped(), r.format.toHtmlEscaped());
        html += stacked ? QStringLiteral("<tr><td colspan=\"%1\">%2</td></tr><tr>").arg(columns).arg(name)
                        : QStringLiteral("<tr><td>%1</td>").arg(name);
        for (double v : {r.shares.flushed, r.shares.subnormal, r.shares.normal, r.shares.overflow}) html += cell(formatPercent(v));
        if (zeros) html += cell(formatPercent(r.shares.zeros));
        if (nonFinite) html += cell(formatPercent(r.shares.nonFinite));
        if (clipped) html += cell(r.clipped ? formatPercent(*r.clipped) : QStringLiteral("–"));
        html += QStringLiteral("</tr>");
    }
    return html + QStringLiteral("</table>");
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
        showComparisonInLegend(chart_, line, d.run == chosen);
        if (line->points() != outline) line->replace(outline);

        const RegionFormat own = regionFormatFor(d.run->currentSettings(), d.run->judgedFormat(), layer().toStdString(), kind());
        RunShares row{runLabel(d.run, runs), QString::fromStdString(own.name), regionShares(h, own.regions), std::nullopt};
        if (const std::uint64_t rounded = d.tap->stats.nonzeroFinite(); rounded > 0) {
            const double counted = static_cast<double>(d.tap->stats.overflow) / static_cast<double>(rounded);
            if (counted > row.shares.overflow + 0.0005) row.clipped = counted;
        }
        shares.push_back(std::move(row));
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
        showComparisonInLegend(chart_, line, d.run == chosen);
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
