// The format explorer's row for one format (see format_row.h).
#include "explorer/format_row.h"

#include "explorer/bit_pattern.h"

#include <QEvent>
#include <QGridLayout>
#include <QLabel>

#include <algorithm>
#include <cmath>

namespace plab::ui {

namespace {

QString shortNumber(double x)
{
    if (std::isnan(x)) return QStringLiteral("—");
    if (std::isinf(x)) return x > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(x, 'g', 6);
}

// A long digit string with a zero-width space every `group` characters, where the label may
// break it (an fp32 subnormal's exact expansion is a hundred digits without a space). Up to
// `whole` characters it stays one word: it moves to the next line as a whole instead.
QString breakableDigits(const QString& digits, int whole = 32, int group = 16)
{
    if (digits.size() <= whole) return digits;
    QString out;
    out.reserve(digits.size() + digits.size() / group);
    for (qsizetype i = 0; i < digits.size(); ++i) {
        if (i > 0 && i % group == 0) out += QChar(0x200b);
        out += digits[i];
    }
    return out;
}

}  // namespace

FormatRow::FormatRow(Format format, QWidget* parent) : QFrame(parent), format_(format)
{
    setObjectName(QStringLiteral("formatRow_%1").arg(QString::fromLatin1(formatName(format).data())));
    setFrameShape(QFrame::StyledPanel);
    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    layout->setVerticalSpacing(2);

    name_ = new QLabel(QStringLiteral("<b>%1</b>").arg(QString::fromLatin1(formatName(format).data())), this);
    layout->addWidget(name_, 0, 0, 2, 1, Qt::AlignTop);
    fitNameColumn();

    bits_ = new BitPattern(format, this);
    connect(bits_, &BitPattern::bitClicked, this, [this](int bit) {
        emit valuePicked(flipBit(format_, anatomy_.value, bit));
    });
    layout->addWidget(bits_, 0, 1);

    value_ = new QLabel(this);
    value_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value_->setWordWrap(true);
    layout->addWidget(value_, 1, 1);
    details_ = new QLabel(this);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    details_->setWordWrap(true);
    layout->addWidget(details_, 2, 1);
    formula_ = new QLabel(this);
    formula_->setObjectName(QStringLiteral("fieldFormula"));
    formula_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    formula_->setWordWrap(true);
    layout->addWidget(formula_, 3, 1);
    layout->setColumnStretch(1, 1);
}

void FormatRow::fitNameColumn()
{
    // As wide as the widest format name in bold, so that the four rows' bits line up.
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics fm(bold);
    int widest = 0;
    for (const FormatInfo& info : formats()) {
        const QString name = QString::fromLatin1(info.name.data(), static_cast<qsizetype>(info.name.size()));
        widest = std::max(widest, fm.horizontalAdvance(name));
    }
    name_->setMinimumWidth(widest + 2);
}

void FormatRow::changeEvent(QEvent* event)
{
    QFrame::changeEvent(event);
    if (event->type() == QEvent::FontChange) fitNameColumn();
}

void FormatRow::setAnatomy(const FormatAnatomy& a)
{
    anatomy_ = a;
    bits_->setPattern(a.pattern);
    QString exact = a.exact;
    if (exact.size() > 90) exact = exact.left(44) + QStringLiteral("…") + exact.right(44);
    value_->setText(tr("<b>%1</b> = %2&nbsp;&nbsp; exactly %3")
                        .arg(a.shown, powerOfTwoForm(a.value).toHtmlEscaped(), breakableDigits(exact)));
    value_->setToolTip(a.exact);
    // "spacing ↓a ↑b" wraps as one piece (no-break spaces).
    details_->setText(tr("%1 · error %2 · spacing\u00a0↓%3\u00a0↑%4")
                          .arg(QString::fromLatin1(valueClassName(a.valueClass).data()), shortNumber(a.error),
                               shortNumber(a.spacingDown), shortNumber(a.spacingUp)));
    // Two lines: the fields, then the formula (each wraps at its spaces when narrow).
    formula_->setText(fieldFormula(format_, a.value));
}

QToolButton* FormatRow::bitButton(int bit) const { return bits_->bitButton(bit); }
QString FormatRow::valueText() const { return QString(value_->text()).remove(QChar(0x200b)); }
QString FormatRow::detailsText() const { return details_->text(); }
QString FormatRow::formulaText() const { return formula_->text(); }

void FormatRow::setFocusFormat(bool focus)
{
    setFrameShadow(focus ? QFrame::Sunken : QFrame::Plain);
    setLineWidth(focus ? 2 : 1);
    name_->setText(focus ? QStringLiteral("<b><u>%1</u></b>").arg(QString::fromLatin1(formatName(format_).data()))
                         : QStringLiteral("<b>%1</b>").arg(QString::fromLatin1(formatName(format_).data())));
}

}  // namespace plab::ui
