// Over 500 lines: every op the kernels compute against the CPU reference, sharing one set of helpers.
// Tests the CUDA backend's per-element and per-row arithmetic on the host (issue 5): the
// functions of kernel_math.h that the step kernels run, called element by element (row by
// row for the loss), against the CPU reference bit for bit (update_math.h's applyUpdate,
// SGD, Adam and gradient sweep; the CPU backend's bias rounding, ReLU, pooling, transpose
// and loss; a double-precision softmax; the transformer ops of transformer_math.h against
// the CPU backend's). Runs everywhere, with or without a GPU; the same
// ops on a device are tst_cuda_backend, the rounding and im2col arithmetic
// tst_cuda_kernel_math.
// links: plab_backend_cpu plab_backend plab_test_support
#include "backend/cuda/transformer_math.h"
#include "cuda_test_support.h"
#include "tensor/tensor.h"

#include <algorithm>
#include <functional>
#include <tuple>

class TestCudaOpMath : public QObject {
    Q_OBJECT

    std::unique_ptr<ComputeBackend> cpu_ = createCpuBackend(2);

    static void addFormatRows()
    {
        QTest::addColumn<int>("format");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16})
            QTest::addRow("%s", std::string(formatName(f)).c_str()) << static_cast<int>(f);
    }

private slots:
    // The rounded, counted update of applyUpdate: weights bit for bit (a NaN as a NaN),
    // the counts exactly, over zero, NaN and overflowing updates and lost ones.
    void applyUpdateMatchesUpdateMath_data() { addFormatRows(); }
    void applyUpdateMatchesUpdateMath()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const std::vector<float> start = weights(f, 4099, 11), direction = gradients(f, 4099, 12);
        UpdateCounts all;
        for (float alpha : {-1e-3f, 0.0f, -1.0f, -65504.0f, 3e38f, -INFINITY, NAN}) {
            std::vector<float> cpuW = start, kernelW = start;
            UpdateCounts cpuCounts, kernelCounts;
            plab::applyUpdate(f, cpuW.data(), direction.data(), alpha, cpuW.size(), cpuCounts);
            for (std::size_t i = 0; i < kernelW.size(); ++i)
                addUpdateMask(kernelCounts, ck::applyUpdateElement(format, kernelW[i], direction[i], alpha));
            QVERIFY2(sameValues(kernelW, cpuW), qPrintable(QString("alpha %1").arg(alpha)));
            QCOMPARE(kernelCounts, cpuCounts);
            all += cpuCounts;
        }
        // The data reach every counter this test pins.
        QVERIFY(all.nonzero > 0 && all.lost > 0 && all.nonFinite > 0);
    }

    // torch.optim.SGD without momentum, on its first step (buf = grad) and later.
    void sgdMatchesUpdateMath_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("useMomentum");
        QTest::addColumn<bool>("firstStep");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16}) {
            const std::string name(formatName(f));
            QTest::addRow("%s plain", name.c_str()) << static_cast<int>(f) << false << false;
            QTest::addRow("%s momentum first step", name.c_str()) << static_cast<int>(f) << true << true;
            QTest::addRow("%s momentum", name.c_str()) << static_cast<int>(f) << true << false;
        }
    }
    void sgdMatchesUpdateMath()
    {
        QFETCH(int, format);
        QFETCH(bool, useMomentum);
        QFETCH(bool, firstStep);
        const auto f = static_cast<Format>(format);
        const std::size_t n = 5003;   // not a multiple of the CPU's chunks
        const std::vector<float> grad = gradients(f, n, 21);
        std::vector<float> cpuW = weights(f, n, 22), kernelW = cpuW;
        std::vector<float> cpuBuf = useMomentum ? weights(f, n, 23) : std::vector<float>{}, kernelBuf = cpuBuf;
        const SgdScalars s{0.9f, -0.01f, useMomentum, firstStep};
        UpdateCounts cpuCounts;
        plab::sgdUpdate(s, f, cpuW.data(), grad.data(), useMomentum ? cpuBuf.data() : nullptr, n, cpuCounts);
        const UpdateCounts kernelCounts = emulateSgd(s, f, kernelW, grad, kernelBuf);
        QVERIFY(sameValues(kernelW, cpuW));
        QVERIFY(sameValues(kernelBuf, cpuBuf));
        QCOMPARE(kernelCounts, cpuCounts);
    }

    // The weights' write by stochastic rounding (the same random bits per element, across
    // the CPU's chunks) and Kahan-compensated (the compensation carried over three steps),
    // for SGD with momentum and for Adam: weights, state, compensation and counts bit for bit.
    void weightWritesMatchUpdateMath_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("rounding");
        QTest::addColumn<bool>("adam");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16})
            for (UpdateRounding r : {UpdateRounding::stochastic, UpdateRounding::kahan})
                for (bool adam : {false, true})
                    QTest::addRow("%s %s %s", std::string(formatName(f)).c_str(), std::string(updateRoundingName(r)).c_str(),
                                  adam ? "adam" : "sgd")
                        << static_cast<int>(f) << static_cast<int>(r) << adam;
    }
    void weightWritesMatchUpdateMath()
    {
        QFETCH(int, format);
        QFETCH(int, rounding);
        QFETCH(bool, adam);
        const auto f = static_cast<Format>(format);
        const std::size_t n = 5003;   // not a multiple of the CPU's chunks
        std::vector<float> cpuW = weights(f, n, 41), kernelW = cpuW;
        std::vector<float> cpuS1(n, 0.0f), cpuS2(n, 0.0f), kernelS1(n, 0.0f), kernelS2(n, 0.0f);
        std::vector<float> cpuComp(n, 0.0f), kernelComp(n, 0.0f);
        std::vector<float> nearestW = cpuW, nearestS1(n, 0.0f), nearestS2(n, 0.0f);   // the same steps to nearest
        UpdateCounts all, ignored;
        for (int step = 1; step <= 3; ++step) {
            const std::vector<float> grad = gradients(f, n, 42 + static_cast<std::uint64_t>(step));
            UpdateFormats uf{f, f};
            uf.write.rounding = static_cast<UpdateRounding>(rounding);
            uf.write.key = update_rounding::stepKey(9, static_cast<std::uint64_t>(step), 77);
            uf.write.compensation = uf.write.rounding == UpdateRounding::kahan ? cpuComp.data() : nullptr;
            std::vector<float>* comp = uf.write.rounding == UpdateRounding::kahan ? &kernelComp : nullptr;
            UpdateCounts cpuCounts, kernelCounts;
            if (adam) {
                const AdamScalars s = adamScalars(step);
                plab::adamUpdate(s, uf, cpuW.data(), grad.data(), cpuS1.data(), cpuS2.data(), n, cpuCounts);
                kernelCounts = emulateAdam(s, uf, kernelW, grad, kernelS1, kernelS2, comp);
                plab::adamUpdate(s, f, nearestW.data(), grad.data(), nearestS1.data(), nearestS2.data(), n, ignored);
            } else {
                const SgdScalars s{0.9f, -0.01f, true, step == 1};
                plab::sgdUpdate(s, uf, cpuW.data(), grad.data(), cpuS1.data(), n, cpuCounts);
                kernelCounts = emulateSgd(s, uf, kernelW, grad, kernelS1, comp);
                plab::sgdUpdate(s, f, nearestW.data(), grad.data(), nearestS1.data(), n, ignored);
            }
            QVERIFY2(sameValues(kernelW, cpuW), qPrintable(QString("step %1").arg(step)));
            QVERIFY(sameValues(kernelS1, cpuS1));
            QVERIFY(sameValues(kernelS2, cpuS2));
            QVERIFY(sameValues(kernelComp, cpuComp));
            QCOMPARE(kernelCounts, cpuCounts);
            all += cpuCounts;
        }
        QVERIFY(all.nonzero > 0);
        // The rule was applied: 16-bit weights end elsewhere than rounding to nearest takes them.
        if (f != Format::fp32) QVERIFY(!sameValues(cpuW, nearestW));
    }

    // torch.optim.Adam over three steps of the same state, every op rounded to f.
    void adamMatchesUpdateMath_data() { addFormatRows(); }
    void adamMatchesUpdateMath()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const std::size_t n = 5003;
        std::vector<float> cpuW = weights(f, n, 31), kernelW = cpuW;
        std::vector<float> cpuM(n, 0.0f), cpuV(n, 0.0f), kernelM(n, 0.0f), kernelV(n, 0.0f);
        UpdateCounts all;
        for (int step = 1; step <= 3; ++step) {
            const std::vector<float> grad = gradients(f, n, 32 + static_cast<std::uint64_t>(step));
            const AdamScalars s = adamScalars(step);
            UpdateCounts cpuCounts;
            plab::adamUpdate(s, f, cpuW.data(), grad.data(), cpuM.data(), cpuV.data(), n, cpuCounts);
            const UpdateCounts kernelCounts = emulateAdam(s, f, kernelW, grad, kernelM, kernelV);
            QVERIFY2(sameValues(kernelW, cpuW), qPrintable(QString("step %1").arg(step)));
            QVERIFY(sameValues(kernelM, cpuM));
            QVERIFY(sameValues(kernelV, cpuV));
            QCOMPARE(kernelCounts, cpuCounts);
            all += cpuCounts;
        }
        // In fp16 the data reach the optimizer state's counts too (second moments flushed).
        if (f == Format::fp16) QVERIFY(all.stateFlushed > 0 && all.stateNonFinite > 0);
        if (f == Format::fp32) QCOMPARE(all.stateFlushed, std::int64_t(0));
    }

    // Issue 38: the optimizer state in its own format. The kernels' element math and
    // update_math agree, bit for bit, with the weights and the state apart.
    void updatesMatchWithTheStateApart_data()
    {
        QTest::addColumn<int>("weightFormat");
        QTest::addColumn<int>("stateFormat");
        QTest::addRow("fp16 weights, fp32 state") << int(Format::fp16) << int(Format::fp32);
        QTest::addRow("bf16 weights, fp32 state") << int(Format::bf16) << int(Format::fp32);
        QTest::addRow("bf16 weights, fp16 state") << int(Format::bf16) << int(Format::fp16);
        QTest::addRow("fp32 weights, bf16 state") << int(Format::fp32) << int(Format::bf16);
    }
    void updatesMatchWithTheStateApart()
    {
        QFETCH(int, weightFormat);
        QFETCH(int, stateFormat);
        const UpdateFormats f{static_cast<Format>(weightFormat), static_cast<Format>(stateFormat)};
        const std::size_t n = 5003;
        std::vector<float> cpuW = weights(f.weights, n, 41), kernelW = cpuW;
        std::vector<float> cpuM(n, 0.0f), cpuV(n, 0.0f), kernelM(n, 0.0f), kernelV(n, 0.0f);
        for (int step = 1; step <= 3; ++step) {
            const std::vector<float> grad = gradients(f.weights, n, 42 + static_cast<std::uint64_t>(step));
            const AdamScalars s = adamScalars(step);
            UpdateCounts cpuCounts;
            plab::adamUpdate(s, f, cpuW.data(), grad.data(), cpuM.data(), cpuV.data(), n, cpuCounts);
            const UpdateCounts kernelCounts = emulateAdam(s, f, kernelW, grad, kernelM, kernelV);
            QVERIFY2(sameValues(kernelW, cpuW), qPrintable(QString("adam step %1").arg(step)));
            QVERIFY(sameValues(kernelM, cpuM) && sameValues(kernelV, cpuV));
            QCOMPARE(kernelCounts, cpuCounts);
        }
        std::vector<float> sgdW = weights(f.weights, n, 51), sgdKernelW = sgdW;
        std::vector<float> buf(n, 0.0f), kernelBuf(n, 0.0f);
        for (int step = 1; step <= 2; ++step) {
            const std::vector<float> grad = gradients(f.weights, n, 52 + static_cast<std::uint64_t>(step));
            const SgdScalars s{0.9f, -0.01f, true, step == 1};
            UpdateCounts cpuCounts;
            plab::sgdUpdate(s, f, sgdW.data(), grad.data(), buf.data(), n, cpuCounts);
            const UpdateCounts kernelCounts = emulateSgd(s, f, sgdKernelW, grad, kernelBuf);
            QVERIFY2(sameValues(sgdKernelW, sgdW), qPrintable(QString("sgd step %1").arg(step)));
            QVERIFY(sameValues(kernelBuf, buf));
            QCOMPARE(kernelCounts, cpuCounts);
        }
        for (float b : buf) QCOMPARE(roundTo(f.state, b), b);   // the buffer holds state-format values
    }

    // Real fp16 Adam loses eps: (sqrt(0) / c2).add_(1e-8) stores 0 in fp16, and a zero
    // gradient then gives 0/0 = NaN weights. fp32 and bf16 (eps representable) do not.
    void adamZeroGradientLosesEpsInFp16_data() { addFormatRows(); }
    void adamZeroGradientLosesEpsInFp16()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const std::size_t n = 64;
        std::vector<float> w(n, 1.0f), m(n, 0.0f), v(n, 0.0f), cpuW = w, cpuM = m, cpuV = v;
        const std::vector<float> grad(n, 0.0f);
        const AdamScalars s = adamScalars(1);
        UpdateCounts cpuCounts;
        plab::adamUpdate(s, f, cpuW.data(), grad.data(), cpuM.data(), cpuV.data(), n, cpuCounts);
        const UpdateCounts counts = emulateAdam(s, f, w, grad, m, v);
        QCOMPARE(counts, cpuCounts);
        QVERIFY(sameValues(w, cpuW));
        const auto expected = f == Format::fp16 ? static_cast<std::int64_t>(n) : 0;
        QCOMPARE(counts.nonFinite, expected);
        QCOMPARE(counts.nonzero, expected);   // 0 * anything finite is no update
    }

    // GradScaler.unscale_ / clip_grad_norm_: the flag over every view first, then scale and
    // round per view format, the squares summed in double view by view.
    void gradientSweepMatchesUpdateMath_data()
    {
        QTest::addColumn<float>("multiplier");
        QTest::addRow("no scaling") << 1.0f;
        QTest::addRow("unscale 2^-16") << 0x1.0p-16f;
        QTest::addRow("clip by 0.3") << 0.3f;   // not a power of two: the products round
    }
    void gradientSweepMatchesUpdateMath()
    {
        QFETCH(float, multiplier);
        const std::vector<Format> formats = {Format::fp32, Format::fp16, Format::bf16};
        std::vector<std::vector<float>> cpuViews, kernelViews;
        for (std::size_t k = 0; k < formats.size(); ++k) {
            std::vector<float> v = valuesWithSpecials(formats[k], 1000 + 77 * k, 41 + k, {0.0f, -0.0f, 0x1.0p-24f, 65504.0f});
            cpuViews.push_back(v);
            kernelViews.push_back(v);
        }
        std::vector<GradientView> views;
        for (std::size_t k = 0; k < formats.size(); ++k)
            views.push_back({cpuViews[k].data(), static_cast<std::int64_t>(cpuViews[k].size()), formats[k]});
        std::vector<std::vector<float>> unsummed = cpuViews;
        const SweepResult cpu = plab::gradientSweep(views.data(), views.size(), multiplier, SweepSquares::summed);
        const SweepResult kernel = emulateSweep(kernelViews, formats, multiplier);
        QVERIFY(!cpu.nonFinite && !kernel.nonFinite);
        QVERIFY(kernel.sumOfSquares == cpu.sumOfSquares);   // the same sums in the same order
        for (std::size_t k = 0; k < formats.size(); ++k) QVERIFY(sameBits(kernelViews[k], cpuViews[k]));
        // Without the sum: the same values, and no sum.
        for (std::size_t k = 0; k < formats.size(); ++k) views[k].data = unsummed[k].data();
        const SweepResult skipped = plab::gradientSweep(views.data(), views.size(), multiplier, SweepSquares::skipped);
        QVERIFY(!skipped.nonFinite);
        QCOMPARE(skipped.sumOfSquares, 0.0);
        for (std::size_t k = 0; k < formats.size(); ++k) QVERIFY(sameBits(unsummed[k], cpuViews[k]));

        // An inf in the last view: flagged, and no value of any view changes.
        std::vector<std::vector<float>> poisoned = kernelViews;
        poisoned.back()[5] = kInf;
        const std::vector<std::vector<float>> before = poisoned;
        const SweepResult flagged = emulateSweep(poisoned, formats, multiplier);
        QVERIFY(flagged.nonFinite);
        for (std::size_t k = 0; k < formats.size(); ++k) QVERIFY(sameBits(poisoned[k], before[k]));
    }

    // The fused bias + rounding kernel against the CPU backend's addBiasRound: bits and
    // counts exactly, for Linear's layout (period out, repeat 1) and Conv2d's.
    void addBiasRoundMatchesCpu_data() { addBiasRoundRows(6, 74); }
    void addBiasRoundMatchesCpu()
    {
        QFETCH(int, format);
        QFETCH(qlonglong, period);
        QFETCH(qlonglong, repeat);
        const auto f = static_cast<Format>(format);
        std::vector<float> cpuX = telemetryData(static_cast<std::size_t>(period * repeat * 53), 51), kernelX = cpuX;
        const std::vector<float> bias = uniformValues(static_cast<std::size_t>(period), 52, -0.5f, 0.5f);
        RoundingStats cpuStats, kernelStats;
        GradientHistogram cpuHist, kernelHist;
        cpu_->addBiasRound(f, cpuX.data(), static_cast<std::int64_t>(cpuX.size()), bias.data(), period, repeat,
                           &cpuStats, &cpuHist);
        emulateAddBiasRound(f, kernelX, bias, period, repeat, kernelStats, kernelHist);
        QVERIFY(sameBits(kernelX, cpuX));
        QCOMPARE(kernelStats, asDeviceCounts(cpuStats));
        QVERIFY(kernelHist == cpuHist);
        if (f == Format::fp32) QCOMPARE(cpuStats, RoundingStats{});   // not a rounding site
    }

    // ReLU keeps NaN, maps -0 to +0; its backward passes g only where y > 0.
    void reluMatchesCpu()
    {
        std::vector<float> cpuX = telemetryData(10007, 61), kernelX = cpuX;
        cpu_->relu(cpuX.data(), static_cast<std::int64_t>(cpuX.size()));
        for (float& x : kernelX) x = ck::reluValue(x);
        QVERIFY(sameBits(kernelX, cpuX));
        std::vector<float> cpuG = telemetryData(cpuX.size(), 62), kernelG = cpuG;
        cpu_->reluBackward(cpuX.data(), cpuG.data(), static_cast<std::int64_t>(cpuG.size()));
        for (std::size_t i = 0; i < kernelG.size(); ++i) kernelG[i] = ck::reluGradient(cpuX[i], kernelG[i]);
        QVERIFY(sameBits(kernelG, cpuG));
    }

    // 2x2 max pooling: the first maximum wins ties, a NaN wins, odd sizes floor; backward
    // scatters to the winners and zeroes everything else (the odd last row/column too).
    void maxPoolMatchesCpu_data()
    {
        QTest::addColumn<qlonglong>("planes");
        QTest::addColumn<qlonglong>("height");
        QTest::addColumn<qlonglong>("width");
        QTest::addRow("even 6x8") << 3LL << 6LL << 8LL;
        QTest::addRow("odd 5x7") << 5LL << 5LL << 7LL;
    }
    void maxPoolMatchesCpu()
    {
        QFETCH(qlonglong, planes);
        QFETCH(qlonglong, height);
        QFETCH(qlonglong, width);
        const ck::PoolShape s{planes, height, width};
        Rng rng{71};
        std::vector<float> in(static_cast<std::size_t>(planes * height * width));
        for (auto& x : in) {   // few distinct values: many ties, and both zeros
            const float choices[] = {-1.0f, 0.0f, -0.0f, 0.5f, 2.0f, 2.0f, kNaN, -kInf};
            x = choices[rng.next() % std::size(choices)];
        }
        const auto outSize = static_cast<std::size_t>(planes * (height / 2) * (width / 2));
        std::vector<float> cpuOut(outSize), kernelOut;
        std::vector<std::uint8_t> cpuArg(outSize), kernelArg;
        cpu_->maxPool2x2(in.data(), planes, height, width, cpuOut.data(), cpuArg.data());
        emulateMaxPool(s, in, kernelOut, kernelArg);
        QVERIFY(sameBits(kernelOut, cpuOut));
        QVERIFY(kernelArg == cpuArg);
        // The kernel stores poolMax's value, carried along rather than read back from the
        // window: exactly the winner's bits (the sign of a zero, the NaN itself).
        for (std::size_t o = 0; o < outSize; ++o) {
            const float* w = in.data() + ck::poolWindowStart(s, static_cast<std::int64_t>(o));
            const ck::PoolMax best = ck::poolMax(w[0], w[1], w[width], w[width + 1]);
            QCOMPARE(std::bit_cast<std::uint32_t>(best.value), std::bit_cast<std::uint32_t>(cpuOut[o]));
            QCOMPARE(best.position, static_cast<int>(cpuArg[o]));
        }

        const std::vector<float> g = uniformValues(outSize, 72);
        std::vector<float> cpuDx(in.size(), 9.0f), kernelDx;
        cpu_->maxPool2x2Backward(g.data(), cpuArg.data(), planes, height, width, cpuDx.data());
        emulateMaxPoolBackward(s, g, kernelArg, kernelDx);
        QVERIFY(sameBits(kernelDx, cpuDx));
    }

    // The packed kernels (packed_kernels.cu) element by element against the CPU backend's
    // packed ops, for fp16 and bf16: widening every one of the 65,536 patterns, ReLU and its
    // backward on every pattern, rounding into patterns with the counts (the bias added in
    // fp32 first), pooling (the winner's own pattern) and the row sums of widened values.
    void packedOpsMatchCpu_data()
    {
        QTest::addColumn<int>("format");
        for (Format f : {Format::fp16, Format::bf16})
            QTest::addRow("%s", std::string(formatName(f)).c_str()) << static_cast<int>(f);
    }
    void packedOpsMatchCpu()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const int fk = static_cast<int>(f);
        std::vector<std::uint16_t> all(65536);
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
        const auto n = static_cast<std::int64_t>(all.size());

        std::vector<float> cpuWide(all.size());
        cpu_->widen16(f, all.data(), n, cpuWide.data(), n, 1, n);
        for (std::size_t i = 0; i < all.size(); ++i) {
            const std::uint32_t kernel = ck::widenBits16(fk, all[i]);
            QCOMPARE(kernel, std::bit_cast<std::uint32_t>(cpuWide[i]));
            if (!std::isnan(cpuWide[i])) QCOMPARE(ck::narrowBits16(fk, kernel), all[i]);   // exact both ways
        }

        std::vector<std::uint16_t> cpuRelu = all, kernelRelu = all;
        cpu_->relu16(f, cpuRelu.data(), n);
        for (auto& b : kernelRelu)
            if (ck::atMostZeroBits16(fk, b)) b = 0;
        QVERIFY(kernelRelu == cpuRelu);
        std::vector<std::uint16_t> cpuG(all.rbegin(), all.rend()), kernelG = cpuG;   // g against every y
        cpu_->reluBackward16(f, all.data(), cpuG.data(), n);
        for (std::size_t i = 0; i < all.size(); ++i)
            if (ck::atMostZeroBits16(fk, all[i])) kernelG[i] = 0;
        QVERIFY(kernelG == cpuG);

        // roundTo16 / addBiasRoundTo16 over strided rows (leading dimensions past the row).
        const std::int64_t rows = 7, cols = 1031, ld = 1040, outLd = 1035;
        const std::vector<float> x = telemetryData(static_cast<std::size_t>(rows * ld), 91);
        const std::vector<float> bias = uniformValues(static_cast<std::size_t>(rows), 92, -0.5f, 0.5f);
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
            std::vector<std::uint16_t> cpuOut(static_cast<std::size_t>(rows * outLd), 0xABCD), kernelOut = cpuOut;
            RoundingStats cpuStats, kernelStats;
            GradientHistogram cpuHist, kernelHist;
            if (b)
                cpu_->addBiasRoundTo16(f, x.data(), ld, b, cpuOut.data(), outLd, rows, cols, &cpuStats, &cpuHist);
            else
                cpu_->roundTo16(f, x.data(), ld, cpuOut.data(), outLd, rows, cols, &cpuStats, &cpuHist);
            std::vector<std::uint64_t> counters(ck::kCounterSlots, 0);
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = 0; c < cols; ++c) {   // roundTo16Kernel's body
                    float v = x[static_cast<std::size_t>(r * ld + c)];
                    if (b) v = ck::addRn(v, b[r]);
                    const std::uint32_t in = ck::floatBits(v), out = ck::roundBits(fk, in);
                    kernelOut[static_cast<std::size_t>(r * outLd + c)] = ck::narrowBits16(fk, out);
                    for (unsigned mask = ck::statMask(fk, in, out); mask != 0; mask &= mask - 1)
                        ++counters[static_cast<std::size_t>(std::countr_zero(mask))];
                    ++counters[static_cast<std::size_t>(ck::histogramSlot(in))];
                }
            addCounters(counters, static_cast<std::size_t>(rows * cols), kernelStats, kernelHist);
            QVERIFY(kernelOut == cpuOut);   // the gaps untouched by both
            QCOMPARE(kernelStats, asDeviceCounts(cpuStats));
            QVERIFY(kernelHist == cpuHist);
        }

        // Pooling on patterns: many ties, both zeros, NaNs, an odd size.
        const ck::PoolShape s{3, 5, 7};
        Rng rng{93};
        std::vector<std::uint16_t> in(static_cast<std::size_t>(s.planes * s.height * s.width));
        const std::uint16_t choices[] = {0x0000, 0x8000, 0x3C00, 0x3C00, 0xBC00, 0x7E00, 0x0001, 0x4000};
        for (auto& v : in) v = choices[rng.next() % std::size(choices)];   // fp16 patterns; bf16 reads them as its own
        const auto outSize = static_cast<std::size_t>(s.planes * s.outHeight() * s.outWidth());
        std::vector<std::uint16_t> cpuPool(outSize), kernelPool(outSize);
        std::vector<std::uint8_t> cpuArg(outSize), kernelArg(outSize);
        cpu_->maxPool2x2Packed(f, in.data(), s.planes, s.height, s.width, cpuPool.data(), cpuArg.data());
        for (std::size_t o = 0; o < outSize; ++o) {   // maxPoolPackedKernel's body
            const std::uint16_t* w = in.data() + ck::poolWindowStart(s, static_cast<std::int64_t>(o));
            const auto wide = [&](std::uint16_t h) { return std::bit_cast<float>(ck::widenBits16(fk, h)); };
            const ck::PoolMax best = ck::poolMax(wide(w[0]), wide(w[1]), wide(w[s.width]), wide(w[s.width + 1]));
            kernelPool[o] = w[(best.position / 2) * s.width + best.position % 2];
            kernelArg[o] = static_cast<std::uint8_t>(best.position);
        }
        QVERIFY(kernelPool == cpuPool);
        QVERIFY(kernelArg == cpuArg);

        // Row sums of the widened values: the CPU's sumRows16 is its sumRows on them (the
        // device shares sumRows' kernel, whose order tst_cuda_backend checks).
        std::vector<std::uint16_t> packedRows(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < packedRows.size(); ++i) packedRows[i] = ck::narrowBits16(fk, ck::roundBits(fk, ck::floatBits(x[i])));
        std::vector<float> widened(packedRows.size()), sums16(static_cast<std::size_t>(rows)), sums(sums16.size());
        for (std::size_t i = 0; i < packedRows.size(); ++i) widened[i] = std::bit_cast<float>(ck::widenBits16(fk, packedRows[i]));
        cpu_->sumRows16(f, packedRows.data(), rows, cols, sums16.data());
        cpu_->sumRows(widened.data(), rows, cols, sums.data());
        QVERIFY(sameBits(sums16, sums));
    }

    // Flatten's (C, N, hw) <-> (N, C, hw): the gather index of every output element.
    void transposeBlocksMatchesCpu()
    {
        const std::int64_t A = 7, B = 5, inner = 13;
        const std::vector<float> in = uniformValues(static_cast<std::size_t>(A * B * inner), 81);
        std::vector<float> cpuOut(in.size()), kernelOut(in.size());
        cpu_->transposeBlocks(in.data(), A, B, inner, cpuOut.data());
        for (std::int64_t o = 0; o < A * B * inner; ++o)
            kernelOut[static_cast<std::size_t>(o)] = in[static_cast<std::size_t>(ck::transposeBlocksSource(A, B, inner, o))];
        QVERIFY(sameBits(kernelOut, cpuOut));
    }

    // The device's im2col reads the whole (C, N, H, W) tensor and col2im writes into it
    // (no block copies): the index maps over a sample range, against the CPU.
    void convLoweringOnWholeTensorMatchesCpu()
    {
        const ConvGeometry g{3, 5, 4, 6, 3, 1};   // (C, N, H, W) = (3, 5, 4, 6)
        const ck::ConvShape shape{g.channels, g.batch, g.height, g.width, g.kernel, g.pad};
        const std::int64_t n0 = 1, count = 3, hw = g.planeSize();
        const std::vector<float> src = uniformValues(static_cast<std::size_t>(g.channels * g.batch * hw), 91);
        const auto colsSize = static_cast<std::size_t>(g.patchSize() * count * hw);
        std::vector<float> cpuCols(colsSize), kernelCols(colsSize);
        cpu_->im2col(g, src.data(), n0, count, cpuCols.data());
        const std::int64_t columns = count * hw;
        for (std::size_t i = 0; i < colsSize; ++i) {
            const std::int64_t from = ck::im2colSource(shape, n0, count, static_cast<std::int64_t>(i) / columns,
                                                       static_cast<std::int64_t>(i) % columns);
            kernelCols[i] = from < 0 ? 0.0f : src[static_cast<std::size_t>(from)];
        }
        QVERIFY(sameBits(kernelCols, cpuCols));
        std::vector<float> cpuDst(src.size(), 7.0f), kernelDst(src.size(), 7.0f);
        cpu_->col2im(g, cpuCols.data(), n0, count, cpuDst.data(), 0);
        for (std::int64_t i = 0; i < g.channels * count * hw; ++i) {
            float sum = 0.0f;
            for (int kk = 0; kk < g.kernel * g.kernel; ++kk)
                if (const std::int64_t from = ck::col2imTerm(shape, count, i, kk); from >= 0)
                    sum = ck::addRn(sum, cpuCols[static_cast<std::size_t>(from)]);
            kernelDst[static_cast<std::size_t>(ck::col2imTarget(shape, n0, count, i))] = sum;
        }
        QVERIFY(sameBits(kernelDst, cpuDst));   // samples outside the range untouched in both
    }

    // Softmax cross-entropy per row, and the batch total in row order: the CPU backend's
    // loss bit for bit, in fp32 and emulated in every reduced format.
    void softmaxMatchesCpu_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<bool>("nanRow");
        for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16}) {
            QTest::addRow("%s", std::string(formatName(f)).c_str()) << static_cast<int>(f) << false;
            QTest::addRow("%s with a NaN row", std::string(formatName(f)).c_str()) << static_cast<int>(f) << true;
        }
    }
    void softmaxMatchesCpu()
    {
        QFETCH(int, format);
        QFETCH(bool, nanRow);
        const auto f = static_cast<Format>(format);
        const std::int64_t N = 67, classes = 10;
        std::vector<float> logits = logitsFor(N, classes, 101);
        for (auto& x : logits) x = roundTo(f == Format::tf32 ? Format::fp32 : f, x);   // logits as stored
        if (nanRow) logits[5 * classes + 3] = kNaN;
        const std::vector<std::uint8_t> labels = labelsFor(static_cast<std::size_t>(N), classes, 102);
        std::vector<float> cpuProb(logits.size()), kernelProb;
        const LossResult cpu = cpu_->softmaxCrossEntropy(logits.data(), labels.data(), N, classes, f, cpuProb.data());
        const LossResult kernel = emulateSoftmax(f, logits, labels, classes, kernelProb);
        QVERIFY2(sameFloat(kernel.loss, cpu.loss), qPrintable(QString("kernel %1, cpu %2").arg(kernel.loss).arg(cpu.loss)));
        QCOMPARE(kernel.correct, cpu.correct);
        QVERIFY(sameValues(kernelProb, cpuProb));
        QCOMPARE(std::isnan(cpu.loss), nanRow);
        // Row by row: a batch of one returns its row's loss (-logProb) unblurred by the total.
        for (std::int64_t n = 0; n < N; ++n) {
            const std::vector<float> row(logits.begin() + n * classes, logits.begin() + (n + 1) * classes);
            const std::vector<std::uint8_t> label = {labels[static_cast<std::size_t>(n)]};
            std::vector<float> p(row.size());
            const float cpuRow = cpu_->softmaxCrossEntropy(row.data(), label.data(), 1, classes, f, p.data()).loss;
            QVERIFY(sameFloat(emulateSoftmax(f, row, label, classes, p).loss, cpuRow));
        }
    }

    // The fp32 path against softmax cross-entropy computed in double from its definition:
    // the loss and every probability within a few fp32 roundings.
    void softmaxFp32MatchesDoubleReference()
    {
        const std::int64_t N = 67, classes = 10;
        const std::vector<float> logits = logitsFor(N, classes, 111);
        const std::vector<std::uint8_t> labels = labelsFor(static_cast<std::size_t>(N), classes, 112);
        std::vector<float> prob;
        const LossResult kernel = emulateSoftmax(Format::fp32, logits, labels, classes, prob);
        double total = 0.0, worstProb = 0.0;
        std::int64_t correct = 0;
        for (std::int64_t n = 0; n < N; ++n) {
            const float* row = logits.data() + n * classes;
            const double m = *std::max_element(row, row + classes);
            double sum = 0.0;
            for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - m);
            const double lse = m + std::log(sum);
            total += lse - row[labels[static_cast<std::size_t>(n)]];
            for (std::int64_t j = 0; j < classes; ++j)
                worstProb = std::max(worstProb, std::abs(prob[static_cast<std::size_t>(n * classes + j)] - std::exp(row[j] - lse)));
            correct += std::max_element(row, row + classes) - row == labels[static_cast<std::size_t>(n)];
        }
        const double reference = total / static_cast<double>(N);
        // lse is rounded to fp32 before the subtraction: an ulp of the shifted logits (300).
        QVERIFY2(std::abs(kernel.loss - reference) <= 1e-4 * std::max(1.0, std::abs(reference)),
                 qPrintable(QString("loss %1, reference %2").arg(kernel.loss).arg(reference)));
        QVERIFY2(worstProb <= 1e-4, qPrintable(QString("probability off by %1").arg(worstProb)));
        QCOMPARE(kernel.correct, correct);
    }

    // d loss / d logits = (p - onehot) / N * lossScale, op for op as the CPU backend.
    void softmaxBackwardMatchesCpu()
    {
        const std::int64_t N = 37, classes = 10;   // N not a power of two: the division rounds
        const std::vector<std::uint8_t> labels = labelsFor(static_cast<std::size_t>(N), classes, 122);
        std::vector<float> prob;
        emulateSoftmax(Format::fp32, logitsFor(N, classes, 121), labels, classes, prob);
        for (float lossScale : {1.0f, 65536.0f, 0.125f, 3.0f}) {
            std::vector<float> cpuGrad(prob.size()), kernelGrad;
            cpu_->softmaxCrossEntropyBackward(prob.data(), labels.data(), N, classes, lossScale, cpuGrad.data());
            emulateSoftmaxBackward(prob, labels, classes, lossScale, kernelGrad);
            QVERIFY(sameBits(kernelGrad, cpuGrad));
        }
    }

    // The vision transformer's ops (transformer_math.h) row by row against the CPU
    // backend's transformer ops: LayerNorm and the row softmax in fp32 and emulated in
    // fp16 and bf16 (rows whose sums of squares overflow fp16 among them), their
    // gradients, GELU, patches, periodic sums and token means, bit for bit.
    void transformerOpsMatchCpu_data() { addFormatRows(); }
    void transformerOpsMatchCpu()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        const std::int64_t rows = 37, D = 48;
        std::vector<float> x = uniformValues(static_cast<std::size_t>(rows * D), 131, -3.0f, 3.0f);
        for (std::int64_t d = 0; d < D; ++d) x[static_cast<std::size_t>(5 * D + d)] = d % 2 ? 60.0f : -60.0f;   // 172800
        const std::vector<float> gamma = uniformValues(static_cast<std::size_t>(D), 132, 0.5f, 1.5f);
        const std::vector<float> beta = uniformValues(static_cast<std::size_t>(D), 133, -0.5f, 0.5f);
        std::vector<float> y(x.size()), xhat(x.size()), rstd(static_cast<std::size_t>(rows)), sums(rstd.size());
        cpu_->layerNorm(f, x.data(), rows, D, gamma.data(), beta.data(), 1e-5f, y.data(), xhat.data(), rstd.data(),
                        sums.data());
        std::vector<float> ky(x.size()), kxhat(x.size()), krstd(rstd.size()), ksums(rstd.size());
        for (std::int64_t m = 0; m < rows; ++m)
            ck::layerNormRow(format, x.data() + m * D, D, gamma.data(), beta.data(), 1e-5f, ky.data() + m * D,
                             kxhat.data() + m * D, krstd.data() + m, ksums.data() + m);
        QVERIFY(sameValues(ky, y));
        QVERIFY(sameValues(kxhat, xhat));
        QVERIFY(sameValues(krstd, rstd));
        QVERIFY(sameValues(ksums, sums));
        QCOMPARE(std::isinf(roundTo(Format::fp16, sums[5])), true);   // the row that overflows a 16-bit sum

        const std::vector<float> g = uniformValues(x.size(), 134, -1.0f, 1.0f);
        std::vector<float> dx(x.size()), dgamma(gamma.size()), dbeta(gamma.size());
        cpu_->layerNormBackward(g.data(), xhat.data(), rstd.data(), gamma.data(), rows, D, dx.data(), dgamma.data(),
                                dbeta.data());
        std::vector<float> kdx(x.size()), kdgamma(gamma.size()), kdbeta(gamma.size());
        for (std::int64_t d = 0; d < D; ++d)
            ck::layerNormWeightGradColumn(g.data(), xhat.data(), rows, D, d, kdgamma.data(), kdbeta.data());
        for (std::int64_t m = 0; m < rows; ++m)
            ck::layerNormInputGradRow(g.data() + m * D, xhat.data() + m * D, rstd[static_cast<std::size_t>(m)],
                                      gamma.data(), D, kdx.data() + m * D);
        QVERIFY(sameValues(kdx, dx));
        QVERIFY(sameValues(kdgamma, dgamma));
        QVERIFY(sameValues(kdbeta, dbeta));

        // Scores of 16 tokens a row, one row past fp16's range (inf - inf: NaN).
        const std::int64_t T = 16;
        std::vector<float> s = uniformValues(static_cast<std::size_t>(rows * T), 135, -8.0f, 8.0f);
        s[3 * T + 2] = std::numeric_limits<float>::infinity();
        std::vector<float> p(s.size()), kp(s.size());
        cpu_->softmaxRows(f, s.data(), rows, T, p.data());
        for (std::int64_t r = 0; r < rows; ++r) ck::softmaxRowPlain(format, s.data() + r * T, T, kp.data() + r * T);
        QVERIFY(sameValues(kp, p));
        QVERIFY(std::isnan(p[3 * T]));
        std::vector<float> dp = uniformValues(s.size(), 136, -1.0f, 1.0f), kdp = dp;
        cpu_->softmaxRowsBackward(p.data(), dp.data(), rows, T);
        for (std::int64_t r = 0; r < rows; ++r) ck::softmaxRowBackward(p.data() + r * T, kdp.data() + r * T, T);
        QVERIFY(sameValues(kdp, dp));
    }

    void transformerElementOpsMatchCpu()
    {
        const std::vector<float> x = uniformValues(4096, 141, -6.0f, 6.0f);
        std::vector<float> y(x.size()), ky(x.size());
        cpu_->gelu(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
        for (std::size_t i = 0; i < x.size(); ++i) ky[i] = ck::geluValue(x[i]);
        QVERIFY(sameBits(ky, y));
        std::vector<float> g = uniformValues(x.size(), 142, -1.0f, 1.0f), kg(g.size());
        for (std::size_t i = 0; i < x.size(); ++i) kg[i] = ck::geluGradient(x[i], g[i]);
        cpu_->geluBackward(x.data(), g.data(), static_cast<std::int64_t>(x.size()));
        QVERIFY(sameBits(kg, g));

        const std::int64_t N = 3, side = 28, patch = 7;
        const std::vector<float> images = uniformValues(static_cast<std::size_t>(N * side * side), 143, 0.0f, 1.0f);
        std::vector<float> patches(images.size()), kpatches(images.size());
        cpu_->patchify(images.data(), N, side, patch, patches.data());
        for (std::size_t o = 0; o < images.size(); ++o)
            kpatches[o] = images[static_cast<std::size_t>(ck::patchSource(static_cast<std::int64_t>(o), side, patch))];
        QVERIFY(sameBits(kpatches, patches));

        const std::int64_t T = 16, D = 12, period = T * D;
        const std::vector<float> tokens = uniformValues(static_cast<std::size_t>(N * period), 144, -2.0f, 2.0f);
        std::vector<float> sums(static_cast<std::size_t>(period)), ksums(sums.size());
        cpu_->sumPeriodic(tokens.data(), N * period, period, sums.data());
        for (std::int64_t i = 0; i < period; ++i) ksums[static_cast<std::size_t>(i)] = ck::periodicSum(tokens.data(), N, period, i);
        QVERIFY(sameBits(ksums, sums));
        std::vector<float> means(static_cast<std::size_t>(N * D)), kmeans(means.size());
        cpu_->meanTokens(tokens.data(), N, T, D, means.data());
        for (std::int64_t o = 0; o < N * D; ++o) kmeans[static_cast<std::size_t>(o)] = ck::tokenMean(tokens.data(), T, D, o / D, o % D);
        QVERIFY(sameBits(kmeans, means));
    }
};

QTEST_GUILESS_MAIN(TestCudaOpMath)
#include "tst_cuda_op_math.moc"
