// Tests the hardware arithmetic (issue 16): the CPU backend's products of bf16/fp16
// operands on the CPU's native units through oneDNN, against a double-precision reference
// and against the exact arithmetic, in every transposition the layers use (linear and
// convolution forward, backward data, backward filter), with beta 0 and 1; NaN and inf
// exactly as the exact arithmetic gives them; and the fallback: a format without native
// units runs the exact arithmetic bit for bit, and says why. And training: amp-bf16 for
// 3 epochs under each arithmetic ends within 0.5 point of test accuracy.
#include "backend/backend.h"
#include "backend/cpu/native_gemm.h"
#include "data/dataset.h"
#include "numerics/format.h"
#include "train/trainer.h"

#include "test_support.h"

#include <QTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace plab;

namespace {

using Rng = plab::testing::SplitMix64;

std::vector<float> operand(Format f, std::int64_t n, Rng& rng)
{
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
        const double sign = (rng.next() & 1) ? -1.0 : 1.0;
        x = roundTo(f, static_cast<float>(sign * std::exp2(-4.0 + 8.0 * rng.uniform())));
    }
    return v;
}

struct Problem {
    Transpose ta = Transpose::no, tb = Transpose::no;
    std::int64_t M = 0, N = 0, K = 0;
    float beta = 0.0f;
    std::vector<float> A, B, C;
    std::int64_t lda() const { return ta == Transpose::no ? K : M; }
    std::int64_t ldb() const { return tb == Transpose::no ? N : K; }
    double a(std::int64_t i, std::int64_t k) const
    {
        return ta == Transpose::no ? A[static_cast<std::size_t>(i * K + k)] : A[static_cast<std::size_t>(k * M + i)];
    }
    double b(std::int64_t k, std::int64_t j) const
    {
        return tb == Transpose::no ? B[static_cast<std::size_t>(k * N + j)] : B[static_cast<std::size_t>(j * K + k)];
    }
};

Problem makeProblem(Format f, Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, float beta,
                    std::uint64_t seed)
{
    Rng rng(seed);
    Problem p{ta, tb, M, N, K, beta, operand(f, M * K, rng), operand(f, K * N, rng), operand(Format::fp32, M * N, rng)};
    return p;
}

std::vector<float> run(ComputeBackend& backend, const Problem& p, Format f)
{
    std::vector<float> C = p.C;
    backend.gemm(p.ta, p.tb, p.M, p.N, p.K, p.A.data(), p.lda(), p.B.data(), p.ldb(), p.beta, C.data(), p.N,
                 GemmPrecision{f, true});
    return C;
}

// One row of agreesWithDoublePrecision_data (which patternsGiveWhatValuesGive shares): the
// format and the product's shape.
struct GemmRow {
    Format f;
    Transpose ta, tb;
    std::int64_t M, N, K;
    float beta;
};
GemmRow fetchedRow()
{
    QFETCH(int, format);
    QFETCH(int, ta);
    QFETCH(int, tb);
    QFETCH(int, M);
    QFETCH(int, N);
    QFETCH(int, K);
    QFETCH(float, beta);
    return {static_cast<Format>(format), ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no,
            M, N, K, beta};
}

}  // namespace

class TestNativeGemm : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        const auto& s = cpu::nativeSupport();
        qInfo("oneDNN ISA %s; bf16: %s; fp16: %s", s.isa.c_str(), s.bf16Text.c_str(), s.fp16Text.c_str());
    }

    // Every element within the bound of an fp32 sum of exact products in any order:
    // |C - ref| <= (K + 1) * 2^-24 * (sum |a b| + |beta c|), ref in double. The exact
    // arithmetic meets the same bound (checked too, so the bound is not loose for one only).
    void agreesWithDoublePrecision_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("ta");
        QTest::addColumn<int>("tb");
        QTest::addColumn<int>("M");
        QTest::addColumn<int>("N");
        QTest::addColumn<int>("K");
        QTest::addColumn<float>("beta");
        for (Format f : {Format::bf16, Format::fp16}) {
            const char* name = f == Format::bf16 ? "bf16" : "fp16";
            // Linear: forward X W^T, backward data G W, backward filter G^T X; the
            // convolution's GEMMs (W cols, W^T G, G cols^T), a wide and a tall shape, beta 1.
            QTest::addRow("%s linear forward", name) << int(f) << 0 << 1 << 64 << 100 << 300 << 0.0f;
            QTest::addRow("%s linear backward data", name) << int(f) << 0 << 0 << 64 << 300 << 100 << 0.0f;
            QTest::addRow("%s linear backward filter", name) << int(f) << 1 << 0 << 100 << 300 << 64 << 0.0f;
            QTest::addRow("%s conv forward (wide)", name) << int(f) << 0 << 0 << 32 << 1568 << 288 << 0.0f;
            QTest::addRow("%s conv backward data", name) << int(f) << 1 << 0 << 288 << 1568 << 32 << 0.0f;
            QTest::addRow("%s conv backward filter, beta 1", name) << int(f) << 0 << 1 << 32 << 288 << 1568 << 1.0f;
            QTest::addRow("%s tall, both transposed", name) << int(f) << 1 << 1 << 700 << 40 << 130 << 0.0f;
        }
    }
    void agreesWithDoublePrecision()
    {
        const auto [f, ta, tb, M, N, K, beta] = fetchedRow();
        const Problem p = makeProblem(f, ta, tb, M, N, K, beta, 0x5eed + M + N + K);
        auto hardware = createCpuBackend(2, Arithmetic::hardware);
        auto exact = createCpuBackend(2, Arithmetic::exact);
        const std::vector<float> hw = run(*hardware, p, f), ex = run(*exact, p, f);
        double worstHw = 0.0, worstEx = 0.0;
        for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t j = 0; j < N; ++j) {
                double ref = beta * double(p.C[static_cast<std::size_t>(i * N + j)]);
                double mass = std::fabs(ref);
                for (std::int64_t k = 0; k < K; ++k) {
                    ref += p.a(i, k) * p.b(k, j);
                    mass += std::fabs(p.a(i, k) * p.b(k, j));
                }
                const double bound = (K + 1) * std::ldexp(1.0, -24) * mass;
                const std::size_t at = static_cast<std::size_t>(i * N + j);
                worstHw = std::max(worstHw, std::fabs(hw[at] - ref) / bound);
                worstEx = std::max(worstEx, std::fabs(ex[at] - ref) / bound);
            }
        qInfo("largest error / bound: hardware %.3g, exact %.3g", worstHw, worstEx);
        QVERIFY2(worstHw <= 1.0, qPrintable(QString::number(worstHw)));
        QVERIFY2(worstEx <= 1.0, qPrintable(QString::number(worstEx)));
        if (!cpu::nativelySupported(f)) QCOMPARE(hw, ex);   // the fallback is the exact arithmetic, bit for bit
    }

    // Issue 31: gemm16 reads the operands as 16-bit patterns where they lie (strided, inside
    // a larger tensor, as a block of samples of a packed activation is) and gives, bit for
    // bit, what gemm gives on their fp32 values. K = 0 takes the fallback (C = beta * C).
    // Only the hardware arithmetic on native units multiplies patterns; elsewhere gemm16
    // is refused.
    void patternsGiveWhatValuesGive_data() { agreesWithDoublePrecision_data(); }
    void patternsGiveWhatValuesGive()
    {
        const auto [f, ta, tb, M, N, K, beta] = fetchedRow();
        auto hardware = createCpuBackend(2, Arithmetic::hardware);
        auto exact = createCpuBackend(2, Arithmetic::exact);
        QVERIFY(!exact->supports(BackendOp::gemm16, {f, true}));
        QVERIFY(!hardware->supports(BackendOp::gemm16, {f, false}));   // sums in the format: emulated
        QCOMPARE(hardware->supports(BackendOp::gemm16, {f, true}), cpu::nativelySupported(f));
        if (!hardware->supports(BackendOp::gemm16, {f, true})) {
            std::vector<std::uint16_t> a(16), b(16);
            std::vector<float> c(16);
            QVERIFY_THROWS_EXCEPTION(std::logic_error, hardware->gemm16(Transpose::no, Transpose::no, 4, 4, 4, a.data(),
                                                                       4, b.data(), 4, 0.0f, c.data(), 4, {f, true}));
            QSKIP(qPrintable(QString::fromStdString("no native units: " + cpu::nativeSupportText(f))));
        }
        for (const std::int64_t k : {K, std::int64_t{0}}) {
            const Problem p = makeProblem(f, ta, tb, M, N, k, beta == 0.0f && k == 0 ? 1.0f : beta, 0x1d + M + N + k);
            // Each operand's rows 5 patterns longer than the data, the extra filled with NaN.
            auto patterns = [&](const std::vector<float>& x, std::int64_t ld, std::int64_t rows) {
                std::vector<std::uint16_t> bits(static_cast<std::size_t>(rows * (ld + 5)), 0x7FC1u);
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = 0; c < ld; ++c) {
                        const float v = x[static_cast<std::size_t>(r * ld + c)];
                        bits[static_cast<std::size_t>(r * (ld + 5) + c)] =
                            f == Format::bf16 ? fp32ToBf16Bits(v) : fp32ToFp16Bits(v);
                    }
                return bits;
            };
            const std::int64_t aRows = p.ta == Transpose::no ? M : k, bRows = p.tb == Transpose::no ? k : N;
            const auto a = patterns(p.A, p.lda(), aRows), b = patterns(p.B, p.ldb(), bRows);
            std::vector<float> C = p.C;
            hardware->gemm16(p.ta, p.tb, M, N, k, a.data(), p.lda() + 5, b.data(), p.ldb() + 5, p.beta, C.data(), N,
                             {f, true});
            const std::vector<float> want = run(*hardware, p, f);
            QVERIFY2(std::memcmp(C.data(), want.data(), C.size() * sizeof(float)) == 0,
                     qPrintable(QString("K = %1: other bits").arg(k)));
        }
    }

    // A NaN or an infinity in an operand gives the same non-finite elements either way.
    void nonFiniteValuesAsExact()
    {
        for (Format f : {Format::bf16, Format::fp16}) {
            Problem p = makeProblem(f, Transpose::no, Transpose::yes, 40, 60, 50, 0.0f, 7);
            p.A[3 * 50 + 5] = NAN;                 // row 3 becomes NaN
            p.B[10 * 50 + 7] = INFINITY;           // column 10 becomes +-inf (or NaN where it meets row 3)
            p.A[20 * 50 + 7] = 0.0f;               // 0 * inf: NaN at (20, 10)
            auto hardware = createCpuBackend(1, Arithmetic::hardware);
            auto exact = createCpuBackend(1, Arithmetic::exact);
            const std::vector<float> hw = run(*hardware, p, f), ex = run(*exact, p, f);
            for (std::size_t i = 0; i < hw.size(); ++i) {
                QCOMPARE(std::isnan(hw[i]), std::isnan(ex[i]));
                QCOMPARE(std::isinf(hw[i]), std::isinf(ex[i]));
                if (std::isinf(ex[i])) QCOMPARE(std::signbit(hw[i]), std::signbit(ex[i]));
            }
            QVERIFY(std::isnan(ex[3 * 60 + 0]) && std::isnan(ex[20 * 60 + 10]) && std::isinf(ex[0 * 60 + 10]));
        }
    }

    // What each backend says it ran, and that exact and hardware differ only where the CPU
    // has native units. fp32 and tf32 products are the same under either arithmetic.
    void arithmeticIsNamed()
    {
        auto hardware = createCpuBackend(1, Arithmetic::hardware);
        auto exact = createCpuBackend(1, Arithmetic::exact);
        for (Format f : {Format::bf16, Format::fp16}) {
            const QString hw = QString::fromStdString(hardware->arithmeticFor({f, true}));
            QVERIFY2(hw.startsWith(cpu::nativelySupported(f) ? "hardware: " : "exact: "), qPrintable(hw));
            QVERIFY(QString::fromStdString(exact->arithmeticFor({f, true})).startsWith("exact: "));
            // Sums in the compute format have no hardware anywhere: emulated.
            QVERIFY(QString::fromStdString(hardware->arithmeticFor({f, false})).startsWith("exact: sums in"));
        }
        QVERIFY(QString::fromStdString(hardware->arithmeticFor({Format::tf32, true})).startsWith("exact: "));
        for (Format f : {Format::fp32, Format::tf32}) {
            const Problem p = makeProblem(f, Transpose::no, Transpose::no, 30, 40, 50, 0.0f, 11);
            QCOMPARE(run(*hardware, p, f), run(*exact, p, f));
        }
        QCOMPARE(parseArithmetic("hardware"), std::optional<Arithmetic>(Arithmetic::hardware));
        QCOMPARE(parseArithmetic("exact"), std::optional<Arithmetic>(Arithmetic::exact));
        QVERIFY(!parseArithmetic("fast"));
    }

    // Issue 16: the same run (amp-bf16, small-cnn, 3 epochs over the set-up's 8,000 real
    // MNIST digits, 2,000 to test) under each arithmetic ends within 0.5 point of test
    // accuracy, and the run's start says which ran.
    void trainingAgrees()
    {
        DataSplit data;
        try {
            data = loadDataset("mnist", defaultDataDir());
        } catch (const std::exception& e) {
            QFAIL(qPrintable(QStringLiteral("no MNIST data (scripts/setup.sh installs it): %1").arg(e.what())));
        }
        double accuracy[2] = {0, 0};
        QString ran[2];
        for (Arithmetic a : {Arithmetic::exact, Arithmetic::hardware}) {
            TrainSettings s;
            s.model.widths = {8, 16};
            s.recipe = *PrecisionRecipe::fromPreset("amp-bf16");
            s.batch = 32;
            s.epochs = 3;
            s.threads = 2;
            s.histogramEvery = 0;
            s.arithmetic = a;
            Trainer trainer(s, data, [&](const TrainerEvent& e) {
                if (const auto* start = std::get_if<RunStartEvent>(&e)) ran[int(a)] = QString::fromStdString(start->arithmetic);
            });
            const RunResult r = trainer.run();
            QCOMPARE(r.status, RunStatus::completed);
            accuracy[int(a)] = r.testAccuracy;
        }
        qInfo("test accuracy: exact %.2f %%, hardware %.2f %% (%s)", 100 * accuracy[0], 100 * accuracy[1],
              qPrintable(ran[1]));
        QVERIFY(ran[0].startsWith(QStringLiteral("exact: ")));
        QVERIFY(ran[1].startsWith(cpu::nativelySupported(Format::bf16) ? QStringLiteral("hardware: ") : QStringLiteral("exact: ")));
        QVERIFY(accuracy[0] > 0.5);   // it learned
        QVERIFY2(std::fabs(accuracy[0] - accuracy[1]) <= 0.005, qPrintable(QString::number(accuracy[1] - accuracy[0])));
    }
};

QTEST_GUILESS_MAIN(TestNativeGemm)
#include "tst_native_gemm.moc"
