// Charts and their value axes: a chart set up the same everywhere, axis ranges that only
// move by steps, ticks their labels can write, and the pixel columns of the reduction.
#pragma once

#include <QChart>
#include <QString>
#include <QValueAxis>

namespace plab::ui {

QChart* makeChart(const QString& title);
// A value axis whose ticks get labels that say where they are (fitTicksToLabels); set its
// range with setAxisRange or setStableRange.
QValueAxis* makeValueAxis(const QString& title, const QString& labelFormat = QStringLiteral("%g"));
// The smallest difference a printf label format shows: 1 for "%d", 0.01 for "%.2f"; 0 for
// formats that show any value ("%g", "%.3g", "%e").
double labelResolution(const QString& labelFormat);
// Evenly spaced ticks (tickCount of them, ends included) when each lands on a value the
// label format can write; otherwise ticks at multiples of a round interval (1, 2, 2.5 or 5
// x 10^k, a multiple of the resolution) with at most tickCount in the range. An axis of
// steps over 0..1.2 ("%d") so shows 0 and 1 instead of "0 0 0 0 1"; 0..1200 keeps 0, 300,
// ..., 1200. For the range shown: call it after the range changed (setAxisRange does).
void fitTicksToLabels(QValueAxis* axis);
// Sets the range, then the ticks for it, never laying out an old tick interval over the
// new range. Nothing happens when the range is unchanged, so redraws may call it per frame.
// A range the user zoomed to (TimedChartView) is kept: both setters leave an axis with
// this property alone until the zoom is reset.
inline constexpr char kUserZoomProperty[] = "plabUserZoom";
void setAxisRange(QValueAxis* axis, double low, double high);

// Width of the plot area in device pixels (at least 100): the columns for reduction.
int pixelColumns(const QChart* chart);

// Sets [low, high'] on the axis only when `high` left the shown range or uses less than
// `fill` of it; high' is a round number a little past the data. Moving ranges every
// frame re-lays out every label and the plot area, which costs more than the lines.
void setStableRange(QValueAxis* axis, double low, double high, double fill = 0.5);
// The next round value >= x (1, 1.2, 1.6, 2, 2.4, 3.2, 4, 4.8, 6, 8 x 10^k: four equal
// tick intervals with short labels).
double roundUpForAxis(double x);

}  // namespace plab::ui
