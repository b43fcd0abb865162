// The ranges of fp32, tf32, fp16 and bf16 on one log2 axis, drawn with QPainter: per
// format a bar from the smallest subnormal through the smallest normal to the largest
// finite value, a marker where the explorer's number lies, and optionally a shaded
// interval (a picked histogram bin [2^e, 2^(e+1))).
#pragma once

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

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    double markerLog2_ = 0.0;
    bool hasMarker_ = false;
    std::optional<int> interval_;
};

}  // namespace plab::ui
