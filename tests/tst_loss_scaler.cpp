// Tests the LossScaler against GradScaler's documented rules, by scripted sequences of
// clean and overflowing steps whose expected scales are worked out by hand in each row.
// links: plab_amp
#include "amp/loss_scaler.h"
#include "error.h"

#include <QTest>

#include <cmath>
#include <limits>

using namespace plab;

Q_DECLARE_METATYPE(plab::LossScaling)

namespace {

LossScaling dynamicScaling(double init, double growth, double backoff, int interval)
{
    LossScaling l;
    l.mode = LossScaleMode::dynamic;
    l.initScale = init;
    l.growthFactor = growth;
    l.backoffFactor = backoff;
    l.growthInterval = interval;
    return l;
}

LossScaling withInterval(LossScaling l, int interval)
{
    l.growthInterval = interval;
    return l;
}

}  // namespace

class TestLossScaler : public QObject {
    Q_OBJECT

private slots:
    // A script is one character per step: '.' all gradients finite, 'x' some inf/NaN.
    // After each step the row gives the scale and whether that step was skipped ('s').
    void scriptedSequence_data()
    {
        QTest::addColumn<LossScaling>("config");
        QTest::addColumn<QString>("script");
        QTest::addColumn<QList<double>>("scalesAfter");
        QTest::addColumn<QString>("skips");
        QTest::addColumn<QList<int>>("cleanStepsAfter");

        const auto interval3 = dynamicScaling(1024, 2, 0.5, 3);
        QTest::addRow("interval 3: three clean steps grow once")
            << interval3 << "..." << QList<double>{1024, 1024, 2048} << "---" << QList<int>{1, 2, 0};
        QTest::addRow("interval 3: overflow backs off and resets the count")
            << interval3 << ".x..." << QList<double>{1024, 512, 512, 512, 1024} << "-s---"
            << QList<int>{1, 0, 1, 2, 0};
        QTest::addRow("interval 3: six clean steps grow twice")
            << interval3 << "......" << QList<double>{1024, 1024, 2048, 2048, 2048, 4096} << "------"
            << QList<int>{1, 2, 0, 1, 2, 0};
        QTest::addRow("interval 1: grows every clean step")
            << dynamicScaling(8, 2, 0.5, 1) << "..x." << QList<double>{16, 32, 16, 32} << "--s-"
            << QList<int>{0, 0, 0, 0};
        // 2^15 halves 15 times to 1 and stays there.
        QTest::addRow("tensorflow: overflow every step stops at the floor of 1")
            << *LossScaling::preset("tensorflow") << "xxxxxxxxxxxxxxxxx"
            << QList<double>{16384, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1, 1, 1}
            << "sssssssssssssssss" << QList<int>(17, 0);
        QTest::addRow("pytorch: no floor, halves below 1")
            << LossScaling{dynamicScaling(2, 2, 0.5, 2000)} << "xxx" << QList<double>{1, 0.5, 0.25} << "sss"
            << QList<int>{0, 0, 0};
        auto apexNearCap = withInterval(*LossScaling::preset("apex"), 1);
        apexNearCap.initScale = 8388608;   // 2^23
        QTest::addRow("apex: growth stops at the cap of 2^24")
            << apexNearCap << "..." << QList<double>{16777216, 16777216, 16777216} << "---" << QList<int>{0, 0, 0};
        // 2^127 * 2 = 2^128 is inf in fp32: GradScaler keeps the old scale.
        QTest::addRow("growth skipped when the grown scale overflows fp32")
            << dynamicScaling(std::ldexp(1.0, 127), 2, 0.5, 1) << ".."
            << QList<double>{std::ldexp(1.0, 127), std::ldexp(1.0, 127)} << "--" << QList<int>{0, 0};
        // 2^127 * 1.5 = 1.5 * 2^127 < FLT_MAX (about 1.99 * 2^127) is finite and taken.
        QTest::addRow("growth taken when the grown scale is finite in fp32")
            << dynamicScaling(std::ldexp(1.0, 127), 1.5, 0.5, 1) << "."
            << QList<double>{1.5 * std::ldexp(1.0, 127)} << "-" << QList<int>{0};
        // PyTorch stores every new scale in an fp32 tensor: 3 * 1.1 is kept as float.
        QTest::addRow("each new scale is rounded to fp32")
            << dynamicScaling(3, 1.1, 0.5, 1) << ".."
            << QList<double>{double(float(3 * 1.1)), double(float(double(float(3 * 1.1)) * 1.1))} << "--"
            << QList<int>{0, 0};
        auto floorAndCap = dynamicScaling(16, 4, 0.25, 1);
        floorAndCap.minScale = 2;
        floorAndCap.maxScale = 128;
        QTest::addRow("custom floor 2 and cap 128, factors 4 and 1/4")
            << floorAndCap << "..xxxx" << QList<double>{64, 128, 32, 8, 2, 2} << "--ssss" << QList<int>(6, 0);
        QTest::addRow("static: overflow skips the step, scale unchanged")
            << LossScaling::fixedScale(1024) << ".x.x" << QList<double>{1024, 1024, 1024, 1024} << "-s-s"
            << QList<int>{0, 0, 0, 0};
        QTest::addRow("off: scale 1, nothing is ever skipped")
            << LossScaling::off() << "xx." << QList<double>{1, 1, 1} << "---" << QList<int>{0, 0, 0};
    }

    void scriptedSequence()
    {
        QFETCH(LossScaling, config);
        QFETCH(QString, script);
        QFETCH(QList<double>, scalesAfter);
        QFETCH(QString, skips);
        QFETCH(QList<int>, cleanStepsAfter);
        QCOMPARE(scalesAfter.size(), script.size());

        LossScaler scaler(config);
        for (int i = 0; i < script.size(); ++i) {
            const bool overflow = script[i] == QLatin1Char('x');
            const bool skipped = scaler.update(overflow);
            QVERIFY2(skipped == (skips[i] == QLatin1Char('s')), qPrintable(QString("step %1").arg(i + 1)));
            QVERIFY2(scaler.scale() == scalesAfter[i],
                     qPrintable(QString("step %1: scale %2, expected %3")
                                    .arg(i + 1)
                                    .arg(scaler.scale(), 0, 'g', 17)
                                    .arg(scalesAfter[i], 0, 'g', 17)));
            QCOMPARE(scaler.cleanSteps(), cleanStepsAfter[i]);
        }
    }

    void inverseScale_data()
    {
        QTest::addColumn<double>("scale");
        QTest::addColumn<float>("expected");
        QTest::addRow("65536 -> 2^-16 exactly") << 65536.0 << std::ldexp(1.0f, -16);
        QTest::addRow("2^24 -> 2^-24 exactly") << 16777216.0 << std::ldexp(1.0f, -24);
        QTest::addRow("1 -> 1") << 1.0 << 1.0f;
        // 1/1000 in double, rounded once to fp32, is the float literal 0.001f.
        QTest::addRow("1000 -> 0.001f") << 1000.0 << 0.001f;
    }

    void inverseScale()
    {
        QFETCH(double, scale);
        QFETCH(float, expected);
        const LossScaler scaler(LossScaling::fixedScale(scale));
        QCOMPARE(scaler.scale(), scale);
        QVERIFY(scaler.inverseScale() == expected);
    }

    void offModeScaleIsOne()
    {
        const LossScaler scaler(LossScaling::off());
        QCOMPARE(scaler.scale(), 1.0);
        QCOMPARE(scaler.inverseScale(), 1.0f);
    }

    void initialScaleIsHeldInFp32()
    {
        const LossScaler scaler(dynamicScaling(0.1, 2, 0.5, 10));
        QCOMPARE(scaler.scale(), double(0.1f));
    }

    void impossibleSettingsThrowInputError_data()
    {
        QTest::addColumn<LossScaling>("config");
        QTest::addRow("growth factor 1") << dynamicScaling(1024, 1, 0.5, 10);
        QTest::addRow("backoff factor 1") << dynamicScaling(1024, 2, 1, 10);
        QTest::addRow("interval 0") << dynamicScaling(1024, 2, 0.5, 0);
        QTest::addRow("static scale 0") << LossScaling::fixedScale(0);
        QTest::addRow("static scale NaN") << LossScaling::fixedScale(std::numeric_limits<double>::quiet_NaN());
    }

    void impossibleSettingsThrowInputError()
    {
        QFETCH(LossScaling, config);
        QVERIFY_THROWS_EXCEPTION(InputError, LossScaler{config});
        LossScaler scaler;
        QVERIFY_THROWS_EXCEPTION(InputError, scaler.reconfigure(config));
    }

    void reconfigureKeepsDynamicScale()
    {
        LossScaler scaler(dynamicScaling(1024, 2, 0.5, 3));
        scaler.update(true);    // 512
        scaler.update(false);   // 512, one clean step
        QCOMPARE(scaler.scale(), 512.0);

        // Still dynamic: the scale found so far and the clean-step count carry over.
        scaler.reconfigure(dynamicScaling(65536, 2, 0.5, 2));
        QCOMPARE(scaler.scale(), 512.0);
        QCOMPARE(scaler.cleanSteps(), 1);
        scaler.update(false);   // second clean step reaches the new interval of 2
        QCOMPARE(scaler.scale(), 1024.0);

        // New bounds apply at once.
        auto capped = dynamicScaling(128, 2, 0.5, 2);
        capped.maxScale = 256;
        scaler.reconfigure(capped);
        QCOMPARE(scaler.scale(), 256.0);

        // Leaving dynamic mode starts from the new setting.
        scaler.reconfigure(LossScaling::fixedScale(8));
        QCOMPARE(scaler.scale(), 8.0);
        scaler.reconfigure(LossScaling::off());
        QCOMPARE(scaler.scale(), 1.0);
        scaler.reconfigure(dynamicScaling(4096, 2, 0.5, 2000));
        QCOMPARE(scaler.scale(), 4096.0);
        QCOMPARE(scaler.cleanSteps(), 0);
    }
};

QTEST_GUILESS_MAIN(TestLossScaler)
#include "tst_loss_scaler.moc"
