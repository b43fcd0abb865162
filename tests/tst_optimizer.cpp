// Over 500 lines: SGD and Adam in every storage, each against the same double-precision equations.
// Tests SGD and Adam against double-precision references of PyTorch's equations, the
// fp16 behaviour without master weights (eps underflow, lost updates), optimizer-state
// accounting, gradient unscaling and gradient-norm clipping.
// links: plab_optim plab_backend_cpu plab_test_support
#include "backend/backend.h"
#include "nn/layer_ops.h"
#include "numerics/bulk_round.h"
#include "numerics/format.h"
#include "numerics/simd_level.h"
#include "optim/grad_accumulation.h"
#include "optim/grad_unscale.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

using namespace plab;

namespace {

PrecisionRecipe preset(const QString& name)
{
    auto r = PrecisionRecipe::fromPreset(name.toStdString());
    if (!r) qFatal("no preset %s", qPrintable(name));
    return *r;
}

// A parameter laid out as the recipe keeps it: an fp32 master and its cast copy, or a
// single copy in the storage format.
Parameter makeParameter(const std::vector<float>& weights, const PrecisionRecipe& recipe)
{
    const Shape shape{static_cast<std::int64_t>(weights.size())};
    Parameter p;
    p.layer = "fc1";
    p.name = "weight";
    if (recipe.keepsMasterCopy()) {
        p.master = Tensor(shape, Format::fp32);
        p.value = Tensor(shape, recipe.compute);
        for (std::size_t i = 0; i < weights.size(); ++i) {
            p.master[std::int64_t(i)] = weights[i];
            p.value[std::int64_t(i)] = roundTo(recipe.compute, weights[i]);
        }
        p.grad = Tensor(shape, Format::fp32);
    } else {
        p.value = Tensor(shape, recipe.weightFormat());
        for (std::size_t i = 0; i < weights.size(); ++i)
            p.value[std::int64_t(i)] = roundTo(recipe.weightFormat(), weights[i]);
        p.grad = Tensor(shape, recipe.gradientFormat());
    }
    return p;
}

void setGrad(Parameter& p, const std::vector<float>& g)
{
    for (std::size_t i = 0; i < g.size(); ++i) p.grad[std::int64_t(i)] = roundTo(p.grad.storage(), g[i]);
}

double relativeError(const Tensor& t, const std::vector<double>& want)
{
    const std::vector<float> got = t.toHost();   // (optimizer state may be held packed)
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double d = double(got[i]) - want[i];
        diff += d * d;
        norm += want[i] * want[i];
    }
    return std::sqrt(diff / norm);
}

// PyTorch's update equations in double precision, written from torch/optim docs.
struct ReferenceOptimizer {
    std::string kind;
    double lr, momentum, beta1, beta2, eps;
    std::vector<double> w, m, v;
    int t = 0;

    void step(const std::vector<float>& g)
    {
        ++t;
        for (std::size_t i = 0; i < w.size(); ++i) {
            if (kind == "sgd") {
                m[i] = t == 1 ? g[i] : momentum * m[i] + g[i];
                w[i] -= lr * m[i];
            } else {
                m[i] = beta1 * m[i] + (1 - beta1) * g[i];
                v[i] = beta2 * v[i] + (1 - beta2) * double(g[i]) * g[i];
                const double mHat = m[i] / (1 - std::pow(beta1, t));
                const double vHat = v[i] / (1 - std::pow(beta2, t));
                w[i] -= lr * mHat / (std::sqrt(vHat) + eps);
            }
        }
    }
};

}  // namespace

class TestOptimizer : public QObject {
    Q_OBJECT
    // The optimizers run their element-wise arithmetic on a backend; the CPU one is the
    // reference these tests check against hand-written PyTorch semantics.
    std::unique_ptr<ComputeBackend> cpu_ = createCpuBackend(1);

private slots:
    // Several steps with fp32 master weights agree with the double reference to about
    // fp32 precision; the compute copy is the master rounded to the compute format.
    void matchesDoubleReference_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("recipeName");
        for (const char* kind : {"sgd", "adam"})
            for (const char* recipe : {"fp32", "tf32", "amp-fp16", "amp-bf16"})
                QTest::addRow("%s %s", kind, recipe) << kind << recipe;
    }

    void matchesDoubleReference()
    {
        QFETCH(QString, kind);
        QFETCH(QString, recipeName);
        const PrecisionRecipe recipe = preset(recipeName);
        OptimizerConfig cfg;
        cfg.kind = kind.toStdString();
        cfg.lr = kind == "sgd" ? 0.05 : 1e-3;
        auto optimizer = Optimizer::create(cfg);

        constexpr int n = 3000;   // more than one internal chunk
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> weightDist(-0.05f, 0.05f), gradDist(-1.0f, 1.0f);
        std::vector<float> w0(n);
        for (auto& x : w0) x = weightDist(rng);
        Parameter p = makeParameter(w0, recipe);
        ReferenceOptimizer ref{cfg.kind, cfg.lr, cfg.momentum, cfg.beta1, cfg.beta2, cfg.eps,
                               std::vector<double>(w0.begin(), w0.end()), std::vector<double>(n, 0.0),
                               std::vector<double>(n, 0.0)};

        for (int step = 0; step < 6; ++step) {
            std::vector<float> g(n);
            for (auto& x : g) x = gradDist(rng) * 0.1f;
            setGrad(p, g);
            optimizer->step({&p}, recipe, nullptr, *cpu_);
            ref.step(g);
        }
        QVERIFY2(relativeError(p.stored(), ref.w) < 2e-6, qPrintable(QString::number(relativeError(p.stored(), ref.w))));
        QVERIFY(relativeError(p.state1, ref.m) < 1e-5);
        if (kind == "adam") {
            QVERIFY(relativeError(p.state2, ref.v) < 1e-5);
            QCOMPARE(p.optimizerSteps, std::int64_t(6));
        }
        for (int i = 0; i < n; ++i)
            QVERIFY(p.value[i] == roundTo(recipe.compute, p.stored()[i]));
        QCOMPARE(p.lastUpdate.nonzero, std::int64_t(n));
    }

    // model.half() Adam: an element whose gradient is 0 gets m = v = 0; denom stores
    // sqrt(0)/c2 + 1e-8 in fp16, where 1e-8 (below half of 2^-24) rounds to 0; 0/0 = NaN.
    void pureFp16AdamZeroGradientGivesNaN()
    {
        QCOMPARE(roundTo(Format::fp16, 1e-8f), 0.0f);   // the reason
        const PrecisionRecipe recipe = preset("pure-fp16");
        auto adam = Optimizer::create(OptimizerConfig{});
        Parameter p = makeParameter({1.0f, 1.0f}, recipe);
        setGrad(p, {0.0f, 0.5f});
        adam->step({&p}, recipe, nullptr, *cpu_);
        QVERIFY(std::isnan(p.value[0]));
        QCOMPARE(p.lastUpdate.nonFinite, std::int64_t(1));   // counted as made non-finite
        QVERIFY(std::isfinite(p.value[1]) && p.value[1] < 1.0f);

        // The same step beside fp32 masters keeps eps and leaves the weight alone.
        const PrecisionRecipe amp = preset("amp-fp16");
        Parameter q = makeParameter({1.0f, 1.0f}, amp);
        auto adam2 = Optimizer::create(OptimizerConfig{});
        setGrad(q, {0.0f, 0.5f});
        adam2->step({&q}, amp, nullptr, *cpu_);
        QCOMPARE(q.master[0], 1.0f);
        QCOMPARE(q.lastUpdate.nonzero, std::int64_t(1));
    }

    // The first Adam step moves a weight by about lr (m_hat / sqrt(v_hat) = sign(g)),
    // SGD by lr * g. At 2048 the fp16 spacing is 2, so 2048 - 0.001 rounds back to 2048:
    // a lost update. An fp32 master (spacing 2^-12 at 2048) keeps it; at 2^24 even fp32
    // swamps it (spacing 2).
    void lostUpdates_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<float>("weight");
        QTest::addColumn<bool>("lost");
        QTest::addRow("adam pure-fp16 at 2048: lost") << "adam" << "pure-fp16" << 2048.0f << true;
        QTest::addRow("sgd pure-fp16 at 2048: lost") << "sgd" << "pure-fp16" << 2048.0f << true;
        QTest::addRow("adam pure-bf16 at 2048: lost") << "adam" << "pure-bf16" << 2048.0f << true;
        QTest::addRow("adam amp-fp16 at 2048: kept by the master") << "adam" << "amp-fp16" << 2048.0f << false;
        QTest::addRow("sgd amp-fp16 at 2048: kept by the master") << "sgd" << "amp-fp16" << 2048.0f << false;
        QTest::addRow("adam pure-fp16 at 0.5: kept") << "adam" << "pure-fp16" << 0.5f << false;
        QTest::addRow("adam fp32 at 2^24: fp32 swamps it") << "adam" << "fp32" << 16777216.0f << true;
    }

    void lostUpdates()
    {
        QFETCH(QString, kind);
        QFETCH(QString, recipe);
        QFETCH(float, weight);
        QFETCH(bool, lost);
        const PrecisionRecipe r = preset(recipe);
        OptimizerConfig cfg;
        cfg.kind = kind.toStdString();
        cfg.lr = 1e-3;
        auto optimizer = Optimizer::create(cfg);
        Parameter p = makeParameter({weight}, r);
        setGrad(p, {1.0f});
        optimizer->step({&p}, r, nullptr, *cpu_);

        QCOMPARE(p.lastUpdate.nonzero, std::int64_t(1));
        QCOMPARE(p.lastUpdate.lost, std::int64_t(lost ? 1 : 0));
        QCOMPARE(p.stored()[0] == weight, lost);
        if (r.keepsMasterCopy()) QCOMPARE(p.value[0], roundTo(r.compute, p.master[0]));
        if (!lost) QVERIFY(std::abs(double(p.stored()[0]) - (weight - 1e-3)) < 1e-3);
    }

    // Each in-place op of _single_tensor_adam rounds to the format of the tensor it writes:
    // the moments and `denom` to the optimizer state's, the weights (and the gradient as
    // read) to theirs. A scalar re-statement of that op sequence (double arithmetic,
    // roundTo after each op) gives the same bits, with the state in the weights' format
    // (model.half()) and apart from it (issue 38).
    void adamRoundsEveryOpInItsFormat_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("state");    // "" for the recipe's rule
        QTest::addColumn<int>("weights");      // the formats each op must round to
        QTest::addColumn<int>("moments");
        QTest::addRow("pure-fp16, fp16 state") << "pure-fp16" << "" << int(Format::fp16) << int(Format::fp16);
        QTest::addRow("pure-fp16, fp32 state") << "pure-fp16" << "fp32" << int(Format::fp16) << int(Format::fp32);
        QTest::addRow("pure-bf16, fp32 state") << "pure-bf16" << "fp32" << int(Format::bf16) << int(Format::fp32);
        QTest::addRow("pure-bf16, fp16 state") << "pure-bf16" << "fp16" << int(Format::bf16) << int(Format::fp16);
        QTest::addRow("amp-fp16 (fp32 master), bf16 state") << "amp-fp16" << "bf16" << int(Format::fp32)
                                                            << int(Format::bf16);
    }
    void adamRoundsEveryOpInItsFormat()
    {
        QFETCH(QString, recipe);
        QFETCH(QString, state);
        QFETCH(int, weights);
        QFETCH(int, moments);
        PrecisionRecipe r = preset(recipe);
        if (!state.isEmpty()) r.optimizerState = parseFormat(state.toStdString());
        const Format wf = static_cast<Format>(weights), sf = static_cast<Format>(moments);
        const OptimizerConfig cfg;
        auto adam = Optimizer::create(cfg);
        const std::vector<float> w0{0.75f, -3.0f, 100.0f, 1e-3f, -0.2f};
        Parameter p = makeParameter(w0, r);
        auto RW = [wf](double x) { return roundTo(wf, static_cast<float>(x)); };
        auto RS = [sf](double x) { return roundTo(sf, static_cast<float>(x)); };
        std::vector<float> w(w0.size()), m(w0.size(), 0.0f), v(w0.size(), 0.0f);
        for (std::size_t i = 0; i < w0.size(); ++i) w[i] = RW(w0[i]);

        const std::vector<std::vector<float>> grads{
            {0.5f, -2e-3f, 3.0f, 1e-4f, -0.25f}, {0.25f, 1e-3f, -1.0f, 2e-4f, 0.125f}, {-0.5f, 5e-3f, 2.0f, 0.0f, 0.0f}};
        for (int t = 1; t <= 3; ++t) {
            setGrad(p, grads[t - 1]);
            adam->step({&p}, r, nullptr, *cpu_);
            const double c1 = 1 - std::pow(cfg.beta1, t), c2 = 1 - std::pow(cfg.beta2, t);
            const float invC2Sqrt = 1.0f / float(std::sqrt(c2));
            for (std::size_t i = 0; i < w.size(); ++i) {
                const float g = RW(grads[t - 1][i]);
                m[i] = RS(double(m[i]) * float(cfg.beta1));
                m[i] = RS(double(m[i]) + double(float(1 - cfg.beta1)) * g);
                v[i] = RS(double(v[i]) * float(cfg.beta2));
                v[i] = RS(double(v[i]) + double(float(1 - cfg.beta2) * g) * g);
                float d = RS(std::sqrt(double(v[i])));
                d = RS(double(d) * invC2Sqrt);
                d = RS(double(d) + float(cfg.eps));
                const float ratio = m[i] / d;
                w[i] = RW(double(w[i]) + double(float(-cfg.lr / c1)) * ratio);
            }
        }
        QCOMPARE(p.state1.storage(), sf);
        QCOMPARE(p.state2.storage(), sf);
        const std::vector<float> m1 = p.state1.toHost(), m2 = p.state2.toHost();
        for (std::size_t i = 0; i < w.size(); ++i) {
            QCOMPARE(p.stored()[std::int64_t(i)], w[i]);
            QCOMPARE(m1[i], m[i]);
            QCOMPARE(m2[i], v[i]);
        }
    }

    // Lesson 03's cause, apart (issue 38): fp16 weights with an fp32 optimizer state keep
    // eps, so a zero gradient leaves the weight alone; with the state in fp16 the same
    // weights get 0/0 = NaN.
    void fp32StateKeepsEpsBesideFp16Weights()
    {
        PrecisionRecipe r = preset("pure-fp16");
        r.optimizerState = Format::fp32;
        auto adam = Optimizer::create(OptimizerConfig{});
        Parameter p = makeParameter({1.0f, 1.0f}, r);
        setGrad(p, {0.0f, 0.5f});
        adam->step({&p}, r, nullptr, *cpu_);
        QCOMPARE(p.value[0], 1.0f);
        QCOMPARE(p.lastUpdate.nonFinite, std::int64_t(0));
        QCOMPARE(p.value.storage(), Format::fp16);
        QCOMPARE(p.state2.storage(), Format::fp32);
        QVERIFY(std::isfinite(p.value[1]) && p.value[1] < 1.0f);
    }

    // The telemetry of the optimizer state: an element counts as flushed when the step's
    // value in double arithmetic is nonzero and the state's format stores 0, as made
    // non-finite when it was finite before and is not after. Adam in fp16 (model.half()):
    // a gradient of 1e-3 gives v = 1e-9, below half of fp16's 2^-24 (flushed; m = 1e-4 is
    // not); 1e4 gives v = 1e5, past 65504 (inf). The same with fp32 state counts neither.
    void optimizerStateFlushesAreCounted_data()
    {
        QTest::addColumn<QString>("state");
        QTest::addRow("fp16 state") << "";
        QTest::addRow("fp32 state") << "fp32";
    }
    void optimizerStateFlushesAreCounted()
    {
        QFETCH(QString, state);
        PrecisionRecipe r = preset("pure-fp16");
        if (!state.isEmpty()) r.optimizerState = parseFormat(state.toStdString());
        const Format sf = r.optimizerStateFormat();
        const OptimizerConfig cfg;
        auto adam = Optimizer::create(cfg);
        const std::vector<float> g{1e-3f, 1e4f, 0.5f, 0.0f, -2e-4f};
        Parameter p = makeParameter(std::vector<float>(g.size(), 1.0f), r);
        setGrad(p, g);
        adam->step({&p}, r, nullptr, *cpu_);
        std::int64_t flushed = 0, nonFinite = 0;
        for (float gi : g) {
            const double grad = roundTo(Format::fp16, gi);   // the gradient as fp16 weights hold it
            for (double exact : {(1 - cfg.beta1) * grad, (1 - cfg.beta2) * grad * grad}) {
                const float stored = roundDoubleTo(sf, exact);
                flushed += exact != 0.0 && stored == 0.0f;
                nonFinite += !std::isfinite(stored);
            }
        }
        QCOMPARE(p.lastUpdate.stateFlushed, flushed);
        QCOMPARE(p.lastUpdate.stateNonFinite, nonFinite);
        if (sf == Format::fp16) {
            QCOMPARE(flushed, std::int64_t(2));     // v of 1e-3 and of -2e-4
            QCOMPARE(nonFinite, std::int64_t(1));   // v of 1e4
        } else {
            QCOMPARE(flushed + nonFinite, std::int64_t(0));
        }
    }

    // SGD's buffer in its own format: the first step's clone(grad) and every later
    // mul_/add_ round to the state's format; the weights' update to theirs.
    void sgdBufferInTheStateFormat()
    {
        PrecisionRecipe r = preset("pure-bf16");
        r.optimizerState = Format::fp16;
        OptimizerConfig cfg;
        cfg.kind = "sgd";
        cfg.lr = 0.1;
        auto sgd = Optimizer::create(cfg);
        Parameter p = makeParameter({1.0f}, r);
        const float g1 = 0.1f, g2 = 1e-5f;   // 1e-5 is 0x1.4f8b58p-17: subnormal in fp16, normal in bf16
        setGrad(p, {g1});
        sgd->step({&p}, r, nullptr, *cpu_);
        float buf = roundTo(Format::fp16, roundTo(Format::bf16, g1));
        float w = roundTo(Format::bf16, std::fma(-0.1f, buf, 1.0f));
        QCOMPARE(p.state1.toHost()[0], buf);
        QCOMPARE(p.value[0], w);
        setGrad(p, {g2});
        sgd->step({&p}, r, nullptr, *cpu_);
        buf = roundTo(Format::fp16, roundTo(Format::fp16, buf * 0.9f) + roundTo(Format::bf16, g2));
        w = roundTo(Format::bf16, std::fma(-0.1f, buf, w));
        QCOMPARE(p.state1.toHost()[0], buf);
        QCOMPARE(p.value[0], w);
    }

    void stateIsCreatedLazilyAndAccounted_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<int>("stateBytes");   // for 100 elements
        QTest::addRow("adam fp32 masters: two fp32 moments") << "adam" << "amp-fp16" << 2 * 100 * 4;
        QTest::addRow("adam pure-fp16: two fp16 moments") << "adam" << "pure-fp16" << 2 * 100 * 2;
        QTest::addRow("sgd fp32: one fp32 buffer") << "sgd" << "fp32" << 100 * 4;
        QTest::addRow("sgd pure-bf16: one bf16 buffer") << "sgd" << "pure-bf16" << 100 * 2;
    }

    void stateIsCreatedLazilyAndAccounted()
    {
        QFETCH(QString, kind);
        QFETCH(QString, recipe);
        QFETCH(int, stateBytes);
        const PrecisionRecipe r = preset(recipe);
        OptimizerConfig cfg;
        cfg.kind = kind.toStdString();
        auto optimizer = Optimizer::create(cfg);
        MemoryAccountant memory;
        const auto stateIndex = static_cast<std::size_t>(MemoryCategory::optimizerState);

        Parameter withGrad = makeParameter(std::vector<float>(100, 0.5f), r);
        Parameter withoutGrad = makeParameter(std::vector<float>(100, 0.5f), r);
        withoutGrad.grad = Tensor();
        QCOMPARE(memory.snapshot().live[stateIndex], std::int64_t(0));
        setGrad(withGrad, std::vector<float>(100, 0.1f));
        optimizer->step({&withGrad, &withoutGrad}, r, &memory, *cpu_);

        QCOMPARE(memory.snapshot().live[stateIndex], std::int64_t(stateBytes));
        QCOMPARE(withoutGrad.state1.size(), std::int64_t(0));   // skipped: no grad
        QCOMPARE(withoutGrad.stored()[0], roundTo(r.storage(), 0.5f));
        QCOMPARE(withoutGrad.optimizerSteps, std::int64_t(0));
    }

    // Optimizer state of 16 bits (and Kahan's compensation of 16-bit weights) is held
    // packed, 2 bytes an element, where the backend packs (the CPU's, forced on here), and
    // the updates on it give the weights, state, compensation and counts of the same held
    // as fp32 values, bit for bit: 5,000 elements (chunks of the update and a partial one),
    // three steps of gradients spanning six decades.
    void packedStateUpdatesAsFp32Held_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("state");      // "" for the recipe's rule
        QTest::addColumn<QString>("rounding");   // of the weights' write
        QTest::addColumn<bool>("packs");         // whether the state is 16-bit
        QTest::addRow("adam pure-fp16") << "adam" << "pure-fp16" << "" << "nearest" << true;
        QTest::addRow("adam pure-bf16") << "adam" << "pure-bf16" << "" << "nearest" << true;
        QTest::addRow("adam pure-bf16, stochastic") << "adam" << "pure-bf16" << "" << "stochastic" << true;
        QTest::addRow("adam amp-fp16, bf16 state") << "adam" << "amp-fp16" << "bf16" << "nearest" << true;
        QTest::addRow("adam pure-bf16, fp32 state") << "adam" << "pure-bf16" << "fp32" << "nearest" << false;
        QTest::addRow("sgd pure-fp16") << "sgd" << "pure-fp16" << "" << "nearest" << true;
        QTest::addRow("sgd pure-bf16, stochastic") << "sgd" << "pure-bf16" << "" << "stochastic" << true;
        // Kahan's compensation, in the weights' format, held packed as the state is.
        QTest::addRow("sgd pure-bf16, kahan") << "sgd" << "pure-bf16" << "" << "kahan" << true;
        QTest::addRow("adam pure-fp16, kahan") << "adam" << "pure-fp16" << "" << "kahan" << true;
    }
    void packedStateUpdatesAsFp32Held()
    {
        QFETCH(QString, kind);
        QFETCH(QString, recipe);
        QFETCH(QString, state);
        QFETCH(QString, rounding);
        QFETCH(bool, packs);
        PrecisionRecipe r = preset(recipe);
        if (!state.isEmpty()) r.optimizerState = parseFormat(state.toStdString());
        r.updateRounding = *parseUpdateRounding(rounding.toStdString());
        OptimizerConfig cfg;
        cfg.kind = kind.toStdString();
        cfg.lr = 1e-2;
        std::mt19937 rng(7);
        std::normal_distribution<float> normal;
        std::uniform_int_distribution<int> decade(-6, 0);
        const std::size_t n = 5000;
        std::vector<float> w0(n);
        for (float& x : w0) x = normal(rng);
        std::vector<std::vector<float>> grads(3, std::vector<float>(n));
        for (auto& g : grads)
            for (float& x : g) x = normal(rng) * std::pow(10.0f, float(decade(rng)));

        struct Run {
            std::vector<float> weights, m, v, compensation;
            std::vector<UpdateCounts> counts;
            bool packed = false, compensationPacked = false;
        };
        const bool kahan = r.updateRounding == UpdateRounding::kahan;
        auto run = [&](bool packing) {
            ScopedPackedStorage scope(packing);
            auto optimizer = Optimizer::create(cfg);
            MemoryAccountant memory;
            Parameter p = makeParameter(w0, r);
            Run out;
            for (const auto& g : grads) {
                setGrad(p, g);
                optimizer->step({&p}, r, &memory, *cpu_);
                out.counts.push_back(p.lastUpdate);
            }
            out.weights = p.stored().toHost();
            out.m = p.state1.toHost();
            if (p.state2.size()) out.v = p.state2.toHost();
            out.packed = p.state1.packed();
            out.compensation = p.compensation.toHost();
            out.compensationPacked = p.compensation.packed();
            // Either way the accountant counts the state's format: 2 or 4 bytes an element
            // (and the compensation's, the weights' format).
            const auto stateIndex = static_cast<std::size_t>(MemoryCategory::optimizerState);
            const std::int64_t tensors = kind == "adam" ? 2 : 1;
            const std::int64_t bytes = tensors * formatInfo(r.optimizerStateFormat()).storageBytes +
                                       (kahan ? formatInfo(r.storage()).storageBytes : 0);
            if (memory.snapshot().live[stateIndex] != std::int64_t(n) * bytes) qFatal("state accounting");
            return out;
        };
        const Run packed = run(true), held = run(false);
        QCOMPARE(packed.packed, packs);
        QVERIFY(!held.packed);
        QVERIFY(packed.counts == held.counts);
        QVERIFY(std::memcmp(packed.weights.data(), held.weights.data(), n * sizeof(float)) == 0);
        QVERIFY(std::memcmp(packed.m.data(), held.m.data(), n * sizeof(float)) == 0);
        QCOMPARE(packed.v.size(), held.v.size());
        QVERIFY(packed.v.empty() || std::memcmp(packed.v.data(), held.v.data(), n * sizeof(float)) == 0);
        QCOMPARE(packed.compensationPacked, kahan && packs);
        QVERIFY(!held.compensationPacked);
        QCOMPARE(packed.compensation.size(), kahan ? n : std::size_t{0});
        QCOMPARE(held.compensation.size(), packed.compensation.size());
        QVERIFY(!kahan || std::memcmp(packed.compensation.data(), held.compensation.data(), n * sizeof(float)) == 0);
        // The compensation carried something: not all zeros after three steps.
        QVERIFY(!kahan || std::any_of(held.compensation.begin(), held.compensation.end(), [](float c) { return c != 0.0f; }));
        // The steps did something: updates made, some lost to the weights' format (none
        // under Kahan, whose compensation keeps what the weights could not).
        QVERIFY(held.counts.back().nonzero > 0);
        QVERIFY(r.keepsMasterCopy() || kahan || held.counts.back().lost > 0);
    }

    // The CPU backend shares an update among its threads in parts (backend/cpu/update_ops.h):
    // 70,000 elements, so that three threads take several parts, give the weights, state and
    // counts one thread gives, bit for bit, under every rounding of the weights' write
    // (stochastic rounding's random bits and Kahan's compensation are each element's own).
    void updatesInPartsMatchOneThread_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("rounding");
        for (const char* kind : {"adam", "sgd"})
            for (const char* rounding : {"nearest", "stochastic", "kahan"})
                QTest::addRow("%s %s", kind, rounding) << kind << rounding;
    }
    void updatesInPartsMatchOneThread()
    {
        QFETCH(QString, kind);
        QFETCH(QString, rounding);
        PrecisionRecipe r = preset("pure-bf16");
        r.updateRounding = *parseUpdateRounding(rounding.toStdString());
        OptimizerConfig cfg;
        cfg.kind = kind.toStdString();
        cfg.lr = 1e-2;
        std::mt19937 rng(11);
        std::normal_distribution<float> normal;
        const std::size_t n = 70000;
        std::vector<float> w0(n), g(n);
        for (float& x : w0) x = normal(rng);
        for (float& x : g) x = 1e-3f * normal(rng);
        struct Run {
            std::vector<float> weights, m, compensation;
            UpdateCounts counts;
        };
        auto run = [&](int threads) {
            auto backend = createCpuBackend(threads);
            auto optimizer = Optimizer::create(cfg);
            optimizer->setRoundingSeed(5);
            Parameter p = makeParameter(w0, r);
            Run out;
            for (int step = 0; step < 3; ++step) {
                setGrad(p, g);
                optimizer->step({&p}, r, nullptr, *backend);
                out.counts += p.lastUpdate;
            }
            out.weights = p.stored().toHost();
            out.m = p.state1.toHost();
            out.compensation = p.compensation.toHost();
            return out;
        };
        const Run one = run(1), three = run(3);
        QVERIFY(one.counts == three.counts);
        QVERIFY(std::memcmp(one.weights.data(), three.weights.data(), n * sizeof(float)) == 0);
        QVERIFY(std::memcmp(one.m.data(), three.m.data(), n * sizeof(float)) == 0);
        QCOMPARE(one.compensation.size(), three.compensation.size());
        QVERIFY(one.compensation == three.compensation);
        // The steps reach the arithmetic: bf16 weights lose small updates, or Kahan's
        // compensation keeps them.
        QVERIFY(one.counts.nonzero > 0);
        if (rounding == "kahan")
            QVERIFY(std::any_of(one.compensation.begin(), one.compensation.end(), [](float c) { return c != 0.0f; }));
        else
            QVERIFY(one.counts.lost > 0);
    }

    // A recipe change from AMP FP16 to pure FP16 re-rounds the state to fp16 (and the
    // accountant sees half the bytes); the master is rounded into the weights.
    void recipeChangeReroundsState()
    {
        PrecisionRecipe r = preset("amp-fp16");
        auto adam = Optimizer::create(OptimizerConfig{});
        MemoryAccountant memory;
        const auto stateIndex = static_cast<std::size_t>(MemoryCategory::optimizerState);
        Parameter p = makeParameter({0.3f, -0.7f, 1.1f}, r);
        setGrad(p, {1e-3f, -0.3f, 0.7f});
        adam->step({&p}, r, &memory, *cpu_);
        QCOMPARE(memory.snapshot().live[stateIndex], std::int64_t(2 * 3 * 4));
        const std::vector<float> m = p.state1.toHost();

        r = preset("pure-fp16");
        p.grad.setStorage(Format::fp16);
        setGrad(p, {0.0f, 0.0f, 0.0f});
        p.grad[0] = 1e-3f;   // nonzero so the first element stays finite
        adam->step({&p}, r, &memory, *cpu_);
        QCOMPARE(memory.snapshot().live[stateIndex], std::int64_t(2 * 3 * 2));
        QCOMPARE(p.master.size(), std::int64_t(0));
        QVERIFY(p.state1.storage() == Format::fp16);
        const std::vector<float> m1 = p.state1.toHost();
        // The first op of the step, exp_avg.mul_(beta1), started from the fp16 state.
        for (int i = 0; i < 3; ++i) {
            const float g = roundTo(Format::fp16, p.grad[i]);
            const float expectedM = roundTo(Format::fp16,
                                            float(double(roundTo(Format::fp16, roundTo(Format::fp16, m[i]) * 0.9f)) +
                                                  double(float(1 - 0.9)) * g));
            QCOMPARE(m1[std::size_t(i)], expectedM);
        }
    }

    // The optimizer brings a parameter's copies in line with the recipe when they are
    // not: FP32 needs no separate master, AMP FP16 gets one (tracked) from the weights.
    void copiesFollowTheRecipe()
    {
        MemoryAccountant memory;
        const auto masterIndex = static_cast<std::size_t>(MemoryCategory::masterWeights);
        auto sgd = Optimizer::create(OptimizerConfig{"sgd", 0.5});

        const PrecisionRecipe fp32 = preset("fp32");
        Parameter plain;
        plain.value = Tensor({2}, Format::fp32);
        plain.value.fill(1.0f);
        plain.grad = Tensor({2}, Format::fp32);
        plain.grad.fill(0.25f);
        sgd->step({&plain}, fp32, &memory, *cpu_);
        QCOMPARE(plain.master.size(), std::int64_t(0));
        QCOMPARE(plain.value[0], 1.0f - 0.5f * 0.25f);
        QCOMPARE(memory.snapshot().live[masterIndex], std::int64_t(0));

        const PrecisionRecipe amp = preset("amp-fp16");
        Parameter half;
        half.value = Tensor({2}, Format::fp16);
        half.value.fill(2048.0f);
        half.grad = Tensor({2}, Format::fp32);
        half.grad.fill(1e-3f);
        sgd->step({&half}, amp, &memory, *cpu_);
        QCOMPARE(half.master.size(), std::int64_t(2));
        QCOMPARE(memory.snapshot().live[masterIndex], std::int64_t(2 * 4));
        QVERIFY(half.master[0] < 2048.0f);   // 2048 - 5e-4 is representable in fp32
        QCOMPARE(half.value[0], roundTo(Format::fp16, half.master[0]));
    }

    void createRejectsBadConfig()
    {
        OptimizerConfig cfg;
        cfg.kind = "rmsprop";
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Optimizer::create(cfg));
        cfg.kind = "adam";
        cfg.lr = -1;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Optimizer::create(cfg));
        cfg.lr = 1e-3;
        cfg.beta2 = 1.0;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Optimizer::create(cfg));
        cfg = OptimizerConfig{};
        cfg.kind = "sgd";
        cfg.momentum = -0.5;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Optimizer::create(cfg));

        auto sgd = Optimizer::create(OptimizerConfig{"sgd", 0.1});
        QCOMPARE(sgd->learningRate(), 0.1);
        sgd->setLearningRate(0.01);
        QCOMPARE(sgd->learningRate(), 0.01);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 sgd->setLearningRate(std::numeric_limits<double>::quiet_NaN()));
    }

    void unscaleFindsNonFinite_data()
    {
        QTest::addColumn<float>("bad");
        QTest::addRow("inf") << std::numeric_limits<float>::infinity();
        QTest::addRow("-inf") << -std::numeric_limits<float>::infinity();
        QTest::addRow("NaN") << std::numeric_limits<float>::quiet_NaN();
    }

    void unscaleFindsNonFinite()
    {
        QFETCH(float, bad);
        const PrecisionRecipe r = preset("amp-fp16");
        Parameter a = makeParameter({1, 2, 3}, r), b = makeParameter({1, 2}, r);
        setGrad(a, {1024.0f, 2048.0f, 4096.0f});
        setGrad(b, {8.0f, 16.0f});
        b.grad[1] = bad;
        const UnscaleResult result = unscaleGradients({&a, &b}, 1.0f / 1024, r, *cpu_);
        QVERIFY(result.foundNonFinite);
        QCOMPARE(a.grad[0], 1024.0f);   // left as they were: the step is skipped
    }

    // Unscaling multiplies in fp32 by float(1/double(S)); S = 3 is not a power of two,
    // so the product rounds. Without masters the fp16 gradient is rounded once more.
    void unscaleMultipliesByInverseScale_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<double>("scale");
        QTest::addRow("amp-fp16, S 65536") << "amp-fp16" << 65536.0;
        QTest::addRow("amp-fp16, S 3") << "amp-fp16" << 3.0;
        QTest::addRow("pure-fp16, S 3") << "pure-fp16" << 3.0;
        QTest::addRow("pure-bf16, S 1000") << "pure-bf16" << 1000.0;
    }

    void unscaleMultipliesByInverseScale()
    {
        QFETCH(QString, recipe);
        QFETCH(double, scale);
        const PrecisionRecipe r = preset(recipe);
        const float invScale = static_cast<float>(1.0 / scale);
        const std::vector<float> scaled{60000.0f, -3.0f, 0.1f, 7.0e-5f, 0.0f, 1234.5f};
        Parameter p = makeParameter(std::vector<float>(scaled.size(), 0.0f), r);
        setGrad(p, scaled);
        std::vector<float> stored(scaled.size());
        for (std::size_t i = 0; i < scaled.size(); ++i) stored[i] = p.grad[std::int64_t(i)];

        const UnscaleResult result = unscaleGradients({&p}, invScale, r, *cpu_);
        QVERIFY(!result.foundNonFinite);
        for (std::size_t i = 0; i < scaled.size(); ++i) {
            // A product of two floats is exact in double; one rounding to float follows.
            float expected = static_cast<float>(double(stored[i]) * double(invScale));
            if (!r.masterWeights) expected = roundTo(r.storage(), expected);
            QCOMPARE(p.grad[std::int64_t(i)], expected);
        }
    }

    void clipGradNormByHand()
    {
        const PrecisionRecipe r = preset("fp32");
        Parameter a = makeParameter({0, 0}, r), b = makeParameter({0}, r);
        // ||(3, 4, 12)|| = 13
        setGrad(a, {3.0f, 4.0f});
        setGrad(b, {12.0f});
        QCOMPARE(clipGradNorm({&a, &b}, 20.0, *cpu_), 13.0);   // 20 / 13 >= 1: untouched
        QCOMPARE(a.grad[0], 3.0f);

        QCOMPARE(clipGradNorm({&a, &b}, 6.5, *cpu_), 13.0);   // coefficient 6.5 / (13 + 1e-6) ~ 1/2
        QVERIFY(std::abs(a.grad[0] - 1.5f) < 1e-6f);
        QVERIFY(std::abs(a.grad[1] - 2.0f) < 1e-6f);
        QVERIFY(std::abs(b.grad[0] - 6.0f) < 1e-6f);
        QVERIFY(a.grad[1] < 2.0f);   // the 1e-6 makes the coefficient just below 1/2

        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, clipGradNorm({&a}, 0.0, *cpu_));
    }

    // Issue 38 (lesson 15): clipping before unscaling measures S times the true norm. With
    // S = 1024 and true gradients (3, 4, 12), norm 13: clipped to 6.5 after unscaling they
    // halve; clipped to 6.5 before it, the coefficient is 6.5 / (13 * 1024 + 1e-6) and the
    // unscaled gradients end 2048 times smaller than the true ones.
    void clipBeforeOrAfterUnscaling()
    {
        const PrecisionRecipe r = preset("fp32");
        const float S = 1024.0f;
        for (const ClipAt at : {ClipAt::unscaled, ClipAt::scaled}) {
            Parameter a = makeParameter({0, 0}, r), b = makeParameter({0}, r);
            setGrad(a, {3.0f * S, 4.0f * S});
            setGrad(b, {12.0f * S});
            const UnscaleResult result = unscaleAndClip({&a, &b}, 1.0f / S, r, 6.5, at, *cpu_);
            QVERIFY(!result.foundNonFinite);
            const double coefficient = at == ClipAt::unscaled ? 6.5 / (13.0 + 1e-6) : 6.5 / (13.0 * S + 1e-6);
            const float expected[3] = {3.0f, 4.0f, 12.0f};
            const float got[3] = {a.grad[0], a.grad[1], b.grad[0]};
            for (int i = 0; i < 3; ++i)
                QVERIFY2(std::abs(double(got[i]) - expected[i] * coefficient) <= 1e-6 * expected[i] * coefficient + 1e-12,
                         qPrintable(QString("%1 %2: %3 vs %4").arg(QString::fromLatin1(clipAtName(at).data())).arg(i)
                                        .arg(double(got[i])).arg(expected[i] * coefficient)));
        }
        // Off (a limit of 0): only the unscale.
        Parameter c = makeParameter({0}, r);
        setGrad(c, {5.0f * S});
        unscaleAndClip({&c}, 1.0f / S, r, 0.0, ClipAt::scaled, *cpu_);
        QCOMPARE(c.grad[0], 5.0f);
        // A non-finite scaled gradient: nothing is clipped, the unscale reports it.
        Parameter d = makeParameter({0, 0}, r);
        setGrad(d, {INFINITY, 1.0f});
        QVERIFY(unscaleAndClip({&d}, 1.0f / S, r, 1.0, ClipAt::scaled, *cpu_).foundNonFinite);
    }

    // Issue 33's schedules, against values worked by hand from their definitions: a linear
    // warm-up base * (s + 1) / W, then base, or base (1 + cos(pi f)) / 2 over the rest.
    void scheduledLrFollowsItsDefinition()
    {
        const double base = 0.002;
        const LrSchedule none;
        QVERIFY(!none.varies());
        QCOMPARE(scheduledLr(base, none, 0, 100), base);
        QCOMPARE(scheduledLr(base, none, 99, 100), base);

        const LrSchedule warm{LrShape::constant, 4};
        QVERIFY(warm.varies());
        QCOMPARE(scheduledLr(base, warm, 0, 100), 0.0005);   // 1/4
        QCOMPARE(scheduledLr(base, warm, 2, 100), 0.0015);   // 3/4
        QCOMPARE(scheduledLr(base, warm, 3, 100), base);     // the last warm-up step reaches it
        QCOMPARE(scheduledLr(base, warm, 500, 100), base);   // past the plan: still held

        // Cosine after 10 warm-up steps over 110: the rest is 100 steps long.
        const LrSchedule cosine{LrShape::cosine, 10};
        QCOMPARE(scheduledLr(base, cosine, 9, 110), base);
        QCOMPARE(scheduledLr(base, cosine, 10, 110), base);              // f = 0: cos 0 = 1
        QVERIFY(std::abs(scheduledLr(base, cosine, 60, 110) - 0.001) < 1e-18);   // f = 1/2: half
        QVERIFY(std::abs(scheduledLr(base, cosine, 35, 110) - base * (2 + std::sqrt(2.0)) / 4) < 1e-18);   // f = 1/4
        QVERIFY(std::abs(scheduledLr(base, cosine, 85, 110) - base * (2 - std::sqrt(2.0)) / 4) < 1e-18);   // f = 3/4
        QCOMPARE(scheduledLr(base, cosine, 110, 110), 0.0);   // f = 1 and past it: 0
        QCOMPARE(scheduledLr(base, cosine, 200, 110), 0.0);
        // Without warm-up, the first step takes the base rate; a plan no longer than the
        // warm-up ends at the base rate (the cosine over at least one step).
        QCOMPARE(scheduledLr(base, LrSchedule{LrShape::cosine, 0}, 0, 50), base);
        QCOMPARE(scheduledLr(base, LrSchedule{LrShape::cosine, 8}, 7, 8), base);
        QCOMPARE(scheduledLr(base, LrSchedule{LrShape::cosine, 8}, 8, 8), base);   // the rest counted as 1 step
        QCOMPARE(scheduledLr(base, LrSchedule{LrShape::cosine, 8}, 9, 8), 0.0);
        // Names both ways; anything else refused.
        for (const LrShape shape : {LrShape::constant, LrShape::cosine})
            QCOMPARE(parseLrShape(lrShapeName(shape)), std::optional<LrShape>(shape));
        QVERIFY(!parseLrShape("linear"));
    }
    // Gradient accumulation against IEEE addition in the buffer's format: each part's
    // gradient rounded to the format, then added in it with one rounding of the exact sum (a
    // sum of two fp16 values, or of two bf16 values within 2^40 of each other, is exact in
    // double; roundDoubleTo is checked against the formats' definitions elsewhere).
    void accumulationIsAdditionInTheBuffersFormat()
    {
        std::mt19937 rng(7);
        std::uniform_real_distribution<double> exponent(-20.0, 10.0);
        std::bernoulli_distribution negative(0.5);
        const auto draw = [&] {
            const double v = std::exp2(exponent(rng));
            return static_cast<float>(negative(rng) ? -v : v);
        };
        // On every bulk-rounding path this CPU has (the higher ones capped off in turn).
        for (const SimdLevel level : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512})
        for (const Format f : {Format::fp16, Format::bf16, Format::fp32}) {
            const ScopedSimdCap cap(level);
            constexpr int kN = 4096;
            std::vector<float> buffer(kN), first(kN), grad(kN), expected(kN);
            for (int i = 0; i < kN; ++i) first[i] = draw();
            QCOMPARE(accumulateGradient(buffer.data(), first.data(), kN, f, true).nonzero, std::int64_t(0));
            for (int i = 0; i < kN; ++i) QCOMPARE(buffer[i], roundDoubleTo(f, first[i]));
            for (int part = 0; part < 3; ++part) {
                std::int64_t lost = 0, nonzero = 0;
                for (int i = 0; i < kN; ++i) {
                    grad[i] = i % 97 == 0 ? 0.0f : draw();
                    const double exact = double(buffer[i]) + double(roundDoubleTo(f, grad[i]));
                    expected[i] = f == Format::fp32 ? static_cast<float>(double(buffer[i]) + double(grad[i]))
                                                    : roundDoubleTo(f, exact);
                    if (grad[i] != 0.0f) {
                        ++nonzero;
                        if (expected[i] == buffer[i]) ++lost;
                    }
                }
                const AccumulationCounts c = accumulateGradient(buffer.data(), grad.data(), kN, f, false);
                for (int i = 0; i < kN; ++i)
                    QVERIFY2(buffer[i] == expected[i],
                             qPrintable(QString("%1 (%2): element %3, %4")
                                            .arg(QString::fromLatin1(formatName(f).data()), QString::fromLatin1(bulkRoundPath()))
                                            .arg(i)
                                            .arg(buffer[i])));
                QCOMPARE(c.nonzero, nonzero);
                QCOMPARE(c.lost, lost);
            }
        }
        // A contribution below half the sum's spacing is lost: 1 + 2^-12 is 1 in fp16 (spacing
        // 2^-10 there), not in fp32; one of 2^-11 ties to even, 1 again.
        float one = 1.0f;
        const float small[] = {std::ldexp(1.0f, -12)};
        AccumulationCounts c = accumulateGradient(&one, small, 1, Format::fp16, false);
        QCOMPARE(one, 1.0f);
        QCOMPARE(c.lost, std::int64_t(1));
        const float tie[] = {std::ldexp(1.0f, -11)};
        QCOMPARE(accumulateGradient(&one, tie, 1, Format::fp16, false).lost, std::int64_t(1));
        QCOMPARE(one, 1.0f);
        c = accumulateGradient(&one, small, 1, Format::fp32, false);
        QCOMPARE(one, 1.0f + std::ldexp(1.0f, -12));
        QCOMPARE(c.lost, std::int64_t(0));
        // Parts differ by at most one sample; never more parts than samples.
        QCOMPARE(accumulationParts(10, 4), std::int64_t(4));
        std::vector<std::int64_t> sizes;
        for (std::int64_t k = 0; k < 4; ++k) sizes.push_back(accumulationPartStart(10, 4, k + 1) - accumulationPartStart(10, 4, k));
        QCOMPARE(sizes, (std::vector<std::int64_t>{2, 3, 2, 3}));
        QCOMPARE(accumulationParts(2, 4), std::int64_t(2));
        QCOMPARE(accumulationParts(5, 1), std::int64_t(1));
    }
};

QTEST_GUILESS_MAIN(TestOptimizer)
#include "tst_optimizer.moc"
