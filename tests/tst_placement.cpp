// Over 500 lines: every model and recipe trained on the device-posing backend, and the packed tensors' device checks, share its one tracked-memory backend.
// Device residency checked on the host: a backend whose "device" is tracked host memory
// and whose every op verifies that each tensor pointer it receives lies inside one of
// its allocations (and each label/counter pointer outside). A model trained through it
// must never hand an op a tensor that was not placed, must free everything it allocated,
// and must compute bit for bit what the plain CPU backend computes. The backend also holds
// the counts it owes host structs until flush(), as the CUDA backend does, so a caller that
// reads them early, or resets or frees a struct with counts pending, fails here too. On a
// GPU the same mistakes would be crashes or silent garbage; here they are test failures.
// The backend is support/checking_backend.h, shared with tst_trainer_placement.
// links: plab_engine plab_test_support
#include "backend/backend.h"
#include "checking_backend.h"
#include "nn/layer_ops.h"
#include "nn/model.h"
#include "numerics/format.h"
#include "optim/grad_unscale.h"
#include "optim/optimizer.h"
#include "tensor/byte_buffer.h"
#include "tensor/tensor.h"

#include <QScopeGuard>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace plab;
using plab::testing::CheckingBackend;
using plab::testing::ConvolutionLibrary;
using plab::testing::TrackingAllocator;

Q_DECLARE_METATYPE(plab::testing::ConvolutionLibrary)

namespace {

void syntheticBatch(int count, Tensor& images, std::vector<std::uint8_t>& labels)
{
    images = Tensor({count, 1, 28, 28});
    labels.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i % 10);
        for (int p = 0; p < 784; ++p)
            images[i * 784 + p] = static_cast<float>((p * 37 + i * 11 + (i % 10) * 97) % 53) / 255.0f;
    }
}

struct StepResult {
    std::vector<float> losses;
    std::vector<std::vector<std::vector<float>>> gradients;   // each step's S * dL/dw per parameter
    std::vector<std::vector<float>> weights;   // every parameter's stored copy, host values
    std::vector<UpdateCounts> updates;
    std::vector<std::map<TapKey, TapData>> telemetry;   // each step's taps, read after its flush
    StepOutput evaluation;
};

// Three training steps (forward, backward, unscale, update) and an evaluation, as the
// trainer runs them: counters reset before the step's ops and read only after its flush.
// switchTo: the recipe changes to it before the second step, as a mid-run change does.
StepResult train(const char* recipeName, const char* optimizerKind, const char* modelKind, ComputeBackend& backend,
                 const char* switchTo = nullptr)
{
    PrecisionRecipe recipe = *PrecisionRecipe::fromPreset(recipeName);
    MemoryAccountant memory;   // first: it outlives the tensors that report to it
    const bool vit = std::string(modelKind) == "vit";
    auto model = Model::create(ModelSpec{modelKind, vit ? std::vector<int>{16, 1, 2, 14} : std::vector<int>{6, 8}}, 7);
    model->applyRecipe(recipe, &memory, backend);
    OptimizerConfig config;
    config.kind = optimizerKind;
    auto optimizer = Optimizer::create(config);
    Tensor images;
    std::vector<std::uint8_t> labels;
    syntheticBatch(20, images, labels);
    StepResult r;
    const auto params = model->parameters();
    for (int step = 0; step < 3; ++step) {
        if (step == 1 && switchTo) {
            recipe = *PrecisionRecipe::fromPreset(switchTo);
            model->applyRecipe(recipe, &memory, backend);
        }
        TelemetryCollector telemetry;
        telemetry.beginStep(true);
        StepContext ctx{&recipe, &backend, &telemetry, &memory, true};
        r.losses.push_back(model->trainStep(images, labels, 256.0f, ctx).loss);
        r.gradients.emplace_back();
        for (Parameter* p : params) r.gradients.back().push_back(p->grad.toHost());
        const UnscaleResult unscaled = unscaleGradients(params, 1.0f / 256.0f, recipe, backend);
        for (Parameter* p : params) p->lastUpdate = {};
        if (!unscaled.foundNonFinite) {
            clipGradNorm(params, 10.0, backend);
            optimizer->step(params, recipe, &memory, backend);
        }
        backend.flush();   // before anything reads the step's counts
        telemetry.endStep();
        r.telemetry.push_back(telemetry.taps());
    }
    for (Parameter* p : params) {
        r.weights.push_back(p->stored().toHost());
        r.updates.push_back(p->lastUpdate);
    }
    StepContext evalCtx{&recipe, &backend, nullptr, &memory, false};
    r.evaluation = model->evaluate(images, labels, evalCtx);
    return r;
}

bool sameTelemetry(const std::map<TapKey, TapData>& a, const std::map<TapKey, TapData>& b)
{
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
        if (!(i->first == j->first) || !(i->second.step == j->second.step) || !(i->second.run == j->second.run) ||
            !(i->second.histogram == j->second.histogram))
            return false;
    }
    return true;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

class TestPlacement : public QObject {
    Q_OBJECT

private slots:
    void tensorMovesBetweenHostAndDevice()
    {
        TrackingAllocator device;
        {
            Tensor t({2, 3});
            for (int i = 0; i < 6; ++i) t[i] = float(i) + 0.5f;
            t.place(&device);
            QVERIFY(t.onDevice());
            QVERIFY(device.owns(t.data(), 6 * sizeof(float)));
            QCOMPARE(t.toHost(), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));

            t.resize({3, 3});   // grows: the values stay, the new ones read as zero
            QCOMPARE(t.toHost(), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 0, 0, 0}));
            t.resize({1, 2});
            t.resize({2, 2});   // within capacity: still zero beyond the kept part
            QCOMPARE(t.toHost(), (std::vector<float>{0.5f, 1.5f, 0, 0}));

            Tensor copy = t;    // a copy stays on the device, in its own memory
            QVERIFY(copy.onDevice());
            QVERIFY(copy.data() != t.data());
            t.fill(9.0f);
            QCOMPARE(copy.toHost(), (std::vector<float>{0.5f, 1.5f, 0, 0}));
            Tensor host({4});
            host = copy;        // assignment takes the source's placement
            QVERIFY(host.onDevice());
            Tensor moved = std::move(copy);
            QCOMPARE(moved.toHost(), (std::vector<float>{0.5f, 1.5f, 0, 0}));

            const float values[] = {7, 8};
            moved.assignFromHost(values, 2);
            moved.place(nullptr);
            QVERIFY(!moved.onDevice());
            QCOMPARE(moved[0], 7.0f);
            QCOMPARE(moved[3], 0.0f);
            QVERIFY_THROWS_EXCEPTION(std::invalid_argument, moved.assignFromHost(values, 5));

            ByteBuffer bytes;
            bytes.resize(10, &device);
            QVERIFY(device.owns(bytes.data(), 10));
        }
        QVERIFY(device.violations().empty());
        QCOMPARE(device.live(), std::size_t{0});   // everything released
    }

    // resize's contract for what it adds: NewElements::zero reads as zero (also after a
    // shrink, within the capacity, where a vector keeps old values), NewElements::undefined
    // keeps the first elements and, poisoned, reads as NaN: the guard that a buffer the
    // layers take undefined is never read before it is written (CTest poisons every suite).
    void newElementsReadAsResizeSays()
    {
        const bool was = poisonsNewElements();
        setPoisonNewElements(true);
        TrackingAllocator device;
        for (const bool packed : {false, true}) {
            for (DeviceAllocator* where : {static_cast<DeviceAllocator*>(nullptr),
                                           static_cast<DeviceAllocator*>(&device)}) {
                Tensor t({4}, Format::bf16);
                const float values[] = {1.0f, 2.0f, 3.0f, 4.0f};
                t.assignFromHost(values, 4);
                if (packed) t.pack();
                t.place(where);
                t.resize({2});
                t.resize({6}, NewElements::undefined);   // 2 kept, 4 added
                std::vector<float> v = t.toHost();
                QCOMPARE(v[0], 1.0f);
                QCOMPARE(v[1], 2.0f);
                for (std::size_t i = 2; i < 6; ++i) QVERIFY2(std::isnan(v[i]), "an undefined element not poisoned");
                t.resize({1});
                t.resize({5});   // within the capacity: zeros, not the poison or the old values
                v = t.toHost();
                QCOMPARE(v[0], 1.0f);
                for (std::size_t i = 1; i < 5; ++i) QCOMPARE(std::bit_cast<std::uint32_t>(v[i]), 0u);
                t.resize({9});   // beyond it: zeros too
                v = t.toHost();
                for (std::size_t i = 1; i < 9; ++i) QCOMPARE(std::bit_cast<std::uint32_t>(v[i]), 0u);
            }
        }
        setPoisonNewElements(false);
        Tensor t({3});
        const float three[] = {1.0f, 2.0f, 3.0f};
        t.assignFromHost(three, 3);
        t.resize({1});
        // Not poisoned: nothing written, the old values stay (no caller reads them; here
        // they show that no zero-fill ran).
        t.resize({3}, NewElements::undefined);
        QCOMPARE(t[0], 1.0f);
        QCOMPARE(t[1], 2.0f);
        QCOMPARE(t[2], 3.0f);
        setPoisonNewElements(was);
        QVERIFY(device.violations().empty());
    }

    // Issue 31: a tensor packed into its 16-bit storage format holds that format's bits,
    // exactly, keeps its accounted bytes, refuses fp32 access, stays packed (2 bytes an
    // element) on a device, and unpacks before it changes format.
    void packedTensorHoldsItsFormatsBits()
    {
        for (const Format f : {Format::fp16, Format::bf16}) {
            // Values the format holds, from its own bit patterns (the largest finite one, a
            // subnormal, signed zero), so packing is exact.
            const std::vector<std::uint16_t> patterns = f == Format::fp16
                ? std::vector<std::uint16_t>{0x3C00, 0xBC00, 0x7BFF, 0x0001, 0x8000, 0x3555}
                : std::vector<std::uint16_t>{0x3F80, 0xBF80, 0x7F7F, 0x0001, 0x8000, 0x3EAB};
            std::vector<float> values;
            for (auto b : patterns) values.push_back(f == Format::fp16 ? fp16BitsToFp32(b) : bf16BitsToFp32(b));
            MemoryAccountant memory;
            Tensor t({2, 3}, f);
            t.track(&memory, MemoryCategory::activations);
            t.assignFromHost(values.data(), 6);
            QCOMPARE(memory.snapshot().totalLive, std::int64_t{12});
            t.pack();
            QVERIFY(t.packed());
            QCOMPARE(memory.snapshot().totalLive, std::int64_t{12});   // the bytes it always claimed
            for (int i = 0; i < 6; ++i) QCOMPARE(t.bits16()[i], patterns[static_cast<std::size_t>(i)]);
            QVERIFY_THROWS_EXCEPTION(std::logic_error, t.data());
            const std::vector<float> back = t.toHost();
            for (int i = 0; i < 6; ++i) QCOMPARE(std::bit_cast<std::uint32_t>(back[static_cast<std::size_t>(i)]),
                                                 std::bit_cast<std::uint32_t>(values[static_cast<std::size_t>(i)]));

            Tensor copy = t;   // copies and moves keep the bits
            QVERIFY(copy.packed());
            QCOMPARE(copy.bits16()[2], patterns[2]);
            Tensor moved = std::move(copy);
            QCOMPARE(moved.bits16()[5], patterns[5]);
            Tensor assigned({1});
            assigned = moved;
            QCOMPARE(assigned.bits16()[0], patterns[0]);

            t.resize({3, 3});   // grows with zeros, as an fp32 tensor does
            QCOMPARE(t.bits16()[8], std::uint16_t{0});
            QCOMPARE(t.bits16()[2], patterns[2]);
            QCOMPARE(memory.snapshot().totalLive, std::int64_t{18});
            const float one = 1.0f;
            t.assignFromHost(&one, 1);
            QCOMPARE(t.toHost()[0], 1.0f);
            t.fill(0.1f);   // rounded to the format
            QCOMPARE(t.toHost()[4], roundTo(f, 0.1f));

            TrackingAllocator device;
            t.place(&device);   // the patterns move: 2 bytes an element on the device too
            QVERIFY(t.packed());
            QVERIFY(device.owns(t.bits16(), 9 * sizeof(std::uint16_t)));
            QCOMPARE(device.liveBytes(), std::size_t{9 * sizeof(std::uint16_t)});
            QVERIFY_THROWS_EXCEPTION(std::logic_error, t.data());
            QCOMPARE(t.toHost()[4], roundTo(f, 0.1f));
            QCOMPARE(memory.snapshot().totalLive, std::int64_t{18});
            {
                const Tensor copy = t;   // a device copy of the patterns
                QVERIFY(copy.packed());
                QVERIFY(device.owns(copy.bits16(), 9 * sizeof(std::uint16_t)));
                QCOMPARE(copy.toHost()[4], roundTo(f, 0.1f));
            }
            t.unpack();   // widened on the device's copy: fp32 values there
            QVERIFY(!t.packed());
            QVERIFY(device.owns(t.data(), 9 * sizeof(float)));
            QCOMPARE(t.toHost()[4], roundTo(f, 0.1f));
            t.pack();
            QVERIFY(t.packed());
            QCOMPARE(device.liveBytes(), std::size_t{9 * sizeof(std::uint16_t)});
            t.resize({4, 3});   // grows with zeros on the device too
            QCOMPARE(t.toHost()[11], 0.0f);
            QCOMPARE(t.toHost()[4], roundTo(f, 0.1f));
            const float two = 2.0f;
            t.assignFromHost(&two, 1);
            QCOMPARE(t.toHost()[0], 2.0f);
            {
                Tensor filled({5}, f);
                filled.place(&device);
                filled.pack();
                filled.fill(0.3f);   // rounded to the format
                QCOMPARE(filled.toHost()[3], roundTo(f, 0.3f));
            }
            t.place(nullptr);   // back to host memory, still packed
            QVERIFY(t.packed());
            QCOMPARE(t.bits16()[0], std::uint16_t{0x4000});   // 2.0 in both formats
            QCOMPARE(t.toHost()[4], roundTo(f, 0.1f));
            QCOMPARE(device.live(), std::size_t{0});
            t.pack();
            t.setStorage(Format::fp32);   // another format: unpacked, values kept
            QVERIFY(!t.packed());
            QCOMPARE(t[4], roundTo(f, 0.1f));
            QVERIFY_THROWS_EXCEPTION(std::logic_error, t.pack());   // fp32 has no 16-bit form
            QVERIFY_THROWS_EXCEPTION(std::logic_error, t.bits16());
            QVERIFY(device.violations().empty());
        }
    }

    void trainingStaysOnTheDevice_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("optimizer");
        QTest::addColumn<QString>("model");
        QTest::addColumn<ConvolutionLibrary>("library");   // the backend's library convolutions
        QTest::addColumn<QString>("switchTo");   // the recipe from the second step on ("": none)
        const auto none = ConvolutionLibrary::none, all = ConvolutionLibrary::all;
        for (const char* r : {"fp32", "tf32", "amp-fp16", "amp-bf16", "pure-fp16", "pure-bf16"}) {
            // vit: LayerNorm, attention, GELU and the rest as the backend's transformer ops.
            for (const char* m : {"small-cnn", "mlp", "vit"})
                QTest::addRow("%s %s adam", r, m) << r << "adam" << m << none << QString();
            QTest::addRow("%s small-cnn adam, library convolutions", r) << r << "adam" << "small-cnn" << all << QString();
            // Regression: a backward pass the library refused after its forward pass ran
            // (cuDNN's last algorithm refusing the shape at run time) threw logic_error
            // from Conv2d and ended the run. The layer lowers it now, bit for bit as the
            // CPU backend (which has no library) lowers the whole step.
            const std::pair<ConvolutionLibrary, const char*> refusals[] = {
                {ConvolutionLibrary::refuseBackward, "refuses backward"},
                {ConvolutionLibrary::refuseBackwardFilter, "refuses backward filter"},
                {ConvolutionLibrary::refuseBackwardData, "refuses backward data"}};
            for (const auto& [library, what] : refusals)
                QTest::addRow("%s small-cnn adam, library %s", r, what)
                    << r << "adam" << "small-cnn" << library << QString();
        }
        QTest::addRow("amp-fp16 small-cnn sgd") << "amp-fp16" << "sgd" << "small-cnn" << none << QString();
        QTest::addRow("pure-bf16 mlp sgd") << "pure-bf16" << "sgd" << "mlp" << none << QString();
        // Mid-run changes re-place the copies the new recipe keeps (master weights on or off).
        QTest::addRow("fp32 -> pure-fp16 small-cnn adam") << "fp32" << "adam" << "small-cnn" << none << "pure-fp16";
        QTest::addRow("pure-bf16 -> amp-fp16 mlp sgd") << "pure-bf16" << "sgd" << "mlp" << none << "amp-fp16";
        QTest::addRow("amp-fp16 -> fp32 small-cnn adam, library convolutions")
            << "amp-fp16" << "adam" << "small-cnn" << all << "fp32";
        QTest::addRow("amp-fp16 -> fp32 small-cnn adam, library refuses backward data")
            << "amp-fp16" << "adam" << "small-cnn" << ConvolutionLibrary::refuseBackwardData << "fp32";
    }

    // Every op gets placed tensors, nothing leaks, the counts arrive at flush() and no later
    // than the loop reads them, and the result is bit for bit the CPU's.
    void trainingStaysOnTheDevice()
    {
        QFETCH(QString, recipe);
        QFETCH(QString, optimizer);
        QFETCH(QString, model);
        QFETCH(ConvolutionLibrary, library);
        QFETCH(QString, switchTo);
        placedAgreesWithCpu(recipe.toStdString(), optimizer.toStdString(), model.toStdString(), library,
                            switchTo.toStdString());
    }

    // A packed tensor on a device is filled there: a fill with a value, and the zeros of a
    // grown tensor, come from the device's fill of pattern pairs, not from a buffer of
    // patterns uploaded from the host (on a GPU such an upload waits for the stream: it made
    // packed training 2.75-4.67 times slower than unpacked). A lone pattern at an odd end or
    // a misaligned start is uploaded; so are patterns whose pair is no normal fp32 number
    // (a subnormal, infinity or NaN), which arrive bit for bit. Expected patterns from the
    // formats' specifications.
    void packedDeviceTensorsFillOnTheDevice()
    {
        struct Case {
            Format f;
            float v;
            std::uint16_t bits;
            bool pairIsNormal;   // the pattern twice, read as fp32, is zero or normal
        };
        const float inf = std::numeric_limits<float>::infinity();
        const Case cases[] = {
            {Format::fp16, 0.0f, 0x0000, true},  {Format::fp16, 1.0f, 0x3C00, true},
            {Format::fp16, 0.1f, 0x2E66, true},  {Format::fp16, -0.0f, 0x8000, false},
            {Format::fp16, inf, 0x7C00, true},   {Format::bf16, 0.0f, 0x0000, true},
            {Format::bf16, 1.0f, 0x3F80, true},  {Format::bf16, 0.1f, 0x3DCD, true},
            {Format::bf16, -0.0f, 0x8000, false}, {Format::bf16, inf, 0x7F80, false},
        };
        const auto patterns = [](TrackingAllocator& device, const Tensor& t) {
            std::vector<std::uint16_t> bits(static_cast<std::size_t>(t.size()));
            device.download(bits.data(), t.bits16(), bits.size() * sizeof(std::uint16_t));
            return bits;
        };
        for (const Case& c : cases) {
            for (const std::int64_t n : {1, 2, 5, 8}) {
                const QString what = QString("%1 %2 pattern 0x%3, %4 elements")
                                         .arg(QString::fromUtf8(std::string(formatName(c.f))))
                                         .arg(c.v)
                                         .arg(c.bits, 4, 16, QChar('0'))
                                         .arg(n);
                TrackingAllocator device;
                Tensor t({n}, c.f);
                t.place(&device);
                t.pack();
                const int before = device.uploads();
                const std::size_t bytesBefore = device.uploadedBytes();
                t.fill(c.v);
                QVERIFY2(device.uploads() - before == (c.pairIsNormal ? n % 2 : 1), qPrintable(what));
                // Only the lone pattern goes up, or every pattern where the pair is no normal number.
                const std::int64_t uploaded = c.pairIsNormal ? n % 2 : n;
                QVERIFY2(device.uploadedBytes() - bytesBefore == static_cast<std::size_t>(2 * uploaded),
                         qPrintable(what));
                for (const std::uint16_t b : patterns(device, t)) QVERIFY2(b == c.bits, qPrintable(what));

                // Grown from n elements: the new ones are +0 (zeros from the device's fill,
                // the first uploaded where it starts 2 bytes into a 4-byte word), the old kept.
                const int beforeGrowth = device.uploads();
                const std::size_t bytesBeforeGrowth = device.uploadedBytes();
                t.resize({n + 9});
                const std::vector<std::uint16_t> grown = patterns(device, t);
                for (std::int64_t i = 0; i < n + 9; ++i)
                    QVERIFY2(grown[static_cast<std::size_t>(i)] == (i < n ? c.bits : 0), qPrintable(what));
                const int misalignedStart = n % 2;
                const int oddEnd = (9 - misalignedStart) % 2;
                QVERIFY2(device.uploads() - beforeGrowth == misalignedStart + oddEnd, qPrintable(what));
                QVERIFY2(device.uploadedBytes() - bytesBeforeGrowth ==
                             static_cast<std::size_t>(2 * (misalignedStart + oddEnd)),
                         qPrintable(what));
                QVERIFY2(device.violations().empty(), qPrintable(what));
            }
        }
    }

    // Issue 31: with packed storage on, a device that holds packed tensors (the checking
    // backend's, as the CUDA plugin's does) keeps the convolutions' 16-bit activations and
    // their gradients packed in its own memory, 2 bytes an element, and the step gives the
    // CPU's bits. (Convolutions are the layers that pack, lowering their passes in blocks,
    // so the library's convolutions do not run; the dense layers read what arrives packed.)
    void packedTrainingStaysOnTheDevice_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<qint64>("blockValues");
        for (const char* r : {"amp-fp16", "amp-bf16", "pure-fp16", "pure-bf16"})
            QTest::addRow("%s small-cnn", r) << r << qint64{packedBlockValues()};
        // Blocks of one sample on the host, of two on the device (the 16-byte granule of a
        // 14 x 14 plane, deviceGranule): other cuts, the same bits.
        for (const char* r : {"amp-fp16", "amp-bf16"})
            QTest::addRow("%s small-cnn, tiny blocks", r) << r << qint64{500};
    }
    void packedTrainingStaysOnTheDevice()
    {
        QFETCH(QString, recipe);
        QFETCH(qint64, blockValues);
        const ScopedPackedStorage packing(true);
        const std::int64_t defaultBlock = packedBlockValues();
        setPackedBlockValues(blockValues);
        const auto restore = qScopeGuard([&] { setPackedBlockValues(defaultBlock); });
        int packedCalls = 0;
        placedAgreesWithCpu(recipe.toStdString(), "adam", "small-cnn", ConvolutionLibrary::none, "", &packedCalls);
        QVERIFY2(packedCalls > 0, "no packed op ran on the device");
    }

private:
    // Trains three steps on a CheckingBackend and on the CPU backend and requires the same
    // bits, every tensor pointer inside the "device", nothing owed or left allocated.
    // packedCalls, when given, receives how many packed-tensor ops the device ran.
    void placedAgreesWithCpu(const std::string& r, const std::string& o, const std::string& m,
                             ConvolutionLibrary library, const std::string& to, int* packedCalls = nullptr)
    {
        const char* next = to.empty() ? nullptr : to.c_str();
        CheckingBackend checking(library);
        const StepResult placed = train(r.c_str(), o.c_str(), m.c_str(), checking, next);
        if (packedCalls) *packedCalls = checking.packedCalls();
        for (const auto& v : checking.device().violations()) qWarning("%s", v.c_str());
        QVERIFY(checking.device().violations().empty());
        QVERIFY(!checking.countsPending());
        QCOMPARE(checking.device().live(), std::size_t{0});
        QVERIFY(checking.device().allocations() > 0);
        QCOMPARE(checking.flushes(), 3);
        // Per step: forward of both convolutions, backward filter of both, data of conv2;
        // then the evaluation's two forwards. A refused pass is asked for every step (its
        // forward pass runs again), and after a refused filter pass the layer lowers its
        // data pass without asking.
        const auto [calls, refused] = [&]() -> std::pair<int, int> {
            switch (library) {
            case ConvolutionLibrary::none: return {0, 0};
            case ConvolutionLibrary::all: return {3 * 5 + 2, 0};
            case ConvolutionLibrary::refuseBackwardData: return {3 * 4 + 2, 3 * 1};
            case ConvolutionLibrary::refuseBackwardFilter:
            case ConvolutionLibrary::refuseBackward: return {3 * 2 + 2, 3 * 2};
            }
            return {-1, -1};
        }();
        QCOMPARE(checking.libraryCalls(), calls);
        QCOMPARE(checking.libraryRefusals(), refused);

        auto cpu = createCpuBackend(2);
        const StepResult reference = train(r.c_str(), o.c_str(), m.c_str(), *cpu, next);
        QCOMPARE(placed.losses.size(), reference.losses.size());
        for (std::size_t i = 0; i < placed.losses.size(); ++i)
            QVERIFY(sameBits({placed.losses[i]}, {reference.losses[i]}));
        QCOMPARE(placed.gradients.size(), reference.gradients.size());
        for (std::size_t i = 0; i < placed.gradients.size(); ++i) {
            QCOMPARE(placed.gradients[i].size(), reference.gradients[i].size());
            for (std::size_t j = 0; j < placed.gradients[i].size(); ++j)
                QVERIFY2(sameBits(placed.gradients[i][j], reference.gradients[i][j]),
                         qPrintable(QString("step %1, parameter %2").arg(i).arg(j)));
        }
        QCOMPARE(placed.weights.size(), reference.weights.size());
        for (std::size_t i = 0; i < placed.weights.size(); ++i) QVERIFY(sameBits(placed.weights[i], reference.weights[i]));
        for (std::size_t i = 0; i < placed.updates.size(); ++i) QVERIFY(placed.updates[i] == reference.updates[i]);
        QCOMPARE(placed.telemetry.size(), reference.telemetry.size());
        bool counted = false;   // fp32 has no rounding sites; the other recipes count something
        for (std::size_t i = 0; i < placed.telemetry.size(); ++i) {
            counted = counted || !reference.telemetry[i].empty();
            QVERIFY2(sameTelemetry(placed.telemetry[i], reference.telemetry[i]), qPrintable(QString("step %1").arg(i)));
        }
        QVERIFY(counted || (r == "fp32" && to.empty()));
        QCOMPARE(placed.evaluation.correct, reference.evaluation.correct);
        QVERIFY(sameBits({placed.evaluation.loss}, {reference.evaluation.loss}));
    }

private slots:

    // The checking backend itself (issue 5 review): counts wait for flush(), exactly as
    // many as the CPU backend adds at once, and a struct changed while counts are owed to
    // it (read and reset, or freed and its memory reused) is reported, not written.
    void countsArriveOnlyAtFlush()
    {
        const std::vector<float> values = {0.0f, 1e-8f, 7e4f, 6e-6f, 1.5f, -3.25f,
                                           std::numeric_limits<float>::quiet_NaN(),
                                           std::numeric_limits<float>::infinity()};
        const auto n = static_cast<std::int64_t>(values.size());
        auto cpu = createCpuBackend(1);
        RoundingStats expectedStats;
        GradientHistogram expectedHist;
        std::vector<float> rounded = values;
        cpu->roundArray(Format::fp16, rounded.data(), rounded.data(), rounded.size(), &expectedStats, &expectedHist);
        QVERIFY(expectedStats.underflow > 0 && expectedStats.overflow > 0 && expectedStats.subnormal > 0);

        CheckingBackend checking(ConvolutionLibrary::none);
        Tensor x({n});
        x.assignFromHost(values.data(), n);
        x.place(checking.allocator());
        RoundingStats stats;
        GradientHistogram hist;
        checking.roundArray(Format::fp16, x.data(), x.data(), values.size(), &stats, &hist);
        QVERIFY(stats == RoundingStats{});
        QVERIFY(hist == GradientHistogram{});
        QVERIFY(checking.countsPending());
        checking.flush();
        QVERIFY(!checking.countsPending());
        QVERIFY(stats == expectedStats);
        QVERIFY(hist == expectedHist);
        QVERIFY(sameBits(x.toHost(), rounded));

        UpdateCounts counts;
        Tensor w({n}), g({n});
        w.fill(1.0f);
        g.fill(0.5f);
        w.place(checking.allocator());
        g.place(checking.allocator());
        SgdScalars sgd;
        sgd.negLr = -0.25f;
        checking.sgdUpdate(sgd, Format::fp32, w.data(), g.data(), nullptr, n, &counts);
        QVERIFY(counts == UpdateCounts{});
        checking.flush();
        QCOMPARE(counts.nonzero, n);
        QVERIFY(checking.device().violations().empty());

        // Reset between the op and flush(): the counts are not delivered, and it is reported.
        checking.roundArray(Format::fp16, x.data(), x.data(), values.size(), &stats, nullptr);
        stats = {};
        checking.flush();
        QVERIFY(stats == RoundingStats{});
        QCOMPARE(checking.device().violations().size(), std::size_t{1});
        QVERIFY(checking.device().violations().front().find("RoundingStats changed") != std::string::npos);
    }

    // Issue 5 review: Tensor::place is strongly exception-safe. A device that runs out of
    // memory (or fails the copy) leaves the tensor where it was, with its values, and
    // keeps nothing allocated; the same for resize and copy-assignment.
    void placeKeepsTheTensorWhenTheDeviceFails()
    {
        const std::vector<float> values = {0.5f, -1.5f, 2.5f};
        TrackingAllocator device;
        {
            Tensor t({3});
            t.assignFromHost(values.data(), 3);
            device.failAllocations(true);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, t.place(&device));
            QVERIFY(!t.onDevice());
            QCOMPARE(t.toHost(), values);
            QCOMPARE(t[1], -1.5f);
            device.failAllocations(false);

            device.failUploads(true);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, t.place(&device));
            QVERIFY(!t.onDevice());
            QCOMPARE(t.toHost(), values);
            QCOMPARE(device.live(), std::size_t{0});   // the block for the failed upload was released
            device.failUploads(false);

            t.place(&device);
            QVERIFY(t.onDevice());
            TrackingAllocator full;
            full.failAllocations(true);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, t.place(&full));   // device to device
            QVERIFY(t.device() == &device);
            QVERIFY(device.owns(t.data(), 3 * sizeof(float)));
            QCOMPARE(t.toHost(), values);

            device.failAllocations(true);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, t.resize({100}));
            QCOMPARE(t.shape(), (Shape{3}));
            QCOMPARE(t.toHost(), values);
            Tensor host({2, 2});
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, host = t);
            QVERIFY(!host.onDevice());
            QCOMPARE(host.shape(), (Shape{2, 2}));
            QCOMPARE(host.toHost(), std::vector<float>(4, 0.0f));
            device.failAllocations(false);

            // A packed tensor assigned over an fp32 one on the same device (a buffer of the
            // other element size): nothing changes when the device cannot hold the copy.
            Tensor packed({3}, Format::fp16);
            packed.assignFromHost(values.data(), 3);
            packed.pack();
            packed.place(&device);
            device.failAllocations(true);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, t = packed);
            QVERIFY(!t.packed());
            QVERIFY(device.owns(t.data(), 3 * sizeof(float)));
            QCOMPARE(t.toHost(), values);
            device.failAllocations(false);
            t = packed;
            QVERIFY(t.packed());
            QVERIFY(device.owns(t.bits16(), 3 * sizeof(std::uint16_t)));
            QCOMPARE(t.toHost(), values);   // 0.5, -1.5 and 2.5 are fp16 values
        }
        QVERIFY(device.violations().empty());
        QCOMPARE(device.live(), std::size_t{0});
    }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "tst_placement.moc"
