// Reduction of long x-sorted series for drawing: per pixel column keep the first, the
// minimum, the maximum and the last point (PlotJuggler's practice), so a 100,000-step run
// draws a few thousand points and every spike stays visible (extrema are kept exactly).
// Pure functions over plain points; no widgets.
#pragma once

#include <QList>
#include <QPointF>

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace plab::ui {

// Series with at most this many points per column are passed through unreduced.
inline constexpr int kPointsPerColumn = 4;

// Reduces n x-sorted points given by accessors xAt(i), yAt(i) (doubles) to at most
// 4 * columns points. Points whose y is NaN (or infinite) are skipped. When the finite
// points number at most 4 * columns, they are returned unchanged, in order.
template <class XAt, class YAt>
QList<QPointF> reduceMinMaxPerColumn(std::size_t n, XAt&& xAt, YAt&& yAt, int columns)
{
    if (columns < 1) columns = 1;
    QList<QPointF> out;
    std::size_t finite = 0, first = n, last = n;
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(static_cast<double>(yAt(i)))) continue;
        ++finite;
        if (first == n) first = i;
        last = i;
    }
    if (finite == 0) return out;
    const std::size_t cap = static_cast<std::size_t>(columns) * kPointsPerColumn;
    if (finite <= cap) {
        out.reserve(static_cast<qsizetype>(finite));
        for (std::size_t i = first; i <= last; ++i) {
            const double y = static_cast<double>(yAt(i));
            if (std::isfinite(y)) out.append(QPointF(static_cast<double>(xAt(i)), y));
        }
        return out;
    }

    out.reserve(static_cast<qsizetype>(cap));
    const double x0 = static_cast<double>(xAt(first));
    const double span = static_cast<double>(xAt(last)) - x0;
    const double perX = span > 0 ? columns / span : 0.0;
    auto columnOf = [&](double x) {
        const auto c = static_cast<long long>((x - x0) * perX);
        return c < 0 ? 0LL : (c >= columns ? static_cast<long long>(columns) - 1 : c);
    };

    // The column being gathered: indices of its first, min, max and last points.
    long long column = -1;
    std::size_t cFirst = 0, cMin = 0, cMax = 0, cLast = 0;
    auto flush = [&] {
        if (column < 0) return;
        std::size_t picks[4] = {cFirst, cMin < cMax ? cMin : cMax, cMin < cMax ? cMax : cMin, cLast};
        std::size_t previous = n;
        for (std::size_t p : picks) {
            if (p == previous) continue;
            out.append(QPointF(static_cast<double>(xAt(p)), static_cast<double>(yAt(p))));
            previous = p;
        }
    };
    for (std::size_t i = first; i <= last; ++i) {
        const double y = static_cast<double>(yAt(i));
        if (!std::isfinite(y)) continue;
        const long long c = columnOf(static_cast<double>(xAt(i)));
        if (c != column) {
            flush();
            column = c;
            cFirst = cMin = cMax = cLast = i;
            continue;
        }
        if (y < static_cast<double>(yAt(cMin))) cMin = i;
        if (y > static_cast<double>(yAt(cMax))) cMax = i;
        cLast = i;
    }
    flush();
    return out;
}

// The same over a span of x-sorted points.
QList<QPointF> reduceMinMaxPerColumn(std::span<const QPointF> points, int columns);

}  // namespace plab::ui
