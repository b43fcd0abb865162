// The arithmetic behind the format explorer (see format_anatomy.h). Rounding is the
// engine's: roundDoubleTo, fp32ToFp16Bits, fp32ToBf16Bits, shortestDecimal.
#include "explorer/format_anatomy.h"

#include "charts/histogram_regions.h"
#include "numerics/number_text.h"

#include <QObject>

#include <cmath>
#include <cstdio>
#include <limits>

namespace plab::ui {

int patternWidth(Format f)
{
    const FormatInfo& info = formatInfo(f);
    return 1 + info.exponentBits + info.mantissaBits;
}

namespace {

constexpr int kTf32DroppedBits = 13;   // a tf32 value is an fp32 pattern with the low 13 bits zero

std::uint32_t patternOf(Format f, float exactValue)
{
    switch (f) {
    case Format::fp32: return bitsOf(exactValue);
    case Format::tf32: return bitsOf(exactValue) >> kTf32DroppedBits;
    case Format::fp16: return fp32ToFp16Bits(exactValue);
    case Format::bf16: return fp32ToBf16Bits(exactValue);
    }
    return 0;
}

// Distance between consecutive values of f at magnitudes in [2^e, 2^(e+1)), e clamped
// to the normal range (subnormals are evenly spaced like the smallest normal binade).
double spacingAtExponent(const FormatInfo& info, int e)
{
    return std::ldexp(1.0, std::max(e, info.minNormalLog2) - info.mantissaBits);
}

}  // namespace

float valueFromPattern(Format f, std::uint32_t pattern)
{
    switch (f) {
    case Format::fp32: return floatFromBits(pattern);
    case Format::tf32: return floatFromBits(pattern << kTf32DroppedBits);
    case Format::fp16: return fp16BitsToFp32(static_cast<std::uint16_t>(pattern));
    case Format::bf16: return bf16BitsToFp32(static_cast<std::uint16_t>(pattern));
    }
    return 0.0f;
}

float flipBit(Format f, float value, int bit)
{
    return valueFromPattern(f, patternOf(f, roundTo(f, value)) ^ (std::uint32_t{1} << bit));
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
    a.pattern = patternOf(f, a.value);
    a.valueClass = classify(f, a.value);
    a.shortest = QString::fromStdString(shortestDecimal(f, a.value));
    a.exact = exactDecimal(a.value);
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
