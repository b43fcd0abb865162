// Tests update rounding, the remedies for 16-bit weights without master weights (issue 38):
// stochastic rounding against its definition computed in double for every format, its
// expectation, its random bits' independence from the order of the parameters; the
// Kahan-compensated update against an op-by-op reference; what each keeps of updates far
// below the weights' spacing; the compensation buffer in the memory accounting.
// links: plab_optim plab_backend_cpu plab_test_support
#include "backend/backend.h"
#include "numerics/format.h"
#include "numerics/update_rounding.h"
#include "optim/optimizer.h"

#include <QTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

using namespace plab;
namespace ur = plab::update_rounding;

namespace {

// Stochastic rounding by its definition, in double: the format's spacing at |x| (its
// significand bits below the leading one, its smallest normal exponent), the neighbour
// nearer zero and the distance from it in units of the spacing; up when r / 2^32 is below
// that distance. Past the largest finite value the next power of two stands for overflow.
float stochasticReference(Format f, float x, std::uint32_t r)
{
    if (f == Format::fp32 || !std::isfinite(x) || x == 0.0f) return x;
    const FormatInfo info = formatInfo(f);
    const int minNormalExponent = f == Format::fp16 ? -14 : -126;
    const double overflow = f == Format::fp16 ? 65536.0 : std::ldexp(1.0, 128);
    const double a = std::fabs(static_cast<double>(x));
    if (a >= overflow) return std::copysign(std::numeric_limits<float>::infinity(), x);
    const int exponent = std::max(std::ilogb(a), minNormalExponent);
    const double spacing = std::ldexp(1.0, exponent - info.mantissaBits);
    const double lower = std::floor(a / spacing) * spacing;
    const double distance = (a - lower) / spacing;   // exact: a power-of-two division
    const bool up = static_cast<double>(r) < distance * 4294967296.0;
    double result = up ? lower + spacing : lower;
    if (result >= overflow) result = std::numeric_limits<double>::infinity();
    return static_cast<float>(std::copysign(result, static_cast<double>(x)));
}

PrecisionRecipe withRounding(const char* presetName, UpdateRounding rounding)
{
    PrecisionRecipe r = *PrecisionRecipe::fromPreset(presetName);
    r.updateRounding = rounding;
    return r;
}

// A parameter stored as the recipe keeps it without a master copy: one tensor of n
// weights `w0` in the storage format, and its gradient.
Parameter storedParameter(const std::string& layer, std::int64_t n, float w0, const PrecisionRecipe& recipe)
{
    Parameter p;
    p.layer = layer;
    p.name = "weight";
    p.value = Tensor(Shape{n}, recipe.weightFormat());
    p.grad = Tensor(Shape{n}, recipe.gradientFormat());
    for (std::int64_t i = 0; i < n; ++i) p.value[i] = roundTo(recipe.weightFormat(), w0);
    return p;
}

OptimizerConfig plainSgd(double lr)
{
    OptimizerConfig cfg;
    cfg.kind = "sgd";
    cfg.lr = lr;
    cfg.momentum = 0.0;
    return cfg;
}

}  // namespace

class TestUpdateRounding : public QObject {
    Q_OBJECT
    std::unique_ptr<ComputeBackend> cpu_ = createCpuBackend(1);

private slots:
    // Every fp32 exponent, the formats' boundaries (subnormals, fp16's 2^-24 and 65504 to
    // 65536, bf16's largest value), zeros, inf and NaN, each with random bits at the ends
    // of their range and between: the bits equal the definition's.
    void stochasticRoundingFollowsItsDefinition_data()
    {
        QTest::addColumn<int>("format");
        for (Format f : {Format::bf16, Format::fp16, Format::tf32, Format::fp32})
            QTest::addRow("%s", std::string(formatName(f)).c_str()) << static_cast<int>(f);
    }
    void stochasticRoundingFollowsItsDefinition()
    {
        QFETCH(int, format);
        const auto f = static_cast<Format>(format);
        std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f, 1.0f + 0x1p-10f, std::ldexp(1.0f, -24), std::ldexp(1.5f, -25),
                                 std::ldexp(3.0f, -26), std::ldexp(1.0f, -14) - std::ldexp(1.0f, -30),
                                 std::ldexp(0.75f, -40), std::ldexp(1.0f, -60), std::ldexp(1.0f, -149),
                                 std::ldexp(1.0f, -126) * 0.75f, 65504.0f, 65519.0f, 65520.0f, 65535.99f, 65536.0f,
                                 -70000.0f, 1e10f, std::numeric_limits<float>::max(),
                                 std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN()};
        std::mt19937 rng(7);
        for (int i = 0; i < 20000; ++i) xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
        const std::vector<std::uint32_t> fixed = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
        int ups = 0, downs = 0;
        for (const float x : xs) {
            std::vector<std::uint32_t> rs = fixed;
            for (int k = 0; k < 4; ++k) rs.push_back(static_cast<std::uint32_t>(rng()));
            for (const std::uint32_t r : rs) {
                const float got = std::bit_cast<float>(ur::stochasticRoundBits(format, std::bit_cast<std::uint32_t>(x), r));
                const float want = stochasticReference(f, x, r);
                if (std::isnan(want)) {
                    QVERIFY2(std::isnan(got), qPrintable(QString("x %1 r %2").arg(double(x)).arg(r)));
                    continue;
                }
                QVERIFY2(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want),
                         qPrintable(QString("x %1 r %2: got %3, want %4").arg(double(x), 0, 'g', 10).arg(r)
                                        .arg(double(got), 0, 'g', 10).arg(double(want), 0, 'g', 10)));
                if (f != Format::fp32 && std::isfinite(x) && got != roundTo(f, x)) ++(std::fabs(got) > std::fabs(x) ? ups : downs);
            }
            // The result is always one of the two neighbours: round-to-nearest's or the other.
            if (f != Format::fp32 && std::isfinite(x) && std::isfinite(roundTo(f, x)))
                QVERIFY(roundTo(f, stochasticReference(f, x, 12345u)) == stochasticReference(f, x, 12345u));
        }
        // Stochastic rounding differs from nearest both ways on these data.
        if (f != Format::fp32) QVERIFY(ups > 0 && downs > 0);
    }

    // Its expectation is x: over 200,000 elements with their own bits, the share rounded up
    // is the distance (5 standard deviations), in bf16's normal range, fp16's subnormal
    // range and tf32's; and for one element over 20,000 steps of keys.
    void stochasticRoundingIsUnbiased_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<float>("x");
        QTest::addColumn<double>("distance");
        QTest::addRow("bf16 1 + 2^-10") << int(Format::bf16) << 1.0f + 0x1p-10f << 0.125;
        QTest::addRow("bf16 -3 - 5 * 2^-9") << int(Format::bf16) << -(3.0f + 5 * 0x1p-9f) << 0.625;
        QTest::addRow("fp16 0.3 * 2^-24") << int(Format::fp16) << float(0.3 * 0x1p-24) << double(float(0.3 * 0x1p-24)) * 0x1p24;
        QTest::addRow("tf32 1 + 3 * 2^-12") << int(Format::tf32) << 1.0f + 3 * 0x1p-12f << 0.75;
    }
    void stochasticRoundingIsUnbiased()
    {
        QFETCH(int, format);
        QFETCH(float, x);
        QFETCH(double, distance);
        const auto f = static_cast<Format>(format);
        const float lower = stochasticReference(f, x, 0xFFFFFFFFu);   // the neighbour nearer zero
        const auto upShare = [&](auto bitsOf, int n) {
            int up = 0;
            for (int i = 0; i < n; ++i)
                up += std::bit_cast<float>(ur::stochasticRoundBits(format, std::bit_cast<std::uint32_t>(x), bitsOf(i))) != lower;
            return double(up) / n;
        };
        const std::uint64_t key = ur::stepKey(1, 0, 42);
        const double acrossElements = upShare([&](int i) { return ur::randomBits(key, std::uint64_t(i)); }, 200000);
        const double acrossSteps = upShare([](int t) { return ur::randomBits(ur::stepKey(1, std::uint64_t(t), 42), 7); }, 20000);
        QVERIFY2(std::fabs(acrossElements - distance) < 5 * std::sqrt(distance * (1 - distance) / 200000),
                 qPrintable(QString("%1 up, want %2").arg(acrossElements).arg(distance)));
        QVERIFY2(std::fabs(acrossSteps - distance) < 5 * std::sqrt(distance * (1 - distance) / 20000),
                 qPrintable(QString("%1 up, want %2").arg(acrossSteps).arg(distance)));
    }

    // Kahan-compensated SGD with momentum on bf16 weights, op by op: the buffer in the
    // state's format, then comp += -lr * buf, w += comp, comp += (w_before - w), each op in
    // fp32 rounded to the weights' format when it writes.
    void kahanMatchesOpByOpReference_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addRow("pure-bf16") << "pure-bf16";
        QTest::addRow("pure-fp16") << "pure-fp16";
    }
    void kahanMatchesOpByOpReference()
    {
        QFETCH(QString, recipe);
        const PrecisionRecipe r = withRounding(qPrintable(recipe), UpdateRounding::kahan);
        const Format wf = r.weightFormat(), sf = r.optimizerStateFormat();
        OptimizerConfig cfg = plainSgd(0.01);
        cfg.momentum = 0.9;
        auto sgd = Optimizer::create(cfg);
        const std::vector<float> w0{0.75f, -3.0f, 100.0f, 1e-3f, -0.2f};
        Parameter p = storedParameter("fc1", 5, 0.0f, r);
        for (std::int64_t i = 0; i < 5; ++i) p.value[i] = roundTo(wf, w0[std::size_t(i)]);
        auto RW = [wf](double x) { return roundTo(wf, static_cast<float>(x)); };
        auto RS = [sf](double x) { return roundTo(sf, static_cast<float>(x)); };
        std::vector<float> w(5), buf(5, 0.0f), comp(5, 0.0f);
        for (std::size_t i = 0; i < 5; ++i) w[i] = RW(w0[i]);
        const float negLr = static_cast<float>(-cfg.lr);
        const std::vector<std::vector<float>> grads{
            {0.5f, -2e-3f, 3.0f, 1e-4f, -0.25f}, {0.25f, 1e-3f, -1.0f, 2e-4f, 0.125f}, {-0.5f, 5e-3f, 2.0f, 0.0f, 0.0f}};
        for (std::size_t t = 0; t < grads.size(); ++t) {
            for (std::int64_t i = 0; i < 5; ++i) p.grad[i] = roundTo(wf, grads[t][std::size_t(i)]);
            sgd->step({&p}, r, nullptr, *cpu_);
            for (std::size_t i = 0; i < 5; ++i) {
                const float g = RW(grads[t][i]);
                buf[i] = t == 0 ? RS(g) : RS(double(RS(double(buf[i]) * float(cfg.momentum))) + g);
                const float before = w[i];
                const float owed = RW(double(comp[i]) + double(negLr) * buf[i]);
                w[i] = RW(double(before) + owed);
                comp[i] = RW(double(owed) + RW(double(before) - w[i]));
            }
        }
        QCOMPARE(p.compensation.storage(), wf);
        // Bit for bit (QCOMPARE on floats would be a fuzzy comparison).
        // The state and the compensation may be held packed (16-bit storage, packing on).
        const std::vector<float> state = p.state1.toHost(), compensation = p.compensation.toHost();
        for (std::int64_t i = 0; i < 5; ++i) {
            QCOMPARE(bitsOf(p.value[i]), bitsOf(w[std::size_t(i)]));
            QCOMPARE(bitsOf(compensation[std::size_t(i)]), bitsOf(comp[std::size_t(i)]));
            QCOMPARE(bitsOf(state[std::size_t(i)]), bitsOf(buf[std::size_t(i)]));
        }
        // The data leave something in the compensation: the test reaches its arithmetic.
        QVERIFY(std::any_of(comp.begin(), comp.end(), [](float c) { return c != 0.0f; }));
    }

    // An update of 2^-12 on bf16 weights of 1 (spacing 2^-7 there, so round-to-nearest
    // loses it) 512 times: the exact sum is 1.125. Nearest stays at 1 and counts every
    // update lost; Kahan keeps the whole sum in weights + compensation and loses nothing;
    // stochastic rounding's mean over 1,000 weights is 1.125 within 5 standard deviations.
    void tinyUpdatesAddUp_data()
    {
        QTest::addColumn<int>("rounding");
        QTest::addRow("nearest") << int(UpdateRounding::nearest);
        QTest::addRow("stochastic") << int(UpdateRounding::stochastic);
        QTest::addRow("kahan") << int(UpdateRounding::kahan);
    }
    void tinyUpdatesAddUp()
    {
        QFETCH(int, rounding);
        const auto mode = static_cast<UpdateRounding>(rounding);
        const PrecisionRecipe r = withRounding("pure-bf16", mode);
        auto sgd = Optimizer::create(plainSgd(0x1p-10));
        sgd->setRoundingSeed(3);
        const std::int64_t n = 1000;
        Parameter p = storedParameter("fc1", n, 1.0f, r);
        std::int64_t lost = 0, nonzero = 0;
        for (int t = 0; t < 512; ++t) {
            for (std::int64_t i = 0; i < n; ++i) p.grad[i] = -0.25f;   // -lr * g = 2^-12
            sgd->step({&p}, r, nullptr, *cpu_);
            lost += p.lastUpdate.lost;
            nonzero += p.lastUpdate.nonzero;
        }
        QCOMPARE(nonzero, 512 * n);
        double mean = 0.0;
        for (std::int64_t i = 0; i < n; ++i) mean += p.value[i];
        mean /= double(n);
        switch (mode) {
        case UpdateRounding::nearest:
            QVERIFY(mean == 1.0);   // exactly: every update lost
            QCOMPARE(lost, nonzero);
            break;
        case UpdateRounding::kahan: {
            const std::vector<float> compensation = p.compensation.toHost();   // may be held packed
            for (std::int64_t i = 0; i < n; ++i) {
                QVERIFY(double(p.value[i]) + double(compensation[std::size_t(i)]) == 1.125);   // exactly
                QVERIFY(std::fabs(p.value[i] - 1.125f) <= 0x1p-7f);
            }
            QCOMPARE(lost, std::int64_t(0));
            break;
        }
        case UpdateRounding::stochastic: {
            // Each step moves a weight up one spacing (2^-7) with probability 2^-12 / 2^-7.
            const double p1 = 1.0 / 32, sdOfMean = 0x1p-7 * std::sqrt(512 * p1 * (1 - p1) / double(n));
            QVERIFY2(std::fabs(mean - 1.125) < 5 * sdOfMean, qPrintable(QString("mean %1").arg(mean, 0, 'g', 8)));
            // Most single writes still round down: the lost share stays near 31/32.
            QVERIFY(std::fabs(double(lost) / double(nonzero) - 31.0 / 32) < 0.01);
            break;
        }
        }
    }

    // The random bits follow the seed, each parameter's own update count and its name, not
    // the order the optimizer meets the parameters in: the same seed gives the same
    // weights whatever the order; another seed other weights.
    void stochasticBitsFollowSeedAndName()
    {
        const PrecisionRecipe r = withRounding("pure-bf16", UpdateRounding::stochastic);
        const auto run = [&](std::uint64_t seed, bool reversed) {
            auto sgd = Optimizer::create(plainSgd(0x1p-10));
            sgd->setRoundingSeed(seed);
            Parameter a = storedParameter("conv1", 300, 1.0f, r), b = storedParameter("fc1", 300, 1.0f, r);
            for (int t = 0; t < 20; ++t) {
                for (Parameter* p : {&a, &b})
                    for (std::int64_t i = 0; i < 300; ++i) p->grad[i] = -0.25f;
                if (reversed)
                    sgd->step({&b, &a}, r, nullptr, *cpu_);
                else
                    sgd->step({&a, &b}, r, nullptr, *cpu_);
            }
            std::vector<float> out;
            for (const Parameter* p : {&a, &b})
                for (std::int64_t i = 0; i < 300; ++i) out.push_back(p->value[i]);
            return out;
        };
        const std::vector<float> first = run(5, false);
        QVERIFY(first == run(5, true));
        QVERIFY(first != run(6, false));
        // conv1 and fc1 drew different bits.
        QVERIFY(!std::equal(first.begin(), first.begin() + 300, first.begin() + 300));
    }

    // Kahan's compensation is one more tensor in the weights' format, counted with the
    // optimizer state (beside SGD's buffer), made by prepareState too (the memory
    // footprint before a run) and dropped when the recipe leaves Kahan.
    void compensationIsAccountedAsOptimizerState()
    {
        const PrecisionRecipe kahan = withRounding("pure-bf16", UpdateRounding::kahan);
        OptimizerConfig cfg = plainSgd(0.01);
        cfg.momentum = 0.9;
        auto sgd = Optimizer::create(cfg);
        const auto state = static_cast<std::size_t>(MemoryCategory::optimizerState);

        MemoryAccountant before;
        Parameter planned = storedParameter("fc1", 100, 0.5f, kahan);
        sgd->prepareState({&planned}, kahan, &before, *cpu_);
        QCOMPARE(before.snapshot().live[state], std::int64_t(2 * 100 * 2));   // buffer + compensation, bf16

        MemoryAccountant memory;
        Parameter p = storedParameter("fc1", 100, 0.5f, kahan);
        for (std::int64_t i = 0; i < 100; ++i) p.grad[i] = 0.1f;
        sgd->step({&p}, kahan, &memory, *cpu_);
        QCOMPARE(memory.snapshot().live[state], std::int64_t(2 * 100 * 2));
        sgd->step({&p}, withRounding("pure-bf16", UpdateRounding::nearest), &memory, *cpu_);
        QCOMPARE(p.compensation.size(), std::int64_t(0));
        QCOMPARE(memory.snapshot().live[state], std::int64_t(100 * 2));
    }
};

QTEST_GUILESS_MAIN(TestUpdateRounding)
#include "tst_update_rounding.moc"
