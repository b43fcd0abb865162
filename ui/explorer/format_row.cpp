// The format explorer's row for one format (see format_row.h).
#include "explorer/format_row.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

#include <cmath>

namespace plab::ui {

namespace {

// Field colours that read on light and dark palettes: sign, exponent, mantissa.
const QColor kSignColor(0xd9, 0x53, 0x4f);
const QColor kExponentColor(0x3c, 0x8d, 0xd9);
const QColor kMantissaColor(0x4c, 0xae, 0x4f);

QString numberText(double x)
{
    if (std::isnan(x)) return QStringLiteral("—");
    if (std::isinf(x)) return x > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(x, 'g', 6);
}

}  // namespace

FormatRow::FormatRow(Format format, QWidget* parent) : QFrame(parent), format_(format)
{
    setObjectName(QStringLiteral("formatRow_%1").arg(QString::fromLatin1(formatName(format).data())));
    setFrameShape(QFrame::StyledPanel);
    const FormatInfo& info = formatInfo(format);
    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    layout->setVerticalSpacing(2);

    name_ = new QLabel(QStringLiteral("<b>%1</b>").arg(QString::fromLatin1(info.name.data())), this);
    name_->setMinimumWidth(44);
    layout->addWidget(name_, 0, 0, 2, 1, Qt::AlignTop);

    auto* bitsLayout = new QHBoxLayout;
    bitsLayout->setSpacing(0);
    const int width = patternWidth(format);
    bits_.resize(width);
    for (int bit = width - 1; bit >= 0; --bit) {
        auto* b = new QToolButton(this);
        b->setCheckable(true);
        b->setAutoRaise(false);
        // Compact enough that fp32's 32 bits fit a dock of ~560 px.
        b->setFixedSize(14, 20);
        const bool sign = bit == width - 1;
        const bool exponent = !sign && bit >= info.mantissaBits;
        const QColor c = sign ? kSignColor : exponent ? kExponentColor : kMantissaColor;
        b->setStyleSheet(QStringLiteral("QToolButton { border: 1px solid %1; border-radius: 2px; padding: 0px; font-family: monospace; }"
                                        "QToolButton:checked { background: %1; color: white; }")
                             .arg(c.name()));
        b->setToolTip(sign ? tr("sign bit") : exponent ? tr("exponent bit %1").arg(bit - info.mantissaBits)
                                                         : tr("mantissa bit %1").arg(bit));
        connect(b, &QToolButton::clicked, this, [this, bit] {
            emit valuePicked(flipBit(format_, anatomy_.value, bit));
        });
        bits_[bit] = b;
        bitsLayout->addWidget(b);
        if (sign || bit == info.mantissaBits) bitsLayout->addSpacing(4);   // gaps between the fields
    }
    bitsLayout->addStretch(1);
    layout->addLayout(bitsLayout, 0, 1);

    value_ = new QLabel(this);
    value_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value_->setWordWrap(true);
    layout->addWidget(value_, 1, 1);
    details_ = new QLabel(this);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(details_, 2, 1);
    layout->setColumnStretch(1, 1);
}

void FormatRow::setAnatomy(const FormatAnatomy& a)
{
    anatomy_ = a;
    for (int bit = 0; bit < bits_.size(); ++bit) {
        const bool on = (a.pattern >> bit) & 1u;
        bits_[bit]->setChecked(on);
        bits_[bit]->setText(on ? QStringLiteral("1") : QStringLiteral("0"));
    }
    QString exact = a.exact;
    if (exact.size() > 90) exact = exact.left(44) + QStringLiteral("…") + exact.right(44);
    value_->setText(tr("<b>%1</b>&nbsp;&nbsp; exactly %2").arg(a.shortest, exact));
    value_->setToolTip(a.exact);
    details_->setText(tr("%1 · error %2 · spacing ↓%3 ↑%4")
                          .arg(QString::fromLatin1(valueClassName(a.valueClass).data()), numberText(a.error),
                               numberText(a.spacingDown), numberText(a.spacingUp)));
}

QToolButton* FormatRow::bitButton(int bit) const { return bits_.value(bit); }
QString FormatRow::valueText() const { return value_->text(); }
QString FormatRow::detailsText() const { return details_->text(); }

void FormatRow::setFocusFormat(bool focus)
{
    setFrameShadow(focus ? QFrame::Sunken : QFrame::Plain);
    setLineWidth(focus ? 2 : 1);
    name_->setText(focus ? QStringLiteral("<b><u>%1</u></b>").arg(QString::fromLatin1(formatName(format_).data()))
                         : QStringLiteral("<b>%1</b>").arg(QString::fromLatin1(formatName(format_).data())));
}

}  // namespace plab::ui
