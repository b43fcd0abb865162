// Over 500 lines: every chart group is drawn from the same synthetic runs built here; one suite keeps one set of fixtures.
// Tests the live chart groups (offscreen): a RunData fed synthetic trainer events (steps,
// evaluations, telemetry with a hand-built histogram, memory, a setting change) drawn by
// ChartsView: series point counts and values, fp16 region shares against a hand
// computation, setting-change markers on every step chart, overlays per comparison run,
// reduction of a 100,000-step run, bin picking, the planner table, the redraw timer.
// run_data.h first: engine/train/trainer.h names a member emit(), which Qt's emit macro
// would break once a Qt header came before it.
#include "run_data.h"
#include "run_progress_widget.h"
#include "record/run_record.h"

#include <nlohmann/json.hpp>
#include "nn/model.h"

#include "charts/chart_caption.h"
#include "charts/chart_group.h"
#include "charts/charts_view.h"
#include "charts/histogram_chart.h"
#include "charts/loss_chart.h"
#include "charts/loss_scale_chart.h"
#include "charts/memory_chart.h"
#include "charts/reconstructions_view.h"
#include "charts/scalars_chart.h"
#include "charts/throughput_chart.h"
#include "charts/underflow_chart.h"
#include "charts/updates_chart.h"
#include "train/memory_check.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QGraphicsTextItem>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QProgressBar>
#include <QScatterSeries>
#include <QScrollArea>
#include <QSlider>
#include <QScrollBar>
#include <QTableWidget>
#include <QTest>
#include <QValueAxis>
#include <QSignalSpy>
#include <QCheckBox>

#include <cmath>
#include <limits>
#include <functional>
#include <memory>

using namespace plab;
using namespace plab::ui;

namespace {

// The first event of a run planned for `steps` steps on `backend` (the other facts empty).
RunStartEvent runStart(std::int64_t steps, const char* backend = "cpu")
{
    RunStartEvent e;
    e.backend = backend;
    e.plannedSteps = steps;
    return e;
}

constexpr std::int64_t kChangeStep = 500;

TrainSettings ampSettings()
{
    TrainSettings s;
    s.recipe = *PrecisionRecipe::fromPreset("amp-fp16");
    return s;
}

// The view at 1400x900 on screen, watching `run`, drawn.
void showOnScreen(ChartsView& view, const RunPtr& run)
{
    view.resize(1400, 900);
    view.setRuns(run, {});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.redrawNow();
}

// A histogram with counts 1..5 at exponents -30, -20, -10, 0, 20 (see the fp16 shares test).
GradientHistogram handHistogram()
{
    GradientHistogram h;
    const int exponents[] = {-30, -20, -10, 0, 20};
    for (int i = 0; i < 5; ++i) h.bins[static_cast<std::size_t>(GradientHistogram::binOf(exponents[i]))] = static_cast<std::uint64_t>(i + 1);
    return h;
}

// A run of `steps` steps: loss decays, every 97th step skipped (scale halves), an
// evaluation every 100 steps, telemetry every 50, memory every step, and loss scaling
// turned off at kChangeStep.
RunPtr makeRun(const QString& name, std::int64_t steps, QColor color, double lossOffset = 0.0, double accuracyOffset = 0.0)
{
    auto run = std::make_shared<RunData>(QStringLiteral("id-") + name, ampSettings());
    run->setName(name);
    run->setColor(color);
    run->apply(runStart(steps));
    double scale = 65536.0;
    std::int64_t skipped = 0;
    for (std::int64_t i = 1; i <= steps; ++i) {
        StepEvent e;
        e.step = i;
        e.loss = static_cast<float>(lossOffset + 2.3 * std::exp(-static_cast<double>(i) / 300.0));
        e.skipped = i % 97 == 0 && i <= kChangeStep;
        if (e.skipped) scale /= 2, ++skipped;
        // Why the first skipped step skipped (the later ones, as an older record, say nothing).
        if (i == 97)
            e.nonFinite = {NonFiniteSite{"fc1", TensorKind::activation, 0, 0, 4, std::nullopt, "fp16", 65504},
                           NonFiniteSite{"loss", TensorKind::activationGrad, 3, 0, 0, std::ldexp(1.5, 17), "fp16", 65504},
                           NonFiniteSite{"fc1", TensorKind::activationGrad, 0, 12, 0, 1.0, "fp16", 65504}};
        e.lossScale = i <= kChangeStep ? scale : 1.0;
        e.batch = 32;
        e.timeMs = 4.0;
        e.totalSteps = steps;
        e.skippedSoFar = skipped;
        run->apply(e);
        if (i % 100 == 0)
            run->apply(EvalEvent{i, 0, accuracyOffset + 0.5 + 0.4 * static_cast<double>(i) / static_cast<double>(steps), 0.3});
        if (i % 50 == 0) {
            TelemetryEvent t;
            t.step = i;
            t.lossScale = e.lossScale;
            for (const char* layer : {"conv1", "conv2", "fc1"}) {
                LayerTelemetry l;
                l.layer = layer;
                l.kind = TensorKind::weightGrad;
                l.histogram = handHistogram();
                l.stats.count = 120;
                l.stats.zerosIn = 20;
                l.stats.underflow = i > kChangeStep ? 25 : 1;   // more underflow without scaling
                l.stats.overflow = 2;
                l.update.nonzero = 100;
                l.update.lost = i > kChangeStep ? 40 : 10;
                l.update.nonFinite = i == steps ? 7 : 0;
                t.layers.push_back(l);
            }
            run->apply(t);
        }
        MemoryEvent m;
        m.step = i;
        for (int c = 0; c < kMemoryCategories; ++c) m.memory.live[static_cast<std::size_t>(c)] = (c + 1) * 1024 * 1024;
        m.memory.live[static_cast<std::size_t>(MemoryCategory::activations)] += (i % 2) * 1024 * 1024;   // changes every step
        m.memory.peak = m.memory.live;
        m.memory.totalLive = 0;
        for (auto v : m.memory.live) m.memory.totalLive += v;
        m.memory.totalPeak = 22 * 1024 * 1024;
        run->apply(m);
        if (i == kChangeStep) {
            TrainSettings after = ampSettings();
            after.recipe.lossScaling = LossScaling::off();
            run->apply(SettingChangeEvent{i, "loss scaling dynamic from 65536 -> off", after});
        }
    }
    return run;
}

template <class S>
S* seriesNamed(const QList<QAbstractSeries*>& all, const QString& name)
{
    for (QAbstractSeries* s : all)
        if (s->name() == name) return qobject_cast<S*>(s);
    return nullptr;
}

// The tick labels QtCharts drew for a value axis: each visible numeric text item on the
// axis' side of the plot area, with the axis value at the label's centre.
struct DrawnLabel {
    QString text;
    double valueAtLabel;
};
QList<DrawnLabel> drawnLabels(QChart* chart, QValueAxis* axis)
{
    QList<DrawnLabel> labels;
    const QRectF plot = chart->mapRectToScene(chart->plotArea());
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    for (QGraphicsItem* item : chart->scene()->items()) {
        auto* text = dynamic_cast<QGraphicsTextItem*>(item);
        if (!text || !text->isVisible()) continue;
        bool number = false;
        QString label = text->toPlainText();
        if (label.startsWith(QLatin1String("2^"))) label = label.mid(2);   // log2 axes write 2^k where k stands
        label.toDouble(&number);
        if (!number) continue;
        const QPointF c = text->sceneBoundingRect().center();
        const bool onSide = axis->alignment() == Qt::AlignBottom  ? c.y() > plot.bottom()
                            : axis->alignment() == Qt::AlignLeft  ? c.x() < plot.left()
                            : axis->alignment() == Qt::AlignRight ? c.x() > plot.right()
                                                                  : c.y() < plot.top();
        // Beside the plot along the axis: the other axis' first label sits at the corner.
        const bool alongPlot = horizontal ? c.x() >= plot.left() - 3 && c.x() <= plot.right() + 3
                                          : c.y() >= plot.top() - 3 && c.y() <= plot.bottom() + 3;
        if (!onSide || !alongPlot) continue;
        const double along = horizontal ? (c.x() - plot.left()) / plot.width() : (plot.bottom() - c.y()) / plot.height();
        labels.append({label, axis->min() + along * (axis->max() - axis->min())});
    }
    return labels;
}

int countContaining(const QList<QAbstractSeries*>& all, const QString& part)
{
    int n = 0;
    for (QAbstractSeries* s : all) n += s->name().contains(part);
    return n;
}

// A 100-step run named `name` whose two telemetry steps report weight gradients of
// `layers` (in that order), each with the hand histogram, 5% underflow and 10% lost updates.
RunPtr runWithLayers(const QString& name, const TrainSettings& settings, const std::vector<std::string>& layers)
{
    auto run = std::make_shared<RunData>(QStringLiteral("id-") + name, settings);
    run->setName(name);
    run->setColor(Qt::blue);
    run->apply(runStart(100));
    for (std::int64_t i = 1; i <= 100; ++i) {
        StepEvent e;
        e.step = i;
        e.loss = 1.0f;
        e.lossScale = 1.0;
        e.batch = 32;
        e.totalSteps = 100;
        run->apply(e);
        if (i % 50 != 0) continue;
        TelemetryEvent t;
        t.step = i;
        t.lossScale = 1.0;
        for (const std::string& layer : layers) {
            LayerTelemetry l;
            l.layer = layer;
            l.kind = TensorKind::weightGrad;
            l.histogram = handHistogram();
            l.stats.count = 100;
            l.stats.underflow = 5;
            l.update.nonzero = 100;
            l.update.lost = 10;
            t.layers.push_back(l);
        }
        run->apply(t);
    }
    return run;
}

// The layers whose lost-updates lines the updates group shows (series names "<run> <layer> lost updates").
QStringList visibleLostLines(ChartsView& view)
{
    QStringList layers;
    for (QAbstractSeries* series : view.seriesOf("updates"))
        if (series->name().endsWith(" lost updates") && series->isVisible()) layers << series->name().section(' ', 1, 1);
    return layers;
}

}  // namespace

class TestUiCharts : public QObject {
    Q_OBJECT
private slots:
    // deep-mlp's fc1 ... fc16 in model order, not as text sorts them (fc1, fc10, fc11, ...).
    // A 16-layer model: six lines a run, spread from fc1 to fc16, unless "All layers" is on;
    // the key says how many of its layers are drawn, and no shade is the background's.
    void deepModelsDrawSixLayersUnlessAll()
    {
        QCOMPARE(spreadLayers({"a", "b", "c"}, 6), (std::vector<std::string>{"a", "b", "c"}));
        std::vector<std::string> names;
        for (int i = 1; i <= 16; ++i) names.push_back("fc" + std::to_string(i));
        QCOMPARE(spreadLayers(names, 6), (std::vector<std::string>{"fc1", "fc4", "fc7", "fc10", "fc13", "fc16"}));

        const RunPtr run = runWithLayers("deep", ampSettings(), names);
        ChartsView view;
        view.setRuns(run, {});
        view.redrawNow();
        auto* updates = qobject_cast<UpdatesChart*>(view.group("updates"));
        const auto lostLines = [&] { return visibleLostLines(view); };
        QCOMPARE(lostLines(), (QStringList{"fc1", "fc4", "fc7", "fc10", "fc13", "fc16"}));
        QVERIFY2(updates->keyText().contains("(6 of its 16 layers; All layers draws each)"), qPrintable(updates->keyText()));
        auto* box = updates->findChild<QCheckBox*>("updatesAllLayers");
        QVERIFY(box && !box->isHidden());
        box->setChecked(true);   // redraws at once
        QCOMPARE(lostLines().size(), 16);
        QVERIFY(!updates->keyText().contains("of its 16 layers"));
        for (std::size_t li = 0; li < 16; ++li)
            QVERIFY(ChartGroup::layerColor(QColor(Qt::blue), li).lightness() < 235);
        // Issue 67 item 7: each of a run's first six layers a colour of its own (not shades of
        // one), in a hue within 20 degrees of the run's, for every run colour the store hands out.
        for (const QColor run : {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                                 QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b)}) {
            for (std::size_t li = 0; li < 6; ++li) {
                const QColor c = ChartGroup::layerColor(run, li);
                const int dh = std::abs(c.hslHue() - run.hslHue());
                QVERIFY2(std::min(dh, 360 - dh) <= 20, qPrintable(QStringLiteral("%1 layer %2").arg(run.name()).arg(li)));
                for (std::size_t lj = 0; lj < li; ++lj) {
                    const QColor d = ChartGroup::layerColor(run, lj);
                    const double distance = std::hypot(c.red() - d.red(), c.green() - d.green(), c.blue() - d.blue());
                    QVERIFY2(distance >= 38, qPrintable(QStringLiteral("%1 layers %2 and %3: %4").arg(run.name()).arg(lj).arg(li).arg(distance)));
                }
            }
        }
        // A three-layer run shows no box.
        view.setRuns(makeRun("amp", 100, Qt::red), {});
        view.redrawNow();
        QVERIFY(box->isHidden());
    }

    // A transformer's layers by block: the Block choice lists the blocks, and one block's
    // layers are drawn alone, in model order, its whole set where it has six or fewer.
    void transformerLayersByBlock()
    {
        TrainSettings settings = ampSettings();
        settings.model = ModelSpec{"vit", {16, 2, 2, 7}};
        const std::vector<std::string> names = parameterLayerNames(settings.model);   // 16
        std::vector<std::string> reversed(names.rbegin(), names.rend());   // not in model order
        const RunPtr run = runWithLayers("vit", settings, reversed);
        ChartsView view;
        view.setRuns(run, {});
        view.redrawNow();
        auto* updates = qobject_cast<UpdatesChart*>(view.group("updates"));
        const auto lostLines = [&] { return visibleLostLines(view); };
        QCOMPARE(lostLines(), (QStringList{"embed", "block1.qkv", "block1.fc1", "block2.qkv", "block2.fc1", "head"}));
        auto* box = updates->findChild<QComboBox*>("updatesBlock");
        QVERIFY(box && !box->isHidden());
        QCOMPARE(box->count(), 3);   // every block, block1, block2
        updates->setBlock("block2");   // redraws at once
        QStringList block2 = lostLines();   // series are listed as the pool made them
        block2.sort();
        QCOMPARE(block2, (QStringList{"block2.fc1", "block2.fc2", "block2.ln1", "block2.ln2", "block2.proj", "block2.qkv"}));
        QVERIFY2(!updates->keyText().contains("of block2's"), qPrintable(updates->keyText()));
        updates->setBlock(QString());
        QCOMPARE(lostLines().size(), 6);
        // A model without blocks shows no choice.
        view.setRuns(makeRun("amp", 100, Qt::red), {});
        view.redrawNow();
        QVERIFY(box->isHidden());
    }

    void layerNamesInModelOrder()
    {
        std::vector<std::string> names{"fc10", "fc2", "input", "fc1", "conv2", "fc16", "conv1", "fc9", "loss", "fc02x"};
        std::sort(names.begin(), names.end(), layerNameLess);
        QCOMPARE(names, (std::vector<std::string>{"conv1", "conv2", "fc1", "fc2", "fc02x", "fc9", "fc10", "fc16", "input",
                                                  "loss"}));
        QVERIFY(!layerNameLess("fc3", "fc3"));
        QVERIFY(layerNameLess("fc", "fc1"));
        QVERIFY(!layerNameLess("fc1", "fc"));
        // A transformer's taps by its layers with weights: grouped by block, in model order.
        std::vector<std::string> taps{"loss", "head", "block1.residual", "block2.qkv", "block1.attn.scores", "pos",
                                      "block1.ln1.sumsq", "block1.qkv", "embed", "block1.ln1", "input", "norm",
                                      "block1.fc2", "block2.attn"};
        sortInModelOrder(taps, parameterLayerNames(ModelSpec{"vit", {16, 2, 2, 7}}));
        QCOMPARE(taps, (std::vector<std::string>{"input", "embed", "pos", "block1.ln1", "block1.ln1.sumsq", "block1.qkv",
                                                 "block1.fc2", "block1.attn.scores", "block1.residual", "block2.qkv",
                                                 "block2.attn", "norm", "head", "loss"}));
    }

    // The histogram's window (issue 14 item 7: computed apart from the drawing), against
    // the rule written out by hand from the formats' ranges (fp16: flushed below 2^-25,
    // normal from 2^-14, overflow from 2^16; bf16: -134, -126, 128; fp32: -150, -126, 128).
    void histogramWindowFollowsDataAndNearBoundaries()
    {
        GradientHistogram fp16Data;
        fp16Data.bins[static_cast<std::size_t>(GradientHistogram::binOf(-20))] = 3;
        fp16Data.bins[static_cast<std::size_t>(GradientHistogram::binOf(-19))] = 1;
        // Data in [2^-20, 2^-18): margin 3 gives [-23, -15]; every fp16 boundary is within
        // 40 exponents and widens it by 3 beyond it: [-28, 19]. The top bin holds 75%.
        HistogramWindow w = histogramWindow({&fp16Data}, {formatRegions(Format::fp16)});
        QCOMPARE(w.low, -28);
        QCOMPARE(w.high, 19);
        QCOMPARE(w.top, 75.0 * 1.15);

        // bf16 chosen, fp16 drawn too, data at 2^-100: bf16's -134 and -126 are near, fp16's are not.
        GradientHistogram deep;
        deep.bins[static_cast<std::size_t>(GradientHistogram::binOf(-100))] = 8;
        w = histogramWindow({&deep}, {formatRegions(Format::bf16), formatRegions(Format::fp16)});
        QCOMPARE(w.low, -137);
        QCOMPARE(w.high, -96);
        QCOMPARE(w.top, 100.0 * 1.15);

        // No values: the chosen format's regions with 4 of margin, inside the histogram's range.
        w = histogramWindow({}, {formatRegions(Format::fp32)});
        QCOMPARE(w.low, GradientHistogram::kMinExponent - 1);
        QCOMPARE(w.high, GradientHistogram::kMaxExponent + 2);
        QCOMPARE(w.top, 100.0);
    }

    void lossAndAccuracySeries();
    void lossScaleOnLog2AxisWithSkippedSteps();
    void skippedStepSaysWhyOnHoverAndClick();
    void divergedRunShowsItsFiniteStepsAndWhy();
    void skippedRunIsOneBandAndLevelsAreLabelled();
    void histogramSharesMatchHandComputationForFp16();
    void histogramBinClickEmitsTheBin();
    void underflowFractionsPerLayer();
    void updatesTellLostFromZeroAndNonFinite();
    void histogramJudgesEachRunInItsOwnFormat();
    void quantisedKindsAreJudgedInTheirElementFormat();
    void blockScalesHistogramUnderNvfp4();
    void emptyAndCoincidingPanelsSayWhy();
    void memoryStackPeakAndPlanner();
    void memoryPeakIsNeverASum();
    void probeRecordWhileWrittenShowsItsStep();
    void loggedValuesChartShowsWhatWasLogged();
    void autoencoderShowsMseAndReconstructions();
    void accumulationLostAdditionsAreAChoice();
    void deviceLinesShowWhatTheRunHolds();
    void throughputAndProgress();
    void settingChangeMarkedOnEveryChart();
    void overlayAddsSeriesPerComparisonRun();
    void longRunIsReducedToPixelColumns();
    void timerRedrawsWhenRevisionMoves();
    void darkPaletteGivesDarkTheme();
    void presentationModeThickensLinesAndEnlargesFonts();
    void legendsUseShortLabels();
    void emptyChartsLabelTheirTicksTruly();
    void captionGoesToACornerFreeOfData();
    void zoomStaysWhileRunsTrainAndHoverTellsValues();
    void narrowViewStacksChartsInOneColumn();
    void ticksLandOnWhatLabelsWrite_data();
    void ticksLandOnWhatLabelsWrite();
};

void TestUiCharts::lossAndAccuracySeries()
{
    ChartsView view;
    const RunPtr run = makeRun("amp", 1000, Qt::blue);
    view.setRuns(run, {});
    view.redrawNow();
    const auto series = view.seriesOf("loss");
    auto* raw = seriesNamed<QLineSeries>(series, "amp loss");
    auto* smooth = seriesNamed<QLineSeries>(series, "amp loss (smoothed)");
    auto* accuracy = seriesNamed<QLineSeries>(series, "amp test accuracy");
    QVERIFY(raw && smooth && accuracy);
    QCOMPARE(raw->count(), 1000);   // 1000 <= 4 per column of >= 800 columns: drawn unreduced
    QCOMPARE(raw->at(9).x(), 10.0);
    QCOMPARE(raw->at(9).y(), static_cast<double>(static_cast<float>(2.3 * std::exp(-10.0 / 300.0))));
    QCOMPARE(smooth->count(), 1000);
    QCOMPARE(smooth->at(0).y(), raw->at(0).y());   // bias-corrected EMA starts at the first loss
    QVERIFY(smooth->at(999).y() < smooth->at(0).y());
    QCOMPARE(accuracy->count(), 10);
    QCOMPARE(accuracy->at(4), QPointF(500, 100.0 * (0.5 + 0.4 * 0.5)));

    // Issue 34: one smoothing, set by the slider under the chart (0 to 0.999, TensorBoard's).
    // The smoothed curve follows it; checked against the EMA written out here in double.
    auto* loss = qobject_cast<LossChart*>(view.group("loss"));
    auto* slider = loss->findChild<QSlider*>("smoothingSlider");
    QVERIFY(slider);
    QCOMPARE(slider->maximum(), 999);
    QCOMPARE(loss->smoothing(), 0.95);
    slider->setValue(0);   // weight 0: the raw loss
    QCOMPARE(loss->smoothing(), 0.0);
    for (int i : {0, 9, 500, 999}) QCOMPARE(smooth->at(i).y(), raw->at(i).y());
    slider->setValue(500);
    double average = 0, norm = 0;
    for (int i = 0; i < 1000; ++i) {
        average = 0.5 * average + 0.5 * raw->at(i).y();
        norm = 0.5 * norm + 0.5;
        if (i == 0 || i == 9 || i == 999) QCOMPARE(smooth->at(i).y(), average / norm);
    }

    // Issue 67, item 7: the accuracy axis is fitted to the accuracies shown, in whole
    // percents (this run's go from 54% to 90%), and 0-100 when asked.
    QValueAxis* axis = loss->accuracyAxis();
    QCOMPARE(axis->min(), 53.0);
    QCOMPARE(axis->max(), 91.0);
    loss->findChild<QCheckBox*>("accuracyFullRange")->setChecked(true);
    QCOMPARE(axis->min(), 0.0);
    QCOMPARE(axis->max(), 100.0);
    loss->setAccuracyFullRange(false);
    QCOMPARE(axis->max(), 91.0);
    // Two runs at 96.9% and 97.0%: an axis 2 points wide, where they lie 5% of it apart.
    const RunPtr a = makeRun("a", 50, Qt::red), b = makeRun("b", 50, Qt::green);   // no evaluation of their own
    a->apply(EvalEvent{50, 0, 0.969, 0.1});
    b->apply(EvalEvent{50, 0, 0.970, 0.1});
    view.setRuns(a, {b});
    view.redrawNow();
    QCOMPARE(axis->min(), 95.0);
    QCOMPARE(axis->max(), 98.0);
}

// Issue 67, item 7: a run that diverged at once (step 1's loss finite, then none) still
// shows that step, and the chart says where and why it diverged.
void TestUiCharts::divergedRunShowsItsFiniteStepsAndWhy()
{
    auto run = std::make_shared<RunData>(QStringLiteral("id-d"), ampSettings());
    run->setName(QStringLiteral("pure"));
    run->setColor(Qt::red);
    run->apply(runStart(10));
    for (std::int64_t i = 1; i <= 4; ++i) {
        StepEvent e;
        e.step = i;
        e.loss = i == 1 ? 2.29f : std::numeric_limits<float>::quiet_NaN();
        e.lossScale = 1.0;
        e.batch = 32;
        e.totalSteps = 10;
        run->apply(e);
    }
    RunResult r;
    r.status = RunStatus::diverged;
    r.message = "diverged: the loss was not finite for 3 steps in a row, up to step 4";
    r.steps = 4;
    run->finish(r);
    ChartsView view;
    view.setRuns(run, {});
    view.redrawNow();
    auto* raw = seriesNamed<QLineSeries>(view.seriesOf("loss"), "pure loss");
    QVERIFY(raw);
    QCOMPARE(raw->count(), 1);
    QCOMPARE(raw->at(0), QPointF(1, 2.29f));
    QVERIFY(raw->pointsVisible());   // one point, drawn as one
    auto* loss = qobject_cast<LossChart*>(view.group("loss"));
    QVERIFY2(loss->noteText().contains(QStringLiteral("diverged: the loss was not finite for 3 steps in a row, up to step 4")),
             qPrintable(loss->noteText()));
}

void TestUiCharts::lossScaleOnLog2AxisWithSkippedSteps()
{
    ChartsView view;
    const RunPtr run = makeRun("amp", 1000, Qt::blue);
    view.setRuns(run, {});
    view.redrawNow();
    const auto series = view.seriesOf("scale");
    auto* scale = seriesNamed<QLineSeries>(series, "amp loss scale");
    auto* skipped = seriesNamed<QScatterSeries>(series, "amp skipped steps (5)");   // 97, 194, ..., 485
    QVERIFY(scale && skipped);
    QCOMPARE(skipped->count(), 5);
    QCOMPARE(skipped->at(0), QPointF(97, 15));   // log2 of 32768
    const auto axes = scale->attachedAxes();
    bool log2 = false;
    for (QAbstractAxis* a : axes)
        if (auto* v = qobject_cast<QValueAxis*>(a); v && v->orientation() == Qt::Vertical)   // labels 2^k on whole k
            log2 = v->labelFormat() == QLatin1String("2^%d") && v->min() <= 0.0 && v->max() >= 16.0;
    QVERIFY(log2);
    auto* group = qobject_cast<LossScaleChart*>(view.group("scale"));
    QVERIFY(group->countsText().contains("amp: 5 skipped of 1000 steps"));
}

// Issue 67 item 9: a skipped step's marker says, on hover and on a click, which rounding
// overflowed first (not the NaN met before it) and the sites in the order they ran.
void TestUiCharts::skippedStepSaysWhyOnHoverAndClick()
{
    ChartsView view;
    const RunPtr run = makeRun("amp", 1000, Qt::blue);
    showOnScreen(view, run);
    auto* group = qobject_cast<LossScaleChart*>(view.group("scale"));
    auto* chartView = group->findChild<TimedChartView*>();
    auto* skipped = seriesNamed<QScatterSeries>(view.seriesOf("scale"), "amp skipped steps (5)");
    QVERIFY(chartView && skipped);
    QChart* chart = group->charts().first();
    const QString why = QStringLiteral("Step 97 skipped: loss activation_grad overflowed first: 2^17.6 > 65504 (fp16's largest)\n"
                                       "in the order they ran: fc1 activation (4 NaN), fc1 activation_grad (12 inf in)");
    const QPoint at = chartView->mapFromScene(chart->mapToPosition(QPointF(97, 15), skipped));
    QCOMPARE(chartView->valueTextAt(at), QStringLiteral("amp skipped steps (5)\nstep 97 · loss scale S 2^15\n") + why);
    // A step whose record names no site says so.
    const QPoint second = chartView->mapFromScene(chart->mapToPosition(QPointF(194, 14), skipped));
    QVERIFY(chartView->valueTextAt(second).endsWith("Step 194 skipped: the record names no site that made inf or NaN"));

    // A click keeps it under the chart; a click away from any skipped step clears it.
    QCOMPARE(group->clickedSkipText(), QString());
    QTest::mouseClick(chartView->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(group->clickedSkipText(), why);
    const QRect plot = chartView->mapFromScene(chart->plotArea()).boundingRect();
    QTest::mouseClick(chartView->viewport(), Qt::LeftButton, {}, QPoint(plot.right() - 5, plot.top() + 5));
    QCOMPARE(group->clickedSkipText(), QString());
}

// Issue 38 item 5 (lesson 02 projected): a run whose 300 steps all skip drew 300 markers
// over the watched run's line, and the axis, labelled every few powers, could not tell
// 2^17 from 2^18. Ten or more skips in a row are one band (no markers); isolated skips keep
// theirs; each run's last level is written beside the plot in the run's colour, neighbours too.
void TestUiCharts::skippedRunIsOneBandAndLevelsAreLabelled()
{
    // Scale s (log2) at every step; `skip` says which steps were skipped.
    auto scaled = [](const QString& name, QColor color, std::function<double(std::int64_t)> log2Scale,
                     std::function<bool(std::int64_t)> skip) {
        auto run = std::make_shared<RunData>(QStringLiteral("id-") + name, ampSettings());
        run->setName(name);
        run->setColor(color);
        run->apply(runStart(300));
        std::int64_t skipped = 0;
        for (std::int64_t i = 1; i <= 300; ++i) {
            StepEvent e;
            e.step = i;
            e.loss = 1.0f;
            e.skipped = skip(i);
            skipped += e.skipped ? 1 : 0;
            e.lossScale = std::exp2(log2Scale(i));
            e.batch = 32;
            e.timeMs = 4.0;
            e.totalSteps = 300;
            e.skippedSoFar = skipped;
            run->apply(e);
        }
        return run;
    };
    const RunPtr dynamic = scaled("dynamic", Qt::red, [](std::int64_t i) { return i < 100 ? 18.0 : 17.0; },
                                  [](std::int64_t i) { return i == 99; });
    const RunPtr neighbour = scaled("neighbour", Qt::darkGreen, [](std::int64_t) { return 18.0; },
                                    [](std::int64_t) { return false; });
    const RunPtr allSkip = scaled("too large", Qt::blue, [](std::int64_t) { return 24.0; },
                                  [](std::int64_t) { return true; });
    ChartsView view;
    view.resize(1200, 900);
    view.setRuns(dynamic, {neighbour, allSkip});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.redrawNow();
    const auto series = view.seriesOf("scale");
    auto* allMarks = seriesNamed<QScatterSeries>(series, "too large skipped steps (300)");
    auto* oneMark = seriesNamed<QScatterSeries>(series, "dynamic skipped steps (1)");
    auto* band = seriesNamed<QLineSeries>(series, "too large skipped steps 1-300");
    QVERIFY(allMarks && oneMark && band);
    QCOMPARE(allMarks->count(), 0);   // no marker of the 300 skips
    QCOMPARE(oneMark->count(), 1);    // an isolated skip keeps its marker
    QCOMPARE(oneMark->at(0), QPointF(99, 18));
    QVERIFY(band->count() >= 2);
    QCOMPARE(band->at(0), QPointF(1, 24));
    QVERIFY(band->pen().color().alpha() < 255);   // translucent: the lines under it show
    QVERIFY(band->pen().widthF() > 3 * oneMark->pen().widthF());   // a band, wider than a line
    auto* group = qobject_cast<LossScaleChart*>(view.group("scale"));
    QTRY_COMPARE(group->levelLabels(), (QStringList{"2^17", "2^18", "2^24"}));
    // The three labels do not overlap, however close 2^17 and 2^18 lie on the axis.
    QList<QRectF> boxes;
    for (QGraphicsItem* item : qobject_cast<QChartView*>(view.group("scale")->findChild<QChartView*>())->chart()->childItems())
        if (auto* text = qgraphicsitem_cast<QGraphicsSimpleTextItem*>(item); text && text->isVisible() && text->text().startsWith("2^"))
            boxes << text->sceneBoundingRect();
    QCOMPARE(boxes.size(), 3);
    for (qsizetype i = 0; i < boxes.size(); ++i)
        for (qsizetype j = i + 1; j < boxes.size(); ++j)
            QVERIFY2(!boxes[i].intersects(boxes[j]), qPrintable(QStringLiteral("%1,%2 %3x%4 and %5,%6 %7x%8")
                                                                   .arg(boxes[i].x()).arg(boxes[i].y()).arg(boxes[i].width()).arg(boxes[i].height())
                                                                   .arg(boxes[j].x()).arg(boxes[j].y()).arg(boxes[j].width()).arg(boxes[j].height())));
}

void TestUiCharts::histogramSharesMatchHandComputationForFp16()
{
    ChartsView view;
    const RunPtr run = makeRun("amp", 1000, Qt::blue);
    view.setRuns(run, {});
    view.redrawNow();
    auto* histogram = qobject_cast<HistogramChart*>(view.group("histogram"));
    QCOMPARE(histogram->layer(), QString("conv1"));
    QCOMPARE(histogram->kind(), TensorKind::weightGrad);
    // Counts 1..5 at -30, -20, -10, 0, 20 against fp16: flushed 1/15, subnormal 2/15,
    // normal 7/15, overflow 5/15.
    const QString text = histogram->sharesText();
    QVERIFY2(text.contains("flushed 6.67%") && text.contains("subnormal 13.33%") && text.contains("normal 46.67%") &&
                 text.contains("overflow 33.33%"),
             qPrintable(text));
    const auto series = view.seriesOf("histogram");
    auto* line = seriesNamed<QLineSeries>(series, "amp conv1 weight_grad at step 1000");
    QVERIFY(line);
    bool found = false;
    for (const QPointF& p : line->points())
        if (p.x() == -30.0) found = qFuzzyCompare(p.y(), 100.0 / 15.0);
    QVERIFY(found);
    for (const char* region : {"fp16 flushed to zero", "fp16 subnormal", "fp16 normal", "fp16 overflow"})
        QCOMPARE(countContaining(series, region), 1);
    auto* flushed = [&] {
        for (QAbstractSeries* s : series)
            if (s->name().startsWith("fp16 flushed")) return qobject_cast<QAreaSeries*>(s);
        return static_cast<QAreaSeries*>(nullptr);
    }();
    QVERIFY(flushed);
    QCOMPARE(flushed->upperSeries()->at(1).x(), -25.0);   // half the smallest subnormal, 2^-25

    // The slider moves through the histogram steps.
    histogram->setHistogramIndex(0);
    QVERIFY(seriesNamed<QLineSeries>(view.seriesOf("histogram"), "amp conv1 weight_grad at step 50"));

    // In presentation mode a table: a short name beside its shares, one row a run; a long one
    // (lesson 12's) on a row of its own across the table, its shares under it, so that the
    // squeezed name column does not wrap it into lines that take the plot's height.
    view.setPresentationMode(true);
    view.redrawNow();
    const QString table = histogram->sharesText();
    QVERIFY2(table.contains("run (format)") && table.contains("<td>amp (fp16)</td>") && !table.contains("colspan"),
             qPrintable(table));
    ChartsView longNames;
    longNames.setPresentationMode(true);
    longNames.setRuns(makeRun("MXFP4, fc1's forward pass in bf16", 1000, Qt::blue), {});
    longNames.redrawNow();
    const QString stacked = qobject_cast<HistogramChart*>(longNames.group("histogram"))->sharesText();
    QVERIFY2(!stacked.contains("run (format)") &&
                 stacked.contains("<td colspan=\"4\">MXFP4, fc1's forward pass in bf16 (fp16)</td></tr><tr><td "
                                  "align=\"right\">6.67%</td>"),
             qPrintable(stacked));
}

void TestUiCharts::histogramBinClickEmitsTheBin()
{
    ChartsView view;
    view.resize(1400, 1000);
    view.setRuns(makeRun("amp", 200, Qt::blue), {});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.redrawNow();
    auto* histogram = qobject_cast<HistogramChart*>(view.group("histogram"));
    QSignalSpy picked(&view, &ChartsView::histogramBinPicked);
    QChart* chart = histogram->charts().front();
    const QPointF at = chart->mapToPosition(QPointF(-9.5, 1.0), chart->series().front());
    histogram->pickAt(at);
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.front().at(0).toString(), QString("conv1"));
    QCOMPARE(picked.front().at(1).toString(), QString("weight_grad"));
    QCOMPARE(picked.front().at(2).toInt(), -10);
}

void TestUiCharts::underflowFractionsPerLayer()
{
    ChartsView view;
    view.setRuns(makeRun("amp", 1000, Qt::blue), {});
    view.redrawNow();
    const auto series = view.seriesOf("underflow");
    for (const char* layer : {"conv1", "conv2", "fc1"}) {
        auto* under = seriesNamed<QLineSeries>(series, QStringLiteral("amp %1 underflow").arg(layer));
        auto* over = seriesNamed<QLineSeries>(series, QStringLiteral("amp %1 overflow").arg(layer));
        QVERIFY(under && over);
        QCOMPARE(under->count(), 20);   // one per histogram step
        QCOMPARE(under->at(0), QPointF(50, 100.0 * 1 / 100));    // 1 of 120 - 20 zeros
        QCOMPARE(under->at(19), QPointF(1000, 100.0 * 25 / 100));
        QCOMPARE(over->at(0).y(), 2.0);
    }
    qobject_cast<UnderflowChart*>(view.group("underflow"))->setKind(TensorKind::activationGrad);
    QCOMPARE(countContaining(view.seriesOf("underflow"), "underflow"), 0);   // none recorded of that kind
}

// Issue 10: lost updates were only in the report. The updates group draws, per layer and
// histogram step, updates lost to rounding (of the nonzero ones), gradients that were zero
// (exactly or flushed: zero updates, not lost) and weights made inf/NaN, apart.
void TestUiCharts::updatesTellLostFromZeroAndNonFinite()
{
    ChartsView view;
    view.setRuns(makeRun("amp", 1000, Qt::blue), {});
    view.redrawNow();
    const auto series = view.seriesOf("updates");
    for (const char* layer : {"conv1", "conv2", "fc1"}) {
        auto* lost = seriesNamed<QLineSeries>(series, QStringLiteral("amp %1 lost updates").arg(layer));
        auto* zero = seriesNamed<QLineSeries>(series, QStringLiteral("amp %1 zero gradients").arg(layer));
        auto* bad = seriesNamed<QLineSeries>(series, QStringLiteral("amp %1 weights made non-finite").arg(layer));
        QVERIFY(lost && zero && bad);
        QCOMPARE(lost->count(), 20);
        QCOMPARE(lost->at(0), QPointF(50, 10.0));        // 10 of 100 nonzero updates
        QCOMPARE(lost->at(19), QPointF(1000, 40.0));
        QCOMPARE(zero->at(0), QPointF(50, 100.0 * (20 + 1) / 120));   // 20 zeros + 1 flushed of 120
        QCOMPARE(zero->at(19), QPointF(1000, 100.0 * (20 + 25) / 120));
        QCOMPARE(bad->at(0).y(), 0.0);
        QCOMPARE(bad->at(19).y(), 7.0);
    }
}

// Issue 10 (lesson 04): the fp16 run was shaded with bf16's regions and its shares computed
// against bf16's ranges. Each run's shares are in its own format; another format's
// boundaries are drawn.
void TestUiCharts::histogramJudgesEachRunInItsOwnFormat()
{
    ChartsView view;
    const RunPtr fp16 = makeRun("fp16", 300, Qt::blue);
    const RunPtr bf16 = makeRun("bf16", 300, Qt::red);
    TrainSettings bf = ampSettings();
    bf.recipe = *PrecisionRecipe::fromPreset("amp-bf16");
    bf16->apply(SettingChangeEvent{300, "recipe -> amp-bf16", bf});
    QCOMPARE(bf16->currentSettings().recipe.compute, Format::bf16);
    view.setRuns(fp16, {bf16});
    view.redrawNow();
    const QString text = qobject_cast<HistogramChart*>(view.group("histogram"))->sharesText();
    // The same counts (1..5 at -30, -20, -10, 0, 20): in fp16 terms flushed 1/15 and overflow
    // 5/15; in bf16 terms every value is normal.
    QVERIFY2(text.contains("fp16 (fp16 regions): flushed 6.67%") && text.contains("overflow 33.33%"), qPrintable(text));
    QVERIFY2(text.contains("bf16 (bf16 regions): flushed 0.00% · subnormal 0.00% · normal 100.00%"), qPrintable(text));
    // What the rounding counted as overflowing (2 of the 100 nonzero values) is said where the
    // regions' bins show less (bf16: none; a format's largest value can lie inside a bin), and
    // only there (fp16's overflow region holds 33%).
    const QStringList lines = text.split('\n');
    QCOMPARE(lines.size(), qsizetype(2));
    QVERIFY2(lines[1].startsWith("bf16") && lines[1].contains("clipped 2.00%, counted by the rounding"), qPrintable(lines[1]));
    QVERIFY2(!lines[0].contains("clipped"), qPrintable(lines[0]));
    bool bounds = false;
    for (QAbstractSeries* s : view.seriesOf("histogram")) bounds |= s->name().startsWith("bf16 region boundaries");
    QVERIFY(bounds);
}

// A started run of preset `preset` named `name` (id "id-<name>"), for telemetry by hand.
static std::shared_ptr<RunData> startedRun(const std::string& preset, const QString& name)
{
    TrainSettings settings = ampSettings();
    settings.recipe = *PrecisionRecipe::fromPreset(preset);
    auto run = std::make_shared<RunData>(QStringLiteral("id-") + name, settings);
    run->setName(name);
    run->apply(runStart(10));
    return run;
}

// Issue 15: the quantised matmul inputs of an FP8 recipe are judged in the format their
// values were given to (E5M2 for gradients), not in the run's bf16, and saturate.
void TestUiCharts::quantisedKindsAreJudgedInTheirElementFormat()
{
    ChartsView view;
    const auto run = startedRun("fp8-delayed", "fp8");
    TelemetryEvent t;
    t.step = 1;
    LayerTelemetry l;
    l.layer = "conv2";
    l.kind = TensorKind::quantizedActivationGrad;
    l.histogram = handHistogram();
    l.stats.count = 120;
    l.stats.overflow = 3;
    l.scaling.present = l.scaling.tensorScale = true;
    l.scaling.scale = 1048576.0f;   // 2^20
    l.scaling.amax = 0.05f;
    t.layers.push_back(l);
    run->apply(t);
    view.setRuns(run, {});
    auto* histogram = qobject_cast<HistogramChart*>(view.group("histogram"));
    histogram->setSelection("conv2", TensorKind::quantizedActivationGrad);
    view.redrawNow();
    // 1..5 at -30, -20, -10, 0, 20: E5M2 flushes below 2^-17 (1 + 2 of 15), its normals run
    // from 2^-14 to 2^15 (3 + 4), and 2^20 is past 57344 (5).
    const QString text = histogram->sharesText();
    QVERIFY2(text.contains("fp8 (e5m2 regions): flushed 20.00% · subnormal 0.00% · normal 46.67% · overflow 33.33%"),
             qPrintable(text));
    auto* underflow = qobject_cast<UnderflowChart*>(view.group("underflow"));
    underflow->setKind(TensorKind::quantizedActivationGrad);
    view.redrawNow();
    bool saturationTitled = false;
    for (QAbstractSeries* s : view.seriesOf("underflow"))
        if (auto* chart = s->chart()) saturationTitled |= chart->title().contains("Saturation");
    QVERIFY(saturationTitled);
    // The scale chart draws the layer's gradient scale beside the loss scale, as log2.
    auto* fp8Scale = seriesNamed<QLineSeries>(view.seriesOf("scale"), "fp8 conv2 gradient tensor scale");
    QVERIFY(fp8Scale);
    QCOMPARE(fp8Scale->points(), QList<QPointF>{QPointF(1, 20)});
    // and the gradient's amax over the steps (log2 0.05 = -4.32), dotted.
    auto* fp8Amax = seriesNamed<QLineSeries>(view.seriesOf("scale"), "fp8 conv2 gradient tensor amax");
    QVERIFY(fp8Amax);
    QCOMPARE(fp8Amax->points().size(), 1);
    QCOMPARE(fp8Amax->points().front().x(), 1.0);
    QVERIFY(std::fabs(fp8Amax->points().front().y() - std::log2(0.05)) < 1e-6);
    QCOMPARE(fp8Amax->pen().style(), Qt::DotLine);
}

// Issue 15: under a block-scaled recipe the histogram's "block scales" box shows the
// quantised tensor's block scales (as % of blocks) and the share whose scale rounded to 0.
void TestUiCharts::blockScalesHistogramUnderNvfp4()
{
    ChartsView view;
    const auto run = startedRun("nvfp4", "nvfp4");
    TelemetryEvent t;
    t.step = 50;
    LayerTelemetry l;
    l.layer = "fc1";
    l.kind = TensorKind::quantizedActivationGrad;
    l.histogram = handHistogram();
    l.stats.count = 120;
    l.scaling.present = l.scaling.blocks = l.scaling.tensorScale = true;
    // 8 blocks: 2 at 2^-12, 5 at 2^-9, 1 whose scale rounded to 0.
    l.scaling.blockScales.bins[static_cast<std::size_t>(GradientHistogram::binOf(-12))] = 2;
    l.scaling.blockScales.bins[static_cast<std::size_t>(GradientHistogram::binOf(-9))] = 5;
    l.scaling.blockScales.zeros = 1;
    t.layers.push_back(l);
    LayerTelemetry plain = l;   // an unquantised tap has no blocks: the box stays off
    plain.kind = TensorKind::activationGrad;
    plain.scaling = {};
    t.layers.push_back(plain);
    run->apply(t);
    view.setRuns(run, {});
    auto* histogram = qobject_cast<HistogramChart*>(view.group("histogram"));
    auto* box = histogram->findChild<QCheckBox*>("blockScalesBox");
    QVERIFY(box);
    histogram->setSelection("fc1", TensorKind::activationGrad);
    histogram->setBlockScalesShown(true);
    view.redrawNow();
    QVERIFY(!box->isEnabled());
    QVERIFY(!box->isVisibleTo(histogram));   // not offered where it cannot apply
    QVERIFY(!histogram->blockScalesShown());   // asked for, but this tap has no blocks

    histogram->setSelection("fc1", TensorKind::quantizedActivationGrad);
    view.redrawNow();
    QVERIFY(box->isEnabled());
    QVERIFY(box->isVisibleTo(histogram));
    QVERIFY(histogram->blockScalesShown());
    QVERIFY2(histogram->sharesText().contains("8 blocks, scales 2^-12 .. 2^-8, 12.50% with a scale of 0"),
             qPrintable(histogram->sharesText()));
    auto* line = seriesNamed<QLineSeries>(view.seriesOf("histogram"), "nvfp4 fc1 quantized_activation_grad block scales at step 50");
    QVERIFY(line);
    // The outline's height over [-9, -8) is 5 of 8 blocks, over [-12, -11) 2 of 8.
    QVERIFY(line->points().contains(QPointF(-9, 62.5)) && line->points().contains(QPointF(-12, 25.0)));
    histogram->setBlockScalesShown(false);
    view.redrawNow();
    QVERIFY(histogram->sharesText().contains("fp4-e2m1 regions"));
}

// Issue 10: panels left blank with no word why, and identical curves hiding each other.
void TestUiCharts::emptyAndCoincidingPanelsSayWhy()
{
    ChartsView view;
    const RunPtr amp = makeRun("amp", 300, Qt::blue);
    const RunPtr twin = makeRun("twin", 300, Qt::red);
    view.setRuns(amp, {twin});
    view.redrawNow();
    auto* updates = qobject_cast<UpdatesChart*>(view.group("updates"));
    QVERIFY(updates->lostNote().contains("amp and twin coincide: conv1, conv2, fc1"));
    // Issue 67 item 7: fp32 rounds updates away too; with no FP32 run shown the panel says so,
    // with one (of the same model) it names it as the reference.
    QVERIFY2(updates->lostNote().contains("fp32 loses small updates too"), qPrintable(updates->lostNote()));
    {
        TrainSettings fp32Settings = ampSettings();
        fp32Settings.recipe = *PrecisionRecipe::fromPreset("fp32");
        auto reference = std::make_shared<RunData>(QStringLiteral("id-ref"), fp32Settings);
        reference->setName("ref");
        ChartsView withReference;
        withReference.setRuns(amp, {reference});
        withReference.redrawNow();
        auto* referenced = qobject_cast<UpdatesChart*>(withReference.group("updates"));
        QVERIFY2(referenced->lostNote().contains("fp32 reference: ref"), qPrintable(referenced->lostNote()));
    }
    auto* loss = qobject_cast<LossChart*>(view.group("loss"));
    QCOMPARE(loss->noteText(), QString("amp and twin coincide: loss and accuracy"));
    // In presentation mode the note leaves the plot (at a class's font sizes it covered the
    // curves) for a label under the chart, and comes back when the mode ends.
    auto* below = loss->findChild<QLabel*>("coincideNote");
    QVERIFY(below);
    auto captionShown = [&] {
        for (QGraphicsItem* item : loss->charts().first()->childItems())
            if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(item); text && text->toolTip() == loss->noteText())
                return text->isVisible();
        return false;
    };
    view.show();
    // Normal mode: on the plot where a corner leaves the curves clear, else under it (issue
    // 67 item 7: a note over the accuracy curve); here every corner holds a curve.
    QVERIFY(!captionShown());
    QVERIFY(below->isVisible());
    QCOMPARE(below->text().simplified(), loss->noteText());
    view.setPresentationMode(true);
    view.redrawNow();
    QVERIFY(below->isVisible());
    QCOMPARE(below->text().simplified(), loss->noteText());
    QVERIFY(!captionShown());
    QVERIFY(!loss->findChild<QSlider*>("smoothingSlider")->isVisible());   // the curves, not the control
    view.setPresentationMode(false);
    view.redrawNow();
    // Back in normal mode the note is shown once, on the plot or under it, as the curves allow.
    QVERIFY(captionShown() != below->isVisible());
    QVERIFY(loss->findChild<QSlider*>("smoothingSlider")->isVisible());
    // A run whose curves leave a corner free: the note is on the plot.
    {
        ChartsView clear;
        clear.resize(1400, 900);
        clear.setRuns(makeRun("a", 300, Qt::blue, 5.0), {makeRun("b", 300, Qt::red, 5.0)});   // loss 5..7.3, high
        clear.show();
        QVERIFY(QTest::qWaitForWindowExposed(&clear));
        clear.redrawNow();
        auto* clearLoss = qobject_cast<LossChart*>(clear.group("loss"));
        auto* clearBelow = clearLoss->findChild<QLabel*>("coincideNote");
        QVERIFY(!clearLoss->noteText().isEmpty());
        bool onPlot = false;
        for (QGraphicsItem* item : clearLoss->charts().first()->childItems())
            if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(item); text && text->toolTip() == clearLoss->noteText())
                onPlot = text->isVisible();
        QVERIFY(onPlot);
        QVERIFY(!clearBelow->isVisible());
    }
    view.hide();
    QVERIFY(updates->nonFiniteNote().contains("amp and twin coincide"));   // 7 weights at the last step in both

    // Issue 67 item 7: the same loss, accuracies 0.2 points apart: on an axis of 30 points
    // (1% of it is 0.3) they coincide; on a fitted axis 3 points wide they do not.
    {
        ChartsView close;
        close.setRuns(makeRun("amp", 300, Qt::blue), {makeRun("near", 300, Qt::red, 0.0, 0.002)});
        close.redrawNow();
        auto* closeLoss = qobject_cast<LossChart*>(close.group("loss"));
        QCOMPARE(closeLoss->noteText(), QString("amp and near coincide: loss and accuracy"));   // axis 62..92
        ChartsView apart;
        apart.setRuns(makeRun("amp", 100, Qt::blue), {makeRun("near", 100, Qt::red, 0.0, 0.002)});
        apart.redrawNow();
        auto* apartLoss = qobject_cast<LossChart*>(apart.group("loss"));
        QCOMPARE(apartLoss->noteText(), QString("amp and near coincide: loss"));   // one evaluation: axis 89..92
    }
    auto* twinConv2 = seriesNamed<QLineSeries>(view.seriesOf("updates"), "twin conv2 lost updates");
    QVERIFY(twinConv2);
    QString label;
    for (QLegendMarker* m : twinConv2->chart()->legend()->markers(twinConv2)) label = m->label();
    QCOMPARE(label, QString("twin · conv2"));   // a comparison line names run and layer
    // The three narrow panels share one key instead of legends: each run's layers and name.
    QVERIFY2(updates->keyText().contains(QString::fromUtf8("twin: ■ conv1 ■ conv2 ■ fc1")), qPrintable(updates->keyText()));

    // Nothing of the chosen kind: the panel says so and which kinds have data.
    auto* underflow = qobject_cast<UnderflowChart*>(view.group("underflow"));
    underflow->setKind(TensorKind::activationGrad);
    QVERIFY(underflow->underflowNote().contains("Nothing is rounded at the activation grad sites"));
    QVERIFY(underflow->underflowNote().contains("Tensor kinds with data: weight grad."));

    // A run without weight rounding (fp32): no update is counted, and the panel says why.
    auto fp32 = std::make_shared<RunData>(QStringLiteral("id-fp32"), ampSettings());
    fp32->setName("fp32");
    fp32->apply(runStart(10));
    view.setRuns(fp32, {});
    view.redrawNow();
    QVERIFY(updates->lostNote().startsWith("No histogram step yet"));   // before its first snapshot
    TelemetryEvent snapshot;   // an fp32 run's snapshots hold no rounding site
    snapshot.step = 1;
    fp32->apply(snapshot);
    view.redrawNow();
    QVERIFY(updates->lostNote().startsWith("No weight is rounded in these runs"));
    const QString histogramText = qobject_cast<HistogramChart*>(view.group("histogram"))->sharesText();
    QVERIFY2(histogramText.contains("rounds no tensor"), qPrintable(histogramText));
    view.setRuns(nullptr, {});
    view.redrawNow();
    QVERIFY(updates->zeroNote().startsWith("No run to show"));
    QVERIFY(qobject_cast<LossChart*>(view.group("loss"))->noteText().startsWith("No run to show"));
}

void TestUiCharts::memoryStackPeakAndPlanner()
{
    ChartsView view;
    view.setRuns(makeRun("amp", 300, Qt::blue), {});
    view.redrawNow();
    const auto series = view.seriesOf("memory");
    for (const char* category : {"weights", "master weights", "gradients", "optimizer state", "activations", "workspace"})
        QVERIFY2(countContaining(series, QStringLiteral("amp %1 (peak").arg(category)) == 1, category);
    auto* group = qobject_cast<MemoryChart*>(view.group("memory"));
    QVERIFY(group->peakText().contains("peak 22.0 MiB"));
    // The top of the stack at step 1: 1+2+3+4+5+6 MiB plus the odd step's extra MiB on activations.
    auto* workspace = [&] {
        for (QAbstractSeries* s : series)
            if (s->name().startsWith("amp workspace")) return qobject_cast<QAreaSeries*>(s);
        return static_cast<QAreaSeries*>(nullptr);
    }();
    QVERIFY(workspace);
    QCOMPARE(workspace->upperSeries()->at(0), QPointF(1, 22.0));

    QTableWidget* table = group->plannerTable();
    QCOMPARE(table->rowCount(), 6);
    QCOMPARE(table->verticalHeaderItem(0)->text(), QString("FP32"));
    QCOMPARE(table->verticalHeaderItem(2)->text(), QString("AMP FP16"));
    group->setBudgetGiB(4.0);
    const int fp32 = table->item(0, 0)->text().toInt();
    const int fp16 = table->item(2, 0)->text().toInt();
    QVERIFY(fp32 > 0);
    QVERIFY(fp16 > fp32 * 3 / 2);   // fp16 activations roughly double the batch
    // Issue 67 item 3: each number is what the engine's memory check admits for that recipe
    // (train/memory_check.h; tst_ui_reduction checks the check admits it and not one more).
    const std::int64_t budget = std::int64_t{4} << 30;
    TrainSettings seed;
    seed.model.kind = "seed-cnn";
    seed.model.widths.clear();
    const auto seedRows = presetEstimates(seed);
    const auto runRows = presetEstimates(ampSettings());
    for (int r = 0; r < 6; ++r) {
        QCOMPARE(table->item(r, 0)->text().toLongLong(), largestBatchWithin(seedRows[static_cast<std::size_t>(r)].estimate, budget));
        QCOMPARE(table->item(r, 2)->text().toLongLong(), largestBatchWithin(runRows[static_cast<std::size_t>(r)].estimate, budget));
    }
    QCOMPARE(table->columnCount(), 4);   // seed-cnn, ratio, the run's small-cnn, and with the measured workspace
    QCOMPARE(table->horizontalHeaderItem(2)->text(), QString("small-cnn"));
    // The workspace a run of the recipe measured (the amp run: 6 MiB over batch 32) is added
    // in its own column; a recipe no run shown has measured gets no number there.
    QVERIFY(table->item(2, 3)->text().toInt() > 0);
    QVERIFY(table->item(2, 3)->text().toInt() < table->item(2, 2)->text().toInt());
    QVERIFY2(table->item(2, 3)->toolTip().contains("measured by a run of this recipe"), qPrintable(table->item(2, 3)->toolTip()));
    QCOMPARE(table->item(0, 3)->text(), QString("–"));   // no FP32 run shown
    QVERIFY(table->item(0, 3)->toolTip().startsWith("No run of this recipe"));
}

// Issue 68 item 3: a PyTorch probe's record still being written knows no plan: the progress
// says its step and that it runs, not "2050 / 2050 (100%)".
void TestUiCharts::probeRecordWhileWrittenShowsItsStep()
{
    nlohmann::json record = {{"format_version", 1},
                             {"source", {{"kind", "pytorch-probe"}, {"as_run", "fp32"}, {"judged_format", "fp16"}}},
                             {"settings", {{"recipe", "fp32"}}},
                             {"steps", nlohmann::json::array()},
                             {"events", {{{"step", 0}, {"type", "status"}, {"status", "running"}, {"message", ""}}}},
                             {"summary", {{"status", "running"}, {"steps", 40}}}};
    for (int i = 1; i <= 40; ++i)
        record["steps"].push_back({{"step", i}, {"epoch", 0}, {"loss", 1.0}, {"loss_scale", 1.0}, {"skipped", false},
                                   {"lr", 0.001}, {"batch", 64}, {"time_ms", 5.0}});
    // Read as the app reads a record another process still writes.
    const RunPtr run = RunData::fromRecord(QStringLiteral("probe"), readRunRecord(record, "probe"), false);
    RunProgressWidget progress;
    progress.showRun(run.get());
    QCOMPARE(progress.progressText(), QString::fromUtf8("step 40 · running"));
    QCOMPARE(run->judgedFormat(), std::string("fp16"));
}

// Issue 68 item 3: what a PyTorch script logged of its own (probe.log) is drawn in the
// "scalars" group, one name at a time, a line per run that logged it; the group shows only
// while a shown run has such values.
void TestUiCharts::loggedValuesChartShowsWhatWasLogged()
{
    const auto runWith = [](const char* id, const std::vector<ScalarEvent>& scalars) {
        nlohmann::json record = {{"format_version", 1}, {"settings", {{"recipe", "fp32"}}},
                                 {"steps", nlohmann::json::array()}, {"summary", {{"status", "completed"}}},
                                 {"scalars", nlohmann::json::array()}};
        for (int i = 1; i <= 10; ++i)
            record["steps"].push_back({{"step", i}, {"loss", 1.0}, {"batch", 8}, {"time_ms", 1.0}});
        for (const ScalarEvent& s : scalars)
            record["scalars"].push_back({{"step", s.step}, {"name", s.name},
                                         {"value", std::isfinite(s.value) ? nlohmann::json(s.value) : nlohmann::json()}});
        const RunPtr run = RunData::fromRecord(QString::fromLatin1(id), readRunRecord(record, id));
        run->setName(QString::fromLatin1(id));
        return run;
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const RunPtr plain = runWith("plain", {});
    const RunPtr mine = runWith("mine", {{1, "grad_norm", 4.0}, {5, "grad_norm", 2.0}, {5, "lr", 0.1},
                                         {10, "grad_norm", 1.0}, {10, "lr", 0.05}, {10, "val/acc", nan}});
    const RunPtr theirs = runWith("theirs", {{2, "grad_norm", 3.0}, {8, "grad_norm", 0.5}});
    ChartsView view;
    view.resize(1400, 1800);
    view.show();
    auto* group = qobject_cast<ScalarsChart*>(view.group("scalars"));
    QVERIFY(group);
    QVERIFY(!ChartsView::groupNames().contains("scalars"));   // lessons do not name it
    view.setRuns(plain, {});
    view.redrawNow();
    QVERIFY(group->isHidden());   // the lab's own runs log nothing: no empty group
    view.setRuns(mine, {theirs, plain});
    view.redrawNow();
    QVERIFY(!group->isHidden());
    QCOMPARE(group->names(), (QStringList{"grad_norm", "lr", "val/acc"}));
    QCOMPARE(group->shownName(), QString("grad_norm"));
    const auto pointsOf = [&](const QString& run) {
        for (QAbstractSeries* s : view.seriesOf("scalars"))
            if (s->name().startsWith(run + " ")) return qobject_cast<QXYSeries*>(s)->points();
        return QList<QPointF>();
    };
    QCOMPARE(pointsOf("mine"), (QList<QPointF>{{1, 4.0}, {5, 2.0}, {10, 1.0}}));
    QCOMPARE(pointsOf("theirs"), (QList<QPointF>{{2, 3.0}, {8, 0.5}}));
    QVERIFY(pointsOf("plain").isEmpty());
    auto* note = group->findChild<QLabel*>("scalarsNote");
    QVERIFY(note);
    QVERIFY2(note->text().contains("not logged by plain"), qPrintable(note->text()));
    group->showName("lr");   // the chooser redraws at once
    QCOMPARE(pointsOf("mine"), (QList<QPointF>{{5, 0.1}, {10, 0.05}}));
    QVERIFY(pointsOf("theirs").isEmpty());
    group->showName("val/acc");
    QVERIFY(pointsOf("mine").isEmpty());
    QCOMPARE(note->text(), QString::fromUtf8("1 value logged as NaN or infinity, not drawn · not logged by theirs, plain"));
    view.setRuns(plain, {});
    view.redrawNow();
    QVERIFY(group->isHidden());
}

// Issue 70 item 1: an autoencoder's run has no accuracy: the loss chart draws its test MSE on
// the loss axis (no accuracy axis), and the "reconstructions" group shows the first test
// images with the run's reconstructions of them; a classifier's run shows neither.
void TestUiCharts::autoencoderShowsMseAndReconstructions()
{
    TrainSettings settings;
    settings.model = ModelSpec{"autoencoder", {}};
    const auto run = std::make_shared<RunData>(QStringLiteral("id-ae"), settings);
    run->setName(QStringLiteral("ae"));
    run->apply(runStart(20));
    for (std::int64_t i = 1; i <= 20; ++i) {
        StepEvent e;
        e.step = i;
        e.loss = 0.1f / static_cast<float>(i);
        e.lossScale = 1.0;
        e.batch = 32;
        e.timeMs = 1.0;
        run->apply(e);
    }
    ReconstructedImage image{0, std::vector<std::uint8_t>(784, 255), std::vector<std::uint8_t>(784, 128)};
    run->apply(EvalEvent{10, 0, 0.0, 0.04, {image}});
    run->apply(EvalEvent{20, 0, 0.0, 0.025, {image, image}});
    ChartsView view;
    view.resize(1400, 1800);
    view.show();
    auto* group = qobject_cast<ReconstructionsView*>(view.group("reconstructions"));
    QVERIFY(group);
    QVERIFY(!ChartsView::groupNames().contains("reconstructions"));   // lessons do not name it
    view.setRuns(makeRun("classifier", 200, Qt::blue), {});
    view.redrawNow();
    QVERIFY(group->isHidden());
    view.setRuns(run, {});
    view.redrawNow();
    QVERIFY(!group->isHidden());
    QCOMPARE(group->rowTitles(), (QStringList{"test images", "ae: test MSE 0.0250, PSNR 16.02 dB (step 20)"}));
    QList<QPointF> mse;
    bool accuracyDrawn = false;
    for (QAbstractSeries* s : view.seriesOf("loss")) {
        if (s->name() == "ae test MSE") mse = qobject_cast<QXYSeries*>(s)->points();
        accuracyDrawn |= s->name().contains("accuracy");
    }
    QCOMPARE(mse, (QList<QPointF>{{10, 0.04}, {20, 0.025}}));
    QVERIFY(!accuracyDrawn);
}

// Issue 70 item 2: while a shown run accumulates gradients, the updates group offers its
// buffer's lost additions in the first panel's place, as shares of the nonzero additions.
void TestUiCharts::accumulationLostAdditionsAreAChoice()
{
    TrainSettings settings;
    settings.model = ModelSpec{"mlp", {}};
    settings.gradAccumSteps = 4;
    settings.gradAccumFormat = Format::bf16;
    const auto run = std::make_shared<RunData>(QStringLiteral("id-acc"), settings);
    run->setName(QStringLiteral("acc"));
    run->apply(runStart(2));
    for (std::int64_t i = 1; i <= 2; ++i) {
        StepEvent e;
        e.step = i;
        e.loss = 1.0f;
        e.lossScale = 1.0;
        e.batch = 32;
        e.timeMs = 1.0;
        run->apply(e);
        TelemetryEvent t;
        t.step = i;
        t.lossScale = 1.0;
        LayerTelemetry l;
        l.layer = "fc1";
        l.kind = TensorKind::weightGrad;
        l.update.nonzero = 100;
        l.update.lost = 10;
        l.update.accumulated = 200;
        l.update.accumulationLost = i == 1 ? 50 : 20;
        t.layers.push_back(l);
        run->apply(t);
    }
    ChartsView view;
    view.resize(1400, 1800);
    view.show();
    auto* updates = qobject_cast<UpdatesChart*>(view.group("updates"));
    auto* what = updates->findChild<QComboBox*>("lostWhatCombo");
    QVERIFY(what);
    view.setRuns(makeRun("plain", 200, Qt::blue), {});
    view.redrawNow();
    QVERIFY(what->isHidden());
    view.setRuns(run, {});
    view.redrawNow();
    QVERIFY(!what->isHidden());
    const auto fc1 = [&] {
        for (QAbstractSeries* s : view.seriesOf("updates"))
            if (s->name().startsWith("acc fc1 ")) return std::pair{s->name(), qobject_cast<QXYSeries*>(s)->points()};
        return std::pair{QString(), QList<QPointF>()};
    };
    QCOMPARE(fc1().first, QString("acc fc1 lost updates"));
    QCOMPARE(fc1().second, (QList<QPointF>{{1, 10.0}, {2, 10.0}}));
    updates->showLost("additions");
    QCOMPARE(fc1().first, QString("acc fc1 lost additions"));
    QCOMPARE(fc1().second, (QList<QPointF>{{1, 25.0}, {2, 10.0}}));
}

// Issue 67 item 3: the peak is one figure, the sum's highest and when it was reached; the
// phases' figures, sampled at a phase's end, stand apart, never as its parts.
void TestUiCharts::memoryPeakIsNeverASum()
{
    constexpr std::int64_t kMiB = 1024 * 1024;
    MemorySnapshot peak;
    peak.totalPeak = 454 * kMiB / 10;
    peak.peakPhase = MemoryPhase::evaluation;
    peak.peak[static_cast<std::size_t>(MemoryCategory::workspace)] = 175 * kMiB / 10;
    peak.phasePeak[static_cast<std::size_t>(MemoryPhase::training)].total = 117 * kMiB / 10;
    peak.phasePeak[static_cast<std::size_t>(MemoryPhase::evaluation)].total = 390 * kMiB / 10;
    QCOMPARE(MemoryChart::peakLine("AMP FP16", peak),
             QString::fromUtf8("AMP FP16: peak 45.4 MiB during an evaluation, workspace up to 17.5 MiB · held at the end: "
                               "a step's 11.7 MiB, an evaluation's 39.0 MiB"));
    peak.peakPhase.reset();   // an older record
    peak.phasePeak = {};
    QCOMPARE(MemoryChart::peakLine("AMP FP16", peak), QString("AMP FP16: peak 45.4 MiB, workspace up to 17.5 MiB"));
    // Issue 68 item 3: a record without memory (the probe on the CPU) says so, not "peak 0 B".
    QCOMPARE(MemoryChart::peakLine("PyTorch", MemorySnapshot{}), QString("PyTorch: memory not measured"));
}

// On a device the chart draws the whole device's figure and, where the run recorded the
// figure from before it placed anything, what the run itself holds (the difference), the
// line to set against the stack of the accounted categories.
void TestUiCharts::deviceLinesShowWhatTheRunHolds()
{
    constexpr std::uint64_t kMiB = 1024 * 1024;
    const auto deviceRun = [&](const char* id, std::optional<std::uint64_t> before) {
        const RunPtr run = std::make_shared<RunData>(id, ampSettings());
        run->setName(id);
        RunStartEvent start = runStart(2, "cuda");
        start.deviceBeforeRun = before;
        run->apply(start);
        for (int i = 1; i <= 2; ++i) {
            StepEvent e;
            e.step = i;
            e.batch = 32;
            run->apply(e);
            MemoryEvent m;
            m.step = i;
            m.memory.live[0] = m.memory.totalLive = static_cast<std::int64_t>((3000 + i) * kMiB);
            m.device = DeviceMemoryInfo{(594 + 3205 + static_cast<std::uint64_t>(i)) * kMiB, 80 * 1024 * kMiB};
            run->apply(m);
        }
        return run;
    };
    ChartsView view;
    view.setRuns(deviceRun("gpu", 594 * kMiB), {});
    view.redrawNow();
    const auto series = view.seriesOf("memory");
    auto* whole = seriesNamed<QLineSeries>(series, "gpu device memory in use (whole device)");
    auto* held = seriesNamed<QLineSeries>(
        series, "gpu device memory held by the run (in use minus the 594.0 MiB in use before it started)");
    QVERIFY(whole && held);
    QCOMPARE(whole->at(0).y(), 594.0 + 3205.0 + 1.0);
    QCOMPARE(held->at(0).y(), 3206.0);
    QCOMPARE(held->at(held->count() - 1).y(), 3207.0);

    // A record from before the figure was kept: the whole device's line alone.
    view.setRuns(deviceRun("older", std::nullopt), {});
    view.redrawNow();
    QVERIFY(seriesNamed<QLineSeries>(view.seriesOf("memory"), "older device memory in use (whole device)"));
    QCOMPARE(countContaining(view.seriesOf("memory"), "held by the run"), 0);
}

void TestUiCharts::throughputAndProgress()
{
    ChartsView view;
    const RunPtr run = std::make_shared<RunData>("id-half", ampSettings());
    run->setName("half");
    RunStartEvent start = runStart(400);
    start.arithmetic = "hardware: AVX-512 BF16 via oneDNN 2.6.3 (brg:avx512_core_bf16)";
    run->apply(start);
    for (int i = 1; i <= 100; ++i) {
        StepEvent e;
        e.step = i;
        e.batch = 32;
        e.timeMs = 8.0;   // 4000 images/s
        e.totalSteps = 400;
        run->apply(e);
    }
    view.setRuns(run, {});
    view.redrawNow();
    auto* line = seriesNamed<QLineSeries>(view.seriesOf("throughput"), "half images/s (4000 overall)");
    QVERIFY(line);
    QCOMPARE(line->count(), 100);
    QCOMPARE(line->at(50).y(), 4000.0);
    // The legend says which arithmetic the products ran in (issue 16).
    QString label;
    for (QLegendMarker* m : line->chart()->legend()->markers(line)) label = m->label();
    QCOMPARE(label, QString("images/s (4000 overall, hardware)"));
    QCOMPARE(run->arithmeticKind(), QString("hardware"));
    auto* group = qobject_cast<ThroughputChart*>(view.group("throughput"));
    QCOMPARE(group->progressBar()->value(), 100);
    QCOMPARE(group->progressBar()->maximum(), 400);
    QVERIFY2(group->progressText().contains("elapsed 0:01") && group->progressText().contains("remaining 0:02"),
             qPrintable(group->progressText()));   // 0.8 s done, 300 x 8 ms = 2.4 s left
}

void TestUiCharts::settingChangeMarkedOnEveryChart()
{
    ChartsView view;
    view.setRuns(makeRun("amp", 1000, Qt::blue), {});
    view.redrawNow();
    const QString marker = "amp setting change at step 500: loss scaling dynamic from 65536 -> off";
    for (const char* group : {"loss", "scale", "underflow", "memory", "throughput"}) {
        const auto series = view.seriesOf(group);
        const int expected = QString(group) == "underflow" ? 2 : 1;   // underflow and overflow charts
        QCOMPARE(countContaining(series, marker), expected);
        auto* line = seriesNamed<QLineSeries>(series, marker);
        QCOMPARE(line->count(), 2);
        QCOMPARE(line->at(0).x(), 500.0);
        QCOMPARE(line->at(1).x(), 500.0);
    }
    // The histogram's x is the exponent: the change is listed under its slider.
    const auto labels = view.group("histogram")->findChildren<QLabel*>();
    bool listed = false;
    for (QLabel* l : labels) listed |= l->text().contains("step 500: loss scaling dynamic from 65536 -> off");
    QVERIFY(listed);
}

void TestUiCharts::overlayAddsSeriesPerComparisonRun()
{
    ChartsView view;
    const RunPtr a = makeRun("amp", 600, Qt::blue);
    view.setRuns(a, {});
    view.redrawNow();
    QMap<QString, int> alone;
    for (const QString& g : ChartsView::groupNames()) alone[g] = static_cast<int>(view.seriesOf(g).size());

    const RunPtr b = makeRun("pure", 600, Qt::red, 0.5);
    const RunPtr c = makeRun("noscale", 600, Qt::darkGreen, 1.0);
    view.setRuns(a, {b, c, a});   // the current run listed again is not drawn twice
    view.redrawNow();
    for (const QString& g : ChartsView::groupNames()) {
        const auto series = view.seriesOf(g);
        QVERIFY2(series.size() > alone[g], qPrintable(g));
        QVERIFY2(countContaining(series, "pure") > 0 && countContaining(series, "noscale") > 0, qPrintable(g));
    }
    QCOMPARE(countContaining(view.seriesOf("loss"), "loss (smoothed)"), 3);
    QVERIFY(seriesNamed<QLineSeries>(view.seriesOf("histogram"), "pure conv1 weight_grad at step 600"));
    auto* pure = seriesNamed<QLineSeries>(view.seriesOf("loss"), "pure loss (smoothed)");
    QCOMPARE(pure->pen().color(), QColor(Qt::red));

    view.setRuns(a, {});   // removing the overlay removes its series
    view.redrawNow();
    for (const QString& g : ChartsView::groupNames()) QCOMPARE(static_cast<int>(view.seriesOf(g).size()), alone[g]);
}

void TestUiCharts::longRunIsReducedToPixelColumns()
{
    ChartsView view;
    const RunPtr run = makeRun("long", 100000, Qt::blue);
    // One spike that must survive the reduction.
    StepEvent spike;
    spike.step = 100001;
    spike.loss = 40.0f;
    spike.batch = 32;
    spike.timeMs = 4.0;
    run->apply(spike);
    view.setRuns(run, {});
    view.redrawNow();
    auto* raw = seriesNamed<QLineSeries>(view.seriesOf("loss"), "long loss");
    QVERIFY(raw);
    QVERIFY2(raw->count() <= 4 * 2 * 1000, qPrintable(QString::number(raw->count())));   // <= 4 per device column
    QVERIFY(raw->count() >= 100);
    double top = 0;
    for (const QPointF& p : raw->points()) top = std::max(top, p.y());
    QCOMPARE(top, 40.0);
    auto* scale = seriesNamed<QLineSeries>(view.seriesOf("scale"), "long loss scale");
    QVERIFY(scale->count() < 8000);
}

void TestUiCharts::timerRedrawsWhenRevisionMoves()
{
    ChartsView view;
    view.resize(1200, 900);
    const RunPtr run = makeRun("live", 10, Qt::blue);
    view.setRuns(run, {});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTRY_VERIFY(seriesNamed<QLineSeries>(view.seriesOf("loss"), "live loss"));
    auto* raw = seriesNamed<QLineSeries>(view.seriesOf("loss"), "live loss");
    QTRY_COMPARE(raw->count(), 10);
    StepEvent e;
    e.step = 11;
    e.loss = 0.5f;
    e.batch = 32;
    e.timeMs = 4.0;
    run->apply(e);   // only marks the run changed; the frame timer redraws
    QTRY_COMPARE(raw->count(), 11);
}

void TestUiCharts::darkPaletteGivesDarkTheme()
{
    ChartsView view;
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(30, 30, 30));
    dark.setColor(QPalette::Base, QColor(20, 20, 20));
    dark.setColor(QPalette::Text, QColor(230, 230, 230));
    view.setPalette(dark);
    view.setRuns(makeRun("amp", 100, QColor(255, 160, 0)), {});
    view.redrawNow();
    auto* histogram = qobject_cast<HistogramChart*>(view.group("histogram"));
    QCOMPARE(histogram->charts().front()->theme(), QChart::ChartThemeDark);
    // Run colors survive the theme change.
    auto* smooth = seriesNamed<QLineSeries>(view.seriesOf("loss"), "amp loss (smoothed)");
    QCOMPARE(smooth->pen().color(), QColor(255, 160, 0));
}

void TestUiCharts::presentationModeThickensLinesAndEnlargesFonts()
{
    ChartsView view;
    const RunPtr run = makeRun("amp", 100, QColor(255, 160, 0));
    view.setRuns(run, {});
    view.redrawNow();
    auto* smooth = seriesNamed<QLineSeries>(view.seriesOf("loss"), "amp loss (smoothed)");
    auto* scale = seriesNamed<QLineSeries>(view.seriesOf("scale"), "amp loss scale");
    QVERIFY(smooth && scale);
    QChart* chart = smooth->chart();
    QAbstractAxis* axis = smooth->attachedAxes().front();
    const qreal width = smooth->pen().widthF(), scaleWidth = scale->pen().widthF();
    const qreal title = chart->titleFont().pointSizeF(), labels = axis->labelsFont().pointSizeF();
    const qreal legend = chart->legend()->font().pointSizeF();
    const qreal widget = view.group("histogram")->font().pointSizeF();
    QVERIFY(width < 3.0 && title > 0 && labels > 0 && legend > 0);

    view.setPresentationMode(true);
    QVERIFY(view.presentationMode());
    view.redrawNow();
    QVERIFY(smooth->pen().widthF() >= 3.0);
    QVERIFY(scale->pen().widthF() >= 3.0);
    QCOMPARE(smooth->pen().color(), QColor(255, 160, 0));   // the run's color still names the run
    QCOMPARE(chart->titleFont().pointSizeF(), title * 1.5);
    QCOMPARE(axis->labelsFont().pointSizeF(), labels * 1.5);
    QCOMPARE(chart->legend()->font().pointSizeF(), legend * 1.5);
    QCOMPARE(view.group("histogram")->font().pointSizeF(), widget * 1.5);   // combos, captions, planner
    QCOMPARE(smooth->count(), 100);   // the data is the same

    view.setPresentationMode(false);
    view.redrawNow();
    QCOMPARE(smooth->pen().widthF(), width);
    QCOMPARE(scale->pen().widthF(), scaleWidth);
    QCOMPARE(chart->titleFont().pointSizeF(), title);
    QCOMPARE(axis->labelsFont().pointSizeF(), labels);
    QCOMPARE(chart->legend()->font().pointSizeF(), legend);
    QCOMPARE(view.group("histogram")->font().pointSizeF(), widget);
}

// Issue 3 (screenshot review): legend entries were elided ("AMP FP16 16:56:38 los...").
// The title names the watched run once; its entries say what they are; a comparison run
// gets one entry with its name. Series names keep the run's name (tooltips, tests).
void TestUiCharts::legendsUseShortLabels()
{
    ChartsView view;
    const RunPtr amp = makeRun("amp", 100, Qt::blue);
    const RunPtr pure = makeRun("pure", 100, Qt::red);
    view.resize(1200, 900);
    view.setRuns(amp, {pure});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.redrawNow();
    auto labelOf = [](QAbstractSeries* s) {
        const auto markers = s->chart()->legend()->markers(s);
        return markers.isEmpty() || !markers.front()->isVisible() ? QString() : markers.front()->label();
    };
    auto* smooth = seriesNamed<QLineSeries>(view.seriesOf("loss"), "amp loss (smoothed)");
    auto* accuracy = seriesNamed<QLineSeries>(view.seriesOf("loss"), "amp test accuracy");
    auto* pureSmooth = seriesNamed<QLineSeries>(view.seriesOf("loss"), "pure loss (smoothed)");
    auto* pureAccuracy = seriesNamed<QLineSeries>(view.seriesOf("loss"), "pure test accuracy");
    QVERIFY(smooth && accuracy && pureSmooth && pureAccuracy);
    QTRY_COMPARE(labelOf(smooth), QString("loss (smoothed)"));   // markers show once the legend is laid out
    QCOMPARE(labelOf(accuracy), QString("test acc."));
    QCOMPARE(labelOf(pureSmooth), QString("pure"));
    QCOMPARE(labelOf(pureAccuracy), QString());   // hidden: one entry per comparison run
    QVERIFY(smooth->chart()->title().endsWith(QStringLiteral("· amp")));
    auto* scale = seriesNamed<QLineSeries>(view.seriesOf("scale"), "amp loss scale");
    QCOMPARE(labelOf(scale), QString("loss scale"));
    for (QAbstractAxis* a : scale->attachedAxes())
        if (auto* v = qobject_cast<QValueAxis*>(a); v && v->orientation() == Qt::Vertical)   // labels 2^0, 2^3, ... 2^18
            QCOMPARE(v->labelFormat(), QString("2^%d"));
}

// Issue (lesson 2 in presentation mode): the skipped-steps caption, always at the bottom
// right, covered the "static scale 8" line. It goes to the first corner no line crosses.
void TestUiCharts::captionGoesToACornerFreeOfData()
{
    auto* chart = new QChart;
    QChartView view(chart);
    view.resize(600, 400);
    auto* x = new QValueAxis;
    auto* y = new QValueAxis;
    x->setRange(0, 100);
    y->setRange(0, 100);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    auto addLine = [&](QPointF a, QPointF b) {
        auto* line = new QLineSeries;
        line->append(a);
        line->append(b);
        chart->addSeries(line);
        line->attachAxis(x);
        line->attachAxis(y);
    };
    auto* caption = new QGraphicsSimpleTextItem(QStringLiteral("static scale 8: 0 skipped of 300 steps\ndynamic: 8 skipped of 300 steps"), chart);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTRY_VERIFY(chart->plotArea().width() > 300);
    const QRectF area = chart->plotArea();
    auto placed = [&] { return QRectF(caption->pos(), caption->boundingRect().size()); };

    QCOMPARE(placeCaptionClearOfData(chart, caption), 0);   // nothing drawn: bottom right
    QVERIFY(placed().right() > area.center().x() && placed().bottom() > area.center().y());

    addLine({0, 3}, {100, 3});   // a static scale line along the bottom, under the caption
    QCOMPARE(placeCaptionClearOfData(chart, caption), 0);
    QVERIFY(placed().right() > area.center().x() && placed().bottom() < area.center().y());   // top right
    QCOMPARE(placeCaptionClearOfData(chart, caption), 0);   // still free: it stays
    QVERIFY(placed().bottom() < area.center().y());

    addLine({60, 97}, {100, 97});   // the right half of the top too: top left is the first free corner
    QCOMPARE(placeCaptionClearOfData(chart, caption), 0);
    QVERIFY(placed().left() < area.center().x() && placed().bottom() < area.center().y());
    for (const QPointF& corner : {QPointF(0, 3), QPointF(100, 3), QPointF(0, 97), QPointF(100, 97)})
        QVERIFY(!placed().contains(chart->mapToPosition(corner)));

    addLine({0, 97}, {60, 97});   // every corner covered: the caption still goes to one of them
    QVERIFY(placeCaptionClearOfData(chart, caption) > 0);
    QVERIFY(area.contains(placed()));
}

// Issue (format explorer open at 1500 px): the two-column grid scrolled sideways, cutting
// the right-hand charts. Too narrow for two columns, the charts stack in one.
void TestUiCharts::narrowViewStacksChartsInOneColumn()
{
    ChartsView view;
    view.resize(1400, 900);
    view.setRuns(makeRun("amp", 1000, Qt::blue), {});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.columns(), 2);
    auto* scroll = view.findChild<QScrollArea*>();
    QVERIFY(scroll);
    auto* loss = view.group(QStringLiteral("loss"));
    auto* scale = view.group(QStringLiteral("scale"));
    QTRY_VERIFY(scale->x() > loss->x());   // side by side

    // Docks open on both sides: too narrow for two readable columns (the underflow group's
    // two panels alone need about 570 px). One column, and the charts scroll down, not sideways.
    view.resize(640, 900);
    QTRY_COMPARE(view.columns(), 1);
    QTRY_VERIFY(scale->y() > loss->y() && scale->x() == loss->x());
    QTRY_VERIFY(!scroll->horizontalScrollBar()->isVisible());
    QVERIFY(scroll->widget()->width() <= scroll->viewport()->width());

    view.resize(1400, 900);   // room again: back to two columns
    QTRY_COMPARE(view.columns(), 2);
    QTRY_VERIFY(scale->x() > loss->x());
}

// Issue (screenshot review, no run): the loss and underflow charts' step axes read
// "0 0 0 0 1": five even ticks over 0..1.2 written with "%d". Every value axis of every
// chart, with no run at all, writes distinct labels, each the value where it stands.
void TestUiCharts::emptyChartsLabelTheirTicksTruly()
{
    ChartsView view;
    view.resize(1400, 1000);
    view.setRuns(nullptr, {});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.redrawNow();
    int axesChecked = 0;
    for (const QString& name : ChartsView::groupNames()) {
        auto* group = qobject_cast<ChartGroup*>(view.group(name));
        QVERIFY(group);
        for (QChart* chart : group->charts()) {
            if (!chart->isVisible() || chart->plotArea().width() < 50) continue;
            for (QAbstractAxis* a : chart->axes()) {
                auto* axis = qobject_cast<QValueAxis*>(a);
                if (!axis || !axis->isVisible()) continue;
                // What is wrong with the drawn labels ("" when nothing). Checked until the
                // chart has laid the axis out for its last range and tick type.
                auto problem = [&] {
                    const QList<DrawnLabel> labels = drawnLabels(chart, axis);
                    if (labels.size() < 2) return QStringLiteral("%1: fewer than two labels").arg(chart->title());
                    const double tolerance = 0.03 * (axis->max() - axis->min());
                    QStringList texts;
                    for (const DrawnLabel& l : labels) {
                        const QString where = QStringLiteral("%1: \"%2\" at %3 (axis %4..%5)")
                                                  .arg(chart->title(), l.text).arg(l.valueAtLabel).arg(axis->min()).arg(axis->max());
                        if (texts.contains(l.text)) return where + QStringLiteral(" written twice");
                        if (std::abs(l.text.toDouble() - l.valueAtLabel) > tolerance) return where;
                        texts << l.text;
                    }
                    return QString();
                };
                QTRY_VERIFY2(problem().isEmpty(), qPrintable(problem()));
                ++axesChecked;
            }
        }
    }
    QVERIFY(axesChecked >= 8);   // the step axes of five groups, their value axes
}

// The rule behind it (fitTicksToLabels, through setAxisRange), issue 67 item 7: ticks at
// multiples of 1, 2 or 5 times a power of ten, at most one more than the tick count (5),
// each a value the labels write: "%d" whole numbers, "%.1f" tenths.
void TestUiCharts::ticksLandOnWhatLabelsWrite_data()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<double>("low");
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("interval");
    QTest::addRow("%%d empty 0..1") << "%d" << 0.0 << 1.0 << 1.0;
    QTest::addRow("%%d 0..1.2: 1, not 0.3") << "%d" << 0.0 << 1.2 << 1.0;
    QTest::addRow("%%d 0..4.8: 1, not 1.2") << "%d" << 0.0 << 4.8 << 1.0;
    QTest::addRow("%%d 0..6: 2, not 1.5") << "%d" << 0.0 << 6.0 << 2.0;
    QTest::addRow("%%d 0..10: 2, not 2.5") << "%d" << 0.0 << 10.0 << 2.0;
    QTest::addRow("%%d 0..1200: 500, not 300") << "%d" << 0.0 << 1200.0 << 500.0;
    QTest::addRow("%%d 0..40: 10") << "%d" << 0.0 << 40.0 << 10.0;
    QTest::addRow("%%d 0..320 steps: 100, not 80") << "%d" << 0.0 << 320.0 << 100.0;
    QTest::addRow("%%.1f 0..0.3: 0.1, not 0.075") << "%.1f" << 0.0 << 0.3 << 0.1;
    QTest::addRow("%%.3g 0..1.2: 0.5, not 0.3") << "%.3g" << 0.0 << 1.2 << 0.5;
    QTest::addRow("%%.3g 0..25.5: 5, not 6.38") << "%.3g" << 0.0 << 25.5 << 5.0;
    QTest::addRow("%%.3g 0..103 percent: 20, not 25.75") << "%.3g" << 0.0 << 103.0 << 20.0;
    QTest::addRow("%%.3g 83..96 accuracy: 5") << "%.3g" << 83.0 << 96.0 << 5.0;
    QTest::addRow("%%d -47..-3 log2: 10, not 11") << "%d" << -47.0 << -3.0 << 10.0;
}

void TestUiCharts::ticksLandOnWhatLabelsWrite()
{
    QFETCH(QString, format);
    QFETCH(double, low);
    QFETCH(double, max);
    QFETCH(double, interval);
    QCOMPARE(labelResolution(QStringLiteral("%d")), 1.0);
    QCOMPARE(labelResolution(QStringLiteral("%.2f")), 0.01);
    QCOMPARE(labelResolution(QStringLiteral("%.3g")), 0.0);
    std::unique_ptr<QValueAxis> axis(makeValueAxis(QStringLiteral("step"), format));
    setAxisRange(axis.get(), low, max);
    QCOMPARE(axis->tickType(), QValueAxis::TicksDynamic);
    QCOMPARE(axis->tickInterval(), interval);
    QCOMPARE(axis->tickAnchor(), 0.0);
    // Every tick a multiple of 1, 2 or 5 times a power of ten, at most 6 in the range.
    const double mantissa = interval / std::pow(10.0, std::floor(std::log10(interval)));
    QVERIFY(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9);
    QVERIFY(std::floor(max / interval + 1e-9) - std::ceil(low / interval - 1e-9) + 1 <= 6);
}

// Issue 34: a dragged rectangle zooms a chart and the zoom stays while the run goes on; a
// right click (resetZoom) returns to the whole range; hovering names the nearest point.
void TestUiCharts::zoomStaysWhileRunsTrainAndHoverTellsValues()
{
    ChartsView view;
    const RunPtr run = makeRun("amp", 1000, Qt::blue);
    showOnScreen(view, run);
    auto* loss = qobject_cast<LossChart*>(view.group("loss"));
    auto* chartView = loss->findChild<TimedChartView*>();
    QVERIFY(chartView);
    QChart* chart = loss->charts().first();
    auto* steps = qobject_cast<QValueAxis*>(chart->axes(Qt::Horizontal).first());
    const double fullMax = steps->max();
    QVERIFY(fullMax >= 1000);

    // Hover: the accuracy point at step 500 (70%), from its position on the screen.
    auto* accuracy = seriesNamed<QLineSeries>(view.seriesOf("loss"), "amp test accuracy");
    QVERIFY(accuracy);
    const QPoint at = chartView->mapFromScene(chart->mapToPosition(QPointF(500, 70), accuracy));
    QCOMPARE(chartView->valueTextAt(at), QString::fromUtf8("amp test accuracy\nstep 500 · test accuracy % 70"));
    QCOMPARE(chartView->valueTextAt(at + QPoint(0, 40)).startsWith("amp test accuracy"), false);   // 40 px away: not it

    // A click is no zoom; a drag over the left part of the plot is.
    const QRect plot = chartView->mapFromScene(chart->plotArea()).boundingRect();
    QVERIFY(!chartView->zoomTo(QRect(plot.center(), QSize(3, 3))));
    QVERIFY(chartView->zoomTo(QRect(plot.topLeft(), QSize(plot.width() / 4, plot.height() - 2))));
    QVERIFY(chartView->zoomed());
    // Issue 67 item 7: the "zoomed" note lies inside the plot, clear of the title above it.
    bool noteSeen = false;
    for (QGraphicsItem* item : chart->childItems())
        if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(item); text && text->text().startsWith("zoomed")) {
            noteSeen = text->isVisible();
            QVERIFY(chart->plotArea().contains(text->mapRectToParent(text->boundingRect())));
        }
    QVERIFY(noteSeen);
    const double zoomedMax = steps->max();
    QVERIFY2(zoomedMax < fullMax / 2, qPrintable(QString::number(zoomedMax)));
    // The run trains on: its curves grow, the zoomed range stays.
    for (std::int64_t i = 1001; i <= 1400; ++i) {
        StepEvent e;
        e.step = i;
        e.loss = 0.2f;
        e.lossScale = 1.0;
        e.batch = 32;
        run->apply(e);
    }
    view.redrawNow();
    QCOMPARE(steps->max(), zoomedMax);
    // Back to the whole range, which follows the data again.
    chartView->resetZoom();
    QVERIFY(!chartView->zoomed());
    view.redrawNow();
    QVERIFY2(steps->max() >= 1400, qPrintable(QString::number(steps->max())));
}

QTEST_MAIN(TestUiCharts)
#include "tst_ui_charts.moc"
