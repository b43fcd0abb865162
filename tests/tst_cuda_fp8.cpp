// Tests the CUDA backend's FP8 recipes on a device (issue 15): per-tensor quantisation and
// the amax against the CPU backend bit for bit (values, statistics, histogram; operands
// held as 1-byte codes too: quantised into codes, decoded, lowered by im2col), and the
// GEMM on FP8 codes (cuBLASLt, compute capability 8.9 and newer; the dequantised values in
// fp32 before) against a double-precision sum of the same dequantised operands, within a
// bound derived from fp32 accumulation. Without a device the suite is skipped with the
// reason, and CTest reports it as skipped. (The element arithmetic on the host, everywhere:
// tst_cuda_kernel_math.)
// links: plab_backend_cpu plab_backend plab_test_support
#include "cuda_test_support.h"
#include "tensor/byte_buffer.h"
#include "tensor/tensor.h"

#include <tuple>
#include <utility>

namespace {

// A (rows, cols) matrix with leading dimension ld quantised per tensor to f on the CPU (the
// emulation's operand: q * scaleInv), with its scale chosen as Transformer Engine's current
// scaling would; a NaN sentinel in the gaps (a GEMM that reads one poisons its result).
struct Fp8Matrix {
    std::vector<float> values;
    Fp8Operand operand;
};

Fp8Matrix fp8Matrix(MiniFormat f, std::int64_t rows, std::int64_t cols, std::int64_t ld, Rng& rng, double spread)
{
    std::vector<float> dense(static_cast<std::size_t>(rows * cols));
    for (float& x : dense)
        x = static_cast<float>(std::exp2(spread * (rng.uniform() - 0.5)) * ((rng.next() & 1) ? -1.0 : 1.0));
    Fp8Matrix m;
    m.operand.on = true;
    m.operand.element = f;
    m.operand.scale = fp8ScaleFor(f, amaxOf(dense.data(), dense.size()), 1.0f, 0);
    m.operand.scaleInv = 1.0f / m.operand.scale;
    quantizeScaled(f, dense.data(), dense.data(), dense.size(), m.operand.scale, m.operand.scaleInv, nullptr,
                   nullptr);
    m.values.assign(static_cast<std::size_t>(rows * ld), kNaN);
    for (std::int64_t r = 0; r < rows; ++r)
        std::copy_n(dense.begin() + r * cols, cols, m.values.begin() + r * ld);
    return m;
}

}  // namespace

class TestCudaFp8 : public QObject {
    Q_OBJECT

    std::unique_ptr<ComputeBackend> cuda_;
    std::unique_ptr<ComputeBackend> cpu_;

    Tensor onDevice(const std::vector<float>& values)
    {
        Tensor t(Shape{static_cast<std::int64_t>(values.size())});
        t.assignFromHost(values.data(), static_cast<std::int64_t>(values.size()));
        t.place(cuda_->allocator());
        return t;
    }

    // Whether this device multiplies FP8 codes (its arithmetic phrase for FP8 operands).
    bool fp8TensorCores(const GemmPrecision& p) const
    {
        return cuda_->arithmeticFor(p).rfind("hardware: FP8 tensor cores", 0) == 0;
    }

private slots:
    void initTestCase()
    {
        // convolutionsGiveWayToFp8Gemms needs cuDNN's convolutions, which the backend runs
        // only when asked (cuda_conv.h: by default the layer lowers them, measured faster).
        qputenv("PLAB_CUDNN_PASSES", "all");
        const BackendInfo info = probeAnyCuda();
        if (!info.available) {
            const std::string reason = info.reason.empty() ? std::string("no reason given") : info.reason;
            QSKIP(qPrintable(QString::fromStdString("skipped: no CUDA device (" + reason + ")")));
        }
        if (probeCudaBackend().available) {
            cuda_ = createCudaBackend(0);
        } else {
            char error[512] = {};
            ComputeBackend* backend = plugin().create(0, error, sizeof error);
            QVERIFY2(backend != nullptr, error);
            cuda_.reset(backend);
        }
        cpu_ = createCpuBackend(2);
        qInfo("CUDA backend: %s", cuda_->info().reason.c_str());
        QVERIFY(cuda_->info().capabilities.quantizes);
        QVERIFY(!cuda_->info().capabilities.quantizesBlocks);
        QVERIFY(!cuda_->info().capabilities.blocksLimitation.empty());
    }

    void cleanupTestCase() { cuda_.reset(); }

    // The same values, counts (after flush) and histogram as the CPU backend, and the same
    // amax, NaN included; in place and without telemetry too.
    void quantizeMatchesCpuExactly_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<float>("scale");
        for (MiniFormat f : {MiniFormat::e4m3, MiniFormat::e5m2})
            for (float scale : {1.0f, 448.0f / 3.7f, 3.0e30f})
                QTest::addRow("%s scale %g", std::string(miniFormatInfo(f).name).c_str(), static_cast<double>(scale))
                    << static_cast<int>(f) << scale;
    }
    void quantizeMatchesCpuExactly()
    {
        QFETCH(int, format);
        QFETCH(float, scale);
        auto [in, op] = quantizeCase(format, scale, (1u << 20) + 3, 300);
        const auto n = static_cast<std::int64_t>(in.size());
        std::vector<float> cpuOut(in.size());
        Tensor dIn = onDevice(in), dOut = onDevice(std::vector<float>(in.size()));
        RoundingStats cudaStats, cpuStats;
        GradientHistogram cudaHist, cpuHist;
        const float cudaAmax = cuda_->quantize(op, dIn.data(), dOut.data(), n, &cudaStats, &cudaHist, nullptr);
        const float cpuAmax = cpu_->quantize(op, in.data(), cpuOut.data(), n, &cpuStats, &cpuHist, nullptr);
        QVERIFY(sameFloat(cudaAmax, cpuAmax) && std::isnan(cpuAmax));
        QVERIFY(sameValues(dOut.toHost(), cpuOut));
        cuda_->flush();
        QCOMPARE(cudaStats, asDeviceCounts(cpuStats));
        QVERIFY(cudaHist == cpuHist);
        QVERIFY(cpuStats.underflow > 0 && cpuStats.overflow > 0 && cpuStats.subnormal > 0);
        cuda_->quantize(op, dIn.data(), dIn.data(), n, nullptr, nullptr, nullptr);
        QVERIFY(sameValues(dIn.toHost(), cpuOut));
    }

    void amaxMatchesCpu()
    {
        std::vector<float> values = telemetryData(100003, 9);
        Tensor withNan = onDevice(values);
        QVERIFY(std::isnan(cuda_->amax(withNan.data(), static_cast<std::int64_t>(values.size()))));
        std::erase_if(values, [](float x) { return std::isnan(x) || std::isinf(x); });
        Tensor finite = onDevice(values);
        QVERIFY(sameFloat(cuda_->amax(finite.data(), static_cast<std::int64_t>(values.size())),
                          cpu_->amax(values.data(), static_cast<std::int64_t>(values.size()))));
        QCOMPARE(cuda_->amax(finite.data(), 0), 0.0f);
    }

    // Per-tensor FP8 operands held as codes on the device (BackendOp::fp8Codes), against the CPU
    // backend bit for bit: codes from fp32 and from fp16 / bf16 patterns, a 16-bit dY
    // straight into values, the amax of patterns, the codes decoded (rows with leading
    // dimensions) and lowered by im2col; the same counts and histograms.
    void codesMatchCpuExactly_data() { quantizeMatchesCpuExactly_data(); }
    void codesMatchCpuExactly()
    {
        QFETCH(int, format);
        QFETCH(float, scale);
        QVERIFY(cuda_->supports(BackendOp::fp8Codes));
        auto [in, op] = quantizeCase(format, scale, (1u << 18) + 5, 500);
        const auto n = static_cast<std::int64_t>(in.size());
        const auto bytes = static_cast<std::size_t>(n);
        auto codesOnHost = [&](const ByteBuffer& b) {
            std::vector<std::uint8_t> host(b.size());
            cuda_->allocator()->download(host.data(), b.data(), b.size());
            return host;
        };

        Tensor dIn = onDevice(in);
        ByteBuffer dCodes;
        dCodes.resize(bytes, cuda_->allocator());
        std::vector<std::uint8_t> cpuCodes(bytes);
        RoundingStats cudaStats, cpuStats;
        GradientHistogram cudaHist, cpuHist;
        QVERIFY(sameFloat(cuda_->quantizeToCodes(op, dIn.data(), dCodes.data(), n, &cudaStats, &cudaHist),
                          cpu_->quantizeToCodes(op, in.data(), cpuCodes.data(), n, &cpuStats, &cpuHist)));
        cuda_->flush();
        QVERIFY(codesOnHost(dCodes) == cpuCodes);
        QCOMPARE(cudaStats, asDeviceCounts(cpuStats));
        QVERIFY(cudaHist == cpuHist);

        // Decoded whole, and as rows of 1000 with leading dimensions (a gap left as it was).
        std::vector<float> cpuDecoded(in.size());
        cpu_->decodeFp8(op.element, op.scaleInv, cpuCodes.data(), n, cpuDecoded.data(), n, 1, n);
        Tensor dDecoded = onDevice(std::vector<float>(in.size(), 5.0f));
        cuda_->decodeFp8(op.element, op.scaleInv, dCodes.data(), n, dDecoded.data(), n, 1, n);
        QVERIFY(sameValues(dDecoded.toHost(), cpuDecoded));
        const std::int64_t rows = n / 1000, cols = 990;
        std::vector<float> cpuRows(static_cast<std::size_t>(rows * 1003), 5.0f);
        Tensor dRows = onDevice(cpuRows);
        cpu_->decodeFp8(op.element, op.scaleInv, cpuCodes.data(), 1000, cpuRows.data(), 1003, rows, cols);
        cuda_->decodeFp8(op.element, op.scaleInv, dCodes.data(), 1000, dRows.data(), 1003, rows, cols);
        QVERIFY(sameValues(dRows.toHost(), cpuRows));

        // im2col of a (C, N, H, W) tensor held as codes, a sample range of its batch.
        const ConvGeometry g{4, 6, 10, 12, 3, 1};
        const std::int64_t n0 = 2, count = 3;
        const auto colsSize = static_cast<std::size_t>(g.patchSize() * count * g.planeSize());
        QVERIFY(g.channels * g.batch * g.planeSize() <= n);
        std::vector<float> cpuCols(colsSize);
        Tensor dCols = onDevice(std::vector<float>(colsSize, 5.0f));
        cpu_->im2colFp8(g, op.element, op.scaleInv, cpuCodes.data(), n0, count, cpuCols.data());
        cuda_->im2colFp8(g, op.element, op.scaleInv, dCodes.data(), n0, count, dCols.data());
        QVERIFY(sameValues(dCols.toHost(), cpuCols));

        for (Format from : {Format::fp16, Format::bf16}) {
            std::vector<float> representable(in.size());
            for (std::size_t i = 0; i < in.size(); ++i)
                representable[i] = ck::floatFromBits(ck::widenBits16(
                    static_cast<int>(from), ck::narrowBits16(static_cast<int>(from), ck::floatBits(in[i]))));
            Tensor host(Shape{n}, from);
            host.assignFromHost(representable.data(), n);
            host.pack();
            const std::vector<std::uint16_t> bits(host.bits16(), host.bits16() + n);
            Tensor packed(host);
            packed.place(cuda_->allocator());
            QVERIFY(packed.packed());

            RoundingStats cs, gs, cvs, gvs;
            GradientHistogram ch, gh, cvh, gvh;
            std::vector<std::uint8_t> cpuCodes16(bytes);
            QVERIFY(sameFloat(cuda_->quantize16ToCodes(op, from, packed.bits16(), dCodes.data(), n, &gs, &gh),
                              cpu_->quantize16ToCodes(op, from, bits.data(), cpuCodes16.data(), n, &cs, &ch)));
            std::vector<float> cpuValues(in.size());
            Tensor dValues = onDevice(std::vector<float>(in.size()));
            QVERIFY(sameFloat(cuda_->quantize16(op, from, packed.bits16(), dValues.data(), n, &gvs, &gvh),
                              cpu_->quantize16(op, from, bits.data(), cpuValues.data(), n, &cvs, &cvh)));
            cuda_->flush();
            QVERIFY(codesOnHost(dCodes) == cpuCodes16);
            QVERIFY(sameValues(dValues.toHost(), cpuValues));
            QCOMPARE(gs, cs);
            QCOMPARE(gvs, cvs);
            QVERIFY(gh == ch && gvh == cvh);
            QVERIFY(sameFloat(cuda_->amax16(from, packed.bits16(), n), cpu_->amax16(from, bits.data(), n)));
        }
    }

    // Block formats are not quantised here: the trainer refuses MX and NVFP4 on this backend.
    void quantizeRefusesBlocks()
    {
        std::vector<float> values(64, 1.0f);
        Tensor t = onDevice(values);
        QuantizeOp op;
        op.blocks = true;
        op.rows = 2;
        op.cols = 32;
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cuda_->quantize(op, t.data(), t.data(), 64, nullptr, nullptr, nullptr));
    }

    // op(A) (M, K) by op(B) (K, N) of FP8 operands, every transpose, sizes no tile divides
    // (K = 9 as the first convolution's patch; padded leading dimensions), beta 0 and 1,
    // E4M3 x E4M3, E5M2 x E4M3, E4M3 x E5M2 (cuBLASLt's FP8 kernels) and E5M2 x E5M2 (which it
    // has none for: the dequantised values in fp32). Against the double sum of the same
    // dequantised products, S = sum_k |a_ik b_kj|: in fp32, |gpu - ref| <= 2 (K + 1) 2^-24 S
    // + 2^-23 |ref| (fp32 accumulation of K terms); on FP8 codes 2^-8 S + 2^-23 |ref|.
    // Hopper's FP8 tensor cores keep only about 14 bits while they sum a chunk of K before
    // cuBLASLt promotes the partial sum to fp32 (measured by DeepSeek-AI, DeepSeek-V3
    // Technical Report, 2024, section 3.3.2): modelled as each product aligned to the
    // largest of its chunk of 32 and cut to 13 fraction bits, a chunk's error is below
    // 32 * 2^-13 = 2^-8 of its largest |product|, so below 2^-8 of its share of S. (A
    // review's simulation of that model on this test's data reached 3 * 2^-12 S, above the
    // 2^-12 first written here.) The test prints the largest error it saw, for the record.
    // The emulation's operands are one fp32 rounding away from the codes'. A wrong scale or
    // layout is off by far more; the codes themselves are checked bit for bit on the host
    // (tst_cuda_kernel_math).
    void gemmOnCodesAgreesWithDoubleSum_data()
    {
        QTest::addColumn<int>("formatA");
        QTest::addColumn<int>("formatB");
        QTest::addColumn<bool>("transA");
        QTest::addColumn<bool>("transB");
        QTest::addColumn<qlonglong>("M");
        QTest::addColumn<qlonglong>("N");
        QTest::addColumn<qlonglong>("K");
        QTest::addColumn<float>("beta");
        using F = MiniFormat;
        const std::tuple<F, F> pairs[] = {{F::e4m3, F::e4m3}, {F::e5m2, F::e4m3}, {F::e4m3, F::e5m2}, {F::e5m2, F::e5m2}};
        const std::tuple<qlonglong, qlonglong, qlonglong> shapes[] = {{37, 45, 70}, {8, 300, 9}, {64, 128, 256}};
        for (const auto& [fa, fb] : pairs)
            for (int trans = 0; trans < 4; ++trans)
                for (const auto& [M, N, K] : shapes)
                    for (float beta : {0.0f, 1.0f})
                        QTest::addRow("%s x %s %c%c %lldx%lldx%lld beta %g", std::string(miniFormatInfo(fa).name).c_str(),
                                      std::string(miniFormatInfo(fb).name).c_str(), (trans & 1) ? 'T' : 'N',
                                      (trans & 2) ? 'T' : 'N', M, N, K, static_cast<double>(beta))
                            << static_cast<int>(fa) << static_cast<int>(fb) << bool(trans & 1) << bool(trans & 2) << M
                            << N << K << beta;
    }
    void gemmOnCodesAgreesWithDoubleSum()
    {
        QFETCH(int, formatA);
        QFETCH(int, formatB);
        QFETCH(bool, transA);
        QFETCH(bool, transB);
        QFETCH(qlonglong, M);
        QFETCH(qlonglong, N);
        QFETCH(qlonglong, K);
        QFETCH(float, beta);
        const std::int64_t rowsA = transA ? K : M, colsA = transA ? M : K, lda = colsA + 3;
        const std::int64_t rowsB = transB ? N : K, colsB = transB ? K : N, ldb = colsB + 5;
        const std::int64_t ldc = N + 2;
        Rng rng{static_cast<std::uint64_t>(formatA * 1000 + formatB * 100 + transA * 10 + transB + M + K)};
        const Fp8Matrix A = fp8Matrix(static_cast<MiniFormat>(formatA), rowsA, colsA, lda, rng, 12.0);
        const Fp8Matrix B = fp8Matrix(static_cast<MiniFormat>(formatB), rowsB, colsB, ldb, rng, 12.0);
        // beta == 0 never reads C: NaN everywhere then, so a read shows; the gaps beyond N
        // are NaN always (never written).
        std::vector<float> C0(static_cast<std::size_t>(M * ldc), kNaN);
        if (beta != 0.0f)
            for (std::int64_t i = 0; i < M; ++i)
                for (std::int64_t j = 0; j < N; ++j) C0[static_cast<std::size_t>(i * ldc + j)] = rng.uniform(-4.0f, 4.0f);
        GemmPrecision precision;
        precision.a = A.operand;
        precision.b = B.operand;
        const bool codes = fp8TensorCores(precision);
        qInfo("%s", cuda_->arithmeticFor(precision).c_str());
        if (formatA == static_cast<int>(MiniFormat::e5m2) && formatB == static_cast<int>(MiniFormat::e5m2))
            QVERIFY(!codes);   // cuBLASLt has no E5M2 x E5M2 kernel
        Tensor dA = onDevice(A.values), dB = onDevice(B.values), dC = onDevice(C0);
        const auto op = [](bool t) { return t ? Transpose::yes : Transpose::no; };
        cuda_->gemm(op(transA), op(transB), M, N, K, dA.data(), lda, dB.data(), ldb, beta, dC.data(), ldc, precision);
        const std::vector<float> got = dC.toHost();
        const auto a = [&](std::int64_t i, std::int64_t k) {
            return static_cast<double>(A.values[static_cast<std::size_t>(transA ? k * lda + i : i * lda + k)]);
        };
        const auto b = [&](std::int64_t k, std::int64_t j) {
            return static_cast<double>(B.values[static_cast<std::size_t>(transB ? j * ldb + k : k * ldb + j)]);
        };
        double worst = 0.0;
        for (std::int64_t i = 0; i < M; ++i) {
            for (std::int64_t j = 0; j < N; ++j) {
                double sum = beta == 0.0f ? 0.0 : beta * static_cast<double>(C0[static_cast<std::size_t>(i * ldc + j)]);
                double magnitude = std::abs(sum);
                for (std::int64_t k = 0; k < K; ++k) {
                    sum += a(i, k) * b(k, j);
                    magnitude += std::abs(a(i, k) * b(k, j));
                }
                const double sums = codes ? 0x1.0p-8 : 2.0 * static_cast<double>(K + 1) * 0x1.0p-24;
                const double bound = sums * magnitude + 0x1.0p-23 * std::abs(sum);
                const double error = std::abs(static_cast<double>(got[static_cast<std::size_t>(i * ldc + j)]) - sum);
                worst = std::max(worst, magnitude > 0 ? error / magnitude : error);
                if (!(error <= bound))
                    QFAIL(qPrintable(QString("C[%1][%2]: cuda %3, double %4, bound %5")
                                         .arg(i).arg(j).arg(got[static_cast<std::size_t>(i * ldc + j)]).arg(sum).arg(bound)));
            }
            for (std::int64_t j = N; j < ldc; ++j)   // the gaps are never written
                QVERIFY(std::isnan(got[static_cast<std::size_t>(i * ldc + j)]));
        }
        qInfo("%s: largest error %.3g of sum |products|", codes ? "FP8 codes" : "dequantised fp32", worst);
    }

    // The convolutions of FP8 operands are refused where the GEMM runs on codes, so that the
    // layer lowers them to that GEMM; elsewhere cuDNN runs on the dequantised values.
    void convolutionsGiveWayToFp8Gemms()
    {
        GemmPrecision precision;
        precision.a = {true, MiniFormat::e4m3, 2.0f, 0.5f};
        precision.b = precision.a;
        if (!fp8TensorCores(precision)) QSKIP("not supported: this device has no FP8 tensor cores (compute < 8.9)");
        // x (C 1, N 2, 6, 6), w (Cout 4, 1, 3, 3), y (4, 2, 6, 6).
        const ConvGeometry g{1, 2, 6, 6, 3, 1};
        std::vector<float> x(72, 0.5f), w(36, 0.5f), y(288);
        Tensor dx = onDevice(x), dw = onDevice(w), dy = onDevice(y);
        // The refusal means something only where cuDNN would otherwise run this shape.
        if (!cuda_->convolutionForward(g, 4, dx.data(), dw.data(), dy.data(), GemmPrecision{}))
            QSKIP("not supported: cuDNN is not built in, or runs no algorithm we accept for this shape");
        QVERIFY(!cuda_->convolutionForward(g, 4, dx.data(), dw.data(), dy.data(), precision));
        QVERIFY(!cuda_->convolutionBackwardData(g, 4, dw.data(), dy.data(), dx.data(), precision));
        QVERIFY(!cuda_->convolutionBackwardFilter(g, 4, dx.data(), dy.data(), dw.data(), precision));
    }
};

QTEST_GUILESS_MAIN(TestCudaFp8)
#include "tst_cuda_fp8.moc"
