// Over 500 lines: every precision mode of the GEMM, the lanes, the AVX-512 FP16 kernel and the sums that skip zeros, each against the same references.
// Tests the CPU backend's GEMM in every precision mode against double-precision references (issue 2, section 3).
// links: plab_backend_cpu plab_backend plab_numerics plab_test_support
#include "backend/backend.h"
#include "backend/cpu/gemm_emulated.h"
#include "backend/cpu/gemm_sparse.h"
#include "numerics/format.h"

#include "test_support.h"

#include <QTest>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

using namespace plab;

namespace {

using Rng = plab::testing::SplitMix64;

// Values rounded to f, magnitudes 2^[minExp, maxExp), random sign.
std::vector<float> operand(Format f, std::int64_t n, Rng& rng, int minExp = -3, int maxExp = 3)
{
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
        const double e = minExp + (maxExp - minExp) * rng.uniform();
        const double sign = (rng.next() & 1) ? -1.0 : 1.0;
        x = roundTo(f, static_cast<float>(sign * std::exp2(e)));
    }
    return v;
}

double at(const std::vector<float>& X, bool trans, std::int64_t r, std::int64_t c, std::int64_t ld)
{
    return trans ? X[static_cast<std::size_t>(c * ld + r)] : X[static_cast<std::size_t>(r * ld + c)];
}

// Correct rounding of an exact long double to format f, from the definitions: the
// quantum is 2^(exponent - mantissa bits) above the smallest normal, fixed below it.
float referenceRound(Format f, long double x)
{
    if (std::isnan(x) || std::isinf(x) || x == 0) return static_cast<float>(x);
    int mant = 23, minNormalExp = -126;
    double maxFinite = 3.4028234663852886e38;
    switch (f) {
    case Format::fp16: mant = 10; minNormalExp = -14; maxFinite = 65504.0; break;
    case Format::bf16: mant = 7; maxFinite = 3.3895313892515355e38; break;
    case Format::tf32: mant = 10; maxFinite = 3.4011621342146535e38; break;
    case Format::fp32: break;
    }
    int e = 0;
    std::frexp(static_cast<double>(x), &e);   // |x| in [2^(e-1), 2^e)
    const int exponent = std::max(e - 1, minNormalExp);
    const long double quantum = std::ldexp(1.0L, exponent - mant);
    const long double q = x / quantum;
    const long double r = f == Format::tf32 ? std::roundl(q) : std::nearbyintl(q);   // ties away / to even
    const long double y = r * quantum;
    if (std::fabs(static_cast<double>(y)) > maxFinite) return x > 0 ? INFINITY : -INFINITY;
    return static_cast<float>(y);
}

bool sameValue(float a, float b)
{
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return bitsOf(a) == bitsOf(b);
}

}  // namespace

class TestGemm : public QObject {
    Q_OBJECT

private slots:
    void fp32Accumulation_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("M");
        QTest::addColumn<int>("N");
        QTest::addColumn<int>("K");
        QTest::addColumn<bool>("transA");
        QTest::addColumn<bool>("transB");
        QTest::addColumn<float>("beta");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16}) {
            const auto name = std::string(formatName(f));
            const int fi = static_cast<int>(f);
            QTest::addRow("%s 1x1x1", name.c_str()) << fi << 1 << 1 << 1 << false << false << 0.0f;
            QTest::addRow("%s 7x5x3 NN", name.c_str()) << fi << 7 << 5 << 3 << false << false << 0.0f;
            QTest::addRow("%s 33x65x17 TN", name.c_str()) << fi << 33 << 65 << 17 << true << false << 0.0f;
            QTest::addRow("%s 31x70x129 NT", name.c_str()) << fi << 31 << 70 << 129 << false << true << 0.0f;
            QTest::addRow("%s 64x96x300 TT beta 1", name.c_str()) << fi << 64 << 96 << 300 << true << true << 1.0f;
        }
    }

    // Products of fp16/bf16/tf32 values are exact in fp32, so an fp32 sum of them is
    // within the usual summation bound K * 2^-24 * sum |a b| of the exact result.
    void fp32Accumulation()
    {
        QFETCH(int, format);
        QFETCH(int, M);
        QFETCH(int, N);
        QFETCH(int, K);
        QFETCH(bool, transA);
        QFETCH(bool, transB);
        QFETCH(float, beta);
        const auto f = static_cast<Format>(format);
        Rng rng{static_cast<std::uint64_t>(M * 1000003 + N * 1009 + K)};
        const auto A = operand(f, std::int64_t{M} * K, rng), B = operand(f, std::int64_t{K} * N, rng);
        auto C = operand(Format::fp32, std::int64_t{M} * N, rng);
        const auto C0 = C;
        const std::int64_t lda = transA ? M : K, ldb = transB ? K : N;
        auto backend = createCpuBackend(2);
        backend->gemm(transA ? Transpose::yes : Transpose::no, transB ? Transpose::yes : Transpose::no, M, N, K,
                      A.data(), lda, B.data(), ldb, beta, C.data(), N, GemmPrecision{f, true});
        double errNorm = 0, refNorm = 0;
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                double ref = beta * C0[static_cast<std::size_t>(i * N + j)], absSum = std::fabs(ref);
                for (int k = 0; k < K; ++k) {
                    const double p = at(A, transA, i, k, lda) * at(B, transB, k, j, ldb);
                    ref += p;
                    absSum += std::fabs(p);
                }
                const double got = C[static_cast<std::size_t>(i * N + j)];
                QVERIFY2(std::fabs(got - ref) <= (K + 2) * 0x1.0p-24 * absSum,
                         qPrintable(QString("C[%1][%2] = %3, reference %4").arg(i).arg(j).arg(got).arg(ref)));
                errNorm += (got - ref) * (got - ref);
                refNorm += ref * ref;
            }
        QVERIFY(std::sqrt(errNorm) <= 1e-6 * std::sqrt(refNorm));
    }

    void formatAccumulation_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("M");
        QTest::addColumn<int>("N");
        QTest::addColumn<int>("K");
        QTest::addColumn<bool>("transA");
        QTest::addColumn<bool>("transB");
        QTest::addColumn<float>("beta");
        QTest::addColumn<int>("minExp");
        QTest::addColumn<int>("maxExp");
        for (Format f : {Format::fp16, Format::bf16, Format::tf32}) {
            const auto name = std::string(formatName(f));
            const int fi = static_cast<int>(f);
            QTest::addRow("%s 1x1x1", name.c_str()) << fi << 1 << 1 << 1 << false << false << 0.0f << -3 << 3;
            QTest::addRow("%s 5x31x7 NN", name.c_str()) << fi << 5 << 31 << 7 << false << false << 0.0f << -3 << 3;
            QTest::addRow("%s 9x67x40 TN", name.c_str()) << fi << 9 << 67 << 40 << true << false << 0.0f << -3 << 3;
            QTest::addRow("%s 13x33x100 NT beta 1", name.c_str()) << fi << 13 << 33 << 100 << false << true << 1.0f << -3 << 3;
            QTest::addRow("%s 6x130x257 TT", name.c_str()) << fi << 6 << 130 << 257 << true << true << 0.0f << -3 << 3;
            QTest::addRow("%s 3x44x20 NN beta 0.5", name.c_str()) << fi << 3 << 44 << 20 << false << false << 0.5f << -3 << 3;
        }
        // fp16 at the edges of its range: sums that overflow to inf, products and sums
        // in the subnormal range.
        QTest::addRow("fp16 overflowing sums") << 0 + static_cast<int>(Format::fp16) << 4 << 40 << 64 << false
                                               << false << 0.0f << 5 << 8;
        QTest::addRow("fp16 subnormal sums") << static_cast<int>(Format::fp16) << 4 << 40 << 64 << false << false
                                             << 0.0f << -13 << -6;
        QTest::addRow("bf16 wide exponent range") << static_cast<int>(Format::bf16) << 4 << 40 << 64 << false
                                                  << false << 0.0f << -20 << 20;
    }

    // Accumulation in the format: C[i][j] = round(a * b + C[i][j]) sequentially in k, against
    // a reference that computes a * b + c exactly in long double (the spans of these
    // operands fit its 64 bits) and rounds once from the format's definition. Bit for bit,
    // for the scalar loop, and for the backend and the kernel in lanes at every SIMD level.
    void formatAccumulation()
    {
        QFETCH(int, format);
        QFETCH(int, M);
        QFETCH(int, N);
        QFETCH(int, K);
        QFETCH(bool, transA);
        QFETCH(bool, transB);
        QFETCH(float, beta);
        QFETCH(int, minExp);
        QFETCH(int, maxExp);
        const auto f = static_cast<Format>(format);
        Rng rng{static_cast<std::uint64_t>(M * 7919 + N * 31 + K + minExp * 101)};
        const auto A = operand(f, std::int64_t{M} * K, rng, minExp, maxExp);
        const auto B = operand(f, std::int64_t{K} * N, rng, minExp, maxExp);
        const auto C0 = operand(f, std::int64_t{M} * N, rng, minExp, maxExp);
        const std::int64_t lda = transA ? M : K, ldb = transB ? K : N;

        std::vector<float> expected(C0.size());
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                float c = beta == 0.0f ? 0.0f : referenceRound(f, static_cast<long double>(beta) * C0[static_cast<std::size_t>(i * N + j)]);
                for (int k = 0; k < K; ++k) {
                    const long double exact = static_cast<long double>(at(A, transA, i, k, lda)) *
                                                  static_cast<long double>(at(B, transB, k, j, ldb)) + c;
                    c = referenceRound(f, exact);
                }
                expected[static_cast<std::size_t>(i * N + j)] = c;
            }

        // The dense operands the kernels take.
        std::vector<float> denseA(static_cast<std::size_t>(M) * K), denseB(static_cast<std::size_t>(K) * N);
        for (int i = 0; i < M; ++i)
            for (int k = 0; k < K; ++k) denseA[static_cast<std::size_t>(i * K + k)] = static_cast<float>(at(A, transA, i, k, lda));
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < N; ++j) denseB[static_cast<std::size_t>(k * N + j)] = static_cast<float>(at(B, transB, k, j, ldb));
        auto compare = [&](const std::vector<float>& got, const QString& path) {
            for (std::size_t i = 0; i < expected.size(); ++i)
                if (!sameValue(got[i], expected[i]))
                    QFAIL(qPrintable(QString("%1: C[%2] = %3, reference %4").arg(path).arg(i).arg(got[i]).arg(expected[i])));
        };
        // The scalar loop itself, then the backend (AVX-512 FP16 on fp16 where the CPU has it)
        // and the lanes' kernel at every SIMD level this CPU has.
        auto scalarC = C0;
        cpu::gemmAccumulateScalar(f, 0, M, N, K, denseA.data(), K, denseB.data(), N, beta, scalarC.data(), N);
        compare(scalarC, "scalar loop");
        for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
            ScopedSimdCap cap(level);
            auto backend = createCpuBackend(2);
            auto C = C0;
            backend->gemm(transA ? Transpose::yes : Transpose::no,
                          transB ? Transpose::yes : Transpose::no, M, N, K, A.data(), lda, B.data(), ldb, beta,
                          C.data(), N, GemmPrecision{f, false});
            compare(C, QString("backend at %1").arg(simdLevelName(level)));
            auto lanesC = C0;
            cpu::gemmAccumulateVector(f, 0, M, N, K, denseA.data(), K, denseB.data(), N, beta, lanesC.data(), N);
            compare(lanesC, QString("gemmAccumulateVector at %1").arg(simdLevelName(level)));
        }
        int nonFinite = 0;
        for (float v : expected) nonFinite += !std::isfinite(v);
        if (QTest::currentDataTag() == QByteArray("fp16 overflowing sums")) QVERIFY(nonFinite > 0);
    }

    // The kernel in lanes against the scalar loop, bit for bit (any NaN for a NaN: which NaN an
    // x86 operation returns depends on its operand order, which the compiler may swap for a
    // commutative product or sum, so not even the scalar loop fixes it), on operands
    // the format tests above never hold: any fp32 pattern (not representable in f), zeros of
    // both signs, fp32 subnormals, infinities and NaN, so that inf - inf, overflow past fp32 in
    // double, and sums far below fp32's range meet the lanes' special cases.
    void accumulationLanesMatchScalarOnAnyInput()
    {
        Rng rng{2024};
        const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -3e-42f, 3.4e38f, -3.4e38f,
                                  65504.0f, 65520.0f, 1.0f, -1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                                  floatFromBits(0xFFFFFFFFu)};   // a NaN whose pattern wraps if rounded as a number
        auto anything = [&](std::size_t n) {
            std::vector<float> v(n);
            for (auto& x : v) {
                const std::uint64_t r = rng.next();
                x = (r & 7) == 0 ? specials[(r >> 8) % std::size(specials)] : floatFromBits(static_cast<std::uint32_t>(r >> 32));
            }
            return v;
        };
        const int M = 5, N = 45, K = 23;
        const auto A = anything(M * K), B = anything(K * N), C0 = anything(M * N);
        for (SimdLevel level : testing::simdLevelsOfThisCpu())
            for (Format f : {Format::fp16, Format::bf16, Format::tf32})
                for (float beta : {0.0f, 1.0f}) {
                    ScopedSimdCap cap(level);
                    auto scalarC = C0, lanesC = C0;
                    cpu::gemmAccumulateScalar(f, 0, M, N, K, A.data(), K, B.data(), N, beta, scalarC.data(), N);
                    cpu::gemmAccumulateVector(f, 0, M, N, K, A.data(), K, B.data(), N, beta, lanesC.data(), N);
                    for (std::size_t i = 0; i < scalarC.size(); ++i)
                        if (!sameValue(scalarC[i], lanesC[i]))
                            QFAIL(qPrintable(QString("%1 %2 beta %3: C[%4] lanes %5, scalar %6")
                                                 .arg(simdLevelName(level)).arg(QString::fromStdString(std::string(formatName(f))))
                                                 .arg(beta).arg(i).arg(bitsOf(lanesC[i]), 8, 16).arg(bitsOf(scalarC[i]), 8, 16)));
                }
    }

    // The sums that skip zero products (gemm_sparse.h) against the scalar loop, which takes
    // every step, bit for bit (any NaN for a NaN). The operands are mostly zeros of both
    // signs, so that a sum is -0 before a skipped step whose product is +0 (from a -0 start
    // with beta 1, and from fp16 sums that underflow to -0), a row of B holds an infinity
    // and a NaN where A's step is zero (0 * inf is NaN), and A holds an infinity. Both ways
    // the backend takes: A the sparse operand, or B (the rows of C^T = B^T A^T), with
    // either operand transposed in memory; and the kernel itself on a transposed C.
    void zeroStepsSkippedMatchScalar()
    {
        Rng rng{77};
        // Mostly +-0; else a value of the format around 2^[minExp, maxExp).
        auto sparse = [&](Format f, std::size_t n, double zeros, int minExp, int maxExp) {
            std::vector<float> v(n);
            for (auto& x : v) {
                const bool zero = rng.uniform() < zeros;
                const float sign = (rng.next() & 1) ? -1.0f : 1.0f;
                x = zero ? sign * 0.0f
                         : roundTo(f, sign * static_cast<float>(std::exp2(minExp + (maxExp - minExp) * rng.uniform())));
            }
            return v;
        };
        auto compare = [](const std::vector<float>& got, const std::vector<float>& expected, const QString& path) {
            for (std::size_t i = 0; i < expected.size(); ++i)
                if (!sameValue(got[i], expected[i]))
                    QFAIL(qPrintable(QString("%1: C[%2] %3, scalar loop %4").arg(path).arg(i)
                                         .arg(bitsOf(got[i]), 8, 16).arg(bitsOf(expected[i]), 8, 16)));
        };
        struct Shape { int M, N, K; };
        int kernelRuns = 0;
        std::map<Format, int> mended;
        for (SimdLevel level : testing::simdLevelsOfThisCpu())
        for (Format f : {Format::fp16, Format::bf16, Format::tf32})
            for (const Shape& shape : {Shape{7, 45, 70}, Shape{33, 5, 40}, Shape{3, 64, 300}})
                for (bool sparseA : {true, false})
                    for (float beta : {0.0f, 1.0f}) {
                        const int M = shape.M, N = shape.N, K = shape.K;
                        // fp16's small magnitudes make sums underflow to -0 on the way.
                        const int lo = f == Format::fp16 ? -22 : -3, hi = f == Format::fp16 ? -10 : 3;
                        auto A = sparse(f, std::size_t(M) * K, sparseA ? 0.9 : 0.1, lo, hi);
                        auto B = sparse(f, std::size_t(K) * N, sparseA ? 0.1 : 0.9, lo, hi);
                        auto C0 = sparse(f, std::size_t(M) * N, 0.5, lo, hi);   // half of them +-0
                        // A non-finite row of B under zeros of A, and an infinity in A.
                        const int row = K / 2;
                        B[std::size_t(row) * N] = INFINITY;
                        B[std::size_t(row) * N + N - 1] = NAN;
                        for (int i = 0; i < M; i += 2) A[std::size_t(i) * K + row] = 0.0f;
                        A[std::size_t(M - 1) * K + K - 1] = -INFINITY;
                        auto expected = C0;
                        cpu::gemmAccumulateScalar(f, 0, M, N, K, A.data(), K, B.data(), N, beta, expected.data(), N);
                        int nan = 0;
                        for (float x : expected) nan += std::isnan(x);
                        QVERIFY(nan > 0);   // the non-finite row and the infinity reached the sums
                        // The case the skipping must mend: a sum that is -0 meets a zero step
                        // whose product is +0 (and becomes +0).
                        for (int i = 0; i < M; ++i)
                            for (int j = 0; j < N; ++j) {
                                float c = beta == 0.0f ? 0.0f : roundTo(f, C0[std::size_t(i) * N + j]);
                                for (int k = 0; k < K; ++k) {
                                    const float a = A[std::size_t(i) * K + k], b = B[std::size_t(k) * N + j];
                                    mended[f] += bitsOf(c) == 0x80000000u && a == 0.0f && std::isfinite(b) &&
                                                 std::signbit(a) == std::signbit(b);
                                    c = cpu::fmaRoundedTo(f, a, b, c);
                                }
                            }
                        ScopedSimdCap cap(level);
                        const QString what = QString("%1: %2 %3x%4x%5 %6 sparse, beta %7").arg(simdLevelName(level))
                                                 .arg(QString::fromStdString(std::string(formatName(f))))
                                                 .arg(M).arg(N).arg(K).arg(sparseA ? "A" : "B").arg(beta);

                        // Through the backend, each operand as stored or transposed.
                        for (bool transA : {false, true})
                            for (bool transB : {false, true}) {
                                std::vector<float> As(A.size()), Bs(B.size());
                                for (int i = 0; i < M; ++i)
                                    for (int k = 0; k < K; ++k)
                                        As[transA ? std::size_t(k) * M + i : std::size_t(i) * K + k] = A[std::size_t(i) * K + k];
                                for (int k = 0; k < K; ++k)
                                    for (int j = 0; j < N; ++j)
                                        Bs[transB ? std::size_t(j) * K + k : std::size_t(k) * N + j] = B[std::size_t(k) * N + j];
                                auto backend = createCpuBackend(2);
                                auto C = C0;
                                backend->gemm(transA ? Transpose::yes : Transpose::no, transB ? Transpose::yes : Transpose::no,
                                              M, N, K, As.data(), transA ? M : K, Bs.data(), transB ? K : N, beta, C.data(), N,
                                              GemmPrecision{f, false});
                                compare(C, expected, what + QString(", backend, trans %1%2").arg(transA).arg(transB));
                            }

                        // The kernel itself, A's rows in two parts, C as stored and transposed
                        // (the backend at the scalar level takes the scalar loop instead).
                        if (!cpu::skipsZeroSteps()) continue;
                        ++kernelRuns;
                        const cpu::StridedMatrix a{A.data(), K, 1};
                        const auto nonFinite = cpu::nonFiniteRows(B.data(), K, N, N);
                        QCOMPARE(int(nonFinite[std::size_t(row)]), 1);
                        auto C = C0;
                        std::vector<float> Ct(C0.size());
                        for (int i = 0; i < M; ++i)
                            for (int j = 0; j < N; ++j) Ct[std::size_t(j) * M + i] = C0[std::size_t(i) * N + j];
                        for (auto [r0, r1] : {std::pair{0, M / 2}, std::pair{M / 2, M}}) {
                            const cpu::SumSteps steps = cpu::sumSteps(a, r0, r1, K, nonFinite);
                            cpu::gemmAccumulateSkippingZeros(f, steps, N, K, a, B.data(), N, beta, C.data(), N, 1);
                            cpu::gemmAccumulateSkippingZeros(f, steps, N, K, a, B.data(), N, beta, Ct.data(), 1, M);
                        }
                        compare(C, expected, what + ", kernel");
                        for (int i = 0; i < M; ++i)
                            for (int j = 0; j < N; ++j) C[std::size_t(i) * N + j] = Ct[std::size_t(j) * M + i];
                        compare(C, expected, what + ", kernel on C transposed");
                    }
        for (Format f : {Format::fp16, Format::bf16, Format::tf32}) QVERIFY(mended[f] > 0);
        if (kernelRuns == 0) QSKIP("no SIMD level here has the AVX2 lanes: only the backend's scalar loop was checked");
    }

    // Which steps a row takes: its nonzeros (either storage order of A), and every step
    // whose row of B is non-finite.
    void sumStepsAreTheNonzerosAndNonFiniteRows()
    {
        const std::vector<float> A = {0.0f, 2.0f, -0.0f, 0.0f, NAN,    // row 0
                                      0.0f, 0.0f, 0.0f, -1.0f, 0.0f};  // row 1
        std::vector<float> At(A.size());
        for (int i = 0; i < 2; ++i)
            for (int k = 0; k < 5; ++k) At[std::size_t(k) * 2 + i] = A[std::size_t(i) * 5 + k];
        const std::vector<std::uint8_t> none(5, 0), third = {0, 0, 0, 1, 0};
        for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
        ScopedSimdCap cap(level);
        for (const cpu::StridedMatrix& a : {cpu::StridedMatrix{A.data(), 5, 1}, cpu::StridedMatrix{At.data(), 1, 2}}) {
            const auto steps = cpu::sumSteps(a, 0, 2, 5, none);
            QCOMPARE(steps.rowStart, (std::vector<std::int64_t>{0, 2, 3}));
            QCOMPARE(steps.k, (std::vector<std::int32_t>{1, 4, 3}));
            QCOMPARE(steps.a[0], 2.0f);
            QVERIFY(std::isnan(steps.a[1]));
            const auto withRow = cpu::sumSteps(a, 1, 2, 5, third);
            QCOMPARE(withRow.rowBegin, std::int64_t{1});
            QCOMPARE(withRow.rowStart, (std::vector<std::int64_t>{0, 1}));
            QCOMPARE(withRow.k, (std::vector<std::int32_t>{3}));
            const auto both = cpu::sumSteps(a, 0, 1, 5, third);
            QCOMPARE(both.k, (std::vector<std::int32_t>{1, 3, 4}));
        }
        const std::vector<float> B = {1.0f, 2.0f, INFINITY, 0.0f, -NAN, 3.0f};
        QCOMPARE(cpu::nonFiniteRows(B.data(), 3, 2, 2), (std::vector<std::uint8_t>{0, 1, 1}));
        QCOMPARE(cpu::zeroShare(A.data(), 2, 5, 5), 0.7);
        QCOMPARE(cpu::zeroShare(A.data(), 0, 5, 5), 0.0);
        // Runs past one vector of eight, with the last value alone in the tail.
        std::vector<float> long19(19, 1.0f);
        long19[3] = -0.0f, long19[11] = 0.0f, long19[18] = 0.0f;
        QCOMPARE(cpu::zeroShare(long19.data(), 1, 19, 19), 3.0 / 19.0);
        QCOMPARE(cpu::nonFiniteRows(long19.data(), 1, 19, 19), (std::vector<std::uint8_t>{0}));
        long19[18] = NAN;
        QCOMPARE(cpu::nonFiniteRows(long19.data(), 1, 19, 19), (std::vector<std::uint8_t>{1}));
        long19[18] = 0.0f, long19[9] = -INFINITY;
        QCOMPARE(cpu::nonFiniteRows(long19.data(), 1, 19, 19), (std::vector<std::uint8_t>{1}));
        }
    }

    // A product exactly halfway between two bf16 values plus an addend far below double's
    // precision: the exact sum lies above the tie, so it rounds up; rounding the sum to
    // double first would land on the tie and round to even (down).
    void fmaRoundingHasNoDoubleRounding()
    {
        const float a = 1.0f + 0.0625f, b = a;          // both bf16; a * b = 1 + 2^-3 + 2^-8
        const float tiny = std::ldexp(1.0f, -100);      // bf16
        QCOMPARE(roundTo(Format::bf16, a), a);
        QCOMPARE(cpu::fmaRoundedTo(Format::bf16, a, b, tiny), 1.0f + 0.125f + 0.0078125f);
        QCOMPARE(cpu::fmaRoundedTo(Format::bf16, a, b, 0.0f), 1.0f + 0.125f);   // a true tie: to even
        QCOMPARE(cpu::fmaRoundedTo(Format::bf16, a, b, -tiny), 1.0f + 0.125f);
        // The same three sums in lanes (one row, eight columns, C = 1 * C + a * b).
        for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
            ScopedSimdCap cap(level);
            const std::vector<float> B(8, b);
            std::vector<float> C = {tiny, 0.0f, -tiny, tiny, tiny, 0.0f, -tiny, tiny};
            cpu::gemmAccumulateVector(Format::bf16, 0, 1, 8, 1, &a, 1, B.data(), 8, 1.0f, C.data(), 8);
            QCOMPARE(C[0], 1.0f + 0.125f + 0.0078125f);
            QCOMPARE(C[1], 1.0f + 0.125f);
            QCOMPARE(C[2], 1.0f + 0.125f);
            QCOMPARE(C[7], 1.0f + 0.125f + 0.0078125f);
        }
    }

    // fp16's subnormal range, where its ties are not at fixed bits of an fp32 pattern: a
    // product of two fp16 values that lies 6 * 2^-46 past 2^-25, added to 1000 * 2^-24, sums
    // to just above the tie 1000.5 * 2^-24 and rounds up to 1001 * 2^-24. One fp32 FMA lands
    // on the tie itself (the 6 * 2^-46 is below half its ulp, 2^-39) and would round to even.
    void fp16SubnormalSumHasNoDoubleRounding()
    {
        const float a = std::ldexp(1141.0f, -23), b = std::ldexp(1838.0f, -23);   // fp16 normals
        QCOMPARE(roundTo(Format::fp16, a), a);
        QCOMPARE(roundTo(Format::fp16, b), b);
        QCOMPARE(static_cast<double>(a) * b, std::ldexp(1.0, -25) + std::ldexp(6.0, -46));
        const float c = std::ldexp(1000.0f, -24), up = std::ldexp(1001.0f, -24);
        QCOMPARE(std::fma(a, b, c), std::ldexp(2001.0f, -25));   // fp32 lands on the tie
        QCOMPARE(cpu::fmaRoundedTo(Format::fp16, a, b, c), up);
        for (SimdLevel level : testing::simdLevelsOfThisCpu()) {
            ScopedSimdCap cap(level);
            const std::vector<float> B = {b, b, b, b, -b, -b, -b, -b};
            std::vector<float> C = {c, c, c, c, -c, -c, -c, -c};
            cpu::gemmAccumulateVector(Format::fp16, 0, 1, 8, 1, &a, 1, B.data(), 8, 1.0f, C.data(), 8);
            for (int j = 0; j < 8; ++j) QCOMPARE(C[j], j < 4 ? up : -up);
        }
    }

    void roundToOdd_data()
    {
        QTest::addColumn<double>("x");
        QTest::addColumn<float>("expected");
        QTest::addRow("exact") << 1.5 << 1.5f;
        QTest::addRow("just above one") << 1.0 + 0x1.0p-40 << std::nextafter(1.0f, 2.0f);
        QTest::addRow("just below two") << 2.0 - 0x1.0p-40 << std::nextafter(2.0f, 0.0f);
        QTest::addRow("negative") << -(1.0 + 0x1.0p-40) << -std::nextafter(1.0f, 2.0f);
        QTest::addRow("beyond fp32 range") << 1e39 << 3.4028234663852886e38f;
    }

    void roundToOdd()
    {
        QFETCH(double, x);
        QFETCH(float, expected);
        QCOMPARE(bitsOf(cpu::roundToOddFloat(x)), bitsOf(expected));
    }

    void emptyAndZeroSized()
    {
        auto backend = createCpuBackend(1);
        std::vector<float> C{3.0f, 4.0f};
        const float one = 1.0f;
        backend->gemm(Transpose::no, Transpose::no, 1, 2, 0, &one, 1, &one, 2, 0.0f, C.data(), 2, {});
        QCOMPARE(C[0], 0.0f);
        QCOMPARE(C[1], 0.0f);
        backend->gemm(Transpose::no, Transpose::no, 0, 2, 3, &one, 3, &one, 2, 0.0f, C.data(), 2, {});
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 backend->gemm(Transpose::no, Transpose::no, -1, 2, 3, &one, 3, &one, 2, 0.0f,
                                               C.data(), 2, {}));
    }

    // gemmReductionCut's promise: a product cut along its sum at multiples of the length it
    // gives (the last piece at least that long, beta 1 after the first) has every element's
    // bits of the whole product, for the shapes the packed filter gradient cuts (the CNNs'
    // conv2 and conv1) and a plain product; no cut where the sums are emulated.
    void productsCutAlongTheirSumKeepTheirBits_data()
    {
        QTest::addColumn<int>("M");
        QTest::addColumn<int>("N");
        QTest::addColumn<bool>("transB");
        QTest::addColumn<int>("compute");
        QTest::addColumn<float>("beta");
        QTest::newRow("conv2 filter gradient, fp32") << 64 << 288 << true << int(Format::fp32) << 0.0f;
        QTest::newRow("conv1 filter gradient, fp16 operands") << 32 << 9 << true << int(Format::fp16) << 0.5f;
        // 200 columns in blocks of 64, 64, 64 and 8; beta 0 without transposes is where
        // OpenBLAS's direct sgemm may take a call.
        QTest::newRow("plain, bf16 operands") << 40 << 200 << false << int(Format::bf16) << 0.0f;
        QTest::newRow("plain, beta 0.5") << 40 << 200 << false << int(Format::bf16) << 0.5f;
    }

    void productsCutAlongTheirSumKeepTheirBits()
    {
        QFETCH(int, M);
        QFETCH(int, N);
        QFETCH(bool, transB);
        QFETCH(int, compute);
        QFETCH(float, beta);
        auto backend = createCpuBackend(2);
        GemmPrecision precision;
        precision.compute = Format(compute);
        const std::int64_t L = backend->gemmReductionCut(precision, M, N);
        // OpenBLAS's driver sums in blocks on every core the lab runs on (Cooperlake,
        // SkylakeX, Haswell, Zen in 0.3.21; blas_cuts.h).
        QVERIFY2(L > 0, "the CPU backend found no length at which OpenBLAS's sums may be cut");
        const std::int64_t K = 3 * L + L / 2 + 5;
        Rng rng(11);
        const auto A = operand(precision.compute, M * K, rng);
        const auto B = operand(precision.compute, K * N, rng);
        const auto C0 = operand(Format::fp32, M * N, rng);
        const Transpose tb = transB ? Transpose::yes : Transpose::no;
        const std::int64_t ldb = transB ? K : N;
        auto product = [&](std::int64_t k0, std::int64_t k1, float beta, std::vector<float>& C) {
            const float* b = transB ? B.data() + k0 : B.data() + k0 * N;
            backend->gemm(Transpose::no, tb, M, N, k1 - k0, A.data() + k0, K, b, ldb, beta, C.data(), N, precision);
        };
        std::vector<float> whole = C0;
        product(0, K, beta, whole);
        // Cut at L and 2L (the last piece 1.5 L + 5 long), and at 2L alone.
        for (const std::vector<std::int64_t>& cuts :
             {std::vector<std::int64_t>{0, L, 2 * L, K}, std::vector<std::int64_t>{0, 2 * L, K}}) {
            std::vector<float> pieces = C0;
            for (std::size_t i = 0; i + 1 < cuts.size(); ++i) product(cuts[i], cuts[i + 1], i == 0 ? beta : 1.0f, pieces);
            for (std::size_t i = 0; i < whole.size(); ++i)
                QVERIFY2(sameValue(pieces[i], whole[i]),
                         qPrintable(QString("element %1: %2 cut, %3 whole (L %4)")
                                        .arg(i).arg(pieces[i], 0, 'g', 9).arg(whole[i], 0, 'g', 9).arg(L)));
        }
        // Sums in the compute format (no fp32 accumulation) are emulated: never cut.
        precision.fp32Accumulate = false;
        if (precision.compute != Format::fp32) QCOMPARE(backend->gemmReductionCut(precision, M, N), std::int64_t{0});
    }

    void backendInfo()
    {
        auto backend = createCpuBackend(2);
        QCOMPARE(backend->info().name, std::string("cpu"));
        QVERIFY(backend->info().available);
        QCOMPARE(backend->threads(), 2);
        QVERIFY(!backend->info().versions.empty());
        QVERIFY(backend->info().versions.front().find("OpenBLAS") != std::string::npos);
    }

    void cudaProbeWithoutPlugin()
    {
        const BackendInfo info = probeCudaBackend();
        QCOMPARE(info.name, std::string("cuda"));
        if (info.available) QSKIP("a CUDA plugin and device are present; the absent-plugin message is not shown");
        QVERIFY2(info.reason.find("libplab_cuda.so") != std::string::npos, info.reason.c_str());
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, createCudaBackend(0));
    }
};

QTEST_GUILESS_MAIN(TestGemm)
#include "tst_gemm.moc"
