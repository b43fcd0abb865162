// Tests of training settings: defaults, the JSON config form, preset-then-override order,
// one clear error for each bad key or value, and the one table of keys (every key read,
// checked and written back, and a config file read through settingsFromFile).
// links: plab_train

#include "error.h"
#include "setting_examples.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <QTest>
#include <QFloat16>
#include <QTemporaryDir>
#include <nlohmann/json.hpp>

using namespace plab;
using nlohmann::json;

class TestSettings : public QObject {
    Q_OBJECT
private slots:
    void defaultsAreTheDocumentedOnes()
    {
        const TrainSettings s = settingsFromJson(json::object(), "test");
        QCOMPARE(s.model.kind, std::string("small-cnn"));
        QCOMPARE(s.optimizer.kind, std::string("adam"));
        QCOMPARE(s.optimizer.lr, 1e-3);
        QCOMPARE(s.batch, 32);
        QCOMPARE(s.epochs, 3);
        QCOMPARE(s.recipe.compute, Format::fp32);
        QCOMPARE(s.dataset, std::string("mnist"));
    }

    // A model's own training defaults (the vit's, docs/TRANSFORMER.md) fill what a new run's
    // patch leaves out; what it gives wins; stored settings (a record's) never take them.
    void modelsOwnDefaults()
    {
        const TrainSettings vit = settingsFromJson(json{{"model", "vit"}}, "test");
        QCOMPARE(vit.model.widths, (std::vector<int>{128, 3, 8, 7}));
        QCOMPARE(vit.batch, 16);
        QCOMPARE(vit.lrSchedule.shape, LrShape::cosine);
        QCOMPARE(vit.lrSchedule.warmupSteps, std::int64_t(150));
        QVERIFY(vit.zeroInitResidual);
        QCOMPARE(vit.labelSmoothing, 0.1);
        QCOMPARE(vit.optimizer.lr, 1e-3);
        const auto taken = [](const json& patch) {
            ModelDefaultsTaken t;
            (void)settingsFromJson(patch, "test", SettingsReading::newRun, &t);
            return t.takenText();
        };
        QCOMPARE(taken(json{{"model", "vit"}}),
                 std::string("batch 16, label_smoothing 0.1, lr_schedule cosine, warmup_steps 150, widths 128,3,8,7, "
                             "zero_init_residual on"));
        // What the patch gives wins, and is no longer listed as taken.
        const json patch = {{"model", "vit"}, {"batch", 64}, {"widths", {64, 2, 4, 7}}, {"zero_init_residual", false}};
        const TrainSettings given = settingsFromJson(patch, "test");
        QCOMPARE(given.batch, 64);
        QCOMPARE(given.model.widths, (std::vector<int>{64, 2, 4, 7}));
        QVERIFY(!given.zeroInitResidual);
        QCOMPARE(given.labelSmoothing, 0.1);
        QCOMPARE(taken(patch), std::string("label_smoothing 0.1, lr_schedule cosine, warmup_steps 150"));
        // Initial weights from a file give every weight: no zero-initialised branches.
        const json weights = {{"model", "vit"}, {"init_weights", "w.safetensors"}};
        QVERIFY(!settingsFromJson(weights, "test").zeroInitResidual);
        QCOMPARE(settingsFromJson(weights, "test").batch, 16);
        QVERIFY(taken(weights).find("zero_init_residual") == std::string::npos);
        ModelDefaultsTaken leftOff;
        (void)settingsFromJson(weights, "test", SettingsReading::newRun, &leftOff);
        QCOMPARE(leftOff.leftOffText(), std::string("zero_init_residual on (the initial weights from a file give every weight)"));
        const TrainSettings withWeights = settingsFromJson(json{{"init_weights", "w.safetensors"}}, "test");
        QVERIFY(!followModelDefaults(withWeights, "vit").zeroInitResidual);
        QCOMPARE(followModelDefaults(withWeights, "vit").batch, 16);
        // A recipe that keeps the loss in 16 bits refuses label smoothing: the vit's own
        // smoothing stays off there rather than refuse the run (the user's own is refused).
        for (const char* preset : {"pure-fp16", "pure-bf16"}) {
            const json pure = {{"model", "vit"}, {"recipe", preset}};
            QCOMPARE(settingsFromJson(pure, "test").labelSmoothing, 0.0);
            QCOMPARE(settingsFromJson(pure, "test").batch, 16);
            QVERIFY(taken(pure).find("label_smoothing") == std::string::npos);
            ModelDefaultsTaken pureTaken;
            (void)settingsFromJson(pure, "test", SettingsReading::newRun, &pureTaken);
            QCOMPARE(pureTaken.leftOffText(), std::string("label_smoothing 0.1 (the recipe keeps the loss in 16 bits)"));
            json withSmoothing = pure;
            withSmoothing["label_smoothing"] = 0.1;
            QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(withSmoothing, "test"));
            const TrainSettings panel = settingsFromJson(json{{"recipe", preset}}, "test");
            QCOMPARE(followModelDefaults(panel, "vit").labelSmoothing, 0.0);
            QCOMPARE(followModelDefaults(panel, "vit").batch, 16);
        }
        QCOMPARE(modelDefaultsHeld(settingsFromJson(json{{"model", "vit"}, {"batch", 32}}, "test")),
                 std::string("label_smoothing 0.1, lr_schedule cosine, warmup_steps 150, widths 128,3,8,7, "
                             "zero_init_residual on"));
        QCOMPARE(modelDefaultsHeld(settingsFromJson(json{{"model", "vit"}, {"recipe", "pure-bf16"}}, "test")),
                 std::string("batch 16, lr_schedule cosine, warmup_steps 150, widths 128,3,8,7, zero_init_residual on"));
        // The other models have none.
        for (const char* kind : {"mlp", "deep-mlp", "small-cnn", "seed-cnn"}) {
            QVERIFY(modelDefaultKeys(kind).empty());
            QCOMPARE(settingsFromJson(json{{"model", kind}}, "test").batch, 32);
        }
        // A record's settings mean what they meant when written: every model's defaults.
        QCOMPARE(modelDefaultKeys("vit"), (std::vector<std::string>{"batch", "label_smoothing", "lr_schedule",
                                                                   "warmup_steps", "widths", "zero_init_residual"}));
        const TrainSettings stored = settingsFromJson(json{{"model", "vit"}}, "test", SettingsReading::stored);
        QVERIFY(stored.model.widths.empty());
        QCOMPARE(stored.batch, 32);
        QCOMPARE(stored.lrSchedule.shape, LrShape::constant);
        QVERIFY(!stored.zeroInitResidual);
        QCOMPARE(stored.labelSmoothing, 0.0);
        QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(json{{"batchsize", 3}}, "test", SettingsReading::stored));
    }

    // A settings panel's model change: the widths become the new model's; settings left at
    // the old model's defaults take the new one's; what the user changed stays.
    void modelChangeFollowsTheDefaults()
    {
        const TrainSettings s = settingsFromJson(json{{"batch", 64}, {"widths", {6, 8}}}, "test");
        const TrainSettings toVit = followModelDefaults(s, "vit");
        QCOMPARE(toVit.model.kind, std::string("vit"));
        QCOMPARE(toVit.model.widths, (std::vector<int>{128, 3, 8, 7}));
        QCOMPARE(toVit.batch, 64);   // changed by the user
        QCOMPARE(toVit.lrSchedule.shape, LrShape::cosine);
        QCOMPARE(toVit.lrSchedule.warmupSteps, std::int64_t(150));
        QVERIFY(toVit.zeroInitResidual);
        QCOMPARE(toVit.labelSmoothing, 0.1);
        QCOMPARE(validateSettings(toVit), std::string());
        const TrainSettings edited = settingsFromJson(json{{"model", "vit"}, {"label_smoothing", 0.2}}, "test");
        const TrainSettings back = followModelDefaults(edited, "mlp");
        QCOMPARE(back.model.kind, std::string("mlp"));
        QVERIFY(back.model.widths.empty());
        QCOMPARE(back.batch, 32);
        QCOMPARE(back.lrSchedule.shape, LrShape::constant);
        QCOMPARE(back.lrSchedule.warmupSteps, std::int64_t(0));
        QVERIFY(!back.zeroInitResidual);
        QCOMPARE(back.labelSmoothing, 0.2);   // changed by the user
        // Nothing else moves: the same as a new mlp run with the user's smoothing.
        QVERIFY(back == settingsFromJson(json{{"model", "mlp"}, {"label_smoothing", 0.2}}, "test"));
    }

    // Gradient accumulation needs a sample in every part, and the CPU backend.
    void gradientAccumulationIsRefusedWhereItCannotRun()
    {
        QCOMPARE(settingsFromJson(json{{"grad_accum_steps", 4}, {"batch", 4}}, "test").gradAccumSteps, 4);
        try {
            (void)settingsFromJson(json{{"grad_accum_steps", 4}, {"batch", 2}}, "test");
            QFAIL("four parts of a batch of two were accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("more micro-batches than its batch of 2 has samples") != std::string::npos, e.what());
        }
        try {
            (void)settingsFromJson(json{{"grad_accum_steps", 2}, {"backend", "cuda"}}, "test");
            QFAIL("accumulation on the CUDA backend was accepted");
        } catch (const InputError& e) {
            QVERIFY2(std::string(e.what()).find("CPU backend only") != std::string::npos, e.what());
        }
    }

    void presetThenSwitches()
    {
        const TrainSettings s = settingsFromJson(
            json{{"recipe", "amp-fp16"}, {"loss_scale", "off"}, {"master_weights", "off"}}, "test");
        QCOMPARE(s.recipe.compute, Format::fp16);
        QCOMPARE(s.recipe.lossScaling.mode, LossScaleMode::off);
        QVERIFY(!s.recipe.masterWeights);
        QVERIFY(s.recipe.fp32Accumulate);
    }

    void dynamicKnobsOverrideThePreset()
    {
        const TrainSettings s = settingsFromJson(
            json{{"loss_scale", "tensorflow"}, {"growth_interval", 7}, {"init_scale", 128.0}}, "test");
        QCOMPARE(s.recipe.lossScaling.mode, LossScaleMode::dynamic);
        QCOMPARE(s.recipe.lossScaling.growthInterval, 7);
        QCOMPARE(s.recipe.lossScaling.initScale, 128.0);
        QVERIFY(s.recipe.lossScaling.minScale.has_value());
        QCOMPARE(*s.recipe.lossScaling.minScale, 1.0);
    }

    void jsonRoundTrip_data()
    {
        QTest::addColumn<QString>("preset");
        // Ours and the frameworks' named recipes (apex-O2, mixed_float16, ...).
        for (const auto* names : {&PrecisionRecipe::presetNames(), &PrecisionRecipe::frameworkPresetNames()})
            for (const auto& name : *names) QTest::addRow("%s", name.c_str()) << QString::fromStdString(name);
    }
    void jsonRoundTrip()
    {
        QFETCH(QString, preset);
        TrainSettings s = settingsFromJson(json{{"recipe", preset.toStdString()}, {"batch", 64},
                                                {"seed", 7}, {"widths", {8, 16}}, {"loss_scale", "static:8"}},
                                           "test");
        const TrainSettings back = settingsFromJson(settingsToJson(s), "test");
        QVERIFY(back == s);
    }

    void badValuesNameTheKey_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unknown key") << R"({"batchsize": 3})" << "unknown setting 'batchsize'";
        QTest::addRow("batch zero") << R"({"batch": 0})" << "'batch' must be between 1";
        QTest::addRow("batch text") << R"({"batch": "x"})" << "'batch' must be a whole number";
        QTest::addRow("lr negative") << R"({"lr": -1})" << "'lr' must be greater than 0";
        QTest::addRow("unknown recipe") << R"({"recipe": "fp8"})" << "'recipe' must be fp32, ";
        QTest::addRow("unknown compute") << R"({"compute": "fp64"})" << "'compute' must be fp32";
        QTest::addRow("bad loss scale") << R"({"loss_scale": "static:0"})" << "'loss_scale'";
        QTest::addRow("bad switch") << R"({"master_weights": "maybe"})" << "'master_weights' must be on or off";
        QTest::addRow("optimizer state tf32") << R"({"optimizer_state": "tf32"})"
                                              << "'optimizer_state' must be auto, fp32, bf16 or fp16, got \"tf32\"";
        QTest::addRow("update rounding") << R"({"update_rounding": "up"})"
                                         << "'update_rounding' must be nearest, stochastic or kahan, got \"up\"";
        QTest::addRow("mx scale") << R"({"mx_scale": "nearest"})" << "'mx_scale' must be floor or ceil, got \"nearest\"";
        QTest::addRow("unknown model") << R"({"model": "resnet"})" << "'model' must be mlp";
        QTest::addRow("label smoothing one") << R"({"label_smoothing": 1})" << "'label_smoothing' must be in [0, 1), got 1";
        QTest::addRow("label smoothing negative") << R"({"label_smoothing": -0.1})" << "'label_smoothing' must be in [0, 1), got -0.1";
        QTest::addRow("backoff above one") << R"({"loss_scale": "dynamic", "backoff_factor": 2})" << "backoff";
        QTest::addRow("not an object") << R"([1, 2])" << "expected a JSON object";
        QTest::addRow("layer without =") << R"({"layer": "conv1"})" << "'layer' 'conv1' is not layer=precision";
        QTest::addRow("layer precision") << R"({"layer": "conv1=fp64"})"
                                         << "'layer' conv1: precision must be fp32, tf32, fp16, bf16, fp8-unscaled";
        QTest::addRow("layer twice") << R"({"layer": "conv1=fp32, conv1=bf16"})" << "'layer' conv1 is given twice";
        QTest::addRow("layer name") << R"({"layer": "conv 1=fp32"})" << "may hold only letters, digits, _ and .";
        QTest::addRow("layer not in the model") << R"({"layer": "fc3=fp32"})"
                                                << "model small-cnn has no layer 'fc3' with weights (it has conv1, conv2 or fc1)";
        QTest::addRow("layer of another model") << R"({"model": "mlp", "layer": "conv1=bf16"})"
                                                << "model mlp has no layer 'conv1'";
        QTest::addRow("deep-mlp layer beyond its depth") << R"({"model": "deep-mlp", "widths": [64, 8], "layer": "fc9=bf16"})"
                                                         << "model deep-mlp has no layer 'fc9'";
        QTest::addRow("deep-mlp of 65 layers") << R"({"model": "deep-mlp", "widths": [64, 65]})"
                                               << "model deep-mlp: the number of linear layers must be between 2 and 64, got 65";
        QTest::addRow("vit heads") << R"({"model": "vit", "widths": [64, 2, 3, 7]})"
                                   << "model vit: the heads (3) must divide the width (64)";
        QTest::addRow("vit patch") << R"({"model": "vit", "widths": [64, 2, 4, 5]})"
                                   << "model vit: the patch side must divide 28";
        QTest::addRow("vit two widths") << R"({"model": "vit", "widths": [64, 2]})"
                                        << "model vit takes 4 widths, got 2 (width, number of blocks, heads, patch side)";
        QTest::addRow("vit layer") << R"({"model": "vit", "layer": "block4.qkv=fp32"})" << "model vit has no layer 'block4.qkv'";
        QTest::addRow("one pass of a convolution") << R"({"recipe": "mxfp4", "layer": "fc1=mxfp4:forward,conv1=mxfp4:backward"})"
                                                   << "conv1=mxfp4:backward quantises one pass of a convolution; a "
                                                      "quantisation of one pass applies to linear layers only";
        QTest::addRow("one pass of FP8") << R"({"layer": "fc1=fp8-delayed:forward"})"
                                         << "'layer' fc1: precision must be";
    }
    // Issue 38: the optimizer state apart from the master weights. Unset, it follows
    // PyTorch's rule (the parameter's dtype); set, the master-weights switch leaves it be.
    // What it cannot hold is said before the run: Adam's eps in fp16, and the second
    // moments fp16 flushes.
    void optimizerStateApartFromMasterWeights()
    {
        const TrainSettings byRule = settingsFromJson(json{{"recipe", "pure-fp16"}}, "test");
        QCOMPARE(byRule.recipe.optimizerStateFormat(), Format::fp16);
        QCOMPARE(settingsToJson(byRule).at("optimizer_state"), json("auto"));
        const TrainSettings apart =
            settingsFromJson(json{{"recipe", "pure-fp16"}, {"optimizer_state", "fp32"}}, "test");
        QCOMPARE(apart.recipe.optimizerStateFormat(), Format::fp32);
        QCOMPARE(apart.recipe.weightFormat(), Format::fp16);
        QVERIFY(QString::fromStdString(apart.recipe.describe()).contains("fp16 weights (no master copy), fp32 optimizer state"));
        QVERIFY(!QString::fromStdString(byRule.recipe.describe()).contains("optimizer state"));

        auto says = [](const TrainSettings& s, const char* what) {
            for (const auto& n : settingsNotices(s))
                if (QString::fromStdString(n).contains(QLatin1String(what))) return true;
            return false;
        };
        QVERIFY(says(byRule, "Adam's eps (1e-08) is 0 in fp16"));
        QVERIFY(says(byRule, "for gradients smaller than about 0.0055"));
        QVERIFY(!says(apart, "Adam's eps"));
        QVERIFY(!says(apart, "second moment"));
        TrainSettings sgd = byRule;
        sgd.optimizer.kind = "sgd";
        QVERIFY(!says(sgd, "Adam"));
        const TrainSettings bf16State =
            settingsFromJson(json{{"recipe", "amp-fp16"}, {"optimizer_state", "bf16"}}, "test");
        QVERIFY(!says(bf16State, "Adam's eps"));   // 1e-8 is a bf16 number
        QVERIFY(says(bf16State, "Optimizer state in bf16 beside fp32 master weights"));
    }

    // Issue 71: telemetry every-step (the default) or sampled, read and written back; where
    // sampled can change nothing (a backend without a convolution library) or no step
    // takes a snapshot, a notice says so.
    void telemetryMode()
    {
        QCOMPARE(settingsFromJson(json::object(), "test").telemetry, TelemetryMode::everyStep);
        const TrainSettings cpu = settingsFromJson(json{{"telemetry", "sampled"}}, "test");
        QCOMPARE(cpu.telemetry, TelemetryMode::sampled);
        QCOMPARE(settingsToJson(cpu).at("telemetry"), json("sampled"));
        QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(json{{"telemetry", "sometimes"}}, "test"));
        auto says = [](const TrainSettings& s, const char* what) {
            for (const auto& n : settingsNotices(s))
                if (QString::fromStdString(n).contains(QLatin1String(what))) return true;
            return false;
        };
        QVERIFY(says(cpu, "telemetry sampled: the cpu backend has no convolution library"));
        TrainSettings gpu = cpu;
        gpu.backend = "cuda";
        QVERIFY(!says(gpu, "telemetry sampled"));
        gpu.histogramEvery = 0;
        QVERIFY(says(gpu, "telemetry sampled with histogram_every 0: no step takes a snapshot"));
        gpu.telemetry = TelemetryMode::everyStep;
        QVERIFY(!says(gpu, "telemetry"));
    }

    // Issue 38: update rounding is a switch of the recipe: read, written to the record,
    // named in the description and the comparison's phrase, a change of it said; with fp32
    // weights it is noticed as changing nothing (stochastic) or being meant for 16 bits.
    // Issue 38: the MX block exponent's rounding is a setting (floor, the OCP reference, by
    // default; ceil, Transformer Engine's), recorded, described and told apart from the preset.
    void mxScaleIsARecipeSwitch()
    {
        const TrainSettings plain = settingsFromJson(json{{"recipe", "amp-bf16"}, {"quantize", "mxfp8"}}, "test");
        QCOMPARE(plain.recipe.quantization.mxScale, MxScaleRounding::floor);
        QCOMPARE(settingsToJson(plain).at("mx_scale"), json("floor"));
        const TrainSettings ceil =
            settingsFromJson(json{{"recipe", "amp-bf16"}, {"quantize", "mxfp8"}, {"mx_scale", "ceil"}}, "test");
        QCOMPARE(ceil.recipe.quantization.mxScale, MxScaleRounding::ceil);
        QVERIFY(QString::fromStdString(ceil.recipe.quantization.describe()).contains("exponent rounded up"));
        QVERIFY(!QString::fromStdString(plain.recipe.quantization.describe()).contains("rounded up"));
        QVERIFY(QString::fromStdString(describeRecipeChange(plain.recipe, ceil.recipe)).contains("exponent rounded up"));
        QCOMPARE(settingsFromJson(settingsToJson(ceil), "round trip").recipe.quantization.mxScale, MxScaleRounding::ceil);
    }

    void updateRoundingIsARecipeSwitch()
    {
        const TrainSettings plain = settingsFromJson(json{{"recipe", "pure-bf16"}}, "test");
        QCOMPARE(plain.recipe.updateRounding, UpdateRounding::nearest);
        QCOMPARE(settingsToJson(plain).at("update_rounding"), json("nearest"));
        QVERIFY(plain.recipe.matchesPreset());
        const TrainSettings kahan = settingsFromJson(json{{"recipe", "pure-bf16"}, {"update_rounding", "kahan"}}, "test");
        QCOMPARE(kahan.recipe.updateRounding, UpdateRounding::kahan);
        QVERIFY(!kahan.recipe.matchesPreset());
        QVERIFY(QString::fromStdString(kahan.recipe.describe()).contains("Kahan-compensated updates"));
        QCOMPARE(QString::fromStdString(describeRecipeChange(plain.recipe, kahan.recipe)),
                 QStringLiteral("update rounding nearest -> kahan"));
        const TrainSettings stochastic =
            settingsFromJson(json{{"recipe", "amp-bf16"}, {"update_rounding", "stochastic"}}, "test");
        QVERIFY(QString::fromStdString(stochastic.recipe.describe()).contains("stochastic update rounding"));
        bool noticed = false;
        for (const auto& n : stochastic.recipe.notices())
            noticed = noticed || QString::fromStdString(n).startsWith("Stochastic update rounding changes nothing here");
        QVERIFY(noticed);
        for (const auto& n : kahan.recipe.notices()) QVERIFY(!QString::fromStdString(n).contains("Kahan"));
    }

    void badValuesNameTheKey()
    {
        QFETCH(QString, config);
        QFETCH(QString, expected);
        try {
            settingsFromJson(json::parse(config.toStdString()), "config x.json");
            QFAIL("no error for a bad setting");
        } catch (const InputError& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains(expected), qPrintable(message));
            QVERIFY2(message.startsWith("config x.json"), qPrintable(message));
        }
    }

    // The rows' ranges and choices are the rules every reader applies: each is written here
    // by hand, as the help and docs state them, and each bound is tried on the JSON reader (a
    // row whose reading checks another range, or none, fails here).
    void rowsCarryTheRangesTheReaderApplies()
    {
        struct Expected {
            const char* key;
            const char* range;
            json inside, outside;   // just within the range, just beyond it
        };
        const Expected expected[] = {
            {"growth_interval", "between 1 and 1000000000", 1000000000, 1000000001},
            {"amax_history", "between 1 and 100000", 1, 0},
            {"fp8_margin", "between -32 and 32", -32, -33},
            {"batch", "between 1 and 65536", 65536, 65537},
            {"epochs", "between 0 and 100000", 0, -1},
            {"max_steps", "between 0 and 1099511627776", std::int64_t(1) << 40, (std::int64_t(1) << 40) + 1},
            {"warmup_steps", "between 0 and 1099511627776", 0, -1},
            {"seed", "between 0 and 9223372036854775807", INT64_MAX, std::uint64_t(INT64_MAX) + 1},
            {"threads", "between 1 and 256", 256, 257},
            {"histogram_every", "between 0 and 1000000000", 0, -1},
            {"eval_every", "between 0 and 1000000000", 1000000000, 1000000001},
            {"divergence_steps", "between 1 and 1000000", 1, 0},
            {"init_scale", "greater than 0", 1e-30, 0.0},
            {"min_scale", "greater than 0", 1e-30, 0.0},
            {"max_scale", "greater than 0", 1e-30, -1.0},
            {"lr", "greater than 0", 1e-12, 0.0},
            {"label_smoothing", "in [0, 1)", 0.0, 1.0},
            {"momentum", "in [0, 1)", 0.999, 1.0},
            {"adam_eps", "greater than 0", 1e-30, 0.0},
            {"grad_accum_steps", "between 1 and 1024", 1024, 1025},
            {"clip_grad_norm", "0 or more", 0.0, -1e-9},
        };
        std::set<std::string> ranged;
        for (const SettingKey& k : settingKeys())
            if (k.range) ranged.insert(k.key);
        QCOMPARE(ranged.size(), std::size(expected));
        for (const Expected& e : expected) {
            const SettingKey* row = findSettingKey(e.key);
            QVERIFY2(row && row->range, e.key);
            QCOMPARE(QString::fromStdString(settingRangeText(*row)), QString::fromLatin1(e.range));
            QVERIFY2(QString::fromStdString(settingHelp(*row)).endsWith(QString::fromLatin1(e.range)), e.key);
            json patch = {{e.key, e.inside}};
            if (std::string_view(e.key) == "label_smoothing") patch["fp32_sensitive_ops"] = true;
            if (std::string_view(e.key) == "grad_accum_steps") patch["batch"] = 1024;   // a micro-batch has a sample at least
            try {
                (void)settingsFromJson(patch, "test");
            } catch (const InputError& error) {
                QFAIL((std::string(e.key) + " refused a value within its range: " + error.what()).c_str());
            }
            try {
                (void)settingsFromJson(json{{e.key, e.outside}}, "config x.json");
                QFAIL((std::string(e.key) + " took a value beyond its range").c_str());
            } catch (const InputError& error) {
                const std::string said = "config x.json: '" + std::string(e.key) + "' must be " + e.range + ", got";
                QVERIFY2(std::string(error.what()).starts_with(said), error.what());
            }
        }
        // The live change of a training run is checked by the same rows.
        TrainerControl control;
        SettingsChange zeroBatch;
        zeroBatch.batch = 0;
        QCOMPARE(QString::fromStdString(control.requestChange(zeroBatch)), QString("batch must be between 1 and 65536, got 0"));
        SettingsChange negativeLr;
        negativeLr.lr = -1.0;
        QCOMPARE(QString::fromStdString(control.requestChange(negativeLr)), QString("lr must be greater than 0, got -1"));
        // Settings built in code (the panel builds its own) are checked by them too.
        TrainSettings s;
        s.optimizer.momentum = 1.0;
        QCOMPARE(QString::fromStdString(validateSettings(s)), QString("momentum must be in [0, 1), got 1"));
    }

    // Every text key with a closed set of values lists them in its row; each is read and
    // written back as given, and anything else is refused with the list and the nearest.
    void rowsCarryTheChoicesTheReaderTakes()
    {
        // Written here by hand; the tables' keys (model, recipe, compute, quantize) against theirs.
        const std::map<std::string, std::vector<std::string>> expected = {
            {"optimizer_state", {"auto", "fp32", "bf16", "fp16"}},
            {"update_rounding", {"nearest", "stochastic", "kahan"}},
            {"attention_scores", {"storage", "fp32"}},
            {"telemetry", {"every-step", "sampled"}},
            {"fp8_format", {"hybrid", "e4m3"}},
            {"mx_scale", {"floor", "ceil"}},
            {"amax_algorithm", {"max", "most_recent"}},
            {"lr_schedule", {"constant", "cosine"}},
            {"optimizer", {"adam", "sgd"}},
            {"dataset", {"mnist", "fashion-mnist"}},
            {"clip_grad_at", {"unscaled", "scaled"}},
            {"grad_accum_format", {"fp32", "bf16", "fp16"}},
            {"backend", {"cpu", "cuda"}},
            {"arithmetic", {"hardware", "exact"}},
            {"model", {"mlp", "deep-mlp", "small-cnn", "seed-cnn", "vit", "autoencoder"}},
            {"compute", {"fp32", "tf32", "fp16", "bf16"}},
            {"recipe", PrecisionRecipe::allPresetNames()},
            {"quantize", [] {
                 std::vector<std::string> names;
                 for (const QuantModeInfo& q : quantModes()) names.emplace_back(q.name);
                 return names;
             }()},
        };
        std::set<std::string> withChoices;
        for (const SettingKey& k : settingKeys())
            if (!k.choices.empty()) withChoices.insert(k.key);
        QCOMPARE(withChoices.size(), expected.size());
        for (const auto& [key, values] : expected) {
            const SettingKey* row = findSettingKey(key);
            QVERIFY2(row, key.c_str());
            QCOMPARE(settingChoiceValues(*row), values);
            for (const std::string& v : values) {
                if (key == "backend" && v == "cuda") continue;   // validated against the machine
                json patch = {{key, v}};
                if (key == "compute" && v == "tf32") patch["recipe"] = "tf32";
                const TrainSettings s = settingsFromJson(patch, "test");
                QCOMPARE(settingsToJson(s).at(key).get<std::string>(), v);
            }
            const std::string typo = values.front() + "q";
            try {
                (void)settingsFromJson(json{{key, typo}}, "config x.json");
                QFAIL((key + " took " + typo).c_str());
            } catch (const InputError& error) {
                const std::string said = "config x.json: '" + key + "' must be " + alternatives(values) + ", got \"" + typo + "\"";
                QVERIFY2(std::string(error.what()).starts_with(said), error.what());
            }
        }
    }

    // The table and the hand-written examples name the same keys, and settingsToJson
    // writes exactly those.
    void theTableHasEveryDocumentedKey()
    {
        std::set<std::string> table, examples, written;
        for (const SettingKey& k : settingKeys()) {
            QVERIFY2(table.insert(k.key).second, k.key);   // no key twice
            QVERIFY2(std::string(k.help).size() > 3, k.key);
        }
        for (const auto& [key, value] : test::settingExamples().items()) examples.insert(key);
        const json defaults = settingsToJson(TrainSettings{});   // items() does not keep a temporary alive
        for (const auto& [key, value] : defaults.items()) written.insert(key);
        for (const auto& key : table) QVERIFY2(examples.count(key), ("no example for the key " + key).c_str());
        for (const auto& key : examples) QVERIFY2(table.count(key), ("the table lacks the key " + key).c_str());
        QVERIFY(written == table);
    }

    // Each key on its own changes the settings and is written back as given: a row whose
    // reading does nothing, or whose writing reads another field, fails here.
    void everyKeyIsReadAndWrittenBack_data()
    {
        QTest::addColumn<QString>("key");
        for (const SettingKey& k : settingKeys()) QTest::addRow("%s", k.key) << QString::fromLatin1(k.key);
    }
    void everyKeyIsReadAndWrittenBack()
    {
        QFETCH(QString, key);
        const std::string name = key.toStdString();
        const json& example = test::settingExamples().at(name);
        const json defaults = settingsToJson(defaultSettings());
        QVERIFY(example != defaults.at(name));
        const TrainSettings s = settingsFromJson(json{{name, example}}, "test");
        QVERIFY2(!(s == settingsFromJson(json::object(), "test")), "the key changed nothing");
        const json back = settingsToJson(s);
        QVERIFY2(back.at(name) == example, back.at(name).dump().c_str());
        // Every other key keeps its default, except what a preset or a loss-scale mode sets.
        for (const auto& [other, value] : back.items())
            if (other != name && name != "recipe" && name != "loss_scale")
                QVERIFY2(value == defaults.at(other), (name + " changed " + other).c_str());
    }

    // A row's role says what its key changes, which the report's comparison trusts: each
    // loss-scaling key's example changes the recipe's loss scaling and nothing else; each
    // key that observes changes none of the model, recipe, optimizer, data, batch, seed and
    // length of the run; each other key changes more than the loss scaling.
    void rowsSayWhatTheirKeysChange()
    {
        const TrainSettings defaults = settingsFromJson(json::object(), "test");
        const auto trainsLike = [&](const TrainSettings& s) {
            return s.model == defaults.model && s.recipe == defaults.recipe && s.optimizer == defaults.optimizer &&
                   s.dataset == defaults.dataset && s.batch == defaults.batch && s.seed == defaults.seed &&
                   s.epochs == defaults.epochs && s.maxSteps == defaults.maxSteps;
        };
        int scalesLoss = 0, observes = 0;
        for (const SettingKey& k : settingKeys()) {
            const TrainSettings s = settingsFromJson(json{{k.key, test::settingExamples().at(k.key)}}, "test");
            if (k.role == SettingRole::scalesLoss) {
                ++scalesLoss;
                QVERIFY2(!(s.recipe.lossScaling == defaults.recipe.lossScaling), k.key);
                TrainSettings rest = s;
                rest.recipe.lossScaling = defaults.recipe.lossScaling;
                QVERIFY2(rest == defaults, k.key);
            } else if (k.role == SettingRole::observes) {
                ++observes;
                QVERIFY2(trainsLike(s), k.key);
            } else {   // no key that only scales the loss is left among those that train
                TrainSettings rest = s;
                rest.recipe.lossScaling = defaults.recipe.lossScaling;
                QVERIFY2(!(rest == defaults), k.key);
            }
        }
        QCOMPARE(scalesLoss, 7);   // loss_scale, init_scale, growth_factor, backoff_factor, growth_interval, min_scale, max_scale
        QCOMPARE(observes, 6);     // data_dir, threads, histogram_every, eval_every, save_weights, write_batches
    }

    // A config file through the one reader, with overrides on top; its errors name the file.
    void settingsFromFileReadsAConfigWithOverrides()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path file = dir.filePath(QStringLiteral("c.json")).toStdString();
        std::ofstream(file) << R"({"recipe": "amp-fp16", "batch": 16})";
        const TrainSettings s = settingsFromFile(file, json{{"batch", 8}});
        QCOMPARE(s.recipe.compute, Format::fp16);
        QCOMPARE(s.batch, 8);
        std::ofstream(file) << R"({"batch": 0})";
        try {
            (void)settingsFromFile(file);
            QFAIL("a bad batch was accepted");
        } catch (const InputError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(QString::fromStdString("config " + file.string() + ": 'batch'")),
                     e.what());
        }
        std::ofstream(file) << "[1, 2]";
        QVERIFY_THROWS_EXCEPTION(InputError, (void)settingsFromFile(file));
    }
};

QTEST_APPLESS_MAIN(TestSettings)
#include "tst_settings.moc"
