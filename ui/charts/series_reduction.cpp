// Min/max per pixel column reduction over a span of points (see series_reduction.h).
#include "charts/series_reduction.h"

#include <limits>

namespace plab::ui {

QList<QPointF> reduceMinMaxPerColumn(std::span<const QPointF> points, int columns)
{
    return reduceMinMaxPerColumn(
        points.size(), [&](std::size_t i) { return points[i].x(); }, [&](std::size_t i) { return points[i].y(); },
        columns);
}

}  // namespace plab::ui

namespace plab::ui {

std::vector<double> exponentialMovingAverage(std::span<const double> values, double weight)
{
    std::vector<double> out(values.size(), std::numeric_limits<double>::quiet_NaN());
    double average = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (!std::isfinite(values[i])) continue;
        average = weight * average + (1.0 - weight) * values[i];
        norm = weight * norm + (1.0 - weight);
        out[i] = average / norm;
    }
    return out;
}

}  // namespace plab::ui
