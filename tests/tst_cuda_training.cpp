// Training on the CUDA backend against the CPU reference (issue 5): the same short runs
// on both backends, per recipe, must give loss curves within tolerance, the same skipped
// steps, and device memory telemetry. Without a usable device the whole suite is skipped
// with the reason, and CTest reports it as skipped.
// links: plab_engine plab_test_support
#include "backend/backend.h"
#include "data/dataset.h"
#include "test_support.h"
#include "train/trainer.h"

#include <QtTest>

#include <cmath>
#include <string>
#include <vector>

using namespace plab;
using nlohmann::json;

namespace {

struct Curve {
    RunResult result;
    std::vector<StepEvent> steps;
    std::vector<MemoryEvent> memory;
};

Curve run(const std::string& recipe, const std::string& backend, const DataSplit& data)
{
    const TrainSettings s = settingsFromJson(json{{"recipe", recipe}, {"widths", {8, 16}}, {"batch", 32},
                                                  {"epochs", 1}, {"max_steps", 40}, {"histogram_every", 10},
                                                  {"threads", 2}, {"backend", backend}},
                                             "test");
    Curve c;
    Trainer trainer(s, data, [&](const TrainerEvent& e) {
        if (const auto* step = std::get_if<StepEvent>(&e)) c.steps.push_back(*step);
        if (const auto* memory = std::get_if<MemoryEvent>(&e)) c.memory.push_back(*memory);
    });
    c.result = trainer.run();
    return c;
}

}  // namespace

class TestCudaTraining : public QObject {
    Q_OBJECT
    testing::TempDir dir_;
    DataSplit data_;

private slots:
    void initTestCase()
    {
        const BackendInfo cuda = probeCudaBackend();
        if (!cuda.available)
            QSKIP(qPrintable(QStringLiteral("skipped: no CUDA device (%1)").arg(QString::fromStdString(cuda.reason))));
        testing::writeSyntheticDataset(dir_.path() / "mnist", 1280, 200, 5);
        data_ = loadDataset("mnist", dir_.path());
    }

    void lossCurveAgreesWithCpu_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<double>("tolerance");   // |loss_cuda - loss_cpu| / loss_cpu per step
        // Summation order differs (cuBLAS vs OpenBLAS, device reductions), and 40 Adam
        // steps amplify it; the tolerances are DESIGN.md's per-tensor ones, widened for that.
        QTest::addRow("fp32") << "fp32" << 1e-3;
        QTest::addRow("tf32") << "tf32" << 2e-2;
        QTest::addRow("amp-fp16") << "amp-fp16" << 2e-2;
        QTest::addRow("amp-bf16") << "amp-bf16" << 8e-2;
        QTest::addRow("pure-fp16") << "pure-fp16" << 5e-2;
    }

    void lossCurveAgreesWithCpu()
    {
        QFETCH(QString, recipe);
        QFETCH(double, tolerance);
        const Curve cpu = run(recipe.toStdString(), "cpu", data_);
        const Curve gpu = run(recipe.toStdString(), "cuda", data_);
        QVERIFY2(gpu.result.status == cpu.result.status, gpu.result.message.c_str());
        QCOMPARE(gpu.steps.size(), cpu.steps.size());
        int skippedDifferently = 0;
        for (std::size_t i = 0; i < cpu.steps.size(); ++i) {
            const StepEvent& a = cpu.steps[i];
            const StepEvent& b = gpu.steps[i];
            if (a.skipped != b.skipped) ++skippedDifferently;
            QCOMPARE(std::isfinite(b.loss), std::isfinite(a.loss));
            if (!std::isfinite(a.loss)) continue;
            const double rel = std::abs(double(b.loss) - double(a.loss)) / std::max(1e-6, std::abs(double(a.loss)));
            QVERIFY2(rel <= tolerance, qPrintable(QStringLiteral("step %1: cpu %2, cuda %3, relative %4")
                                                      .arg(a.step).arg(a.loss).arg(b.loss).arg(rel)));
        }
        // A loss-scale overflow right at the edge may fall either way once; more is a bug.
        QVERIFY2(skippedDifferently <= 1, qPrintable(QString::number(skippedDifferently)));
        QVERIFY(std::abs(gpu.result.testAccuracy - cpu.result.testAccuracy) <= 0.05);
    }

    void deviceMemoryIsReported()
    {
        const Curve gpu = run("amp-fp16", "cuda", data_);
        QVERIFY(!gpu.memory.empty());
        for (const MemoryEvent& m : gpu.memory) {
            QVERIFY(m.device.has_value());
            QVERIFY(m.device->total > 0);
            QVERIFY(m.device->used <= m.device->total);
            // The engine's own accounting is part of what the device holds.
            QVERIFY(m.device->used >= static_cast<std::uint64_t>(m.memory.totalLive));
        }
        const Curve cpu = run("amp-fp16", "cpu", data_);
        for (const MemoryEvent& m : cpu.memory) QVERIFY(!m.device.has_value());
    }
};

QTEST_GUILESS_MAIN(TestCudaTraining)
#include "tst_cuda_training.moc"
