// One format's bit pattern in the format explorer as toggle buttons: sign, exponent and
// mantissa coloured apart with a gap between the fields, each button sized to the font.
// When the row is too narrow for all bits on one line, a field that fits on a line of its
// own moves to the next line (fp32's mantissa under its sign and exponent); a field wider
// than a whole line breaks between bits. So the pattern never needs more width than a few
// bits, in a narrow dock or at presentation mode's large font.
#pragma once

#include "numerics/format.h"

#include <QList>
#include <QWidget>

#include <algorithm>
#include <cstdint>

QT_BEGIN_NAMESPACE
class QToolButton;
QT_END_NAMESPACE

namespace plab::ui {

class BitPattern : public QWidget {
    Q_OBJECT
public:
    explicit BitPattern(Format format, QWidget* parent = nullptr);

    void setPattern(std::uint32_t pattern);   // FormatInfo::bits() of the format
    QToolButton* bitButton(int bit) const;    // 0 = last mantissa bit
    int lineCount() const;                    // lines at the current width

    QSize sizeHint() const override;          // every bit on one line
    QSize minimumSizeHint() const override;   // kMinimumBits bits a line
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

    static constexpr int kMinimumBits = 8;

signals:
    void bitClicked(int bit);

protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    // Where each button goes at `width` (index = bit); returns the height used.
    int place(int width, QList<QPoint>* at) const;
    void relayout();
    QSize cell() const;   // one button: a digit and its border
    int fieldGap() const { return std::max(3, cell().width() / 3); }

    Format format_;
    QList<QToolButton*> bits_;   // index = bit number
};

}  // namespace plab::ui
