// Tests of bulk rounding (numerics/bulk_round.h): every code path gives roundTo()'s bits,
// and the RoundingStats and GradientHistogram match a straightforward reference count.
// links: plab_numerics
#include "numerics/bulk_round.h"
#include "numerics/simd_level.h"
#include "numerics/storage_convert.h"

#include <QTest>

#include <cfloat>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace plab;

namespace {

QString hex(std::uint32_t bits) { return QStringLiteral("0x%1").arg(bits, 8, 16, QLatin1Char('0')); }

Format formatFromName(const QString& name) { return *parseFormat(name.toStdString()); }

// Values every path must agree on: boundaries, ties, subnormals of fp32 and of the
// targets, zeros, infinities and NaNs with payloads a conversion could lose.
std::vector<std::uint32_t> specialPatterns()
{
    std::vector<std::uint32_t> s = {
        0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,              // zeros, infs
        0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7F801000u,  // NaNs
        0x7F808000u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FA00000u,
        0x00000001u, 0x80000001u, 0x00008000u, 0x00018000u, 0x007FFFFFu,  // fp32 subnormals
        0x00001000u, 0x00000FFFu, 0x80018000u,
        0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0x7F7FF000u,  // near FLT_MAX
        0x7F7FEFFFu, 0x3F808000u, 0x3F818000u, 0x3F801000u, 0xBF801000u,  // ties
    };
    for (float v : {65504.0f, 65520.0f, -65520.0f, std::nextafter(65520.0f, 0.0f), 1.0f, -1.0f,
                    std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                    std::ldexp(3.0f, -25), std::ldexp(2047.0f, -25), 1.0f + std::ldexp(1.0f, -11),
                    1.0f + std::ldexp(3.0f, -11), std::ldexp(1.0f, -126), FLT_MAX, 1e-30f, 1e30f}) {
        std::uint32_t u;
        std::memcpy(&u, &v, sizeof u);
        s.push_back(u);
        s.push_back(u ^ 0x80000000u);
    }
    return s;
}

// Random patterns over all exponents mixed with gradient-like values (normal, spread
// over many binades) and the special patterns, so that every lane kind meets the others.
std::vector<float> testArray(std::size_t n, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> scale(-40, 20);
    const std::vector<std::uint32_t> specials = specialPatterns();
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t kind = rng() % 8;
        if (kind == 0) {
            x[i] = floatFromBits(specials[rng() % specials.size()]);
        } else if (kind <= 2) {
            x[i] = floatFromBits(rng());
        } else {
            x[i] = std::ldexp(normal(rng), scale(rng));
        }
    }
    return x;
}

// Activation/gradient-like data: values spanning a few dozen binades per block (the
// histogram's compare-and-count path), with sparse zeros, NaN, inf, fp32 subnormals and
// values beyond fp16's range, and a leading run of zeros (a block with no normal value).
std::vector<float> clusteredArray(std::size_t n, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, std::ldexp(1.0f, -12));
    const float rare[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-40f, -3e-42f, 70000.0f, -1e5f};
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (i < 5000) x[i] = 0.0f;
        else if (rng() % 64 == 0) x[i] = rare[rng() % std::size(rare)];
        else x[i] = normal(rng);
    }
    return x;
}

struct Reference {
    RoundingStats stats;
    GradientHistogram hist;
};

// The obvious count, element by element, from the definitions in rounding_stats.h.
Reference referenceCount(Format f, const std::vector<float>& in)
{
    Reference r;
    for (float x : in) {
        const float y = roundTo(f, x);
        ++r.stats.count;
        if (std::isnan(x)) {
            ++r.stats.nan;
            ++r.hist.nonFinite;
            continue;
        }
        if (std::isinf(x)) {
            ++r.stats.infIn;
            ++r.hist.nonFinite;
            continue;
        }
        r.stats.largestFinite = std::max(r.stats.largestFinite, std::fabs(x));
        if (x == 0.0f) {
            ++r.stats.zerosIn;
            ++r.hist.zeros;
        } else {
            ++r.hist.bins[static_cast<std::size_t>(GradientHistogram::binOf(std::ilogb(x)))];
            if (y == 0.0f) ++r.stats.underflow;
        }
        if (std::isinf(y)) ++r.stats.overflow;
        if (classify(f, y) == ValueClass::subnormal) ++r.stats.subnormal;
    }
    return r;
}

QString describe(const RoundingStats& s)
{
    return QStringLiteral("count %1 zerosIn %2 underflow %3 subnormal %4 overflow %5 nan %6 infIn %7 largest %8")
        .arg(s.count).arg(s.zerosIn).arg(s.underflow).arg(s.subnormal).arg(s.overflow).arg(s.nan).arg(s.infIn)
        .arg(static_cast<double>(s.largestFinite), 0, 'g', 9);
}

SimdLevel levelFromName(const QString& name)
{
    for (SimdLevel l : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512})
        if (name == QLatin1String(simdLevelName(l))) return l;
    return SimdLevel::scalar;
}

}  // namespace

// Caps dispatch at the row's level (restored after the test); skips, saying so, a level
// this CPU does not have. Every level the CPU has is run, whatever PLAB_SIMD_MAX says.
#define PLAB_CAP_AT_ROW_LEVEL(levelName)                                                              \
    const SimdLevel rowLevel = levelFromName(levelName);                                            \
    if (rowLevel > cpuSimdLevel())                                                                  \
        QSKIP(qPrintable(QStringLiteral("not supported: this CPU has no %1 (it has %2)")             \
                             .arg(levelName, QLatin1String(simdLevelName(cpuSimdLevel())))));       \
    ScopedSimdCap cap(rowLevel);                                                                    \
    QCOMPARE(QByteArray(bulkRoundPath()), QByteArray(simdLevelName(rowLevel)))

class TestBulkRound : public QObject {
    Q_OBJECT

private slots:
    void matchesScalarBitForBit_data();
    void matchesScalarBitForBit();
    void statsAndHistogramMatchReference_data();
    void statsAndHistogramMatchReference();
    void countsAccumulateAcrossCalls();
    void fp32OnlyCounts();
    void disjointRangesConcurrently();
    // Issue 31: 16-bit storage.
    void widenIsExactForEveryPattern_data();
    void widenIsExactForEveryPattern();
    void narrowMatchesTheFormatsRounding_data();
    void narrowMatchesTheFormatsRounding();
    void roundingTapInto16BitsMatchesRoundArray_data();
    void roundingTapInto16BitsMatchesRoundArray();
};

static void addPathRows()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("level");
    for (const char* f : {"fp16", "bf16", "tf32", "fp32"})
        for (const char* level : {"avx512", "avx2", "scalar"})
            QTest::addRow("%s %s path", f, level) << QString::fromLatin1(f) << QString::fromLatin1(level);
}

void TestBulkRound::matchesScalarBitForBit_data() { addPathRows(); }

// Odd lengths (tails shorter than a vector, blocks plus a tail), a misaligned start,
// in place and out of place.
void TestBulkRound::matchesScalarBitForBit()
{
    QFETCH(QString, format);
    QFETCH(QString, level);
    const Format f = formatFromName(format);
    PLAB_CAP_AT_ROW_LEVEL(level);

    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{17},
                          std::size_t{4095}, std::size_t{4097}, std::size_t{100003}, std::size_t{20000}}) {
        const std::vector<float> data = n == 20000 ? clusteredArray(n + 1, 8u)
                                                   : testArray(n + 1, static_cast<std::uint32_t>(n) * 31u + 5u);
        const float* src = data.data() + 1;  // misaligned on purpose
        std::vector<float> outOfPlace(n + 1, -7.0f);
        roundArray(f, src, outOfPlace.data() + 1, n);
        std::vector<float> inPlace(data.begin() + 1, data.end());
        roundArray(f, inPlace.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t expected = bitsOf(roundTo(f, src[i]));
            if (bitsOf(outOfPlace[i + 1]) != expected || bitsOf(inPlace[i]) != expected)
                QFAIL(qPrintable(QStringLiteral("n %1 index %2 input %3: got %4 / %5, roundTo %6")
                                     .arg(n).arg(i).arg(hex(bitsOf(src[i])))
                                     .arg(hex(bitsOf(outOfPlace[i + 1]))).arg(hex(bitsOf(inPlace[i])))
                                     .arg(hex(expected))));
        }
        QCOMPARE(outOfPlace[0], -7.0f);  // nothing written before dst
    }
}

void TestBulkRound::statsAndHistogramMatchReference_data() { addPathRows(); }

void TestBulkRound::statsAndHistogramMatchReference()
{
    QFETCH(QString, format);
    QFETCH(QString, level);
    const Format f = formatFromName(format);
    PLAB_CAP_AT_ROW_LEVEL(level);

    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{70001}, std::size_t{70002}}) {
        // Odd lengths: mixed data (wide spans per block); even: clustered data (narrow spans).
        const std::vector<float> data = n % 2 ? testArray(n, static_cast<std::uint32_t>(n) + 99u)
                                              : clusteredArray(n, static_cast<std::uint32_t>(n));
        const Reference expected = referenceCount(f, data);
        // The data must exercise every counter (fp32 cannot underflow or overflow).
        QVERIFY(n < 1000 || n % 2 == 0 || (expected.stats.subnormal > 0 && expected.stats.nan > 0 &&
                             expected.stats.zerosIn > 0 && expected.stats.infIn > 0 &&
                             (f == Format::fp32 ||
                              (expected.stats.underflow > 0 && expected.stats.overflow > 0))));
        // Stats and histogram together, each alone, and in place.
        RoundingStats stats;
        GradientHistogram hist;
        std::vector<float> out(n);
        roundArray(f, data.data(), out.data(), n, &stats, &hist);
        QVERIFY2(stats == expected.stats, qPrintable(describe(stats) + " vs " + describe(expected.stats)));
        QCOMPARE(hist.zeros, expected.hist.zeros);
        QCOMPARE(hist.nonFinite, expected.hist.nonFinite);
        for (int b = 0; b < GradientHistogram::kBins; ++b)
            if (hist.bins[static_cast<std::size_t>(b)] != expected.hist.bins[static_cast<std::size_t>(b)])
                QFAIL(qPrintable(QStringLiteral("bin of 2^%1: %2, expected %3").arg(GradientHistogram::exponentOf(b))
                                     .arg(hist.bins[static_cast<std::size_t>(b)])
                                     .arg(expected.hist.bins[static_cast<std::size_t>(b)])));
        QCOMPARE(hist.total(), static_cast<std::uint64_t>(n));

        RoundingStats statsOnly;
        std::vector<float> inPlace = data;
        roundArray(f, inPlace.data(), n, &statsOnly);
        QVERIFY(statsOnly == expected.stats);
        GradientHistogram histOnly;
        roundArray(f, data.data(), out.data(), n, nullptr, &histOnly);
        QVERIFY(histOnly == expected.hist);
    }
}

void TestBulkRound::countsAccumulateAcrossCalls()
{
    const std::vector<float> data = testArray(1000, 3);
    RoundingStats once, twice;
    GradientHistogram histOnce, histTwice;
    std::vector<float> out(data.size());
    roundArray(Format::fp16, data.data(), out.data(), data.size(), &once, &histOnce);
    roundArray(Format::fp16, data.data(), out.data(), 600, &twice, &histTwice);
    roundArray(Format::fp16, data.data() + 600, out.data() + 600, 400, &twice, &histTwice);
    QVERIFY(once == twice);
    QVERIFY(histOnce == histTwice);
    RoundingStats doubled = once;
    doubled += once;
    QCOMPARE(doubled.count, 2 * once.count);
    QCOMPARE(doubled.nonzeroFinite(), 2 * once.nonzeroFinite());
    GradientHistogram histDoubled = histOnce;
    histDoubled += histOnce;
    QCOMPARE(histDoubled.total(), 2000u);
}

// Format::fp32 leaves values alone; underflow and overflow are zero, subnormal counts
// the fp32 subnormals.
void TestBulkRound::fp32OnlyCounts()
{
    const std::vector<float> data = testArray(5000, 11);
    std::vector<float> x = data;
    RoundingStats stats;
    roundArray(Format::fp32, x.data(), x.size(), &stats);
    QVERIFY(std::memcmp(x.data(), data.data(), data.size() * sizeof(float)) == 0);
    QCOMPARE(stats.underflow, 0u);
    QCOMPARE(stats.overflow, 0u);
    std::uint64_t subnormals = 0;
    for (float v : data) subnormals += (std::fpclassify(v) == FP_SUBNORMAL);
    QVERIFY(subnormals > 0);
    QCOMPARE(stats.subnormal, subnormals);
}

// The contract for callers that parallelise: disjoint ranges with separate stats objects.
void TestBulkRound::disjointRangesConcurrently()
{
    const std::vector<float> data = testArray(200001, 17);
    std::vector<float> out(data.size());
    RoundingStats whole;
    GradientHistogram wholeHist;
    roundArray(Format::bf16, data.data(), out.data(), data.size(), &whole, &wholeHist);

    std::vector<float> outThreads(data.size());
    const std::size_t half = data.size() / 2;
    RoundingStats parts[2];
    GradientHistogram partHists[2];
    std::thread first([&] { roundArray(Format::bf16, data.data(), outThreads.data(), half, &parts[0], &partHists[0]); });
    roundArray(Format::bf16, data.data() + half, outThreads.data() + half, data.size() - half, &parts[1], &partHists[1]);
    first.join();
    parts[0] += parts[1];
    partHists[0] += partHists[1];
    QVERIFY(parts[0] == whole);
    QVERIFY(partHists[0] == wholeHist);
    QVERIFY(std::memcmp(out.data(), outThreads.data(), out.size() * sizeof(float)) == 0);
}

static void addStorageRows()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("level");
    for (const char* f : {"fp16", "bf16"})
        for (const char* level : {"avx512", "avx2", "scalar"})
            QTest::addRow("%s %s path", f, level) << QString::fromLatin1(f) << QString::fromLatin1(level);
}

static std::uint16_t referenceBits(Format f, float x) { return f == Format::fp16 ? fp32ToFp16Bits(x) : fp32ToBf16Bits(x); }
static float referenceValue(Format f, std::uint16_t b) { return f == Format::fp16 ? fp16BitsToFp32(b) : bf16BitsToFp32(b); }
// Widening as the hardware does it: exact, a signaling fp16 NaN made quiet.
static std::uint32_t widenedBits(Format f, std::uint16_t b)
{
    const std::uint32_t x = bitsOf(referenceValue(f, b));
    return f == Format::fp16 && (x & 0x7FFFFFFFu) > 0x7F800000u ? x | 0x00400000u : x;
}

void TestBulkRound::widenIsExactForEveryPattern_data() { addStorageRows(); }

// All 65,536 patterns (NaN payloads included), from a misaligned start, against the
// scalar conversion (itself checked against the format's definition in tst_format).
void TestBulkRound::widenIsExactForEveryPattern()
{
    QFETCH(QString, format);
    QFETCH(QString, level);
    const Format f = formatFromName(format);
    PLAB_CAP_AT_ROW_LEVEL(level);
    std::vector<std::uint16_t> bits(65536 + 1);
    for (std::uint32_t b = 0; b < 65536; ++b) bits[b + 1] = static_cast<std::uint16_t>(b);
    std::vector<float> wide(65536 + 2, -7.0f);
    widenArray(f, bits.data() + 1, wide.data() + 1, 65536);
    for (std::uint32_t b = 0; b < 65536; ++b)
        if (bitsOf(wide[b + 1]) != widenedBits(f, static_cast<std::uint16_t>(b)))
            QFAIL(qPrintable(QStringLiteral("pattern %1: got %2").arg(b, 4, 16, QLatin1Char('0')).arg(hex(bitsOf(wide[b + 1])))));
    QCOMPARE(wide[0], -7.0f);
    QCOMPARE(wide[65537], -7.0f);
    // Narrowing what was widened gives the pattern back (NaNs are quiet already).
    std::vector<std::uint16_t> back(65536);
    narrowArray(f, wide.data() + 1, back.data(), 65536);
    for (std::uint32_t b = 0; b < 65536; ++b) {
        const bool signalingNan = referenceBits(f, referenceValue(f, static_cast<std::uint16_t>(b))) != b;
        if (!signalingNan && back[b] != b) QFAIL(qPrintable(QStringLiteral("pattern %1 came back as %2").arg(b).arg(back[b])));
    }
}

void TestBulkRound::narrowMatchesTheFormatsRounding_data() { addStorageRows(); }

// Every tie between neighbouring 16-bit values and the fp32 values either side of it,
// then random and special patterns, in lengths with tails, against the scalar rounding.
void TestBulkRound::narrowMatchesTheFormatsRounding()
{
    QFETCH(QString, format);
    QFETCH(QString, level);
    const Format f = formatFromName(format);
    PLAB_CAP_AT_ROW_LEVEL(level);
    std::vector<float> inputs;
    for (std::uint32_t b = 0; b < 65535; ++b) {
        const float lo = referenceValue(f, static_cast<std::uint16_t>(b));
        const float hi = referenceValue(f, static_cast<std::uint16_t>(b + 1));
        if (!std::isfinite(lo) || !std::isfinite(hi) || std::signbit(lo) != std::signbit(hi)) continue;
        const float tie = static_cast<float>((static_cast<double>(lo) + static_cast<double>(hi)) / 2.0);
        for (float x : {lo, tie, std::nextafter(tie, 0.0f), std::nextafter(tie, std::copysign(INFINITY, tie))})
            inputs.push_back(x);
    }
    const std::vector<float> random = testArray(100003, 17u);
    inputs.insert(inputs.end(), random.begin(), random.end());
    for (std::size_t n : {inputs.size(), std::size_t{15}, std::size_t{17}, std::size_t{1}}) {
        std::vector<std::uint16_t> out(n + 1, 0xABCD);
        narrowArray(f, inputs.data(), out.data(), n);
        for (std::size_t i = 0; i < n; ++i)
            if (out[i] != referenceBits(f, inputs[i]))
                QFAIL(qPrintable(QStringLiteral("input %1: got %2, expected %3").arg(hex(bitsOf(inputs[i])))
                                     .arg(out[i], 4, 16, QLatin1Char('0')).arg(referenceBits(f, inputs[i]), 4, 16, QLatin1Char('0'))));
        QCOMPARE(out[n], std::uint16_t{0xABCD});   // nothing written past the end
    }
}

void TestBulkRound::roundingTapInto16BitsMatchesRoundArray_data() { addStorageRows(); }

// The tap into 16-bit storage counts what roundArray counts and stores its values.
void TestBulkRound::roundingTapInto16BitsMatchesRoundArray()
{
    QFETCH(QString, format);
    QFETCH(QString, level);
    const Format f = formatFromName(format);
    PLAB_CAP_AT_ROW_LEVEL(level);
    const std::vector<float> x = clusteredArray(10007, 3u);
    RoundingStats stats, expectedStats;
    GradientHistogram hist, expectedHist;
    std::vector<std::uint16_t> bits(x.size());
    roundArrayTo16(f, x.data(), bits.data(), x.size(), &stats, &hist);
    std::vector<float> rounded(x.size());
    roundArray(f, x.data(), rounded.data(), x.size(), &expectedStats, &expectedHist);
    for (std::size_t i = 0; i < x.size(); ++i)
        if (bitsOf(referenceValue(f, bits[i])) != bitsOf(roundTo(f, x[i])))
            QFAIL(qPrintable(QStringLiteral("index %1 input %2").arg(i).arg(hex(bitsOf(x[i])))));
    QCOMPARE(describe(stats), describe(expectedStats));
    QVERIFY(hist.bins == expectedHist.bins);
    QCOMPARE(hist.zeros, expectedHist.zeros);
    QCOMPARE(hist.nonFinite, expectedHist.nonFinite);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, narrowArray(Format::tf32, x.data(), bits.data(), 1));
}

QTEST_APPLESS_MAIN(TestBulkRound)
#include "tst_bulk_round.moc"
