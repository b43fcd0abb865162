// Tests of the scalar format conversions (numerics/format.h): exhaustive fp16/bf16 round
// trips, every tie and boundary case, and an independent IEEE reference over random inputs.
// links: plab_numerics
#include "numerics/format.h"

#include <QTest>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

using namespace plab;

namespace {

QString hex(std::uint32_t bits, int digits = 8)
{
    return QStringLiteral("0x%1").arg(bits, digits, 16, QLatin1Char('0'));
}

Format formatFromName(const QString& name)
{
    const auto f = parseFormat(name.toStdString());
    if (!f) qFatal("unknown format in test data: %s", qPrintable(name));
    return *f;
}

// --- An independent reference, from the IEEE 754 definition, computed in double. -----
// Every fp32 input and every value of the reduced formats is exact in double, and so are
// the scalings by powers of two and the distances below, so the comparisons are exact.
struct ReferenceFormat {
    int precision;    // significand bits including the leading one
    int minNormalExp; // exponent of the smallest normal
    int maxExp;       // exponent of the largest finite binade
    bool tiesAway;    // tf32; the others round ties to even
};

ReferenceFormat referenceFormat(Format f)
{
    switch (f) {
    case Format::fp16: return {11, -14, 15, false};
    case Format::bf16: return {8, -126, 127, false};
    case Format::tf32: return {11, -126, 127, true};
    case Format::fp32: return {24, -126, 127, false};
    }
    return {};
}

// The representable value nearest to x (x finite, not NaN), chosen between the two
// neighbours that bracket |x| by comparing distances; ties by the format's rule.
double referenceRound(Format f, double x)
{
    const ReferenceFormat r = referenceFormat(f);
    if (x == 0.0 || std::isinf(x)) return x;
    const double magnitude = std::fabs(x);
    const int exponent = std::max(std::ilogb(magnitude), r.minNormalExp);
    const double ulp = std::ldexp(1.0, exponent - (r.precision - 1));
    const double below = std::trunc(magnitude / ulp) * ulp;  // neighbour towards zero
    const double above = below + ulp;                         // neighbour away from zero
    const double distBelow = magnitude - below;
    const double distAbove = above - magnitude;
    double nearest;
    if (distBelow < distAbove) {
        nearest = below;
    } else if (distAbove < distBelow) {
        nearest = above;
    } else if (r.tiesAway) {
        nearest = above;
    } else {  // tie: the neighbour whose last significand bit is 0
        nearest = std::fmod(below / ulp, 2.0) == 0.0 ? below : above;
    }
    // Overflow: rounded with unbounded exponent, then beyond the largest finite value.
    const double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - r.precision), r.maxExp);
    if (nearest > maxFinite) nearest = INFINITY;
    return std::copysign(nearest, x);
}

// Random fp32 patterns over all exponents, with extra weight on the cases that matter:
// fp16's exponent range, exact ties of each format, and sparse mantissas (ties among
// subnormals).
std::uint32_t randomPattern(std::mt19937& rng, std::uint32_t kind)
{
    std::uint32_t u = rng();
    switch (kind % 4) {
    case 0: return u;  // uniform over all patterns: every exponent, NaNs, infs
    case 1: return (u & 0x807FFFFFu) | ((95u + (u >> 8) % 56u) << 23);  // near fp16's range
    case 2: {  // an exact tie for one of the formats
        static constexpr std::uint32_t kTieBits[] = {0x1000u, 0x8000u, 0x10000u};
        const std::uint32_t tie = kTieBits[(u >> 3) % 3];
        return (u & ~(2 * tie - 1)) | tie;
    }
    default: return u & (0x80000000u | 0x7F800000u | (0x00400001u << (u % 8)));  // sparse
    }
}

}  // namespace

class TestFormat : public QObject {
    Q_OBJECT

private slots:
    void formatInfoMatchesDefinitions();
    void fp16AllPatternsRoundTrip();
    void bf16AllPatternsRoundTrip();
    void encodingsAndTraitsFollowTheSpecifications();
    void roundingBoundaries_data();
    void roundingBoundaries();
    void nanStaysNanWithSign_data();
    void nanStaysNanWithSign();
    void classifyNamesTheClass_data();
    void classifyNamesTheClass();
    void matchesIndependentReference_data();
    void matchesIndependentReference();
    void roundDoubleToMatchesReference_data();
    void roundDoubleToMatchesReference();
};

void TestFormat::formatInfoMatchesDefinitions()
{
    QCOMPARE(formatInfo(Format::fp16).maxFinite, 65504.0);
    QCOMPARE(formatInfo(Format::fp16).minSubnormalLog2, -24);
    QCOMPARE(formatInfo(Format::bf16).maxFinite, static_cast<double>(bf16BitsToFp32(0x7F7F)));
    QCOMPARE(formatInfo(Format::tf32).maxFinite, static_cast<double>(floatFromBits(0x7F7FE000u)));
    QCOMPARE(formatInfo(Format::fp32).maxFinite, static_cast<double>(FLT_MAX));
    QCOMPARE(formatInfo(Format::tf32).storageBytes, 4);
    QCOMPARE(formatInfo(Format::bf16).storageBytes, 2);
    for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16}) {
        QCOMPARE(parseFormat(formatName(f)), std::optional<Format>(f));
        const FormatInfo& info = formatInfo(f);
        QCOMPARE(info.minSubnormalLog2, info.minNormalLog2 - info.mantissaBits);
    }
    QVERIFY(!parseFormat("fp8"));
}

// The format rows' traits against the formats' definitions (IEEE 754 binary16 and
// binary32, bfloat16, NVIDIA's TF32: widths 16, 32, 16, 19; biases 15, 127, 127, 127), and
// the encodings: every finite pattern of each format decodes to the value its sign,
// exponent and fraction give and encodes back to itself; tf32's is the top 19 bits of its
// fp32 container, which storedBits writes; fp16's and bf16's are stored as they are.
void TestFormat::encodingsAndTraitsFollowTheSpecifications()
{
    struct Spec {
        Format f;
        int bits, bias;
        bool packable16;
    };
    for (const Spec& s : {Spec{Format::fp32, 32, 127, false}, Spec{Format::tf32, 19, 127, false},
                          Spec{Format::fp16, 16, 15, true}, Spec{Format::bf16, 16, 127, true}}) {
        const FormatInfo& info = formatInfo(s.f);
        QCOMPARE(info.bits(), s.bits);
        QCOMPARE(info.exponentBias(), s.bias);
        QCOMPARE(info.packable16(), s.packable16);
        QCOMPARE(info.storageBytes == 2, s.packable16);
        if (s.f == Format::fp32) continue;   // 2^32 patterns: the others cover the code
        const int m = info.mantissaBits;
        for (std::uint32_t pattern = 0; pattern < (std::uint32_t{1} << s.bits); ++pattern) {
            const std::uint32_t exponent = (pattern >> m) & ((1u << info.exponentBits) - 1);
            const std::uint32_t fraction = pattern & ((1u << m) - 1);
            if (exponent == (1u << info.exponentBits) - 1) continue;   // inf and NaN
            const double magnitude = exponent == 0 ? std::ldexp(double(fraction), 1 - s.bias - m)
                                                   : std::ldexp(double(fraction + (1u << m)), int(exponent) - s.bias - m);
            const double value = (pattern >> (s.bits - 1)) ? -magnitude : magnitude;
            const float decoded = decodeBits(s.f, pattern);
            if (double(decoded) != value || encodeBits(s.f, decoded) != pattern)
                QFAIL(qPrintable(QString("%1 pattern 0x%2: decoded %3, expected %4")
                                     .arg(QString::fromUtf8(info.name.data(), int(info.name.size())))
                                     .arg(pattern, 0, 16).arg(double(decoded), 0, 'g', 17).arg(value, 0, 'g', 17)));
            const std::uint32_t stored = storedBits(s.f, decoded);
            QCOMPARE(stored, s.packable16 ? pattern : pattern << (23 - m));
        }
    }
}

// Every fp16 pattern converts to fp32 exactly (checked against the value computed from
// the definition) and back to the same pattern; NaNs stay NaNs with their sign.
void TestFormat::fp16AllPatternsRoundTrip()
{
    for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        const float f = fp16BitsToFp32(bits);
        const std::uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
        const double sign = (h & 0x8000) ? -1.0 : 1.0;
        const std::uint16_t back = fp32ToFp16Bits(f);
        if (exp == 0x1F && man != 0) {
            QVERIFY2(std::isnan(f), qPrintable(hex(h, 4)));
            QCOMPARE(std::signbit(f), (h & 0x8000) != 0);
            QCOMPARE(hex(back, 4), hex(h | 0x0200u, 4));  // payload kept, quiet bit set
            continue;
        }
        const double expected = exp == 0x1F ? sign * INFINITY
                                : exp == 0 ? sign * std::ldexp(man, -24)
                                           : sign * std::ldexp(1024 + man, static_cast<int>(exp) - 25);
        if (static_cast<double>(f) != expected || std::signbit(f) != (sign < 0) || back != h)
            QFAIL(qPrintable(QStringLiteral("fp16 %1 -> %2 -> %3").arg(hex(h, 4)).arg(f).arg(hex(back, 4))));
    }
}

void TestFormat::bf16AllPatternsRoundTrip()
{
    for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
        const float f = bf16BitsToFp32(static_cast<std::uint16_t>(b));
        QCOMPARE(bitsOf(f), b << 16);
        const bool isNan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
        const std::uint32_t expected = isNan ? (b | 0x0040u) : b;
        if (fp32ToBf16Bits(f) != expected) QFAIL(qPrintable(hex(b, 4)));
    }
}

// fp32 input bits -> expected result bits in the format (16-bit for fp16/bf16, the fp32
// pattern for tf32).
void TestFormat::roundingBoundaries_data()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<std::uint32_t>("input");
    QTest::addColumn<std::uint32_t>("expected");
    const auto b = [](float x) { return bitsOf(x); };

    // fp16: largest finite, the overflow threshold, subnormal limits, ties.
    QTest::addRow("fp16 one") << "fp16" << b(1.0f) << 0x3C00u;
    QTest::addRow("fp16 max finite 65504") << "fp16" << b(65504.0f) << 0x7BFFu;
    QTest::addRow("fp16 65519.99 stays 65504") << "fp16" << b(std::nextafter(65520.0f, 0.0f)) << 0x7BFFu;
    QTest::addRow("fp16 65520 ties to inf") << "fp16" << b(65520.0f) << 0x7C00u;
    QTest::addRow("fp16 -65520 ties to -inf") << "fp16" << b(-65520.0f) << 0xFC00u;
    QTest::addRow("fp16 1e5 overflows") << "fp16" << b(1e5f) << 0x7C00u;
    QTest::addRow("fp16 FLT_MAX overflows") << "fp16" << b(FLT_MAX) << 0x7C00u;
    QTest::addRow("fp16 inf") << "fp16" << b(INFINITY) << 0x7C00u;
    QTest::addRow("fp16 -inf") << "fp16" << b(-INFINITY) << 0xFC00u;
    QTest::addRow("fp16 min normal 2^-14") << "fp16" << b(std::ldexp(1.0f, -14)) << 0x0400u;
    QTest::addRow("fp16 largest subnormal") << "fp16" << b(std::ldexp(1023.0f, -24)) << 0x03FFu;
    QTest::addRow("fp16 1023.5 * 2^-24 ties up to min normal")
        << "fp16" << b(std::ldexp(2047.0f, -25)) << 0x0400u;
    QTest::addRow("fp16 min subnormal 2^-24") << "fp16" << b(std::ldexp(1.0f, -24)) << 0x0001u;
    QTest::addRow("fp16 half min subnormal 2^-25 ties to zero") << "fp16" << b(std::ldexp(1.0f, -25)) << 0x0000u;
    QTest::addRow("fp16 -2^-25 ties to negative zero") << "fp16" << b(-std::ldexp(1.0f, -25)) << 0x8000u;
    QTest::addRow("fp16 just above 2^-25 rounds to min subnormal")
        << "fp16" << (b(std::ldexp(1.0f, -25)) + 1) << 0x0001u;
    QTest::addRow("fp16 just below 2^-25 rounds to zero") << "fp16" << (b(std::ldexp(1.0f, -25)) - 1) << 0x0000u;
    QTest::addRow("fp16 subnormal tie 1.5 ulp to even 2") << "fp16" << b(std::ldexp(3.0f, -25)) << 0x0002u;
    QTest::addRow("fp16 subnormal tie 2.5 ulp to even 2") << "fp16" << b(std::ldexp(5.0f, -25)) << 0x0002u;
    QTest::addRow("fp16 subnormal tie 3.5 ulp to even 4") << "fp16" << b(std::ldexp(7.0f, -25)) << 0x0004u;
    QTest::addRow("fp16 tie at even mantissa stays") << "fp16" << b(1.0f + std::ldexp(1.0f, -11)) << 0x3C00u;
    QTest::addRow("fp16 tie at odd mantissa rounds up")
        << "fp16" << b(1.0f + std::ldexp(3.0f, -11)) << 0x3C02u;
    QTest::addRow("fp16 just above a tie rounds up") << "fp16" << (b(1.0f + std::ldexp(1.0f, -11)) + 1) << 0x3C01u;
    QTest::addRow("fp16 tie carries into the exponent") << "fp16" << b(2.0f - std::ldexp(1.0f, -11)) << 0x4000u;
    QTest::addRow("fp16 negative tie at odd mantissa")
        << "fp16" << b(-(1.0f + std::ldexp(3.0f, -11))) << 0xBC02u;
    QTest::addRow("fp16 zero") << "fp16" << 0x00000000u << 0x0000u;
    QTest::addRow("fp16 negative zero") << "fp16" << 0x80000000u << 0x8000u;
    QTest::addRow("fp16 fp32 min subnormal underflows") << "fp16" << 0x00000001u << 0x0000u;
    QTest::addRow("fp16 negative fp32 subnormal underflows to -0") << "fp16" << 0x807FFFFFu << 0x8000u;

    // bf16: the same questions with fp32's exponent range, including fp32 subnormal inputs.
    QTest::addRow("bf16 one") << "bf16" << b(1.0f) << 0x3F80u;
    QTest::addRow("bf16 max finite") << "bf16" << 0x7F7F0000u << 0x7F7Fu;
    QTest::addRow("bf16 just below the overflow tie") << "bf16" << 0x7F7F7FFFu << 0x7F7Fu;
    QTest::addRow("bf16 overflow tie goes to inf") << "bf16" << 0x7F7F8000u << 0x7F80u;
    QTest::addRow("bf16 FLT_MAX overflows") << "bf16" << b(FLT_MAX) << 0x7F80u;
    QTest::addRow("bf16 -FLT_MAX overflows") << "bf16" << b(-FLT_MAX) << 0xFF80u;
    QTest::addRow("bf16 tie at even mantissa stays") << "bf16" << 0x3F808000u << 0x3F80u;
    QTest::addRow("bf16 tie at odd mantissa rounds up") << "bf16" << 0x3F818000u << 0x3F82u;
    QTest::addRow("bf16 just above a tie rounds up") << "bf16" << 0x3F808001u << 0x3F81u;
    QTest::addRow("bf16 tie carries into the exponent") << "bf16" << 0x3FFF8000u << 0x4000u;
    QTest::addRow("bf16 min normal") << "bf16" << 0x00800000u << 0x0080u;
    QTest::addRow("bf16 fp32 subnormal exact") << "bf16" << 0x00010000u << 0x0001u;
    QTest::addRow("bf16 fp32 subnormal tie to even zero") << "bf16" << 0x00008000u << 0x0000u;
    QTest::addRow("bf16 fp32 subnormal tie to even up") << "bf16" << 0x00018000u << 0x0002u;
    QTest::addRow("bf16 fp32 subnormal above tie") << "bf16" << 0x00008001u << 0x0001u;
    QTest::addRow("bf16 fp32 min subnormal underflows") << "bf16" << 0x00000001u << 0x0000u;
    QTest::addRow("bf16 largest fp32 subnormal rounds to min normal") << "bf16" << 0x007FFFFFu << 0x0080u;
    QTest::addRow("bf16 negative fp32 subnormal tie") << "bf16" << 0x80018000u << 0x8002u;
    QTest::addRow("bf16 negative zero") << "bf16" << 0x80000000u << 0x8000u;
    QTest::addRow("bf16 inf") << "bf16" << 0x7F800000u << 0x7F80u;
    QTest::addRow("bf16 -inf") << "bf16" << 0xFF800000u << 0xFF80u;

    // tf32: ties away from zero, as cvt.rna.tf32.f32.
    QTest::addRow("tf32 tie goes away from zero") << "tf32" << 0x3F801000u << 0x3F802000u;
    QTest::addRow("tf32 negative tie goes away from zero") << "tf32" << 0xBF801000u << 0xBF802000u;
    QTest::addRow("tf32 tie at odd mantissa goes away too") << "tf32" << 0x3F803000u << 0x3F804000u;
    QTest::addRow("tf32 just below a tie rounds down") << "tf32" << 0x3F800FFFu << 0x3F800000u;
    QTest::addRow("tf32 max finite") << "tf32" << 0x7F7FE000u << 0x7F7FE000u;
    QTest::addRow("tf32 just below the overflow tie") << "tf32" << 0x7F7FEFFFu << 0x7F7FE000u;
    QTest::addRow("tf32 overflow tie goes to inf") << "tf32" << 0x7F7FF000u << 0x7F800000u;
    QTest::addRow("tf32 FLT_MAX overflows") << "tf32" << b(FLT_MAX) << 0x7F800000u;
    QTest::addRow("tf32 -FLT_MAX overflows") << "tf32" << b(-FLT_MAX) << 0xFF800000u;
    QTest::addRow("tf32 subnormal tie away") << "tf32" << 0x00001000u << 0x00002000u;
    QTest::addRow("tf32 subnormal below tie underflows") << "tf32" << 0x00000FFFu << 0x00000000u;
    QTest::addRow("tf32 largest subnormal rounds to min normal") << "tf32" << 0x007FFFFFu << 0x00800000u;
    QTest::addRow("tf32 negative zero") << "tf32" << 0x80000000u << 0x80000000u;
    QTest::addRow("tf32 inf") << "tf32" << 0x7F800000u << 0x7F800000u;
    QTest::addRow("tf32 -inf") << "tf32" << 0xFF800000u << 0xFF800000u;
}

void TestFormat::roundingBoundaries()
{
    QFETCH(QString, format);
    QFETCH(std::uint32_t, input);
    QFETCH(std::uint32_t, expected);
    const Format f = formatFromName(format);
    const float x = floatFromBits(input);
    switch (f) {
    case Format::fp16:
        QCOMPARE(hex(fp32ToFp16Bits(x), 4), hex(expected, 4));
        QCOMPARE(hex(bitsOf(roundTo(f, x))), hex(bitsOf(fp16BitsToFp32(static_cast<std::uint16_t>(expected)))));
        break;
    case Format::bf16:
        QCOMPARE(hex(fp32ToBf16Bits(x), 4), hex(expected, 4));
        QCOMPARE(hex(bitsOf(roundTo(f, x))), hex(expected << 16));
        break;
    case Format::tf32:
        QCOMPARE(hex(bitsOf(roundToTf32(x))), hex(expected));
        QCOMPARE(hex(bitsOf(roundTo(f, x))), hex(expected));
        break;
    case Format::fp32: QFAIL("no fp32 rows"); break;
    }
    // The direct double rounding agrees on fp32 inputs.
    QCOMPARE(hex(bitsOf(roundDoubleTo(f, static_cast<double>(x)))), hex(bitsOf(roundTo(f, x))));
}

// NaN inputs, signalling or quiet, with payloads anywhere (even only in the bits a
// format drops), stay NaN with their sign and come out quiet.
void TestFormat::nanStaysNanWithSign_data()
{
    QTest::addColumn<std::uint32_t>("input");
    QTest::addRow("quiet NaN") << 0x7FC00000u;
    QTest::addRow("negative quiet NaN") << 0xFFC00000u;
    QTest::addRow("signalling NaN payload 1") << 0x7F800001u;
    QTest::addRow("negative signalling NaN payload 1") << 0xFF800001u;
    QTest::addRow("signalling NaN payload in bit 12") << 0x7F801000u;
    QTest::addRow("signalling NaN payload in bit 15") << 0x7F808000u;
    QTest::addRow("NaN all payload bits") << 0x7FFFFFFFu;
    QTest::addRow("negative NaN all payload bits") << 0xFFFFFFFFu;
    QTest::addRow("NaN high payload") << 0x7FA00000u;
}

void TestFormat::nanStaysNanWithSign()
{
    QFETCH(std::uint32_t, input);
    const float x = floatFromBits(input);
    const bool negative = (input & 0x80000000u) != 0;
    const std::uint16_t h = fp32ToFp16Bits(x);
    QCOMPARE((h & 0x7C00) == 0x7C00 && (h & 0x0200) != 0, true);
    QCOMPARE((h & 0x8000) != 0, negative);
    QCOMPARE(hex(h & 0x1FFu, 4), hex((input >> 13) & 0x1FFu, 4));  // payload's top bits kept
    const std::uint16_t b = fp32ToBf16Bits(x);
    QCOMPARE((b & 0x7F80) == 0x7F80 && (b & 0x0040) != 0, true);
    QCOMPARE((b & 0x8000) != 0, negative);
    const std::uint32_t t = bitsOf(roundToTf32(x));
    QCOMPARE((t & 0x1FFFu), 0u);
    QCOMPARE((t & 0x7FC00000u), 0x7FC00000u);
    QCOMPARE((t & 0x80000000u) != 0, negative);
    for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16}) {
        QVERIFY(std::isnan(roundTo(f, x)));
        QCOMPARE(std::signbit(roundTo(f, x)), negative);
        QVERIFY(plab::classify(f, roundTo(f, x)) == ValueClass::nan);
    }
}

void TestFormat::classifyNamesTheClass_data()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<float>("value");
    QTest::addColumn<QString>("expected");
    QTest::addRow("fp16 zero") << "fp16" << 0.0f << "zero";
    QTest::addRow("fp16 negative zero") << "fp16" << -0.0f << "zero";
    QTest::addRow("fp16 min subnormal") << "fp16" << std::ldexp(1.0f, -24) << "subnormal";
    QTest::addRow("fp16 largest subnormal") << "fp16" << std::ldexp(1023.0f, -24) << "subnormal";
    QTest::addRow("fp16 negative subnormal") << "fp16" << -std::ldexp(1.0f, -20) << "subnormal";
    QTest::addRow("fp16 min normal") << "fp16" << std::ldexp(1.0f, -14) << "normal";
    QTest::addRow("fp16 max") << "fp16" << 65504.0f << "normal";
    QTest::addRow("fp16 inf") << "fp16" << INFINITY << "inf";
    QTest::addRow("fp16 -inf") << "fp16" << -INFINITY << "inf";
    QTest::addRow("fp16 nan") << "fp16" << NAN << "nan";
    QTest::addRow("bf16 2^-14 is normal") << "bf16" << std::ldexp(1.0f, -14) << "normal";
    QTest::addRow("bf16 min normal") << "bf16" << std::ldexp(1.0f, -126) << "normal";
    QTest::addRow("bf16 subnormal") << "bf16" << std::ldexp(1.0f, -133) << "subnormal";
    QTest::addRow("tf32 subnormal") << "tf32" << std::ldexp(1.0f, -130) << "subnormal";
    QTest::addRow("fp32 min subnormal") << "fp32" << std::ldexp(1.0f, -149) << "subnormal";
    QTest::addRow("fp32 max") << "fp32" << FLT_MAX << "normal";
}

void TestFormat::classifyNamesTheClass()
{
    QFETCH(QString, format);
    QFETCH(float, value);
    QFETCH(QString, expected);
    QCOMPARE(QString::fromLatin1(valueClassName(plab::classify(formatFromName(format), value)).data()),
             expected);
}

void TestFormat::matchesIndependentReference_data()
{
    QTest::addColumn<QString>("format");
    QTest::addRow("fp16") << "fp16";
    QTest::addRow("bf16") << "bf16";
    QTest::addRow("tf32") << "tf32";
}

// 4M random fp32 patterns per format against the double-precision reference.
void TestFormat::matchesIndependentReference()
{
    QFETCH(QString, format);
    const Format f = formatFromName(format);
    std::mt19937 rng(20240611u + static_cast<unsigned>(f));
    constexpr std::uint32_t kSamples = 4u << 20;
    std::uint64_t mismatches = 0, nans = 0;
    QString firstMismatch;
    for (std::uint32_t i = 0; i < kSamples; ++i) {
        const std::uint32_t input = randomPattern(rng, i);
        const float x = floatFromBits(input);
        const float got = roundTo(f, x);
        if (std::isnan(x)) {  // NaN rule checked in nanStaysNanWithSign; here just NaN-ness
            ++nans;
            if (!std::isnan(got) || std::signbit(got) != std::signbit(x)) ++mismatches;
            continue;
        }
        const double expected = referenceRound(f, static_cast<double>(x));
        if (static_cast<double>(got) != expected || std::signbit(got) != std::signbit(expected)) {
            if (mismatches++ == 0)
                firstMismatch = QStringLiteral("%1 -> %2, reference %3")
                                    .arg(hex(input)).arg(hex(bitsOf(got))).arg(expected, 0, 'g', 17);
        }
    }
    QVERIFY(nans > 0);
    QVERIFY2(mismatches == 0, qPrintable(QStringLiteral("%1 mismatches, first: %2").arg(mismatches).arg(firstMismatch)));
}

void TestFormat::roundDoubleToMatchesReference_data() { matchesIndependentReference_data(); }

// Direct double -> format rounding (used to check shortest decimals) against the reference,
// on random doubles whose extra bits sit right at and around the format's ties.
void TestFormat::roundDoubleToMatchesReference()
{
    QFETCH(QString, format);
    const Format f = formatFromName(format);
    std::mt19937_64 rng(7u + static_cast<unsigned>(f));
    std::uint64_t mismatches = 0;
    QString firstMismatch;
    for (int i = 0; i < (1 << 20); ++i) {
        std::uint64_t u = rng();
        // Exponents from below fp32's subnormals to beyond its max (double bias 1023).
        const std::uint64_t exponent = 1023 - 160 + (u >> 52) % 300;
        u = (u & 0x800FFFFFFFFFFFFFull) | (exponent << 52);
        if (i % 2) u &= ~((std::uint64_t{1} << (u % 40)) - 1);  // fewer low bits: more ties
        double x;
        std::memcpy(&x, &u, sizeof x);
        const float got = roundDoubleTo(f, x);
        const double expected = referenceRound(f, x);
        if (static_cast<double>(got) != expected || std::signbit(got) != std::signbit(expected)) {
            if (mismatches++ == 0) firstMismatch = QString::number(x, 'g', 17);
        }
    }
    QVERIFY2(mismatches == 0, qPrintable(QStringLiteral("%1 mismatches, first: %2").arg(mismatches).arg(firstMismatch)));
    QVERIFY(std::isnan(roundDoubleTo(f, -NAN)) && std::signbit(roundDoubleTo(f, -NAN)));
    QCOMPARE(roundDoubleTo(f, 1e300), INFINITY);
    QCOMPARE(bitsOf(roundDoubleTo(f, -1e-300)), 0x80000000u);
}

QTEST_APPLESS_MAIN(TestFormat)
#include "tst_format.moc"
