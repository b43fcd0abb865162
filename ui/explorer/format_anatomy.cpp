// The arithmetic behind the format explorer (see format_anatomy.h). Rounding is the
// engine's: roundDoubleTo, fp32ToFp16Bits, fp32ToBf16Bits, shortestDecimal.
#include "explorer/format_anatomy.h"

#include "telemetry/format_regions.h"
#include "numerics/number_text.h"

#include <QObject>
#include <QRegularExpression>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace plab::ui {

namespace {

// Distance between consecutive values of f at magnitudes in [2^e, 2^(e+1)), e clamped
// to the normal range (subnormals are evenly spaced like the smallest normal binade).
double spacingAtExponent(const FormatInfo& info, int e)
{
    return std::ldexp(1.0, std::max(e, info.minNormalLog2) - info.mantissaBits);
}

}  // namespace

float flipBit(Format f, float value, int bit)
{
    return decodeBits(f, encodeBits(f, roundTo(f, value)) ^ (std::uint32_t{1} << bit));
}

QString exactDecimal(double x)
{
    if (std::isnan(x)) return QStringLiteral("nan");
    if (std::isinf(x)) return x > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    if (x == 0.0) return std::signbit(x) ? QStringLiteral("-0") : QStringLiteral("0");
    // x = m * 2^e with m odd needs exactly -e digits after the point when e < 0; glibc's
    // printf prints binary values exactly, so "%.*f" with that many digits is the
    // exact expansion.
    int e2 = 0;
    std::frexp(x, &e2);   // |x| = m * 2^e2, m in [0.5, 1): the last significand bit is 2^(e2 - 53)
    const int fractionDigits = std::max(0, std::numeric_limits<double>::digits - e2);
    char buffer[1200];
    std::snprintf(buffer, sizeof buffer, "%.*f", fractionDigits, x);
    QString text = QString::fromLatin1(buffer);
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0'))) text.chop(1);
        if (text.endsWith(QLatin1Char('.'))) text.chop(1);
    }
    return text;
}

FormatAnatomy describe(Format f, double input)
{
    const FormatInfo& info = formatInfo(f);
    FormatAnatomy a;
    a.format = f;
    a.input = input;
    a.value = roundDoubleTo(f, input);
    a.pattern = encodeBits(f, a.value);
    a.valueClass = classify(f, a.value);
    a.shortest = QString::fromStdString(shortestDecimal(f, a.value));
    a.exact = exactDecimal(a.value);
    int significant = 0;
    bool leading = true;
    for (const QChar c : a.exact) {
        if (!c.isDigit()) continue;
        if (leading && c == QLatin1Char('0')) continue;
        leading = false;
        ++significant;
    }
    // Trailing zeros of a whole number are not significant (65536000 has 5).
    if (!a.exact.contains(QLatin1Char('.')))
        for (qsizetype i = a.exact.size() - 1; i >= 0 && a.exact[i] == QLatin1Char('0') && significant > 1; --i) --significant;
    a.shown = !std::isfinite(a.value) || significant <= 9 ? a.exact : QStringLiteral("≈") + a.shortest;
    const double v = a.value;
    a.error = std::isfinite(v) && std::isfinite(input) ? v - input : std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(v)) {
        a.spacingUp = a.spacingDown = std::numeric_limits<double>::quiet_NaN();
    } else if (v == 0.0) {
        a.spacingUp = std::ldexp(1.0, info.minSubnormalLog2);
        a.spacingDown = 0.0;
    } else {
        const int e = std::ilogb(v);
        a.spacingUp = spacingAtExponent(info, e);
        // At a power of two the values below are twice as dense (in the normal range).
        const bool powerOfTwo = std::fabs(v) == std::ldexp(1.0, e);
        a.spacingDown = powerOfTwo ? spacingAtExponent(info, e - 1) : a.spacingUp;
        if (std::fabs(v) == info.maxFinite) a.spacingUp = std::numeric_limits<double>::infinity();
    }
    return a;
}

QVector<WorkedExample> workedExamples()
{
    return {
        {QObject::tr("1 + 0.0001 in fp16"), 1.0001, Format::fp16,
         QObject::tr("Next to 1, fp16 values are 2^-10 ≈ 0.000977 apart: 1.0001 rounds back to 1, the addition is lost.")},
        {QObject::tr("65504: largest fp16"), 65504.0, Format::fp16,
         QObject::tr("(2 - 2^-10) × 2^15 = 65504, the largest finite fp16: all exponent bits but the last set, the mantissa full.")},
        {QObject::tr("65520: rounds to inf in fp16"), 65520.0, Format::fp16,
         QObject::tr("65520 lies halfway between 65504 and 65536 (which fp16 cannot hold): the tie goes to the even pattern, infinity.")},
        {QObject::tr("2^-24: smallest fp16 subnormal"), std::ldexp(1.0, -24), Format::fp16,
         QObject::tr("2^-24 ≈ 5.96e-8 is the smallest positive fp16: exponent field 0, only the last mantissa bit set.")},
        {QObject::tr("2^-25: rounds to 0 in fp16"), std::ldexp(1.0, -25), Format::fp16,
         QObject::tr("Exactly half of 2^-24: the tie goes to the even pattern, zero. A gradient this small underflows.")},
        {QObject::tr("Weight 2048 × update: w + u = w"), 1.0 + std::ldexp(1.0, -11), Format::fp16,
         QObject::tr("w = 1, u = 1/2048: w + u is halfway to fp16's next value 1 + 2^-10 and rounds back to w; the update is lost (fp32 keeps it).")},
    };
}

int scaleShiftBins(double currentScale, double newScale)
{
    if (!(currentScale > 0.0) || !(newScale > 0.0) || !std::isfinite(currentScale) || !std::isfinite(newScale)) return 0;
    return static_cast<int>(std::lround(std::log2(newScale / currentScale)));
}

}  // namespace plab::ui

namespace plab::ui {

ParsedNumber parseExplorerNumber(const QString& text, Format sixteenBit)
{
    ParsedNumber out;
    QString t = text.trimmed();
    auto fail = [&](const QString& why) {
        out.error = why;
        return out;
    };
    if (t.isEmpty()) return fail(QObject::tr("Type a number: 1.5, -3.5e-8, 2^-25, 1.5 x 2^-3, inf, or a bit pattern such as 0x3c00."));
    static const QRegularExpression hex(QStringLiteral("^0[xX]([0-9a-fA-F]+)$"));
    if (const QRegularExpressionMatch m = hex.match(t); m.hasMatch()) {
        const QString digits = m.captured(1);
        std::optional<Format> f;
        if (digits.size() == 8) f = Format::fp32;
        else if (digits.size() == 5) f = Format::tf32;
        else if (digits.size() == 4) f = sixteenBit;
        if (!f)
            return fail(QObject::tr("“%1” has %2 hex digits: a bit pattern has 8 (fp32), 5 (tf32) or 4 (%3).")
                            .arg(t).arg(digits.size()).arg(QString::fromLatin1(formatName(sixteenBit).data())));
        const std::uint32_t bits = digits.toUInt(nullptr, 16);
        if (*f == Format::tf32 && bits >= (std::uint32_t{1} << formatInfo(Format::tf32).bits()))
            return fail(QObject::tr("“%1” is wider than tf32's 19 bits (at most 0x7ffff).").arg(t));
        out.value = static_cast<double>(decodeBits(*f, bits));
        out.pattern = f;
        return out;
    }
    // m x 2^e, 2^e: the multiplication sign may be x, X, ×, * or ·, spaces anywhere.
    static const QRegularExpression power(QStringLiteral(
        "^([+-]?)\\s*(?:((?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?)\\s*[xX×*·]\\s*)?2\\s*\\^\\s*\\(?\\s*([+-]?\\d{1,5})\\s*\\)?$"));
    if (const QRegularExpressionMatch m = power.match(t); m.hasMatch()) {
        const double mantissa = m.captured(2).isEmpty() ? 1.0 : m.captured(2).toDouble();
        const int exponent = m.captured(3).toInt();
        if (exponent < -1100 || exponent > 1100)
            return fail(QObject::tr("“%1”: 2^%2 is beyond any format here (exponents -1100 to 1100 are read).").arg(t).arg(exponent));
        const double v = std::ldexp(mantissa, exponent);
        out.value = m.captured(1) == QLatin1String("-") ? -v : v;
        return out;
    }
    const std::string s = t.toStdString();
    const std::optional<float> parsed = parseFp32Text(s);
    if (!parsed)
        return fail(QObject::tr("“%1” is not a number: type a decimal (1.5, -3.5e-8, inf, nan), a power of two "
                                "(2^-25, 1.5 x 2^-3) or a bit pattern (0x3c00, 0x3f800000).").arg(text.trimmed()));
    out.value = std::isfinite(*parsed) ? std::strtod(s.c_str(), nullptr) : static_cast<double>(*parsed);
    return out;
}

QString powerOfTwoForm(double value)
{
    if (std::isnan(value)) return QStringLiteral("nan");
    if (std::isinf(value)) return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    if (value == 0.0) return std::signbit(value) ? QStringLiteral("-0") : QStringLiteral("0");
    int e = 0;
    const double m = std::frexp(value, &e) * 2.0;   // 1 <= |m| < 2
    return QStringLiteral("%1 × 2^%2").arg(exactDecimal(m)).arg(e - 1);
}

MiniAnatomy describeMini(MiniFormat f, float value)
{
    const MiniFormatInfo& info = miniFormatInfo(f);
    MiniAnatomy a;
    a.format = f;
    const auto bits = encodeMini(f, value, Overflow::saturate);
    if (!bits) {
        a.value = std::numeric_limits<float>::quiet_NaN();
        a.pattern = QStringLiteral("—");
        a.kind = QObject::tr("not representable");
        a.error = std::numeric_limits<double>::quiet_NaN();
        return a;
    }
    a.value = decodeMini(f, *bits);
    QString text;
    for (int bit = info.bits() - 1; bit >= 0; --bit) {
        text += ((*bits >> bit) & 1u) ? QLatin1Char('1') : QLatin1Char('0');
        if (bit == info.bits() - 1 || bit == info.mantissaBits) text += QLatin1Char('.');
    }
    a.pattern = text;
    const double magnitude = std::fabs(static_cast<double>(a.value));
    // Saturated: rounded at the top binade's quantum without an upper bound, the value
    // would lie past the largest finite one (as the quantisers count overflow).
    const double quantum = std::ldexp(1.0, std::ilogb(info.maxFinite) - info.mantissaBits);
    const bool clipped = std::isfinite(value) &&
                         std::nearbyint(std::fabs(static_cast<double>(value)) / quantum) * quantum > info.maxFinite;
    a.kind = std::isnan(a.value)                          ? QObject::tr("nan")
             : clipped                                    ? QObject::tr("saturated")
             : a.value == 0.0f                            ? QObject::tr("zero")
             : magnitude < std::ldexp(1.0, info.minNormalLog2) ? QObject::tr("subnormal")
                                                               : QObject::tr("normal");
    const bool bothFinite = std::isfinite(value) && std::isfinite(a.value);
    a.error = bothFinite ? static_cast<double>(a.value) - static_cast<double>(value) : std::numeric_limits<double>::quiet_NaN();
    const float other = roundToMini(f, value, Overflow::nonFinite);
    if (std::isnan(other) && !std::isnan(a.value)) a.nonSaturating = QStringLiteral("NaN");
    else if (std::isinf(other) && !std::isinf(a.value)) a.nonSaturating = other > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return a;
}

QString fieldFormula(Format f, float value)
{
    const FormatInfo& info = formatInfo(f);
    const std::uint32_t pattern = encodeBits(f, roundTo(f, value));
    const int E = info.exponentBits, M = info.mantissaBits;
    const int bias = (1 << (E - 1)) - 1;
    const std::uint32_t sign = pattern >> (E + M);
    const std::uint32_t exponent = (pattern >> M) & ((std::uint32_t{1} << E) - 1);
    const std::uint32_t mantissa = pattern & ((std::uint32_t{1} << M) - 1);
    auto bitsText = [](std::uint32_t v, int width) {
        return QStringLiteral("%1").arg(v, width, 2, QLatin1Char('0'));
    };
    const QString fields = QObject::tr("sign %1 · exponent %2 (%3) · mantissa %4")
                               .arg(sign)
                               .arg(bitsText(exponent, E))
                               .arg(exponent)
                               .arg(bitsText(mantissa, M));
    // The mantissa bits with a subscript 2 (binary). Appended, not in the tr() text: QString::arg
    // reads a digit-valued "₂" after "%2" as part of the placeholder number.
    const QString m = bitsText(mantissa, M) + QChar(0x2082);
    QString formula;
    const std::uint32_t allOnes = (std::uint32_t{1} << E) - 1;
    if (exponent == allOnes)
        formula = mantissa == 0 ? QObject::tr("exponent all ones, mantissa 0: %1inf").arg(sign ? QStringLiteral("-") : QString())
                                : QObject::tr("exponent all ones, mantissa not 0: NaN");
    else if (exponent == 0 && mantissa == 0)
        formula = QObject::tr("exponent and mantissa 0: %1zero").arg(sign ? QStringLiteral("-") : QStringLiteral("+"));
    else if (exponent == 0)
        formula = QObject::tr("subnormal (exponent field 0): (-1)^%1 × 0.%2 × 2^(1 - %3) = %4")
                      .arg(sign).arg(m).arg(bias).arg(powerOfTwoForm(roundTo(f, value)));
    else
        formula = QObject::tr("(-1)^%1 × 1.%2 × 2^(%3 - %4) = %5")
                      .arg(sign).arg(m).arg(exponent).arg(bias).arg(powerOfTwoForm(roundTo(f, value)));
    return fields + QLatin1Char('\n') + formula;
}

}  // namespace plab::ui
