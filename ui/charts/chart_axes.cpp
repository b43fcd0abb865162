// Chart and axis set-up (see chart_axes.h).
#include "charts/chart_axes.h"

#include <QGraphicsScene>
#include <QGraphicsView>
#include <QLegend>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace plab::ui {

QChart* makeChart(const QString& title)
{
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->legend()->setShowToolTips(true);
    QFont f = chart->legend()->font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    chart->legend()->setFont(f);
    // Geometry animations would repaint for 1 s after every frame's data update.
    chart->setAnimationOptions(QChart::NoAnimation);
    return chart;
}

QValueAxis* makeValueAxis(const QString& title, const QString& labelFormat)
{
    auto* axis = new QValueAxis;
    axis->setTitleText(title);
    axis->setLabelFormat(labelFormat);
    QObject::connect(axis, &QValueAxis::labelFormatChanged, axis, [axis] { fitTicksToLabels(axis); });
    fitTicksToLabels(axis);
    return axis;
}

void setAxisRange(QValueAxis* axis, double low, double high)
{
    if (axis->min() == low && axis->max() == high) return;
    if (axis->property(kUserZoomProperty).toBool()) return;   // the user's zoom stays
    // Even ticks while the range moves: QtCharts lays the axis out at once, and an old
    // interval over the new range could be thousands of ticks (1 over 100,000 steps).
    if (axis->tickType() != QValueAxis::TicksFixed) axis->setTickType(QValueAxis::TicksFixed);
    axis->setRange(low, high);
    fitTicksToLabels(axis);
}

double labelResolution(const QString& labelFormat)
{
    // The first conversion: flags, width, precision, conversion letter.
    static const QRegularExpression conversion(QStringLiteral("%[-+ #0']*\\d*(?:\\.(\\d*))?[hlLqjzt]*([a-zA-Z])"));
    const QRegularExpressionMatch m = conversion.match(labelFormat);
    if (!m.hasMatch()) return 0.0;
    const QChar letter = m.captured(2).front();
    if (letter == QLatin1Char('d') || letter == QLatin1Char('i') || letter == QLatin1Char('u')) return 1.0;
    if (letter == QLatin1Char('f') || letter == QLatin1Char('F')) {
        const int decimals = m.capturedStart(1) >= 0 ? m.captured(1).toInt() : 6;   // "%f" has 6, "%.f" 0
        return std::pow(10.0, -decimals);
    }
    return 0.0;
}

void fitTicksToLabels(QValueAxis* axis)
{
    // Ticks at round values, as a reader counts: multiples of 1, 2 or 5 times a power of ten
    // (25.5 / 19.1 / 12.8 / 6.38 had to be decoded), at most one more than the axis' tick
    // count, each a value its labels write exactly ("%d": whole numbers, so never five
    // labels "0 0 0 0 1"; on a log2 axis written "2^%d" whole powers of two).
    const double resolution = labelResolution(axis->labelFormat());
    const double low = axis->min(), high = axis->max(), span = high - low;
    const int most = std::max(2, axis->tickCount()) + 1;
    auto writable = [&](double v) {
        if (resolution <= 0) return true;
        const double units = v / resolution;
        return std::abs(units - std::round(units)) <= 1e-9 + 1e-12 * std::abs(units);
    };
    double interval = 0;
    if (span > 0 && std::isfinite(span)) {
        double decade = std::pow(10.0, std::floor(std::log10(std::max(span / (most - 1), resolution))));
        for (int decades = 0; decades < 4 && interval == 0; ++decades, decade *= 10)
            for (double m : {1.0, 2.0, 5.0}) {
                const double candidate = m * decade;
                if (candidate < resolution * (1 - 1e-9) || !writable(candidate)) continue;
                if (std::floor(high / candidate + 1e-9) - std::ceil(low / candidate - 1e-9) + 1 <= most) {
                    interval = candidate;
                    break;
                }
            }
    }
    if (interval == 0) {   // an empty or infinite range: the even ticks
        if (axis->tickType() != QValueAxis::TicksFixed) axis->setTickType(QValueAxis::TicksFixed);
        return;
    }
    // Interval before type: the interval always belongs to the range shown.
    axis->setTickAnchor(0.0);   // ticks at multiples of the interval: 0 is one when in range
    axis->setTickInterval(interval);
    if (axis->tickType() != QValueAxis::TicksDynamic) axis->setTickType(QValueAxis::TicksDynamic);
}

int pixelColumns(const QChart* chart)
{
    qreal width = chart->plotArea().width();
    if (width < 100) width = 800;   // not laid out yet (hidden, offscreen before the first show)
    qreal ratio = 1.0;
    if (const auto* scene = chart->scene(); scene && !scene->views().isEmpty())
        ratio = scene->views().first()->devicePixelRatioF();
    // One column per three device pixels: with first/min/max/last per column that is still
    // more than a point per pixel and every spike stays; QtCharts strokes each series'
    // outline on every replace (for its hover shape), so points cost even when not painted.
    return std::max(100, static_cast<int>(std::ceil(width * std::clamp(ratio, 1.0, 2.0) / 3.0)));
}

double roundUpForAxis(double x)
{
    if (!(x > 0) || !std::isfinite(x)) return 1.0;
    static constexpr double kSteps[] = {1.0, 1.2, 1.6, 2.0, 2.4, 3.2, 4.0, 4.8, 6.0, 8.0, 10.0};
    const double decade = std::pow(10.0, std::floor(std::log10(x)));
    for (double m : kSteps)
        if (m * decade >= x * (1 - 1e-12)) return m * decade;
    return 10.0 * decade;
}

void setStableRange(QValueAxis* axis, double low, double high, double fill)
{
    if (axis->property(kUserZoomProperty).toBool()) return;   // the user's zoom stays
    if (!(high > low)) high = low + 1.0;
    const double shown = axis->max() - low;
    if (axis->min() == low && high <= axis->max() && high - low >= fill * shown) return;
    // A little past the data, rounded, so steady growth moves the range rarely.
    setAxisRange(axis, low, low + roundUpForAxis((high - low) * 1.02));
}

}  // namespace plab::ui
