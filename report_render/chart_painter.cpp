// Painting of report charts: layout (title, plot, axis labels, legend), axis mapping and
// ticks, lines with gaps, histogram step outlines, x bands, bars. See chart_painter.h.
#include "chart_painter.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double toAxis(AxisScale s, double v)
{
    switch (s) {
    case AxisScale::linear: return v;
    case AxisScale::log2: return v > 0 ? std::log2(v) : kNaN;
    case AxisScale::log10: return v > 0 ? std::log10(v) : kNaN;
    }
    return v;
}

// An axis in its own units (log units for log scales), mapped onto [p0, p1] pixels.
struct Axis {
    AxisScale scale = AxisScale::linear;
    double lo = 0.0, hi = 1.0;
    double p0 = 0.0, p1 = 1.0;
    double map(double value) const { return mapAxis(toAxis(scale, value)); }
    double mapAxis(double a) const { return p0 + (a - lo) / (hi - lo) * (p1 - p0); }
};

struct Tick {
    double at;       // axis units
    QString text;
};

QString numberLabel(double v)
{
    if (v == 0.0) return QStringLiteral("0");
    const double a = std::fabs(v);
    if (a >= 1e5 || a < 1e-3) return QString::number(v, 'g', 2);
    return QString::number(v, 'g', 6);
}

std::vector<Tick> linearTicks(double lo, double hi, int wanted)
{
    const double span = hi - lo;
    const double raw = span / std::max(1, wanted);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * mag >= raw) { step = m * mag; break; }
    std::vector<Tick> ticks;
    for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
        const double clean = std::fabs(v) < step * 1e-9 ? 0.0 : v;
        ticks.push_back({clean, numberLabel(clean)});
    }
    return ticks;
}

std::vector<Tick> logTicks(const Axis& axis, int wanted)
{
    const int first = static_cast<int>(std::ceil(axis.lo - 1e-9));
    const int last = static_cast<int>(std::floor(axis.hi + 1e-9));
    const int every = std::max(1, (last - first) / std::max(1, wanted) + ((last - first) % std::max(1, wanted) ? 1 : 0));
    std::vector<Tick> ticks;
    for (int e = first; e <= last; ++e) {
        if ((e - first) % every) continue;
        const QString base = axis.scale == AxisScale::log2 ? QStringLiteral("2") : QStringLiteral("10");
        ticks.push_back({double(e), e == 0 ? QStringLiteral("1") : base + QChar(0x5E) + QString::number(e)});
    }
    return ticks;
}

std::vector<Tick> ticksOf(const Axis& axis, int wanted)
{
    return axis.scale == AxisScale::linear ? linearTicks(axis.lo, axis.hi, wanted) : logTicks(axis, wanted);
}

// Range of the finite axis values of `values`, or [0, 1] when there are none.
std::pair<double, double> rangeOf(const std::vector<double>& axisValues)
{
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double v : axisValues)
        if (std::isfinite(v)) { lo = std::min(lo, v); hi = std::max(hi, v); }
    if (!std::isfinite(lo)) return {0.0, 1.0};
    if (lo == hi) { lo -= 0.5; hi += 0.5; }
    return {lo, hi};
}

struct LegendEntry {
    QString text;
    QColor color;
    enum class Shape { line, box, cross } shape;
};

// Draws the legend wrapped into rows inside `area` (top-aligned); returns its height.
double paintLegend(QPainter& p, const QRectF& area, const std::vector<LegendEntry>& entries, bool draw)
{
    const QFontMetricsF fm(p.font());
    const double rowH = fm.height() + 4, swatch = 18;
    double x = area.left(), y = area.top();
    for (const auto& e : entries) {
        const double w = swatch + 6 + fm.horizontalAdvance(e.text) + 16;
        if (x + w > area.right() && x > area.left()) { x = area.left(); y += rowH; }
        if (draw) {
            const double cy = y + rowH / 2;
            p.save();
            switch (e.shape) {
            case LegendEntry::Shape::line: p.setPen(QPen(e.color, 2.5)); p.drawLine(QPointF(x, cy), QPointF(x + swatch, cy)); break;
            case LegendEntry::Shape::box: p.setPen(Qt::NoPen); p.setBrush(e.color); p.drawRect(QRectF(x + 3, cy - 6, 12, 12)); break;
            case LegendEntry::Shape::cross:
                p.setPen(QPen(e.color, 2));
                p.drawLine(QPointF(x + 5, cy - 4), QPointF(x + 13, cy + 4));
                p.drawLine(QPointF(x + 5, cy + 4), QPointF(x + 13, cy - 4));
                break;
            }
            p.restore();
            p.drawText(QPointF(x + swatch + 6, y + fm.ascent() + 2), e.text);
        }
        x += w;
    }
    return entries.empty() ? 0.0 : y - area.top() + rowH;
}

std::vector<LegendEntry> legendOf(const ChartSpec& spec)
{
    std::vector<LegendEntry> entries;
    for (const auto& b : spec.bands)
        if (!b.label.isEmpty()) entries.push_back({b.label, b.color, LegendEntry::Shape::box});
    if (spec.kind == ChartSpec::Kind::bars) {
        for (const auto& s : spec.barSets) entries.push_back({s.name, s.color, LegendEntry::Shape::box});
        return entries;
    }
    for (const auto& s : spec.series)
        if (!s.name.isEmpty()) entries.push_back({s.name, s.color, LegendEntry::Shape::line});
    for (const auto& s : spec.series)
        if (!s.markers.isEmpty() && !s.markerName.isEmpty())
            entries.push_back({s.markerName, s.color, LegendEntry::Shape::cross});
    return entries;
}

void paintLines(QPainter& p, const QRectF& plot, const ChartSpec& spec, const Axis& xa, const Axis& ya)
{
    p.save();
    p.setClipRect(plot.adjusted(-1, -1, 1, 1));
    for (const auto& band : spec.bands) {
        const double x0 = std::clamp(xa.mapAxis(std::max(toAxis(xa.scale, band.from), xa.lo - 1)), plot.left(), plot.right());
        const double x1 = std::clamp(xa.mapAxis(std::min(toAxis(xa.scale, band.to), xa.hi + 1)), plot.left(), plot.right());
        if (x1 > x0) p.fillRect(QRectF(x0, plot.top(), x1 - x0, plot.height()), band.color);
    }
    for (const auto& s : spec.series) {
        QPainterPath path;
        bool open = false;
        if (s.histogramSteps) {
            for (const auto& pt : s.points) {
                const double y = ya.map(pt.y());
                const double yy = std::isfinite(y) ? y : ya.p0;   // an empty bin sits on the axis
                const double xl = xa.map(pt.x()), xr = xa.map(pt.x() + 1);
                if (!open) { path.moveTo(xl, ya.p0); open = true; }
                path.lineTo(xl, yy);
                path.lineTo(xr, yy);
            }
            if (open) path.lineTo(path.currentPosition().x(), ya.p0);
            QColor fill = s.color;
            fill.setAlpha(45);
            p.fillPath(path, fill);
        } else {
            for (const auto& pt : s.points) {
                const double x = xa.map(pt.x()), y = ya.map(pt.y());
                if (!std::isfinite(x) || !std::isfinite(y)) { open = false; continue; }
                if (open) path.lineTo(x, y);
                else { path.moveTo(x, y); open = true; }
            }
        }
        p.setPen(QPen(s.color, 1.8, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
        p.setBrush(Qt::NoBrush);
        p.drawPath(path);
        if (!s.histogramSteps && s.points.size() <= 12)   // few points (evaluations): show them
            for (const auto& pt : s.points) {
                const double x = xa.map(pt.x()), y = ya.map(pt.y());
                if (std::isfinite(x) && std::isfinite(y)) { p.setBrush(s.color); p.drawEllipse(QPointF(x, y), 3.2, 3.2); }
            }
        p.setPen(QPen(s.color.darker(130), 2));
        for (const auto& m : s.markers) {
            const double x = xa.map(m.x()), y = ya.map(m.y());
            if (!std::isfinite(x) || !std::isfinite(y)) continue;
            p.drawLine(QPointF(x - 4, y - 4), QPointF(x + 4, y + 4));
            p.drawLine(QPointF(x - 4, y + 4), QPointF(x + 4, y - 4));
        }
    }
    p.restore();
}

void paintBars(QPainter& p, const QRectF& plot, const ChartSpec& spec, const Axis& ya)
{
    const int nCat = spec.categories.size();
    const int nSet = static_cast<int>(spec.barSets.size());
    if (nCat == 0 || nSet == 0) return;
    const double slot = plot.width() / nCat;
    const double groupW = slot * 0.8;
    const double barW = spec.stacked ? groupW * 0.6 : groupW / nSet;
    const QFontMetricsF fm(p.font());
    for (int c = 0; c < nCat; ++c) {
        const double groupLeft = plot.left() + c * slot + (slot - groupW) / 2;
        double stackTop = 0.0;
        for (int s = 0; s < nSet; ++s) {
            const double v = c < spec.barSets[s].values.size() ? spec.barSets[s].values[c] : kNaN;
            if (!std::isfinite(v)) continue;
            const double base = spec.stacked ? stackTop : 0.0;
            const double top = base + v;
            const double x = spec.stacked ? groupLeft + (groupW - barW) / 2 : groupLeft + s * barW;
            const QRectF bar(QPointF(x + 1, ya.map(top)), QPointF(x + barW - 1, ya.map(base)));
            p.fillRect(bar.normalized(), spec.barSets[s].color);
            if (spec.stacked) stackTop = top;
            else {
                const QStringList& labels = spec.barSets[s].labels;
                const QString text = c < labels.size() ? labels[c] : QString::number(v, 'g', spec.valueDecimals) + spec.valueSuffix;
                p.save();
                p.translate(bar.center().x() + fm.ascent() / 2 - 2, bar.top() - 3);
                p.rotate(-90);
                p.drawText(QPointF(0, 0), text);
                p.restore();
            }
        }
        if (spec.stacked && c < spec.stackMarks.size() && std::isfinite(spec.stackMarks[c])) {
            const double y = ya.map(spec.stackMarks[c]);
            const double left = groupLeft + (groupW - barW) / 2 - 6;
            p.save();
            p.setPen(QPen(Qt::black, 2));
            p.drawLine(QPointF(left, y), QPointF(left + barW + 12, y));
            p.restore();
        }
        if (spec.stacked && stackTop > 0) {
            const QString text = c < spec.stackLabels.size() ? spec.stackLabels[c]
                                                             : QString::number(stackTop, 'g', spec.valueDecimals + 1) + spec.valueSuffix;
            p.drawText(QRectF(groupLeft - slot * 0.1, ya.map(stackTop) - fm.height() - 2, groupW + slot * 0.2, fm.height()),
                       Qt::AlignCenter, text);
        }
        const QString cat = fm.elidedText(spec.categories[c], Qt::ElideRight, slot - 4);
        p.drawText(QRectF(plot.left() + c * slot, plot.bottom() + 4, slot, fm.height()), Qt::AlignHCenter | Qt::AlignTop, cat);
    }
}

}  // namespace

bool linesCoincide(const QVector<QPointF>& a, const QVector<QPointF>& b, double tolerance)
{
    if (a.size() < 2 || a.size() != b.size()) return false;
    for (qsizetype i = 0; i < a.size(); ++i) {
        if (a[i].x() != b[i].x()) return false;
        const double ya = a[i].y(), yb = b[i].y();
        if (std::isnan(ya) != std::isnan(yb)) return false;
        if (!std::isnan(ya) && std::abs(ya - yb) > tolerance) return false;
    }
    return true;
}

QStringList wrapText(const QString& text, const QFontMetricsF& fm, double width)
{
    QStringList lines;
    for (const QString& paragraph : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        QString line;
        for (const QString& word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
                lines << line;
                line = word;   // a word wider than the line stands alone on its own line
            } else {
                line = longer;
            }
        }
        if (!line.isEmpty()) lines << line;
    }
    return lines;
}

QColor seriesColor(int index)
{
    static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xd6, 0x27, 0x28), QColor(0x2c, 0xa0, 0x2c),
                                     QColor(0xff, 0x7f, 0x0e), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                     QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                                     QColor(0x17, 0xbe, 0xcf)};
    return palette[index % 10];
}

void paintChart(QPainter& p, const QRectF& area, const ChartSpec& spec)
{
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(area, Qt::white);
    QFont base(QStringLiteral("DejaVu Sans"));
    base.setPixelSize(11);
    QFont titleFont = base;
    titleFont.setPixelSize(14);
    titleFont.setBold(true);
    p.setFont(base);
    const QFontMetricsF fm(base);
    p.setPen(Qt::black);

    // Vertical layout: title, plot, x tick labels + x label, note, legend.
    const double titleH = QFontMetricsF(titleFont).height() + 8;
    const auto legend = legendOf(spec);
    const QRectF legendArea(area.left() + 60, 0, area.width() - 76, 1e6);
    const double legendH = paintLegend(p, legendArea, legend, false);
    // The note is wrapped at spaces to the plot's width, each line drawn apart, never cut.
    const double plotWidth = area.width() - 64 - 16;
    const QStringList noteLines = wrapText(spec.note, fm, plotWidth);
    const double noteH = noteLines.isEmpty() ? 0.0 : fm.height() * noteLines.size() + 2;
    const double xLabelsH = fm.height() * 2 + 10;
    const QRectF plot(area.left() + 64, area.top() + titleH + 6, plotWidth,
                      area.height() - titleH - 6 - xLabelsH - noteH - legendH - 8);

    p.setFont(titleFont);
    p.drawText(QRectF(area.left() + 8, area.top() + 4, area.width() - 16, titleH), Qt::AlignLeft | Qt::AlignVCenter, spec.title);
    p.setFont(base);

    // Axes from the data (in axis units).
    Axis xa{spec.xScale}, ya{spec.yScale};
    std::vector<double> xs, ys;
    if (spec.kind == ChartSpec::Kind::lines) {
        for (const auto& s : spec.series) {
            for (const auto& pt : s.points) {
                xs.push_back(toAxis(spec.xScale, pt.x()));
                if (s.histogramSteps) xs.push_back(toAxis(spec.xScale, pt.x() + 1));
                ys.push_back(toAxis(spec.yScale, pt.y()));
            }
            for (const auto& m : s.markers) ys.push_back(toAxis(spec.yScale, m.y()));
        }
    } else {
        ys.push_back(0.0);
        for (int c = 0; c < spec.categories.size(); ++c) {
            double stack = 0.0;
            for (const auto& s : spec.barSets) {
                const double v = c < s.values.size() ? s.values[c] : kNaN;
                if (!std::isfinite(v)) continue;
                stack = spec.stacked ? stack + v : v;
                ys.push_back(stack);
            }
        }
    }
    std::tie(xa.lo, xa.hi) = rangeOf(xs);
    std::tie(ya.lo, ya.hi) = rangeOf(ys);
    // Bars that are all 0 stand on an axis from 0 (not one centred on 0, with negative ticks).
    if (spec.kind == ChartSpec::Kind::bars && !(ya.hi > 0.0)) std::tie(ya.lo, ya.hi) = std::pair{0.0, 1.0};
    if (spec.yScale == AxisScale::linear) {
        const double pad = (ya.hi - ya.lo) * (spec.kind == ChartSpec::Kind::bars ? 0.22 : 0.05);
        ya.hi += pad;
        if (ya.lo != 0.0 || spec.kind != ChartSpec::Kind::bars) ya.lo -= spec.kind == ChartSpec::Kind::bars ? 0.0 : pad;
    } else {
        ya.lo = std::floor(ya.lo - 0.25);
        ya.hi = std::ceil(ya.hi + 0.25);
    }
    if (spec.xMin) xa.lo = toAxis(spec.xScale, *spec.xMin);
    if (spec.xMax) xa.hi = toAxis(spec.xScale, *spec.xMax);
    if (spec.yMin) ya.lo = toAxis(spec.yScale, *spec.yMin);
    if (spec.yMax) ya.hi = toAxis(spec.yScale, *spec.yMax);
    xa.p0 = plot.left();
    xa.p1 = plot.right();
    ya.p0 = plot.bottom();
    ya.p1 = plot.top();

    // Grid and ticks.
    p.setPen(QPen(QColor(0xe2, 0xe2, 0xe2), 1));
    const auto yTicks = ticksOf(ya, std::max(3, int(plot.height() / 45)));
    for (const auto& t : yTicks) {
        const double y = ya.mapAxis(t.at);
        if (y < plot.top() - 0.5 || y > plot.bottom() + 0.5) continue;
        p.setPen(QPen(QColor(0xe2, 0xe2, 0xe2), 1));
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
        p.setPen(Qt::black);
        p.drawText(QRectF(area.left(), y - fm.height() / 2, 60, fm.height()), Qt::AlignRight | Qt::AlignVCenter, t.text);
    }
    if (spec.kind == ChartSpec::Kind::lines) {
        const auto xTicks = ticksOf(xa, std::max(3, int(plot.width() / 80)));
        for (const auto& t : xTicks) {
            const double x = xa.mapAxis(t.at);
            if (x < plot.left() - 0.5 || x > plot.right() + 0.5) continue;
            p.setPen(QPen(QColor(0xe2, 0xe2, 0xe2), 1));
            p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
            p.setPen(Qt::black);
            p.drawText(QRectF(x - 40, plot.bottom() + 4, 80, fm.height()), Qt::AlignHCenter | Qt::AlignTop, t.text);
        }
        paintLines(p, plot, spec, xa, ya);
    } else {
        p.setPen(Qt::black);
        paintBars(p, plot, spec, ya);
    }
    p.setPen(QPen(QColor(0x55, 0x55, 0x55), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);

    // Axis labels, note, legend.
    p.setPen(Qt::black);
    p.drawText(QRectF(plot.left(), plot.bottom() + 4 + fm.height(), plot.width(), fm.height() + 4), Qt::AlignHCenter, spec.xLabel);
    p.save();
    p.translate(area.left() + fm.height() * 0.2, plot.center().y());
    p.rotate(-90);
    p.drawText(QRectF(-plot.height() / 2, 0, plot.height(), fm.height() + 2), Qt::AlignHCenter | Qt::AlignTop, spec.yLabel);
    p.restore();
    double y = plot.bottom() + xLabelsH;
    if (!noteLines.isEmpty()) {
        p.setPen(QColor(0x44, 0x44, 0x44));
        for (const QString& line : noteLines) {
            p.drawText(QRectF(plot.left(), y, plot.width(), fm.height()), Qt::AlignLeft, line);
            y += fm.height();
        }
        p.setPen(Qt::black);
        y += 2;
    }
    paintLegend(p, QRectF(area.left() + 60, y + 2, area.width() - 76, legendH), legend, true);
    p.restore();
}

}  // namespace plab::report
