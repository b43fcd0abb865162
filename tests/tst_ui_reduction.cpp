// Tests the charts' pure arithmetic: min/max per pixel column reduction (extrema kept,
// bounded size, exact passthrough, empty / one point / NaN), the smoothing, the format
// regions and their shares over a histogram (fp16 by hand), underflow fractions, and the
// batch-size planner against hand arithmetic.
// run_data.h (through underflow_chart.h) first: engine/train/trainer.h names a member emit(),
// which Qt's emit macro would break once a Qt header came before it.
#include "charts/underflow_chart.h"
#include "train/memory_check.h"
#include "train/settings.h"
#include "telemetry/format_regions.h"
#include "charts/series_reduction.h"
#include "report/smoothing.h"

#include <QTest>

#include <cmath>
#include <limits>
#include <random>

using namespace plab;
using namespace plab::ui;

class TestUiReduction : public QObject {
    Q_OBJECT
private slots:
    void emptyAndSinglePoint();
    void shortSeriesPassesThroughExactly();
    void nanLossesAreSkipped();
    void longSeriesIsBoundedAndKeepsExtrema_data();
    void longSeriesIsBoundedAndKeepsExtrema();
    void smoothing();
    void fp16RegionBoundaries_data();
    void fp16RegionBoundaries();
    void fp16RegionSharesByHand();
    void underflowFractionExcludesZerosAndNonFinite();
    void parameterBytesPerRecipe_data();
    void parameterBytesPerRecipe();
    void plannerArithmeticByHand();
    void plannerForASmallModel();
};

void TestUiReduction::emptyAndSinglePoint()
{
    QVERIFY(reduceMinMaxPerColumn(std::span<const QPointF>{}, 100).isEmpty());
    const QPointF one[] = {{3.0, 0.5}};
    QCOMPARE(reduceMinMaxPerColumn(one, 100), QList<QPointF>{QPointF(3.0, 0.5)});
    QCOMPARE(reduceMinMaxPerColumn(one, 0), QList<QPointF>{QPointF(3.0, 0.5)});   // columns < 1 act as 1
}

void TestUiReduction::shortSeriesPassesThroughExactly()
{
    std::vector<QPointF> points;
    for (int i = 0; i < 400; ++i) points.emplace_back(i, std::sin(i * 0.1));
    const QList<QPointF> out = reduceMinMaxPerColumn(points, 100);   // 400 = 4 per column: kept
    QCOMPARE(out.size(), qsizetype(400));
    for (int i = 0; i < 400; ++i) QCOMPARE(out[i], points[static_cast<std::size_t>(i)]);
}

void TestUiReduction::nanLossesAreSkipped()
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const QPointF few[] = {{1, 2.0}, {2, nan}, {3, 1.0}, {4, std::numeric_limits<double>::infinity()}};
    QCOMPARE(reduceMinMaxPerColumn(few, 10), (QList<QPointF>{{1, 2.0}, {3, 1.0}}));

    std::vector<QPointF> many;
    for (int i = 0; i < 10000; ++i) many.emplace_back(i, i % 3 == 0 ? nan : double(i % 7));
    const QList<QPointF> out = reduceMinMaxPerColumn(many, 50);
    QVERIFY(!out.isEmpty());
    for (const QPointF& p : out) QVERIFY(std::isfinite(p.y()));

    const QPointF allNan[] = {{1, nan}, {2, nan}};
    QVERIFY(reduceMinMaxPerColumn(allNan, 10).isEmpty());
}

void TestUiReduction::longSeriesIsBoundedAndKeepsExtrema_data()
{
    QTest::addColumn<int>("count");
    QTest::addColumn<int>("columns");
    QTest::addRow("100k steps into 800 columns") << 100000 << 800;
    QTest::addRow("100k steps into 100 columns") << 100000 << 100;
    QTest::addRow("just over passthrough") << 401 << 100;
    QTest::addRow("uneven spacing") << 5000 << 37;
}

void TestUiReduction::longSeriesIsBoundedAndKeepsExtrema()
{
    QFETCH(int, count);
    QFETCH(int, columns);
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0.0, 1.0);
    std::vector<QPointF> points;
    double x = 0;
    for (int i = 0; i < count; ++i) {
        x += 1.0 + (i % 13 == 0 ? 5.0 : 0.0);   // uneven steps
        double y = 2.0 * std::exp(-i / 20000.0) + 0.1 * noise(rng);
        if (i == count / 3) y = 50.0;    // a spike
        if (i == count / 2) y = -50.0;   // a dip
        points.emplace_back(x, y);
    }
    const QList<QPointF> out = reduceMinMaxPerColumn(points, columns);
    QVERIFY(out.size() <= qsizetype(4) * columns);
    QCOMPARE(out.front(), points.front());
    QCOMPARE(out.back(), points.back());
    for (qsizetype i = 1; i < out.size(); ++i) QVERIFY(out[i - 1].x() < out[i].x());
    QVERIFY(out.contains(points[static_cast<std::size_t>(count / 3)]));
    QVERIFY(out.contains(points[static_cast<std::size_t>(count / 2)]));

    // Exact per column: every column's max and min of the input are in the output.
    const double x0 = points.front().x(), perX = columns / (points.back().x() - x0);
    std::vector<double> colMax(static_cast<std::size_t>(columns), -1e300), colMin(static_cast<std::size_t>(columns), 1e300);
    for (const QPointF& p : points) {
        const auto c = static_cast<std::size_t>(std::min<long long>(columns - 1, static_cast<long long>((p.x() - x0) * perX)));
        colMax[c] = std::max(colMax[c], p.y());
        colMin[c] = std::min(colMin[c], p.y());
    }
    for (int c = 0; c < columns; ++c) {
        if (colMax[static_cast<std::size_t>(c)] < -1e299) continue;
        bool hasMax = false, hasMin = false;
        for (const QPointF& p : out) {
            hasMax |= p.y() == colMax[static_cast<std::size_t>(c)];
            hasMin |= p.y() == colMin[static_cast<std::size_t>(c)];
        }
        QVERIFY2(hasMax && hasMin, qPrintable(QStringLiteral("column %1").arg(c)));
    }
}

void TestUiReduction::smoothing()
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> constant(50, 3.0);
    for (double v : exponentialMovingAverage(constant, 0.95)) QCOMPARE(v, 3.0);   // bias-corrected: no ramp
    const std::vector<double> withNan{1.0, nan, 3.0};
    const auto s = exponentialMovingAverage(withNan, 0.5);
    QCOMPARE(s[0], 1.0);
    QVERIFY(std::isnan(s[1]));
    QCOMPARE(s[2], (0.5 * 0.5 * 1.0 + 0.5 * 3.0) / (0.5 * 0.5 + 0.5));   // (0.25 + 1.5) / 0.75
    const auto raw = exponentialMovingAverage(std::vector<double>{1.0, 5.0}, 0.0);
    QCOMPARE(raw[1], 5.0);
}

void TestUiReduction::fp16RegionBoundaries_data()
{
    QTest::addColumn<int>("exponent");
    QTest::addColumn<QString>("region");
    // fp16: min subnormal 2^-24 (half of it 2^-25), min normal 2^-14, max 65504 < 2^16.
    QTest::addRow("2^-26 flushed") << -26 << "flushed";
    QTest::addRow("[2^-25, 2^-24) rounds up to the min subnormal") << -25 << "subnormal";
    QTest::addRow("2^-15 subnormal") << -15 << "subnormal";
    QTest::addRow("2^-14 normal") << -14 << "normal";
    QTest::addRow("2^15 normal") << 15 << "normal";
    QTest::addRow("2^16 overflow") << 16 << "overflow";
}

void TestUiReduction::fp16RegionBoundaries()
{
    QFETCH(int, exponent);
    QFETCH(QString, region);
    GradientHistogram h;
    h.bins[static_cast<std::size_t>(GradientHistogram::binOf(exponent))] = 1;
    const RegionShares s = regionShares(h, Format::fp16);
    const double got = region == "flushed" ? s.flushed : region == "subnormal" ? s.subnormal : region == "normal" ? s.normal : s.overflow;
    QCOMPARE(got, 1.0);
}

void TestUiReduction::fp16RegionSharesByHand()
{
    // Counts 1..5 at exponents -30, -20, -10, 0, 20 against fp16's limits 2^-25, 2^-14, 65504:
    // -30 flushed (1), -20 subnormal (2), -10 and 0 normal (3 + 4), 20 overflow (5); of 15.
    GradientHistogram h;
    const int exponents[] = {-30, -20, -10, 0, 20};
    for (int i = 0; i < 5; ++i) h.bins[static_cast<std::size_t>(GradientHistogram::binOf(exponents[i]))] = static_cast<std::uint64_t>(i + 1);
    h.zeros = 5;
    const RegionShares s = regionShares(h, Format::fp16);
    QCOMPARE(s.values, std::uint64_t{15});
    QCOMPARE(s.flushed, 1.0 / 15);
    QCOMPARE(s.subnormal, 2.0 / 15);
    QCOMPARE(s.normal, 7.0 / 15);
    QCOMPARE(s.overflow, 5.0 / 15);
    QCOMPARE(s.zeros, 5.0 / 20);
    // The same values in bf16 (min normal 2^-126): all normal.
    QCOMPARE(regionShares(h, Format::bf16).normal, 1.0);
}

void TestUiReduction::underflowFractionExcludesZerosAndNonFinite()
{
    RoundingStats s;
    s.count = 100;
    s.zerosIn = 10;
    s.nan = 5;
    s.infIn = 5;
    s.underflow = 8;
    s.overflow = 4;
    QCOMPARE(underflowFraction(s), 8.0 / 80);
    QCOMPARE(overflowFraction(s), 4.0 / 80);
    QVERIFY(std::isnan(underflowFraction(RoundingStats{})));
}

void TestUiReduction::parameterBytesPerRecipe_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<double>("momentum");
    QTest::addColumn<int>("bytes");
    // Bytes an element from the formats' sizes (fp32 4, fp16/bf16 2), counted by hand.
    // FP32 keeps no master copy (computing in fp32, a second fp32 copy would be the same
    // values): 4 weights + 4 gradients + 2 x 4 Adam moments.
    QTest::addRow("fp32 adam") << "fp32" << "adam" << 0.9 << 4 + 4 + 8;
    QTest::addRow("amp-fp16 adam: fp16 weights, fp32 master/grads/state") << "amp-fp16" << "adam" << 0.9 << 2 + 4 + 4 + 8;
    QTest::addRow("pure-fp16 adam: all fp16") << "pure-fp16" << "adam" << 0.9 << 2 + 2 + 4;
    QTest::addRow("pure-bf16 sgd momentum") << "pure-bf16" << "sgd" << 0.9 << 2 + 2 + 2;
    // TF32 keeps an fp32 master beside its tf32-rounded compute copy (4 bytes each).
    QTest::addRow("tf32 plain sgd") << "tf32" << "sgd" << 0.0 << 4 + 4 + 4;
}

void TestUiReduction::parameterBytesPerRecipe()
{
    QFETCH(QString, preset);
    QFETCH(QString, optimizer);
    QFETCH(double, momentum);
    QFETCH(int, bytes);
    const auto recipe = PrecisionRecipe::fromPreset(preset.toStdString());
    QVERIFY(recipe);
    ModelSpec spec;
    spec.kind = "mlp";
    spec.widths = {4, 3};
    OptimizerConfig o;
    o.kind = optimizer.toStdString();
    o.momentum = momentum;
    const MemoryFootprint f = memoryFootprint(spec, *recipe, o);
    QCOMPARE(f.parameters, std::int64_t{3195});
    QCOMPARE(f.fixedBytes(), std::int64_t{bytes} * 3195);
}

void TestUiReduction::plannerArithmeticByHand()
{
    MemoryEstimate e;
    e.fixedBytes = 1000 * 18 + 2000;
    e.perSampleBytes = 600;
    QCOMPARE(largestBatchWithin(e, 1'000'000), std::int64_t{(1'000'000 - 20'000) / 600});   // 1633
    QVERIFY(e.bytesAt(largestBatchWithin(e, 1'000'000)) <= 1'000'000);
    QVERIFY(e.bytesAt(largestBatchWithin(e, 1'000'000) + 1) > 1'000'000);
    QCOMPARE(largestBatchWithin(e, 10'000), std::int64_t{0});   // not even the fixed part fits
    e.perSampleBytes = 0;
    QCOMPARE(largestBatchWithin(e, 1'000'000), std::int64_t{0});
}

// Issue 67 item 3: the planner's row for each preset is what the memory check before a run
// admits, batch for batch: the largest batch it plans passes the check, one more is refused.
void TestUiReduction::plannerForASmallModel()
{
    // mlp 784-4-3-10: 784*4+4 + 4*3+3 + 3*10+10 = 3195 parameters.
    TrainSettings s;
    s.model.kind = "mlp";
    s.model.widths = {4, 3};
    const std::vector<PresetEstimate> rows = presetEstimates(s);
    QCOMPARE(rows.size(), PrecisionRecipe::presetNames().size());
    QCOMPARE(rows.front().displayName, std::string("FP32"));
    const std::int64_t budget = std::int64_t{1} << 24;   // 16 MiB
    for (const PresetEstimate& row : rows) {
        TrainSettings run = s;
        run.recipe = row.recipe;
        const MemoryEstimate alone = estimateRunMemory(run);   // one model built for this recipe
        QCOMPARE(row.estimate.fixedBytes, alone.fixedBytes);
        QCOMPARE(row.estimate.perSampleBytes, alone.perSampleBytes);
        // The CPU holds every parameter tensor's element at 4 bytes.
        QCOMPARE(row.estimate.fixedBytes % (3195 * 4), std::int64_t{0});
        run.batch = static_cast<int>(largestBatchWithin(row.estimate, budget));
        QVERIFY(run.batch > 0);
        QVERIFY2(checkRunMemory(run, budget, "the budget").empty(), row.preset.c_str());
        ++run.batch;
        QVERIFY2(!checkRunMemory(run, budget, "the budget").empty(), row.preset.c_str());
        QVERIFY2(checkRunMemory(run, budget, "the budget").find("the largest batch that fits is " +
                                                                std::to_string(run.batch - 1)) != std::string::npos,
                 checkRunMemory(run, budget, "the budget").c_str());
    }
    // 16-bit activations fit more than fp32's.
    for (const PresetEstimate& r : rows)
        if (r.displayName == "AMP FP16")
            QVERIFY(largestBatchWithin(r.estimate, budget) > largestBatchWithin(rows.front().estimate, budget));
}

QTEST_GUILESS_MAIN(TestUiReduction)
#include "tst_ui_reduction.moc"
