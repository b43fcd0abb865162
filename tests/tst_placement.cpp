// Device residency checked on the host: a backend whose "device" is tracked host memory
// and whose every op verifies that each tensor pointer it receives lies inside one of
// its allocations (and each label/counter pointer outside). A model trained through it
// must never hand an op a tensor that was not placed, must free everything it allocated,
// and must compute bit for bit what the plain CPU backend computes. The backend also holds
// the counts it owes host structs until flush(), as the CUDA backend does, so a caller that
// reads them early, or resets or frees a struct with counts pending, fails here too. On a
// GPU the same mistakes would be crashes or silent garbage; here they are test failures.
// links: plab_engine plab_test_support
#include "backend/backend.h"
#include "nn/model.h"
#include "optim/grad_unscale.h"
#include "optim/optimizer.h"
#include "tensor/byte_buffer.h"
#include "tensor/tensor.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace plab;

namespace {

// Host memory posing as a device: every allocation recorded, every access checked.
class TrackingAllocator final : public DeviceAllocator {
public:
    void* allocate(std::size_t bytes) override
    {
        if (failAllocations_) throw std::runtime_error("cudaMallocFromPoolAsync failed: out of memory");
        auto block = std::make_unique<std::byte[]>(bytes + 1);
        void* p = block.get();
        blocks_[p] = {std::move(block), bytes};
        ++allocations_;
        return p;
    }
    void release(void* p) noexcept override
    {
        if (!p) return;
        if (blocks_.erase(p) == 0) violations_.push_back("release of an unknown pointer");
    }
    void copy(void* dst, const void* src, std::size_t bytes) override
    {
        require(dst, bytes, "copy dst");
        require(src, bytes, "copy src");
        std::memmove(dst, src, bytes);
    }
    void upload(void* dst, const void* host, std::size_t bytes) override
    {
        if (failUploads_) throw std::runtime_error("cudaMemcpyAsync failed: unspecified launch failure");
        require(dst, bytes, "upload dst");
        forbid(host, "upload source");
        std::memcpy(dst, host, bytes);
    }
    void download(void* host, const void* src, std::size_t bytes) override
    {
        require(src, bytes, "download src");
        forbid(host, "download target");
        std::memcpy(host, src, bytes);
    }
    void fill(float* dst, std::size_t count, float value) override
    {
        require(dst, count * sizeof(float), "fill");
        std::fill(dst, dst + count, value);
    }

    // p[0, bytes) must lie inside one allocation.
    void require(const void* p, std::size_t bytes, const char* what)
    {
        if (bytes == 0) return;
        if (!owns(p, bytes)) violations_.push_back(std::string(what) + ": not device memory");
    }
    // p must be host memory (labels, counters).
    void forbid(const void* p, const char* what)
    {
        if (p && owns(p, 1)) violations_.push_back(std::string(what) + ": device memory where host memory belongs");
    }
    bool owns(const void* p, std::size_t bytes) const
    {
        auto it = blocks_.upper_bound(const_cast<void*>(p));
        if (it == blocks_.begin()) return false;
        --it;
        const auto* base = static_cast<const std::byte*>(it->first);
        const auto* q = static_cast<const std::byte*>(p);
        return q >= base && q + bytes <= base + it->second.size;
    }

    void report(std::string violation) { violations_.push_back(std::move(violation)); }

    // A device out of memory, or one whose copies fail.
    void failAllocations(bool on) { failAllocations_ = on; }
    void failUploads(bool on) { failUploads_ = on; }

    std::size_t live() const { return blocks_.size(); }
    int allocations() const { return allocations_; }
    const std::vector<std::string>& violations() const { return violations_; }

private:
    struct Block {
        std::unique_ptr<std::byte[]> memory;
        std::size_t size = 0;
    };
    std::map<void*, Block> blocks_;
    int allocations_ = 0;
    bool failAllocations_ = false;
    bool failUploads_ = false;
    std::vector<std::string> violations_;
};

// Counts a backend owes one host struct until flush(): the struct as the first op saw it,
// and what flush() adds to it.
template <typename Counts>
struct HeldCounts {
    Counts before;
    Counts owed;
};

// The CPU backend behind a tracking "device": checks every pointer, then delegates.
class CheckingBackend final : public ComputeBackend {
public:
    // library: offer the convolution-library ops, computed here by a whole-batch lowering
    // on the CPU backend, so the layer's library path runs too.
    explicit CheckingBackend(bool library) : cpu_(createCpuBackend(2)), library_(library)
    {
        info_.name = "checking";
        info_.available = true;
    }

    TrackingAllocator& device() { return device_; }
    int flushes() const { return flushes_; }
    int libraryCalls() const { return libraryCalls_; }
    bool countsPending() const { return !stats_.empty() || !hists_.empty() || !updates_.empty(); }

    const BackendInfo& info() const override { return info_; }
    int threads() const override { return cpu_->threads(); }
    DeviceAllocator* allocator() override { return &device_; }
    void flush() override
    {
        ++flushes_;
        deliver(stats_, "RoundingStats");
        deliver(hists_, "GradientHistogram");
        deliver(updates_, "UpdateCounts");
    }

    void gemm(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
              std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
              GemmPrecision p) override
    {
        need(A, 1, "gemm A");
        need(B, 1, "gemm B");
        need(C, ((M - 1) * ldc + N), "gemm C");
        cpu_->gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, p);
    }
    void im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count, float* cols) override
    {
        need(src, g.channels * g.batch * g.planeSize(), "im2col src");
        need(cols, g.patchSize() * count * g.planeSize(), "im2col cols");
        cpu_->im2col(g, src, n0, count, cols);
    }
    void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst) override
    {
        need(cols, g.patchSize() * count * g.planeSize(), "col2im cols");
        need(dst, g.channels * g.batch * g.planeSize(), "col2im dst");
        cpu_->col2im(g, cols, n0, count, dst);
    }
    void roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist) override
    {
        need(src, static_cast<std::int64_t>(n), "roundArray src");
        need(dst, static_cast<std::int64_t>(n), "roundArray dst");
        device_.forbid(stats, "roundArray stats");
        cpu_->roundArray(f, src, dst, n, held(stats_, stats), held(hists_, hist));
    }
    void parallelFor(std::int64_t, std::int64_t, const std::function<void(std::int64_t, std::int64_t)>&) override
    {
        // Host loops cannot touch device tensors: the layers must not use them.
        device_.require(nullptr, 1, "parallelFor called");
    }
    bool convolutionForward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w,
                            float* y, GemmPrecision p) override
    {
        if (!library_) return false;
        ++libraryCalls_;
        const std::int64_t cols = g.batch * g.planeSize();
        need(x, g.channels * cols, "convForward x");
        need(w, outChannels * g.patchSize(), "convForward w");
        need(y, outChannels * cols, "convForward y");
        lowered_.resize(static_cast<std::size_t>(g.patchSize() * cols));
        cpu_->im2col(g, x, 0, g.batch, lowered_.data());
        cpu_->gemm(Transpose::no, Transpose::no, outChannels, cols, g.patchSize(), w, g.patchSize(), lowered_.data(),
                   cols, 0.0f, y, cols, p);
        return true;
    }
    bool convolutionBackwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w, const float* dy,
                                 float* dx, GemmPrecision p) override
    {
        if (!library_) return false;
        ++libraryCalls_;
        const std::int64_t cols = g.batch * g.planeSize();
        need(w, outChannels * g.patchSize(), "convBackwardData w");
        need(dy, outChannels * cols, "convBackwardData dy");
        need(dx, g.channels * cols, "convBackwardData dx");
        lowered_.resize(static_cast<std::size_t>(g.patchSize() * cols));
        cpu_->gemm(Transpose::yes, Transpose::no, g.patchSize(), cols, outChannels, w, g.patchSize(), dy, cols, 0.0f,
                   lowered_.data(), cols, p);
        cpu_->col2im(g, lowered_.data(), 0, g.batch, dx);
        return true;
    }
    bool convolutionBackwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* dy,
                                   float* dw, GemmPrecision p) override
    {
        if (!library_) return false;
        ++libraryCalls_;
        const std::int64_t cols = g.batch * g.planeSize();
        need(x, g.channels * cols, "convBackwardFilter x");
        need(dy, outChannels * cols, "convBackwardFilter dy");
        need(dw, outChannels * g.patchSize(), "convBackwardFilter dw");
        lowered_.resize(static_cast<std::size_t>(g.patchSize() * cols));
        cpu_->im2col(g, x, 0, g.batch, lowered_.data());
        cpu_->gemm(Transpose::no, Transpose::yes, outChannels, g.patchSize(), cols, dy, cols, lowered_.data(), cols,
                   0.0f, dw, g.patchSize(), p);
        return true;
    }
    void addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period, std::int64_t repeat,
                      RoundingStats* stats, GradientHistogram* hist) override
    {
        need(x, n, "addBiasRound x");
        need(bias, period, "addBiasRound bias");
        cpu_->addBiasRound(f, x, n, bias, period, repeat, held(stats_, stats), held(hists_, hist));
    }
    void relu(float* x, std::int64_t n) override
    {
        need(x, n, "relu");
        cpu_->relu(x, n);
    }
    void reluBackward(const float* y, float* g, std::int64_t n) override
    {
        need(y, n, "reluBackward y");
        need(g, n, "reluBackward g");
        cpu_->reluBackward(y, g, n);
    }
    void maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                    std::uint8_t* argmax) override
    {
        need(in, planes * H * W, "maxPool in");
        need(out, planes * (H / 2) * (W / 2), "maxPool out");
        device_.require(argmax, static_cast<std::size_t>(planes * (H / 2) * (W / 2)), "maxPool argmax");
        cpu_->maxPool2x2(in, planes, H, W, out, argmax);
    }
    void maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes, std::int64_t H,
                            std::int64_t W, float* dx) override
    {
        need(g, planes * (H / 2) * (W / 2), "maxPoolBackward g");
        device_.require(argmax, static_cast<std::size_t>(planes * (H / 2) * (W / 2)), "maxPoolBackward argmax");
        need(dx, planes * H * W, "maxPoolBackward dx");
        cpu_->maxPool2x2Backward(g, argmax, planes, H, W, dx);
    }
    void transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner, float* out) override
    {
        need(in, A * B * inner, "transpose in");
        need(out, A * B * inner, "transpose out");
        cpu_->transposeBlocks(in, A, B, inner, out);
    }
    void sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out) override
    {
        need(x, rows * cols, "sumRows x");
        need(out, rows, "sumRows out");
        cpu_->sumRows(x, rows, cols, out);
    }
    void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out) override
    {
        need(x, rows * cols, "sumColumns x");
        need(out, cols, "sumColumns out");
        cpu_->sumColumns(x, rows, cols, out);
    }
    LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                   std::int64_t classes, Format emulate, float* probabilities) override
    {
        need(logits, N * classes, "loss logits");
        need(probabilities, N * classes, "loss probabilities");
        device_.forbid(labels, "loss labels");
        return cpu_->softmaxCrossEntropy(logits, labels, N, classes, emulate, probabilities);
    }
    void softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, std::int64_t N,
                                     std::int64_t classes, float lossScale, float* grad) override
    {
        need(probabilities, N * classes, "lossBackward probabilities");
        need(grad, N * classes, "lossBackward grad");
        device_.forbid(labels, "lossBackward labels");
        cpu_->softmaxCrossEntropyBackward(probabilities, labels, N, classes, lossScale, grad);
    }
    SweepResult gradientSweep(const std::vector<GradientView>& views, float multiplier) override
    {
        for (const auto& v : views) need(v.data, v.size, "gradientSweep");
        return cpu_->gradientSweep(views, multiplier);
    }
    void sgdUpdate(const SgdScalars& s, Format f, float* w, const float* g, float* buffer, std::int64_t n,
                   UpdateCounts* counts) override
    {
        need(w, n, "sgd weights");
        need(g, n, "sgd grad");
        if (s.useMomentum) need(buffer, n, "sgd buffer");
        device_.forbid(counts, "sgd counts");
        cpu_->sgdUpdate(s, f, w, g, buffer, n, held(updates_, counts));
    }
    void adamUpdate(const AdamScalars& s, Format f, float* w, const float* g, float* m, float* v, std::int64_t n,
                    UpdateCounts* counts) override
    {
        need(w, n, "adam weights");
        need(g, n, "adam grad");
        need(m, n, "adam m");
        need(v, n, "adam v");
        device_.forbid(counts, "adam counts");
        cpu_->adamUpdate(s, f, w, g, m, v, n, held(updates_, counts));
    }

private:
    void need(const float* p, std::int64_t count, const char* what)
    {
        device_.require(p, static_cast<std::size_t>(count) * sizeof(float), what);
    }

    // Where the CPU op adds the counts owed to `target` (null stays null).
    template <typename Counts>
    static Counts* held(std::map<Counts*, HeldCounts<Counts>>& pending, Counts* target)
    {
        if (!target) return nullptr;
        auto [it, fresh] = pending.try_emplace(target);
        if (fresh) it->second.before = *target;
        return &it->second.owed;
    }
    // A struct that changed since its first op was read and reset, or freed and its memory
    // reused, while counts were owed to it: reported, and not written.
    template <typename Counts>
    void deliver(std::map<Counts*, HeldCounts<Counts>>& pending, const char* what)
    {
        for (auto& [target, held] : pending) {
            if (!(*target == held.before)) {
                device_.report(std::string(what) + " changed between an op and flush()");
                continue;
            }
            *target += held.owed;
        }
        pending.clear();
    }

    std::unique_ptr<ComputeBackend> cpu_;
    bool library_ = false;
    int libraryCalls_ = 0;
    std::vector<float> lowered_;   // the "library's" own workspace (host memory, as cuDNN's is its own)
    TrackingAllocator device_;
    BackendInfo info_;
    int flushes_ = 0;
    std::map<RoundingStats*, HeldCounts<RoundingStats>> stats_;
    std::map<GradientHistogram*, HeldCounts<GradientHistogram>> hists_;
    std::map<UpdateCounts*, HeldCounts<UpdateCounts>> updates_;
};

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
    auto model = Model::create(ModelSpec{modelKind, {6, 8}}, 7);
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

    void trainingStaysOnTheDevice_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("optimizer");
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("library");    // convolutions through the backend's library ops
        QTest::addColumn<QString>("switchTo");   // the recipe from the second step on ("": none)
        for (const char* r : {"fp32", "tf32", "amp-fp16", "amp-bf16", "pure-fp16", "pure-bf16"}) {
            for (const char* m : {"small-cnn", "mlp"})
                QTest::addRow("%s %s adam", r, m) << r << "adam" << m << false << QString();
            QTest::addRow("%s small-cnn adam, library convolutions", r)
                << r << "adam" << "small-cnn" << true << QString();
        }
        QTest::addRow("amp-fp16 small-cnn sgd") << "amp-fp16" << "sgd" << "small-cnn" << false << QString();
        QTest::addRow("pure-bf16 mlp sgd") << "pure-bf16" << "sgd" << "mlp" << false << QString();
        // Mid-run changes re-place the copies the new recipe keeps (master weights on or off).
        QTest::addRow("fp32 -> pure-fp16 small-cnn adam")
            << "fp32" << "adam" << "small-cnn" << false << "pure-fp16";
        QTest::addRow("pure-bf16 -> amp-fp16 mlp sgd") << "pure-bf16" << "sgd" << "mlp" << false << "amp-fp16";
        QTest::addRow("amp-fp16 -> fp32 small-cnn adam, library convolutions")
            << "amp-fp16" << "adam" << "small-cnn" << true << "fp32";
    }

    // Every op gets placed tensors, nothing leaks, the counts arrive at flush() and no later
    // than the loop reads them, and the result is bit for bit the CPU's.
    void trainingStaysOnTheDevice()
    {
        QFETCH(QString, recipe);
        QFETCH(QString, optimizer);
        QFETCH(QString, model);
        QFETCH(bool, library);
        QFETCH(QString, switchTo);
        const std::string r = recipe.toStdString(), o = optimizer.toStdString(), m = model.toStdString();
        const std::string to = switchTo.toStdString();
        const char* next = to.empty() ? nullptr : to.c_str();
        CheckingBackend checking(library);
        const StepResult placed = train(r.c_str(), o.c_str(), m.c_str(), checking, next);
        for (const auto& v : checking.device().violations()) qWarning("%s", v.c_str());
        QVERIFY(checking.device().violations().empty());
        QVERIFY(!checking.countsPending());
        QCOMPARE(checking.device().live(), std::size_t{0});
        QVERIFY(checking.device().allocations() > 0);
        QCOMPARE(checking.flushes(), 3);
        // Per step: forward of both convolutions, backward filter of both, data of conv2;
        // then the evaluation's two forwards.
        QCOMPARE(checking.libraryCalls(), library ? 3 * 5 + 2 : 0);

        auto cpu = createCpuBackend(2);
        const StepResult reference = train(r.c_str(), o.c_str(), m.c_str(), *cpu, next);
        QCOMPARE(placed.losses.size(), reference.losses.size());
        for (std::size_t i = 0; i < placed.losses.size(); ++i)
            QVERIFY(sameBits({placed.losses[i]}, {reference.losses[i]}));
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

        CheckingBackend checking(false);
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
        }
        QVERIFY(device.violations().empty());
        QCOMPARE(device.live(), std::size_t{0});
    }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "tst_placement.moc"
