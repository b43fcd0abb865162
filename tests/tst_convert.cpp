// Tests of `plab convert` (app/cli/convert_command.h) and the number text it relies on
// (numerics/number_text.h): parsing, shortest round-tripping decimals, output lines, errors.
// links: plab_cli
#include "convert_command.h"
#include "numerics/number_text.h"

#include <QTest>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

using namespace plab;
using plab::cli::runConvertCommand;

namespace {

Format formatFromName(const QString& name) { return *parseFormat(name.toStdString()); }

struct CommandResult {
    int exitCode;
    QString out;
    QString err;
};

CommandResult runConvert(Format f, const QString& input)
{
    std::istringstream in(input.toStdString());
    std::ostringstream out, err;
    const int code = runConvertCommand(f, in, out, err);
    return {code, QString::fromStdString(out.str()), QString::fromStdString(err.str())};
}

std::uint32_t formatBits(Format f, float v)
{
    switch (f) {
    case Format::fp16: return fp32ToFp16Bits(v);
    case Format::bf16: return fp32ToBf16Bits(v);
    default: return bitsOf(v);
    }
}

// Whether `text` is read by the convert command as the same value of f as `value`.
bool readsBackAs(Format f, const std::string& text, float value)
{
    const auto parsed = parseFp32Text(text);
    return parsed && bitsOf(roundTo(f, *parsed)) == bitsOf(value);
}

int significantDigits(const std::string& text)
{
    const std::string mantissa = text.substr(0, text.find('e'));
    std::string digits;
    for (char c : mantissa)
        if (c >= '0' && c <= '9') digits += c;
    const auto first = digits.find_first_not_of('0');
    if (first == std::string::npos) return 1;
    digits = digits.substr(first);
    if (text.find('e') != std::string::npos || text.find('.') != std::string::npos) return static_cast<int>(digits.size());
    const auto last = digits.find_last_not_of('0');  // plain integer: trailing zeros are place holders
    return static_cast<int>(last + 1);
}

// Brute force, independent of the library's search: is there any decimal with fewer than
// `digits` significant digits that reads back as `value`? Tries, for each shorter length
// and each of the three decades around |value|, the few digit strings nearest to it.
bool shorterDecimalExists(Format f, float value, int digits)
{
    const double magnitude = std::fabs(static_cast<double>(value));
    const int decade = static_cast<int>(std::floor(std::log10(magnitude)));
    for (int length = 1; length < digits; ++length) {
        for (int lead = decade - 1; lead <= decade + 1; ++lead) {
            const int power = lead - (length - 1);
            const double approx = std::floor(magnitude / std::pow(10.0, power));
            for (double d = approx - 1; d <= approx + 2; ++d) {
                if (d < std::pow(10.0, length - 1) || d >= std::pow(10.0, length)) continue;
                char text[64];
                std::snprintf(text, sizeof text, "%s%.0fe%d", std::signbit(value) ? "-" : "", d, power);
                if (readsBackAs(f, text, value)) return true;
            }
        }
    }
    return false;
}

}  // namespace

class TestConvert : public QObject {
    Q_OBJECT

private slots:
    void convertsOneLine_data();
    void convertsOneLine();
    void rejectsBadLine_data();
    void rejectsBadLine();
    void skipsBlankLinesAndReadsCrLf();
    void parsesNumbers_data();
    void parsesNumbers();
    void shortestDecimalRoundTripsAllFp16AndBf16_data();
    void shortestDecimalRoundTripsAllFp16AndBf16();
    void shortestDecimalRoundTripsRandomTf32();
    void convertsBelowSixteenBits();
};

// Issue 15: the formats below 16 bits, value, pattern and class; OFP8's non-saturating
// overflow (E4M3 NaN, E5M2 inf) and the saturating one; FP6/FP4 cannot hold a NaN.
void TestConvert::convertsBelowSixteenBits()
{
    using plab::cli::convertMiniLine;
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e4m3, Overflow::nonFinite, 464.0f)),
             QStringLiteral("448\t0x7e\tnormal"));
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e4m3, Overflow::nonFinite, 500.0f)),
             QStringLiteral("nan\t0x7f\tnan"));
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e4m3, Overflow::saturate, -500.0f)),
             QStringLiteral("-448\t0xfe\tnormal"));
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e5m2, Overflow::nonFinite, 61440.0f)),
             QStringLiteral("inf\t0x7c\tinf"));
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e4m3, Overflow::nonFinite, 0.001953125f)),
             QStringLiteral("0.001953125\t0x01\tsubnormal"));
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e2m1, Overflow::nonFinite, 2.9f)),
             QStringLiteral("3\t0x05\tnormal"));
    QCOMPARE(QString::fromStdString(convertMiniLine(MiniFormat::e3m2, Overflow::nonFinite, NAN)),
             QStringLiteral("nan\tnone\tnot representable"));

    // An MX block per line: 500 and 1 in MXFP8 share the scale 2^0 (floor(log2 500) = 8 =
    // E4M3's emax); 500 saturates to 448. MXFP4 of 6, 0.3: scale 2^0 (emax 2), 0.3 -> 0.5.
    // The second block, 6 and 0.3 in MXFP8: scale 2^(2 - 8); 6 / 2^-6 = 384 exactly,
    // 0.3 / 2^-6 = 19.2 -> 20 (quantum 2 in [16, 32)), back to 0.3125.
    std::istringstream in("500, 1\n\n6 0.3\n"), in4("6 0.3\n"), bad("1 2 x\n");
    std::ostringstream out, out4, err;
    QCOMPARE(plab::cli::runMxConvertCommand(MiniFormat::e4m3, in, out, err), 0);
    QCOMPARE(QString::fromStdString(out.str()),
             QStringLiteral("scale\t2^0\t0x7f\n448\t448\t0x7e\n1\t1\t0x38\n"
                            "scale\t2^-6\t0x79\n6\t384\t0x7c\n0.3125\t20\t0x5a\n"));
    QCOMPARE(plab::cli::runMxConvertCommand(MiniFormat::e2m1, in4, out4, err), 0);
    QCOMPARE(QString::fromStdString(out4.str()), QStringLiteral("scale\t2^0\t0x7f\n6\t6\t0x07\n0.5\t0.5\t0x01\n"));
    std::ostringstream sink, why;
    QCOMPARE(plab::cli::runMxConvertCommand(MiniFormat::e4m3, bad, sink, why), 2);
    QVERIFY(QString::fromStdString(why.str()).startsWith(QStringLiteral("line 1: cannot parse 'x'")));

    // NVFP4, a line per block. 6 0.3 1 -2.5 as their own tensor: S_enc = 448 * 6 / 6 = 448,
    // S_b = e4m3(6 * 448 / 6) = 448 (0x7e); elements 6, 0.5, 1, -2 (2.5 ties to even).
    // With --tensor-amax 100: S_enc = 26.88; 0.001 0.0002 get S_b = e4m3(0.00448) =
    // 2^-8 (subnormal 0x02), so 0.001 * 26.88 / 2^-8 = 6.88 saturates to 6 (0.000872 back)
    // and 0.0002 -> 1.376 -> 1.5.
    std::istringstream nv("6 0.3 1 -2.5\n"), nvAmax("0.001, 0.0002\n"), tooMany("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n");
    std::ostringstream nvOut, nvAmaxOut, nvErr;
    QCOMPARE(plab::cli::runNvfp4ConvertCommand(std::nullopt, nv, nvOut, err), 0);
    QCOMPARE(QString::fromStdString(nvOut.str()),
             QStringLiteral("tensor scale\t448\nblock scale\t448\t0x7e\n6\t6\t0x07\n0.5\t0.5\t0x01\n1\t1\t0x02\n"
                            "-2\t-2\t0x0c\n"));
    QCOMPARE(plab::cli::runNvfp4ConvertCommand(100.0f, nvAmax, nvAmaxOut, err), 0);
    QCOMPARE(QString::fromStdString(nvAmaxOut.str()),
             QStringLiteral("tensor scale\t26.88\nblock scale\t0.00390625\t0x02\n0.00087193085\t6\t0x07\n"
                            "0.00021798271\t1.5\t0x03\n"));
    QCOMPARE(plab::cli::runNvfp4ConvertCommand(std::nullopt, tooMany, sink, nvErr), 2);
    QCOMPARE(QString::fromStdString(nvErr.str()), QStringLiteral("line 1: an NVFP4 block holds at most 16 numbers, got 17\n"));
}

void TestConvert::convertsOneLine_data()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("expected");
    QTest::addRow("fp16 decimal one") << "fp16" << "1" << "1\t0x3c00\tnormal";
    QTest::addRow("fp16 tenth") << "fp16" << "0.1" << "0.1\t0x2e66\tnormal";
    QTest::addRow("fp16 third") << "fp16" << "0.333333" << "0.3333\t0x3555\tnormal";
    QTest::addRow("fp16 max finite prints shortest") << "fp16" << "65504" << "65500\t0x7bff\tnormal";
    QTest::addRow("fp16 65519.99 stays max") << "fp16" << "65519.99" << "65500\t0x7bff\tnormal";
    QTest::addRow("fp16 65520 rounds to inf") << "fp16" << "65520" << "inf\t0x7c00\tinf";
    QTest::addRow("fp16 large negative rounds to -inf") << "fp16" << "-1e10" << "-inf\t0xfc00\tinf";
    QTest::addRow("fp16 hex input") << "fp16" << "0x3f800000" << "1\t0x3c00\tnormal";
    QTest::addRow("fp16 hex input upper case") << "fp16" << "0X3F800000" << "1\t0x3c00\tnormal";
    QTest::addRow("fp16 min subnormal") << "fp16" << "5.9604644775390625e-08" << "6e-08\t0x0001\tsubnormal";
    QTest::addRow("fp16 half min subnormal ties to zero") << "fp16" << "2.98023223876953125e-08" << "0\t0x0000\tzero";
    QTest::addRow("fp16 just above half min subnormal") << "fp16" << "3e-8" << "6e-08\t0x0001\tsubnormal";
    QTest::addRow("fp16 largest subnormal") << "fp16" << "0x387fc000" << "6.1e-05\t0x03ff\tsubnormal";
    QTest::addRow("fp16 min normal") << "fp16" << "6.103515625e-05" << "6.104e-05\t0x0400\tnormal";
    QTest::addRow("fp16 tiny underflows") << "fp16" << "1e-10" << "0\t0x0000\tzero";
    QTest::addRow("fp16 inf") << "fp16" << "inf" << "inf\t0x7c00\tinf";
    QTest::addRow("fp16 -inf") << "fp16" << "-inf" << "-inf\t0xfc00\tinf";
    QTest::addRow("fp16 nan") << "fp16" << "nan" << "nan\t0x7e00\tnan";
    QTest::addRow("fp16 negative nan keeps sign in bits") << "fp16" << "-nan" << "nan\t0xfe00\tnan";
    QTest::addRow("fp16 signalling nan pattern") << "fp16" << "0x7f800001" << "nan\t0x7e00\tnan";
    QTest::addRow("fp16 negative zero") << "fp16" << "-0" << "-0\t0x8000\tzero";
    QTest::addRow("fp16 surrounding whitespace") << "fp16" << "  2.5\t " << "2.5\t0x4100\tnormal";
    QTest::addRow("fp16 plus sign") << "fp16" << "+7" << "7\t0x4700\tnormal";
    QTest::addRow("fp16 beyond fp32 range") << "fp16" << "1e50" << "inf\t0x7c00\tinf";
    QTest::addRow("fp16 below fp32 range") << "fp16" << "-1e-50" << "-0\t0x8000\tzero";
    QTest::addRow("fp16 ten thousand prints plain") << "fp16" << "10000" << "10000\t0x70e2\tnormal";

    QTest::addRow("bf16 one") << "bf16" << "1" << "1\t0x3f80\tnormal";
    QTest::addRow("bf16 pi") << "bf16" << "3.14159" << "3.14\t0x4049\tnormal";
    QTest::addRow("bf16 max finite") << "bf16" << "0x7f7f0000" << "3.39e+38\t0x7f7f\tnormal";
    QTest::addRow("bf16 overflow tie rounds to inf") << "bf16" << "0x7f7f8000" << "inf\t0x7f80\tinf";
    QTest::addRow("bf16 1e10 prints scientific") << "bf16" << "1e10" << "1e+10\t0x5015\tnormal";
    QTest::addRow("bf16 fp32 subnormal input") << "bf16" << "1e-40" << "9e-41\t0x0001\tsubnormal";
    QTest::addRow("bf16 fp32 subnormal tie to zero") << "bf16" << "0x00008000" << "0\t0x0000\tzero";
    QTest::addRow("bf16 largest fp32 subnormal to min normal") << "bf16" << "0x007fffff" << "1.18e-38\t0x0080\tnormal";
    QTest::addRow("bf16 nan") << "bf16" << "nan" << "nan\t0x7fc0\tnan";

    QTest::addRow("tf32 one") << "tf32" << "1" << "1\t0x3f800000\tnormal";
    QTest::addRow("tf32 tie goes away from zero") << "tf32" << "0x3f801000" << "1.001\t0x3f802000\tnormal";
    QTest::addRow("tf32 65520 ties away to 65536") << "tf32" << "65520" << "65540\t0x47800000\tnormal";
    QTest::addRow("tf32 overflow tie rounds to inf") << "tf32" << "0x7f7ff000" << "inf\t0x7f800000\tinf";
    QTest::addRow("tf32 nan payload only in dropped bits") << "tf32" << "0x7f800001" << "nan\t0x7fc00000\tnan";
    QTest::addRow("tf32 subnormal") << "tf32" << "1e-40" << "1e-40\t0x00012000\tsubnormal";
    QTest::addRow("tf32 negative zero") << "tf32" << "-0.0" << "-0\t0x80000000\tzero";
}

void TestConvert::convertsOneLine()
{
    QFETCH(QString, format);
    QFETCH(QString, input);
    QFETCH(QString, expected);
    const CommandResult r = runConvert(formatFromName(format), input + "\n");
    QCOMPARE(r.err, QString());
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out, expected + "\n");
}

// A line that is not a number stops the command with exit 2 and a message naming the
// line (blank lines count) and showing the text; lines before it were converted.
void TestConvert::rejectsBadLine_data()
{
    QTest::addColumn<QString>("input");
    QTest::addColumn<int>("convertedLines");
    QTest::addColumn<QString>("message");
    const QString tail = QStringLiteral("': expected a decimal number or 0x followed by 8 hex digits\n");
    QTest::addRow("word on line 3") << "1\n2\nabc\n4\n" << 2 << "line 3: cannot parse 'abc" + tail;
    QTest::addRow("blank lines are counted") << "1\n\n0x12\n" << 1 << "line 3: cannot parse '0x12" + tail;
    QTest::addRow("nine hex digits") << "0x3f8000000" << 0 << "line 1: cannot parse '0x3f8000000" + tail;
    QTest::addRow("bad hex digit") << "0x3f80000g" << 0 << "line 1: cannot parse '0x3f80000g" + tail;
    QTest::addRow("hex float") << "0x1p3" << 0 << "line 1: cannot parse '0x1p3" + tail;
    QTest::addRow("negative hex pattern") << "-0x3f800000" << 0 << "line 1: cannot parse '-0x3f800000" + tail;
    QTest::addRow("two numbers") << "1 2" << 0 << "line 1: cannot parse '1 2" + tail;
    QTest::addRow("decimal comma") << "7\n1,5" << 1 << "line 2: cannot parse '1,5" + tail;
    QTest::addRow("trailing garbage") << "1.5x" << 0 << "line 1: cannot parse '1.5x" + tail;
    QTest::addRow("lone sign") << "-" << 0 << "line 1: cannot parse '-" + tail;
    QTest::addRow("double sign") << "+-1" << 0 << "line 1: cannot parse '+-1" + tail;
}

void TestConvert::rejectsBadLine()
{
    QFETCH(QString, input);
    QFETCH(int, convertedLines);
    QFETCH(QString, message);
    for (Format f : {Format::fp16, Format::bf16, Format::tf32}) {
        const CommandResult r = runConvert(f, input);
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err, message);
        QCOMPARE(static_cast<int>(r.out.count('\n')), convertedLines);
    }
}

void TestConvert::skipsBlankLinesAndReadsCrLf()
{
    CommandResult r = runConvert(Format::fp16, "1\r\n\r\n   \n\t\n2\r\n");
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out, QStringLiteral("1\t0x3c00\tnormal\n2\t0x4000\tnormal\n"));
    r = runConvert(Format::bf16, "");
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out, QString());
    r = runConvert(Format::bf16, "0.5");  // no newline at the end
    QCOMPARE(r.out, QStringLiteral("0.5\t0x3f00\tnormal\n"));
}

void TestConvert::parsesNumbers_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("valid");
    QTest::addColumn<std::uint32_t>("bits");
    QTest::addRow("integer") << "3" << true << 0x40400000u;
    QTest::addRow("fraction without leading digit") << ".5" << true << 0x3F000000u;
    QTest::addRow("exponent") << "1.5e3" << true << 0x44BB8000u;
    QTest::addRow("correctly rounded decimal") << "0.1" << true << 0x3DCCCCCDu;
    QTest::addRow("decimal at an fp32 tie rounds to even") << "16777217" << true << 0x4B800000u;
    QTest::addRow("fp32 max") << "3.4028235e38" << true << 0x7F7FFFFFu;
    QTest::addRow("just past fp32 overflow threshold") << "3.4028236e38" << true << 0x7F800000u;
    QTest::addRow("fp32 min subnormal") << "1.4e-45" << true << 0x00000001u;
    QTest::addRow("below half min subnormal") << "7e-46" << true << 0x00000000u;
    QTest::addRow("huge exponent") << "1e999999999999" << true << 0x7F800000u;
    QTest::addRow("tiny with long fraction") << "-0.000000000000000000000000000000000000000000000001" << true << 0x80000000u;
    QTest::addRow("infinity spelled out") << "Infinity" << true << 0x7F800000u;
    QTest::addRow("bit pattern") << " 0xdeadbeef " << true << 0xDEADBEEFu;
    QTest::addRow("empty") << "" << false << 0u;
    QTest::addRow("only spaces") << "   " << false << 0u;
    QTest::addRow("seven hex digits") << "0x3f80000" << false << 0u;
    QTest::addRow("bare 0x") << "0x" << false << 0u;
}

void TestConvert::parsesNumbers()
{
    QFETCH(QString, text);
    QFETCH(bool, valid);
    QFETCH(std::uint32_t, bits);
    const auto parsed = parseFp32Text(text.toStdString());
    QCOMPARE(parsed.has_value(), valid);
    if (valid) QCOMPARE(QString::number(bitsOf(*parsed), 16), QString::number(bits, 16));
}

void TestConvert::shortestDecimalRoundTripsAllFp16AndBf16_data()
{
    QTest::addColumn<QString>("format");
    QTest::addRow("fp16") << "fp16";
    QTest::addRow("bf16") << "bf16";
}

// Every finite value prints as a decimal that the convert command reads back to the
// same bits, and no shorter decimal would do.
void TestConvert::shortestDecimalRoundTripsAllFp16AndBf16()
{
    QFETCH(QString, format);
    const Format f = formatFromName(format);
    const int maxDigits = f == Format::fp16 ? 5 : 4;  // ceil(precision * log10(2)) + 1
    for (std::uint32_t pattern = 0; pattern <= 0xFFFF; ++pattern) {
        const auto bits16 = static_cast<std::uint16_t>(pattern);
        const float value = f == Format::fp16 ? fp16BitsToFp32(bits16) : bf16BitsToFp32(bits16);
        if (!std::isfinite(value)) continue;
        const std::string text = shortestDecimal(f, value);
        const auto parsed = parseFp32Text(text);
        if (!parsed || formatBits(f, roundTo(f, *parsed)) != pattern)
            QFAIL(qPrintable(QStringLiteral("%1 printed as %2 does not read back").arg(pattern, 4, 16).arg(text.c_str())));
        const int digits = significantDigits(text);
        if (digits > maxDigits || (value != 0.0f && shorterDecimalExists(f, value, digits)))
            QFAIL(qPrintable(QStringLiteral("%1 printed as %2 is not the shortest").arg(pattern, 4, 16).arg(text.c_str())));
    }
}

void TestConvert::shortestDecimalRoundTripsRandomTf32()
{
    std::mt19937 rng(42);
    for (int i = 0; i < 100000; ++i) {
        const float value = roundToTf32(floatFromBits(rng()));
        if (!std::isfinite(value)) continue;
        const std::string text = shortestDecimal(Format::tf32, value);
        const auto parsed = parseFp32Text(text);
        if (!parsed || bitsOf(roundToTf32(*parsed)) != bitsOf(value) || significantDigits(text) > 5)
            QFAIL(qPrintable(QStringLiteral("tf32 %1 printed as %2").arg(bitsOf(value), 8, 16).arg(text.c_str())));
    }
}

QTEST_APPLESS_MAIN(TestConvert)
#include "tst_convert.moc"
