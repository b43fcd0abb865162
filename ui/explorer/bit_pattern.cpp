// The format explorer's bit toggles, laid out to the width they get (see bit_pattern.h).
#include "explorer/bit_pattern.h"

#include "explorer/format_anatomy.h"

#include <QEvent>
#include <QPainter>
#include <QToolButton>

namespace plab::ui {

namespace {

// Field colours that read on light and dark palettes.
const QColor kSignColor(0xd9, 0x53, 0x4f);
const QColor kExponentColor(0x3c, 0x8d, 0xd9);
const QColor kMantissaColor(0x4c, 0xae, 0x4f);

// A bit painted in its field's colour: outlined when 0, filled when 1. Painted here, not by
// a style sheet: a widget with a style sheet misses its parent's font changes (presentation
// mode's large font), and its polish costs more than this.
class BitToggle : public QToolButton {
public:
    BitToggle(const QColor& color, QWidget* parent) : QToolButton(parent), color_(color)
    {
        setCheckable(true);
        setAttribute(Qt::WA_Hover);   // repaint on entering and leaving
    }

protected:
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing);
        QColor fill = color_;
        if (!isChecked()) fill.setAlpha(underMouse() ? 60 : 0);
        p.setPen(QPen(color_, hasFocus() ? 2.0 : 1.0));
        p.setBrush(fill);
        p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 2, 2);
        p.setPen(isChecked() ? QColor(Qt::white) : palette().color(QPalette::WindowText));
        p.drawText(rect(), Qt::AlignCenter, text());
    }

private:
    QColor color_;
};

}  // namespace

BitPattern::BitPattern(Format format, QWidget* parent) : QWidget(parent), format_(format)
{
    setObjectName(QStringLiteral("bitPattern_%1").arg(QString::fromLatin1(formatName(format).data())));
    const FormatInfo& info = formatInfo(format);
    const int width = formatInfo(format).bits();
    bits_.resize(width);
    for (int bit = width - 1; bit >= 0; --bit) {
        const bool sign = bit == width - 1;
        const bool exponent = !sign && bit >= info.mantissaBits;
        auto* b = new BitToggle(sign ? kSignColor : exponent ? kExponentColor : kMantissaColor, this);
        b->setToolTip(sign ? tr("sign bit") : exponent ? tr("exponent bit %1").arg(bit - info.mantissaBits)
                                                         : tr("mantissa bit %1").arg(bit));
        connect(b, &QToolButton::clicked, this, [this, bit] { emit bitClicked(bit); });
        bits_[bit] = b;
    }
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    relayout();
}

void BitPattern::setPattern(std::uint32_t pattern)
{
    for (int bit = 0; bit < bits_.size(); ++bit) {
        const bool on = (pattern >> bit) & 1u;
        bits_[bit]->setChecked(on);
        bits_[bit]->setText(on ? QStringLiteral("1") : QStringLiteral("0"));
    }
}

QToolButton* BitPattern::bitButton(int bit) const { return bits_.value(bit); }

QSize BitPattern::cell() const
{
    // The buttons have this widget's font; digits have one width in text fonts.
    const QFontMetrics fm = fontMetrics();
    const int digit = std::max(fm.horizontalAdvance(QLatin1Char('0')), fm.horizontalAdvance(QLatin1Char('1')));
    return {digit + 4, fm.height() + 3};   // 1 px border and 1 px padding a side
}

int BitPattern::place(int width, QList<QPoint>* at) const
{
    const FormatInfo& info = formatInfo(format_);
    const QSize c = cell();
    const int lineStep = c.height() + 2;
    width = std::max(width, c.width());
    if (at) at->resize(bits_.size());
    int x = 0, y = 0, bit = static_cast<int>(bits_.size()) - 1;
    for (int n : {1, info.exponentBits, info.mantissaBits}) {
        // A field that fits on a line of its own is not split across lines.
        const int fieldWidth = n * c.width();
        if (x > 0 && x + fieldWidth > width && fieldWidth <= width) x = 0, y += lineStep;
        for (int i = 0; i < n; ++i, --bit) {
            if (x > 0 && x + c.width() > width) x = 0, y += lineStep;
            if (at) (*at)[bit] = QPoint(x, y);
            x += c.width();
        }
        x += fieldGap();
    }
    return y + c.height();
}

int BitPattern::lineCount() const
{
    return (place(width(), nullptr) + 2) / (cell().height() + 2);
}

QSize BitPattern::sizeHint() const
{
    const QSize c = cell();
    return {static_cast<int>(bits_.size()) * c.width() + 2 * fieldGap(), c.height()};
}

QSize BitPattern::minimumSizeHint() const { return {kMinimumBits * cell().width(), cell().height()}; }

int BitPattern::heightForWidth(int width) const { return place(width, nullptr); }

void BitPattern::relayout()
{
    QList<QPoint> at;
    place(width(), &at);
    const QSize c = cell();
    for (int bit = 0; bit < bits_.size(); ++bit) bits_[bit]->setGeometry(QRect(at[bit], c));
}

void BitPattern::resizeEvent(QResizeEvent*) { relayout(); }

void BitPattern::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        updateGeometry();
        relayout();
    }
}

}  // namespace plab::ui
