// One format's row in the format explorer: its name, the bit pattern as toggle buttons
// (BitPattern: sign, exponent and mantissa fields coloured apart; clicking one flips that
// bit), the rounded value (shortest decimal, m x 2^e and exact decimal), the rounding
// error, the spacing to the neighbours and the class, and the fields read as the formula
// (-1)^s x 1.m x 2^(e - bias) (0.m and 1 - bias for a subnormal). Everything wraps to the row's width: the bits by field,
// the texts by word (long exact decimals between digits).
#pragma once

#include "explorer/format_anatomy.h"

#include <QFrame>

QT_BEGIN_NAMESPACE
class QLabel;
class QToolButton;
QT_END_NAMESPACE

namespace plab::ui {

class BitPattern;

class FormatRow : public QFrame {
    Q_OBJECT
public:
    explicit FormatRow(Format format, QWidget* parent = nullptr);

    void setAnatomy(const FormatAnatomy& anatomy);
    Format format() const { return format_; }
    const FormatAnatomy& anatomy() const { return anatomy_; }
    // The toggle for bit `bit` of the pattern (0 = last mantissa bit), for tests.
    QToolButton* bitButton(int bit) const;
    BitPattern* bitPattern() const { return bits_; }
    QString valueText() const;
    QString detailsText() const;
    QString formulaText() const;   // the fields and (-1)^s x 1.m x 2^(e - bias)
    void setFocusFormat(bool focus);   // the worked example's format is highlighted

signals:
    // The user flipped a bit: the new value, exact in this format.
    void valuePicked(double value);

protected:
    void changeEvent(QEvent* event) override;

private:
    void fitNameColumn();

    Format format_;
    FormatAnatomy anatomy_{};
    BitPattern* bits_;
    QLabel* name_;
    QLabel* value_;
    QLabel* details_;
    QLabel* formula_;
};

}  // namespace plab::ui
