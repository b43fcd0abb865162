// The ranges of fp32, tf32, fp16 and bf16, and below them of the formats below 16 bits
// (E4M3, E5M2, FP6 E2M3 and E3M2, FP4 E2M1: the FP8 and MX recipes' elements), on one log2
// axis, drawn with QPainter: per format a bar from the smallest subnormal through the smallest normal to the largest
// finite value with those three numbers written beside or inside it where they fit, a
// marker where the explorer's number lies, and optionally a shaded interval (a picked
// histogram bin [2^e, 2^(e+1))). Everything is sized to the font; the axis labels every
// 10, 25, 50, 100 or 150 powers of two, whichever is the closest spacing at which no two
// labels touch at the current width. The legend is the explorer's caption above it.
#pragma once

#include <QList>
#include <QRect>
#include <QWidget>

#include <optional>

namespace plab::ui {

class FormatRangeAxis : public QWidget {
    Q_OBJECT
public:
    explicit FormatRangeAxis(QWidget* parent = nullptr);

    void setMarker(double value);                    // |value| is marked; 0 / inf / NaN: none
    void setInterval(std::optional<int> exponent);   // [2^e, 2^(e+1)) shaded, or nothing
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    // The axis labels at the current width: 2^exponent written in rect.
    struct TickLabel {
        int exponent;
        QRect rect;
    };
    QList<TickLabel> tickLabels() const;
    // The caption that explains the colours (rich text), for the label above the axis.
    static QString legendText();

    // One bar: a format's name and range.
    struct Range {
        QString name;
        int minSubnormalLog2;
        int minNormalLog2;
        double maxFinite;
    };
    // The bars, top to bottom: the explorer's formats, then those below 16 bits.
    static const QList<Range>& ranges();

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    struct Geometry {
        int labelColumn;   // the format names
        int rowHeight;
        int plotLeft, plotWidth;
        int top, axisY;    // the first bar's row, the axis line
        double xOf(double log2Value) const;
    };
    Geometry geometry() const;

    double markerLog2_ = 0.0;
    bool hasMarker_ = false;
    std::optional<int> interval_;
};

}  // namespace plab::ui
