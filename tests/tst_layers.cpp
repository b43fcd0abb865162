// Over 500 lines: every layer's forward and backward against double precision, one suite so the references are shared.
// Tests the layers (Conv2d, MaxPool2d, ReLU, Flatten, Linear, softmax cross-entropy): references in double, finite-difference gradient checks, and the rounding sites of reduced-precision recipes.
// links: plab_nn plab_backend_cpu plab_test_support
#include "amp/recipe.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/native_gemm.h"
#include "backend/cpu/packed_ops.h"
#include "backend/cpu/thread_pool.h"
#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/layer_ops.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/parameter_copies.h"
#include "nn/pool.h"
#include "numerics/format.h"
#include "numerics/simd_level.h"
#include "numerics/storage_convert.h"

#include "checking_backend.h"
#include "gradient_check.h"
#include "test_support.h"

#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace plab;
using plab::testing::blasSumsCutsAlike;
using plab::testing::CheckingBackend;
using plab::testing::checkGradient;
using plab::testing::weightedSum;
using plab::testing::ConvolutionLibrary;

Q_DECLARE_METATYPE(plab::testing::ConvolutionLibrary)

namespace {

using Rng = plab::testing::SplitMix64;

void fill(Tensor& t, Rng& rng, float lo = -1.0f, float hi = 1.0f)
{
    for (std::int64_t i = 0; i < t.size(); ++i) t[i] = rng.uniform(lo, hi);
}

// Holds what a layer step needs: a backend, a recipe, telemetry.
struct Harness {
    std::unique_ptr<ComputeBackend> backend;
    PrecisionRecipe recipe;
    TelemetryCollector telemetry;
    StepContext ctx;
    explicit Harness(const std::string& preset = "fp32", Arithmetic arithmetic = Arithmetic::exact)
        : backend(createCpuBackend(2, arithmetic))
    {
        recipe = *PrecisionRecipe::fromPreset(preset);
        ctx = StepContext{&recipe, backend.get(), &telemetry, nullptr, true};
        telemetry.beginStep(true);
    }
};

// max |a - b| over max |a|: 0 for the same values.
double relativeDifference(const std::vector<float>& a, const std::vector<float>& b)
{
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
    }
    return scale > 0 ? diff / scale : diff;
}

bool representable(Format f, const Tensor& t)
{
    for (const float v : t.toHost())   // packed or not
        if (bitsOf(roundTo(f, v)) != bitsOf(v)) return false;
    return true;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// held: the layers' outputs and gradients with fp32-held tensors; packed: with packed
// tensors, cut into blocks. packed must have held's bits on every CPU: where the CPU's BLAS
// sums a product cut into blocks in another order (OpenBLAS's Haswell and Zen kernels), the
// packed layers compute the unpacked layers' products in the backend's own pieces.
void checkPackedAgainstReference(const std::vector<std::vector<float>>& held,
                                 const std::vector<std::vector<float>>& packed)
{
    QCOMPARE(packed.size(), held.size());
    if (!blasSumsCutsAlike()) qInfo("this CPU's BLAS sums a cut product in another order: the backend's pieces");
    for (std::size_t i = 0; i < held.size(); ++i)
        QVERIFY2(sameBits(packed[i], held[i]), qPrintable(QString("output %1: not the same bits (differs by %2)")
                                                              .arg(i)
                                                              .arg(packed[i].size() == held[i].size()
                                                                       ? relativeDifference(held[i], packed[i])
                                                                       : -1.0)));
}

bool sameTaps(const std::map<TapKey, TapData>& a, const std::map<TapKey, TapData>& b)
{
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
        if (!(i->first == j->first) || !(i->second.step == j->second.step) || !(i->second.run == j->second.run) ||
            !(i->second.histogram == j->second.histogram))
            return false;
    return true;
}

// What one Conv2d step (forward, then backward with dX) computed, as host values, and
// its taps after the backend's flush().
struct ConvStep {
    std::vector<float> y, dx, dw, db;
    bool outputPacked = false, gradPacked = false;
    std::map<TapKey, TapData> taps;
};

// A "conv2" layer (cin -> 2 channels) of a model under `preset` on `backend`: the same
// weights, input and output gradient for every backend (seeded), in the recipe's formats
// and placed where the backend keeps its tensors, as a model's applyRecipe does.
// packInputs: the input and dY held packed (a packing layer's step, packing on).
ConvStep convStep(ComputeBackend& backend, const std::string& preset, int cin, int batch, int side,
                  bool packInputs = false)
{
    const PrecisionRecipe recipe = *PrecisionRecipe::fromPreset(preset);
    const Format storage = recipe.storage();
    TelemetryCollector telemetry;
    telemetry.beginStep(true);
    StepContext ctx{&recipe, &backend, &telemetry, nullptr, true};
    Rng rng{41};
    Conv2d conv("conv2", cin, 2);
    fill(conv.weight().value, rng);
    fill(conv.bias().value, rng);
    for (Parameter* p : conv.parameters()) alignParameterWithRecipe(*p, recipe, nullptr, backend);
    Tensor x({cin, batch, side, side}), dy({2, batch, side, side});
    for (Tensor* t : {&x, &dy}) {
        for (std::int64_t i = 0; i < t->size(); ++i) (*t)[i] = roundTo(storage, rng.uniform(-1.0f, 1.0f));
        t->setStorage(storage);
        if (packInputs) t->pack();
        t->place(backend.allocator());
    }
    ConvStep step;
    const Tensor& y = conv.forward(x, ctx);
    step.y = y.toHost();
    step.outputPacked = y.packed();
    const Tensor* dx = conv.backward(dy, ctx, true);
    step.dx = dx->toHost();
    step.gradPacked = dx->packed();
    step.dw = conv.weight().grad.toHost();
    step.db = conv.bias().grad.toHost();
    backend.flush();
    step.taps = telemetry.taps();
    return step;
}

}  // namespace

class TestLayers : public QObject {
    Q_OBJECT

private slots:
    void convForwardMatchesDirectConvolution_data()
    {
        QTest::addColumn<int>("cin");
        QTest::addColumn<int>("cout");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("height");
        QTest::addColumn<int>("width");
        QTest::addRow("1 -> 3, 2 images 5x5") << 1 << 3 << 2 << 5 << 5;
        QTest::addRow("3 -> 4, 3 images 6x7") << 3 << 4 << 3 << 6 << 7;
        QTest::addRow("2 -> 2, 1 image 1x1") << 2 << 2 << 1 << 1 << 1;
        QTest::addRow("5 -> 8, 4 images 28x28") << 5 << 8 << 4 << 28 << 28;
    }

    void convForwardMatchesDirectConvolution()
    {
        QFETCH(int, cin);
        QFETCH(int, cout);
        QFETCH(int, batch);
        QFETCH(int, height);
        QFETCH(int, width);
        Harness h;
        Rng rng{42};
        Conv2d conv("conv1", cin, cout);
        fill(conv.weight().value, rng);
        fill(conv.bias().value, rng);
        Tensor x({cin, batch, height, width});   // (C, N, H, W)
        fill(x, rng);
        const Tensor& y = conv.forward(x, h.ctx);
        QCOMPARE(y.shape(), (Shape{cout, batch, height, width}));
        double errNorm = 0, refNorm = 0;
        for (int co = 0; co < cout; ++co)
            for (int n = 0; n < batch; ++n)
                for (int oy = 0; oy < height; ++oy)
                    for (int ox = 0; ox < width; ++ox) {
                        double ref = conv.bias().value[co];
                        for (int ci = 0; ci < cin; ++ci)
                            for (int ky = 0; ky < 3; ++ky)
                                for (int kx = 0; kx < 3; ++kx) {
                                    const int iy = oy + ky - 1, ix = ox + kx - 1;
                                    if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
                                    ref += static_cast<double>(conv.weight().value[((co * cin + ci) * 3 + ky) * 3 + kx]) *
                                           x[((ci * batch + n) * height + iy) * width + ix];
                                }
                        const double got = y[((co * batch + n) * height + oy) * width + ox];
                        errNorm += (got - ref) * (got - ref);
                        refNorm += ref * ref;
                    }
        QVERIFY(std::sqrt(errNorm) <= 1e-6 * std::sqrt(refNorm));
    }

    void convGradients_data()
    {
        QTest::addColumn<int>("cin");
        QTest::addColumn<int>("cout");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("side");
        QTest::addRow("1 -> 2, 2 images 4x4") << 1 << 2 << 2 << 4;
        QTest::addRow("3 -> 2, 2 images 5x5") << 3 << 2 << 2 << 5;
    }

    // Conv is linear in x and in w, so central differences are exact up to fp32 rounding.
    void convGradients()
    {
        QFETCH(int, cin);
        QFETCH(int, cout);
        QFETCH(int, batch);
        QFETCH(int, side);
        Harness h;
        Rng rng{7};
        Conv2d conv("conv2", cin, cout);
        fill(conv.weight().value, rng);
        fill(conv.bias().value, rng);
        Tensor x({cin, batch, side, side});
        fill(x, rng);
        Tensor r({cout, batch, side, side});
        fill(r, rng);
        conv.forward(x, h.ctx);
        Tensor dy = r;
        const Tensor dx = *conv.backward(dy, h.ctx, true);
        const Tensor dw = conv.weight().grad, db = conv.bias().grad;
        auto loss = [&] { return weightedSum(conv.forward(x, h.ctx), r); };
        checkGradient(x, dx, loss, 1e-2f, 1e-4, "dx");
        checkGradient(conv.weight().value, dw, loss, 1e-2f, 1e-4, "dw");
        checkGradient(conv.bias().value, db, loss, 1e-2f, 1e-4, "db");
    }

    void convLowersBackwardPassesTheLibraryRefuses_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<ConvolutionLibrary>("library");
        QTest::addColumn<int>("cin");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("side");
        QTest::addColumn<bool>("blocks");   // the lowering's columns hold blocks of samples, not the batch
        const std::pair<ConvolutionLibrary, const char*> refusals[] = {
            {ConvolutionLibrary::refuseBackward, "refuses backward"},
            {ConvolutionLibrary::refuseBackwardFilter, "refuses backward filter"},
            {ConvolutionLibrary::refuseBackwardData, "refuses backward data"}};
        for (const char* r : {"fp32", "tf32", "amp-fp16", "pure-bf16"})
            for (const auto& [library, what] : refusals)
                QTest::addRow("%s, library %s, 3 -> 2, 2 images 5x5", r, what) << r << library << 3 << 2 << 5 << false;
        // 4 * 9 * 600 * 600 column values per sample: the budget holds 2 of the 3 samples.
        // (Not backward data alone: the library's whole-batch dW sums in another order
        // than a lowering in blocks.)
        QTest::addRow("fp32, library refuses backward, 4 -> 2, 3 images 600x600 in blocks")
            << "fp32" << ConvolutionLibrary::refuseBackward << 4 << 3 << 600 << true;
    }

    // Regression: a backward pass the convolution library refused after its forward pass
    // ran (cuDNN's last algorithm refusing the shape at run time) threw logic_error and
    // ended the run. The layer lowers the refused pass, and the rest of the step's
    // backward, from the input it kept: bit for bit what a layer that lowered the step from
    // the start computes (the checking backend's library forward is the CPU's whole-batch
    // im2col + gemm), the taps included.
    void convLowersBackwardPassesTheLibraryRefuses()
    {
        QFETCH(QString, recipe);
        QFETCH(ConvolutionLibrary, library);
        QFETCH(int, cin);
        QFETCH(int, batch);
        QFETCH(int, side);
        QFETCH(bool, blocks);
        QCOMPARE(std::int64_t{cin} * 9 * side * side * batch > Conv2d::kColsBudget, blocks);
        const std::string preset = recipe.toStdString();

        CheckingBackend checking(library);
        const ConvStep refused = convStep(checking, preset, cin, batch, side);
        for (const auto& v : checking.device().violations()) qWarning("%s", v.c_str());
        QVERIFY(checking.device().violations().empty());
        // Forward (and backward filter, when only data is refused) ran in the library; the
        // refused pass was asked once, and after a refused filter pass dX is lowered unasked.
        QCOMPARE(checking.libraryCalls(), library == ConvolutionLibrary::refuseBackwardData ? 2 : 1);
        QCOMPARE(checking.libraryRefusals(), 1);

        auto cpu = createCpuBackend(2);   // no library: the layer lowers all three passes
        const ConvStep lowered = convStep(*cpu, preset, cin, batch, side);
        QVERIFY(sameBits(refused.y, lowered.y));
        QVERIFY(sameBits(refused.dx, lowered.dx));
        QVERIFY(sameBits(refused.dw, lowered.dw));
        QVERIFY(sameBits(refused.db, lowered.db));
        QVERIFY(sameTaps(refused.taps, lowered.taps));
        QCOMPARE(refused.taps.empty(), preset == "fp32");   // fp32 has no rounding sites
    }

    // Issue 71: a packed convolution whose three passes a 16-bit library runs (the checking
    // backend's model of cuDNN, at a step that allows it) gives the lowered layer's values
    // but for the library's one rounding of each forward and input-gradient sum into bf16:
    // y within a few bf16 roundings of the lowered layer's (the library rounds the sum, the
    // layer the sum plus bias), dx within one, dw (fp32 sums either way) within fp32's; a
    // mis-indexed pass would be off by the values themselves. The output's and the input
    // gradient's sites say a library rounded them; the weight gradient's does not.
    void packedConvolutionOnALibrary16()
    {
        const ScopedPackedStorage on(true);
        CheckingBackend library(ConvolutionLibrary::none);
        library.offerConvolution16();
        library.allowLibraryRounding(true);
        const ConvStep viaLibrary = convStep(library, "amp-bf16", 3, 4, 6, true);
        QCOMPARE(library.convolution16Calls(), 3);
        CheckingBackend lowering(ConvolutionLibrary::none);   // the same products, never the library
        lowering.offerConvolution16();
        const ConvStep lowered = convStep(lowering, "amp-bf16", 3, 4, 6, true);
        QCOMPARE(lowering.convolution16Calls(), 0);
        for (auto* b : {&library, &lowering}) {
            for (const auto& v : b->device().violations()) qWarning("%s", v.c_str());
            QVERIFY(b->device().violations().empty());
        }
        QVERIFY(viaLibrary.outputPacked && viaLibrary.gradPacked);
        const double y = relativeDifference(lowered.y, viaLibrary.y), dx = relativeDifference(lowered.dx, viaLibrary.dx),
                     dw = relativeDifference(lowered.dw, viaLibrary.dw);
        QVERIFY2(y > 0 && y <= std::ldexp(1.0, -6), qPrintable(QString::number(y)));   // the extra rounding shows
        QVERIFY2(dx <= std::ldexp(1.0, -7), qPrintable(QString::number(dx)));
        QVERIFY2(dw <= 1e-5, qPrintable(QString::number(dw)));
        QVERIFY(sameBits(lowered.db, viaLibrary.db));
        for (const auto& [key, tap] : viaLibrary.taps)
            QCOMPARE(tap.libraryStep, key.kind == TensorKind::activation || key.kind == TensorKind::activationGrad);
        for (const auto& [key, tap] : lowered.taps) QVERIFY(!tap.libraryStep);
        QVERIFY(viaLibrary.taps.count({"conv2", TensorKind::activationGrad}) == 1);
    }

    // A packed convolution whose input lowers in several blocks of samples (512 channels:
    // 9 samples of 28 x 28 a block, so batch 20 is 9 + 9 + 2, each block's pieces cutting its
    // samples), and one whose filter gradient's sum is too short for spans (batch 3), give
    // the fp32-held layer's bits and counts.
    void packedConvolutionInLoweringBlocks_data()
    {
        QTest::addColumn<int>("batch");
        QTest::addRow("three lowering blocks") << 20;
        QTest::addRow("short sums") << 3;
    }
    void packedConvolutionInLoweringBlocks()
    {
        QFETCH(int, batch);
        constexpr int cin = 512, side = 28;
        QCOMPARE(Conv2d::kColsBudget / (std::int64_t{cin} * 9 * side * side), std::int64_t{9});
        auto cpu = createCpuBackend(2);
        ConvStep held, packed;
        {
            const ScopedPackedStorage off(false);
            held = convStep(*cpu, "amp-fp16", cin, batch, side);
        }
        {
            const ScopedPackedStorage on(true);
            packed = convStep(*cpu, "amp-fp16", cin, batch, side, true);
        }
        QVERIFY(packed.outputPacked && packed.gradPacked && !held.outputPacked && !held.gradPacked);
        QVERIFY(sameBits(packed.y, held.y));
        QVERIFY(sameBits(packed.dx, held.dx));
        QVERIFY(sameBits(packed.dw, held.dw));
        QVERIFY(sameBits(packed.db, held.db));
        QVERIFY(sameTaps(packed.taps, held.taps));
    }

    void im2colIsAdjointOfCol2im()
    {
        Harness h;
        Rng rng{3};
        ConvGeometry g{3, 4, 5, 6, 3, 1};
        Tensor x({3, 4, 5, 6});
        fill(x, rng);
        const std::int64_t n0 = 1, count = 2;
        Tensor cols({g.patchSize(), count * g.planeSize()});
        fill(cols, rng);
        Tensor lowered(cols.shape()), folded(x.shape());
        h.backend->im2col(g, x.data(), n0, count, lowered.data());
        h.backend->col2im(g, cols.data(), n0, count, folded.data(), 0);
        // <col2im(c), x> over the sample range == <c, im2col(x)>
        double lhs = 0, rhs = 0;
        for (std::int64_t c = 0; c < 3; ++c)
            for (std::int64_t n = n0; n < n0 + count; ++n)
                for (std::int64_t p = 0; p < 30; ++p) lhs += double(folded[(c * 4 + n) * 30 + p]) * x[(c * 4 + n) * 30 + p];
        for (std::int64_t i = 0; i < cols.size(); ++i) rhs += double(cols[i]) * lowered[i];
        QVERIFY(std::fabs(lhs - rhs) <= 1e-5 * std::fabs(rhs));
    }

    void linearForwardAndGradients()
    {
        Harness h;
        Rng rng{11};
        Linear fc("fc1", 7, 5);
        fill(fc.weight().value, rng);
        fill(fc.bias().value, rng);
        Tensor x({3, 7});
        fill(x, rng);
        const Tensor& y = fc.forward(x, h.ctx);
        for (int n = 0; n < 3; ++n)
            for (int o = 0; o < 5; ++o) {
                double ref = fc.bias().value[o];
                for (int i = 0; i < 7; ++i) ref += double(x[n * 7 + i]) * fc.weight().value[o * 7 + i];
                QVERIFY(std::fabs(y[n * 5 + o] - ref) <= 1e-6 * (1 + std::fabs(ref)));
            }
        Tensor r({3, 5});
        fill(r, rng);
        Tensor dy = r;
        const Tensor dx = *fc.backward(dy, h.ctx, true);
        const Tensor dw = fc.weight().grad, db = fc.bias().grad;
        auto loss = [&] { return weightedSum(fc.forward(x, h.ctx), r); };
        checkGradient(x, dx, loss, 1e-2f, 1e-4, "dx");
        checkGradient(fc.weight().value, dw, loss, 1e-2f, 1e-4, "dw");
        checkGradient(fc.bias().value, db, loss, 1e-2f, 1e-4, "db");
        QVERIFY(fc.backward(dy, h.ctx, false) == nullptr);
    }

    void maxPoolAndReluMatchReferences()
    {
        Harness h;
        Rng rng{5};
        MaxPool2d pool("pool1");
        Tensor x({2, 3, 5, 6});   // odd height floors, as PyTorch
        fill(x, rng);
        const Tensor& y = pool.forward(x, h.ctx);
        QCOMPARE(y.shape(), (Shape{2, 3, 2, 3}));
        for (int plane = 0; plane < 6; ++plane)
            for (int oy = 0; oy < 2; ++oy)
                for (int ox = 0; ox < 3; ++ox) {
                    float m = -INFINITY;
                    for (int k = 0; k < 4; ++k) m = std::max(m, x[plane * 30 + (2 * oy + k / 2) * 6 + 2 * ox + k % 2]);
                    QCOMPARE(y[(plane * 2 + oy) * 3 + ox], m);
                }
        Tensor r(y.shape());
        fill(r, rng);
        Tensor dy = r;
        const Tensor dx = *pool.backward(dy, h.ctx, true);
        checkGradient(x, dx, [&] { return weightedSum(pool.forward(x, h.ctx), r); }, 1e-3f, 1e-3, "pool dx");

        ReLU relu("relu1");
        Tensor a({4, 9});
        for (std::int64_t i = 0; i < a.size(); ++i) {   // keep away from the kink at 0
            float v = rng.uniform(-1.0f, 1.0f);
            a[i] = std::fabs(v) < 0.05f ? 0.5f : v;
        }
        const Tensor a0 = a;
        relu.forward(a, h.ctx);
        for (std::int64_t i = 0; i < a.size(); ++i) QCOMPARE(a[i], std::max(0.0f, a0[i]));
        Tensor g({4, 9});
        fill(g, rng);
        const Tensor g0 = g;
        relu.backward(g, h.ctx, true);
        for (std::int64_t i = 0; i < g.size(); ++i) QCOMPARE(g[i], a0[i] > 0 ? g0[i] : 0.0f);
    }

    // The CPU's pooling against the rule written out here: in each 2x2 window the first
    // maximum wins, the first NaN wins over any number, and the winner's bits (a zero's
    // sign, the NaN's payload) are what is stored. Few distinct values, so ties are
    // everywhere; odd heights and widths, rows of 14 windows (fewer than one AVX-512 pass)
    // and of 33 (two AVX-512 or four AVX2 passes and one window left); at every SIMD level
    // this CPU has.
    void maxPoolFollowsTheRule_data()
    {
        QTest::addColumn<int>("level");
        QTest::addColumn<int>("width");
        for (SimdLevel level : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512})
            for (int width : {29, 67})
                if (level <= cpuSimdLevel())
                    QTest::addRow("%s W=%d", simdLevelName(level), width) << int(level) << width;
    }
    void maxPoolFollowsTheRule()
    {
        QFETCH(int, level);
        QFETCH(int, width);
        const ScopedSimdCap cap(static_cast<SimdLevel>(level));
        const std::int64_t planes = 5, H = 7, W = width, Ho = H / 2, Wo = W / 2;
        const float nanA = std::bit_cast<float>(0x7FC00001u), nanB = std::bit_cast<float>(0xFFC00002u);
        const float choices[] = {-1.0f, 0.0f, -0.0f, 0.5f, 2.0f, 2.0f, 2.0f, nanA, nanB, -INFINITY, INFINITY};
        Rng rng{17};
        std::vector<float> in(static_cast<std::size_t>(planes * H * W));
        for (float& x : in) x = choices[rng.next() % std::size(choices)];
        std::vector<float> want(static_cast<std::size_t>(planes * Ho * Wo));
        std::vector<std::uint8_t> wantAt(want.size());
        for (std::int64_t p = 0; p < planes; ++p)
            for (std::int64_t y = 0; y < Ho; ++y)
                for (std::int64_t x = 0; x < Wo; ++x) {
                    int best = -1;
                    for (int k = 0; k < 4 && best < 0; ++k)   // the first NaN, if any
                        if (std::isnan(in[static_cast<std::size_t>((p * H + 2 * y + k / 2) * W + 2 * x + k % 2)])) best = k;
                    if (best < 0) {
                        best = 0;
                        for (int k = 1; k < 4; ++k)   // else the first of the largest
                            if (in[static_cast<std::size_t>((p * H + 2 * y + k / 2) * W + 2 * x + k % 2)] >
                                in[static_cast<std::size_t>((p * H + 2 * y + best / 2) * W + 2 * x + best % 2)])
                                best = k;
                    }
                    const auto o = static_cast<std::size_t>((p * Ho + y) * Wo + x);
                    want[o] = in[static_cast<std::size_t>((p * H + 2 * y + best / 2) * W + 2 * x + best % 2)];
                    wantAt[o] = static_cast<std::uint8_t>(best);
                }
        cpu::ThreadPool pool(2);
        std::vector<float> out(want.size(), 9.0f);
        std::vector<std::uint8_t> at(want.size(), 9);
        cpu::maxPool2x2(pool, in.data(), planes, H, W, out.data(), at.data());
        for (std::size_t o = 0; o < want.size(); ++o)
            if (std::bit_cast<std::uint32_t>(out[o]) != std::bit_cast<std::uint32_t>(want[o]) || at[o] != wantAt[o])
                QFAIL(qPrintable(QString("output %1: %2 at %3, want %4 at %5")
                                     .arg(o).arg(out[o]).arg(at[o]).arg(want[o]).arg(wantAt[o])));
    }

    // The bias gradients' row sums are each row's in-order double sum (from +0), bit for bit,
    // however many rows the backend adds at once (backend/cpu/row_sums.h): matrices of 1 to
    // 11 rows of a few binades and of forty, and rows that only the in-order sum gets right
    // (the sum reassociated gives another number), NaN, infinities and zeros; fp32, and
    // packed fp16 and bf16 values.
    void rowSumsAreTheInOrderSum_data()
    {
        QTest::addColumn<int>("format");
        for (Format f : {Format::fp32, Format::fp16, Format::bf16}) QTest::addRow("%s", formatName(f).data()) << int(f);
    }
    void rowSumsAreTheInOrderSum()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        using Matrix = std::vector<std::vector<float>>;
        Rng rng{29};
        std::vector<Matrix> matrices;
        for (int rows : {1, 8, 11})
            for (int length : {1, 9, 600, 9000}) {
                Matrix m;
                for (int r = 0; r < rows; ++r) {
                    const int binades = r % 2 ? 40 : 3;
                    std::vector<float> row(static_cast<std::size_t>(length));
                    for (float& v : row)
                        v = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % binades) - binades / 2);
                    m.push_back(row);
                }
                matrices.push_back(m);
            }
        // In order, 1 + 2^60 loses the 1 and the row sums to 0; in another order it keeps both 1s.
        std::vector<float> lost(17, 0.0f);
        lost[0] = lost[8] = 1.0f;
        lost[1] = std::ldexp(1.0f, 60);
        lost[9] = -lost[1];
        // 2^30 + 1 + 2^-23 rounds to even in double: in order 1, not 1 + 2^-23.
        std::vector<float> tie(17, 0.0f);
        tie[0] = tie[1] = std::ldexp(1.0f, 29);
        tie[2] = 1.0f + std::ldexp(1.0f, -23);
        tie[8] = tie[9] = -std::ldexp(1.0f, 29);
        auto row17 = [](std::vector<float> v) { return v.resize(17, 0.0f), v; };
        matrices.push_back({lost, tie, row17({1.0f, NAN, -2.0f}), row17({INFINITY, 1.0f, -INFINITY}),
                            row17({INFINITY, 1.0f, 3.0f}), row17({0.0f, -0.0f, -0.0f}), row17({-0.0f}), lost, tie});

        Harness h;
        for (const Matrix& m : matrices) {
            const auto rows = static_cast<std::int64_t>(m.size()), cols = static_cast<std::int64_t>(m[0].size());
            std::vector<float> values, want;
            for (const std::vector<float>& row : m) {
                double inOrder = 0.0;
                for (float v : row) {
                    values.push_back(roundTo(f, v));
                    inOrder += values.back();
                }
                want.push_back(static_cast<float>(inOrder));
            }
            std::vector<float> got(want.size(), 7.0f);
            if (f == Format::fp32) {
                h.backend->sumRows(values.data(), rows, cols, got.data());
            } else {
                std::vector<std::uint16_t> bits(values.size());
                for (std::size_t i = 0; i < bits.size(); ++i)
                    bits[i] = f == Format::fp16 ? fp32ToFp16Bits(values[i]) : fp32ToBf16Bits(values[i]);
                h.backend->sumRows16(f, bits.data(), rows, cols, got.data());
            }
            for (std::int64_t r = 0; r < rows; ++r)
                if (std::bit_cast<std::uint32_t>(got[r]) != std::bit_cast<std::uint32_t>(want[r]))
                    QFAIL(qPrintable(QString("row %1 of %2 x %3: %4, in order %5")
                                         .arg(r).arg(rows).arg(cols).arg(got[r], 0, 'g', 17).arg(want[r], 0, 'g', 17)));
        }
        // The order-sensitive rows are so: summed pairwise they give another number (in fp16
        // their large values overflow to infinities, so sumRows16's order is checked in bf16;
        // in bf16 1 + 2^-23 is 1, so only the first).
        const std::vector<std::vector<float>> sensitive = f == Format::fp32   ? Matrix{lost, tie}
                                                          : f == Format::bf16 ? Matrix{lost}
                                                                              : Matrix{};
        for (const std::vector<float>& row : sensitive) {
            double pairs[2] = {}, inOrder = 0.0;
            for (std::size_t i = 0; i < row.size(); ++i) {
                pairs[i % 2] += roundTo(f, row[i]);
                inOrder += roundTo(f, row[i]);
            }
            QVERIFY(pairs[0] + pairs[1] != inOrder);
        }
    }

    // Issue 31: the element-wise ops on packed 16-bit tensors give, bit for bit, what the
    // fp32 ops give on the widened values (every result is one of the format's values, so
    // it narrows exactly), with the same positions and rounding counts.
    void packedOpsMatchTheFp32Ops_data()
    {
        QTest::addColumn<int>("format");
        QTest::addRow("fp16") << int(Format::fp16);
        QTest::addRow("bf16") << int(Format::bf16);
    }
    void packedOpsMatchTheFp32Ops()
    {
        QFETCH(int, format);
        const Format f = static_cast<Format>(format);
        auto widen = [&](std::uint16_t b) { return f == Format::fp16 ? fp16BitsToFp32(b) : bf16BitsToFp32(b); };
        auto narrow = [&](float x) { return f == Format::fp16 ? fp32ToFp16Bits(x) : fp32ToBf16Bits(x); };
        // Every pattern but signaling NaNs (packing never makes one), with repeats so that
        // pooling windows hold ties, zeros of both signs, NaNs and infinities together.
        std::vector<std::uint16_t> patterns;
        std::uint32_t state = 12345u;
        for (int i = 0; i < 3 * 65536; ++i) {
            state = state * 1664525u + 1013904223u;
            std::uint16_t b = static_cast<std::uint16_t>(i % 7 == 0 ? (state >> 31) << 15 : state >> 16);
            if (narrow(widen(b)) != b) b = narrow(widen(b));   // a signaling NaN, made quiet
            patterns.push_back(b);
        }
        const std::int64_t planes = 6, H = 64, W = 512;   // 196,608 values
        QCOMPARE(static_cast<std::int64_t>(patterns.size()), planes * H * W);
        std::vector<float> wide(patterns.size());
        for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = widen(patterns[i]);
        const auto n = static_cast<std::int64_t>(patterns.size());
        cpu::ThreadPool pool(2);
        auto sameBits = [&](const std::vector<std::uint16_t>& got, const std::vector<float>& want, const char* op) {
            for (std::size_t i = 0; i < want.size(); ++i)
                if (got[i] != narrow(want[i]))
                    QFAIL(qPrintable(QString("%1, element %2: %3, want %4").arg(op).arg(i).arg(got[i]).arg(narrow(want[i]))));
        };

        std::vector<std::uint16_t> relu = patterns;
        cpu::relu16(pool, f, relu.data(), n);
        std::vector<float> reluWide = wide;
        cpu::relu(pool, reluWide.data(), n);
        sameBits(relu, reluWide, "relu");

        std::vector<std::uint16_t> g(patterns.rbegin(), patterns.rend());
        std::vector<float> gWide(wide.rbegin(), wide.rend());
        cpu::reluBackward16(pool, f, patterns.data(), g.data(), n);
        cpu::reluBackward(pool, wide.data(), gWide.data(), n);
        sameBits(g, gWide, "relu backward");

        const std::int64_t pooledSize = planes * (H / 2) * (W / 2);
        std::vector<std::uint16_t> pooled(static_cast<std::size_t>(pooledSize));
        std::vector<float> pooledWide(pooled.size());
        std::vector<std::uint8_t> at(pooled.size()), atWide(pooled.size());
        cpu::maxPool2x2Packed(pool, f, patterns.data(), planes, H, W, pooled.data(), at.data());
        cpu::maxPool2x2(pool, wide.data(), planes, H, W, pooledWide.data(), atWide.data());
        sameBits(pooled, pooledWide, "max pool");
        QVERIFY(at == atWide);
        std::vector<std::uint16_t> dx(patterns.size(), 7);
        std::vector<float> dxWide(patterns.size(), 7.0f);
        cpu::maxPool2x2Backward(pool, pooled.data(), at.data(), planes, H, W, dx.data());
        cpu::maxPool2x2Backward(pool, pooledWide.data(), atWide.data(), planes, H, W, dxWide.data());
        sameBits(dx, dxWide, "max pool backward");

        std::vector<std::uint16_t> t(patterns.size());
        std::vector<float> tWide(patterns.size());
        cpu::transposeBlocks(pool, patterns.data(), planes, H, W, t.data());
        cpu::transposeBlocks(pool, wide.data(), planes, H, W, tWide.data());
        sameBits(t, tWide, "transpose");

        // The GEMM's fp32 result plus bias, rounded into 16 bits, with addBiasRound's counts.
        std::vector<float> x(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < x.size(); ++i) {
            state = state * 1664525u + 1013904223u;
            x[i] = std::ldexp(static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f,
                              static_cast<int>((state >> 8) % 40) - 30);
        }
        const std::vector<float> bias = {0.5f, -0.25f, 1e-3f, 3.0f, -7.0f, 0.0f};
        RoundingStats stats, wantStats;
        GradientHistogram hist, wantHist;
        std::vector<std::uint16_t> out(x.size());
        cpu::addBiasRoundTo16(pool, f, {x.data(), H * W}, bias.data(), {out.data(), H * W}, planes, H * W, &stats,
                              &hist);
        std::vector<float> xWide = x;
        cpu::addBiasRound(pool, f, xWide.data(), n, bias.data(), 6, H * W, &wantStats, &wantHist);
        sameBits(out, xWide, "bias and rounding");
        QCOMPARE(stats.underflow, wantStats.underflow);
        QCOMPARE(stats.subnormal, wantStats.subnormal);
        QCOMPARE(stats.overflow, wantStats.overflow);
        QCOMPARE(stats.count, wantStats.count);
        QVERIFY(hist.bins == wantHist.bins);

        // Blocks of a (planes, H * W) matrix: rows 1-4, columns 100-5099, read from and
        // written into a dense block and back, the rest left alone.
        const std::int64_t rows = 4, cols = 5000, row0 = 1, col0 = 100, ld = H * W;
        std::vector<float> block(static_cast<std::size_t>(rows * cols));
        cpu::widen16(pool, f, {patterns.data() + row0 * ld + col0, ld}, {block.data(), cols}, rows, cols);
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c)
                QCOMPARE(narrow(block[static_cast<std::size_t>(r * cols + c)]),
                         patterns[static_cast<std::size_t>((row0 + r) * ld + col0 + c)]);
        std::vector<std::uint16_t> into(patterns.size(), 0x1234);
        RoundingStats blockStats, wantBlockStats;
        cpu::roundTo16(pool, f, {x.data(), cols}, {into.data() + row0 * ld + col0, ld}, rows, cols, &blockStats,
                       nullptr);
        std::vector<std::uint16_t> dense(static_cast<std::size_t>(rows * cols));
        roundArrayTo16(f, x.data(), dense.data(), dense.size(), &wantBlockStats, nullptr);
        for (std::size_t i = 0; i < into.size(); ++i) {
            const auto r = static_cast<std::int64_t>(i) / ld - row0, c = static_cast<std::int64_t>(i) % ld - col0;
            const bool inside = r >= 0 && r < rows && c >= 0 && c < cols;
            const std::uint16_t want = inside ? narrow(x[static_cast<std::size_t>(r * cols + c)]) : 0x1234;
            if (into[i] != want) QFAIL(qPrintable(QString("block rounding, element %1").arg(i)));
        }
        QVERIFY(blockStats == wantBlockStats);
        QCOMPARE(blockStats.count, static_cast<std::uint64_t>(rows * cols));

        // Row sums of packed values: sumRows of the widened values, bit for bit (values of
        // at most fp16's largest, so that the sums are finite: larger ones, NaNs and
        // infinities are zeroed).
        std::vector<std::uint16_t> finite = patterns;
        for (auto& b : finite)
            if (!(std::fabs(widen(b)) <= 65504.0f)) b = 0;
        std::vector<float> finiteWide(finite.size());
        for (std::size_t i = 0; i < finite.size(); ++i) finiteWide[i] = widen(finite[i]);
        std::vector<float> sums(static_cast<std::size_t>(planes)), wantSums(sums.size());
        cpu::sumRows16(pool, f, finite.data(), planes, H * W, sums.data());
        cpu::sumRows(pool, finiteWide.data(), planes, H * W, wantSums.data());
        QVERIFY(std::isfinite(wantSums[0]) && wantSums[0] != 0.0f);
        for (std::size_t r = 0; r < sums.size(); ++r) QCOMPARE(std::bit_cast<std::uint32_t>(sums[r]), std::bit_cast<std::uint32_t>(wantSums[r]));
    }

    // Issue 31: with a 16-bit storage recipe on the CPU, activations and their gradients
    // are held packed (2 bytes each) between the layers; every output and gradient is the
    // same, bit for bit, as with them held as fp32 values, on every CPU. Where its BLAS sums
    // a cut product alike, tiny blocks (500 values) make the layers work one sample, two
    // input channels, or the fewest rows and columns of a GEMM (kLeastGemmBlock) at a time.
    // Where it does not (OpenBLAS's Haswell kernels: here, or CTest's tst_layers_simd_avx2),
    // the layers compute in groups of the backend's pieces (one a group with tiny blocks):
    // at a batch of 40 conv2's 8 pieces (992 columns) cut its samples (196 columns), so the
    // input gradient carries a sample's columns from one group to the next; at 64 they hold
    // 8 samples each.
    //
    // With the hardware arithmetic on native bf16 units the packed layers hand oneDNN the
    // 16-bit patterns where they lie (gemm16: no widened copy, no packing copy), and the
    // results are again the same bits as those of the layers holding fp32 values.
    void packedActivationsComputeTheSameBits_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<qint64>("blockValues");
        QTest::addColumn<bool>("hardware");
        QTest::addColumn<qint64>("batch");
        for (const char* p : {"pure-bf16", "amp-fp16", "amp-bf16", "pure-fp16"}) {
            QTest::addRow("%s", p) << QString::fromLatin1(p) << qint64{packedBlockValues()} << false << qint64{40};
            QTest::addRow("%s, tiny blocks", p) << QString::fromLatin1(p) << qint64{500} << false << qint64{40};
        }
        for (const char* p : {"pure-bf16", "amp-fp16"})
            QTest::addRow("%s, tiny blocks, batch 64", p) << QString::fromLatin1(p) << qint64{500} << false << qint64{64};
        for (const char* p : {"pure-bf16", "amp-bf16"}) {
            QTest::addRow("%s, hardware", p) << QString::fromLatin1(p) << qint64{packedBlockValues()} << true
                                             << qint64{40};
            QTest::addRow("%s, hardware, tiny blocks", p) << QString::fromLatin1(p) << qint64{500} << true
                                                          << qint64{40};
        }
    }
    void packedActivationsComputeTheSameBits()
    {
        QFETCH(QString, preset);
        QFETCH(qint64, blockValues);
        QFETCH(bool, hardware);
        QFETCH(qint64, batch);
        if (hardware && !cpu::nativelySupported(Format::bf16))
            QSKIP(qPrintable(QString::fromStdString("no native bf16: " + cpu::nativeSupportText(Format::bf16))));
        const Arithmetic arithmetic = hardware ? Arithmetic::hardware : Arithmetic::exact;
        const std::int64_t defaultBlock = packedBlockValues();
        const ScopedPackedStorage restored(false);   // each run below sets it
        setPackedBlockValues(blockValues);
        struct Result {
            std::vector<float> logits, inputGrad;
            std::vector<std::vector<float>> grads;
            bool convOutputPacked = false, poolOutputPacked = false, gradPacked = false;
        };
        auto runOnce = [&](bool packing, std::int64_t blocks) {
            setPackedStorageEnabled(packing);
            setPackedBlockValues(blocks);
            Harness h(preset.toStdString(), arithmetic);
            const Format storage = h.recipe.storage();
            Conv2d conv1("conv1", 1, 16), conv2("conv2", 16, 40);
            ReLU relu1("relu1"), relu2("relu2");
            MaxPool2d pool1("pool1"), pool2("pool2");
            Flatten flatten("flatten");
            Linear fc("fc1", 40 * 7 * 7, 10);
            std::uint32_t state = 99;
            auto next = [&] {
                state = state * 1664525u + 1013904223u;
                return static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f;
            };
            for (Parameter* p : {&conv1.weight(), &conv1.bias(), &conv2.weight(), &conv2.bias(), &fc.weight(), &fc.bias()})
                for (std::int64_t i = 0; i < p->value.size(); ++i) p->value[i] = roundTo(h.recipe.compute, 0.4f * next());
            const std::int64_t N = batch;
            Tensor x({1, N, 28, 28}, storage);
            for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(storage, std::fabs(next()));
            Tensor* y = &conv1.forward(x, h.ctx);
            Result r;
            r.convOutputPacked = y->packed();
            y = &relu1.forward(*y, h.ctx);
            y = &pool1.forward(*y, h.ctx);
            r.poolOutputPacked = y->packed();
            y = &conv2.forward(*y, h.ctx);
            y = &relu2.forward(*y, h.ctx);
            y = &pool2.forward(*y, h.ctx);
            y = &flatten.forward(*y, h.ctx);
            y = &fc.forward(*y, h.ctx);
            r.logits = y->toHost();
            Tensor g({N, 10}, storage);
            for (std::int64_t i = 0; i < g.size(); ++i) g[i] = roundTo(storage, 0.01f * next());
            Tensor* d = fc.backward(g, h.ctx, true);
            d = flatten.backward(*d, h.ctx, true);
            d = pool2.backward(*d, h.ctx, true);
            d = relu2.backward(*d, h.ctx, true);
            d = conv2.backward(*d, h.ctx, true);
            d = pool1.backward(*d, h.ctx, true);
            r.gradPacked = d->packed();   // conv2's input gradient, scattered by pool1
            d = relu1.backward(*d, h.ctx, true);
            r.inputGrad = d->toHost();
            conv1.backward(*d, h.ctx, false);
            for (Parameter* p : {&conv1.weight(), &conv1.bias(), &conv2.weight(), &conv2.bias(), &fc.weight(), &fc.bias()})
                r.grads.push_back(p->grad.toHost());
            return r;
        };
        const Result held = runOnce(false, blockValues), packed = runOnce(true, blockValues);
        setPackedBlockValues(defaultBlock);
        QVERIFY(!held.convOutputPacked && !held.poolOutputPacked && !held.gradPacked);
        QVERIFY(packed.convOutputPacked && packed.poolOutputPacked && packed.gradPacked);   // it did pack
        auto outputs = [](const Result& r) {
            std::vector<std::vector<float>> all{r.logits, r.inputGrad};
            all.insert(all.end(), r.grads.begin(), r.grads.end());
            return all;
        };
        if (hardware) {   // oneDNN's sums, not OpenBLAS's: the same calls either way
            const auto want = outputs(held), got = outputs(packed);
            for (std::size_t i = 0; i < want.size(); ++i)
                QVERIFY2(sameBits(got[i], want[i]), qPrintable(QString("output %1: not the same bits").arg(i)));
        } else {
            checkPackedAgainstReference(outputs(held), outputs(packed));
        }
    }

    // Packing follows the setting: by default the backend's own (the CPU backend packs on
    // every kernel family, its packed layers giving the unpacked ones' bits; the checking
    // backend, posing as a device, keeps ComputeBackend's default, off, so that the suites
    // on it test the unpacked device path unless they ask; the CUDA backend packs by
    // default), forced on or off for every backend that holds packed tensors.
    void packingFollowsTheSetting()
    {
        const ScopedPackedStorage restored(false);
        const auto cpu = createCpuBackend(1);
        CheckingBackend device(ConvolutionLibrary::none);
        setPackedStorage(PackedStorage::byDefault);
        QVERIFY(packsStorageOn(*cpu));
        QVERIFY(device.supports(BackendOp::packedTensors));
        QVERIFY(!packsStorageOn(device));
        setPackedStorage(PackedStorage::on);
        QVERIFY(packsStorageOn(*cpu));
        QVERIFY(packsStorageOn(device));
        setPackedStorage(PackedStorage::off);
        QVERIFY(!packsStorageOn(*cpu));
        QVERIFY(!packsStorageOn(device));
    }

    // Blocks of a product (Pieces) cover [0, total) without a gap or an empty block, none
    // wider than largest() says, none narrower than `least` (unless there is one), none
    // wider than `most` where `least` leaves room, each starting at a multiple of the
    // granule (dropped when it is wider than `most`); with granule 1 they are the blocks the
    // host always cut (i * total / count), so its sums stay as they were. The granule is 1
    // on the host and, on a device, the fewest items that fill 16 bytes.
    void piecesStartAtTheirGranule()
    {
        for (std::int64_t total = 0; total <= 130; ++total) {
            for (const std::int64_t most : {1, 5, 16, 33, 1000}) {
                for (const std::int64_t least : {1, 3, 16}) {
                    for (const std::int64_t granule : {1, 2, 4, 8}) {
                        const Pieces p = piecesOf(total, most, least, granule);
                        const QString what = QString("total %1, most %2, least %3, granule %4")
                                                 .arg(total).arg(most).arg(least).arg(granule);
                        const std::int64_t g = granule <= most ? granule : 1;
                        QCOMPARE(p.granule, g);
                        QVERIFY2(p.count >= 1 && p.begin(0) == 0 && p.begin(p.count) == total, qPrintable(what));
                        // Fewer blocks than `most` asks for (starts rounded down to the granule
                        // widen a block by up to g - 1), since each keeps at least `least`
                        // rounded up to the granule: then a block may be wider than `most`.
                        const std::int64_t fewest = (least + g - 1) / g * g;
                        const std::int64_t wanted = (total + most - g) / (most - g + 1);
                        const bool leastLimits =
                            p.count == std::max<std::int64_t>(1, total / fewest) && p.count < wanted;
                        std::int64_t widest = 0;
                        for (std::int64_t i = 0; i < p.count; ++i) {
                            const std::int64_t width = p.begin(i + 1) - p.begin(i);
                            QVERIFY2(width > 0 || total == 0, qPrintable(what));
                            QVERIFY2(p.count == 1 || width >= least, qPrintable(what));
                            QVERIFY2(leastLimits || width <= most || p.count == 1, qPrintable(what));
                            QVERIFY2(p.begin(i) % g == 0, qPrintable(what));
                            if (g == 1) QVERIFY2(p.begin(i) == i * total / p.count, qPrintable(what));
                            widest = std::max(widest, width);
                        }
                        QVERIFY2(p.largest() == widest || (total == 0 && p.largest() == 0), qPrintable(what));
                        // As many blocks as `most` needs where `least` leaves room for them.
                        if (!leastLimits) QVERIFY2(p.count == std::max<std::int64_t>(1, wanted), qPrintable(what));
                    }
                }
            }
        }
        Harness host("amp-fp16");
        QCOMPARE(deviceGranule(host.ctx, 196 * 2), std::int64_t{1});
        CheckingBackend device(ConvolutionLibrary::none);
        StepContext onDevice = host.ctx;
        onDevice.backend = &device;
        QCOMPARE(deviceGranule(onDevice, 196 * 2), std::int64_t{2});   // 14 x 14 fp16 planes
        QCOMPARE(deviceGranule(onDevice, 784 * 2), std::int64_t{1});   // 28 x 28
        QCOMPARE(deviceGranule(onDevice, 9 * 4), std::int64_t{4});     // 3 x 3 fp32 filters
        QCOMPARE(deviceGranule(onDevice, 3780 * 4), std::int64_t{1});
        QCOMPARE(deviceGranule(onDevice, 1), std::int64_t{16});
    }

    // ComputeBackend::gemmPieces: any run of whole pieces of the backend's cut (gemmCut)
    // gives the bits of one gemm call, whether the cut runs along the columns or the rows,
    // with the operands stored as they are or transposed.
    // On OpenBLAS's SkylakeX kernels the CPU backend has no cut to keep (count 0); CTest runs
    // this suite again on the Haswell kernels (tst_layers_simd_avx2), which have one.
    void gemmPiecesGiveTheWholeProduct_data()
    {
        QTest::addColumn<qint64>("M");
        QTest::addColumn<qint64>("N");
        QTest::addColumn<qint64>("K");
        QTest::addRow("columns") << qint64{40} << qint64{1000} << qint64{300};
        QTest::addRow("rows") << qint64{1000} << qint64{40} << qint64{300};
    }
    void gemmPiecesGiveTheWholeProduct()
    {
        QFETCH(qint64, M);
        QFETCH(qint64, N);
        QFETCH(qint64, K);
        const auto cpu = createCpuBackend(2);
        const GemmPrecision fp32;
        const GemmCut cut = cpu->gemmCut(fp32, M, N, K);
        if (cut.count == 0) QSKIP("this CPU's BLAS sums any cut of a product alike: no pieces to keep");
        QCOMPARE(cut.columns, N >= M);
        QVERIFY(cut.count >= 4);
        std::uint32_t state = 11;
        auto next = [&] {
            state = state * 1664525u + 1013904223u;
            return static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f;
        };
        std::vector<float> A(std::size_t(M * K)), B(std::size_t(K * N)), whole(std::size_t(M * N));
        for (float& v : A) v = next();
        for (float& v : B) v = next();
        cpu->gemm(Transpose::no, Transpose::no, M, N, K, A.data(), K, B.data(), N, 0.0f, whole.data(), N, fp32);
        for (const std::int64_t group : {1, 2, 3}) {
            std::vector<float> pieces(whole.size(), -1.0f);
            for (std::int64_t p = 0; p < cut.count; p += group) {
                const std::int64_t q = std::min(cut.count, p + group), b = cut.begin(p), e = cut.begin(q);
                if (cut.columns)
                    cpu->gemmPieces(cut, p, q, Transpose::no, Transpose::no, M, e - b, K, A.data(), K, B.data() + b, N,
                                    0.0f, pieces.data() + b, N, fp32);
                else
                    cpu->gemmPieces(cut, p, q, Transpose::no, Transpose::no, e - b, N, K, A.data() + b * K, K,
                                    B.data(), N, 0.0f, pieces.data() + b * N, N, fp32);
            }
            QVERIFY2(sameBits(pieces, whole), qPrintable(QString("groups of %1 pieces").arg(group)));
        }
        // With A and B stored transposed (the input gradient's op(A) = W^T): the same.
        std::vector<float> At(A.size()), Bt(B.size()), pieces(whole.size(), -1.0f);
        for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t k = 0; k < K; ++k) At[std::size_t(k * M + i)] = A[std::size_t(i * K + k)];
        for (std::int64_t k = 0; k < K; ++k)
            for (std::int64_t j = 0; j < N; ++j) Bt[std::size_t(j * K + k)] = B[std::size_t(k * N + j)];
        for (std::int64_t p = 0; p < cut.count; p += 2) {
            const std::int64_t q = std::min(cut.count, p + 2), b = cut.begin(p), e = cut.begin(q);
            if (cut.columns)
                cpu->gemmPieces(cut, p, q, Transpose::yes, Transpose::yes, M, e - b, K, At.data(), M,
                                Bt.data() + b * K, K, 0.0f, pieces.data() + b, N, fp32);
            else
                cpu->gemmPieces(cut, p, q, Transpose::yes, Transpose::yes, e - b, N, K, At.data() + b, M, Bt.data(),
                                K, 0.0f, pieces.data() + b * N, N, fp32);
        }
        std::vector<float> wholeT(whole.size());
        cpu->gemm(Transpose::yes, Transpose::yes, M, N, K, At.data(), M, Bt.data(), K, 0.0f, wholeT.data(), N, fp32);
        QVERIFY(sameBits(pieces, wholeT));
        // A block that cuts a piece, or a cut that is not the backend's (another sum length),
        // is refused, not summed in another order.
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 cpu->gemmPieces(cut, 0, 1, Transpose::no, Transpose::no, cut.columns ? M : cut.width - 1,
                                                 cut.columns ? cut.width - 1 : N, K, A.data(), K, B.data(), N, 0.0f,
                                                 whole.data(), N, fp32));
        const GemmCut other = cpu->gemmCut(fp32, M, N, 40);
        QVERIFY(other.count != cut.count || other.width != cut.width);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 cpu->gemmPieces(other, 0, 1, Transpose::no, Transpose::no, cut.columns ? M : other.width,
                                                 cut.columns ? other.width : N, K, A.data(), K, B.data(), N, 0.0f,
                                                 whole.data(), N, fp32));
    }

    // Groups of a backend's pieces (pieceGroups) cover the extent in whole pieces, each as
    // many as fit in `most`, at least one, and at least `least` where they fit in `roomy`;
    // more than `least` rounded down to a multiple of it. A cut along the other dimension,
    // or none, is one group.
    void pieceGroupsAreWholePieces()
    {
        struct Case {
            std::int64_t extent, width, most, least;
        };
        std::vector<Case> cases;
        for (std::int64_t extent = 1; extent <= 400; extent += 7)
            for (const std::int64_t width : {16, 48, 96})
                for (const std::int64_t most : {1, 50, 200, 1000})
                    for (const std::int64_t least : {1, 2, 3}) cases.push_back({extent, width, most, least});
        for (const Case& c : cases) {
            const GemmCut cut{true, c.extent, c.width, (c.extent + c.width - 1) / c.width};
            const std::int64_t roomy = 3 * c.most;
            const PieceGroups g = pieceGroups(cut, true, c.extent, c.most, c.least, roomy);
            const QString what = QString("extent %1, width %2, most %3, least %4")
                                     .arg(c.extent).arg(c.width).arg(c.most).arg(c.least);
            auto fits = [&](std::int64_t p, std::int64_t q) {
                const std::int64_t w = cut.begin(q) - cut.begin(p);
                return w <= c.most || (q - p <= c.least && w <= roomy);
            };
            QVERIFY2(g.count() >= 1 && g.firstPiece.front() == 0 && g.firstPiece.back() == cut.count &&
                         g.begin(g.count()) == c.extent,
                     qPrintable(what));
            std::int64_t widest = 0;
            for (std::int64_t i = 0; i < g.count(); ++i) {
                const std::int64_t p = g.firstPiece[std::size_t(i)], q = g.firstPiece[std::size_t(i + 1)];
                widest = std::max(widest, cut.begin(q) - cut.begin(p));
                QVERIFY2(q > p, qPrintable(what));
                QVERIFY2(q == p + 1 || fits(p, q), qPrintable(what));
                std::int64_t most = 1;   // as many as fit, rounded down to a multiple of least
                while (p + most < cut.count && fits(p, p + most + 1)) ++most;
                QCOMPARE(q - p, c.least > 1 && most > c.least ? most / c.least * c.least : most);
            }
            QCOMPARE(g.largest(), widest);
        }
        // Worked by hand: pieces of 208 columns of 1,000 (the last 168).
        const GemmCut five{true, 1000, 208, 5};
        using Firsts = std::vector<std::int64_t>;
        QCOMPARE(pieceGroups(five, true, 1000, 450, 1, 450).firstPiece, (Firsts{0, 2, 4, 5}));   // 416, 416, 168
        QCOMPARE(pieceGroups(five, true, 1000, 100, 2, 450).firstPiece, (Firsts{0, 2, 4, 5}));   // pairs: threads
        QCOMPARE(pieceGroups(five, true, 1000, 100, 2, 300).firstPiece, (Firsts{0, 1, 2, 3, 4, 5}));   // no room
        QCOMPARE(pieceGroups(five, true, 1000, 1000, 1, 1000).firstPiece, (Firsts{0, 5}));
        QCOMPARE(pieceGroups(five, true, 1000, 1000, 2, 1000).firstPiece, (Firsts{0, 4, 5}));   // 4 of 5 in pairs
        QCOMPARE(pieceGroups(five, true, 1000, 650, 2, 650).firstPiece, (Firsts{0, 2, 4, 5}));   // 3 fit: 2
        const GemmCut rows{false, 300, 48, 7};
        for (const GemmCut& c : {rows, GemmCut{}}) {
            const PieceGroups g = pieceGroups(c, true, 300, 50, 2, 100);
            QCOMPARE(g.count(), std::int64_t{1});
            QCOMPARE(g.begin(0), std::int64_t{0});
            QCOMPARE(g.begin(1), std::int64_t{300});
        }
    }

    // A packed layer's fp32 block is a quarter of its largest packed tensor, within [1/32,
    // 1] of packedBlockValues(); products oneDNN runs natively keep packedBlockValues(),
    // since its sums depend on a product's shape.
    void packedBlocksScaleToTheTensor()
    {
        Harness exact("amp-fp16"), hardware("amp-bf16", Arithmetic::hardware);
        const std::int64_t before = packedBlockValues(), most = std::int64_t{8} << 20;
        const GemmPrecision fp16(Format::fp16, true), bf16(Format::bf16, true);
        setPackedBlockValues(most);
        const std::int64_t quarter = packedBlockValues(exact.ctx, fp16, 4 * 1000000),
                           least = packedBlockValues(exact.ctx, fp16, 1000),
                           largest = packedBlockValues(exact.ctx, fp16, 100 * most),
                           columns = packedColumnValues(exact.ctx, fp16, 4 * 1000000),
                           native = packedBlockValues(hardware.ctx, bf16, 4 * 1000000);
        setPackedBlockValues(before);
        QCOMPARE(quarter, std::int64_t{1000000});
        QCOMPARE(least, most / 32);
        QCOMPARE(largest, most);
        QCOMPARE(columns, std::int64_t{2000000});
        QCOMPARE(native, hardware.backend->supports(BackendOp::gemm16, bf16) ? most : std::int64_t{1000000});
    }

    // Issue 31: a linear layer reading a packed input in blocks of rows (forward, dX) and of
    // columns (dW), with tiny blocks (4, 8 and 4 blocks where the BLAS sums cuts alike; on
    // OpenBLAS's Haswell kernels the input widened whole, dX in one block), computes what it computes on
    // the fp32-held input in one product each, bit for bit (as checkPackedAgainstReference
    // judges it).
    void packedLinearInBlocksComputesTheSameBits_data()
    {
        QTest::addColumn<QString>("preset");
        for (const char* p : {"pure-bf16", "amp-fp16"}) QTest::addRow("%s", p) << QString::fromLatin1(p);
    }
    void packedLinearInBlocksComputesTheSameBits()
    {
        QFETCH(QString, preset);
        const std::int64_t N = 64, I = 4096, O = 64, defaultBlock = packedBlockValues();
        const ScopedPackedStorage restored(false);   // each run below sets it
        auto runOnce = [&](bool packing, std::int64_t blocks) {
            setPackedStorageEnabled(packing);
            setPackedBlockValues(blocks);
            Harness h(preset.toStdString());
            const Format storage = h.recipe.storage();
            Linear fc("fc1", I, O);
            std::uint32_t state = 7;
            auto next = [&] {
                state = state * 1664525u + 1013904223u;
                return static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f;
            };
            for (Parameter* p : {&fc.weight(), &fc.bias()})
                for (std::int64_t i = 0; i < p->value.size(); ++i) p->value[i] = roundTo(h.recipe.compute, 0.05f * next());
            Tensor x({N, I}, storage);
            for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(storage, next());
            if (packing) x.pack();
            std::vector<std::vector<float>> out;
            out.push_back(fc.forward(x, h.ctx).toHost());
            Tensor g({N, O}, storage);
            for (std::int64_t i = 0; i < g.size(); ++i) g[i] = roundTo(storage, 0.01f * next());
            const Tensor* d = fc.backward(g, h.ctx, true);
            if (packing && !d->packed()) QTest::qFail("the input gradient is not packed", __FILE__, __LINE__);
            out.push_back(d->toHost());
            out.push_back(fc.weight().grad.toHost());
            out.push_back(fc.bias().grad.toHost());
            setPackedBlockValues(defaultBlock);
            return out;
        };
        const auto held = runOnce(false, defaultBlock), packed = runOnce(true, 500);
        checkPackedAgainstReference(held, packed);
    }

    void flattenUsesPyTorchOrder()
    {
        Harness h;
        Flatten flatten("flatten");
        Tensor x({2, 3, 2, 2});   // (C, N, H, W)
        for (std::int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
        const Tensor& y = flatten.forward(x, h.ctx);
        QCOMPARE(y.shape(), (Shape{3, 8}));
        for (int n = 0; n < 3; ++n)
            for (int c = 0; c < 2; ++c)
                for (int p = 0; p < 4; ++p) QCOMPARE(y[n * 8 + c * 4 + p], x[(c * 3 + n) * 4 + p]);
        Tensor g = y;
        const Tensor* dx = flatten.backward(g, h.ctx, true);
        for (std::int64_t i = 0; i < x.size(); ++i) QCOMPARE((*dx)[i], x[i]);
    }

    void softmaxCrossEntropy_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<double>("tolerance");
        QTest::addRow("fp32") << "fp32" << 1e-6;
        QTest::addRow("pure-fp16 (loss emulated in fp16)") << "pure-fp16" << 5e-3;
        QTest::addRow("pure-bf16 (loss emulated in bf16)") << "pure-bf16" << 4e-2;
    }

    void softmaxCrossEntropy()
    {
        QFETCH(QString, preset);
        QFETCH(double, tolerance);
        Harness h(preset.toStdString());
        const Format s = h.recipe.compute == Format::fp32 ? Format::fp32 : h.recipe.compute;
        Rng rng{9};
        Tensor logits({4, 10});
        for (std::int64_t i = 0; i < logits.size(); ++i) logits[i] = roundTo(s, rng.uniform(-3.0f, 3.0f));
        // The loss follows the logits' format, which the last layer sets (per-layer precision).
        logits.setStorage(h.recipe.storage());
        const std::vector<std::uint8_t> labels{0, 3, 9, 3};
        SoftmaxCrossEntropy loss;
        const StepOutput out = loss.forward(logits, labels, h.ctx);
        double refLoss = 0;
        std::vector<double> refGrad(40);
        for (int n = 0; n < 4; ++n) {
            double m = -INFINITY, sum = 0;
            for (int j = 0; j < 10; ++j) m = std::max(m, double(logits[n * 10 + j]));
            for (int j = 0; j < 10; ++j) sum += std::exp(double(logits[n * 10 + j]) - m);
            refLoss += (m + std::log(sum) - logits[n * 10 + labels[n]]) / 4.0;
            for (int j = 0; j < 10; ++j)
                refGrad[n * 10 + j] = (std::exp(double(logits[n * 10 + j]) - m) / sum - (j == labels[n])) / 4.0;
        }
        QVERIFY2(std::fabs(out.loss - refLoss) <= tolerance * refLoss,
                 qPrintable(QString("loss %1, reference %2").arg(out.loss).arg(refLoss)));
        QCOMPARE(bitsOf(roundTo(s, out.loss)), bitsOf(out.loss));
        const float scale = 8.0f;
        const Tensor& grad = loss.backward(scale, h.ctx);
        QVERIFY(representable(s, grad));
        for (int i = 0; i < 40; ++i)
            QVERIFY2(std::fabs(grad[i] / scale - refGrad[i]) <= tolerance * 4 + 1e-7,
                     qPrintable(QString("grad[%1] %2, reference %3").arg(i).arg(grad[i] / scale).arg(refGrad[i])));
        if (s != Format::fp32) QCOMPARE(h.telemetry.taps().count(TapKey{"loss", TensorKind::activationGrad}), std::size_t{1});
    }

    // Label smoothing e against PyTorch's definition in double: loss = mean_n sum_j -t_j
    // log p_j with t = (1 - e) onehot + e / C, gradient (p - t) / N; fp32 and AMP (fp16 logits,
    // the loss in fp32); refused where the loss is emulated in 16 bits; evaluation unsmoothed.
    void labelSmoothingFollowsPyTorchsTargets()
    {
        for (const char* preset : {"fp32", "amp-fp16"}) {
            Harness h(preset);
            const Format s = h.recipe.storage();
            Rng rng{13};
            Tensor logits({5, 10});
            for (std::int64_t i = 0; i < logits.size(); ++i) logits[i] = roundTo(s, rng.uniform(-4.0f, 4.0f));
            logits.setStorage(s);
            const std::vector<std::uint8_t> labels{2, 0, 9, 2, 7};
            const double e = 0.1;
            h.ctx.labelSmoothing = static_cast<float>(e);
            double refLoss = 0, refPlain = 0;
            std::vector<double> refGrad(50);
            for (int n = 0; n < 5; ++n) {
                double m = -INFINITY, sum = 0;
                for (int j = 0; j < 10; ++j) m = std::max(m, double(logits[n * 10 + j]));
                for (int j = 0; j < 10; ++j) sum += std::exp(double(logits[n * 10 + j]) - m);
                for (int j = 0; j < 10; ++j) {
                    const double target = (1 - e) * (j == labels[n]) + e / 10;
                    const double logP = double(logits[n * 10 + j]) - m - std::log(sum);
                    refLoss -= target * logP / 5.0;
                    if (j == labels[n]) refPlain -= logP / 5.0;
                    refGrad[n * 10 + j] = (std::exp(logP) - target) / 5.0;
                }
            }
            SoftmaxCrossEntropy loss;
            const StepOutput out = loss.forward(logits, labels, h.ctx);
            QVERIFY2(std::fabs(out.loss - refLoss) <= 1e-6 * refLoss,
                     qPrintable(QString("%1: loss %2, reference %3").arg(preset).arg(out.loss).arg(refLoss)));
            const float scale = 64.0f;
            const Tensor& grad = loss.backward(scale, h.ctx);
            QVERIFY(representable(s, grad));
            // fp32: a few roundings of fp32; fp16: the gradient rounded once to 11 bits.
            const double tolerance = s == Format::fp32 ? 1e-6 : 1e-3;
            for (int i = 0; i < 50; ++i)
                QVERIFY2(std::fabs(grad[i] / scale - refGrad[i]) <= tolerance * (std::fabs(refGrad[i]) + 0.01),
                         qPrintable(QString("%1: grad[%2] %3, reference %4").arg(preset).arg(i)
                                        .arg(grad[i] / scale).arg(refGrad[i])));
            // Evaluation: the plain cross-entropy.
            h.ctx.training = false;
            const StepOutput plain = loss.forward(logits, labels, h.ctx);
            QVERIFY2(std::fabs(plain.loss - refPlain) <= 1e-6 * refPlain,
                     qPrintable(QString("%1: evaluation loss %2, plain reference %3").arg(preset).arg(plain.loss).arg(refPlain)));
            h.ctx.training = true;
        }
        Harness fp16("pure-fp16");
        fp16.ctx.labelSmoothing = 0.1f;
        Tensor logits({1, 10});
        logits.setStorage(Format::fp16);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, SoftmaxCrossEntropy().forward(logits, {1}, fp16.ctx));
    }

    // With fp16 compute every conv output and gradient is an fp16 value, and each rounding
    // site reports to its tap: (layer, activation), (layer, activation_grad), (layer, weight_grad).
    void fp16RoundingSitesAndTaps()
    {
        Harness h("amp-fp16");
        Rng rng{21};
        Conv2d conv("conv2", 2, 3);
        fill(conv.weight().value, rng);
        fill(conv.bias().value, rng);
        for (Parameter* p : conv.parameters()) {   // what applyRecipe does with masters on
            p->master = p->value;
            for (std::int64_t i = 0; i < p->value.size(); ++i) p->value[i] = roundTo(Format::fp16, p->value[i]);
            p->value.setStorage(Format::fp16);
        }
        Tensor x({2, 2, 4, 4});
        for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(Format::fp16, rng.uniform(-1, 1));
        x.setStorage(Format::fp16);
        const Tensor& y = conv.forward(x, h.ctx);
        QCOMPARE(y.storage(), Format::fp16);
        QVERIFY(representable(Format::fp16, y));
        Tensor dy(y.shape(), Format::fp16);
        for (std::int64_t i = 0; i < dy.size(); ++i) dy[i] = roundTo(Format::fp16, rng.uniform(-1e-5f, 1e-5f));
        const Tensor* dx = conv.backward(dy, h.ctx, true);
        QVERIFY(representable(Format::fp16, *dx));
        QVERIFY(representable(Format::fp16, conv.weight().grad));
        QVERIFY(representable(Format::fp16, conv.bias().grad));
        QCOMPARE(conv.weight().grad.storage(), Format::fp32);   // fp32 .grad beside fp32 masters
        const auto& taps = h.telemetry.taps();
        QCOMPARE(taps.at(TapKey{"conv2", TensorKind::activation}).step.count, std::uint64_t(y.size()));
        QCOMPARE(taps.at(TapKey{"conv2", TensorKind::activationGrad}).step.count, std::uint64_t(dx->size()));
        QCOMPARE(taps.at(TapKey{"conv2", TensorKind::weightGrad}).step.count, std::uint64_t(3 * 2 * 9 + 3));
        // Tiny gradients: some underflow in fp16, and the histogram (a histogram step) saw them all.
        const auto& wg = taps.at(TapKey{"conv2", TensorKind::activationGrad});
        QCOMPARE(wg.histogram.total(), wg.step.count);
    }

    void tf32TapsTheOperandRounding()
    {
        Harness h("tf32");
        Rng rng{33};
        Linear fc("fc1", 6, 4);
        fill(fc.weight().value, rng);
        Tensor x({3, 6});
        fill(x, rng);
        const Tensor& y = fc.forward(x, h.ctx);
        QCOMPARE(y.storage(), Format::fp32);
        QCOMPARE(h.telemetry.taps().at(TapKey{"fc1", TensorKind::activation}).step.count, std::uint64_t(18));
    }

    void wrongInputShapeIsAClearError()
    {
        Harness h;
        Conv2d conv("conv1", 3, 4);
        Tensor x({2, 1, 5, 5});
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, conv.forward(x, h.ctx));
        Linear fc("fc1", 5, 2);
        Tensor v({2, 4});
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fc.forward(v, h.ctx));
    }
};

QTEST_GUILESS_MAIN(TestLayers)
#include "tst_layers.moc"
