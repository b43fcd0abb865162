// The HTML report's interactive charts: each line chart's data as JSON beside its static
// SVG, and the scripts that draw them with uPlot (third_party/uplot, vendored from npm):
// hover values, drag to zoom, legend entries that hide or show a run. The bar charts stay
// static SVG with their values written on the bars. See report_render/interactive_report.js.
#pragma once

#include "chart_painter.h"

#include <QString>

namespace plab::report {

// Whether a chart is drawn interactively (a line chart: loss, accuracy, loss scale,
// histograms).
bool drawnInteractively(const ChartSpec& spec);

// The chart's data and look for interactive_report.js: {id, title, xLabel, yLabel, xScale,
// yScale, xMin, xMax, yMin, yMax, series: [{name, color, x, y, steps, markers}], bands: [{from,
// to, color, label}]}; NaN is null (a gap), an infinite band edge null. Text that could end
// an XHTML element ('<', '>', '&') is escaped as \u003c..., so the JSON sits in the page as is.
QString chartDataJson(const QString& id, const ChartSpec& spec);

// The <style> and <script> elements that make the charts interactive: uPlot's CSS and code
// with its MIT notice, and interactive_report.js; each script in a CDATA section, so the
// page stays well-formed XHTML.
QString interactiveStyle();
QString interactiveScripts();

}  // namespace plab::report
