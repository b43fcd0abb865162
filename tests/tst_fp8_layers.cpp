// Over 500 lines: each FP8, MX and NVFP4 recipe in both layers, sharing the double-precision references.
// Tests the FP8, MX and NVFP4 recipes in the layers (issue 15): Linear and Conv2d outputs and
// gradients against references computed here in double from operands quantised by the
// scalar conversions of numerics/minifloat (checked against the specifications by
// tst_minifloat), with the scales of Transformer Engine's rules worked out here; the delayed
// scaling's amax history step by step (window, max and most_recent, margin, evaluation
// leaving it alone); the MX/NVFP4 convolution's gradients, and its lowering quantised in
// one pass against lowering then quantising; the memory a quantised copy is counted at;
// the presets, settings keys and their refusals; a backend that cannot quantise refusing
// the recipes; FP8 copies held as codes giving the bits of copies held as values.
// links: plab_train plab_test_support
#include "amp/recipe.h"
#include "backend/backend.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "train/settings.h"
#include "train/trainer.h"

#include "test_support.h"

#include <QScopeGuard>
#include <QTest>

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace plab;

namespace {

using Rng = plab::testing::SplitMix64;

float amaxOfTensor(const Tensor& t)
{
    float a = 0;
    for (std::int64_t i = 0; i < t.size(); ++i) a = std::max(a, std::fabs(t[i]));
    return a;
}

struct Harness {
    std::unique_ptr<ComputeBackend> backend = createCpuBackend(2);
    PrecisionRecipe recipe;
    TelemetryCollector telemetry;
    StepContext ctx;
    explicit Harness(const std::string& preset)
    {
        recipe = *PrecisionRecipe::fromPreset(preset);
        ctx = StepContext{&recipe, backend.get(), &telemetry, nullptr, true};
        telemetry.beginStep(true);
    }
    bool nvfp4() const { return recipe.quantization.mode == QuantMode::nvfp4; }
    // The tensor amax mxMatrix takes: NVFP4's tensor scale comes from the whole tensor's
    // amax; -1 under MX, which has none.
    float blockAmax(const Tensor& t) const { return nvfp4() ? amaxOfTensor(t) : -1.0f; }
    const TapData& tap(const std::string& layer, TensorKind kind) const
    {
        return telemetry.taps().at(TapKey{layer, kind});
    }
};

// Values that bf16 holds (as the recipe's bf16 weight copies and activations do).
void fillBf16(Tensor& t, Rng& rng, float lo, float hi)
{
    for (std::int64_t i = 0; i < t.size(); ++i) t[i] = roundTo(Format::bf16, rng.uniform(lo, hi));
}

// Per tensor, as quantize.h says: round_f(x * scale) * (1 / scale), in fp32.
std::vector<double> perTensor(MiniFormat f, const Tensor& t, float scale)
{
    std::vector<double> q(static_cast<std::size_t>(t.size()));
    const float inv = 1.0f / scale;
    for (std::int64_t i = 0; i < t.size(); ++i)
        q[static_cast<std::size_t>(i)] = roundToMini(f, t[i] * scale, Overflow::saturate) * inv;
    return q;
}

// A (rows, cols) matrix given by at(r, c), quantised in blocks along its rows or down its
// columns: MX blocks of 32 with mxQuantize, or (nvfp4Amax >= 0) NVFP4 blocks of 16 with
// nvfp4Quantize, the tensor scale from nvfp4Amax (the amax of the whole tensor).
std::vector<double> mxMatrix(MiniFormat f, std::int64_t rows, std::int64_t cols, bool alongRows,
                             const std::function<float(std::int64_t, std::int64_t)>& at, float nvfp4Amax = -1.0f)
{
    const bool nvfp4 = nvfp4Amax >= 0.0f;
    const std::int64_t size = nvfp4 ? kNvfp4BlockSize : kMxBlockSize;
    std::vector<double> q(static_cast<std::size_t>(rows * cols));
    const std::int64_t lines = alongRows ? rows : cols, length = alongRows ? cols : rows;
    for (std::int64_t line = 0; line < lines; ++line)
        for (std::int64_t k0 = 0; k0 < length; k0 += size) {
            const std::int64_t k1 = std::min<std::int64_t>(length, k0 + size);
            std::vector<float> block;
            for (std::int64_t k = k0; k < k1; ++k) block.push_back(alongRows ? at(line, k) : at(k, line));
            const MxBlock b = nvfp4 ? MxBlock{} : mxQuantize(f, block.data(), block.size());
            const Nvfp4Block b4 = nvfp4 ? nvfp4Quantize(block.data(), block.size(), nvfp4TensorScale(nvfp4Amax))
                                        : Nvfp4Block{};
            for (std::int64_t k = k0; k < k1; ++k) {
                const std::int64_t r = alongRows ? line : k, c = alongRows ? k : line;
                const auto i = static_cast<std::size_t>(k - k0);
                q[static_cast<std::size_t>(r * cols + c)] = nvfp4 ? b4.value(i) : b.value(i);
            }
        }
    return q;
}

// |got - expected| within what the engine's arithmetic allows after the operands: an fp32
// sum of `terms` (bound n * 2^-24 * sum |terms|), then, for a bf16 result, one rounding
// (2^-8 relative covers it with the bias's fp32 addition). Also requires the quantisation to
// matter: somewhere the unquantised result lies well outside that allowance.
void compareResults(const std::vector<double>& expected, const std::vector<double>& absSums,
                    const std::vector<double>& unquantised, const Tensor& got, std::int64_t n, bool bf16,
                    const char* what)
{
    bool quantisationShows = false;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double allowed = (bf16 ? std::ldexp(std::fabs(expected[i]), -8) : 0.0) +
                               double(n + 2) * std::ldexp(absSums[i], -24) + 1e-30;
        const double diff = std::fabs(double(got[static_cast<std::int64_t>(i)]) - expected[i]);
        if (!(diff <= allowed))
            QFAIL(qPrintable(QString("%1[%2]: %3, expected %4 within %5").arg(what).arg(i)
                                 .arg(double(got[static_cast<std::int64_t>(i)]), 0, 'g', 9).arg(expected[i], 0, 'g', 9)
                                 .arg(allowed)));
        quantisationShows |= std::fabs(unquantised[i] - expected[i]) > 4 * allowed;
    }
    QVERIFY2(quantisationShows, what);
}

// out (M, N) = sum_k a(m, k) * b(k, n), with sum |terms| beside it.
void matmul(std::int64_t M, std::int64_t N, std::int64_t K, const std::function<double(std::int64_t, std::int64_t)>& a,
            const std::function<double(std::int64_t, std::int64_t)>& b, std::vector<double>& out,
            std::vector<double>& absSum)
{
    out.assign(static_cast<std::size_t>(M * N), 0.0);
    absSum.assign(out.size(), 0.0);
    for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t k = 0; k < K; ++k) {
                const double t = a(m, k) * b(k, n);
                out[static_cast<std::size_t>(m * N + n)] += t;
                absSum[static_cast<std::size_t>(m * N + n)] += std::fabs(t);
            }
}

}  // namespace

class TestFp8Layers : public QObject {
    Q_OBJECT

private slots:
    void linearPerTensor_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::newRow("fp8-unscaled") << "fp8-unscaled";
        QTest::newRow("fp8-delayed") << "fp8-delayed";
        QTest::newRow("fp8-current") << "fp8-current";
    }
    void linearPerTensor()
    {
        QFETCH(QString, preset);
        Harness h(preset.toStdString());
        const std::int64_t N = 6, I = 40, O = 5;
        Linear layer("fc1", I, O);
        Rng rng{42};
        Parameter* w = layer.parameters()[0];
        Parameter* b = layer.parameters()[1];
        fillBf16(w->value, rng, -0.3f, 0.3f);
        fillBf16(b->value, rng, -0.1f, 0.1f);
        Tensor x({N, I});
        fillBf16(x, rng, -2.0f, 2.0f);
        x[3] = 300.0f;   // an outlier: saturates E4M3 without a scale

        // Scales: delayed starts at 1 (no history yet), current from the tensor's amax.
        const QuantMode mode = h.recipe.quantization.mode;
        auto scaleOf = [&](const Tensor& t, MiniFormat f) {
            return mode == QuantMode::fp8Current ? float(miniFormatInfo(f).maxFinite) / amaxOfTensor(t) : 1.0f;
        };
        const float sx = scaleOf(x, MiniFormat::e4m3), sw = scaleOf(w->value, MiniFormat::e4m3);
        const auto xq = perTensor(MiniFormat::e4m3, x, sx), wq = perTensor(MiniFormat::e4m3, w->value, sw);

        Tensor& y = layer.forward(x, h.ctx);
        std::vector<double> ref, abs, plain, plainAbs;
        matmul(N, O, I, [&](auto n, auto k) { return xq[size_t(n * I + k)]; },
               [&](auto k, auto o) { return wq[size_t(o * I + k)]; }, ref, abs);
        matmul(N, O, I, [&](auto n, auto k) { return double(x[n * I + k]); },
               [&](auto k, auto o) { return double(w->value[o * I + k]); }, plain, plainAbs);
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t o = 0; o < O; ++o) {
                ref[size_t(n * O + o)] += b->value[o];
                plain[size_t(n * O + o)] += b->value[o];
            }
        compareResults(ref, abs, plain, y, I, true, "output");

        // What the telemetry says of the input's quantisation.
        const TapData& in = h.tap("fc1", TensorKind::quantizedActivation);
        QVERIFY(in.scaling.present);
        QCOMPARE(in.scaling.scale, sx);
        QCOMPARE(in.scaling.amax, 300.0f);
        QCOMPARE(in.step.count, std::uint64_t(N * I));
        QCOMPARE(in.step.overflow, std::uint64_t(mode == QuantMode::fp8Current ? 0 : 0));   // 300 < 448

        // Backward: dY in E5M2 (hybrid), scale 1 at the first step for delayed.
        Tensor dY({N, O});
        fillBf16(dY, rng, -1e-3f, 1e-3f);
        const float sg = scaleOf(dY, MiniFormat::e5m2);
        const auto gq = perTensor(MiniFormat::e5m2, dY, sg);
        Tensor dYCopy = dY;
        Tensor* dX = layer.backward(dYCopy, h.ctx, true);
        QVERIFY(dX);
        // dW (O, I) = dYq^T Xq, rounded to bf16 (the storage format; held in fp32 beside the
        // master weights, as an AMP parameter's .grad).
        matmul(O, I, N, [&](auto o, auto n) { return gq[size_t(n * O + o)]; },
               [&](auto n, auto i) { return xq[size_t(n * I + i)]; }, ref, abs);
        matmul(O, I, N, [&](auto o, auto n) { return double(dY[n * O + o]); },
               [&](auto n, auto i) { return double(x[n * I + i]); }, plain, plainAbs);
        compareResults(ref, abs, plain, w->grad, N, true, "weight gradient");
        // dX (N, I) = dYq Wq, stored in bf16.
        matmul(N, I, O, [&](auto n, auto o) { return gq[size_t(n * O + o)]; },
               [&](auto o, auto i) { return wq[size_t(o * I + i)]; }, ref, abs);
        matmul(N, I, O, [&](auto n, auto o) { return double(dY[n * O + o]); },
               [&](auto o, auto i) { return double(w->value[o * I + i]); }, plain, plainAbs);
        compareResults(ref, abs, plain, *dX, O, true, "input gradient");
        // The bias gradient sums dY as it arrived, not its E5M2 copy (then bf16).
        for (std::int64_t o = 0; o < O; ++o) {
            double sum = 0;
            for (std::int64_t n = 0; n < N; ++n) sum += dY[n * O + o];
            QCOMPARE(b->grad[o], roundDoubleTo(Format::bf16, sum));
        }
        const TapData& g = h.tap("fc1", TensorKind::quantizedActivationGrad);
        // Unscaled and delayed (scale 1 at the first step): E5M2's smallest subnormal is
        // 2^-16, so gradients of 1e-3 and below lose most of their bits but not all.
        if (mode != QuantMode::fp8Current) QVERIFY(g.step.subnormal > 0);
        if (mode == QuantMode::fp8Current) QCOMPARE(g.step.subnormal, std::uint64_t(0));
    }

    void delayedScalingHistory()
    {
        // Steps with inputs of amax a_t; Transformer Engine: step t uses
        // 448 / reduce(a_{t-H} .. a_{t-1}) / 2^margin, 1 at the first step.
        struct Case { int history; AmaxAlgorithm algorithm; int margin; };
        for (const Case c : {Case{2, AmaxAlgorithm::max, 0}, Case{1024, AmaxAlgorithm::max, 1},
                             Case{3, AmaxAlgorithm::mostRecent, 0}}) {
            Harness h("fp8-delayed");
            h.recipe.quantization.amaxHistory = c.history;
            h.recipe.quantization.algorithm = c.algorithm;
            h.recipe.quantization.margin = c.margin;
            Linear layer("fc", 4, 2);
            const std::vector<float> amaxes = {1.0f, 4.0f, 0.5f, 2.0f, 0.25f};
            std::vector<float> seen;
            for (std::size_t t = 0; t < amaxes.size(); ++t) {
                h.telemetry.beginStep(false);
                Tensor x({1, 4});
                x[0] = amaxes[t];
                x[1] = -amaxes[t] / 2;
                layer.forward(x, h.ctx);
                seen.push_back(h.tap("fc", TensorKind::quantizedActivation).scaling.scale);
                if (t == 2) {   // an evaluation in between changes nothing
                    h.ctx.training = false;
                    Tensor big({1, 4});
                    big[0] = 1000.0f;
                    layer.forward(big, h.ctx);
                    h.ctx.training = true;
                }
            }
            for (std::size_t t = 0; t < amaxes.size(); ++t) {
                float expected = 1.0f;
                if (t > 0) {
                    float reduced = amaxes[t - 1];
                    if (c.algorithm == AmaxAlgorithm::max)
                        for (std::size_t k = t > std::size_t(c.history) ? t - c.history : 0; k < t; ++k)
                            reduced = std::max(reduced, amaxes[k]);
                    expected = (448.0f / reduced) / std::ldexp(1.0f, c.margin);
                }
                QCOMPARE(seen[t], expected);
            }
        }
    }

    // Each block-scaled mode on both passes, and (a layer's own "mxfp4:forward") on one pass,
    // the other pass then multiplying the bf16 operands as they are.
    void linearMx_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("pass");
        QTest::newRow("mxfp8") << "mxfp8" << "both";
        QTest::newRow("mxfp4") << "mxfp4" << "both";
        QTest::newRow("nvfp4") << "nvfp4" << "both";
        QTest::newRow("mxfp6") << "mxfp6" << "both";
        QTest::newRow("mxfp4 forward pass") << "mxfp4" << "forward";
        QTest::newRow("mxfp4 backward pass") << "mxfp4" << "backward";
        QTest::newRow("nvfp4 forward pass") << "nvfp4" << "forward";
        QTest::newRow("nvfp4 backward pass") << "nvfp4" << "backward";
    }
    void linearMx()
    {
        QFETCH(QString, preset);
        QFETCH(QString, pass);
        Harness h(preset.toStdString());
        if (pass != "both") h.recipe.layers = {{"fc", (preset + ":" + pass).toStdString()}};
        const bool forwardQuantised = pass != "backward", backwardQuantised = pass != "forward";
        // The result of a pass that is not quantised is the product of the bf16 operands:
        // the quantised reference is then what it must differ from.
        const auto check = [](bool quantised, const std::vector<double>& ref, const std::vector<double>& abs,
                              const std::vector<double>& plain, const std::vector<double>& plainAbs, const Tensor& got,
                              std::int64_t n, const char* what) {
            if (quantised)
                compareResults(ref, abs, plain, got, n, true, what);
            else
                compareResults(plain, plainAbs, ref, got, n, true, what);
        };
        const bool nvfp4 = h.nvfp4();
        const auto amax = [&h](const Tensor& t) { return h.blockAmax(t); };
        const MiniFormat f = h.recipe.quantization.forwardFormat();
        const MiniFormat fg = h.recipe.quantization.gradientFormat();
        const std::int64_t N = 40, I = 70, O = 6;   // partial blocks along I and along N
        Linear layer("fc", I, O);
        Rng rng{7};
        Parameter* w = layer.parameters()[0];
        fillBf16(w->value, rng, -0.3f, 0.3f);
        layer.parameters()[1]->value.fill(0.0f);
        Tensor x({N, I});
        for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(Format::bf16, std::ldexp(rng.uniform(0.5f, 1.0f), int(i % 9) - 4));
        const Tensor x0 = x;
        Tensor& y = layer.forward(x, h.ctx);
        // Forward sums over I: X and W both in blocks along their rows.
        const auto xr = mxMatrix(f, N, I, true, [&](auto r, auto c) { return x0[r * I + c]; }, amax(x0));
        const auto wr = mxMatrix(f, O, I, true, [&](auto r, auto c) { return w->value[r * I + c]; }, amax(w->value));
        std::vector<double> ref, abs, plain, plainAbs;
        matmul(N, O, I, [&](auto n, auto k) { return xr[size_t(n * I + k)]; },
               [&](auto k, auto o) { return wr[size_t(o * I + k)]; }, ref, abs);
        matmul(N, O, I, [&](auto n, auto k) { return double(x0[n * I + k]); },
               [&](auto k, auto o) { return double(w->value[o * I + k]); }, plain, plainAbs);
        check(forwardQuantised, ref, abs, plain, plainAbs, y, I, "MX output");
        QCOMPARE(h.telemetry.taps().count(TapKey{"fc", TensorKind::quantizedWeight}), std::size_t(forwardQuantised));
        if (forwardQuantised) {
            QVERIFY(h.tap("fc", TensorKind::quantizedWeight).scaling.blocks);
            const TensorScaling& ws = h.tap("fc", TensorKind::quantizedWeight).scaling;
            QCOMPARE(ws.blockScales.total(), std::uint64_t(O * (nvfp4 ? 5 : 3)));   // 70 in blocks of 16 / of 32
            QCOMPARE(ws.tensorScale, nvfp4);   // NVFP4's tensor scale and amax beside the blocks'
            if (nvfp4) {
                QCOMPARE(ws.amax, amaxOfTensor(w->value));
                QCOMPARE(ws.scale, 448.0f * 6.0f / ws.amax);
            }
        }

        Tensor dY({N, O});
        fillBf16(dY, rng, -1e-2f, 1e-2f);
        const Tensor dY0 = dY;
        Tensor* dX = layer.backward(dY, h.ctx, true);
        // dW sums over N: dY and X in blocks down their columns.
        const auto gc = mxMatrix(fg, N, O, false, [&](auto r, auto c) { return dY0[r * O + c]; }, amax(dY0));
        const auto xc = mxMatrix(f, N, I, false, [&](auto r, auto c) { return x0[r * I + c]; }, amax(x0));
        matmul(O, I, N, [&](auto o, auto n) { return gc[size_t(n * O + o)]; },
               [&](auto n, auto i) { return xc[size_t(n * I + i)]; }, ref, abs);
        matmul(O, I, N, [&](auto o, auto n) { return double(dY0[n * O + o]); },
               [&](auto n, auto i) { return double(x0[n * I + i]); }, plain, plainAbs);
        check(backwardQuantised, ref, abs, plain, plainAbs, w->grad, N, "MX weight gradient");
        // dX sums over O: dY along its rows, W down its columns.
        const auto gr = mxMatrix(fg, N, O, true, [&](auto r, auto c) { return dY0[r * O + c]; }, amax(dY0));
        const auto wc = mxMatrix(f, O, I, false, [&](auto r, auto c) { return w->value[r * I + c]; }, amax(w->value));
        matmul(N, I, O, [&](auto n, auto o) { return gr[size_t(n * O + o)]; },
               [&](auto o, auto i) { return wc[size_t(o * I + i)]; }, ref, abs);
        matmul(N, I, O, [&](auto n, auto o) { return double(dY0[n * O + o]); },
               [&](auto o, auto i) { return double(w->value[o * I + i]); }, plain, plainAbs);
        check(backwardQuantised, ref, abs, plain, plainAbs, *dX, O, "MX input gradient");
        QCOMPARE(h.telemetry.taps().count(TapKey{"fc", TensorKind::quantizedActivationGrad}),
                 std::size_t(backwardQuantised));
    }

    void convForward_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::newRow("fp8-current") << "fp8-current";
        QTest::newRow("mxfp8") << "mxfp8";
        QTest::newRow("nvfp4") << "nvfp4";
    }
    void convForward()
    {
        // Direct convolution in double from the quantised operands: per tensor, the input and
        // the weights; MX, each output pixel's patch (in im2col's order c, ky, kx) and each
        // filter in blocks of 32 along the patch.
        QFETCH(QString, preset);
        Harness h(preset.toStdString());
        const bool mx = h.recipe.quantization.blockScaled();
        const MiniFormat f = h.recipe.quantization.forwardFormat();
        const std::int64_t C = 5, Co = 3, N = 2, H = 6, W = 5;
        const int k = 3;
        const std::int64_t K = C * k * k;   // 45: a block of 32 and one of 13
        Conv2d conv("conv", C, Co, k);
        Rng rng{9};
        Parameter* w = conv.parameters()[0];
        fillBf16(w->value, rng, -0.5f, 0.5f);
        conv.parameters()[1]->value.fill(0.0f);
        Tensor x({C, N, H, W});
        for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(Format::bf16, std::ldexp(rng.uniform(0.5f, 1.0f), int(i % 7) - 3));
        Tensor y = conv.forward(x, h.ctx);
        y.unpack();   // held packed in bf16 around FP8 codes (the CPU's default)

        auto xAt = [&](std::int64_t c, std::int64_t n, std::int64_t yy, std::int64_t xx) -> float {
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0.0f;
            return x[((c * N + n) * H + yy) * W + xx];
        };
        std::vector<double> xq, wq;
        if (!mx) {
            const float sx = 448.0f / amaxOfTensor(x), sw = 448.0f / amaxOfTensor(w->value);
            xq = perTensor(MiniFormat::e4m3, x, sx);
            wq = perTensor(MiniFormat::e4m3, w->value, sw);
        } else {
            wq = mxMatrix(f, Co, K, true, [&](auto r, auto c) { return w->value[r * K + c]; },
                          h.blockAmax(w->value));
        }
        std::vector<double> ref, abs, plain;
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t yy = 0; yy < H; ++yy)
                for (std::int64_t xx = 0; xx < W; ++xx) {
                    std::vector<float> patch;
                    for (std::int64_t c = 0; c < C; ++c)
                        for (int ky = 0; ky < k; ++ky)
                            for (int kx = 0; kx < k; ++kx) patch.push_back(xAt(c, n, yy + ky - 1, xx + kx - 1));
                    std::vector<double> pq(patch.size());
                    if (mx) {
                        // NVFP4: the lowered input's tensor scale is the input's (padding adds zeros).
                        const auto q = mxMatrix(f, 1, K, true, [&](auto, auto c) { return patch[size_t(c)]; },
                                                h.blockAmax(x));
                        pq = q;
                    } else {
                        for (std::int64_t c = 0, i = 0; c < C; ++c)
                            for (int ky = 0; ky < k; ++ky)
                                for (int kx = 0; kx < k; ++kx, ++i) {
                                    const std::int64_t sy = yy + ky - 1, sx = xx + kx - 1;
                                    pq[size_t(i)] = (sy < 0 || sy >= H || sx < 0 || sx >= W)
                                                        ? 0.0 : xq[size_t(((c * N + n) * H + sy) * W + sx)];
                                }
                    }
                    for (std::int64_t o = 0; o < Co; ++o) {
                        double s = 0, a = 0, p = 0;
                        for (std::int64_t i = 0; i < K; ++i) {
                            s += pq[size_t(i)] * wq[size_t(o * K + i)];
                            a += std::fabs(pq[size_t(i)] * wq[size_t(o * K + i)]);
                            p += double(patch[size_t(i)]) * w->value[o * K + i];
                        }
                        ref.resize(size_t(Co * N * H * W));
                        abs.resize(ref.size());
                        plain.resize(ref.size());
                        const std::size_t at = size_t(((o * N + n) * H + yy) * W + xx);
                        ref[at] = s;
                        abs[at] = a;
                        plain[at] = p;
                    }
                }
        compareResults(ref, abs, plain, y, K, true, "conv output");
    }

    void convBackward_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::newRow("mxfp8") << "mxfp8";
        QTest::newRow("nvfp4") << "nvfp4";
    }
    void convBackward()
    {
        // The gradients of a block-scaled convolution in double from operands quantised here:
        // the filter gradient sums over pixels (the output gradient and the lowered input in
        // blocks along the pixels, which the layer lowers and quantises in one pass), the
        // input gradient over output channels (the weights and the output gradient in blocks
        // down their columns), folded back to the input as col2im does.
        QFETCH(QString, preset);
        Harness h(preset.toStdString());
        const auto amax = [&h](const Tensor& t) { return h.blockAmax(t); };
        const MiniFormat f = h.recipe.quantization.forwardFormat();
        const MiniFormat fg = h.recipe.quantization.gradientFormat();
        const std::int64_t C = 5, Co = 3, N = 2, H = 6, W = 5, hw = H * W, P = N * hw;
        const int k = 3;
        const std::int64_t K = C * k * k;
        Conv2d conv("conv", C, Co, k);
        Rng rng{13};
        Parameter* w = conv.parameters()[0];
        fillBf16(w->value, rng, -0.5f, 0.5f);
        conv.parameters()[1]->value.fill(0.0f);
        Tensor x({C, N, H, W});
        for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(Format::bf16, std::ldexp(rng.uniform(0.5f, 1.0f), int(i % 7) - 3));
        conv.forward(x, h.ctx);
        Tensor dY({Co, N, H, W});
        for (std::int64_t i = 0; i < dY.size(); ++i)
            dY[i] = roundTo(Format::bf16, (i % 2 ? -1.0f : 1.0f) * std::ldexp(rng.uniform(0.5f, 1.0f), int(i % 5) - 8));
        const Tensor dY0 = dY;
        const Tensor* packedDX = conv.backward(dY, h.ctx, true);
        QVERIFY(packedDX);
        Tensor dXValues = *packedDX;
        dXValues.unpack();   // held packed in bf16 around quantised operands (the CPU's default)
        const Tensor* dX = &dXValues;

        // cols (K, P): row c*9 + ky*3 + kx, column n*hw + y*W + x, zero outside the input.
        auto col = [&](std::int64_t row, std::int64_t pixel) -> float {
            const std::int64_t c = row / 9, ky = row % 9 / 3, kx = row % 3;
            const std::int64_t n = pixel / hw, yy = pixel % hw / W + ky - 1, xx = pixel % W + kx - 1;
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0.0f;
            return x[((c * N + n) * H + yy) * W + xx];
        };
        const auto gr = mxMatrix(fg, Co, P, true, [&](auto o, auto p) { return dY0[o * P + p]; }, amax(dY0));
        const auto cr = mxMatrix(f, K, P, true, col, amax(x));
        std::vector<double> ref, abs, plain, plainAbs;
        matmul(Co, K, P, [&](auto o, auto p) { return gr[size_t(o * P + p)]; },
               [&](auto p, auto r) { return cr[size_t(r * P + p)]; }, ref, abs);
        matmul(Co, K, P, [&](auto o, auto p) { return double(dY0[o * P + p]); },
               [&](auto p, auto r) { return double(col(r, p)); }, plain, plainAbs);
        compareResults(ref, abs, plain, w->grad, P, true, "filter gradient");
        QVERIFY(h.tap("conv", TensorKind::quantizedActivation).scaling.blocks);

        // dcols (K, P) = Wq^T dYq over Co, then each input value sums the entries it was copied to.
        const auto wc = mxMatrix(f, Co, K, false, [&](auto o, auto r) { return w->value[o * K + r]; }, amax(w->value));
        const auto gc = mxMatrix(fg, Co, P, false, [&](auto o, auto p) { return dY0[o * P + p]; }, amax(dY0));
        std::vector<double> dcols, dcolsAbs, dcolsPlain, dcolsPlainAbs;
        matmul(K, P, Co, [&](auto r, auto o) { return wc[size_t(o * K + r)]; },
               [&](auto o, auto p) { return gc[size_t(o * P + p)]; }, dcols, dcolsAbs);
        matmul(K, P, Co, [&](auto r, auto o) { return double(w->value[o * K + r]); },
               [&](auto o, auto p) { return double(dY0[o * P + p]); }, dcolsPlain, dcolsPlainAbs);
        std::vector<double> dx(size_t(x.size())), dxAbs(dx.size()), dxPlain(dx.size());
        for (std::int64_t r = 0; r < K; ++r)
            for (std::int64_t p = 0; p < P; ++p) {
                const std::int64_t c = r / 9, ky = r % 9 / 3, kx = r % 3;
                const std::int64_t n = p / hw, yy = p % hw / W + ky - 1, xx = p % W + kx - 1;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                const std::size_t at = size_t(((c * N + n) * H + yy) * W + xx);
                dx[at] += dcols[size_t(r * P + p)];
                dxAbs[at] += dcolsAbs[size_t(r * P + p)];
                dxPlain[at] += dcolsPlain[size_t(r * P + p)];
            }
        // The fp32 sums of Co terms, then up to 9 more in col2im's fold: n = Co + 9 covers both.
        compareResults(dx, dxAbs, dxPlain, *dX, Co + 9, true, "input gradient");
    }

    void loweringInBlocksEqualsTwoPasses()
    {
        // The backend's im2col + quantisation in one pass against im2col then quantize: the
        // same values and the same counts, block scales and histograms (whose steps take the
        // portable path; the others the vector kernels where the CPU has them).
        auto backend = createCpuBackend(2);
        ConvGeometry g;
        g.channels = 5;   // patch of 45: MX bands of 32 and 13, NVFP4 16, 16 and 13
        g.batch = 4;
        g.height = 6;
        g.width = 5;      // 30 pixels a sample: blocks along rows cross the samples
        Rng rng{21};
        std::vector<float> x(static_cast<std::size_t>(g.channels * g.batch * g.planeSize()));
        for (auto& v : x) v = (rng.uniform(0.0f, 1.0f) < 0.5f ? -1.0f : 1.0f) * std::ldexp(rng.uniform(0.5f, 1.0f), int(rng.uniform(-30.0f, 10.0f)));
        x[40] = std::numeric_limits<float>::quiet_NaN();   // channel 0 of sample 1, inside the range lowered
        const std::int64_t n0 = 1, count = 3, K = g.patchSize(), columns = count * g.planeSize();
        struct Case {
            MiniFormat element;
            BlockScaling scaling;
        };
        for (const Case& c : {Case{MiniFormat::e4m3, BlockScaling::mx}, Case{MiniFormat::e2m1, BlockScaling::mx},
                              Case{MiniFormat::e2m1, BlockScaling::nvfp4}})
            for (bool alongRows : {true, false})
                for (bool withHist : {false, true}) {
                    QuantizeOp op;
                    op.element = c.element;
                    op.blocks = true;
                    op.blockScaling = c.scaling;
                    op.tensorAmax = 3.0f;
                    op.rows = K;
                    op.cols = op.ld = columns;
                    op.alongRows = alongRows;
                    std::vector<float> fused(static_cast<std::size_t>(K * columns), -7.0f), twoPass(fused);
                    RoundingStats s1, s2;
                    GradientHistogram h1, h2, b1, b2;
                    QVERIFY(backend->im2colQuantize(g, x.data(), n0, count, fused.data(), op, &s1,
                                                    withHist ? &h1 : nullptr, &b1));
                    backend->im2col(g, x.data(), n0, count, twoPass.data());
                    backend->quantize(op, twoPass.data(), twoPass.data(), K * columns, &s2, withHist ? &h2 : nullptr, &b2);
                    const QString what = QString("element %1, %2, %3, %4").arg(int(c.element))
                                             .arg(c.scaling == BlockScaling::nvfp4 ? "nvfp4" : "mx")
                                             .arg(alongRows ? "rows" : "columns").arg(withHist ? "histogram" : "no histogram");
                    QVERIFY2(std::memcmp(fused.data(), twoPass.data(), fused.size() * sizeof(float)) == 0, qPrintable(what));
                    QVERIFY2(s1 == s2 && h1 == h2 && b1 == b2, qPrintable(what));
                    QVERIFY2(s1.count == std::uint64_t(K * columns) && s1.nan > 0 && b1.total() > 0, qPrintable(what));
                }
        // A matrix that is not the lowering's is refused.
        QuantizeOp wrong;
        wrong.blocks = true;
        wrong.rows = 45;
        wrong.cols = 10;
        std::vector<float> cols(450);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 backend->im2colQuantize(g, x.data(), 0, 1, cols.data(), wrong, nullptr, nullptr, nullptr));
    }

    // FP8 copies held as codes (the CPU's default, which the references above check) give
    // the layers' results, and their taps' counts, bit for bit as held as values
    // (PLAB_PACKED_STORAGE=off): two training steps (the second with the delayed scale from
    // the first's amaxes), the layers sharing a step's work buffers, of a convolution whose
    // filter gradient, in small blocks, decodes dY span by span where OpenBLAS cuts the sum
    // (1 -> 16 channels, 40 samples of 28 x 28; the test does not see which way it went),
    // one whose backward passes run over two blocks of the lowering (64 -> 16 channels, 80
    // samples), a small one, and a Linear layer; with bf16 activations (packed around the
    // codes) and with fp32 ones (compute fp32 under FP8: codes, nothing packed). MX and
    // NVFP4 likewise: quantised a block of the lowering at a time (mxInBlocks), the
    // activations packed around them, against a whole copy of each operand in the layer.
    void codesGiveTheValuesBits_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<bool>("fp32Storage");
        // Blocks of the default size (dY decoded whole for both passes), and small ones (dY
        // decoded span by span, and block by block for the input gradient).
        QTest::addColumn<qint64>("blockValues");
        for (const qint64 block : {qint64(packedBlockValues()), qint64(1) << 15})
            for (const bool fp32Storage : {false, true}) {
                const char* storage = fp32Storage ? "fp32" : "bf16";
                QTest::addRow("fp8-delayed, %s, blocks of %lld", storage, block) << "fp8-delayed" << fp32Storage << block;
                QTest::addRow("fp8-current, %s, blocks of %lld", storage, block) << "fp8-current" << fp32Storage << block;
                // MX and NVFP4 quantised block by block of the lowering (mxInBlocks) against
                // whole copies in each layer.
                for (const char* mx : {"mxfp8", "mxfp4", "nvfp4", "mxfp6"})
                    QTest::addRow("%s, %s, blocks of %lld", mx, storage, block) << mx << fp32Storage << block;
            }
    }
    void codesGiveTheValuesBits()
    {
        QFETCH(QString, preset);
        QFETCH(bool, fp32Storage);
        QFETCH(qint64, blockValues);
        const std::int64_t defaultBlock = packedBlockValues();
        setPackedBlockValues(blockValues);
        const auto restore = qScopeGuard([&] { setPackedBlockValues(defaultBlock); });
        struct Shape4 {
            std::int64_t C, Co, N, H, W;
        };
        auto same = [](Tensor a, Tensor b) {   // copies: held packed or not, compared as values
            a.unpack();
            b.unpack();
            if (a.shape() != b.shape()) return false;
            for (std::int64_t i = 0; i < a.size(); ++i)
                if (bitsOf(a[i]) != bitsOf(b[i])) return false;
            return true;
        };
        const Format storage = fp32Storage ? Format::fp32 : Format::bf16;
        // Two training steps of `layer` on inputs of `shape`, held as values and as codes:
        // outputs, input gradients, parameter gradients and each tap's counts compared.
        // Held as codes, a bf16 input and gradient arrive packed, as the layers around hold
        // them (quantised from their patterns, dY summed from them).
        auto compare = [&](const std::function<std::unique_ptr<Layer>()>& makeLayer, const Shape& shape,
                           const QString& what) {
            std::vector<Tensor> results[2];
            std::vector<std::pair<std::string, RoundingStats>> taps[2];
            for (const bool codes : {false, true}) {
                const ScopedPackedStorage held(codes);
                Harness h(preset.toStdString());
                if (fp32Storage) h.recipe.compute = Format::fp32;
                std::array<Tensor, 2> work;
                h.ctx.work = &work;
                const std::unique_ptr<Layer> layer = makeLayer();
                Rng rng{21};
                for (Parameter* param : layer->parameters()) fillBf16(param->value, rng, -0.5f, 0.5f);
                const bool packs = codes && !fp32Storage && shape.size() == 4;   // a convolution's
                for (int step = 0; step < 2; ++step) {
                    Tensor x(shape, storage);
                    fillBf16(x, rng, -1.0f, 1.0f);
                    if (packs) x.pack();
                    const Tensor& y = layer->forward(x, h.ctx);
                    QCOMPARE(y.packed(), packs);
                    Tensor dY(y.shape(), storage);
                    fillBf16(dY, rng, -1e-3f, 1e-3f);
                    if (packs) dY.pack();
                    results[codes].push_back(y);
                    results[codes].push_back(*layer->backward(dY, h.ctx, true));
                    for (Parameter* param : layer->parameters()) results[codes].push_back(param->grad);
                }
                for (const auto& [key, tap] : h.telemetry.taps())
                    taps[codes].emplace_back(key.layer + "/" + std::to_string(int(key.kind)), tap.step);
            }
            QCOMPARE(results[0].size(), results[1].size());
            for (std::size_t i = 0; i < results[0].size(); ++i)
                QVERIFY2(same(results[0][i], results[1][i]), qPrintable(what + QString(", result %1").arg(i)));
            QVERIFY2(taps[0] == taps[1], qPrintable(what + ": the taps' counts"));
        };
        std::vector<Shape4> shapes = {Shape4{1, 16, 40, 28, 28}, Shape4{5, 6, 3, 6, 5}};
        if (blockValues == defaultBlock) shapes.push_back(Shape4{64, 16, 80, 28, 28});
        for (const Shape4 s : shapes) {
            compare([&] { return std::make_unique<Conv2d>("conv", s.C, s.Co, 3); }, {s.C, s.N, s.H, s.W},
                    QString("conv %1 -> %2 channels").arg(s.C).arg(s.Co));
            if (QTest::currentTestFailed()) return;
        }
        compare([] { return std::make_unique<Linear>("fc", 70, 6); }, {40, 70}, "linear");
    }

    void memoryCountsQuantisedCopies_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<bool>("held");   // tensors held in their format's bytes (PLAB_PACKED_STORAGE)
        // bytes of a 40 x 70 input and a 6 x 70 weight, stored as the hardware stores them
        QTest::addColumn<qint64>("expected");
        // FP8 per tensor on the CPU: the codes, a byte a value (Fp8Codes; their fp32 scales are
        // the layer's own few bytes), and, decoded for the GEMM, both operands in fp32 in the
        // layer's own work buffers (the step here has none to share).
        QTest::newRow("fp8-current") << "fp8-current" << true << qint64(2800 + 420 + 4 * (2800 + 420));
        // Held as fp32 values (as a device holds them): counted as the codes with a scale each.
        QTest::newRow("fp8-current, values") << "fp8-current" << false << qint64(2800 + 4 + 420 + 4);
        // MX and NVFP4 on the CPU (mxInBlocks): no whole quantised copy is kept; what the GEMM
        // reads is fp32 and counted so: the input's values in the layer's own work buffer, the
        // weights' in the layer's copy.
        for (const char* preset : {"mxfp8", "mxfp4", "nvfp4", "mxfp6"})
            QTest::addRow("%s", preset) << preset << true << qint64(4 * 2800 + 4 * 420);
        // Held as a device holds them: counted as the format stores them.
        // MXFP8: a byte a value and an E8M0 byte per 32 values (2800 / 32 -> 88, 420 / 32 -> 14).
        QTest::newRow("mxfp8, values") << "mxfp8" << false << qint64(2800 + 88 + 420 + 14);
        // MXFP4: half a byte a value.
        QTest::newRow("mxfp4, values") << "mxfp4" << false << qint64(1400 + 88 + 210 + 14);
        // MXFP6: three quarters of a byte a value (2100, 315), an E8M0 byte per 32.
        QTest::newRow("mxfp6, values") << "mxfp6" << false << qint64(2100 + 88 + 315 + 14);
        // NVFP4: half a byte a value, an E4M3 byte per 16 (175, 27), an fp32 tensor scale each.
        QTest::newRow("nvfp4, values") << "nvfp4" << false << qint64(1400 + 175 + 4 + 210 + 27 + 4);
    }
    void memoryCountsQuantisedCopies()
    {
        // The memory chart counts a quantised operand as the hardware would store it: FP8's
        // codes are held so on the CPU; MX and NVFP4 ones are fp32 there, as counted.
        QFETCH(QString, preset);
        QFETCH(bool, held);
        QFETCH(qint64, expected);
        const ScopedPackedStorage packing(held);
        Harness h(preset.toStdString());
        MemoryAccountant memory;
        h.ctx.memory = &memory;
        Linear layer("fc", 70, 6);
        Tensor x({40, 70});
        x.fill(0.5f);
        layer.forward(x, h.ctx);
        const auto workspace = memory.snapshot().live[static_cast<std::size_t>(MemoryCategory::workspace)];
        QCOMPARE(workspace, std::int64_t(expected));
        // setStorage ends the model: the same tensor in bf16 counts 2 bytes a value.
        Tensor t({10, 10});
        t.setQuantizedStorage({4, 16, 4});
        QCOMPARE(t.bytes(), std::int64_t(50 + 7 + 4));
        t.setStorage(Format::bf16);
        QCOMPARE(t.bytes(), std::int64_t(200));
    }

    void presetsAndSettings()
    {
        const auto names = PrecisionRecipe::lowPrecisionPresetNames();
        QCOMPARE(names, (std::vector<std::string>{"fp8-unscaled", "fp8-delayed", "fp8-current", "mxfp8", "mxfp4",
                                                  "nvfp4", "mxfp6"}));
        // MXFP6 (OCP MX): E2M3 forward, E3M2 gradients, blocks of 32 with an E8M0 scale.
        const auto mx6 = *PrecisionRecipe::fromPreset("mxfp6");
        QCOMPARE(mx6.quantization.forwardFormat(), MiniFormat::e2m3);
        QCOMPARE(mx6.quantization.gradientFormat(), MiniFormat::e3m2);
        QCOMPARE(mx6.quantization.describe(),
                 std::string("MXFP6 (fp6-e2m3 forward, fp6-e3m2 gradients, blocks of 32 with an E8M0 scale)"));
        const auto delayed = *PrecisionRecipe::fromPreset("fp8-delayed");
        QCOMPARE(delayed.quantization.mode, QuantMode::fp8Delayed);
        QVERIFY(delayed.quantization.hybrid);
        QCOMPARE(delayed.quantization.amaxHistory, 1024);   // Transformer Engine's DelayedScaling defaults
        QCOMPARE(delayed.quantization.algorithm, AmaxAlgorithm::max);
        QCOMPARE(delayed.quantization.margin, 0);
        QCOMPARE(delayed.compute, Format::bf16);
        QVERIFY(delayed.masterWeights && delayed.fp32Accumulate && delayed.fp32SensitiveOps);
        QCOMPARE(PrecisionRecipe::fromPreset("mxfp8")->quantization.gradientFormat(), MiniFormat::e4m3);
        QCOMPARE(PrecisionRecipe::fromPreset("mxfp4")->quantization.gradientFormat(), MiniFormat::e2m1);
        const auto nv = *PrecisionRecipe::fromPreset("nvfp4");
        QCOMPARE(nv.quantization.mode, QuantMode::nvfp4);
        QVERIFY(nv.quantization.blockScaled() && !nv.quantization.fp8Elements());
        QCOMPARE(nv.quantization.forwardFormat(), MiniFormat::e2m1);
        QCOMPARE(nv.quantization.gradientFormat(), MiniFormat::e2m1);
        QCOMPARE(nv.quantization.describe(),
                 std::string("NVFP4 (fp4-e2m1 elements, blocks of 16 with an E4M3 scale, an fp32 scale per tensor)"));
        QCOMPARE(PrecisionRecipe::fromPreset("fp8-delayed")->quantization.gradientFormat(), MiniFormat::e5m2);
        QVERIFY(QString::fromStdString(delayed.describe()).contains("amax history 1024 max"));
        QVERIFY(QString::fromStdString(delayed.describe()).startsWith("FP8 delayed scaling: bf16 outputs"));

        const auto s = settingsFromJson({{"recipe", "fp8-delayed"}, {"fp8_format", "e4m3"}, {"amax_history", 16},
                                         {"amax_algorithm", "most_recent"}, {"fp8_margin", -2}},
                                        "test");
        QVERIFY(!s.recipe.quantization.hybrid);
        QCOMPARE(s.recipe.quantization.amaxHistory, 16);
        QCOMPARE(s.recipe.quantization.algorithm, AmaxAlgorithm::mostRecent);
        QCOMPARE(s.recipe.quantization.margin, -2);
        const auto back = settingsFromJson(settingsToJson(s), "round trip");
        QVERIFY(back.recipe == s.recipe);
        QCOMPARE(std::string(miniFormatInfo(s.recipe.quantization.gradientFormat()).name), std::string("e4m3"));

        // Impossible values: one sentence naming the key.
        for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
                 {"quantize", "fp7"}, {"fp8_format", "e5m2"}, {"amax_history", 0}, {"amax_algorithm", "mean"},
                 {"fp8_margin", 40}}) {
            try {
                settingsFromJson({{key, value}}, "test");
                QFAIL(qPrintable(QString::fromStdString(key + " accepted")));
            } catch (const std::exception& e) {
                QVERIFY2(QString(e.what()).contains(QString::fromStdString(key)), e.what());
            }
        }
    }

    void backendWithoutQuantisationRefuses()
    {
        BackendInfo info;
        info.name = "cuda";
        info.capabilities.compute = {Format::fp32, Format::tf32, Format::fp16, Format::bf16};
        const auto fp8 = *PrecisionRecipe::fromPreset("fp8-delayed");
        QVERIFY(QString::fromStdString(recipeProblem(fp8, info)).contains("cannot quantise"));
        QVERIFY(recipeProblem(*PrecisionRecipe::fromPreset("amp-bf16"), info).empty());
        info.capabilities.quantizes = true;
        QVERIFY(recipeProblem(fp8, info).empty());
        // Per tensor but not in blocks (the CUDA backend below compute capability 10.0).
        info.capabilities.blocksLimitation = "block-scaled GEMMs need compute capability 10.0";
        for (const char* preset : {"mxfp8", "mxfp4", "nvfp4", "mxfp6"}) {
            const QString problem = QString::fromStdString(recipeProblem(*PrecisionRecipe::fromPreset(preset), info));
            QVERIFY2(problem.contains("cannot quantise in blocks") && problem.contains("compute capability 10.0") &&
                         problem.contains(preset),
                     qPrintable(problem));
        }
        info.capabilities.quantizesBlocks = true;
        QVERIFY(recipeProblem(*PrecisionRecipe::fromPreset("mxfp8"), info).empty());
    }
};

QTEST_APPLESS_MAIN(TestFp8Layers)
#include "tst_fp8_layers.moc"
