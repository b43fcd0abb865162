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
