// Where a caption drawn on a chart goes: the corner of the plot area that hides the least
// data (see placeCaptionClearOfData).
#pragma once

#include <QChart>
#include <QGraphicsItem>
#include <QGraphicsSimpleTextItem>
#include <QLabel>

namespace plab::ui {

// Puts a caption drawn on the chart (a summary such as the skipped-step counts) in the
// corner of the plot area that the fewest visible lines and markers cross, bottom right
// first, so it hides no data when a free corner exists. Returns how many segments and
// markers the chosen corner still covers (0: none).
int placeCaptionClearOfData(QChart* chart, QGraphicsItem* caption);

// A caption item on the chart, above the series, placed again clear of the data whenever
// the plot area moves (while it shows text). Owned by the chart.
QGraphicsSimpleTextItem* makeChartCaption(QChart* chart);

// A label under a chart for what presentation mode moves off the plot (at a class's font
// sizes it covered the data): hidden until shown, its width ignored by the layout (a long
// run name never widens the grid), its lines as the caller breaks them.
QLabel* makeLabelUnderChart(QWidget* parent, const QString& objectName, Qt::TextFormat format);

// `text`'s lines wrapped at spaces to `width` pixels in `font`; a word wider than that is
// elided. Empty for empty text.
QString wrapToWidth(const QString& text, const QFont& font, qreal width);

// Sets a text caption on a chart (hidden when empty): the chart's title color, each line
// wrapped at spaces to the plot's width (long run names must not run off the chart),
// then placed clear of the data. The full text stays in the caption's tool tip.
void setChartCaption(QChart* chart, QGraphicsSimpleTextItem* caption, const QString& text);
// setChartCaption where the caption fits on the plot: at most half its height, in a corner
// that leaves every curve clear (and `onPlot`: presentation mode writes notes under the
// charts). Where it does not, false: the caption is left empty (its tool tip still the
// text) and the caller writes the text elsewhere (under the chart).
bool setChartCaptionIfClear(QChart* chart, QGraphicsSimpleTextItem* caption, const QString& text, bool onPlot = true);

}  // namespace plab::ui
