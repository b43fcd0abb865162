// Tests the bulk quantisers of the FP8 and MX recipes (numerics/quantize) against the
// scalar conversions of numerics/minifloat, which tst_minifloat checks pattern by pattern
// against the specifications: every representable value, midpoint and neighbour of all
// five formats, fp32 subnormals, infinities and NaN, 20,000 random values per format and
// scale; the statistics and histogram against counts taken here from those scalar results;
// Transformer Engine's scale rule against its formula evaluated here; MX blocks along rows
// and columns (partial blocks, zero, NaN and infinite blocks, saturation) against
// mxQuantize block by block; NVFP4 blocks the same way against nvfp4Quantize, with the
// tensor's amax given, block scales that round to 0 and the in-place case; FP8 held as
// codes (quantizeToCodes, decodeScaled) against the specification's encodings.
// links: plab_numerics plab_test_support
#include "numerics/quantize.h"

#include "numerics/bulk_round.h"
#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/storage_convert.h"
#include "test_support.h"

#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using namespace plab;

namespace {

constexpr MiniFormat kFormats[] = {MiniFormat::e4m3, MiniFormat::e5m2, MiniFormat::e2m3, MiniFormat::e3m2,
                                   MiniFormat::e2m1};

// The block quantisers' paths: each SIMD level this CPU has without a histogram, and the
// portable path a histogram takes.
struct Path {
    SimdLevel level;
    bool withHistogram;
};

std::vector<Path> paths()
{
    std::vector<Path> p;
    for (SimdLevel level : testing::simdLevelsOfThisCpu()) p.push_back({level, false});
    p.push_back({cpuSimdLevel(), true});
    return p;
}

bool sameValue(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return bitsOf(a) == bitsOf(b);
}

// Every value of f, the midpoints between neighbours and the fp32 neighbours of those,
// both signs, values past saturation, fp32 subnormals, zeros, infinities, NaN, and random
// values over 2^-40..2^40.
std::vector<float> probeValues(MiniFormat f, unsigned seed)
{
    const MiniFormatInfo& info = miniFormatInfo(f);
    std::vector<float> exact;
    for (unsigned b = 0; b < (1u << (info.bits() - 1)); ++b) {
        const float v = decodeMini(f, static_cast<std::uint8_t>(b));
        if (std::isfinite(v)) exact.push_back(v);
    }
    std::sort(exact.begin(), exact.end());
    std::vector<float> out;
    auto addAround = [&out](float v) {
        out.push_back(v);
        out.push_back(std::nextafter(v, 0.0f));
        out.push_back(std::nextafter(v, INFINITY));
    };
    for (std::size_t i = 0; i < exact.size(); ++i) {
        addAround(exact[i]);
        if (i + 1 < exact.size()) addAround(0.5f * (exact[i] + exact[i + 1]));
    }
    const float top = static_cast<float>(info.maxFinite);
    for (float v : {top * 1.0625f, top * 1.125f, top * 1.5f, top * 4.0f, 1e30f, std::numeric_limits<float>::max(),
                    std::numeric_limits<float>::denorm_min(), 1e-40f, std::numeric_limits<float>::min()})
        addAround(v);
    out.push_back(0.5f * std::ldexp(1.0f, info.minSubnormalLog2));   // half the smallest: a tie to 0
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> log2(-40.0f, 40.0f);
    for (int i = 0; i < 20000; ++i) out.push_back(std::exp2(log2(rng)));
    const std::size_t positives = out.size();
    for (std::size_t i = 0; i < positives; ++i) out.push_back(-out[i]);
    out.push_back(INFINITY);
    out.push_back(-INFINITY);
    out.push_back(std::numeric_limits<float>::quiet_NaN());
    return out;
}

// A finite x that rounds past f's largest finite value (and so saturates). OFP8 says so
// by its non-saturating result; FP6 and FP4 have none, but their largest value's mantissa
// is all ones (odd), so the tie above it would round up.
bool saturates(MiniFormat f, float x)
{
    if (!std::isfinite(x)) return false;
    const MiniFormatInfo& info = miniFormatInfo(f);
    if (info.hasNaN) {
        const float r = roundToMini(f, x, Overflow::nonFinite);
        return std::isnan(r) || std::isinf(r);
    }
    const double half = 0.5 * std::ldexp(1.0, std::ilogb(info.maxFinite) - info.mantissaBits);
    return std::fabs(double(x)) >= info.maxFinite + half;
}

// Counts of one quantisation as quantize.h defines them, from the scalar results.
RoundingStats referenceStats(MiniFormat f, const std::vector<float>& src, float scale)
{
    const MiniFormatInfo& info = miniFormatInfo(f);
    RoundingStats s;
    for (float v : src) {
        const float x = v * scale;
        ++s.count;
        if (std::isnan(x)) { ++s.nan; continue; }
        if (std::isinf(x)) { ++s.infIn; continue; }
        if (x == 0.0f) { ++s.zerosIn; continue; }
        const float r = std::fabs(roundToMini(f, x, Overflow::saturate));
        s.underflow += r == 0.0f;
        s.subnormal += r != 0.0f && r < std::ldexp(1.0f, info.minNormalLog2);
        s.overflow += saturates(f, x);
    }
    return s;
}

}  // namespace

class TestQuantize : public QObject {
    Q_OBJECT

private slots:
    void perTensorEqualsScalarConversion()
    {
        for (MiniFormat f : kFormats) {
            for (float scale : {1.0f, 0.3125f, 3.7f, 1024.0f, 1.0f / 65536.0f}) {
                const auto src = probeValues(f, 7u + static_cast<unsigned>(f));
                const float scaleInv = 1.0f / scale;
                std::vector<float> dst(src.size());
                RoundingStats stats;
                GradientHistogram hist;
                quantizeScaled(f, src.data(), dst.data(), src.size(), scale, scaleInv, &stats, &hist);
                for (std::size_t i = 0; i < src.size(); ++i) {
                    const float expected = roundToMini(f, src[i] * scale, Overflow::saturate) * scaleInv;
                    // FP6 and FP4 hold no NaN: a NaN input stays NaN in the emulation.
                    if (!sameValue(dst[i], expected) && !(std::isnan(src[i]) && std::isnan(dst[i])))
                        QFAIL(qPrintable(QString("%1 scale %2: %3 gave %4, expected %5")
                                             .arg(QString::fromLatin1(miniFormatInfo(f).name.data(),
                                                                      int(miniFormatInfo(f).name.size())))
                                             .arg(double(scale)).arg(double(src[i]), 0, 'g', 9)
                                             .arg(double(dst[i]), 0, 'g', 9).arg(double(expected), 0, 'g', 9)));
                }
                QCOMPARE(stats, referenceStats(f, src, scale));
                // Without a histogram: the vector kernels where the CPU has them, and the
                // portable path forced; the same values and counts either way.
                for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
                    ScopedSimdCap cap(level);
                    std::vector<float> fast(src.size());
                    RoundingStats fastStats;
                    const float amax = quantizeScaled(f, src.data(), fast.data(), src.size(), scale, scaleInv,
                                                      &fastStats, nullptr);
                    QVERIFY(std::isnan(amax));   // the probe values end with a NaN
                    for (std::size_t i = 0; i < src.size(); ++i)
                        if (!sameValue(fast[i], dst[i]))
                            QFAIL(qPrintable(QString("path %1: %2 gave %3, not %4").arg(quantizePath())
                                                 .arg(double(src[i]), 0, 'g', 9).arg(double(fast[i]), 0, 'g', 9)
                                                 .arg(double(dst[i]), 0, 'g', 9)));
                    QCOMPARE(fastStats, stats);
                }
                // The histogram is of |x * scale| before rounding: the same as fp32's.
                GradientHistogram expectedHist;
                std::vector<float> scaled(src.size());
                for (std::size_t i = 0; i < src.size(); ++i) scaled[i] = src[i] * scale;
                std::vector<float> unused(src.size());
                roundArray(Format::fp32, scaled.data(), unused.data(), scaled.size(), nullptr, &expectedHist);
                QVERIFY(hist == expectedHist);
            }
        }
    }

    // FP8 held as codes: each code is the specification's encoding (encodeMini, checked by
    // tst_minifloat pattern by pattern) of the scalar reference's rounding, and decoding
    // gives quantizeScaled's values bit for bit, with its counts, histogram and amax, on
    // every SIMD level; chunk boundaries (1024) crossed, and lengths around them.
    void codesAreTheEncodingsOfTheValues()
    {
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2}) {
            for (float scale : {1.0f, 0.3125f, 3.7f, 1024.0f, 1.0f / 65536.0f}) {
                auto src = probeValues(f, 11u + static_cast<unsigned>(f));
                src.resize(src.size() + 2500, 0.75f);   // past a few chunks
                for (std::size_t i = src.size() - 2500; i < src.size(); ++i) src[i] = float(i % 977) * 0.37f - 150.0f;
                const float scaleInv = 1.0f / scale;
                std::vector<float> values(src.size());
                RoundingStats stats;
                GradientHistogram hist;
                const float amax = quantizeScaled(f, src.data(), values.data(), src.size(), scale, scaleInv, &stats,
                                                  &hist);
                for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
                    ScopedSimdCap cap(level);
                    for (const bool withHistogram : {false, true}) {
                        std::vector<std::uint8_t> codes(src.size());
                        RoundingStats codeStats;
                        GradientHistogram codeHist;
                        const float codeAmax = quantizeToCodes(f, src.data(), codes.data(), src.size(), scale,
                                                               &codeStats, withHistogram ? &codeHist : nullptr);
                        QVERIFY(std::isnan(codeAmax) && std::isnan(amax));   // the probe values hold a NaN
                        QCOMPARE(codeStats, stats);
                        if (withHistogram) QVERIFY(codeHist == hist);
                        std::vector<float> decoded(src.size());
                        decodeScaled(f, codes.data(), decoded.data(), codes.size(), scaleInv);
                        for (std::size_t i = 0; i < src.size(); ++i) {
                            const auto expected = encodeMini(f, roundToMini(f, src[i] * scale, Overflow::saturate),
                                                             Overflow::saturate);
                            if (codes[i] != *expected || !sameValue(decoded[i], values[i]))
                                QFAIL(qPrintable(QString("%1 scale %2: %3 gave code %4 (expected %5), value %6 "
                                                         "(quantizeScaled %7)")
                                                     .arg(QString::fromLatin1(miniFormatInfo(f).name.data()))
                                                     .arg(double(scale)).arg(double(src[i]), 0, 'g', 9)
                                                     .arg(codes[i]).arg(*expected).arg(double(decoded[i]), 0, 'g', 9)
                                                     .arg(double(values[i]), 0, 'g', 9)));
                        }
                    }
                }
            }
        }
        // Every code decodes to its value (the specification's, decodeMini) times the scale's
        // inverse, on every SIMD level, a tail after the vectors' lanes included.
        for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
            ScopedSimdCap cap(level);
            for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2}) {
                std::vector<std::uint8_t> all(256 + 7);
                for (std::size_t c = 0; c < all.size(); ++c) all[c] = static_cast<std::uint8_t>((c * 37 + 11) % 256);
                std::vector<float> decoded(all.size());
                decodeScaled(f, all.data(), decoded.data(), all.size(), 0.25f);
                for (std::size_t c = 0; c < all.size(); ++c)
                    QVERIFY(sameValue(decoded[c], decodeMini(f, all[c]) * 0.25f));
            }
        }
        // From 16-bit patterns (fp16, bf16; every pattern, NaN and infinities included): the
        // codes, counts and amax of the widened values, and (quantizeScaled) their values.
        for (Format from : {Format::fp16, Format::bf16}) {
            std::vector<std::uint16_t> patterns(65536 + 100);
            for (std::size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<std::uint16_t>(i * 40503u);
            std::vector<float> wide(patterns.size());
            widenArray(from, patterns.data(), wide.data(), wide.size());
            for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
                ScopedSimdCap cap(level);
                std::vector<std::uint8_t> expected(wide.size()), got(wide.size());
                RoundingStats expectedStats, gotStats;
                const float a = quantizeToCodes(MiniFormat::e5m2, wide.data(), expected.data(), wide.size(), 0.5f,
                                                &expectedStats, nullptr);
                const float b = quantizeToCodes(MiniFormat::e5m2, from, patterns.data(), got.data(), patterns.size(),
                                                0.5f, &gotStats, nullptr);
                QVERIFY(expected == got);
                QCOMPARE(gotStats, expectedStats);
                // ... and quantizeScaled's values, counts, histogram and amax (quantizeScaled
                // checked against the specification above), with a histogram and without.
                for (const bool withHistogram : {false, true}) {
                    std::vector<float> values(wide.size()), fromPatterns(wide.size());
                    RoundingStats valueStats, patternStats;
                    GradientHistogram valueHist, patternHist;
                    const float c = quantizeScaled(MiniFormat::e5m2, wide.data(), values.data(), wide.size(), 0.5f,
                                                   2.0f, &valueStats, withHistogram ? &valueHist : nullptr);
                    const float d = quantizeScaled(MiniFormat::e5m2, from, patterns.data(), fromPatterns.data(),
                                                   patterns.size(), 0.5f, 2.0f, &patternStats,
                                                   withHistogram ? &patternHist : nullptr);
                    for (std::size_t i = 0; i < wide.size(); ++i)
                        if (!sameValue(values[i], fromPatterns[i])) QFAIL(qPrintable(QString("pattern %1").arg(i)));
                    QCOMPARE(patternStats, valueStats);
                    QVERIFY(patternHist == valueHist);
                    QVERIFY(sameValue(c, d) && std::isnan(d));   // the patterns hold NaNs
                }
                QVERIFY(sameValue(a, b) && sameValue(amaxOf(from, patterns.data(), patterns.size()),
                                                     amaxOf(wide.data(), wide.size())));
                std::vector<std::uint16_t> finite = {0x3F80, 0xC000, 0x0001};   // 1, -2, a subnormal (bf16)
                QCOMPARE(amaxOf(Format::bf16, finite.data(), finite.size()), 2.0f);
            }
        }
        // The formats below 8 bits are refused by name.
        std::uint8_t code = 0;
        const float one = 1.0f;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 quantizeToCodes(MiniFormat::e2m1, &one, &code, 1, 1.0f, nullptr, nullptr));
    }

    void inPlaceAndAmax()
    {
        std::vector<float> x = {0.5f, -3.0f, 1e-3f, 700.0f, -0.0f};
        const float amax = quantizeScaled(MiniFormat::e4m3, x.data(), x.data(), x.size(), 1.0f, 1.0f, nullptr,
                                          nullptr);
        QCOMPARE(amax, 700.0f);
        QCOMPARE(x[3], 448.0f);   // saturated
        QCOMPARE(x[1], -3.0f);
        QCOMPARE(x[2], 0.001953125f);   // above 2^-10, half the smallest subnormal: up to 2^-9
        // amaxOf on the vector and the portable path, every length up to 70 (tails of 16).
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> log2(-140.0f, 100.0f);
        for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
            ScopedSimdCap cap(level);
            std::vector<float> withNaN = {1.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f};
            QVERIFY(std::isnan(amaxOf(withNaN.data(), withNaN.size())));
            std::vector<float> withInf = {1.0f, -INFINITY};
            QCOMPARE(amaxOf(withInf.data(), withInf.size()), INFINITY);
            QCOMPARE(amaxOf(nullptr, 0), 0.0f);
            std::vector<float> negativeZero = {-0.0f, -0.0f};
            QVERIFY(amaxOf(negativeZero.data(), 2) == 0.0f && !std::signbit(amaxOf(negativeZero.data(), 2)));
            for (std::size_t n = 1; n <= 70; ++n) {
                std::vector<float> v(n);
                for (auto& x : v) x = (rng() % 2 ? -1.0f : 1.0f) * std::exp2(log2(rng));   // subnormals too
                float expected = 0.0f;
                for (float x : v) expected = std::max(expected, std::fabs(x));
                QCOMPARE(amaxOf(v.data(), n), expected);
                v[rng() % n] = std::numeric_limits<float>::quiet_NaN();
                QVERIFY(std::isnan(amaxOf(v.data(), n)));
            }
        }
    }

    void transformerEngineScaleRule()
    {
        // sf = (fp8_max / amax) / 2^margin in fp32 (transformer_engine/pytorch/fp8.py).
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, 448.0f, 1.0f, 0), 1.0f);
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, 1.0f, 1.0f, 0), 448.0f);
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, 1.0f, 1.0f, 2), 112.0f);
        QCOMPARE(fp8ScaleFor(MiniFormat::e5m2, 0.001f, 1.0f, 0), 57344.0f / 0.001f);
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, 3.0f, 1.0f, -1), (448.0f / 3.0f) * 2.0f);
        // No information: the previous scale stays.
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, 0.0f, 5.0f, 0), 5.0f);
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, INFINITY, 5.0f, 0), 5.0f);
        QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, std::numeric_limits<float>::quiet_NaN(), 5.0f, 0), 5.0f);
        // The ratio overflows fp32: the largest finite fp32.
        QCOMPARE(fp8ScaleFor(MiniFormat::e5m2, 1e-40f, 1.0f, 0), std::numeric_limits<float>::max());
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> log2(-30.0f, 30.0f);
        for (int i = 0; i < 1000; ++i) {
            const float amax = std::exp2(log2(rng));
            const float expected = (448.0f / amax) / 8.0f;
            QCOMPARE(fp8ScaleFor(MiniFormat::e4m3, amax, 1.0f, 3), expected);
        }
    }

    void mxBlocksAlongRowsAndColumns_data()
    {
        QTest::addColumn<qint64>("rows");
        QTest::addColumn<qint64>("cols");
        QTest::addColumn<qint64>("ld");
        QTest::newRow("70 x 45") << qint64(70) << qint64(45) << qint64(50);   // partial blocks both ways; a stride
        // Rows of 35 blocks: the row kernel's two whole groups of 16 blocks and a third with a tail.
        QTest::newRow("40 x 1100") << qint64(40) << qint64(1100) << qint64(1104);
    }
    void mxBlocksAlongRowsAndColumns()
    {
        QFETCH(qint64, rows);
        QFETCH(qint64, cols);
        QFETCH(qint64, ld);
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> log2(-20.0f, 20.0f);
        std::uniform_int_distribution<int> sign(0, 1);
        // The vector kernels where the CPU has them, the portable path forced, and with a
        // histogram (which takes the portable path).
        qInfo("quantize path on this CPU: %s", quantizePath());
        // Both roundings of the block exponent (issue 38): floor, the OCP reference, and ceil,
        // Transformer Engine's, through each path, against mxQuantize's own computation.
        for (MxScaleRounding rounding : {MxScaleRounding::floor, MxScaleRounding::ceil})
        for (const Path& path : paths())
        for (MiniFormat f : kFormats) {
            const MiniFormatInfo& info = miniFormatInfo(f);
            for (bool alongRows : {true, false}) {
                std::vector<float> src(static_cast<std::size_t>(rows * ld), -99.0f);
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = 0; c < cols; ++c)
                        src[static_cast<std::size_t>(r * ld + c)] = (sign(rng) ? -1.0f : 1.0f) * std::exp2(log2(rng));
                // A block of zeros, one of fp32 subnormals (its scale clamps to 2^-127), NaNs,
                // an infinity, an outlier, scattered zeros.
                const auto atLine = [&](std::int64_t line, std::int64_t k) {
                    return static_cast<std::size_t>(alongRows ? line * ld + k : k * ld + line);
                };
                for (std::int64_t k = 0; k < 32; ++k) {
                    src[atLine(2, k)] = 0.0f;
                    src[atLine(3, k)] = (k % 2 ? -1.0f : 1.0f) * std::ldexp(float(k + 1), -140);
                }
                src[static_cast<std::size_t>(5 * ld + 7)] = std::numeric_limits<float>::quiet_NaN();
                src[static_cast<std::size_t>(33 * ld + cols - 2)] = std::numeric_limits<float>::quiet_NaN();
                src[static_cast<std::size_t>(30 * ld + 40)] = -INFINITY;
                src[static_cast<std::size_t>(20 * ld + 3)] = 1e30f;
                for (std::int64_t i = 0; i < rows * cols; i += 97) src[static_cast<std::size_t>((i / cols) * ld + i % cols)] = 0.0f;
                std::vector<float> dst(src.size(), -99.0f);
                RoundingStats stats;
                GradientHistogram scales;
                GradientHistogram hist;
                {
                    ScopedSimdCap cap(path.level);
                    quantizeMxBlocks(f, src.data(), dst.data(), rows, cols, ld, alongRows, &stats,
                                     path.withHistogram ? &hist : nullptr, &scales, rounding);
                }

                GradientHistogram expectedScales;
                RoundingStats expected;   // as quantize.h defines them, from the scalar results
                const std::int64_t lines = alongRows ? rows : cols, length = alongRows ? cols : rows;
                for (std::int64_t line = 0; line < lines; ++line) {
                    for (std::int64_t k0 = 0; k0 < length; k0 += kMxBlockSize) {
                        const std::int64_t k1 = std::min<std::int64_t>(length, k0 + kMxBlockSize);
                        std::vector<float> block;
                        for (std::int64_t k = k0; k < k1; ++k) block.push_back(src[atLine(line, k)]);
                        const MxBlock ref = mxQuantize(f, block.data(), block.size(), rounding);
                        if (ref.nanScale)
                            ++expectedScales.nonFinite;
                        else
                            ++expectedScales.bins[static_cast<std::size_t>(GradientHistogram::binOf(ref.scaleExponent))];
                        for (std::int64_t k = k0; k < k1; ++k) {
                            const std::size_t i = static_cast<std::size_t>(k - k0);
                            QVERIFY2(sameValue(dst[atLine(line, k)], ref.value(i)),
                                     qPrintable(QString("%7 format %1 %2 line %3 element %4: %5 vs %6")
                                                    .arg(int(f)).arg(alongRows ? "rows" : "columns").arg(line).arg(k)
                                                    .arg(double(dst[atLine(line, k)])).arg(double(ref.value(i)))
                                                    .arg(QString::fromLatin1(mxScaleRoundingName(rounding).data()))));
                            ++expected.count;
                            if (ref.nanScale) {
                                ++expected.nan;
                                continue;
                            }
                            // V_i / X in fp32 (the 1e30 outlier's block flushes its tiny values to 0 there).
                            const auto given = static_cast<float>(std::ldexp(double(block[i]), -ref.scaleExponent));
                            const float element = std::fabs(ref.elements[i]);
                            expected.zerosIn += given == 0.0f;
                            expected.underflow += given != 0.0f && element == 0.0f;
                            expected.subnormal += element != 0.0f && element < std::ldexp(1.0f, info.minNormalLog2);
                            expected.overflow += saturates(f, given);
                        }
                    }
                }
                QVERIFY(scales == expectedScales);
                QVERIFY(expectedScales.nonFinite > 0);   // NaN blocks, and scales of 2^-127
                QVERIFY(expectedScales.bins[static_cast<std::size_t>(GradientHistogram::binOf(-127))] > 0);
                QCOMPARE(stats.count, expected.count);
                QCOMPARE(stats.nan, expected.nan);
                QCOMPARE(stats.infIn, std::uint64_t(0));   // an infinity makes its block NaN
                QCOMPARE(stats.zerosIn, expected.zerosIn);
                QCOMPARE(stats.underflow, expected.underflow);
                QCOMPARE(stats.subnormal, expected.subnormal);
                QCOMPARE(stats.overflow, expected.overflow);
                QVERIFY(stats.underflow > 0);   // the outlier's block
                // floor clips a block's largest values above the largest finite; ceil never does.
                if (rounding == MxScaleRounding::floor)
                    QVERIFY(stats.overflow > 0);
                else
                    QCOMPARE(stats.overflow, std::uint64_t(0));
                // Outside the matrix (the stride's gap) nothing is written.
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = cols; c < ld; ++c) QCOMPARE(dst[static_cast<std::size_t>(r * ld + c)], -99.0f);
            }
        }
    }
    void nvfp4BlocksAlongRowsAndColumns_data()
    {
        QTest::addColumn<qint64>("rows");
        QTest::addColumn<qint64>("cols");
        QTest::addColumn<qint64>("ld");
        QTest::newRow("37 x 45") << qint64(37) << qint64(45) << qint64(50);   // partial blocks both ways; a stride
        // Rows of 19 blocks: the row kernel's whole group of 16 blocks and one with a tail.
        QTest::newRow("37 x 300") << qint64(37) << qint64(300) << qint64(304);
    }
    void nvfp4BlocksAlongRowsAndColumns()
    {
        QFETCH(qint64, rows);
        QFETCH(qint64, cols);
        QFETCH(qint64, ld);
        std::mt19937 rng(12);
        // A range wider than E4M3's block scales reach (448 / 2^-9 = 2^17.8), so some blocks'
        // scales round to 0 and lose their values, as small blocks of a large tensor do.
        std::uniform_real_distribution<float> log2(-24.0f, 6.0f);
        std::uniform_int_distribution<int> sign(0, 1);
        // The vector kernels where the CPU has them, the portable path forced, and with a
        // histogram (the portable path).
        for (bool inPlace : {false, true})
        for (const Path& path : paths())
        for (bool alongRows : {true, false}) {
            const bool withHist = path.withHistogram;
            std::vector<float> src(static_cast<std::size_t>(rows * ld), -99.0f);
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = 0; c < cols; ++c) {
                    // Each line's scale differs, so blocks differ in their amax by up to 2^30.
                    const float lineScale = std::exp2(static_cast<float>((alongRows ? r : c) % 7) * -3.0f);
                    src[static_cast<std::size_t>(r * ld + c)] =
                        (sign(rng) ? -1.0f : 1.0f) * std::exp2(log2(rng)) * lineScale;
                }
            for (std::int64_t k = 0; k < kNvfp4BlockSize; ++k)   // a block of zeros
                src[static_cast<std::size_t>(alongRows ? 2 * ld + k : k * ld + 2)] = 0.0f;
            src[static_cast<std::size_t>(5 * ld + 7)] = std::numeric_limits<float>::quiet_NaN();
            src[static_cast<std::size_t>(30 * ld + 40)] = -INFINITY;
            // The whole tensor's amax is larger than this part's: the caller's, as a layer
            // quantising its lowered input chunk by chunk passes the input's.
            const float tensorAmax = 300.0f;
            const std::vector<float> original = src;
            std::vector<float> dst(src.size(), -99.0f);
            float* out = inPlace ? src.data() : dst.data();
            RoundingStats stats;
            GradientHistogram scales, hist;
            {
                ScopedSimdCap cap(path.level);
                quantizeNvfp4Blocks(src.data(), out, rows, cols, ld, alongRows, tensorAmax, &stats,
                                    withHist ? &hist : nullptr, &scales);
            }

            const float tensorScale = nvfp4TensorScale(tensorAmax);
            QCOMPARE(tensorScale, 448.0f * 6.0f / 300.0f);
            GradientHistogram expectedScales;
            std::uint64_t saturated = 0, lost = 0, zeroScaleBlocks = 0, subnormal = 0, nan = 0;
            const std::int64_t lines = alongRows ? rows : cols, length = alongRows ? cols : rows;
            for (std::int64_t line = 0; line < lines; ++line) {
                for (std::int64_t k0 = 0; k0 < length; k0 += kNvfp4BlockSize) {
                    const std::int64_t k1 = std::min<std::int64_t>(length, k0 + kNvfp4BlockSize);
                    auto at = [&](std::int64_t k) {
                        return static_cast<std::size_t>(alongRows ? line * ld + k : k * ld + line);
                    };
                    std::vector<float> block;
                    for (std::int64_t k = k0; k < k1; ++k) block.push_back(original[at(k)]);
                    const Nvfp4Block ref = nvfp4Quantize(block.data(), block.size(), tensorScale);
                    if (ref.nanScale) {
                        ++expectedScales.nonFinite;
                    } else if (ref.decodeScale() == 0.0f) {
                        ++expectedScales.zeros;
                    } else {
                        int e = 0;
                        std::frexp(ref.decodeScale(), &e);
                        ++expectedScales.bins[static_cast<std::size_t>(GradientHistogram::binOf(e - 1))];
                    }
                    zeroScaleBlocks += !ref.nanScale && ref.blockScale == 0.0f;
                    const float elementScale =
                        std::min(1.0f / ref.decodeScale(), std::numeric_limits<float>::max());
                    for (std::int64_t k = k0; k < k1; ++k) {
                        const std::size_t i = static_cast<std::size_t>(k - k0);
                        QVERIFY2(sameValue(out[at(k)], ref.value(i)),
                                 qPrintable(QString("%1 line %2 element %3: %4 vs %5")
                                                .arg(alongRows ? "rows" : "columns").arg(line).arg(k)
                                                .arg(double(out[at(k)])).arg(double(ref.value(i)))));
                        nan += ref.nanScale;
                        if (ref.nanScale) continue;
                        lost += block[i] != 0.0f && ref.elements[i] == 0.0f;
                        subnormal += std::fabs(ref.elements[i]) == 0.5f;   // E2M1's one subnormal
                        if (ref.blockScale != 0.0f) saturated += saturates(MiniFormat::e2m1, block[i] * elementScale);
                    }
                }
            }
            QVERIFY(scales == expectedScales);
            QVERIFY(zeroScaleBlocks > 0);   // the test reaches the blocks that lose everything
            QCOMPARE(stats.count, std::uint64_t(rows * cols));
            QCOMPARE(stats.underflow, lost);
            QCOMPARE(stats.overflow, saturated);
            QCOMPARE(stats.subnormal, subnormal);
            QCOMPARE(stats.infIn, std::uint64_t(0));   // an infinity makes its block NaN
            // The NaN and infinity blocks (along rows of 45: 16 + 13, cols 32..44).
            QCOMPARE(stats.nan, nan);
            QVERIFY(nan >= 29);
            std::uint64_t zerosIn = 0;
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = 0; c < cols; ++c) zerosIn += original[static_cast<std::size_t>(r * ld + c)] == 0.0f;
            QCOMPARE(stats.zerosIn, zerosIn);
            if (withHist) QCOMPARE(hist.total(), std::uint64_t(rows * cols));
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = cols; c < ld; ++c) QCOMPARE(out[static_cast<std::size_t>(r * ld + c)], -99.0f);
        }
    }
};

QTEST_APPLESS_MAIN(TestQuantize)
#include "tst_quantize.moc"
