// The charts of a run report, built from a RunComparison: training loss, test accuracy,
// the loss scale (log2 axis) with skipped steps marked, underflow and lost-update
// fractions per layer, gradient histograms at chosen steps with the compute format's
// regions shaded (flushed to zero, subnormal, normal, overflow), and peak memory per
// category. Each chart is a ChartSpec for chart_painter; export helpers make SVG and PNG.
#pragma once

#include "chart_painter.h"
#include "report/run_comparison.h"
#include "report/smoothing.h"

#include <QByteArray>
#include <QImage>
#include <QSize>
#include <QStringList>

#include <cstdint>
#include <vector>

namespace plab::report {

struct ReportOptions {
    QString title = QStringLiteral("Precision Lab run report");
    std::vector<std::int64_t> histogramSteps;   // empty: first, middle and last snapshot
    QString histogramLayer;                      // empty: the layer that underflowed most
    QStringList notes;                           // sentences shown before the summary (a sweep's missing points)
    double smoothing = kDefaultSmoothing;        // the loss curves' EMA weight (report/smoothing.h), as the app's
};

struct ReportChart {
    QString id;            // file-name-safe: "loss", "histogram-2"
    QString caption;       // a sentence under the chart saying what it shows
    ChartSpec spec;
};

// The charts that the runs have data for (e.g. no loss-scale chart when no run scales).
std::vector<ReportChart> buildReportCharts(const RunComparison& comparison, const ReportOptions& options);

// The histogram layer the report shows: options.histogramLayer, else the layer whose
// weight gradients underflowed most in any run, else the first layer with one.
QString chosenHistogramLayer(const RunComparison& comparison, const ReportOptions& options);

inline constexpr QSize kChartSize{760, 400};   // logical pixels of one chart

QByteArray chartToSvg(const ChartSpec& spec, QSize size = kChartSize);
QImage chartToImage(const ChartSpec& spec, QSize size = kChartSize, double scale = 2.0);

}  // namespace plab::report
