// Tests of training settings: defaults, the JSON config form, preset-then-override order,
// and one clear error for each bad key or value.
// links: plab_train

#include "error.h"
#include "train/settings.h"

#include <QtTest>

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
        for (const auto& name : PrecisionRecipe::presetNames())
            QTest::addRow("%s", name.c_str()) << QString::fromStdString(name);
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
        QTest::addRow("unknown recipe") << R"({"recipe": "fp8"})" << "'recipe' must be one of";
        QTest::addRow("unknown compute") << R"({"compute": "fp64"})" << "'compute' must be fp32";
        QTest::addRow("bad loss scale") << R"({"loss_scale": "static:0"})" << "'loss_scale'";
        QTest::addRow("bad switch") << R"({"master_weights": "maybe"})" << "'master_weights' must be on or off";
        QTest::addRow("unknown model") << R"({"model": "resnet"})" << "model must be mlp";
        QTest::addRow("backoff above one") << R"({"loss_scale": "dynamic", "backoff_factor": 2})" << "backoff";
        QTest::addRow("not an object") << R"([1, 2])" << "expected a JSON object";
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
};

QTEST_APPLESS_MAIN(TestSettings)
#include "tst_settings.moc"
