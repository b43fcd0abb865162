// Tests the models: parameter counts and shapes, seeded determinism, learning with plain SGD, recipe switches (rounding, promotion) and memory accounting.
// links: plab_nn plab_backend_cpu plab_test_support
#include "amp/recipe.h"
#include "backend/backend.h"
#include "nn/model.h"
#include "nn/model_kinds.h"
#include "nn/transformer.h"
#include "numerics/format.h"
#include "test_support.h"

#include <QTest>

#include <algorithm>
#include <atomic>
#include <cmath>

using namespace plab;

namespace {

std::int64_t parameterCount(Model& model)
{
    std::int64_t n = 0;
    for (Parameter* p : model.parameters()) n += p->value.size();
    return n;
}

using testing::syntheticBatch;

PrecisionRecipe preset(const char* name) { return *PrecisionRecipe::fromPreset(name); }

// Plain SGD on the stored weights (the test's own optimizer), refreshing the compute copy.
void sgdStep(Model& model, const PrecisionRecipe& recipe, float lr, float lossScale)
{
    for (Parameter* p : model.parameters()) {
        Tensor& w = p->stored();
        for (std::int64_t i = 0; i < w.size(); ++i) w[i] -= lr * (p->grad[i] / lossScale);
        if (p->master.size()) {
            for (std::int64_t i = 0; i < w.size(); ++i) p->value[i] = roundTo(recipe.compute, p->master[i]);
        } else {
            for (std::int64_t i = 0; i < w.size(); ++i) p->value[i] = roundTo(p->value.storage(), p->value[i]);
        }
    }
}

}  // namespace

class TestModel : public QObject {
    Q_OBJECT
    std::unique_ptr<ComputeBackend> cpu_ = createCpuBackend(2);   // where applyRecipe places the weights

private slots:
    void parameterCounts_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QList<int>>("widths");
        QTest::addColumn<qint64>("expected");
        QTest::addRow("mlp") << "mlp" << QList<int>{} << qint64(784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10);
        QTest::addRow("small-cnn") << "small-cnn" << QList<int>{} << qint64(50186);
        QTest::addRow("seed-cnn") << "seed-cnn" << QList<int>{}
                                  << qint64(420 * 9 + 420 + 1000 * 420 * 9 + 1000 + 1000 * 49 * 10 + 10);
        QTest::addRow("small-cnn widths 8, 16") << "small-cnn" << QList<int>{8, 16}
                                                << qint64(8 * 9 + 8 + 16 * 8 * 9 + 16 + 16 * 49 * 10 + 10);
        QTest::addRow("mlp widths 100, 50") << "mlp" << QList<int>{100, 50}
                                            << qint64(784 * 100 + 100 + 100 * 50 + 50 + 50 * 10 + 10);
        // 16 linear layers of 128: fc1 784->128, fc2 ... fc15 128->128, fc16 128->10.
        QTest::addRow("deep-mlp") << "deep-mlp" << QList<int>{}
                                  << qint64(784 * 128 + 128 + 14 * (128 * 128 + 128) + 128 * 10 + 10);
        // fc1 784->256, fc2 256->32, fc3 32->256, fc4 256->784.
        QTest::addRow("autoencoder") << "autoencoder" << QList<int>{}
                                     << qint64(784 * 256 + 256 + 256 * 32 + 32 + 32 * 256 + 256 + 256 * 784 + 784);
        QTest::addRow("deep-mlp widths 32, 3") << "deep-mlp" << QList<int>{32, 3}
                                               << qint64(784 * 32 + 32 + 32 * 32 + 32 + 32 * 10 + 10);
    }

    void parameterCounts()
    {
        QFETCH(QString, kind);
        QFETCH(QList<int>, widths);
        QFETCH(qint64, expected);
        ModelSpec spec{kind.toStdString(), std::vector<int>(widths.begin(), widths.end())};
        auto model = Model::create(spec, 1);
        QCOMPARE(parameterCount(*model), expected);
        QCOMPARE(model->spec(), spec);
        QCOMPARE(qint64(535818), qint64(784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10));
    }

    // The model kinds' table against the models it describes: each row's parameter count
    // is a built model's, at its defaults and at other widths; the widths rules are the ones
    // Model::create enforces.
    void kindsTable()
    {
        QCOMPARE(QString::fromStdString(modelKindNames()), QString("mlp, deep-mlp, small-cnn, seed-cnn, vit or autoencoder"));
        for (const ModelKind& k : modelKinds()) {
            const std::string name(k.name);
            QVERIFY(findModelKind(name) == &k);
            QVERIFY(!k.title.empty());
            const std::vector<int> other = k.widths.size() == 2 ? std::vector<int>{8, 3} : std::vector<int>{16, 1, 2, 14};
            for (const std::vector<int>& widths : {std::vector<int>{}, other}) {
                const auto model = Model::create(ModelSpec{name, widths}, 1);
                const std::vector<int> w = widths.empty() ? defaultWidths(k) : widths;
                QCOMPARE(qint64(k.parameterCount(w)), parameterCount(*model));
                // The row's names are those of the stack its builder makes, every one a tap;
                // it says it has residual branches where the stack has their weights.
                QCOMPARE(k.layerNames(w), model->layerNames());
                const std::vector<std::string> taps = tapLayerNames(ModelSpec{name, widths});
                for (const std::string& layer : model->layerNames())
                    QVERIFY2(std::find(taps.begin(), taps.end(), layer) != taps.end(), layer.c_str());
                const auto params = model->parameters();
                QCOMPARE(k.residualBranches, std::any_of(params.begin(), params.end(), [](const Parameter* p) {
                             return isResidualBranchWeight(*p);
                         }));
            }
            for (std::size_t i = 0; i < k.widths.size(); ++i) {
                std::vector<int> w = defaultWidths(k);
                w[i] = k.widths[i].max + 1;
                QVERIFY(!widthsProblem(k, w).empty());
                QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Model::create(ModelSpec{name, w}, 1));
                w[i] = k.widths[i].min;
                QVERIFY(widthsProblem(k, w).empty());
            }
        }
        QVERIFY(findModelKind("resnet") == nullptr);
        QCOMPARE(QString::fromStdString(widthsProblem(*findModelKind("small-cnn"), {4})),
                 QString("model small-cnn takes 2 widths, got 1 (conv1 channels, conv2 channels)"));
    }

    void shapesAndNames()
    {
        auto cnn = Model::create(ModelSpec{"small-cnn", {}}, 1);
        QCOMPARE(cnn->layerNames(), (std::vector<std::string>{"conv1", "conv2", "fc1"}));
        const auto params = cnn->parameters();
        QCOMPARE(params.size(), std::size_t{6});
        QCOMPARE(params[0]->value.shape(), (Shape{32, 1, 3, 3}));
        QCOMPARE(params[1]->value.shape(), (Shape{32}));
        QCOMPARE(params[2]->value.shape(), (Shape{64, 32, 3, 3}));
        QCOMPARE(params[4]->value.shape(), (Shape{10, 3136}));
        QCOMPARE(params[4]->layer, std::string("fc1"));
        QCOMPARE(params[5]->name, std::string("bias"));
        auto mlp = Model::create(ModelSpec{"mlp", {}}, 1);
        QCOMPARE(mlp->layerNames(), (std::vector<std::string>{"fc1", "fc2", "fc3"}));
        // What per-layer precision may name, known without building a model: a built one's names.
        for (const char* kind : {"mlp", "small-cnn", "seed-cnn", "deep-mlp"})
            QCOMPARE(parameterLayerNames(ModelSpec{kind, {4, 8}}), Model::create(ModelSpec{kind, {4, 8}}, 1)->layerNames());
        auto deep = Model::create(ModelSpec{"deep-mlp", {}}, 1);
        QCOMPARE(deep->layerNames().size(), std::size_t{16});
        QCOMPARE(deep->layerNames().back(), std::string("fc16"));
        QCOMPARE(parameterLayerNames("deep-mlp"), deep->layerNames());
        QCOMPARE(parameterLayerNames(ModelSpec{"deep-mlp", {8, 5}}),
                 (std::vector<std::string>{"fc1", "fc2", "fc3", "fc4", "fc5"}));
        QVERIFY(parameterLayerNames(ModelSpec{"deep-mlp", {8, 100}}).empty());
        QVERIFY(parameterLayerNames("resnet").empty());
        QCOMPARE(parameterLayerNames(ModelSpec{"vit", {16, 2, 2, 7}}),
                 Model::create(ModelSpec{"vit", {16, 2, 2, 7}}, 1)->layerNames());
        QCOMPARE(parameterLayerNames("vit"),
                 (std::vector<std::string>{"embed", "pos", "block1.ln1", "block1.qkv", "block1.proj", "block1.ln2",
                                           "block1.fc1", "block1.fc2", "block2.ln1", "block2.qkv", "block2.proj",
                                           "block2.ln2", "block2.fc1", "block2.fc2", "norm", "head"}));
        QVERIFY(parameterLayerNames(ModelSpec{"vit", {16, 2, 3, 7}}).empty());
        // PyTorch's default init bound 1/sqrt(fan_in).
        const double bound = 1.0 / std::sqrt(9.0);
        for (std::int64_t i = 0; i < params[0]->value.size(); ++i) QVERIFY(std::fabs(params[0]->value[i]) <= bound);
    }

    void invalidSpecs_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QList<int>>("widths");
        QTest::addRow("unknown kind") << "resnet" << QList<int>{};
        QTest::addRow("three widths") << "small-cnn" << QList<int>{1, 2, 3};
        QTest::addRow("zero width") << "mlp" << QList<int>{0, 5};
        QTest::addRow("negative width") << "seed-cnn" << QList<int>{-4, 5};
        QTest::addRow("deep-mlp of one layer") << "deep-mlp" << QList<int>{16, 1};
        QTest::addRow("deep-mlp of 65 layers") << "deep-mlp" << QList<int>{16, 65};
    }

    void invalidSpecs()
    {
        QFETCH(QString, kind);
        QFETCH(QList<int>, widths);
        ModelSpec spec{kind.toStdString(), std::vector<int>(widths.begin(), widths.end())};
        try {
            Model::create(spec, 1);
            QFAIL("no exception");
        } catch (const std::invalid_argument& e) {
            const std::string message = e.what();
            QVERIFY(!message.empty() && message.back() == '.');
        }
    }

    void sameSeedSameWeightsAndLoss()
    {
        auto backend = createCpuBackend(2);
        const auto recipe = preset("amp-fp16");
        Tensor images;
        std::vector<std::uint8_t> labels;
        syntheticBatch(12, images, labels);
        float losses[2];
        std::vector<float> grads[2];
        for (int run = 0; run < 2; ++run) {
            auto model = Model::create(ModelSpec{"small-cnn", {4, 8}}, 77);
            model->applyRecipe(recipe, nullptr, *cpu_);
            TelemetryCollector telemetry;
            telemetry.beginStep(false);
            StepContext ctx{&recipe, backend.get(), &telemetry, nullptr, true};
            losses[run] = model->trainStep(images, labels, 1024.0f, ctx).loss;
            for (Parameter* p : model->parameters()) grads[run].insert(grads[run].end(), p->grad.data(), p->grad.data() + p->grad.size());
        }
        QCOMPARE(bitsOf(losses[0]), bitsOf(losses[1]));
        QVERIFY(grads[0] == grads[1]);
        auto a = Model::create(ModelSpec{"small-cnn", {4, 8}}, 77), b = Model::create(ModelSpec{"small-cnn", {4, 8}}, 78);
        QVERIFY(std::vector<float>(a->parameters()[0]->value.data(), a->parameters()[0]->value.data() + 36) !=
                std::vector<float>(b->parameters()[0]->value.data(), b->parameters()[0]->value.data() + 36));
    }

    void sgdReducesTheLoss_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<float>("lossScale");
        QTest::addColumn<float>("lr");
        QTest::addRow("small-cnn fp32") << "small-cnn" << "fp32" << 1.0f << 0.1f;
        QTest::addRow("small-cnn amp-fp16, scale 1024") << "small-cnn" << "amp-fp16" << 1024.0f << 0.1f;
        QTest::addRow("small-cnn amp-bf16") << "small-cnn" << "amp-bf16" << 1.0f << 0.1f;
        QTest::addRow("small-cnn tf32") << "small-cnn" << "tf32" << 1.0f << 0.1f;
        QTest::addRow("small-cnn pure-bf16") << "small-cnn" << "pure-bf16" << 1.0f << 0.1f;
        QTest::addRow("mlp fp32") << "mlp" << "fp32" << 1.0f << 0.5f;
        QTest::addRow("mlp pure-fp16") << "mlp" << "pure-fp16" << 1.0f << 0.5f;
    }

    void sgdReducesTheLoss()
    {
        QFETCH(QString, kind);
        QFETCH(QString, recipe);
        QFETCH(float, lossScale);
        QFETCH(float, lr);
        auto backend = createCpuBackend(2);
        const auto r = preset(recipe.toLatin1().constData());
        auto model = Model::create(ModelSpec{kind.toStdString(), kind == "mlp" ? std::vector<int>{64, 32} : std::vector<int>{4, 8}}, 5);
        model->applyRecipe(r, nullptr, *cpu_);
        Tensor images;
        std::vector<std::uint8_t> labels;
        syntheticBatch(20, images, labels);
        StepContext ctx{&r, backend.get(), nullptr, nullptr, true};
        const float first = model->trainStep(images, labels, lossScale, ctx).loss;
        for (int step = 0; step < 15; ++step) {
            sgdStep(*model, r, lr, lossScale);
            model->trainStep(images, labels, lossScale, ctx);
        }
        const StepOutput last = model->evaluate(images, labels, ctx);
        QVERIFY2(last.loss < 0.7f * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last.loss)));
    }

    void evaluateMatchesTheTrainingForward()
    {
        auto backend = createCpuBackend(2);
        const auto r = preset("amp-bf16");
        auto model = Model::create(ModelSpec{"small-cnn", {4, 8}}, 5);
        model->applyRecipe(r, nullptr, *cpu_);
        Tensor images;
        std::vector<std::uint8_t> labels;
        syntheticBatch(10, images, labels);
        StepContext ctx{&r, backend.get(), nullptr, nullptr, true};
        const StepOutput train = model->trainStep(images, labels, 1.0f, ctx);
        const StepOutput eval = model->evaluate(images, labels, ctx);
        QCOMPARE(bitsOf(eval.loss), bitsOf(train.loss));
        QCOMPARE(eval.correct, train.correct);
    }

    // The autoencoder's loss is the mean squared error over batch x 784 outputs, and the
    // gradient it hands back is 2 (y - x) / (N * 784) times the loss scale: both against
    // double-precision sums of its own outputs (model->outputs, the same forward pass), through
    // the last layer's bias gradient (the sum over the batch of the outputs' gradients).
    void autoencoderLossIsThePerPixelMeanSquaredError()
    {
        auto backend = createCpuBackend(2);
        const auto r = preset("fp32");
        auto model = Model::create(ModelSpec{"autoencoder", {16, 4}}, 3);
        model->applyRecipe(r, nullptr, *cpu_);
        QCOMPARE(modelTask("autoencoder"), ModelTask::reconstruct);
        QCOMPARE(modelTask("mlp"), ModelTask::classify);
        Tensor images;
        std::vector<std::uint8_t> labels;
        constexpr int N = 6, P = 784;
        syntheticBatch(N, images, labels);
        StepContext ctx{&r, backend.get(), nullptr, nullptr, true};
        const std::vector<float> y = model->outputs(images, ctx);
        QCOMPARE(y.size(), std::size_t(N * P));
        double sum = 0.0;
        std::vector<double> biasGrad(P, 0.0);
        constexpr double S = 8.0;
        for (int n = 0; n < N; ++n)
            for (int i = 0; i < P; ++i) {
                const double d = double(y[std::size_t(n * P + i)]) - double(images.data()[n * P + i]);
                sum += d * d;
                biasGrad[std::size_t(i)] += 2.0 * d / double(N * P) * S;
            }
        const StepOutput out = model->trainStep(images, labels, float(S), ctx);
        QVERIFY(std::abs(double(out.loss) - sum / double(N * P)) <= 1e-6 * sum / double(N * P));
        QCOMPARE(out.correct, std::int64_t(0));
        const Parameter* bias = model->parameters().back();
        QCOMPARE(bias->layer, std::string("fc4"));
        QCOMPARE(bias->grad.size(), std::int64_t(P));
        double largest = 0.0;
        for (double g : biasGrad) largest = std::max(largest, std::abs(g));
        for (int i = 0; i < P; ++i)
            QVERIFY2(std::abs(double(bias->grad.data()[i]) - biasGrad[std::size_t(i)]) <= 1e-5 * largest,
                     qPrintable(QString("pixel %1: %2 against %3").arg(i).arg(bias->grad.data()[i]).arg(biasGrad[std::size_t(i)])));
        const StepOutput eval = model->evaluate(images, labels, ctx);
        QCOMPARE(bitsOf(eval.loss), bitsOf(out.loss));
    }

    // Issue 66, finding 6: a stop asked for ends a step between two layers (a long step had
    // run to its end first), before anything is updated; unasked, the step runs whole.
    void stopEndsAStepBetweenLayers()
    {
        auto backend = createCpuBackend(2);
        const auto r = preset("fp32");
        auto model = Model::create(ModelSpec{"small-cnn", {4, 8}}, 5);
        model->applyRecipe(r, nullptr, *cpu_);
        Tensor images;
        std::vector<std::uint8_t> labels;
        syntheticBatch(10, images, labels);
        std::atomic<bool> stop{true};
        StepContext ctx{&r, backend.get(), nullptr, nullptr, true};
        ctx.stop = &stop;
        const Tensor before = model->parameters()[0]->value;
        QVERIFY_THROWS_EXCEPTION(StepStopped, model->trainStep(images, labels, 1.0f, ctx));
        QVERIFY_THROWS_EXCEPTION(StepStopped, model->evaluate(images, labels, ctx));
        for (std::int64_t i = 0; i < before.size(); ++i) QCOMPARE(model->parameters()[0]->value[i], before[i]);
        stop = false;
        QVERIFY(std::isfinite(model->trainStep(images, labels, 1.0f, ctx).loss));
    }

    // The forward multiply-adds a lesson's cost is estimated by, against the layer shapes
    // worked out by hand: 3 x 3 convolutions at 28 x 28 and 14 x 14 positions, linear layers'
    // weights, a vit's per-patch products and its scores.
    void multiplyAddsOfEachKind()
    {
        const auto of = [](const char* kind, std::vector<int> w) { return findModelKind(kind)->multiplyAdds(w); };
        QCOMPARE(of("mlp", {512, 256}), 784.0 * 512 + 512.0 * 256 + 256.0 * 10);
        QCOMPARE(of("deep-mlp", {128, 16}), 784.0 * 128 + 14.0 * 128 * 128 + 128.0 * 10);
        // small-cnn 32,64: conv1 225,792 + conv2 3,612,672 + fc 31,360
        QCOMPARE(of("small-cnn", {32, 64}), 3869824.0);
        // vit 64,2,4,7: 16 patches of 49 pixels to 64 (50,176), per block 12 x 16 x 64^2 +
        // 2 x 16^2 x 64 (819,200), the head 640
        QCOMPARE(of("vit", {64, 2, 4, 7}), 50176.0 + 2 * 819200.0 + 640.0);
        QCOMPARE(of("autoencoder", {256, 32}), 784.0 * 256 + 256.0 * 32 + 32.0 * 256 + 256.0 * 784);
        for (const ModelKind& k : modelKinds()) QVERIFY(k.multiplyAdds(defaultWidths(k)) > k.parameterCount(defaultWidths(k)) * 0.5);
    }

    // fp32 -> pure-fp16 rounds the weights; -> amp-fp16 promotes a master that holds exactly
    // the fp16 values; -> fp32 computes with the master's values.
    void recipeSwitchesKeepValuesConsistent()
    {
        auto model = Model::create(ModelSpec{"small-cnn", {4, 8}}, 3);
        Parameter& w = *model->parameters()[2];
        const Tensor original = w.value;
        model->applyRecipe(preset("fp32"), nullptr, *cpu_);
        for (std::int64_t i = 0; i < w.value.size(); ++i) QCOMPARE(w.value[i], original[i]);

        model->applyRecipe(preset("pure-fp16"), nullptr, *cpu_);
        QCOMPARE(w.master.size(), std::int64_t{0});
        QCOMPARE(w.value.storage(), Format::fp16);
        QCOMPARE(w.grad.storage(), Format::fp16);
        for (std::int64_t i = 0; i < w.value.size(); ++i) QCOMPARE(w.value[i], roundTo(Format::fp16, original[i]));

        // The optimizer state as pure-fp16 holds it where the backend packs (2 bytes an
        // element): promoted to fp32, values unchanged.
        w.state1 = Tensor(w.value.shape(), Format::fp16);
        for (std::int64_t i = 0; i < w.state1.size(); ++i) w.state1[i] = roundTo(Format::fp16, 1e-3f * float(i + 1));
        const std::vector<float> state = w.state1.toHost();
        w.state1.pack();
        model->applyRecipe(preset("amp-fp16"), nullptr, *cpu_);
        QCOMPARE(w.master.storage(), Format::fp32);
        QCOMPARE(w.value.storage(), Format::fp16);
        QCOMPARE(w.grad.storage(), Format::fp32);
        QCOMPARE(w.state1.storage(), Format::fp32);
        QVERIFY(!w.state1.packed());
        QVERIFY(w.state1.toHost() == state);
        for (std::int64_t i = 0; i < w.value.size(); ++i) {
            QCOMPARE(w.master[i], roundTo(Format::fp16, original[i]));
            QCOMPARE(w.value[i], w.master[i]);
        }
        model->applyRecipe(preset("amp-bf16"), nullptr, *cpu_);
        for (std::int64_t i = 0; i < w.value.size(); ++i) QCOMPARE(w.value[i], roundTo(Format::bf16, w.master[i]));
        model->applyRecipe(preset("fp32"), nullptr, *cpu_);
        for (std::int64_t i = 0; i < w.value.size(); ++i) QCOMPARE(w.value[i], w.stored()[i]);

        // Packed fp16 state into pure-bf16's: rounded to bf16.
        model->applyRecipe(preset("pure-fp16"), nullptr, *cpu_);
        w.state1 = Tensor(w.value.shape(), Format::fp16);
        w.state1.assignFromHost(state.data(), w.state1.size());
        w.state1.pack();
        model->applyRecipe(preset("pure-bf16"), nullptr, *cpu_);
        QCOMPARE(w.state1.storage(), Format::bf16);
        const std::vector<float> rounded = w.state1.toHost();
        for (std::size_t i = 0; i < state.size(); ++i) QCOMPARE(rounded[i], roundTo(Format::bf16, state[i]));
    }

    void memoryBytesHalveForFp16Storage()
    {
        auto model = Model::create(ModelSpec{"small-cnn", {}}, 3);
        const std::int64_t n = parameterCount(*model);
        auto snapshotFor = [&](const char* name) {
            MemoryAccountant memory;
            auto m = Model::create(ModelSpec{"small-cnn", {}}, 3);
            m->applyRecipe(preset(name), &memory, *cpu_);
            return memory.snapshot();
        };
        const auto w = static_cast<std::size_t>(MemoryCategory::weights);
        const auto g = static_cast<std::size_t>(MemoryCategory::gradients);
        const auto master = static_cast<std::size_t>(MemoryCategory::masterWeights);
        const auto pure16 = snapshotFor("pure-fp16");
        const auto amp16 = snapshotFor("amp-fp16");
        const auto tf32 = snapshotFor("tf32");
        QCOMPARE(pure16.live[w], 2 * n);
        QCOMPARE(pure16.live[g], 2 * n);
        QCOMPARE(pure16.live[master], std::int64_t{0});
        QCOMPARE(amp16.live[w], 2 * n);
        QCOMPARE(amp16.live[master], 4 * n);
        QCOMPARE(amp16.live[g], 4 * n);
        QCOMPARE(tf32.live[w], 4 * n);

        const auto fp32Bytes = model->activationBytesPerSample(preset("fp32"));
        const auto fp16Bytes = model->activationBytesPerSample(preset("amp-fp16"));
        QVERIFY(fp16Bytes < fp32Bytes);
        QVERIFY(fp16Bytes * 2 <= fp32Bytes + 32 * 196 + 64 * 49);   // only pooling indices do not halve

        // Accounting follows a step: activations appear, and go when the model goes.
        MemoryAccountant memory;
        {
            auto backend = createCpuBackend(2);
            auto m = Model::create(ModelSpec{"small-cnn", {4, 8}}, 3);
            const auto r = preset("amp-fp16");
            m->applyRecipe(r, &memory, *cpu_);
            Tensor images;
            std::vector<std::uint8_t> labels;
            syntheticBatch(6, images, labels);
            StepContext ctx{&r, backend.get(), nullptr, &memory, true};
            m->trainStep(images, labels, 1.0f, ctx);
            QVERIFY(memory.snapshot().live[static_cast<std::size_t>(MemoryCategory::activations)] > 0);
            QVERIFY(memory.snapshot().live[static_cast<std::size_t>(MemoryCategory::workspace)] > 0);
        }
        QCOMPARE(memory.snapshot().totalLive, std::int64_t{0});
    }
};

QTEST_GUILESS_MAIN(TestModel)
#include "tst_model.moc"
