// Tests the CUDA plugin's per-element arithmetic (kernel_math.h) on the host against the
// CPU reference, how it reads library statuses (cuda_status.h's CUDA-free part), and its
// probe: runs everywhere, with or without a GPU (issue 5).
// links: plab_backend_cpu plab_backend plab_test_support
#include "cuda_test_support.h"

// Only the status texts and kinds: this program sees no CUDA headers.
#define PLAB_CUDA_STATUS_TEXT_ONLY
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/cudnn16_passes.h"
#include "backend/cuda/memory_budget.h"
#include "numerics/simd_level.h"

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <map>

namespace {

namespace pc = plab::cuda;

// The cuDNN include folder the plugin was built with (PLAB_CUDNN_INCLUDE_DIR, set by
// tests/CMakeLists.txt); empty without one.
QString configuredCudnnIncludeDir()
{
#ifdef PLAB_CUDNN_INCLUDE_DIR
    return QStringLiteral(PLAB_CUDNN_INCLUDE_DIR);
#else
    return {};
#endif
}

// Every "CUDNN_STATUS_<NAME> = <number>" of cudnn_graph.h (aliases written as names are
// left out: they repeat a value), by value.
std::map<int, QString> cudnnStatusesOf(const QString& header)
{
    QFile file(header);
    std::map<int, QString> statuses;
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) return statuses;
    const QRegularExpression entry(QStringLiteral("\\b(CUDNN_STATUS_[A-Z0-9_]+)\\s*=\\s*([0-9]+)\\s*[,}]"));
    for (auto it = entry.globalMatch(QString::fromUtf8(file.readAll())); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        statuses.emplace(m.captured(2).toInt(), m.captured(1));
    }
    return statuses;
}

}  // namespace

// ---- Runs everywhere: the device arithmetic on the host, and the probe ------------------

class TestCudaKernelMath : public QObject {
    Q_OBJECT

private slots:
    // Every fp32 pattern whose low bits sit at or next to a rounding boundary of fp16 /
    // tf32 (13 dropped bits) or bf16 (16), for every sign, exponent and upper mantissa.
    void roundBitsMatchesCpuAtEveryBoundary_data()
    {
        QTest::addColumn<int>("format");
        QTest::addRow("tf32") << static_cast<int>(Format::tf32);
        QTest::addRow("fp16") << static_cast<int>(Format::fp16);
        QTest::addRow("bf16") << static_cast<int>(Format::bf16);
        QTest::addRow("fp32") << static_cast<int>(Format::fp32);
    }
    void roundBitsMatchesCpuAtEveryBoundary()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const int dropped = f == Format::bf16 ? 16 : 13;
        const std::uint32_t half = 1u << (dropped - 1), full = (1u << dropped) - 1;
        const std::uint32_t lows[] = {0, 1, half - 1, half, half + 1, full};
        std::uint64_t mismatches = 0;
        for (std::uint32_t high = 0; high < (1u << (32 - dropped)); ++high)
            for (std::uint32_t low : lows) {
                const std::uint32_t u = (high << dropped) | low;
                const std::uint32_t cpu = std::bit_cast<std::uint32_t>(roundTo(f, std::bit_cast<float>(u)));
                if (ck::roundBits(format, u) != cpu && mismatches++ < 5)
                    qWarning("0x%08x: kernel 0x%08x, cpu 0x%08x", u, ck::roundBits(format, u), cpu);
            }
        QCOMPARE(mismatches, std::uint64_t{0});
    }

    // fp16 subnormal results have their rounding point at every bit from 13 to 24: all fp32
    // values from 2^-26 to 2^-14, both signs, exhaustively.
    void fp16SubnormalRangeExhaustive()
    {
        std::uint64_t mismatches = 0;
        for (std::uint32_t u = 0x32800000u; u < 0x38800000u; ++u)
            for (std::uint32_t sign : {0u, 0x80000000u}) {
                const std::uint32_t x = u | sign;
                const auto cpu = std::bit_cast<std::uint32_t>(roundTo(Format::fp16, std::bit_cast<float>(x)));
                mismatches += ck::roundBits(ck::kFp16, x) != cpu;
            }
        QCOMPARE(mismatches, std::uint64_t{0});
    }

    // All 65,536 fp16 and bf16 patterns widen as the CPU widens them, and narrow back.
    void sixteenBitPatternsRoundTrip()
    {
        for (std::uint32_t h = 0; h < 65536; ++h) {
            const auto bits = static_cast<std::uint16_t>(h);
            const std::uint32_t wide = ck::fp16BitsToFp32Bits(bits);
            QCOMPARE(wide, std::bit_cast<std::uint32_t>(fp16BitsToFp32(bits)));
            QCOMPARE(ck::fp32ToFp16Bits(wide), fp32ToFp16Bits(std::bit_cast<float>(wide)));
            const std::uint32_t wideBf = static_cast<std::uint32_t>(bits) << 16;
            QCOMPARE(ck::fp32ToBf16Bits(wideBf), fp32ToBf16Bits(std::bit_cast<float>(wideBf)));
        }
    }

    // The kernel's counters, element by element, give exactly the CPU's RoundingStats and
    // histogram (the GPU adds the same integers in another order).
    void statsAndHistogramMatchCpu_data()
    {
        QTest::addColumn<int>("format");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
            QTest::addRow("%s", std::string(formatName(f)).c_str()) << static_cast<int>(f);
    }
    void statsAndHistogramMatchCpu()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const std::vector<float> in = telemetryData(200000, 17 + static_cast<std::uint64_t>(format));
        std::vector<float> kernelOut, cpuOut(in.size());
        RoundingStats kernelStats, cpuStats;
        GradientHistogram kernelHist, cpuHist;
        emulateRoundKernel(f, in, kernelOut, kernelStats, kernelHist);
        plab::roundArray(f, in.data(), cpuOut.data(), in.size(), &cpuStats, &cpuHist);
        QVERIFY(sameBits(kernelOut, cpuOut));
        QCOMPARE(kernelStats, asDeviceCounts(cpuStats));
        QVERIFY(kernelHist == cpuHist);
        // The data reach every counter the test is meant to pin.
        if (f == Format::fp16) QVERIFY(cpuStats.underflow > 0 && cpuStats.overflow > 0 && cpuStats.subnormal > 0);
        QVERIFY(cpuStats.nan > 0 && cpuStats.infIn > 0 && cpuStats.zerosIn > 0);
    }

    // ---- FP8 per-tensor quantisation (kernel_fp8.h) against numerics/quantize.h ----------

    void fp8RuleMatchesTheFormatTable()
    {
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2}) {
            const MiniFormatInfo& info = miniFormatInfo(f);
            const ck::Fp8Rule rule = ck::fp8Rule(static_cast<int>(f));
            QCOMPARE(rule.minNormalLog2, info.minNormalLog2);
            QCOMPARE(rule.maxExponent, std::ilogb(info.maxFinite));
            QCOMPARE(rule.mantissaBits, info.mantissaBits);
            QCOMPARE(rule.bias, info.bias);
            QCOMPARE(static_cast<double>(rule.maxFinite), info.maxFinite);
            QCOMPARE(rule.minNormal, std::ldexp(1.0f, info.minNormalLog2));
        }
    }

    // The kernel's values, statistics, histogram and amax equal quantizeScaled's (both of
    // its paths) over every rounding boundary of the format and spread fp32 data with every
    // special class, for scales of 1, TE-like ratios and the extremes.
    void fp8QuantizeMatchesCpu_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<float>("scale");
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2}) {
            const std::string name(miniFormatInfo(f).name);
            for (float scale : {1.0f, 448.0f / 3.7f, 0x1.0p-20f, 3.0e30f})
                QTest::addRow("%s scale %g", name.c_str(), static_cast<double>(scale)) << static_cast<int>(f) << scale;
        }
    }
    void fp8QuantizeMatchesCpu()
    {
        QFETCH(int, format);
        QFETCH(float, scale);
        const auto f = static_cast<MiniFormat>(format);
        const auto [in, op] = quantizeCase(format, scale, 100000, 71);
        const float scaleInv = op.scaleInv;
        std::vector<float> kernelOut;
        RoundingStats kernelStats;
        GradientHistogram kernelHist;
        const float kernelAmax = emulateQuantizeFp8Kernel(f, in, scale, scaleInv, kernelOut, kernelStats, kernelHist);
        // The CPU's vector path (no histogram) and its scalar path (with one).
        std::vector<float> vectorOut(in.size()), scalarOut(in.size());
        RoundingStats vectorStats, scalarStats;
        GradientHistogram cpuHist;
        const float vectorAmax =
            quantizeScaled(f, in.data(), vectorOut.data(), in.size(), scale, scaleInv, &vectorStats, nullptr);
        const float scalarAmax =
            quantizeScaled(f, in.data(), scalarOut.data(), in.size(), scale, scaleInv, &scalarStats, &cpuHist);
        QVERIFY(sameValues(kernelOut, scalarOut));
        QVERIFY(sameValues(kernelOut, vectorOut));
        QCOMPARE(kernelStats, asDeviceCounts(scalarStats));
        QCOMPARE(kernelStats, asDeviceCounts(vectorStats));
        QVERIFY(kernelHist == cpuHist);
        QVERIFY(sameFloat(kernelAmax, scalarAmax) && sameFloat(kernelAmax, vectorAmax));
        QVERIFY(std::isnan(kernelAmax));   // the data hold a NaN
        // The data reach every counter the test pins.
        QVERIFY(kernelStats.underflow > 0 && kernelStats.overflow > 0 && kernelStats.subnormal > 0);
        QVERIFY(kernelStats.nan > 0 && kernelStats.infIn > 0 && kernelStats.zerosIn > 0);
        // Without the NaNs the amax is the largest magnitude, an infinity included.
        std::vector<float> finite;
        for (float x : in)
            if (!std::isnan(x)) finite.push_back(x);
        std::vector<float> ignored;
        RoundingStats s;
        GradientHistogram h;
        QVERIFY(sameFloat(emulateQuantizeFp8Kernel(f, finite, scale, scaleInv, ignored, s, h),
                          amaxOf(finite.data(), finite.size())));
    }

    // fp8Code gives every pattern of both formats back from its value (encodeMini's patterns;
    // NaN as the format's NaN of that sign).
    void fp8CodeOfEveryPattern()
    {
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2})
            for (unsigned c = 0; c < 256; ++c) {
                const auto bits = static_cast<std::uint8_t>(c);
                const float v = decodeMini(f, bits);
                const std::uint8_t code = ck::fp8Code(static_cast<int>(f), v);
                if (std::isnan(v)) {
                    QCOMPARE(code, static_cast<std::uint8_t>((c & 0x80u) | 0x7Fu));
                    QVERIFY(std::isnan(decodeMini(f, code)));
                } else {
                    QCOMPARE(code, bits);   // E5M2's infinities too
                    if (std::isfinite(v)) QCOMPARE(code, *encodeMini(f, v, Overflow::saturate));
                }
            }
    }

    // The operand the quantiser wrote (q * scaleInv in fp32) gives q's code back for every
    // finite q of both formats and scales over 2^-60 .. 2^60, except where q * scaleInv is an
    // fp32 subnormal (bits of q already lost in the emulation's operand): counted, and only there.
    void fp8CodeOfOperandRecoversTheCode()
    {
        Rng rng{5};
        std::vector<float> scales = {1.0f, 448.0f / 3.7f, 57344.0f / 0.0123f, 0x1.0p-20f, 1e30f, 3.0e38f};
        for (int i = 0; i < 500; ++i) scales.push_back(static_cast<float>(std::exp2(-60.0 + 120.0 * rng.uniform())));
        std::uint64_t checked = 0, subnormalOperands = 0;
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2})
            for (float scale : scales)
                for (unsigned c = 0; c < 256; ++c) {
                    const float q = decodeMini(f, static_cast<std::uint8_t>(c));
                    if (!std::isfinite(q)) continue;
                    const float x = q * (1.0f / scale);
                    if (x != 0.0f && std::fabs(x) < std::numeric_limits<float>::min()) {
                        ++subnormalOperands;
                        continue;
                    }
                    ++checked;
                    const std::uint8_t code = ck::fp8CodeOfOperand(static_cast<int>(f), x, scale);
                    if (code != c) QFAIL(qPrintable(QString("%1 code %2 scale %3: got %4").arg(int(f)).arg(c)
                                                        .arg(static_cast<double>(scale)).arg(code)));
                }
        QVERIFY(checked > 200000);
        QVERIFY(subnormalOperands > 0);   // the scale 3e38 reaches them
        qInfo("checked %llu operands; %llu fp32-subnormal operands left out", static_cast<unsigned long long>(checked),
              static_cast<unsigned long long>(subnormalOperands));
    }

    // The kernels that hold codes (quantise into codes, from fp32 or from 16-bit patterns,
    // and a 16-bit dY straight into values) against the CPU's quantizeToCodes and
    // quantizeScaled: the same codes, values, statistics, histogram and amax, over the
    // boundaries and spread data of fp8QuantizeMatchesCpu (the 16-bit data are those values
    // rounded to fp16 and to bf16).
    void fp8CodesMatchCpu_data() { fp8QuantizeMatchesCpu_data(); }
    void fp8CodesMatchCpu()
    {
        QFETCH(int, format);
        QFETCH(float, scale);
        const auto f = static_cast<MiniFormat>(format);
        const auto [in, op] = quantizeCase(format, scale, 50000, 171);
        const float scaleInv = op.scaleInv;

        std::vector<float> kernelOut;
        std::vector<std::uint8_t> kernelCodes, cpuCodes(in.size());
        RoundingStats kernelStats, cpuStats;
        GradientHistogram kernelHist, cpuHist;
        const float kernelAmax =
            emulateQuantizeFp8Kernel(f, in, scale, scaleInv, kernelOut, kernelStats, kernelHist, &kernelCodes);
        const float cpuAmax = quantizeToCodes(f, in.data(), cpuCodes.data(), in.size(), scale, &cpuStats, &cpuHist);
        QVERIFY(kernelCodes == cpuCodes);
        QCOMPARE(kernelStats, asDeviceCounts(cpuStats));
        QVERIFY(kernelHist == cpuHist);
        QVERIFY(sameFloat(kernelAmax, cpuAmax));
        QVERIFY(kernelStats.underflow > 0 && kernelStats.overflow > 0 && kernelStats.nan > 0);
        // A NaN is not multiplied (the device's multiply would give its positive canonical
        // NaN, and a negative NaN's code its sign bit): a signalling one comes through as it
        // is, which no multiply leaves it, and codes as the CPU's, sign included.
        for (const std::uint32_t nanBits : {0xFF800001u, 0x7F800001u, 0xFFC00000u}) {
            const float nan = ck::floatFromBits(nanBits);
            QCOMPARE(ck::floatBits(ck::fp8Element(ck::fp8Rule(format), nan, scale).x), nanBits);
            std::uint8_t cpuCode = 0;
            quantizeToCodes(f, &nan, &cpuCode, 1, scale, nullptr, nullptr);
            QCOMPARE(ck::fp8Code(format, ck::fp8Element(ck::fp8Rule(format), nan, scale).q), cpuCode);
            QCOMPARE(cpuCode & 0x80, static_cast<int>(nanBits >> 31) << 7);
        }

        for (Format from : {Format::fp16, Format::bf16}) {
            const int f16 = static_cast<int>(from);
            std::vector<std::uint16_t> bits(in.size());
            std::vector<float> widened(in.size());
            for (std::size_t i = 0; i < in.size(); ++i) {
                bits[i] = ck::narrowBits16(f16, ck::floatBits(in[i]));
                widened[i] = ck::floatFromBits(ck::widenBits16(f16, bits[i]));
            }
            std::vector<float> values16, cpuValues16(in.size());
            std::vector<std::uint8_t> codes16, cpuCodes16(in.size());
            RoundingStats ks, cs, vs;
            GradientHistogram kh, ch, vh;
            const float amax16 = emulateQuantizeFp8Kernel(f, widened, scale, scaleInv, values16, ks, kh, &codes16);
            const float cpuAmax16 =
                quantizeToCodes(f, from, bits.data(), cpuCodes16.data(), bits.size(), scale, &cs, &ch);
            const float cpuValuesAmax = quantizeScaled(f, from, bits.data(), cpuValues16.data(), bits.size(), scale,
                                                       scaleInv, &vs, &vh);
            QVERIFY(codes16 == cpuCodes16);
            QVERIFY(sameValues(values16, cpuValues16));
            QCOMPARE(ks, cs);
            QCOMPARE(ks, vs);
            QVERIFY(kh == ch && kh == vh);
            QVERIFY(sameFloat(amax16, cpuAmax16) && sameFloat(amax16, cpuValuesAmax));
        }
    }

    // A held code decodes to what the CPU's decodeScaled gives (every SIMD path it has
    // here: capped to scalar, AVX2, AVX-512), every code of both formats, several copies so
    // the vector loops and their tails run, for scales of 1, TE-like ratios and the extremes;
    // and the values equal what quantisation writes for the same q (q * scaleInv).
    void fp8DecodeMatchesCpu()
    {
        std::vector<std::uint8_t> codes;
        for (int copy = 0; copy < 3; ++copy)
            for (unsigned c = 0; c < 256; ++c) codes.push_back(static_cast<std::uint8_t>(c * 37 + copy));
        for (unsigned c = 0; c < 13; ++c) codes.push_back(static_cast<std::uint8_t>(c));
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2})
            for (float scale : {1.0f, 448.0f / 3.7f, 0x1.0p-20f, 3.0e30f, 57344.0f / 0.0123f}) {
                const float scaleInv = 1.0f / scale;
                std::vector<float> kernel(codes.size());
                for (std::size_t i = 0; i < codes.size(); ++i)
                    kernel[i] = ck::fp8Decoded(static_cast<int>(f), codes[i], scaleInv);
                for (SimdLevel cap : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512}) {
                    const ScopedSimdCap capped(cap);
                    std::vector<float> cpu(codes.size());
                    decodeScaled(f, codes.data(), cpu.data(), codes.size(), scaleInv);
                    QVERIFY2(sameValues(kernel, cpu), qPrintable(QString("%1, scale %2, cap %3")
                                                                     .arg(miniFormatInfo(f).name.data())
                                                                     .arg(static_cast<double>(scale))
                                                                     .arg(static_cast<int>(cap))));
                }
                for (unsigned c = 0; c < 256; ++c) {
                    const float v = decodeMini(f, static_cast<std::uint8_t>(c));
                    if (!std::isfinite(v)) continue;
                    QVERIFY(sameFloat(ck::fp8Decoded(static_cast<int>(f), static_cast<std::uint8_t>(c), scaleInv),
                                      ck::mulRn(v, scaleInv)));
                }
            }
    }

    // im2col from codes (the kernel's index map and decoding) gives the CPU backend's
    // im2colFp8 columns bit for bit, padding included, over a sample range of the batch.
    void im2colFp8MatchesCpu()
    {
        const ConvGeometry g{3, 5, 4, 6, 5, 2};
        const std::int64_t n0 = 1, count = 3, hw = g.planeSize();
        auto cpu = createCpuBackend(2);
        Rng rng{7};
        std::vector<std::uint8_t> src(static_cast<std::size_t>(g.channels * g.batch * hw));
        for (auto& c : src) c = static_cast<std::uint8_t>(rng.uniform() * 256.0);
        const float scaleInv = 1.0f / 37.5f;
        const auto colsSize = static_cast<std::size_t>(g.patchSize() * count * hw);
        const ck::ConvShape shape{g.channels, g.batch, g.height, g.width, g.kernel, g.pad};
        const std::int64_t columns = count * hw;
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2}) {
            std::vector<float> cpuCols(colsSize, 9.0f), kernelCols(colsSize);
            cpu->im2colFp8(g, f, scaleInv, src.data(), n0, count, cpuCols.data());
            for (std::size_t i = 0; i < colsSize; ++i) {
                const std::int64_t from = ck::im2colSource(shape, n0, count, static_cast<std::int64_t>(i) / columns,
                                                           static_cast<std::int64_t>(i) % columns);
                kernelCols[i] =
                    from < 0 ? 0.0f : ck::fp8Decoded(static_cast<int>(f), src[static_cast<std::size_t>(from)], scaleInv);
            }
            QVERIFY(sameValues(kernelCols, cpuCols));
            QVERIFY(std::count(kernelCols.begin(), kernelCols.end(), 0.0f) > 0);   // padding reached
        }
    }

    // im2col / col2im index maps of the kernels reproduce the CPU backend bit for bit,
    // over a sample range inside the batch (the device copies only those samples).
    void convIndexMapsMatchCpu_data()
    {
        QTest::addColumn<int>("kernel");
        QTest::addColumn<int>("height");
        QTest::addColumn<int>("width");
        QTest::addRow("3x3 pad 1") << 3 << 4 << 6;
        QTest::addRow("5x5 pad 2") << 5 << 4 << 6;
        QTest::addRow("1x1 pad 0") << 1 << 4 << 6;
        // Planes no wider (or taller) than a shift: whole rows and columns of padding.
        QTest::addRow("5x5 pad 2, 2 x 3") << 5 << 2 << 3;
        QTest::addRow("5x5 pad 2, 3 x 1") << 5 << 3 << 1;
        QTest::addRow("3x3 pad 1, 1 x 2") << 3 << 1 << 2;
    }
    void convIndexMapsMatchCpu()
    {
        QFETCH(int, kernel);
        QFETCH(int, height);
        QFETCH(int, width);
        const ConvGeometry g{3, 5, height, width, kernel, kernel / 2};   // (C, N, H, W)
        const std::int64_t n0 = 1, count = 3, hw = g.planeSize();
        auto cpu = createCpuBackend(2);
        Rng rng{99};
        std::vector<float> src(static_cast<std::size_t>(g.channels * g.batch * hw));
        for (auto& x : src) x = static_cast<float>(rng.uniform() * 2.0 - 1.0);
        const auto colsSize = static_cast<std::size_t>(g.patchSize() * count * hw);

        std::vector<float> cpuCols(colsSize), kernelCols(colsSize);
        cpu->im2col(g, src.data(), n0, count, cpuCols.data());
        // The device holds the dense block (C, count, H, W) of samples [n0, n0 + count).
        std::vector<float> block(static_cast<std::size_t>(g.channels * count * hw));
        for (std::int64_t c = 0; c < g.channels; ++c)
            std::memcpy(block.data() + c * count * hw, src.data() + (c * g.batch + n0) * hw,
                        static_cast<std::size_t>(count * hw) * sizeof(float));
        const ck::ConvShape shape{g.channels, count, g.height, g.width, g.kernel, g.pad};
        const std::int64_t columns = count * hw;
        for (std::size_t i = 0; i < colsSize; ++i) {
            const std::int64_t from = ck::im2colSource(shape, 0, count, static_cast<std::int64_t>(i) / columns,
                                                       static_cast<std::int64_t>(i) % columns);
            kernelCols[i] = from < 0 ? 0.0f : block[static_cast<std::size_t>(from)];
        }
        QVERIFY(sameBits(kernelCols, cpuCols));

        std::vector<float> cpuDst(src.size(), 7.0f), kernelDst(src.size(), 7.0f);
        cpu->col2im(g, cpuCols.data(), n0, count, cpuDst.data(), 0);
        for (std::int64_t i = 0; i < g.channels * count * hw; ++i) {
            float sum = 0.0f;   // the kernel's gather, kk in order from +0
            for (int kk = 0; kk < g.kernel * g.kernel; ++kk)
                if (const std::int64_t from = ck::col2imTerm(shape, count, i, kk); from >= 0)
                    sum += cpuCols[static_cast<std::size_t>(from)];
            const std::int64_t c = i / (count * hw), n = (i / hw) % count;
            kernelDst[static_cast<std::size_t>((c * g.batch + n0 + n) * hw + i % hw)] = sum;
        }
        QVERIFY(sameBits(kernelDst, cpuDst));   // samples outside the range untouched in both

        // The same columns with their rows further apart (colsLd): the same sums, on both.
        const std::int64_t ld = columns + 5;
        std::vector<float> strided(static_cast<std::size_t>(g.patchSize() * ld), -3.0f);
        for (std::int64_t r = 0; r < g.patchSize(); ++r)
            std::memcpy(strided.data() + r * ld, cpuCols.data() + r * columns, static_cast<std::size_t>(columns) * sizeof(float));
        std::vector<float> cpuStrided(src.size(), 7.0f), kernelStrided(src.size(), 7.0f);
        cpu->col2im(g, strided.data(), n0, count, cpuStrided.data(), ld);
        for (std::int64_t i = 0; i < g.channels * count * hw; ++i) {
            float sum = 0.0f;
            for (int kk = 0; kk < g.kernel * g.kernel; ++kk)
                if (const std::int64_t from = ck::col2imTerm(shape, count, i, kk, ld); from >= 0)
                    sum += strided[static_cast<std::size_t>(from)];
            const std::int64_t c = i / (count * hw), n = (i / hw) % count;
            kernelStrided[static_cast<std::size_t>((c * g.batch + n0 + n) * hw + i % hw)] = sum;
        }
        QVERIFY(sameBits(cpuStrided, cpuDst));
        QVERIFY(sameBits(kernelStrided, cpuDst));
    }

    // The statuses the convolutions act on: only shape-class refusals may be dropped (and
    // lowered); the five environment statuses of cuDNN 9 are errors that say what is wrong;
    // a status the table does not know is an error too, never "not supported".
    void cudnnStatusKindsFollowCudnn9()
    {
        using K = pc::CudnnStatusKind;
        QCOMPARE(pc::cudnnStatusKind(0), K::success);
        for (int shape : {3000, 3001, 3002, 3003, 3004, 3010, 3011, 3012, 3013, 3014})
            QCOMPARE(pc::cudnnStatusKind(shape), K::shapeNotSupported);
        for (int environment = 3005; environment <= 3009; ++environment) {
            QCOMPARE(pc::cudnnStatusKind(environment), K::environment);
            const std::string meaning = pc::cudnnStatusMeaning(environment);
            QVERIFY2(meaning.rfind("cuDNN cannot run here: ", 0) == 0, meaning.c_str());
        }
        for (int other : {1001, 1008, 2000, 2002, 3015, 3999, 4000, 4004, 5000, 5003, 9000, -1})
            QCOMPARE(pc::cudnnStatusKind(other), K::failure);
        QCOMPARE(std::string(pc::cudnnStatusMeaning(3002)), std::string("not supported"));
        QCOMPARE(std::string(pc::cudnnStatusMeaning(2000)), std::string("bad parameter"));
        QCOMPARE(std::string(pc::cudnnStatusMeaning(5001)), std::string("execution failed"));
    }

    // Against the cuDNN headers this build was configured with: every status of the 3xxx
    // class has a kind of its own (shape or environment, not the fallback), exactly the five
    // environment names are environment, and no other status is taken for "not supported".
    void cudnnStatusKindsCoverTheConfiguredHeader()
    {
        const QString dir = configuredCudnnIncludeDir();
        if (dir.isEmpty()) QSKIP("not supported: this build was configured without cuDNN headers");
        const QString header = dir + QStringLiteral("/cudnn_graph.h");
        const std::map<int, QString> statuses = cudnnStatusesOf(header);
        // The suite also runs on machines other than the build's (the GPU kit): no headers there.
        if (!QFileInfo::exists(header)) QSKIP(qPrintable("not supported: " + header + " is not on this machine"));
        if (statuses.empty()) QSKIP(qPrintable("not supported: no cuDNN 9 status enum in " + header));
        qInfo("%zu cuDNN statuses in %s", statuses.size(), qPrintable(header));
        const QStringList environmentNames = {
            "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART",
            "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
            "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE"};
        int notSupportedClass = 0, environment = 0;
        for (const auto& [value, name] : statuses) {
            const pc::CudnnStatusKind kind = pc::cudnnStatusKind(value);
            const QByteArray what = (name + " = " + QString::number(value)).toUtf8();
            if (value == 0) {
                QVERIFY2(kind == pc::CudnnStatusKind::success, what.constData());
            } else if (value / 1000 == 3) {
                ++notSupportedClass;
                const bool isEnvironment = environmentNames.contains(name);
                environment += isEnvironment;
                QVERIFY2(kind == (isEnvironment ? pc::CudnnStatusKind::environment
                                                : pc::CudnnStatusKind::shapeNotSupported),
                         what.constData());
            } else {
                QVERIFY2(kind == pc::CudnnStatusKind::failure, what.constData());
            }
        }
        QCOMPARE(environment, int(environmentNames.size()));   // the header still names all five
        QVERIFY(notSupportedClass > environment);               // and the parse saw the rest
    }

    // A context-losing CUDA error says that only a restart brings the GPU back; any other
    // keeps the plain "<call> failed: <description> (<name>)".
    void cudaErrorMessageSaysWhenTheContextIsLost()
    {
        QCOMPARE(pc::cudaErrorMessage("cudaMalloc", "out of memory", "cudaErrorMemoryAllocation", false),
                 std::string("cudaMalloc failed: out of memory (cudaErrorMemoryAllocation)"));
        QCOMPARE(pc::cudaErrorMessage("cudaStreamSynchronize", "an illegal memory access was encountered",
                                      "cudaErrorIllegalAddress", true),
                 std::string("cudaStreamSynchronize failed: an illegal memory access was encountered "
                             "(cudaErrorIllegalAddress). The GPU context is lost: restart Precision Lab to use the "
                             "GPU again"));
    }

    // PLAB_CUDA_MEMORY_BUDGET_MIB: unset or empty is no budget; a whole number of MiB from 1
    // to 2^40 is that many bytes; anything else is refused, naming the variable and the value.
    void memoryBudgetIsWholeMib()
    {
        using plab::cuda::memoryBudgetBytes;
        QCOMPARE(memoryBudgetBytes(nullptr), std::uint64_t{0});
        QCOMPARE(memoryBudgetBytes(""), std::uint64_t{0});
        QCOMPARE(memoryBudgetBytes("1"), std::uint64_t{1} << 20);
        QCOMPARE(memoryBudgetBytes("8192"), std::uint64_t{8} << 30);
        QCOMPARE(memoryBudgetBytes("1099511627776"), std::uint64_t{1} << 60);
        for (const char* bad : {"0", "-1", "8.5", "8 GiB", " 8", "1099511627777", "99999999999999999999999", "0x10"}) {
            try {
                memoryBudgetBytes(bad);
                QFAIL(qPrintable(QString("accepted \"%1\"").arg(bad)));
            } catch (const std::invalid_argument& e) {
                const std::string why = e.what();
                QVERIFY2(why.find("PLAB_CUDA_MEMORY_BUDGET_MIB") != std::string::npos, e.what());
                QVERIFY2(why.find(std::string("\"") + bad + "\"") != std::string::npos, e.what());
            }
        }
    }

    // PLAB_CUDNN_16: the passes it names, and a refusal naming the variable and the value
    // for anything else (the backend is then not made, with that reason).
    void cudnn16PassesAreNamed()
    {
        using plab::cuda::cudnn16Passes;
        const auto is = [](plab::cuda::Cudnn16Passes p, bool forward, bool filter, bool data = false) {
            return p.forward == forward && p.filter == filter && p.data == data;
        };
        QVERIFY(is(cudnn16Passes(nullptr), false, false));
        QVERIFY(is(cudnn16Passes(""), false, false));
        QVERIFY(is(cudnn16Passes("none"), false, false));
        QVERIFY(is(cudnn16Passes("forward"), true, false));
        QVERIFY(is(cudnn16Passes("filter"), false, true));
        QVERIFY(is(cudnn16Passes("data"), false, false, true));
        QVERIFY(is(cudnn16Passes("forward,filter"), true, true));
        QVERIFY(is(cudnn16Passes("filter,forward"), true, true));
        QVERIFY(is(cudnn16Passes("forward,data,filter"), true, true, true));
        for (const char* bad : {"all", "Forward", "forward,", ",filter", "forward,,filter", "forward filter", "none,forward",
                                "Data", "data,"}) {
            try {
                cudnn16Passes(bad);
                QFAIL(qPrintable(QString("accepted \"%1\"").arg(bad)));
            } catch (const std::invalid_argument& e) {
                const std::string why = e.what();
                QVERIFY2(why.find("PLAB_CUDNN_16") != std::string::npos, e.what());
                QVERIFY2(why.find(std::string("\"") + bad + "\"") != std::string::npos, e.what());
            }
        }
    }

    // The probe never crashes and, without a device, says why; the engine refuses to
    // create the backend with that reason. Holds whether or not the plugin was built.
    void probeReportsUnavailableWithReason()
    {
        const BackendInfo engine = probeCudaBackend();
        QCOMPARE(engine.name, std::string("cuda"));
        qInfo("engine probe: %s", engine.available ? "available" : engine.reason.c_str());
        if (!engine.available) {
            QVERIFY(engine.reason.rfind("unavailable: ", 0) == 0);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, createCudaBackend(0));
        }
        const Plugin& p = plugin();
        if (p.path.empty()) {
            qInfo("plugin: not built (no libplab_cuda.so beside the test or in %s/app)", PLAB_BINARY_DIR);
            return;
        }
        if (!p.handle) {
            qInfo("plugin %s does not load here: %s", p.path.c_str(), p.error.c_str());
            return;
        }
        QVERIFY2(p.probe && p.create, "the plugin lacks an entry point of backend.h");
        BackendInfo direct;
        p.probe(&direct);
        QCOMPARE(direct.name, std::string("cuda"));
        QVERIFY(!direct.reason.empty());
        QVERIFY(!direct.versions.empty());   // runtime, driver, cuBLAS and cuDNN versions, always
        qInfo("plugin probe (%s): %s", p.path.c_str(), direct.available ? "available" : direct.reason.c_str());
        for (const auto& v : direct.versions) qInfo("  %s", v.c_str());
        if (direct.available) return;
        QVERIFY(direct.reason.rfind("unavailable: ", 0) == 0);
        char error[512] = "untouched";
        QVERIFY(p.create(0, error, sizeof error) == nullptr);
        QCOMPARE(std::string(error), direct.reason);
        char tiny[8];   // a short buffer gets a truncated, terminated reason
        QVERIFY(p.create(0, tiny, sizeof tiny) == nullptr);
        QCOMPARE(std::strlen(tiny), std::size_t{7});
    }
};

QTEST_GUILESS_MAIN(TestCudaKernelMath)
#include "tst_cuda_kernel_math.moc"
