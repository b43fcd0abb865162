// Over 500 lines: the report's sections share fixture runs trained once.
// Tests of run reports (issue 4, "Run reports"): fixture runs are trained here on small
// synthetic data (AMP FP16 with loss scaling off and dynamic, a pure FP16 Adam run that
// diverges, an FP32 run), so they are regenerated on every run and never go stale. Checks:
// CSV round-trips (RFC 4180 quoting too); the summary says what the data shows for known
// cases and nothing for absent evidence; the HTML is well-formed XML with an inline SVG
// per chart and the differing settings marked; the PDF has the pages the writer laid out,
// the expected text and one image per chart; `plab report` and `plab sweep` end to end.
// links: plab_engine plab_report_render

#include "error.h"
#include "report/recipe_phrase.h"
#include "report/runs_index.h"
#include "report/csv_export.h"
#include "report/report_summary.h"
#include "report/run_comparison.h"
#include "record/record_writer.h"
#include "interactive_charts.h"
#include "report_document.h"
#include "telemetry/format_regions.h"
#include "tensorboard/tensorboard_export.h"
#include "test_support.h"
#include "train/region_format.h"
#include "train/trainer.h"

#include <QFile>
#include <QFloat16>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTest>
#include <QXmlStreamReader>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QUrl>
#include <QImage>
#include <QFontMetricsF>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

using namespace plab;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json trainRecord(const TrainSettings& s, const DataSplit& data, const std::string& name = {})
{
    RunRecorder recorder({}, s, data, name);
    Trainer trainer(s, data, [&](const TrainerEvent& e) { recorder.onEvent(e); });
    recorder.finish(trainer.run());
    return recorder.recordJson();
}

TrainSettings fixtureSettings(const std::string& recipe)
{
    return settingsFromJson(json{{"recipe", recipe}, {"widths", {4, 8}}, {"batch", 96}, {"epochs", 3},
                                 {"histogram_every", 5}, {"threads", 1}},
                            "test");
}

const SummarySentence* findSentence(const std::vector<SummarySentence>& all, const std::string& topic,
                                    const std::string& start)
{
    for (const auto& s : all)
        if (s.topic == topic && s.text.rfind(start, 0) == 0) return &s;
    return nullptr;
}

QString allText(const std::vector<SummarySentence>& all)
{
    QString t;
    for (const auto& s : all) t += QString::fromStdString(s.text) + '\n';
    return t;
}

struct Tool {
    int exitCode = -1;
    QString out, err;
};

Tool runTool(const QString& program, const QStringList& args)
{
    QProcess p;
    p.start(program, args);
    if (!p.waitForFinished(300000)) p.kill();
    p.waitForFinished();
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

void writeJson(const fs::path& file, const json& j)
{
    std::ofstream(file) << j.dump(1);
}

}  // namespace

class TestReport : public QObject {
    Q_OBJECT
    testing::TempDir dir_;
    DataSplit data_;
    json unscaled_, scaled_, diverged_, fp32_;

    RunComparison comparisonOf(const std::vector<json>& records)
    {
        std::vector<RunDigest> digests;
        for (std::size_t i = 0; i < records.size(); ++i) digests.push_back(digestRunRecord(readRunRecord(records[i], "run" + std::to_string(i)), "run" + std::to_string(i)));
        return compareRuns(std::move(digests));
    }

private slots:
    void initTestCase()
    {
        testing::writeSyntheticDataset(dir_.path() / "mnist", 480, 200, 11);
        data_ = loadDataset("mnist", dir_.path());
        // Small gradients (SGD, small steps, a big batch) so that fp16 flushes some of them
        // without loss scaling (as in tst_trainer's scalingReducesGradientUnderflow).
        TrainSettings scaled = fixtureSettings("amp-fp16");
        scaled.optimizer.kind = "sgd";
        scaled.optimizer.lr = 1e-4;
        TrainSettings unscaled = scaled;
        unscaled.recipe.lossScaling = LossScaling::off();
        scaled_ = trainRecord(scaled, data_);
        unscaled_ = trainRecord(unscaled, data_);
        TrainSettings pure = fixtureSettings("pure-fp16");   // Adam: eps is 0 in fp16
        pure.divergenceSteps = 3;
        pure.histogramEvery = 1;
        diverged_ = trainRecord(pure, data_);
        fp32_ = trainRecord(fixtureSettings("fp32"), data_);
        QCOMPARE(diverged_["summary"]["status"], "diverged");
    }

    // A record of `record`'s run with `recipe`.
    static json withRecipe(json record, const PrecisionRecipe& recipe)
    {
        TrainSettings settings = settingsFromJson(record["settings"], "fixture settings");
        settings.recipe = recipe;
        record["settings"] = settingsToJson(settings);
        return record;
    }

    // A record built from events is written and read by one pair of functions: every field
    // of a record that sets every field comes back (record -> JSON -> text -> record), and
    // its JSON again is the same document.
    void recordRoundTripsEveryField()
    {
        TrainSettings settings = fixtureSettings("fp8-delayed");
        RunRecord r = RunRecord::start(settings, data_, "every field");
        r.sourceKind = "pytorch-probe";   // no event sets it: a probe's writer does
        RunStartEvent start{"cuda", {"cuBLAS 13.0", "cuDNN 9.1"}, 3, "hardware: tensor cores", 4096, "fp16", "fp32"};
        r.apply(start);
        r.apply(StatusEvent{RunStatus::running, 0, "training"});
        r.apply(StepEvent{1, 0, 2.25f, 1024.0, false, 0.01, 96, 12.5, 3, 0, {}});
        NonFiniteSite site{"fc1", TensorKind::activationGrad, 3, 1, 2, 60000.0, "fp16", 65504.0};
        r.apply(StepEvent{2, 0, std::numeric_limits<float>::infinity(), 512.0, true, 0.01, 96, 11.0, 3, 1, {site}});
        TrainSettings changed = settings;
        changed.optimizer.lr = 0.005;
        r.apply(SettingChangeEvent{2, "lr: 0.01 -> 0.005", changed});
        r.apply(ChangeRefusedEvent{2, "compute fp32 -> bf16", "the recipe quantises its products"});
        r.apply(EvalEvent{2, 0, 0.625, 1.5});
        r.apply(ScalarEvent{2, "grad_norm", 3.5});

        RoundingStats stats{100, 5, 4, 3, 2, 1, 1, 2.5f};
        GradientHistogram histogram;
        histogram.bins[static_cast<std::size_t>(GradientHistogram::binOf(-20))] = 7;
        histogram.bins[static_cast<std::size_t>(GradientHistogram::binOf(-3))] = 9;
        histogram.zeros = 5;
        histogram.nonFinite = 2;
        TelemetryEvent telemetry{2, 512.0, true, {}};
        LayerTelemetry weights{"fc1", TensorKind::weightGrad, stats, histogram, {}, stats, {}, {}, 0};
        weights.update = {40, 6, 1, 2, 3, 30, 4};
        weights.runUpdate = {80, 12, 1, 2, 3, 60, 9};   // gradient accumulation: 60 added, 9 lost
        LayerTelemetry input{"fc1", TensorKind::activationGrad, stats, histogram, {}, stats, {}, {}, 0};
        LayerTelemetry quantised{"conv1", TensorKind::quantizedWeight, stats, histogram, {}, stats, {}, {}, 0};
        quantised.scaling = {true, true, true, 0.5f, 3.0f, histogram};
        telemetry.layers = {weights, input, quantised};
        r.apply(telemetry);
        telemetry.hasHistograms = false;   // the run totals at the end
        r.apply(telemetry);

        MemoryEvent memory;
        memory.step = 1;
        memory.elapsedMs = 20.0;
        memory.memory.live = {1, 2, 3, 4, 5, 6};
        memory.memory.peak = {2, 3, 4, 5, 6, 7};
        memory.memory.totalLive = 21;
        memory.memory.totalPeak = 27;
        memory.memory.peakPhase = MemoryPhase::evaluation;
        memory.memory.phasePeak[0] = {{1, 1, 1, 1, 1, 1}, 6};
        memory.memory.phasePeak[1] = {{2, 2, 2, 2, 2, 2}, 12};
        memory.device = DeviceMemoryInfo{1 << 20, 1 << 30};
        r.apply(memory);
        memory.step = 2;
        r.apply(memory);   // the same bytes: no new sample
        QCOMPARE(r.memory.samples.size(), std::size_t{1});
        r.finish({RunStatus::completed, "done", 0.625, 2, 1, 1234.5});

        // Every part was set (a field left at its default would round-trip unseen).
        const RunRecord empty;
        QVERIFY(r.name != empty.name && r.createdAt != empty.createdAt && !r.settingKeys.empty());
        QVERIFY(r.machine != empty.machine && r.versions.precisionLab && !r.versions.backend.empty());
        QVERIFY(r.backend != empty.backend && r.arithmetic && !r.sourceAsRun.empty() && !r.judgedFormat.empty());
        QVERIFY(r.data != empty.data && r.steps.size() == 2 && r.events.size() == 3 && r.evals.size() == 1);
        QVERIFY(r.scalars.size() == 1 && r.telemetry.size() == 1 && r.telemetry[0].layers.size() == 3);
        QVERIFY(r.memory.peak && r.memory.trainingPeak && r.memory.evaluationPeak);
        QVERIFY(r.memory.peakPhase && r.memory.deviceBeforeRun && r.memory.samples[0].device);
        QVERIFY(r.summary.testAccuracy && r.summary.bestTestAccuracy && !r.summary.finishedAt.empty());
        QVERIFY(r.summary.imagesPerSecond > 0 && r.summary.skippedSteps == 1 && !r.summary.message.empty());
        QCOMPARE(r.summary.layers.size(), std::size_t{1});
        QCOMPARE(r.summary.layers[0].listed, std::uint8_t{255});   // every per-layer entry
        QVERIFY(r.summary.layers[0].underflow && r.summary.layers[0].lostUpdate && r.summary.layers[0].stateFlushed);
        QCOMPARE(r.summary.layers[0].accumulationLost, std::optional<double>(9.0 / 60.0));
        QCOMPARE(r.summary.runRounding.size(), std::size_t{3});
        QCOMPARE(r.summary.runRoundingThroughStep, std::int64_t{2});

        const json written = runRecordToJson(r);
        const RunRecord back = readRunRecord(json::parse(written.dump(1)), "the round trip");
        QVERIFY(back == r);
        QCOMPARE(runRecordToJson(back), written);
        // The parts one at a time, so that a failure names the part.
        QVERIFY(back.steps == r.steps && back.events == r.events && back.telemetry == r.telemetry);
        QVERIFY(back.memory == r.memory && back.summary == r.summary && back.scalars == r.scalars);
    }

    // An autoencoder's record: its test MSE (lowest is best) in the summary where a
    // classifier's accuracy is, no accuracy in its evaluations, and the last evaluation's
    // reconstructions; a picture that is not 784 bytes is refused naming the image.
    void autoencoderRecordRoundTrips()
    {
        TrainSettings settings = fixtureSettings("amp-fp16");
        settings.model = ModelSpec{"autoencoder", {}};
        RunRecord r = RunRecord::start(settings, data_, "autoencoder");
        QVERIFY(std::isnan(r.result().testLoss));   // no evaluation yet: no MSE (0 would read as perfect)
        ReconstructedImage image{3, std::vector<std::uint8_t>(784, 0), std::vector<std::uint8_t>(784, 200)};
        image.original[100] = 255;
        r.apply(EvalEvent{1, 0, 0.0, 0.05, {image}});
        r.apply(EvalEvent{2, 0, 0.0, 0.07, {}});
        QVERIFY(!r.summary.testAccuracy && !r.summary.bestTestAccuracy);
        QCOMPARE(r.summary.testMse, std::optional<double>(0.07));
        QCOMPARE(r.summary.bestTestMse, std::optional<double>(0.05));
        QCOMPARE(r.reconstructions, std::vector<ReconstructedImage>{image});
        QCOMPARE(r.reconstructedAtStep, std::int64_t{1});
        QCOMPARE(r.result().testLoss, 0.07);
        QVERIFY(r.evals[0].reconstructions.empty());   // kept once, not per evaluation
        const json written = runRecordToJson(r);
        QVERIFY(!written["evals"][0].contains("test_accuracy"));
        QCOMPARE(written["summary"]["test_mse"].get<double>(), 0.07);
        const RunRecord back = readRunRecord(json::parse(written.dump()), "the round trip");
        QVERIFY(back == r);
        for (const auto& [field, value] : {std::pair{"original", json(std::vector<int>(783, 0))},
                                           std::pair{"reconstruction", json(std::vector<int>(784, 256))}}) {
            json bad = written;
            bad["reconstructions"]["images"][0][field] = value;
            try {
                readRunRecord(bad, "bad");
                QFAIL("a bad picture was read");
            } catch (const InputError& e) {
                QVERIFY2(QString(e.what()).contains(QString("the reconstruction of test image 3: \"%1\" must be 784 whole numbers from 0 to 255").arg(field)), e.what());
            }
        }
        // A classifier's record writes neither.
        const json classifier = runRecordToJson(RunRecord::start(fixtureSettings("fp32"), data_, "c"));
        QVERIFY(!classifier.contains("reconstructions") && !classifier["summary"].contains("test_mse"));
    }

    // An autoencoder's report says its test MSE and PSNR where a classifier's says its
    // accuracy, and shows its reconstructions: a PNG in the HTML, an image resource of the
    // PDF's document; a classifier's report has no such section.
    void autoencoderReportShowsMseAndReconstructions()
    {
        TrainSettings s = fixtureSettings("fp32");
        s.model = ModelSpec{"autoencoder", {16, 4}};
        s.maxSteps = 3;
        s.histogramEvery = 0;
        RunRecorder recorder({}, s, data_, "ae");
        Trainer trainer(s, data_, [&](const TrainerEvent& e) { recorder.onEvent(e); });
        recorder.finish(trainer.run());
        const RunRecord& record = recorder.runRecord();
        QVERIFY(record.summary.testMse && !record.summary.testAccuracy);
        QCOMPARE(record.reconstructions.size(), std::size_t(std::min<std::int64_t>(kReconstructedImages, data_.test.count)));
        const report::ReportContent content = report::prepareReport(compareRuns({digestRunRecord(record, "ae")}));
        const QString html = report::reportHtml(content, report::ChartEmbedding::inlineSvg);
        char mse[32];
        std::snprintf(mse, sizeof mse, "MSE %.4f", *record.summary.testMse);
        QVERIFY2(html.contains(QString::fromLatin1(mse)), mse);   // the results table, the summary
        QVERIFY(html.contains("<h2>Reconstructions</h2>") && html.contains("src=\"data:image/png;base64,"));
        QVERIFY(!html.contains("final accuracy"));
        QTextDocument doc;
        report::layOutPdfDocument(content, doc);
        const QImage strip = doc.resource(QTextDocument::ImageResource, QUrl("reconstructions:0")).value<QImage>();
        const int n = static_cast<int>(record.reconstructions.size());
        QCOMPARE(strip.size(), QSize(3 * (28 * n + 4 * (n - 1)), 3 * (2 * 28 + 4)));
        QVERIFY(!report::reportHtml(report::prepareReport(comparisonOf({fp32_})), report::ChartEmbedding::inlineSvg)
                     .contains("Reconstructions"));
    }

    // A real run's record in memory (what the app and the lessons read) is what its file
    // reads back as, a mid-run setting change, FP8 scales and memory samples included.
    void recordedRunReadsBackAsItWasBuilt()
    {
        TrainSettings s = fixtureSettings("fp8-delayed");
        s.maxSteps = 6;
        s.histogramEvery = 2;
        RunRecorder recorder({}, s, data_, "fp8");
        Trainer trainer(s, data_, [&](const TrainerEvent& e) { recorder.onEvent(e); });
        recorder.finish(trainer.run());
        const RunRecord& built = recorder.runRecord();
        QVERIFY(!built.telemetry.empty() && !built.memory.samples.empty() && !built.summary.layers.empty());
        QVERIFY(readRunRecord(json::parse(recorder.recordJson().dump(1)), "fp8") == built);
    }

    // Records earlier builds wrote still open and read the same facts (tests/data/records:
    // one of the last build that wrote the "recipe" block, and the same record without the
    // keys records gained later), and what they read is what they write back.
    void committedExampleRecordsRead()
    {
        const fs::path dir = fs::path(PLAB_SOURCE_DIR) / "tests" / "data" / "records";
        const RunRecord current = loadRunRecord(dir / "amp-fp16-mlp-2026-11-28.json");
        const RunRecord older = loadRunRecord(dir / "amp-fp16-mlp-newer-keys-removed.json");
        for (const RunRecord* r : {&current, &older}) {
            QCOMPARE(r->summary.status, std::string("completed"));
            QCOMPARE(r->steps.size(), std::size_t{8});
            QCOMPARE(r->evals.size(), std::size_t{1});
            QCOMPARE(*r->summary.testAccuracy, 0.1355);
            QCOMPARE(r->telemetry.size(), std::size_t{3});
            QCOMPARE(r->telemetry.back().step, std::int64_t{8});
            QCOMPARE(r->settings.recipe.preset, std::string("amp-fp16"));
            QCOMPARE(r->settings.recipe.lossScaling.mode, LossScaleMode::dynamic);
            QCOMPARE(r->settings.seed, std::uint64_t{5});
            QVERIFY(!r->memory.samples.empty() && r->memory.peak && r->memory.peak->total > 0);
            QVERIFY(!r->summary.layers.empty() && r->summary.layers.front().lostUpdate);
            QVERIFY(r->steps == current.steps && r->evals == current.evals);
            // Written and read again: the same record (the settings keys are this build's).
            RunRecord again = readRunRecord(json::parse(runRecordToJson(*r).dump(1)), "again");
            QVERIFY(again.settingKeys.size() >= r->settingKeys.size());
            again.settingKeys = r->settingKeys;
            QVERIFY(again == *r);
            QCOMPARE(listingOf(*r).steps, std::int64_t{8});
            QCOMPARE(digestRunRecord(*r, "example").summary().status, std::string("completed"));
        }
        // The newer keys are what the older record lacks: each reads as what it meant then.
        QVERIFY(current.summary.hasRunRounding && !older.summary.hasRunRounding);
        QVERIFY(current.memory.peakPhase && !older.memory.peakPhase);
        QVERIFY(current.memory.trainingPeak && !older.memory.trainingPeak);
        QVERIFY(current.arithmetic && !older.arithmetic);
        QVERIFY(std::find(older.settingKeys.begin(), older.settingKeys.end(), "optimizer_state") == older.settingKeys.end());
        QCOMPARE(older.settings.recipe.optimizerStateFormat(), Format::fp32);   // beside master weights
        QCOMPARE(older.settings.recipe.updateRounding, UpdateRounding::nearest);
        QVERIFY(older.memory.samples == current.memory.samples);   // this build's categories by name
        QVERIFY(current.telemetry.front().layers.front().stats.largestFinite > 0);
        QCOMPARE(older.telemetry.front().layers.front().stats.largestFinite, 0.0f);
    }

    void quantisedRecipesSayHowTheyDiffer()
    {
        // Issue 15: an FP8 recipe changed from its preset names the change.
        PrecisionRecipe e4m3 = *PrecisionRecipe::fromPreset("fp8-delayed");
        e4m3.quantization.hybrid = false;
        const json custom = withRecipe(fp32_, e4m3), preset = withRecipe(fp32_, *PrecisionRecipe::fromPreset("fp8-delayed"));
        const auto c = comparisonOf({custom, preset});
        QCOMPARE(c.runs[1].label, std::string("FP8 delayed scaling"));
        QVERIFY2(c.runs[0].label.find("FP8 delayed scaling with FP8 delayed scaling (e4m3 throughout") == 0,
                 c.runs[0].label.c_str());
    }

    void perLayerRecipesNameTheirLayers()
    {
        PrecisionRecipe r = *PrecisionRecipe::fromPreset("fp8-delayed");
        r.layers = {{"fc1", "bf16"}, {"conv1", "bf16"}};
        const json layered = withRecipe(fp32_, r), preset = withRecipe(fp32_, *PrecisionRecipe::fromPreset("fp8-delayed"));
        const auto c = comparisonOf({layered, preset});
        QCOMPARE(c.runs[0].label, std::string("FP8 delayed scaling with conv1 in bf16, fc1 in bf16"));
        QCOMPARE(c.runs[1].label, std::string("FP8 delayed scaling"));
        // A quantisation of one pass reads as such (lesson 12's fc1).
        PrecisionRecipe onePass = *PrecisionRecipe::fromPreset("mxfp4");
        onePass.layers = {{"fc1", "mxfp4:forward"}};
        const auto d = comparisonOf({withRecipe(fp32_, onePass), withRecipe(fp32_, *PrecisionRecipe::fromPreset("mxfp4"))});
        QCOMPARE(d.runs[0].label.substr(d.runs[0].label.find(" with ")), std::string(" with fc1 in mxfp4 on its forward pass only"));
        // Attention's scores kept in fp32 (lesson 16's sequel) are said in the phrase too.
        PrecisionRecipe fused = *PrecisionRecipe::fromPreset("amp-fp16");
        fused.fp32AttentionScores = true;
        QCOMPARE(recipePhraseOf(fused), std::string("AMP FP16 with fp32 attention scores"));
        QVERIFY(recipePhraseSays("attention_scores"));
    }

    void labelsAreUniqueAndSayWhatDiffers()
    {
        const auto c = comparisonOf({unscaled_, scaled_, diverged_});
        QCOMPARE(c.runs[0].label, std::string("AMP FP16 without loss scaling"));
        QCOMPARE(c.runs[1].label, std::string("AMP FP16"));
        QCOMPARE(c.runs[2].label, std::string("Pure FP16"));
        const auto a = comparisonOf({fp32_, fp32_});
        QVERIFY(a.runs[0].label != a.runs[1].label);
        // Two runs that differ only in where they wrote their weights (the app saves every
        // run's under its own name) are numbered, not labelled with file names.
        json first = fp32_, second = fp32_;
        first["settings"]["save_weights"] = "/runs/run-1.safetensors";
        second["settings"]["save_weights"] = "/runs/run-2.safetensors";
        const auto w = comparisonOf({first, second});
        QCOMPARE(w.runs[0].label, std::string("FP32"));
        QCOMPARE(w.runs[1].label, std::string("FP32 (2)"));
        bool lossScaleDiffers = false, seedDiffers = true;
        for (const auto& row : c.settings) {
            if (row.key == "loss_scale") lossScaleDiffers = row.differs;
            if (row.key == "seed") seedDiffers = row.differs;
        }
        QVERIFY(lossScaleDiffers);
        QVERIFY(!seedDiffers);
    }

    void csvQuotingRoundTrips_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addRow("plain") << "amp-fp16";
        QTest::addRow("comma") << "AMP FP16, batch 64";
        QTest::addRow("quote") << "the \"scaled\" run";
        QTest::addRow("newline") << "line one\r\nline two\nthree";
        QTest::addRow("empty") << "";
    }
    void csvQuotingRoundTrips()
    {
        QFETCH(QString, field);
        std::ostringstream out;
        writeCsvRow(out, {field.toStdString(), "2", field.toStdString()});
        writeCsvRow(out, {"x", field.toStdString(), ""});
        std::istringstream in(out.str());
        const auto rows = readCsv(in, "memory");
        QCOMPARE(rows.size(), std::size_t(2));
        QCOMPARE(rows[0], (CsvRow{field.toStdString(), "2", field.toStdString()}));
        QCOMPARE(rows[1], (CsvRow{"x", field.toStdString(), ""}));
    }

    void csvRejectsBrokenQuoting()
    {
        std::istringstream open("a,\"never closed\r\n");
        QVERIFY_THROWS_EXCEPTION(plab::InputError, readCsv(open, "open"));
        std::istringstream stray("a,b\"c\r\n");
        QVERIFY_THROWS_EXCEPTION(plab::InputError, readCsv(stray, "stray"));
    }

    // Issue 67 item 9: why steps skipped reaches plab report's table, the HTML/PDF report and
    // the CSV: the first site per stretch of skipped steps, a record without sites said so.
    void skipCausesReachEveryOutput()
    {
        json record = scaled_;
        auto& steps = record["steps"];
        QVERIFY(steps.size() >= 6);
        const json nanFirst = {{"layer", "fc1"}, {"kind", "activation"}, {"overflow", 0}, {"inf_in", 0}, {"nan", 4},
                               {"format", "fp16"}, {"format_max", 65504.0}};
        const json lossOverflow = {{"layer", "loss"}, {"kind", "activation_grad"}, {"overflow", 3}, {"inf_in", 0},
                                   {"nan", 0}, {"largest_finite", std::ldexp(1.5, 17)}, {"format", "fp16"},
                                   {"format_max", 65504.0}};
        const json conv2Overflow = {{"layer", "conv2"}, {"kind", "activation"}, {"overflow", 1}, {"inf_in", 0},
                                    {"nan", 0}, {"format", "fp16"}, {"format_max", 65504.0}};
        for (int i : {1, 2, 3}) steps[i]["skipped"] = true, steps[i]["non_finite"] = json::array({nanFirst, lossOverflow});
        steps[4]["skipped"] = true;   // a record that does not say
        steps[5]["skipped"] = true, steps[5]["non_finite"] = json::array({conv2Overflow});
        const std::string loss = "loss activation_grad overflowed first: 2^17.6 > 65504 (fp16's largest)";
        const std::string conv2 = "conv2 activation overflowed first: 1 value past 65504 (fp16's largest)";

        const RunRecord read = readRunRecord(record, "skips");
        const auto rows = skipCauseRows(read.steps);
        QCOMPARE(rows.size(), std::size_t{3});
        QCOMPARE(rows[0].steps, std::string("steps 2-4 (3 skipped)"));
        QCOMPARE(rows[0].cause, loss + ", at the first");
        QCOMPARE(rows[1].steps, std::string("step 5"));
        QCOMPARE(rows[1].cause, std::string("the record names no site that made inf or NaN"));
        QCOMPARE(rows[2].steps, std::string("step 6"));
        QCOMPARE(rows[2].cause, conv2);
        // At most maxRows stretches, then a count of the steps left out.
        const auto capped = skipCauseRows(read.steps, 1);
        QCOMPARE(capped.size(), std::size_t{2});
        QCOMPARE(capped[1].steps, std::string("and 2 more skipped steps"));

        const RunComparison c = compareRuns({digestRunRecord(read, "skips")});
        const std::string table = comparisonTableText(c);
        QVERIFY2(table.find("\nWhy " + c.runs[0].label + " skipped:\n  steps 2-4 (3 skipped): " + loss) != std::string::npos,
                 table.c_str());
        const QString html = report::reportHtml(report::prepareReport(c), report::ChartEmbedding::inlineSvg);
        QVERIFY(html.contains("<h3>Why steps skipped</h3>"));
        QVERIFY(html.contains(QString::fromStdString(conv2)));
        // No such section where nothing skipped.
        QVERIFY(!report::reportHtml(report::prepareReport(comparisonOf({fp32_})), report::ChartEmbedding::inlineSvg)
                     .contains("Why steps skipped"));

        const fs::path folder = dir_.path() / "csv-skips";
        writeRunCsv(read, "skips", folder, "skips");
        const auto csv = readCsvFile(folder / "skips-steps.csv");
        QCOMPARE(csv[2][9], std::string("loss activation_grad"));
        QCOMPARE(csv[2][10], loss);
        QCOMPARE(csv[5][9], std::string());
        QCOMPARE(csv[6][10], conv2);
        QCOMPARE(csv[1][10], std::string());   // not skipped
    }

    // Issue 68 item 3: a probe's record says what ran and what its telemetry judged against;
    // the reader takes both, refuses a format it does not know, and the charts judge in it.
    void probeRecordsSayWhatRanAndWhatWasJudged()
    {
        json record = fp32_;
        record["source"] = {{"kind", "pytorch-probe"}, {"as_run", "fp32"}, {"judged_format", "fp16"}};
        const RunRecord read = readRunRecord(record, "probe");
        QCOMPARE(read.sourceAsRun, std::string("fp32"));
        QCOMPARE(read.judgedFormat, std::string("fp16"));
        QCOMPARE(read.settings.recipe.compute, Format::fp32);   // as it ran
        QCOMPARE(regionFormatFor(read.settings, read.judgedFormat, "conv1", TensorKind::weightGrad).name, std::string("fp16"));
        QCOMPARE(regionFormatFor(read.settings, std::string(), "conv1", TensorKind::weightGrad).name, std::string("fp32"));
        record["source"]["judged_format"] = "e4m3";
        const RunRecord fp8 = readRunRecord(record, "probe");
        QCOMPARE(regionFormatFor(fp8.settings, fp8.judgedFormat, "fc1", TensorKind::activation).name, std::string("e4m3"));
        // No memory measured (the probe on the CPU): "not measured", never 0.00 MiB.
        json noMemory = fp32_;
        noMemory.erase("memory");
        const RunComparison c = compareRuns({digestRunRecord(readRunRecord(noMemory, "probe"), "probe")});
        const std::string table = comparisonTableText(c);
        QVERIFY2(table.find("not measured") != std::string::npos && table.find("0.00 MiB") == std::string::npos, table.c_str());
        const QString html = report::reportHtml(report::prepareReport(c), report::ChartEmbedding::inlineSvg);
        QVERIFY(html.contains("not measured") && !html.contains("0.00 MiB"));
        // The runs index keeps both, so a probe's record listed at start-up is judged the same.
        const RunListing listed = listingFromJson(listingToJson(listingOf(read)), "index");
        QCOMPARE(listed.judgedFormat, std::string("fp16"));
        QCOMPARE(listed.sourceAsRun, std::string("fp32"));
        record["source"]["judged_format"] = "fp61";
        bool refused = false;
        try {
            readRunRecord(record, "probe");
        } catch (const InputError& e) {
            refused = std::string(e.what()).find("judged_format") != std::string::npos;
        }
        QVERIFY(refused);
    }

    // Issue 68 item 3: the values a PyTorch script logged (probe.log) read back in order, a
    // null as NaN; a name that is empty, too long or not text, and a value
    // that is not a number, refuse the record naming the field; the CSV holds them.
    void loggedScalarsReadBackAndAreChecked()
    {
        json record = fp32_;
        record["scalars"] = {{{"step", 1}, {"name", "grad_norm"}, {"value", 2.5}},
                             {{"step", 2}, {"name", "lr"}, {"value", 0.001}},
                             {{"step", 2}, {"name", "grad_norm"}, {"value", nullptr}}};
        const RunRecord read = readRunRecord(record, "probe");
        QCOMPARE(read.scalars.size(), std::size_t(3));
        QCOMPARE(read.scalars[0].name, std::string("grad_norm"));
        QCOMPARE(read.scalars[0].value, 2.5);
        QCOMPARE(read.scalars[1].step, std::int64_t(2));
        QVERIFY(std::isnan(read.scalars[2].value));
        QCOMPARE(read.scalarNames(), (std::vector<std::string>{"grad_norm", "lr"}));
        const auto table = scalarsTable(read, "probe");
        QCOMPARE(table.size(), std::size_t(4));
        QCOMPARE(table[1], (CsvRow{"probe", "1", "grad_norm", "2.5"}));
        QCOMPARE(table[3][3], std::string());   // not finite: empty
        QVERIFY(readRunRecord(fp32_, "lab").scalars.empty());   // the lab's own runs log none
        const auto refuses = [&](json bad, const char* field) {
            json r = fp32_;
            r["scalars"] = {std::move(bad)};
            try {
                readRunRecord(r, "probe");
            } catch (const InputError& e) {
                return std::string(e.what()).find(field) != std::string::npos;
            }
            return false;
        };
        QVERIFY(refuses({{"step", 1}, {"name", ""}, {"value", 1.0}}, "\"name\""));
        QVERIFY(refuses({{"step", 1}, {"name", std::string(201, 'x')}, {"value", 1.0}}, "\"name\""));
        QVERIFY(refuses({{"step", 1}, {"name", 7}, {"value", 1.0}}, "\"name\""));
        QVERIFY(refuses({{"step", 1}, {"value", 1.0}}, "\"name\""));
        QVERIFY(refuses({{"step", 1}, {"name", "lr"}, {"value", "1.5"}}, "\"value\""));
        QVERIFY(refuses({{"step", -1}, {"name", "lr"}, {"value", 1.0}}, "\"step\""));
    }

    void csvFilesRoundTripTheRecord()
    {
        const fs::path folder = dir_.path() / "csv";
        const auto files = writeRunCsv(readRunRecord(diverged_, "diverged"), "Pure, \"FP16\"", folder, "pure-fp16");
        QCOMPARE(files.size(), std::size_t(3));
        const auto steps = readCsvFile(folder / "pure-fp16-steps.csv");
        QCOMPARE(steps.front(), (CsvRow{"run", "step", "epoch", "loss", "loss_scale", "skipped", "lr", "batch", "time_ms",
                                        "skip_site", "skip_cause"}));
        QCOMPARE(steps.size(), diverged_["steps"].size() + 1);
        for (std::size_t i = 0; i < diverged_["steps"].size(); ++i) {
            const json& s = diverged_["steps"][i];
            const CsvRow& row = steps[i + 1];
            QCOMPARE(row[0], std::string("Pure, \"FP16\""));
            QCOMPARE(std::stoll(row[1]), s["step"].get<long long>());
            if (s["loss"].is_null()) QVERIFY(row[3].empty());
            else QCOMPARE(std::strtod(row[3].c_str(), nullptr), s["loss"].get<double>());   // exact
            QCOMPARE(std::strtod(row[4].c_str(), nullptr), s["loss_scale"].get<double>());
            QCOMPARE(row[5], std::string(s["skipped"].get<bool>() ? "1" : "0"));
            QCOMPARE(std::strtod(row[8].c_str(), nullptr), s["time_ms"].get<double>());
        }
        const auto evals = readCsvFile(folder / "pure-fp16-evals.csv");
        QCOMPARE(evals.size(), diverged_["evals"].size() + 1);
        const fs::path folder2 = dir_.path() / "csv2";
        writeRunCsv(readRunRecord(scaled_, "scaled"), "AMP FP16", folder2, "amp");
        const auto evals2 = readCsvFile(folder2 / "amp-evals.csv");
        QCOMPARE(evals2.size(), scaled_["evals"].size() + 1);
        QVERIFY(evals2.size() > 1);
        for (std::size_t i = 0; i + 1 < evals2.size(); ++i)
            QCOMPARE(std::strtod(evals2[i + 1][3].c_str(), nullptr), scaled_["evals"][i]["test_accuracy"].get<double>());
        const auto telemetry = readCsvFile(folder2 / "amp-telemetry.csv");
        std::size_t layers = 0;
        for (const auto& t : scaled_["telemetry"]) layers += t["layers"].size();
        QCOMPARE(telemetry.size(), layers + 1);
        // What the counts are of: the run's own rounding, in each site's format.
        QCOMPARE(telemetry[0][17], std::string("format"));
        QCOMPARE(telemetry[0][18], std::string("counted"));
        for (std::size_t i = 1; i < telemetry.size(); ++i) QCOMPARE(telemetry[i][18], std::string("as run"));
        // A probe's record: what the judged format's rounding would have done (issue 68 item 3).
        json probed = fp32_;
        probed["source"] = {{"kind", "pytorch-probe"}, {"as_run", "fp32"}, {"judged_format", "fp16"}};
        const auto judged = telemetryTable(readRunRecord(probed, "probe"), "probe");
        QVERIFY(judged.size() > 1);
        for (std::size_t i = 1; i < judged.size(); ++i) {
            QCOMPARE(judged[i][17], std::string("fp16"));
            QCOMPARE(judged[i][18], std::string("judged, not run"));
        }

        // Issue 66, finding 10: a name a spreadsheet would run as a formula is written as text.
        const fs::path folder3 = dir_.path() / "csv3";
        writeRunCsv(readRunRecord(scaled_, "scaled"), "=HYPERLINK(\"http://x\",\"y\")", folder3, "formula");
        const auto formula = readCsvFile(folder3 / "formula-steps.csv");
        QCOMPARE(formula[1][0], std::string("'=HYPERLINK(\"http://x\",\"y\")"));
        for (const char* text : {"+1", "-1", "@SUM(A1)", "\tx"}) QCOMPARE(csvText(text), std::string("'") + text);
        QCOMPARE(csvText("AMP FP16"), std::string("AMP FP16"));
    }

    void summaryComparesLossScaling()
    {
        const auto c = comparisonOf({unscaled_, scaled_});
        const auto summary = summarizeRuns(c);
        const auto* s = findSentence(summary, "underflow", "AMP FP16 without loss scaling lost ");
        QVERIFY2(s, qPrintable(allText(summary)));
        // The worst layer of the unscaled run, and both numbers, are the records' own.
        std::string worst;
        double fraction = -1;
        for (const auto& [layer, f] : unscaled_["summary"]["underflow_fraction"].items())
            if (f.get<double>() > fraction) { fraction = f.get<double>(); worst = layer; }
        QVERIFY(fraction > 0);
        const double scaledFraction = scaled_["summary"]["underflow_fraction"][worst].get<double>();
        const std::string expected = "AMP FP16 without loss scaling lost " + formatPercent(fraction) + " of layer " + worst +
                                     "'s weight gradients to underflow over the run; with dynamic loss scaling (AMP FP16), " +
                                     formatPercent(scaledFraction) + ".";
        QCOMPARE(s->text, expected);
        QVERIFY2(fraction > scaledFraction, s->text.c_str());
        QVERIFY(findSentence(summary, "loss_scale", "AMP FP16 skipped"));
    }

    // The app saves each run's weights and batches under the run's own name: runs that differ
    // only in where they wrote are still compared by their loss scaling, and a label never
    // names an output file.
    void summaryComparesRunsThatWroteToTheirOwnFiles()
    {
        json unscaled = unscaled_, scaled = scaled_;
        unscaled["settings"]["save_weights"] = "/runs/run-1.safetensors";
        scaled["settings"]["save_weights"] = "/runs/run-2.safetensors";
        unscaled["settings"]["write_batches"] = "/runs/run-1.batches";
        const auto c = comparisonOf({unscaled, scaled});
        QVERIFY2(findSentence(summarizeRuns(c), "underflow", "AMP FP16 without loss scaling lost "),
                 qPrintable(allText(summarizeRuns(c))));
        json again = scaled;
        again["settings"]["save_weights"] = "/runs/run-3.safetensors";
        const auto same = comparisonOf({scaled, again});
        QCOMPARE(same.runs[0].label, std::string("AMP FP16"));
        QCOMPARE(same.runs[1].label, std::string("AMP FP16 (2)"));
    }

    void summaryExplainsDivergence()
    {
        const auto c = comparisonOf({diverged_});
        const auto summary = summarizeRuns(c);
        const std::string steps = std::to_string(diverged_["summary"]["steps"].get<long long>());
        const auto* s = findSentence(summary, "divergence", "Pure FP16 diverged at step " + steps);
        QVERIFY2(s, qPrintable(allText(summary)));
        QVERIFY2(s->text.find("not finite from step 2") != std::string::npos, s->text.c_str());
        QVERIFY2(findSentence(summary, "divergence", "Optimizer updates turned finite parameters into inf or NaN"),
                 qPrintable(allText(summary)));
        QVERIFY2(findSentence(summary, "divergence", "Adam's eps (1e-08) is 0 in fp16"), qPrintable(allText(summary)));
        QVERIFY(!findSentence(summary, "accuracy", ""));   // no accuracy claim for a diverged run
    }

    void summaryClaimsNothingWithoutEvidence()
    {
        // An fp32 run has no rounding site: no underflow, lost-update or eps sentence.
        const auto summary = summarizeRuns(comparisonOf({fp32_}));
        QVERIFY(findSentence(summary, "accuracy", "FP32 completed"));
        QVERIFY2(!findSentence(summary, "underflow", ""), qPrintable(allText(summary)));
        QVERIFY(!findSentence(summary, "lost_updates", ""));
        QVERIFY(!findSentence(summary, "divergence", ""));
        // Two runs with scaling on both sides: no "without loss scaling" comparison.
        QVERIFY(!findSentence(summarizeRuns(comparisonOf({scaled_, scaled_})), "underflow", ""));
    }

    // Issue 34: the report's loss curve is smoothed as the app's (one EMA, its weight
    // stated), checked against the average written out here in double precision.
    void lossCurveSmoothedAsInTheApp()
    {
        const RunComparison c = comparisonOf({unscaled_});
        for (double weight : {0.0, 0.9}) {
            report::ReportOptions options;
            options.smoothing = weight;
            const auto charts = report::buildReportCharts(c, options);
            const report::ChartSpec& spec = charts.front().spec;
            QCOMPARE(charts.front().id, QStringLiteral("loss"));
            QVERIFY2(spec.note.contains(weight > 0 ? QStringLiteral("weight 0.900") : QStringLiteral("Not smoothed")),
                     qPrintable(spec.note));
            const auto& steps = c.runs.front().record.steps;
            QCOMPARE(spec.series.front().points.size(), qsizetype(steps.size()));   // under 300 steps: every one
            double average = 0, norm = 0;
            for (std::size_t k = 0; k < steps.size(); ++k) {
                QVERIFY(steps[k].lossFinite());
                average = weight * average + (1 - weight) * steps[k].loss;
                norm = weight * norm + (1 - weight);
                QCOMPARE(spec.series.front().points[qsizetype(k)], QPointF(double(steps[k].step), average / norm));
            }
        }
    }

    void chartsExportAsSvgAndPng()
    {
        const auto charts = report::buildReportCharts(comparisonOf({unscaled_, scaled_, diverged_}), {});
        QStringList ids;
        for (const auto& c : charts) ids << c.id;
        for (const char* id : {"loss", "accuracy", "loss-scale", "underflow", "memory", "histogram-1"})
            QVERIFY2(ids.contains(QLatin1String(id)), qPrintable(ids.join(',')));
        QXmlStreamReader xml(report::chartToSvg(charts.front().spec));
        while (!xml.atEnd()) xml.readNext();
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        const QImage image = report::chartToImage(charts.front().spec);
        QCOMPARE(image.size(), report::kChartSize * 2);
        int coloured = 0;   // the series must be painted (in some series colour)
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                for (int k = 0; k < 3; ++k)
                    if (image.pixelColor(x, y) == report::seriesColor(k)) ++coloured;
        QVERIFY(coloured > 50);
    }

    // Issue 14 item 5: the report's histogram shades the regions the app's chart shades,
    // from the one definition (telemetry/format_regions.h): the same bin boundaries and
    // colours, so a value cannot be "subnormal" in one and "normal" in the other.
    void histogramBandsAreTheFormatRegions()
    {
        const auto charts = report::buildReportCharts(comparisonOf({unscaled_, scaled_, diverged_}), {});
        int checked = 0;
        for (const auto& c : charts) {
            if (!c.id.startsWith(QLatin1String("histogram-"))) continue;
            const auto& bands = c.spec.bands;
            QCOMPARE(bands.size(), std::size_t{4});
            std::optional<Format> format;
            for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
                if (bands[0].label.startsWith(QString::fromUtf8(formatName(f)) + ' ')) format = f;
            QVERIFY2(format, qPrintable(bands[0].label));
            const FormatRegions r = formatRegions(*format);
            QCOMPARE(bands[0].to, double(r.flushedBelow));
            QCOMPARE(bands[1].from, double(r.flushedBelow));
            QCOMPARE(bands[1].to, double(r.normalFrom));
            QCOMPARE(bands[2].to, double(r.overflowFrom));
            QCOMPARE(bands[3].from, double(r.overflowFrom));
            for (int i = 0; i < 4; ++i) {
                const RegionStyle& style = kRegionStyles[i];
                QCOMPARE(bands[static_cast<std::size_t>(i)].color, QColor(style.red, style.green, style.blue, style.alpha));
            }
            ++checked;
        }
        QVERIFY(checked > 0);
    }

    // The report's histogram judges a layer in the format the app's histogram judges it in
    // (regionFormatFor): with conv1 in fp32 under AMP FP16, conv1's weight gradients are
    // shaded by fp32's regions and conv2's by fp16's. It once used the run's storage format
    // for every layer.
    void histogramJudgesEachLayerInTheAppsFormat()
    {
        json layered = scaled_;
        layered["settings"]["layer"] = "conv1=fp32";
        const RunComparison c = comparisonOf({layered});
        for (const auto& [layer, format] : {std::pair{"conv1", "fp32"}, std::pair{"conv2", "fp16"}}) {
            QCOMPARE(regionFormatFor(c.runs.front().record.finalSettings(), layer, TensorKind::weightGrad).name, std::string(format));
            report::ReportOptions options;
            options.histogramLayer = QString::fromUtf8(layer);
            int checked = 0;
            for (const auto& chart : report::buildReportCharts(c, options)) {
                if (!chart.id.startsWith(QLatin1String("histogram-"))) continue;
                QVERIFY2(chart.spec.bands.front().label.startsWith(QString::fromUtf8(format) + ' '),
                         qPrintable(chart.spec.bands.front().label));
                QCOMPARE(chart.spec.bands.front().to, double(formatRegions(*parseFormat(format)).flushedBelow));
                ++checked;
            }
            QVERIFY(checked > 0);
        }
    }

    // A LayerNorm's statistics and attention's scores are judged in the format they are
    // rounded in (nn/transformer.h transformerTapFormat), not the run's: AMP FP16 keeps the
    // statistics in fp32 and the scores in fp16, unless the scores are kept in fp32 too or
    // fp32_sensitive_ops is off (lesson 18's run, whose statistics overflow fp16). The region
    // table of lesson 18 once showed AMP's fp32 statistics 65% "overflowed" against fp16.
    void transformerTapsAreJudgedInTheirOwnFormat()
    {
        TrainSettings s;
        s.model.kind = "vit";
        s.recipe = *PrecisionRecipe::fromPreset("amp-fp16");
        const auto judged = [&](const char* tap) { return regionFormatFor(s, tap, TensorKind::activation).name; };
        QCOMPARE(judged("block2.ln1.sumsq"), std::string("fp32"));
        QCOMPARE(judged("block1.attn.scores"), std::string("fp16"));
        QCOMPARE(judged("block1.attn.softmax"), std::string("fp16"));
        QCOMPARE(judged("block2.ln1"), std::string("fp16"));
        s.recipe.fp32AttentionScores = true;
        QCOMPARE(judged("block1.attn.scores"), std::string("fp32"));
        QCOMPARE(regionFormatFor(s, "block1.attn.scores", TensorKind::activationGrad).name, std::string("fp32"));
        s.recipe.fp32SensitiveOps = false;
        QCOMPARE(judged("block2.ln1.sumsq"), std::string("fp16"));
        // A LayerNorm given its own precision has its statistics in that layer's format.
        s.recipe.layers = {{"block2.ln1", "fp32"}};
        QCOMPARE(judged("block2.ln1.sumsq"), std::string("fp32"));
        QCOMPARE(judged("block2.ln2.sumsq"), std::string("fp16"));
    }

    // One definition of the shares (numerics/rounding_stats.h): nothing to count is no
    // share, written null, not 0% (the writer wrote 0 while the app drew a gap); a share
    // with a denominator is exact; the report's reader keeps null as no value.
    // One reader for every consumer: a record from before a setting, the telemetry and the
    // memory sections existed still reads and reports; its settings table shows the
    // keys it holds, not today's defaults for the others. A damaged part is refused naming it.
    void olderRecordsReadWithTheirOwnSettings()
    {
        json old = fp32_;
        QVERIFY(old["settings"].contains("arithmetic"));
        old["settings"].erase("arithmetic");
        old.erase("memory");
        old.erase("telemetry");
        const RunRecord r = readRunRecord(old, "old.json");
        QVERIFY(std::find(r.settingKeys.begin(), r.settingKeys.end(), "arithmetic") == r.settingKeys.end());
        QVERIFY(r.telemetry.empty());
        QVERIFY(r.memory.samples.empty() && !r.memory.peak);
        // A record's memory categories are read by name: another order, and a category this
        // build does not know (left out), read as this build's.
        json reordered = fp32_;
        json& memory = reordered["memory"];
        QVERIFY(!memory["samples"].empty());
        std::reverse(memory["categories"].begin(), memory["categories"].end());
        memory["categories"].push_back("scratch");
        for (json& sample : memory["samples"]) {
            std::reverse(sample["bytes"].begin(), sample["bytes"].end());
            sample["bytes"].push_back(12345);
        }
        memory["peak"]["scratch"] = 12345;
        const RunRecord same = readRunRecord(fp32_, "fp32.json");
        const RunRecord other = readRunRecord(reordered, "reordered.json");
        QVERIFY(other.memory == same.memory);
        QVERIFY(same.memory.samples.back().memory.live[static_cast<std::size_t>(MemoryCategory::weights)] > 0);
        const RunDigest d = digestRunRecord(r, "old.json");
        // The settings table shows the keys the record holds, none it lacks.
        const RunComparison table = compareRuns({d});
        const auto rowOf = [&](const std::string& key) -> const SettingRow* {
            for (const SettingRow& row : table.settings)
                if (row.key == key) return &row;
            return nullptr;
        };
        QVERIFY(!rowOf("arithmetic") && !rowOf("arithmetic (as run)"));
        QVERIFY(rowOf("batch"));
        QCOMPARE(rowOf("batch")->values.front(), std::to_string(fp32_["settings"]["batch"].get<int>()));
        QCOMPARE(d.summary().steps, fp32_["summary"]["steps"].get<std::int64_t>());
        QCOMPARE(r.result().steps, r.lastStep());
        QCOMPARE(r.result().status, RunStatus::completed);

        // A vit run's settings from before the vit had its own training defaults lack their
        // keys: read as every model's defaults, as they meant then, in the record and in a
        // saved run's listing (a stored run's reading), never as the vit's own.
        json oldVit = fp32_;
        oldVit["settings"]["model"] = "vit";
        for (const char* key : {"widths", "lr_schedule", "warmup_steps", "zero_init_residual", "label_smoothing"})
            oldVit["settings"].erase(key);
        const RunRecord vit = readRunRecord(oldVit, "old-vit.json");
        RunListing listing;
        listing.name = "old-vit";
        listing.settings = listing.current = vit.settings;
        json listed = listingToJson(listing);
        listed["settings"] = listed["current"] = oldVit["settings"];
        const RunListing read = listingFromJson(listed, "index");
        for (const TrainSettings& s : {vit.settings, read.settings, read.current}) {
            QVERIFY(s.model.widths.empty());   // the vit's 64,2,4,7, not its own 128,3,8,7
            QCOMPARE(s.lrSchedule.shape, LrShape::constant);
            QCOMPARE(s.lrSchedule.warmupSteps, std::int64_t(0));
            QVERIFY(!s.zeroInitResidual);
            QCOMPARE(s.labelSmoothing, 0.0);
        }

        // A loss that was not finite: null in the file, NaN in a document still in memory
        // (a lesson reads its runs so); both read alike (a diverged seed of lesson 16 was
        // refused as "not a usable run record").
        json inMemory = fp32_, inFile = fp32_;
        inMemory["evals"][0]["test_loss"] = std::numeric_limits<double>::quiet_NaN();
        inFile["evals"][0]["test_loss"] = nullptr;
        QCOMPARE(readRunRecord(inMemory, "memory").evals[0].testLoss, readRunRecord(inFile, "file").evals[0].testLoss);
        inMemory["evals"][0]["test_loss"] = "NaN";
        QVERIFY_THROWS_EXCEPTION(InputError, readRunRecord(inMemory, "text"));

        json unknownKind = fp32_;
        unknownKind["telemetry"][0]["layers"][0]["kind"] = "gradient";
        QString why;
        try {
            readRunRecord(unknownKind, "kind.json");
        } catch (const InputError& e) {
            why = QString::fromUtf8(e.what());
        }
        QVERIFY2(why.startsWith(QStringLiteral("kind.json: not a usable run record: the telemetry at step")) &&
                     why.contains(QStringLiteral("\"kind\" must be a tensor kind, got \"gradient\"")),
                 qPrintable(why));
    }

    // A device run's figure from before it placed anything (RunStartEvent::deviceBeforeRun)
    // is written into the record's memory and read back (the app's run holds the record), so
    // that the memory chart can draw what the run itself holds. A CPU run records none.
    void deviceFigureBeforeTheRunIsRecorded()
    {
        const std::uint64_t before = std::uint64_t{594} << 20, total = std::uint64_t{80} << 30;
        RunRecorder recorder({}, fixtureSettings("amp-fp16"), data_);
        RunStartEvent start;
        start.backend = "cuda";
        start.deviceBeforeRun = before;
        recorder.onEvent(start);
        MemoryEvent sample;
        sample.step = 1;
        sample.memory.live[0] = sample.memory.totalLive = 1000;
        sample.device = DeviceMemoryInfo{before + (std::uint64_t{3205} << 20), total};
        recorder.onEvent(sample);
        RunResult done;
        done.status = RunStatus::completed;
        recorder.finish(done);
        QCOMPARE(recorder.recordJson()["memory"]["device_before_run"].get<std::uint64_t>(), before);
        const RunRecord r = recorder.runRecord();
        QCOMPARE(r.memory.deviceBeforeRun, std::optional<std::uint64_t>(before));
        QCOMPARE(readRunRecord(recorder.recordJson(), "device").memory.deviceBeforeRun, std::optional<std::uint64_t>(before));

        RunRecorder cpu({}, fixtureSettings("amp-fp16"), data_);
        RunStartEvent cpuStart;
        cpuStart.backend = "cpu";
        cpu.onEvent(cpuStart);
        cpu.finish(done);
        QVERIFY(!cpu.recordJson()["memory"].contains("device_before_run"));
        QVERIFY(!cpu.runRecord().memory.deviceBeforeRun);
    }

    void emptySharesAreNullNotZero()
    {
        RunRecorder recorder({}, fixtureSettings("amp-fp16"), data_);
        TelemetryEvent t;
        t.step = 1;
        LayerTelemetry empty;   // every gradient exactly 0, no nonzero update
        empty.layer = "conv1";
        empty.kind = TensorKind::weightGrad;
        empty.runStats.count = 10;
        empty.runStats.zerosIn = 10;
        LayerTelemetry counted;   // 3 of 12 nonzero finite values flushed; 1 of 4 updates lost
        counted.layer = "fc1";
        counted.kind = TensorKind::weightGrad;
        counted.runStats.count = 15;
        counted.runStats.zerosIn = 2;
        counted.runStats.nan = 1;
        counted.runStats.underflow = 3;
        counted.runUpdate.nonzero = 4;
        counted.runUpdate.lost = 1;
        t.layers = {empty, counted};
        recorder.onEvent(t);
        RunResult done;
        done.status = RunStatus::completed;
        done.steps = 1;   // the run's totals reach step 1, so it ran at least that far
        recorder.finish(done);
        const json summary = recorder.recordJson()["summary"];
        QVERIFY2(summary["underflow_fraction"]["conv1"].is_null(), summary.dump().c_str());
        QVERIFY(summary["lost_update_fraction"]["conv1"].is_null());
        QCOMPARE(summary["underflow_fraction"]["fc1"].get<double>(), 0.25);
        QCOMPARE(summary["lost_update_fraction"]["fc1"].get<double>(), 0.25);
        const RunDigest d = digestRunRecord(recorder.runRecord(), "test");
        QVERIFY(d.layer("conv1") && !d.layer("conv1")->underflow);
        QVERIFY(d.layer("fc1") && d.layer("fc1")->underflow == 0.25);
    }

    void htmlIsWellFormedAndComplete()
    {
        const auto content = report::prepareReport(comparisonOf({unscaled_, scaled_, diverged_}));
        const QString file = QString::fromStdString((dir_.path() / "report.html").string());
        report::writeHtmlReport(content, file);
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray html = f.readAll();
        QXmlStreamReader xml(html);
        int svgs = 0, diffRows = 0, tables = 0;
        bool inSummary = false;
        QStringList summaryItems;
        while (!xml.atEnd()) {
            xml.readNext();
            if (!xml.isStartElement()) continue;
            if (xml.name() == QLatin1String("svg")) ++svgs;
            if (xml.name() == QLatin1String("table")) ++tables;
            if (xml.name() == QLatin1String("tr") && xml.attributes().value("class") == QLatin1String("diff")) ++diffRows;
            if (xml.name() == QLatin1String("ul")) inSummary = xml.attributes().value("class") == QLatin1String("summary");
            if (xml.name() == QLatin1String("li") && inSummary) summaryItems << xml.readElementText();
        }
        QVERIFY2(!xml.hasError(), qPrintable(QString("%1 at line %2").arg(xml.errorString()).arg(xml.lineNumber())));
        QCOMPARE(svgs, int(content.charts.size()));
        QVERIFY(tables >= 4);      // results, memory, per layer, configuration, machine
        QVERIFY(diffRows >= 2);    // recipe phrase, loss_scale, ...
        QCOMPARE(summaryItems.size(), int(content.summary.size()));
        QCOMPARE(summaryItems.front(), QString::fromStdString(content.summary.front().text));
        // Self-contained: the interactive charts' scripts (uPlot with its notice, ours) are in
        // the page, each line chart's data beside its static SVG; nothing is fetched.
        QVERIFY(html.contains("uPlot 1.6.32") && html.contains("Permission is hereby granted"));
        int lineCharts = 0;
        for (const auto& chart : content.charts) lineCharts += report::drawnInteractively(chart.spec) ? 1 : 0;
        QCOMPARE(int(html.count("class=\"plab-chart-data\"")), lineCharts);
        QVERIFY(lineCharts >= 3);
        QVERIFY(!html.contains("<script src"));
        QVERIFY(!html.contains("src=\"http"));
        // Issue 10: a training step's memory peak apart from an evaluation's, as recorded.
        QVERIFY(html.contains("training step peak") && html.contains("evaluation peak"));
        const auto training = unscaled_.at("memory").at("training_peak").at("total").get<std::int64_t>();
        const auto evaluation = unscaled_.at("memory").at("evaluation_peak").at("total").get<std::int64_t>();
        QVERIFY(training > 0 && evaluation > 0);
        const QByteArray cells = QStringLiteral("%1</td><td class=\"num\" align=\"right\">%2")
                                     .arg(QString::fromStdString(formatMebibytes(training)), QString::fromStdString(formatMebibytes(evaluation)))
                                     .toUtf8();
        QVERIFY2(html.contains(cells), cells.constData());
    }

    void pdfHasTheLaidOutPagesTextAndCharts()
    {
        for (const char* tool : {"pdfinfo", "pdftotext", "pdfimages"})
            if (QStandardPaths::findExecutable(QString::fromLatin1(tool)).isEmpty())
                QSKIP(qPrintable(QString("%1 is missing (poppler-utils; scripts/setup.sh installs it)").arg(tool)));
        const auto content = report::prepareReport(comparisonOf({unscaled_, scaled_, diverged_}));
        const QString file = QString::fromStdString((dir_.path() / "report.pdf").string());
        const int pages = report::writePdfReport(content, file);
        // Overview, configuration (own page), then two charts a page.
        const int minimum = 2 + int((content.charts.size() + 1) / 2);
        QVERIFY2(pages >= minimum, qPrintable(QString("%1 pages, expected at least %2").arg(pages).arg(minimum)));
        const Tool info = runTool("pdfinfo", {file});
        QCOMPARE(info.exitCode, 0);
        QVERIFY2(info.out.contains(QRegularExpression(QString("Pages:\\s+%1\\n").arg(pages))), qPrintable(info.out));
        const Tool text = runTool("pdftotext", {"-layout", file, "-"});
        QCOMPARE(text.exitCode, 0);
        const QString flat = text.out.normalized(QString::NormalizationForm_KC).simplified();   // "ﬁ" -> "fi"
        for (const QString& expected : {QString("Precision Lab run report"), QString("Configuration"),
                                        QString("AMP FP16 without loss scaling"), QString("Peak memory per category"),
                                        QString("Machine, backend and versions")})
            QVERIFY2(flat.contains(expected), qPrintable(expected));
        const QString firstSentence = QString::fromStdString(content.summary.front().text).simplified();
        QVERIFY2(flat.contains(firstSentence.left(40)), qPrintable(firstSentence));
        const Tool lastPage = runTool("pdftotext", {"-f", QString::number(pages), "-l", QString::number(pages), file, "-"});
        QVERIFY2(lastPage.out.contains("weight gradients"), qPrintable(lastPage.out));   // a histogram caption
        const Tool images = runTool("pdfimages", {"-list", file});
        const int imageCount = images.out.split('\n', Qt::SkipEmptyParts).size() - 2;   // two header lines
        QCOMPARE(imageCount, int(content.charts.size()));
    }

    // Issue 68 item 4: the PDF shows every curve and cuts no text. Curves that lie on each
    // other are named in the chart's note; notes wrap inside the chart; no word in the laid-out
    // document (headers, cells, captions) is broken across two lines; the bars say the tables'
    // numbers; the configuration's arithmetic is the one the run's products ran in.
    void pdfShowsEveryCurveAndBreaksNoWord()
    {
        json first = unscaled_, twin = unscaled_;
        first["name"] = "first";
        twin["name"] = "twin";   // the same steps and evaluations: every curve of one on the other's
        json exact = diverged_;
        exact["backend"]["arithmetic"] = "exact: this CPU has no native fp16 matrix multiplication";
        exact["settings"]["arithmetic"] = "hardware";
        const auto content = report::prepareReport(comparisonOf({first, twin, exact}));
        const auto chart = [&](const QString& id) -> const report::ReportChart& {
            for (const auto& c : content.charts)
                if (c.id == id) return c;
            throw std::runtime_error("no chart " + id.toStdString());
        };
        QVERIFY2(chart("loss").spec.note.startsWith("first and twin coincide: twin, drawn last, hides first."),
                 qPrintable(chart("loss").spec.note));
        QVERIFY2(chart("accuracy").spec.note.contains("first and twin coincide"), qPrintable(chart("accuracy").spec.note));
        QVERIFY(!chart("loss").spec.note.contains(QString::fromStdString(content.comparison.runs[2].label)));   // one that differs is not named

        // Every line of a chart's note lies inside the chart (the loss chart's was cut at
        // "gaps where the loss"), its words all there.
        QFont font(QStringLiteral("DejaVu Sans"));
        font.setPixelSize(11);
        const QFontMetricsF fm(font);
        for (const auto& c : content.charts) {
            QXmlStreamReader svg(report::chartToSvg(c.spec));
            QString drawn;
            while (!svg.atEnd())
                if (svg.readNext() == QXmlStreamReader::StartElement && svg.name() == QLatin1String("text")) {
                    const double x = svg.attributes().value("x").toDouble();
                    const QString text = svg.readElementText();
                    if (!c.spec.note.contains(text.trimmed()) || text.trimmed().size() < 8) continue;   // not the note's
                    drawn += text + QLatin1Char(' ');
                    QVERIFY2(x + fm.horizontalAdvance(text) <= report::kChartSize.width() + 0.5,
                             qPrintable(QString("%1: \"%2\" ends at %3").arg(c.id, text).arg(x + fm.horizontalAdvance(text))));
                }
            QCOMPARE(drawn.simplified(), QString(c.spec.note).replace('\n', ' ').simplified());
        }

        QTextDocument doc;
        report::layOutPdfDocument(content, doc);
        QVERIFY(doc.pageCount() >= 3);   // laid out (each block's lines are made by the layout)
        int lines = 0;
        for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
            const QTextLayout* layout = b.layout();
            const QString text = b.text();
            for (int i = 1; i < layout->lineCount(); ++i) {
                ++lines;
                const int at = layout->lineAt(i).textStart();
                QVERIFY2(at <= 0 || at >= text.size() || !(text[at - 1].isLetterOrNumber() && text[at].isLetterOrNumber()),
                         qPrintable(QString("\"%1\" is broken inside a word at %2").arg(text).arg(at)));
            }
        }
        QVERIFY(lines > 5);   // wrapped lines were there to check

        // The memory bars' numbers are the tables': the peak of the sum in the columns' style.
        const QString html = report::reportHtml(content, report::ChartEmbedding::imageResources);
        const auto& memory = chart("memory").spec;
        QCOMPARE(memory.stackLabels.size(), qsizetype(3));
        for (qsizetype i = 0; i < 3; ++i) {
            const QString value = memory.stackLabels[i].mid(QStringLiteral("peak ").size());
            QVERIFY2(html.contains(QStringLiteral(">%1</td></tr>").arg(value)), qPrintable(value));   // the table's total column
            QCOMPARE(memory.stackMarks[i], double(content.comparison.runs[std::size_t(i)].peakTotal) / (1024.0 * 1024.0));
        }
        for (const auto& set : chart("underflow").spec.barSets)
            for (const QString& label : set.labels) QVERIFY2(label.isEmpty() || !label.contains('e'), qPrintable(label));
        const auto arithmetic = std::find_if(content.comparison.settings.begin(), content.comparison.settings.end(),
                                             [](const SettingRow& r) { return r.key == "arithmetic (as run)"; });
        QVERIFY(arithmetic != content.comparison.settings.end());
        QCOMPARE(arithmetic->values[2], std::string("exact (asked: hardware)"));
    }

    void cliReportWritesEveryFormat()
    {
        const fs::path in = dir_.path() / "cli";
        fs::create_directories(in);
        writeJson(in / "unscaled.json", unscaled_);
        writeJson(in / "scaled.json", scaled_);
        const QString base = QString::fromStdString(in.string());
        const Tool r = runTool(PLAB_CLI_PATH, {"report", base + "/unscaled.json", base + "/scaled.json", "--pdf",
                                               base + "/out.pdf", "--html", base + "/out.html", "--csv", base + "/csv",
                                               "--json", base + "/json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        for (const char* f : {"out.pdf", "out.html", "csv/amp-fp16-steps.csv", "csv/amp-fp16-without-loss-scaling-evals.csv",
                              "json/amp-fp16.json"})
            QVERIFY2(fs::exists(in / f), f);
        QVERIFY2(r.out.contains("AMP FP16 without loss scaling"), qPrintable(r.out));   // the table
        QCOMPARE(loadRunRecordDocument(in / "json" / "amp-fp16.json"), scaled_);
    }

    // Issue 66, findings 3, 9 and 10: no output is chosen by text inside an input. A run
    // named "Victim" writes beside an unrelated victim.json, never over it; two runs whose
    // names map to one stem get a TensorBoard folder each, the same ones again on a second
    // export; a name too long for a file is cut with a note; a dangling link as the folder is
    // exit 2 naming it; a date no run can have had is no date.
    void outputsNamedByRunsNeverReplaceAFile()
    {
        const fs::path in = dir_.path() / "named";
        fs::create_directories(in / "json");
        fs::create_directories(in / "csv");
        json victim = scaled_;
        victim["name"] = "Victim";
        writeJson(in / "victim-run.json", victim);
        { std::ofstream(in / "json" / "victim.json") << "unrelated"; }
        { std::ofstream(in / "csv" / "victim-steps.csv") << "unrelated"; }
        const QString base = QString::fromStdString(in.string());
        Tool r = runTool(PLAB_CLI_PATH, {"report", base + "/victim-run.json", "--json", base + "/json", "--csv", base + "/csv"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const auto text = [](const fs::path& f) {
            std::ifstream s(f);
            return std::string((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
        };
        QCOMPARE(text(in / "json" / "victim.json"), std::string("unrelated"));
        QCOMPARE(text(in / "csv" / "victim-steps.csv"), std::string("unrelated"));
        QCOMPARE(loadRunRecordDocument(in / "json" / "victim-2.json"), victim);
        QVERIFY(fs::exists(in / "csv" / "victim-2-steps.csv") && fs::exists(in / "csv" / "victim-2-telemetry.csv"));

        // Non-ASCII names both become the stem "run": a folder each, found again on re-export.
        json a = scaled_, b = unscaled_;
        a["name"] = "中文";
        b["name"] = "日本語";
        writeJson(in / "a.json", a);
        writeJson(in / "b.json", b);
        const auto folders = [&](const fs::path& dir) {
            QStringList names;
            for (const auto& e : fs::directory_iterator(dir))
                if (e.is_directory()) names << QString::fromStdString(e.path().filename().string());
            names.sort();
            return names;
        };
        for (int round = 0; round < 2; ++round) {
            r = runTool(PLAB_CLI_PATH, {"export", "--tensorboard", base + "/tb", base + "/a.json", base + "/b.json"});
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        }
        const QStringList tb = folders(in / "tb");
        QCOMPARE(tb.size(), 2);
        for (const QString& f : tb) {
            QVERIFY2(f.startsWith(QStringLiteral("run-")), qPrintable(f));
            int events = 0;
            for (const auto& e : fs::directory_iterator(in / "tb" / f.toStdString())) events += e.is_regular_file();
            QCOMPARE(events, 1);   // the second export replaced its own file
        }

        // A name longer than a file name may be: cut, with a note, and exit 0.
        json longName = scaled_;
        longName["name"] = std::string(5000, 'x');
        writeJson(in / "long.json", longName);
        r = runTool(PLAB_CLI_PATH, {"report", base + "/long.json", "--json", base + "/json-long"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("too long for a file name") && r.err.size() < 2000, qPrintable(r.err.left(2000)));
        for (const auto& e : fs::directory_iterator(in / "json-long")) QVERIFY(e.path().filename().string().size() <= 255);
        r = runTool(PLAB_CLI_PATH, {"export", "--tensorboard", base + "/tb-long", base + "/long.json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("too long for a folder name") && r.err.size() < 2000, qPrintable(r.err.left(2000)));

        // A dangling link where the folder should be: exit 2, one line naming it.
        fs::create_symlink(in / "nowhere", in / "dangling");
        r = runTool(PLAB_CLI_PATH, {"export", "--tensorboard", base + "/dangling", base + "/a.json"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("dangling") && r.err.contains("link to nothing") && r.err.trimmed().count('\n') == 0,
                 qPrintable(r.err));

        QCOMPARE(epochSeconds("-2147483648-01-01T00:00:00Z"), 0.0);
        QCOMPARE(epochSeconds("2147483647-01-01T00:00:00Z"), 0.0);
        QCOMPARE(epochSeconds("2026-13-01T00:00:00Z"), 0.0);
        QCOMPARE(epochSeconds("2026-11-28T00:00:00Z"), 1795824000.0);
    }

    // From the review: the reader that streams a record's steps reads what the whole-document
    // reader reads, or refuses it the same way: a repeated "steps" key is refused (the
    // document keeps the last, the stream had taken the first), a step that is no object
    // named as such.
    void streamedStepsReadAsTheDocument()
    {
        const fs::path file = dir_.path() / "streamed.json";
        std::string text = scaled_.dump();
        writeJson(file, scaled_);
        const RunRecord streamed = loadRunRecord(file);
        const RunRecord whole = readRunRecord(loadRunRecordDocument(file), file.string());
        QCOMPARE(streamed.steps.size(), whole.steps.size());
        for (std::size_t i = 0; i < whole.steps.size(); ++i) QVERIFY(streamed.steps[i] == whole.steps[i]);
        const auto refusal = [&](const std::string& body) {
            { std::ofstream(file) << body; }
            try {
                (void)loadRunRecord(file);
            } catch (const InputError& e) {
                return QString::fromStdString(e.what());
            }
            return QString();
        };
        json twice = scaled_;
        const std::string again = twice.dump();
        // The same key twice, as JSON text allows.
        const std::string doubled = "{\"steps\": [{\"step\": 99}], " + again.substr(1);
        QVERIFY2(refusal(doubled).contains(QStringLiteral("\"steps\" appears twice")), qPrintable(refusal(doubled)));
        json notObject = scaled_;
        notObject["steps"] = json::array({5});
        QVERIFY2(refusal(notObject.dump()).contains(QStringLiteral("every entry of \"steps\" must be an object, got 5")),
                 qPrintable(refusal(notObject.dump())));
    }

    void cliReportRejectsBadRecords_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addRow("not json") << QByteArray("{ this is not json");
        QTest::addRow("no format_version") << QByteArray("{\"name\": \"x\"}");
        QTest::addRow("no summary") << QByteArray("{\"format_version\": 1, \"recipe\": {}, \"settings\": {}, \"steps\": []}");
    }
    void cliReportRejectsBadRecords()
    {
        QFETCH(QByteArray, content);
        const fs::path bad = dir_.path() / "bad-record.json";
        std::ofstream(bad, std::ios::binary) << content.toStdString();
        const QString good = QString::fromStdString((dir_.path() / "good.json").string());
        writeJson(good.toStdString(), scaled_);
        const Tool r = runTool(PLAB_CLI_PATH, {"report", good, QString::fromStdString(bad.string()), "--html",
                                               QString::fromStdString((dir_.path() / "never.html").string())});
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err.trimmed().count('\n'), 0);   // one message
        QVERIFY2(r.err.contains("bad-record.json"), qPrintable(r.err));
        QVERIFY(!fs::exists(dir_.path() / "never.html"));
        const Tool noOutput = runTool(PLAB_CLI_PATH, {"report", good});
        QCOMPARE(noOutput.exitCode, 2);
        QVERIFY2(noOutput.err.contains("at least one output"), qPrintable(noOutput.err));
    }

    void cliSweepRunsTheGridAndReports()
    {
        const QString out = QString::fromStdString((dir_.path() / "sweep").string());
        const Tool r = runTool(PLAB_CLI_PATH, {"sweep", "--recipes", "fp32,amp-fp16", "--loss-scale", "off,dynamic",
                                               "--batch", "16,32", "--widths", "4,8", "--max-steps", "4", "--epochs", "1",
                                               "--threads", "1", "--data-dir", QString::fromStdString(dir_.path().string()),
                                               "--quiet", "--out-dir", out, "--report-pdf", out + "/sweep.pdf"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        int records = 0;
        for (const auto& e : fs::directory_iterator(out.toStdString())) records += e.path().extension() == ".json";
        QCOMPARE(records, 8);
        QVERIFY(fs::exists(out.toStdString() + "/amp-fp16_ls-off_b32.json"));
        QVERIFY(fs::exists(out.toStdString() + "/sweep.pdf"));
        QCOMPARE(r.out.trimmed().split('\n').size(), 9);   // header + one row per run
        QVERIFY2(r.out.contains("AMP FP16 without loss scaling, batch 32"), qPrintable(r.out));
        // An impossible grid point is refused before any run starts.
        const QString out2 = QString::fromStdString((dir_.path() / "sweep-bad").string());
        const Tool bad = runTool(PLAB_CLI_PATH, {"sweep", "--recipes", "fp32,nonsense", "--out-dir", out2,
                                                 "--data-dir", QString::fromStdString(dir_.path().string())});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("nonsense"), qPrintable(bad.err));
        QVERIFY(!fs::exists(out2.toStdString() + "/fp32.json"));
    }
};

QTEST_MAIN(TestReport)
#include "tst_report.moc"
