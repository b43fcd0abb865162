// Over 500 lines: every preset and switch of the recipe table, with its notices.
// Tests precision recipes and loss-scaling settings: the presets (amp/recipe.h)
// and of issue 2 section 4, storage formats, notices for unusual combinations,
// validate() for impossible values, describe(), and the --loss-scale parser.
// links: plab_amp
#include "amp/recipe.h"

#include <QTest>
#include <QFile>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <limits>

using namespace plab;

using RecipeEdit = std::function<void(PrecisionRecipe&)>;
Q_DECLARE_METATYPE(plab::Format)
Q_DECLARE_METATYPE(plab::LossScaleMode)
Q_DECLARE_METATYPE(RecipeEdit)
Q_DECLARE_METATYPE(plab::LossScaling)

namespace {

PrecisionRecipe preset(const char* name)
{
    auto r = PrecisionRecipe::fromPreset(name);
    if (!r) qFatal("no preset %s", name);
    return *r;
}

LossScaling dynamicDefaults() { return *LossScaling::preset("pytorch"); }

}  // namespace

class TestRecipe : public QObject {
    Q_OBJECT

private slots:
    // The quantisation modes' table: every row's name parses back to its mode, and per-layer
    // precision offers every format and every mode below 16 bits, in the tables' order.
    void quantModesTable()
    {
        std::vector<std::string> expected;
        for (const FormatInfo& f : formats()) expected.emplace_back(f.name);
        int modes = 0;
        for (const QuantModeInfo& q : quantModes()) {
            QCOMPARE(parseQuantMode(q.name), std::optional<QuantMode>(q.mode));
            QCOMPARE(quantModeName(q.mode), q.name);
            QVERIFY(!q.title.empty());
            if (q.mode != QuantMode::off) expected.emplace_back(q.name);
            ++modes;
        }
        QCOMPARE(modes, 8);
        // Then the block-scaled modes of one pass (a linear layer's), forward first.
        for (const char* name : {"mxfp8:forward", "mxfp4:forward", "nvfp4:forward", "mxfp6:forward",
                                 "mxfp8:backward", "mxfp4:backward", "nvfp4:backward", "mxfp6:backward"})
            expected.emplace_back(name);
        QCOMPARE(layerPrecisionNames(), expected);
        QCOMPARE(QString::fromStdString(layerPrecisionNames()[expected.size() - 9]), QString("mxfp6"));
    }

    // Each mode's row carries its rules, written here from the formats' definitions: OCP MX
    // v1.0 (blocks of 32 with an E8M0 scale; MXFP8 E4M3 or E5M2 elements, MXFP4 E2M1),
    // NVIDIA's NVFP4 (blocks of 16 E2M1 with an E4M3 scale and an fp32 tensor scale),
    // Transformer Engine's per-tensor FP8 (E4M3 forward, E5M2 gradients when hybrid).
    void quantModeRowsCarryTheirRules()
    {
        struct Want {
            QuantMode mode;
            QuantScale scale;
            int block;
            MiniFormat forward, hybridGradient, plainGradient;
        };
        for (const Want& w : {Want{QuantMode::fp8Unscaled, QuantScale::unscaled, 0, MiniFormat::e4m3, MiniFormat::e5m2, MiniFormat::e4m3},
                              Want{QuantMode::fp8Delayed, QuantScale::tensorDelayed, 0, MiniFormat::e4m3, MiniFormat::e5m2, MiniFormat::e4m3},
                              Want{QuantMode::fp8Current, QuantScale::tensorCurrent, 0, MiniFormat::e4m3, MiniFormat::e5m2, MiniFormat::e4m3},
                              Want{QuantMode::mxfp8, QuantScale::blockE8M0, 32, MiniFormat::e4m3, MiniFormat::e5m2, MiniFormat::e4m3},
                              Want{QuantMode::mxfp4, QuantScale::blockE8M0, 32, MiniFormat::e2m1, MiniFormat::e2m1, MiniFormat::e2m1},
                              Want{QuantMode::nvfp4, QuantScale::blockE4M3, 16, MiniFormat::e2m1, MiniFormat::e2m1, MiniFormat::e2m1},
                              Want{QuantMode::mxfp6, QuantScale::blockE8M0, 32, MiniFormat::e2m3, MiniFormat::e3m2, MiniFormat::e3m2}}) {
            Quantization q;
            q.mode = w.mode;
            QCOMPARE(q.info().mode, w.mode);
            QCOMPARE(q.info().scale, w.scale);
            QCOMPARE(q.info().blockSize, w.block);
            QCOMPARE(q.blockScaled(), w.block > 0);
            QCOMPARE(q.forwardFormat(), w.forward);
            q.hybrid = true;
            QCOMPARE(q.gradientFormat(), w.hybridGradient);
            q.hybrid = false;
            QCOMPARE(q.gradientFormat(), w.plainGradient);
            QCOMPARE(q.fp8Elements(), miniFormatInfo(w.forward).bits() == 8);
        }
        QVERIFY(!Quantization{}.on() && !Quantization{}.blockScaled() && !Quantization{}.fp8Elements());
    }

    // The presets' switches, one row per preset, written here from what each preset is meant to be.
    void presetSwitches_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("display");
        QTest::addColumn<Format>("compute");
        QTest::addColumn<bool>("master");
        QTest::addColumn<bool>("fp32Accumulate");
        QTest::addColumn<bool>("fp32Ops");
        QTest::addColumn<LossScaleMode>("scaling");
        QTest::addColumn<Format>("storage");
        // FP32's master column is "-"; we keep masterWeights on (fp32 weights either way).
        QTest::addRow("fp32") << "fp32" << "FP32" << Format::fp32 << true << true << true << LossScaleMode::off
                              << Format::fp32;
        QTest::addRow("tf32") << "tf32" << "TF32" << Format::tf32 << true << true << true << LossScaleMode::off
                              << Format::fp32;
        QTest::addRow("amp-fp16") << "amp-fp16" << "AMP FP16" << Format::fp16 << true << true << true
                                  << LossScaleMode::dynamic << Format::fp16;
        QTest::addRow("amp-bf16") << "amp-bf16" << "AMP BF16" << Format::bf16 << true << true << true
                                  << LossScaleMode::off << Format::bf16;
        QTest::addRow("pure-fp16") << "pure-fp16" << "Pure FP16" << Format::fp16 << false << true << false
                                   << LossScaleMode::off << Format::fp16;
        QTest::addRow("pure-bf16") << "pure-bf16" << "Pure BF16" << Format::bf16 << false << true << false
                                   << LossScaleMode::off << Format::bf16;
    }

    void presetSwitches()
    {
        QFETCH(QString, name);
        QFETCH(QString, display);
        QFETCH(Format, compute);
        QFETCH(bool, master);
        QFETCH(bool, fp32Accumulate);
        QFETCH(bool, fp32Ops);
        QFETCH(LossScaleMode, scaling);
        QFETCH(Format, storage);

        const auto r = PrecisionRecipe::fromPreset(name.toStdString());
        QVERIFY(r.has_value());
        QCOMPARE(QString::fromStdString(r->preset), name);
        QCOMPARE(QString::fromStdString(PrecisionRecipe::displayName(r->preset)), display);
        QVERIFY(r->compute == compute);
        QCOMPARE(r->masterWeights, master);
        QCOMPARE(r->fp32Accumulate, fp32Accumulate);
        QCOMPARE(r->fp32SensitiveOps, fp32Ops);
        QVERIFY(r->lossScaling.mode == scaling);
        QVERIFY(r->storage() == storage);
        if (scaling == LossScaleMode::dynamic) {
            // "dynamic 2^16, x2, x0.5, 2000"
            QCOMPARE(r->lossScaling.initScale, 65536.0);
            QCOMPARE(r->lossScaling.growthFactor, 2.0);
            QCOMPARE(r->lossScaling.backoffFactor, 0.5);
            QCOMPARE(r->lossScaling.growthInterval, 2000);
        }
        // Presets are the usual combinations: nothing to warn about, nothing impossible.
        QVERIFY2(r->notices().empty(), r->notices().empty() ? "" : r->notices().front().c_str());
        QVERIFY(r->validate().empty());
    }

    // The frameworks' recipes by their own names (issue 13 part 5). The expected switches
    // are read from the frameworks' sources (apex/amp/frontend.py's opt-level properties and
    // _initialize.py's float32 output cast; Keras' policies and LossScaleOptimizer
    // defaults; PyTorch's autocast and GradScaler defaults), not from our table.
    void frameworkPresets_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("sameAs");   // our preset with the same switches, or ""
        QTest::addColumn<Format>("compute");
        QTest::addColumn<bool>("master");
        QTest::addColumn<bool>("fp32Ops");
        QTest::addColumn<LossScaling>("scaling");
        LossScaling apex;
        apex.mode = LossScaleMode::dynamic;
        apex.initScale = 65536.0;          // 2.**16
        apex.maxScale = 16777216.0;        // max_loss_scale=2.**24
        LossScaling keras;
        keras.mode = LossScaleMode::dynamic;
        keras.initScale = 32768.0;         // initial_scale=2**15
        keras.minScale = 1.0;              // never below 1
        LossScaling grad;
        grad.mode = LossScaleMode::dynamic;    // GradScaler(): 2.**16, growth 2, backoff .5, 2000
        QTest::addRow("apex-O0") << "apex-O0" << "fp32" << Format::fp32 << true << true << LossScaling::off();
        QTest::addRow("apex-O1") << "apex-O1" << "" << Format::fp16 << true << true << apex;
        QTest::addRow("apex-O2") << "apex-O2" << "" << Format::fp16 << true << true << apex;
        // O3: no master weights, loss_scale=1.0, outputs cast to float32 (loss in fp32).
        QTest::addRow("apex-O3") << "apex-O3" << "" << Format::fp16 << false << true << LossScaling::off();
        QTest::addRow("mixed_float16") << "mixed_float16" << "" << Format::fp16 << true << true << keras;
        QTest::addRow("mixed_bfloat16") << "mixed_bfloat16" << "amp-bf16" << Format::bf16 << true << true
                                        << LossScaling::off();
        QTest::addRow("autocast-fp16") << "autocast-fp16" << "amp-fp16" << Format::fp16 << true << true << grad;
        QTest::addRow("autocast-bf16") << "autocast-bf16" << "amp-bf16" << Format::bf16 << true << true
                                       << LossScaling::off();
        QTest::addRow("allow-tf32") << "allow-tf32" << "tf32" << Format::tf32 << true << true << LossScaling::off();
    }

    void frameworkPresets()
    {
        QFETCH(QString, name);
        QFETCH(QString, sameAs);
        QFETCH(Format, compute);
        QFETCH(bool, master);
        QFETCH(bool, fp32Ops);
        QFETCH(LossScaling, scaling);
        const auto r = PrecisionRecipe::fromPreset(name.toStdString());
        QVERIFY(r.has_value());
        QCOMPARE(QString::fromStdString(r->preset), name);
        QVERIFY(r->compute == compute);
        QCOMPARE(r->masterWeights, master);
        QVERIFY(r->fp32Accumulate);   // every framework's GPU libraries accumulate in fp32
        QCOMPARE(r->fp32SensitiveOps, fp32Ops);
        QVERIFY2(r->lossScaling == scaling, r->lossScaling.describe().c_str());
        QVERIFY(r->validate().empty());
        // Named after the framework, not "Custom", and listed.
        QVERIFY(PrecisionRecipe::displayName(r->preset) != "Custom");
        QVERIFY(QString::fromStdString(r->describe()).startsWith(QString::fromStdString(PrecisionRecipe::displayName(r->preset)) + ":"));
        const auto& names = PrecisionRecipe::frameworkPresetNames();
        QVERIFY(std::find(names.begin(), names.end(), name.toStdString()) != names.end());
        if (!sameAs.isEmpty()) {
            PrecisionRecipe ours = preset(sameAs.toLatin1().constData());
            ours.preset = r->preset;
            QVERIFY(ours == *r);
        }
    }

    void frameworkPresetsDiffer()
    {
        // apex-O3 is not our pure-fp16: Apex casts the model's outputs to float32, so its
        // loss is fp32; everything else is the same.
        PrecisionRecipe o3 = preset("apex-O3");
        PrecisionRecipe pure = preset("pure-fp16");
        QVERIFY(o3.fp32SensitiveOps && !pure.fp32SensitiveOps);
        o3.fp32SensitiveOps = false;
        o3.preset = pure.preset;
        QVERIFY(o3 == pure);
        // Our six stay our six (the batch planner and the lessons list them); no name is in
        // both lists.
        for (const auto& n : PrecisionRecipe::frameworkPresetNames()) {
            const auto& ours = PrecisionRecipe::presetNames();
            QVERIFY(std::find(ours.begin(), ours.end(), n) == ours.end());
        }
    }

    // docs/FRAMEWORK_PRESETS.md's table says what each name sets; it must be what the code sets.
    void frameworkPresetsDocTable()
    {
        QFile doc(QStringLiteral(PLAB_SOURCE_DIR "/docs/FRAMEWORK_PRESETS.md"));
        QVERIFY(doc.open(QIODevice::ReadOnly | QIODevice::Text));
        std::map<std::string, QStringList> rows;
        for (const QString& line : QString::fromUtf8(doc.readAll()).split(QLatin1Char('\n'))) {
            if (!line.startsWith(QStringLiteral("| `")) || line.startsWith(QStringLiteral("| `--recipe`"))) continue;
            QStringList cells = line.split(QLatin1Char('|'));
            for (QString& c : cells) c = c.trimmed();
            // "", `name`, setting, compute, master, accumulate, softmax, scaling, ""
            QCOMPARE(cells.size(), 9);
            rows[cells[1].remove(QLatin1Char('`')).toStdString()] = cells;
        }
        QCOMPARE(rows.size(), PrecisionRecipe::frameworkPresetNames().size());
        auto onOff = [](bool b) { return b ? QStringLiteral("on") : QStringLiteral("off"); };
        for (const auto& name : PrecisionRecipe::frameworkPresetNames()) {
            QVERIFY2(rows.count(name), name.c_str());
            const QStringList& c = rows[name];
            const auto r = *PrecisionRecipe::fromPreset(name);
            QCOMPARE(c[3], QString::fromStdString(std::string(formatName(r.compute))));
            QCOMPARE(c[4], onOff(r.masterWeights));
            QCOMPARE(c[5], onOff(r.fp32Accumulate));
            QCOMPARE(c[6], onOff(r.fp32SensitiveOps));
            QCOMPARE(c[7], QString::fromStdString(r.lossScaling.describe()));
        }
    }

    void presetNamesAndUnknowns()
    {
        const std::vector<std::string> expected{"fp32", "tf32", "amp-fp16", "amp-bf16", "pure-fp16", "pure-bf16"};
        QVERIFY(PrecisionRecipe::presetNames() == expected);
        QVERIFY(!PrecisionRecipe::fromPreset("fp8").has_value());
        QVERIFY(!PrecisionRecipe::fromPreset("AMP FP16").has_value());
        QCOMPARE(QString::fromStdString(PrecisionRecipe::displayName("custom")), QString("Custom"));
        // The default recipe is the FP32 preset.
        QVERIFY(PrecisionRecipe{} == preset("fp32"));
    }

    void storageFollowsCompute_data()
    {
        QTest::addColumn<Format>("compute");
        QTest::addColumn<Format>("storage");
        QTest::addRow("fp32 stores fp32") << Format::fp32 << Format::fp32;
        QTest::addRow("tf32 stores fp32 (only matmul operands are tf32)") << Format::tf32 << Format::fp32;
        QTest::addRow("fp16 stores fp16") << Format::fp16 << Format::fp16;
        QTest::addRow("bf16 stores bf16") << Format::bf16 << Format::bf16;
    }

    void storageFollowsCompute()
    {
        QFETCH(Format, compute);
        QFETCH(Format, storage);
        PrecisionRecipe r;
        r.compute = compute;
        r.masterWeights = false;
        QVERIFY(r.storage() == storage);
        r.masterWeights = true;
        QVERIFY(r.storage() == storage);
    }

    void lossScalingPresets()
    {
        const auto pytorch = LossScaling::preset("pytorch");
        QVERIFY(pytorch && pytorch->mode == LossScaleMode::dynamic);
        QCOMPARE(pytorch->initScale, 65536.0);
        QCOMPARE(pytorch->growthFactor, 2.0);
        QCOMPARE(pytorch->backoffFactor, 0.5);
        QCOMPARE(pytorch->growthInterval, 2000);
        QVERIFY(!pytorch->minScale && !pytorch->maxScale);
        QVERIFY(LossScaling::preset("dynamic") == pytorch);

        const auto tensorflow = LossScaling::preset("tensorflow");
        QVERIFY(tensorflow && tensorflow->mode == LossScaleMode::dynamic);
        QCOMPARE(tensorflow->initScale, 32768.0);
        QVERIFY(tensorflow->minScale && *tensorflow->minScale == 1.0);
        QVERIFY(!tensorflow->maxScale);

        const auto apex = LossScaling::preset("apex");
        QVERIFY(apex && apex->mode == LossScaleMode::dynamic);
        QCOMPARE(apex->initScale, 65536.0);
        QVERIFY(apex->maxScale && *apex->maxScale == 16777216.0);
        QVERIFY(!apex->minScale);

        QVERIFY(!LossScaling::preset("off").has_value());
        QVERIFY(LossScaling::off().mode == LossScaleMode::off);
        QVERIFY(LossScaling::fixedScale(8).mode == LossScaleMode::fixed);
        QCOMPARE(LossScaling::fixedScale(8).initScale, 8.0);
    }

    // Unusual but allowed: a notice containing `mentions`.
    void notices_data()
    {
        QTest::addColumn<QString>("base");
        QTest::addColumn<RecipeEdit>("edit");
        QTest::addColumn<QString>("mentions");
        QTest::addRow("pure fp16 with dynamic scaling: GradScaler refuses fp16 params")
            << "pure-fp16" << RecipeEdit([](PrecisionRecipe& r) { r.lossScaling = dynamicDefaults(); })
            << "GradScaler";
        QTest::addRow("pure fp16 with static scaling: Apex O3")
            << "pure-fp16" << RecipeEdit([](PrecisionRecipe& r) { r.lossScaling = LossScaling::fixedScale(128); })
            << "Apex O3";
        QTest::addRow("amp fp16 without scaling: underflow")
            << "amp-fp16" << RecipeEdit([](PrecisionRecipe& r) { r.lossScaling = LossScaling::off(); })
            << "underflow";
        QTest::addRow("bf16 accumulation: CPU only")
            << "amp-bf16" << RecipeEdit([](PrecisionRecipe& r) { r.fp32Accumulate = false; }) << "CPU only";
        QTest::addRow("tf32 accumulation: CPU only")
            << "tf32" << RecipeEdit([](PrecisionRecipe& r) { r.fp32Accumulate = false; }) << "CPU only";
        QTest::addRow("scaling with bf16: harmless")
            << "amp-bf16" << RecipeEdit([](PrecisionRecipe& r) { r.lossScaling = dynamicDefaults(); })
            << "harmless";
        QTest::addRow("scaling with fp32: harmless")
            << "fp32" << RecipeEdit([](PrecisionRecipe& r) { r.lossScaling = LossScaling::fixedScale(1024); })
            << "harmless";
        QTest::addRow("scaling with tf32: harmless")
            << "tf32" << RecipeEdit([](PrecisionRecipe& r) { r.lossScaling = dynamicDefaults(); }) << "harmless";
        QTest::addRow("amp fp16 softmax in fp16")
            << "amp-fp16" << RecipeEdit([](PrecisionRecipe& r) { r.fp32SensitiveOps = false; }) << "Softmax";
    }

    void notices()
    {
        QFETCH(QString, base);
        QFETCH(RecipeEdit, edit);
        QFETCH(QString, mentions);
        PrecisionRecipe r = preset(base.toLatin1().constData());
        edit(r);
        const auto notes = r.notices();
        QVERIFY(!notes.empty());
        bool found = false;
        for (const auto& n : notes) found = found || QString::fromStdString(n).contains(mentions);
        QVERIFY2(found, qPrintable("no notice mentions " + mentions + "; first: " + QString::fromStdString(notes[0])));
        // Unusual is not impossible.
        QVERIFY(r.validate().empty());
    }

    // Impossible values: validate() names the setting in one sentence.
    void validateRejects_data()
    {
        QTest::addColumn<RecipeEdit>("edit");
        QTest::addColumn<QString>("names");
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        auto dyn = [](std::function<void(LossScaling&)> f) {
            return RecipeEdit([f](PrecisionRecipe& r) {
                r.lossScaling = dynamicDefaults();
                f(r.lossScaling);
            });
        };
        QTest::addRow("static scale 0") << RecipeEdit([](PrecisionRecipe& r) {
            r.lossScaling = LossScaling::fixedScale(0);
        }) << "static loss scale";
        QTest::addRow("static scale negative") << RecipeEdit([](PrecisionRecipe& r) {
            r.lossScaling = LossScaling::fixedScale(-4);
        }) << "static loss scale";
        QTest::addRow("static scale inf") << RecipeEdit([inf](PrecisionRecipe& r) {
            r.lossScaling = LossScaling::fixedScale(inf);
        }) << "static loss scale";
        // 1e39 is finite in double but overflows fp32, where the scale lives.
        QTest::addRow("static scale 1e39") << RecipeEdit([](PrecisionRecipe& r) {
            r.lossScaling = LossScaling::fixedScale(1e39);
        }) << "static loss scale";
        QTest::addRow("initial scale NaN") << dyn([nan](LossScaling& l) { l.initScale = nan; }) << "initial loss scale";
        QTest::addRow("initial scale 0") << dyn([](LossScaling& l) { l.initScale = 0; }) << "initial loss scale";
        QTest::addRow("growth factor 1") << dyn([](LossScaling& l) { l.growthFactor = 1; }) << "growth factor";
        QTest::addRow("growth factor 0.5") << dyn([](LossScaling& l) { l.growthFactor = 0.5; }) << "growth factor";
        QTest::addRow("growth factor inf") << dyn([inf](LossScaling& l) { l.growthFactor = inf; }) << "growth factor";
        QTest::addRow("backoff factor 0") << dyn([](LossScaling& l) { l.backoffFactor = 0; }) << "backoff factor";
        QTest::addRow("backoff factor 1") << dyn([](LossScaling& l) { l.backoffFactor = 1; }) << "backoff factor";
        QTest::addRow("backoff factor 2") << dyn([](LossScaling& l) { l.backoffFactor = 2; }) << "backoff factor";
        QTest::addRow("growth interval 0") << dyn([](LossScaling& l) { l.growthInterval = 0; }) << "growth interval";
        QTest::addRow("growth interval -5") << dyn([](LossScaling& l) { l.growthInterval = -5; }) << "growth interval";
        QTest::addRow("growth interval above the most") << dyn([](LossScaling& l) { l.growthInterval = LossScaling::kMaxGrowthInterval + 1; })
                                                      << "growth interval must be between 1 and 1000000000 steps";
        QTest::addRow("min scale 0") << dyn([](LossScaling& l) { l.minScale = 0.0; }) << "minimum loss scale";
        QTest::addRow("max scale NaN") << dyn([nan](LossScaling& l) { l.maxScale = nan; }) << "maximum loss scale";
        QTest::addRow("min above max") << dyn([](LossScaling& l) {
            l.minScale = 1024.0;
            l.maxScale = 16.0;
            l.initScale = 64;
        }) << "minimum loss scale 1024 is larger than the maximum loss scale 16";
        QTest::addRow("initial below min") << dyn([](LossScaling& l) { l.minScale = 1e6; })
                                           << "initial loss scale 65536 is below the minimum";
        QTest::addRow("initial above max") << dyn([](LossScaling& l) { l.maxScale = 1024.0; })
                                           << "initial loss scale 65536 is above the maximum";
    }

    void validateRejects()
    {
        QFETCH(RecipeEdit, edit);
        QFETCH(QString, names);
        PrecisionRecipe r = preset("amp-fp16");
        edit(r);
        const QString problem = QString::fromStdString(r.validate());
        QVERIFY2(problem.contains(names), qPrintable("got: '" + problem + "'"));
        QCOMPARE(QString::fromStdString(r.lossScaling.validate()), problem);
        QVERIFY(!problem.contains('\n'));
    }

    void validateIgnoresFieldsTheModeDoesNotUse()
    {
        PrecisionRecipe r;
        r.lossScaling.mode = LossScaleMode::off;
        r.lossScaling.growthFactor = 0;
        r.lossScaling.initScale = -1;
        QVERIFY(r.validate().empty());
        r.lossScaling = LossScaling::fixedScale(8);
        r.lossScaling.growthInterval = 0;   // a static scaler never grows
        QVERIFY(r.validate().empty());
    }

    void parseLossScaleOption_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("valid");
        QTest::addColumn<LossScaleMode>("mode");
        QTest::addColumn<double>("scale");
        QTest::addColumn<double>("minScale");   // 0: none
        QTest::addColumn<double>("maxScale");   // 0: none
        QTest::addRow("off") << "off" << true << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:8") << "static:8" << true << LossScaleMode::fixed << 8.0 << 0.0 << 0.0;
        QTest::addRow("static:1024") << "static:1024" << true << LossScaleMode::fixed << 1024.0 << 0.0 << 0.0;
        QTest::addRow("static:0.5") << "static:0.5" << true << LossScaleMode::fixed << 0.5 << 0.0 << 0.0;
        QTest::addRow("static:1e4") << "static:1e4" << true << LossScaleMode::fixed << 1e4 << 0.0 << 0.0;
        QTest::addRow("dynamic") << "dynamic" << true << LossScaleMode::dynamic << 65536.0 << 0.0 << 0.0;
        QTest::addRow("pytorch") << "pytorch" << true << LossScaleMode::dynamic << 65536.0 << 0.0 << 0.0;
        QTest::addRow("tensorflow") << "tensorflow" << true << LossScaleMode::dynamic << 32768.0 << 1.0 << 0.0;
        QTest::addRow("apex") << "apex" << true << LossScaleMode::dynamic << 65536.0 << 0.0 << 16777216.0;
        QTest::addRow("static:0") << "static:0" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:-8") << "static:-8" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:abc") << "static:abc" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:8x") << "static:8x" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:inf") << "static:inf" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:nan") << "static:nan" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static:1e39 overflows fp32") << "static:1e39" << false << LossScaleMode::off << 0.0 << 0.0
                                                    << 0.0;
        QTest::addRow("static without value") << "static" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("static: empty") << "static:" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("empty") << "" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("Dynamic (case)") << "Dynamic" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
        QTest::addRow("keras") << "keras" << false << LossScaleMode::off << 0.0 << 0.0 << 0.0;
    }

    void parseLossScaleOption()
    {
        QFETCH(QString, text);
        QFETCH(bool, valid);
        QFETCH(LossScaleMode, mode);
        QFETCH(double, scale);
        QFETCH(double, minScale);
        QFETCH(double, maxScale);

        std::string error;
        const std::string input = text.toStdString();
        const auto parsed = plab::parseLossScaleOption(input, &error);
        QCOMPARE(parsed.has_value(), valid);
        if (!valid) {
            QVERIFY(!error.empty());
            QVERIFY(!plab::parseLossScaleOption(input).has_value());   // no error sink needed
            return;
        }
        QVERIFY(parsed->mode == mode);
        if (mode != LossScaleMode::off) QCOMPARE(parsed->initScale, scale);
        QCOMPARE(parsed->minScale.value_or(0.0), minScale);
        QCOMPARE(parsed->maxScale.value_or(0.0), maxScale);
        QVERIFY(parsed->validate().empty());
    }

    // Per-layer precision (issue 15): the text form, and the recipe each layer runs under.
    void layerPrecisions()
    {
        std::string error;
        const auto parsed = parseLayerPrecisions(" conv1 = fp32 ,fc1=fp8-delayed", &error);
        QVERIFY2(parsed, error.c_str());
        QCOMPARE(*parsed, (std::vector<LayerPrecision>{{"conv1", "fp32"}, {"fc1", "fp8-delayed"}}));
        QCOMPARE(layerPrecisionsText(*parsed), std::string("conv1=fp32,fc1=fp8-delayed"));
        QVERIFY(parseLayerPrecisions("", &error)->empty());
        QVERIFY(!parseLayerPrecisions("conv1=fp32,", &error));   // an empty item
        QVERIFY(!parseLayerPrecisions("=fp32", &error));
        QVERIFY(error.find("names no layer") != std::string::npos);

        PrecisionRecipe r = preset("fp8-delayed");
        r.layers = *parsed;
        r.layers.push_back({"conv2", "mxfp4"});
        // A format: that compute, no quantisation; every other switch the recipe's.
        const PrecisionRecipe conv1 = r.forLayer("conv1");
        QCOMPARE(conv1.compute, Format::fp32);
        QCOMPARE(conv1.quantization.mode, QuantMode::off);
        QCOMPARE(conv1.masterWeights, r.masterWeights);
        QVERIFY(conv1.layers.empty());
        // A quantisation: that mode, the recipe's compute (its outputs) and FP8 settings.
        const PrecisionRecipe conv2 = r.forLayer("conv2");
        QCOMPARE(conv2.quantization.mode, QuantMode::mxfp4);
        QCOMPARE(conv2.compute, Format::bf16);
        QCOMPARE(conv2.quantization.amaxHistory, r.quantization.amaxHistory);
        // A layer without an entry, and the loss: the recipe less its list.
        PrecisionRecipe plain = r;
        plain.layers.clear();
        QVERIFY(r.forLayer("fc2") == plain);
        QVERIFY(r.forLayer("loss") == plain);
        QVERIFY(r.layerPrecision("fc1") && r.layerPrecision("fc1")->precision == "fp8-delayed");
        QVERIFY(!r.layerPrecision("fc2"));
        // The description keeps the preset's name (its switches are the preset's) and lists the layers.
        QCOMPARE(QString::fromStdString(r.describe()).section(':', 0, 0), QString("FP8 delayed scaling"));
        QVERIFY2(QString::fromStdString(r.describe()).endsWith("; per layer: conv1 fp32, fc1 fp8-delayed, conv2 mxfp4"),
                 r.describe().c_str());
    }

    // A block-scaled quantisation of one pass (lesson 12's fc1): its mode, which pass, and
    // the step rules of each pass; a per-tensor FP8 mode or an unknown pass is refused.
    void layerPrecisionOfOnePass()
    {
        std::string error;
        const auto parsed = parseLayerPrecisions("fc1=mxfp4:forward,fc2=nvfp4:backward", &error);
        QVERIFY2(parsed, error.c_str());
        QCOMPARE(layerPrecisionsText(*parsed), std::string("fc1=mxfp4:forward,fc2=nvfp4:backward"));
        for (const char* bad : {"fc1=fp8-delayed:forward", "fc1=mxfp4:both", "fc1=mxfp4:", "fc1=bf16:forward"}) {
            QVERIFY2(!parseLayerPrecisions(bad, &error), bad);
            QVERIFY2(error.find("precision must be") != std::string::npos, error.c_str());
        }
        PrecisionRecipe r = preset("mxfp4");
        r.layers = *parsed;
        const PrecisionRecipe fc1 = r.forLayer("fc1"), fc2 = r.forLayer("fc2"), conv1 = r.forLayer("conv1");
        QCOMPARE(fc1.quantization.mode, QuantMode::mxfp4);
        QCOMPARE(fc1.quantization.passes, QuantPasses::forward);
        QCOMPARE(fc2.quantization.mode, QuantMode::nvfp4);
        QCOMPARE(fc2.quantization.passes, QuantPasses::backward);
        QCOMPARE(conv1.quantization.passes, QuantPasses::both);
        QVERIFY(fc1.quantization.quantizesForward() && !fc1.quantization.quantizesBackward());
        QVERIFY(!fc2.quantization.quantizesForward() && fc2.quantization.quantizesBackward());
        QVERIFY(conv1.quantization.quantizesForward() && conv1.quantization.quantizesBackward());
        QVERIFY2(QString::fromStdString(fc1.quantization.describe()).endsWith(" on the forward pass only"),
                 fc1.quantization.describe().c_str());
        QVERIFY2(QString::fromStdString(r.describe()).endsWith("; per layer: fc1 mxfp4:forward, fc2 nvfp4:backward"),
                 r.describe().c_str());
    }

    // One answer to "is this still the preset?": per-layer precision makes the whole
    // recipe custom (the record's "custom", the run list), not its switches (describe(),
    // the settings panel's mark, which show the layers apart).
    void matchesPresetAnswersOnce()
    {
        PrecisionRecipe r = preset("amp-bf16");
        QVERIFY(r.matchesPreset());
        QVERIFY(r.matchesPreset(PrecisionRecipe::PresetMatch::switchesOnly));
        r.layers = {{"conv1", "fp32"}};
        QVERIFY(!r.matchesPreset());
        QVERIFY(r.matchesPreset(PrecisionRecipe::PresetMatch::switchesOnly));
        QVERIFY(QString::fromStdString(r.describe()).startsWith("AMP BF16: "));
        r.optimizerState = Format::bf16;
        QVERIFY(!r.matchesPreset(PrecisionRecipe::PresetMatch::switchesOnly));
        QVERIFY(QString::fromStdString(r.describe()).startsWith("Custom: "));
        r = preset("amp-bf16");
        r.preset = "no-such-preset";
        QVERIFY(!r.matchesPreset(PrecisionRecipe::PresetMatch::switchesOnly));
    }

    void describe()
    {
        // The line issue 2's CLI prints for the AMP FP16 preset.
        QCOMPARE(QString::fromStdString(preset("amp-fp16").describe()),
                 QString("AMP FP16: fp16 compute, fp32 master weights, fp32 accumulation, fp32 softmax/loss, "
                         "dynamic loss scaling 65536 x2 /2 every 2000"));
        QCOMPARE(QString::fromStdString(preset("pure-fp16").describe()),
                 QString("Pure FP16: fp16 compute, fp16 weights (no master copy), fp32 accumulation, "
                         "fp16 softmax/loss, no loss scaling"));
        QVERIFY(QString::fromStdString(preset("fp32").describe()).startsWith("FP32: fp32 compute, fp32 weights"));

        PrecisionRecipe edited = preset("amp-fp16");
        edited.lossScaling = *LossScaling::preset("apex");
        const QString text = QString::fromStdString(edited.describe());
        QVERIFY2(text.startsWith("Custom: "), qPrintable(text));
        QVERIFY2(text.endsWith(", max 16777216"), qPrintable(text));

        edited.lossScaling = LossScaling::fixedScale(1024);
        QVERIFY(QString::fromStdString(edited.describe()).endsWith("static loss scale 1024"));
        edited.fp32Accumulate = false;
        QVERIFY(QString::fromStdString(edited.describe()).contains("fp16 accumulation"));
    }
};

QTEST_GUILESS_MAIN(TestRecipe)
#include "tst_recipe.moc"
