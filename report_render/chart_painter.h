// A small chart painter for reports, on QPainter alone (no widgets, no QtCharts), so the
// headless CLI can draw: line charts (linear, log2 or log10 axes, gaps at NaN, marker
// points, shaded x bands such as a number format's regions), step outlines for
// histograms, and grouped or stacked bar charts with value labels. The same spec paints
// to SVG (QSvgGenerator), PNG (QImage) and PDF pages.
#pragma once

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>
#include <vector>

class QFontMetricsF;
class QPainter;

namespace plab::report {

enum class AxisScale { linear, log2, log10 };

struct ChartSeries {
    QString name;
    QColor color;
    QVector<QPointF> points;        // NaN y breaks the line
    bool histogramSteps = false;    // point (x, y) is the bin [x, x+1): drawn as a filled step outline
    QVector<QPointF> markers;       // drawn as crosses (e.g. skipped steps)
    QString markerName;             // legend text of the markers
};

// A shaded range of x (data units), e.g. "subnormal" between 2^-25 and 2^-14.
struct XBand {
    double from = 0.0, to = 0.0;    // may be +-infinity: clipped to the plot
    QColor color;
    QString label;
};

struct BarSet {
    QString name;
    QColor color;
    QVector<double> values;         // one per category; NaN: no bar
    // The bars' value labels, one per category, as the report's tables write the same
    // numbers; empty: the value with ChartSpec::valueDecimals digits.
    QStringList labels;
};

struct ChartSpec {
    enum class Kind { lines, bars } kind = Kind::lines;
    QString title;
    QString xLabel, yLabel;
    QString note;                   // small text under the plot, wrapped to its width (lines: '\n')
    AxisScale xScale = AxisScale::linear, yScale = AxisScale::linear;
    std::optional<double> yMin, yMax, xMin, xMax;   // data units; default from the data
    std::vector<ChartSeries> series;     // lines
    std::vector<XBand> bands;            // lines
    QStringList categories;              // bars
    std::vector<BarSet> barSets;         // bars
    bool stacked = false;                // bars
    // Stacked bars: a label over each stack (one per category; empty: the sum, as a number)
    // and a mark across it at a value of its own (NaN: none), e.g. the peak of a sum that
    // the table states, which can lie below the stack of each part's own peak.
    QStringList stackLabels;
    QVector<double> stackMarks;
    QString valueSuffix;                 // bars: appended to value labels ("%")
    int valueDecimals = 2;               // bars: significant digits of value labels
};

// Paints the whole chart (title, axes, plot, legend) into `area`.
void paintChart(QPainter& painter, const QRectF& area, const ChartSpec& spec);

// Whether two polylines drawn with the same x values lie within `tolerance` of each other
// in y everywhere they share an x (and share at least two points): one hides the other.
// The app's charts and the report's say so with the same rule.
bool linesCoincide(const QVector<QPointF>& a, const QVector<QPointF>& b, double tolerance);

// `text` broken into lines no wider than `width` at spaces (and at its own line breaks),
// never inside a word: a note under a chart is drawn whole.
QStringList wrapText(const QString& text, const QFontMetricsF& fm, double width);

// A fixed palette that stays apart in print and for common colour blindness.
QColor seriesColor(int index);

}  // namespace plab::report
