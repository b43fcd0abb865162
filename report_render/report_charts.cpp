// Building the report's charts from the compared runs, and exporting a chart as SVG or
// PNG. See report_charts.h.
#include "report_charts.h"

#include "numerics/format.h"
#include "telemetry/format_regions.h"
#include "train/region_format.h"

#include <QBuffer>
#include <QPainter>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString qs(const std::string& s) { return QString::fromStdString(s); }

// "A, B and C" of names.
QString listOfNames(const QStringList& names)
{
    if (names.size() < 2) return names.join(QString());
    return names.mid(0, names.size() - 1).join(QStringLiteral(", ")) + QStringLiteral(" and ") + names.last();
}

// Which series lie on top of each other (within `tolerance` in y at every shared x,
// linesCoincide; with `minPoints` points at least), as the app's charts say it: "FP32, TF32
// and AMP BF16 coincide: AMP BF16, drawn last, hides the others." Runs in the order drawn;
// "" when none coincide.
QString coincideNote(const std::vector<ChartSeries>& series, double tolerance, qsizetype minPoints)
{
    std::vector<int> group(series.size(), -1);
    for (std::size_t j = 0; j < series.size(); ++j)
        for (std::size_t i = 0; i < j; ++i) {
            const auto& a = series[i].points;
            const auto& b = series[j].points;
            if (a.size() < minPoints) continue;
            const bool same = a.size() >= 2 ? linesCoincide(a, b, tolerance)
                                            : a.size() == b.size() && a[0].x() == b[0].x() &&
                                                  std::abs(a[0].y() - b[0].y()) <= tolerance;
            if (same) {
                group[j] = group[i] >= 0 ? group[i] : static_cast<int>(i);
                if (group[i] < 0) group[i] = static_cast<int>(i);
                break;
            }
        }
    QStringList notes;
    for (std::size_t first = 0; first < series.size(); ++first) {
        if (group[first] != static_cast<int>(first)) continue;
        QStringList names;
        for (std::size_t k = 0; k < series.size(); ++k)
            if (group[k] == static_cast<int>(first)) names << series[k].name;
        notes << QStringLiteral("%1 coincide: %2, drawn last, hides %3.")
                     .arg(listOfNames(names), names.last(), names.size() == 2 ? names.first() : QStringLiteral("the others"));
    }
    return notes.join(QLatin1Char('\n'));
}

// The data's largest finite y (0 without any).
double largestY(const std::vector<ChartSeries>& series)
{
    double top = 0.0;
    for (const auto& s : series)
        for (const auto& p : s.points)
            if (std::isfinite(p.y())) top = std::max(top, p.y());
    return top;
}

ReportChart lossChart(const RunComparison& c, double smoothing)
{
    ReportChart chart{QStringLiteral("loss"), {}, {}};
    std::int64_t longest = 0;
    for (const auto& r : c.runs) longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(r.record.steps.size()));
    // The smoothed curve at every step, drawn at about 300 of them (every `stride`-th and
    // the last): the curve is smooth, and the SVG stays small.
    const std::size_t stride = static_cast<std::size_t>(std::max<std::int64_t>(1, longest / 300));
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
        const auto& steps = c.runs[i].record.steps;
        ChartSeries s{qs(c.runs[i].label), seriesColor(int(i)), {}, false, {}, {}};
        const std::vector<double> smoothed = smoothedLosses(steps, smoothing);
        for (std::size_t k = 0; k < steps.size(); ++k)
            if (k % stride == stride - 1 || k + 1 == steps.size())
                s.points.push_back(QPointF(double(steps[k].step), smoothed[k]));   // NaN: a gap
        chart.spec.series.push_back(std::move(s));
    }
    chart.spec.title = QStringLiteral("Training loss");
    chart.spec.xLabel = QStringLiteral("step");
    chart.spec.yLabel = QStringLiteral("loss (unscaled)");
    chart.spec.yMin = 0.0;
    chart.spec.note = smoothing > 0
                          ? QStringLiteral("Smoothed as in the app and TensorBoard: exponential moving average, weight %1 "
                                           "(bias-corrected); gaps where the loss was not finite.")
                                .arg(smoothing, 0, 'f', 3)
                          : QStringLiteral("Not smoothed (weight 0); gaps where the loss was not finite.");
    // Curves within 1% of the axis (about a line's width) hide each other: say which, as
    // the app's loss chart does.
    const QString same = coincideNote(chart.spec.series, 0.01 * largestY(chart.spec.series) * 1.05, 2);
    if (!same.isEmpty()) chart.spec.note = same + QLatin1Char('\n') + chart.spec.note;
    chart.caption = QStringLiteral("Training loss of each run, step by step.");
    return chart;
}

ReportChart accuracyChart(const RunComparison& c)
{
    ReportChart chart{QStringLiteral("accuracy"), {}, {}};
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
        ChartSeries s{qs(c.runs[i].label), seriesColor(int(i)), {}, false, {}, {}};
        for (const auto& e : c.runs[i].record.evals) s.points.push_back(QPointF(double(e.step), 100.0 * e.testAccuracy));
        chart.spec.series.push_back(std::move(s));
    }
    chart.spec.title = QStringLiteral("Test accuracy");
    chart.spec.xLabel = QStringLiteral("step");
    chart.spec.yLabel = QStringLiteral("accuracy (%)");
    // Over the steps the runs took, as the loss chart (not 199.6 to 200.4 around one evaluation).
    double lastStep = 1.0;
    for (const auto& r : c.runs)
        if (!r.record.steps.empty()) lastStep = std::max(lastStep, double(r.record.steps.back().step));
    chart.spec.xMin = 0.0;
    chart.spec.xMax = lastStep;
    // Points within 1% of the axis's span (the painter's: the data's, padded 5% each way) hide each other.
    double low = 100.0, high = 0.0;
    for (const auto& s : chart.spec.series)
        for (const auto& p : s.points) low = std::min(low, p.y()), high = std::max(high, p.y());
    const double span = high > low ? (high - low) * 1.1 : 1.0;
    chart.spec.note = coincideNote(chart.spec.series, 0.01 * span, 1);
    chart.caption = QStringLiteral("Test accuracy at each evaluation (a run that diverged before its first evaluation has none).");
    return chart;
}

std::optional<ReportChart> lossScaleChart(const RunComparison& c)
{
    ReportChart chart{QStringLiteral("loss-scale"), {}, {}};
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
        const auto& r = c.runs[i];
        if (r.lossScaleMode == "off" || r.record.steps.empty()) continue;
        ChartSeries s{qs(r.label), seriesColor(int(i)), {}, false, {}, QStringLiteral("skipped step (%1)").arg(qs(r.label))};
        // The scale is piecewise constant: keep its corners only.
        double last = r.record.steps.front().lossScale;
        s.points.push_back(QPointF(double(r.record.steps.front().step), last));
        for (const auto& p : r.record.steps) {
            if (p.lossScale != last) {
                s.points.push_back(QPointF(double(p.step - 1), last));
                s.points.push_back(QPointF(double(p.step), p.lossScale));
                last = p.lossScale;
            }
            if (p.skipped) s.markers.push_back(QPointF(double(p.step), p.lossScale));
        }
        s.points.push_back(QPointF(double(r.record.steps.back().step), last));
        chart.spec.series.push_back(std::move(s));
    }
    if (chart.spec.series.empty()) return std::nullopt;
    chart.spec.title = QStringLiteral("Loss scale");
    chart.spec.xLabel = QStringLiteral("step");
    chart.spec.yLabel = QStringLiteral("loss scale");
    chart.spec.yScale = AxisScale::log2;
    chart.caption = QStringLiteral("Loss scale used at each step (log2 axis); crosses mark steps whose update was skipped "
                                   "because a gradient was inf or NaN. Runs without loss scaling are not shown.");
    return chart;
}

// Grouped bars of a per-layer fraction (in %), one bar per run; none when no run has it.
std::optional<ReportChart> layerFractionChart(const RunComparison& c, const QString& id, const QString& title,
                                              const QString& caption,
                                              std::optional<double> LayerFractions::*field)
{
    ReportChart chart{id, caption, {}};
    chart.spec.kind = ChartSpec::Kind::bars;
    QStringList layers;
    for (const auto& name : c.layerOrder)
        for (const auto& r : c.runs)
            if (const auto* l = r.layer(name); l && (l->*field) && !layers.contains(qs(name))) layers << qs(name);
    if (layers.isEmpty()) return std::nullopt;
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
        BarSet set{qs(c.runs[i].label), seriesColor(int(i)), {}, {}};
        bool any = false;
        for (const auto& name : layers) {
            const auto* l = c.runs[i].layer(name.toStdString());
            const bool has = l && (l->*field);
            set.values.push_back(has ? 100.0 * *(l->*field) : kNaN);
            set.labels << (has ? qs(formatPercent(*(l->*field))) : QString());   // as the tables write it
            any = any || has;
        }
        if (any) chart.spec.barSets.push_back(std::move(set));
    }
    chart.spec.categories = layers;
    chart.spec.title = title;
    chart.spec.xLabel = QStringLiteral("layer");
    chart.spec.yLabel = QStringLiteral("% of nonzero values");
    chart.spec.valueSuffix = QStringLiteral("%");
    return chart;
}

ReportChart memoryChart(const RunComparison& c)
{
    ReportChart chart{QStringLiteral("memory"), {}, {}};
    chart.spec.kind = ChartSpec::Kind::bars;
    chart.spec.stacked = true;
    std::vector<std::string> categories;
    for (const auto& r : c.runs)
        for (const auto& k : r.memoryCategories)
            if (std::find(categories.begin(), categories.end(), k) == categories.end()) categories.push_back(k);
    for (const auto& r : c.runs) chart.spec.categories << qs(r.label);
    for (std::size_t k = 0; k < categories.size(); ++k) {
        BarSet set{qs(categories[k]).replace('_', ' '), seriesColor(int(k) + 4), {}, {}};
        for (const auto& r : c.runs) {
            const auto it = std::find(r.memoryCategories.begin(), r.memoryCategories.end(), categories[k]);
            const auto idx = static_cast<std::size_t>(it - r.memoryCategories.begin());
            set.values.push_back(it != r.memoryCategories.end() && idx < r.peakBytes.size()
                                     ? double(r.peakBytes[idx]) / (1024.0 * 1024.0) : kNaN);
        }
        chart.spec.barSets.push_back(std::move(set));
    }
    // Over each stack the peak of the sum as the tables state it (the same value, in the same
    // style), and a mark at its height: each category's own peak, stacked, can reach higher.
    std::vector<std::int64_t> totals;
    for (const auto& r : c.runs) totals.push_back(r.peakTotal);
    const int decimals = mebibyteDecimals(totals);
    for (const auto& r : c.runs) {
        chart.spec.stackLabels << (r.peakTotal > 0 ? QStringLiteral("peak %1").arg(qs(formatMebibytes(r.peakTotal, decimals)))
                                                   : QStringLiteral("not measured"));
        chart.spec.stackMarks << (r.peakTotal > 0 ? double(r.peakTotal) / (1024.0 * 1024.0) : kNaN);
    }
    chart.spec.title = QStringLiteral("Peak memory per category");
    chart.spec.xLabel = QStringLiteral("run");
    chart.spec.yLabel = QStringLiteral("MiB");
    chart.spec.note = QStringLiteral("Each category at its own peak, in the bytes of the modelled storage format; the black "
                                     "mark and the number over each bar are the peak of the sum, as in the tables.");
    chart.caption = QStringLiteral("Peak memory of each category, stacked: the categories peak at different moments, so "
                                   "the stack can reach above the peak of the total (the mark).");
    return chart;
}

// Snapshots of `layer`'s weight gradients at the chosen steps (or first, middle, last).
std::vector<const TelemetryEvent*> histogramSnapshots(const RunDigest& r, const std::string& layer,
                                                      const ReportOptions& options)
{
    std::vector<const TelemetryEvent*> with;
    for (const auto& t : r.record.telemetry)
        if (const auto* l = t.find(layer, TensorKind::weightGrad);
            l && std::any_of(l->histogram.bins.begin(), l->histogram.bins.end(), [](std::uint64_t n) { return n != 0; }))
            with.push_back(&t);
    if (with.empty()) return {};
    std::vector<const TelemetryEvent*> chosen;
    if (!options.histogramSteps.empty()) {
        for (auto step : options.histogramSteps)
            for (auto* t : with)
                if (t->step == step) chosen.push_back(t);
        return chosen;
    }
    chosen.push_back(with.front());
    if (with.size() > 2) chosen.push_back(with[with.size() / 2]);
    if (with.size() > 1) chosen.push_back(with.back());
    return chosen;
}

ReportChart histogramChart(const RunDigest& r, std::size_t index, const std::string& layer,
                           const std::vector<const TelemetryEvent*>& snaps)
{
    ReportChart chart{QStringLiteral("histogram-%1").arg(index + 1), {}, {}};
    // Judged in the format the app's histogram judges this layer's weight gradients in.
    const RegionFormat format = regionFormatFor(r.record.finalSettings(), r.record.judgedFormat, layer, TensorKind::weightGrad);
    int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min();
    QStringList scales;
    for (std::size_t k = 0; k < snaps.size(); ++k) {
        const GradientHistogram& h = snaps[k]->find(layer, TensorKind::weightGrad)->histogram;
        // The occupied bins, first to last, as the record stores them.
        int first = GradientHistogram::kBins, last = -1;
        double total = 0;
        for (int b = 0; b < GradientHistogram::kBins; ++b)
            if (const auto n = h.bins[static_cast<std::size_t>(b)]) {
                first = std::min(first, b);
                last = b;
                total += double(n);
            }
        ChartSeries s{QStringLiteral("step %1").arg(snaps[k]->step), seriesColor(int(k)), {}, true, {}, {}};
        for (int b = first; b <= last; ++b)
            s.points.push_back(QPointF(GradientHistogram::exponentOf(b),
                                       100.0 * double(h.bins[static_cast<std::size_t>(b)]) / total));
        if (last >= 0) {
            lo = std::min(lo, GradientHistogram::exponentOf(first));
            hi = std::max(hi, GradientHistogram::exponentOf(last) + 1);
        }
        chart.spec.series.push_back(std::move(s));
        const QString sc = QString::number(snaps[k]->lossScale, 'g', 8);
        if (!scales.contains(sc)) scales << sc;
    }
    // The format's regions over the bins, as the app's histogram draws them
    // (telemetry/format_regions.h).
    const FormatRegions& regions = format.regions;
    const double flushBelow = regions.flushedBelow;
    const double normalFrom = regions.normalFrom;
    const double overflowFrom = regions.overflowFrom;
    double xMin = lo - 2, xMax = hi + 2;
    if (flushBelow > xMin - 16) xMin = std::min(xMin, flushBelow - 2);
    if (overflowFrom < xMax + 16) xMax = std::max(xMax, overflowFrom + 2);
    chart.spec.xMin = xMin;
    chart.spec.xMax = xMax;
    const double inf = std::numeric_limits<double>::infinity();
    const QString f = qs(format.name);
    const double bounds[] = {-inf, flushBelow, normalFrom, overflowFrom, inf};
    chart.spec.bands.clear();
    for (int i = 0; i < 4; ++i) {
        const RegionStyle& r = kRegionStyles[i];
        const QString label = i == 0 ? QStringLiteral("%1 %2").arg(f, QLatin1String(r.label)) : QLatin1String(r.label);
        chart.spec.bands.push_back({bounds[i], bounds[i + 1], QColor(r.red, r.green, r.blue, r.alpha), label});
    }
    const bool scaled = !(scales.size() == 1 && scales.front() == QStringLiteral("1"));
    chart.spec.title = QStringLiteral("%1 weight gradients, %2").arg(qs(layer), qs(r.label));
    chart.spec.xLabel = scaled ? QStringLiteral("log2 |gradient x loss scale| before rounding to %1").arg(f)
                               : QStringLiteral("log2 |gradient| before rounding to %1").arg(f);
    chart.spec.yLabel = QStringLiteral("% of nonzero values");
    chart.spec.yMin = 0.0;
    QString note = QStringLiteral("Loss scale at these steps: %1.").arg(scales.join(QStringLiteral(", ")));
    if (flushBelow < xMin) note += QStringLiteral(" %1 flushes to 0 only below 2^%2, far left of these values.").arg(f).arg(flushBelow);
    chart.spec.note = note;
    chart.caption = QStringLiteral("Histogram of |values| of layer %1's weight gradients at the chosen steps (bins of one "
                                   "power of two), over the regions of %2: values in the red region became 0, in the "
                                   "orange one they lost precision as subnormals.")
                        .arg(qs(layer), f);
    return chart;
}

}  // namespace

QString chosenHistogramLayer(const RunComparison& c, const ReportOptions& options)
{
    if (!options.histogramLayer.isEmpty()) return options.histogramLayer;
    std::string best, first;
    double worst = -1.0;
    for (const auto& r : c.runs)
        for (const auto& l : r.summary().layers) {
            if (!l.underflow) continue;
            if (first.empty()) first = l.layer;
            if (*l.underflow > worst) { worst = *l.underflow; best = l.layer; }
        }
    return qs(worst > 0.0 ? best : first);
}

std::vector<ReportChart> buildReportCharts(const RunComparison& c, const ReportOptions& options)
{
    std::vector<ReportChart> charts;
    charts.push_back(lossChart(c, options.smoothing));
    charts.push_back(accuracyChart(c));
    if (auto chart = lossScaleChart(c)) charts.push_back(std::move(*chart));
    struct FractionChart {
        const char* id;
        const char* title;
        const char* caption;
        std::optional<double> LayerFractions::*share;
    };
    static constexpr FractionChart kFractionCharts[] = {
        {"underflow", "Weight-gradient underflow per layer",
         "Share of nonzero weight-gradient values that became 0 when rounded, over the whole run. Runs without a "
         "reduced-precision gradient (fp32, tf32) have no bars.",
         &LayerFractions::underflow},
        {"activation-grad-underflow", "Activation-gradient underflow per layer",
         "Share of nonzero gradients with respect to each layer's input (for \"loss\": w.r.t. the logits) that "
         "became 0, over the run.",
         &LayerFractions::activationGradUnderflow},
        {"lost-updates", "Lost weight updates per layer",
         "Share of nonzero optimizer updates that left the stored weight unchanged (the update was too small for the "
         "weight's format), over the run.",
         &LayerFractions::lostUpdate},
    };
    for (const FractionChart& f : kFractionCharts)
        if (auto chart = layerFractionChart(c, QString::fromLatin1(f.id), QString::fromLatin1(f.title),
                                            QString::fromUtf8(f.caption), f.share))
            charts.push_back(std::move(*chart));
    charts.push_back(memoryChart(c));
    const std::string layer = chosenHistogramLayer(c, options).toStdString();
    std::size_t index = 0;
    for (const auto& r : c.runs) {
        const auto snaps = histogramSnapshots(r, layer, options);
        if (!snaps.empty()) charts.push_back(histogramChart(r, index++, layer, snaps));
    }
    return charts;
}

QByteArray chartToSvg(const ChartSpec& spec, QSize size)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setResolution(96);
    svg.setTitle(spec.title);
    {
        QPainter painter(&svg);
        paintChart(painter, QRectF(QPointF(0, 0), QSizeF(size)), spec);
    }
    return bytes;
}

QImage chartToImage(const ChartSpec& spec, QSize size, double scale)
{
    QImage image(QSize(int(size.width() * scale), int(size.height() * scale)), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    image.setDevicePixelRatio(scale);
    {
        QPainter painter(&image);
        paintChart(painter, QRectF(QPointF(0, 0), QSizeF(size)), spec);
    }
    return image;
}

}  // namespace plab::report
