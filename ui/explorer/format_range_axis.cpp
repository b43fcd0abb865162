// Drawing the formats' ranges on one log2 axis (see format_range_axis.h).
#include "explorer/format_range_axis.h"

#include "explorer/format_anatomy.h"

#include <QPainter>
#include <QPainterPath>

#include <cmath>

namespace plab::ui {

namespace {

constexpr int kAxisMin = -150;   // log2 of the axis ends: fp32's smallest subnormal is 2^-149
constexpr int kAxisMax = 130;    // and its largest value just under 2^128
constexpr int kLabelWidth = 48;
constexpr int kRowHeight = 18;

}  // namespace

FormatRangeAxis::FormatRangeAxis(QWidget* parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("formatRangeAxis"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QSize FormatRangeAxis::sizeHint() const
{
    return {520, 4 * kRowHeight + 2 * fontMetrics().height() + 16};
}
QSize FormatRangeAxis::minimumSizeHint() const { return {300, sizeHint().height()}; }

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
    const int plotLeft = kLabelWidth;
    const int plotWidth = std::max(50, width() - plotLeft - 8);
    auto xOf = [&](double log2Value) {
        return plotLeft + plotWidth * (log2Value - kAxisMin) / double(kAxisMax - kAxisMin);
    };
    const int top = fontMetrics().height() + 4;

    if (interval_) {
        p.fillRect(QRectF(xOf(*interval_), top - 2, std::max(2.0, xOf(*interval_ + 1) - xOf(*interval_)),
                          4 * kRowHeight + 4),
                   QColor(0xf0, 0xad, 0x4e, 160));
    }
    int row = 0;
    for (Format f : kExplorerFormats) {
        const FormatInfo& info = formatInfo(f);
        const int y = top + row * kRowHeight;
        p.setPen(pal.color(QPalette::WindowText));
        p.drawText(QRect(0, y, kLabelWidth - 4, kRowHeight), Qt::AlignRight | Qt::AlignVCenter,
                   QString::fromLatin1(info.name.data()));
        const double maxLog2 = std::log2(info.maxFinite);
        const QRectF subnormal(xOf(info.minSubnormalLog2), y + 4, xOf(info.minNormalLog2) - xOf(info.minSubnormalLog2),
                               kRowHeight - 8);
        const QRectF normal(xOf(info.minNormalLog2), y + 4, xOf(maxLog2) - xOf(info.minNormalLog2), kRowHeight - 8);
        p.fillRect(subnormal, QColor(0x9b, 0x59, 0xb6, 150));
        p.fillRect(normal, QColor(0x3c, 0x8d, 0xd9, 200));
        p.setPen(pal.color(QPalette::WindowText));
        const QString labels = tr("2^%1 … 2^%2 … %3").arg(info.minSubnormalLog2).arg(info.minNormalLog2)
                                   .arg(info.maxFinite, 0, 'g', 5);
        p.drawText(QRectF(normal.right() + 4, y, 400, kRowHeight), Qt::AlignLeft | Qt::AlignVCenter, labels);
        ++row;
    }
    // Axis ticks every 2^25 or so, at round exponents.
    const int axisY = top + 4 * kRowHeight + 2;
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(QPointF(xOf(kAxisMin), axisY), QPointF(xOf(kAxisMax), axisY));
    p.setPen(pal.color(QPalette::WindowText));
    for (int e = -150; e <= 125; e += 25) {
        const double x = xOf(e);
        p.drawLine(QPointF(x, axisY), QPointF(x, axisY + 4));
        p.drawText(QRectF(x - 30, axisY + 4, 60, fontMetrics().height()), Qt::AlignHCenter, QStringLiteral("2^%1").arg(e));
    }
    p.drawText(QRect(0, 0, width(), fontMetrics().height() + 2), Qt::AlignLeft,
               tr("log2 axis: subnormal (violet), normal (blue), max; orange: picked bin; red line: the number"));
    if (hasMarker_) {
        p.setPen(QPen(QColor(0xd9, 0x53, 0x4f), 2));
        const double x = xOf(markerLog2_);
        p.drawLine(QPointF(x, top - 2), QPointF(x, axisY));
    }
}

}  // namespace plab::ui
