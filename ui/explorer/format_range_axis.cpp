// Drawing the formats' ranges on one log2 axis (see format_range_axis.h).
#include "explorer/format_range_axis.h"

#include "explorer/format_anatomy.h"
#include "numerics/minifloat.h"
#include "telemetry/format_regions.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

namespace {

constexpr int kAxisMin = -150;   // log2 of the axis ends: fp32's smallest subnormal is 2^-149
constexpr int kAxisMax = 130;    // and its largest value just under 2^128
constexpr int kLastTick = 128;
constexpr int kTickSpacings[] = {10, 25, 50, 100, 150};   // powers of two between labels

// The regions' colours of the histograms (telemetry/format_regions.h), denser: here they
// are bars of their own, not shading over a plot.
QColor barColor(const RegionStyle& r, int alpha) { return QColor(r.red, r.green, r.blue, alpha); }
const QColor kSubnormalColor = barColor(kRegionStyles[1], 170);
const QColor kNormalColor = barColor(kRegionStyles[2], 210);
const QColor kIntervalColor(0xf0, 0xad, 0x4e, 160);
const QColor kMarkerColor(0xd9, 0x53, 0x4f);

QString tickText(int exponent) { return QStringLiteral("2^%1").arg(exponent); }

}  // namespace

FormatRangeAxis::FormatRangeAxis(QWidget* parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("formatRangeAxis"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

const QList<FormatRangeAxis::Range>& FormatRangeAxis::ranges()
{
    static const QList<Range> all = [] {
        QList<Range> out;
        for (const FormatInfo& info : formats())
            out.append({QString::fromLatin1(info.name.data(), static_cast<int>(info.name.size())), info.minSubnormalLog2,
                        info.minNormalLog2, info.maxFinite});
        for (const MiniFormatInfo& info : miniFormats()) {
            out.append({QString::fromLatin1(info.name.data(), static_cast<int>(info.name.size())), info.minSubnormalLog2,
                        info.minNormalLog2, info.maxFinite});
        }
        return out;
    }();
    return all;
}

double FormatRangeAxis::Geometry::xOf(double log2Value) const
{
    return plotLeft + plotWidth * (log2Value - kAxisMin) / double(kAxisMax - kAxisMin);
}

FormatRangeAxis::Geometry FormatRangeAxis::geometry() const
{
    const QFontMetrics fm = fontMetrics();
    Geometry g{};
    for (const Range& r : ranges()) g.labelColumn = std::max(g.labelColumn, fm.horizontalAdvance(r.name));
    g.labelColumn += fm.averageCharWidth();
    g.rowHeight = fm.height() + 6;   // a bar that holds a line of text, 2 px apart
    g.plotLeft = g.labelColumn + 2;
    // Room on the right for half of a label at the end.
    g.plotWidth = std::max(50, width() - g.plotLeft - fm.horizontalAdvance(tickText(kLastTick)) / 2);
    g.top = 2;
    g.axisY = g.top + static_cast<int>(ranges().size()) * g.rowHeight + 2;
    return g;
}

QSize FormatRangeAxis::sizeHint() const
{
    const Geometry g = geometry();
    return {420, g.axisY + 5 + fontMetrics().height() + 2};
}

QSize FormatRangeAxis::minimumSizeHint() const
{
    // Labels 100 powers of two apart (2^-100, 2^0, 2^100) still fit: see tickLabels().
    const QFontMetrics fm = fontMetrics();
    const int label = fm.horizontalAdvance(tickText(kAxisMin)), gap = fm.horizontalAdvance(QStringLiteral("  "));
    const int plot = (label + gap) * (kAxisMax - kAxisMin) / 100 + 1;
    return {geometry().plotLeft + plot + fm.horizontalAdvance(tickText(kLastTick)) / 2, sizeHint().height()};
}

QString FormatRangeAxis::legendText()
{
    auto swatch = [](const QColor& c) { return QStringLiteral("<span style=\"color:%1\">■</span>").arg(c.name()); };
    return tr("log2 axis. Each bar: %1 subnormal from the smallest subnormal, %2 normal from the smallest normal to "
              "the largest finite value (the three numbers written beside it). %3 picked histogram bin, %4 the number.")
        .arg(swatch(kSubnormalColor), swatch(kNormalColor), swatch(kIntervalColor),
             QStringLiteral("<span style=\"color:%1\"><b>|</b></span>").arg(kMarkerColor.name()));
}

QList<FormatRangeAxis::TickLabel> FormatRangeAxis::tickLabels() const
{
    const Geometry g = geometry();
    const QFontMetrics fm = fontMetrics();
    const int gap = fm.horizontalAdvance(QStringLiteral("  "));
    const int widest = fm.horizontalAdvance(tickText(kAxisMin));
    const double pixelsPerPower = g.plotWidth / double(kAxisMax - kAxisMin);
    int spacing = kTickSpacings[std::size(kTickSpacings) - 1];
    for (int s : kTickSpacings)
        if (s * pixelsPerPower >= widest + gap) {
            spacing = s;
            break;
        }
    QList<TickLabel> labels;
    const int labelY = g.axisY + 5;
    int lastRight = std::numeric_limits<int>::min() / 2;
    for (int e = -(-kAxisMin / spacing) * spacing; e <= kLastTick; e += spacing) {
        const int w = fm.horizontalAdvance(tickText(e));
        QRect r(static_cast<int>(std::lround(g.xOf(e))) - w / 2, labelY, w, fm.height());
        r.moveLeft(std::clamp(r.left(), 0, std::max(0, width() - w)));   // the end labels stay inside
        if (r.left() < lastRight + gap) continue;   // a safety net: the spacing keeps them apart
        labels.append({e, r});
        lastRight = r.right();
    }
    return labels;
}

void FormatRangeAxis::setMarker(double value)
{
    const double magnitude = std::fabs(value);
    hasMarker_ = std::isfinite(magnitude) && magnitude > 0.0;
    markerLog2_ = hasMarker_ ? std::log2(magnitude) : 0.0;
    update();
}

void FormatRangeAxis::setInterval(std::optional<int> exponent)
{
    interval_ = exponent;
    update();
}

void FormatRangeAxis::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette& pal = palette();
    const QFontMetrics fm = fontMetrics();
    const Geometry g = geometry();
    struct Bars {
        int y;   // the row's top
        QRectF subnormal, normal;
    };
    auto barsOf = [&](int row) {
        const Range& info = ranges()[row];
        const int y = g.top + row * g.rowHeight;
        const double top = y + 2, height = g.rowHeight - 4;
        const double subnormal = g.xOf(info.minSubnormalLog2), normal = g.xOf(info.minNormalLog2);
        return Bars{y, QRectF(subnormal, top, normal - subnormal, height),
                    QRectF(normal, top, g.xOf(std::log2(info.maxFinite)) - normal, height)};
    };
    const int rows = static_cast<int>(ranges().size());

    // The picked bin, the bars, the marker, then the texts: they stay readable over the line.
    if (interval_) {
        p.fillRect(QRectF(g.xOf(*interval_), g.top, std::max(4.0, g.xOf(*interval_ + 1) - g.xOf(*interval_)),
                          g.axisY - g.top),
                   kIntervalColor);
    }
    for (int row = 0; row < rows; ++row) {
        const Bars bars = barsOf(row);
        p.fillRect(bars.subnormal, kSubnormalColor);
        p.fillRect(bars.normal, kNormalColor);
    }
    if (hasMarker_) {
        p.setPen(QPen(kMarkerColor, 2));
        const double x = g.xOf(markerLog2_);
        p.drawLine(QPointF(x, g.top), QPointF(x, g.axisY));
    }
    for (int row = 0; row < rows; ++row) {
        const Range& info = ranges()[row];
        const Bars bars = barsOf(row);
        p.setPen(pal.color(QPalette::WindowText));
        p.drawText(QRect(0, bars.y, g.labelColumn, g.rowHeight), Qt::AlignRight | Qt::AlignVCenter, info.name);
        // The three numbers where they fit: right of the bar, inside its normal part (white
        // on green), or left of it; failing all, the largest value alone.
        const QString max = QString::number(info.maxFinite, 'g', 5);
        for (const QString& text : {tr("2^%1 … 2^%2 … %3").arg(info.minSubnormalLog2).arg(info.minNormalLog2).arg(max), max}) {
            const int w = fm.horizontalAdvance(text) + 2;
            double left = 0;
            QColor color = pal.color(QPalette::WindowText);
            if (bars.normal.right() + 4 + w <= width()) {
                left = bars.normal.right() + 4;
            } else if (bars.normal.width() >= w + 8) {
                left = bars.normal.left() + 4;
                color = Qt::white;
            } else if (bars.subnormal.left() - 4 - w >= g.plotLeft) {
                left = bars.subnormal.left() - 4 - w;
            } else {
                continue;
            }
            p.setPen(color);
            p.drawText(QRectF(left, bars.y, w, g.rowHeight), Qt::AlignLeft | Qt::AlignVCenter, text);
            break;
        }
    }

    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(QPointF(g.xOf(kAxisMin), g.axisY), QPointF(g.xOf(kAxisMax), g.axisY));
    p.setPen(pal.color(QPalette::WindowText));
    for (const TickLabel& t : tickLabels()) {
        const double x = g.xOf(t.exponent);
        p.drawLine(QPointF(x, g.axisY), QPointF(x, g.axisY + 4));
        p.drawText(t.rect, Qt::AlignCenter, tickText(t.exponent));
    }
}

}  // namespace plab::ui
