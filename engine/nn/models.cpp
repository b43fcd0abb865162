// The models as one sequential stack of layers (their model kind's row builds it,
// model_kinds.h), their seeded initialisation, the recipe switch of their weights, and one training step.
#include "nn/conv2d.h"
#include "nn/init.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "nn/model_kinds.h"
#include "nn/parameter_copies.h"
#include "nn/layer_ops.h"
#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace plab {

namespace {

// evaluate() runs larger batches in slices of this many images to bound activation memory.
constexpr std::int64_t kEvaluationSlice = 256;
constexpr std::int64_t kImageSide = 28;   // MNIST's 28 x 28 images

// The spec's widths, or its kind's defaults; throws std::invalid_argument for an unknown
// kind or widths out of its row's rules.
std::vector<int> widthsFor(const ModelSpec& spec)
{
    const ModelKind* kind = findModelKind(spec.kind);
    if (!kind) throw std::invalid_argument("Unknown model '" + spec.kind + "'; expected " + modelKindNames() + ".");
    if (std::string problem = widthsProblem(*kind, spec.widths); !problem.empty()) {
        problem[0] = 'M';
        throw std::invalid_argument(problem + ".");
    }
    if (!spec.widths.empty()) return spec.widths;
    return defaultWidths(*kind);
}

class SequentialModel final : public Model {
public:
    SequentialModel(ModelSpec spec, std::uint64_t seed) : spec_(std::move(spec))
    {
        const auto w = widthsFor(spec_);   // throws for a bad spec
        layers_ = findModelKind(spec_.kind)->layers(w);
        // Images go to a first convolution packed (prepareInput).
        packsImages_ = dynamic_cast<const Conv2d*>(layers_.front().get()) != nullptr;
        reconstructs_ = findModelKind(spec_.kind)->task == ModelTask::reconstruct;
        firstParameterLayer_ = -1;
        int parameterLayer = 0;
        for (std::size_t i = 0; i < layers_.size(); ++i) {
            if (layers_[i]->parameters().empty()) continue;
            if (firstParameterLayer_ < 0) firstParameterLayer_ = static_cast<int>(i);
            layers_[i]->initialize(seed, parameterLayer);
        }
    }

    const ModelSpec& spec() const override { return spec_; }

    std::vector<Parameter*> parameters() override
    {
        std::vector<Parameter*> all;
        for (auto& layer : layers_)
            for (Parameter* p : layer->parameters()) all.push_back(p);
        return all;
    }

    // The names of the layers that hold parameters (a transformer block's own, not the block's).
    std::vector<std::string> layerNames() const override
    {
        std::vector<std::string> names;
        for (const auto& layer : layers_)
            for (Parameter* p : layer->parameters())
                if (names.empty() || names.back() != p->layer) names.push_back(p->layer);
        return names;
    }

    void applyRecipe(const PrecisionRecipe& recipe, MemoryAccountant* memory, ComputeBackend& backend) override;

    StepOutput trainStep(const Tensor& images, const std::vector<std::uint8_t>& labels, float lossScale,
                         StepContext& ctx) override
    {
        const auto p = StepPrecision::of(ctx, firstLayerName());
        Tensor* x = &prepareInput(images, images.size() > 0 ? images.dim(0) : 0, 0, ctx, p);
        for (auto& layer : layers_) {
            stopIfAsked(ctx);
            x = &layer->forward(*x, ctx);
        }
        const StepOutput out = reconstructs_ ? mse_.forward(*x, images.data(), ctx) : loss_.forward(*x, labels, ctx);
        Tensor* grad = reconstructs_ ? &mse_.backward(lossScale, ctx) : &loss_.backward(lossScale, ctx);
        for (int i = static_cast<int>(layers_.size()) - 1; i >= firstParameterLayer_; --i) {
            stopIfAsked(ctx);
            grad = layers_[static_cast<std::size_t>(i)]->backward(*grad, ctx, i > firstParameterLayer_);
        }
        return out;
    }

    StepOutput evaluate(const Tensor& images, const std::vector<std::uint8_t>& labels, StepContext& ctx) override
    {
        StepContext evalCtx = ctx;
        evalCtx.telemetry = nullptr;
        evalCtx.training = false;
        const auto p = StepPrecision::of(evalCtx, firstLayerName());
        const std::int64_t N = images.rank() > 0 ? images.dim(0) : 0;
        if (static_cast<std::int64_t>(labels.size()) != N)
            throw std::invalid_argument("The batch has " + std::to_string(N) + " images but " +
                                        std::to_string(labels.size()) + " labels.");
        StepOutput total;
        double lossSum = 0.0;
        for (std::int64_t n0 = 0; n0 < N; n0 += kEvaluationSlice) {
            const std::int64_t count = std::min(kEvaluationSlice, N - n0);
            Tensor* x = &prepareInput(images, count, n0, evalCtx, p);
            for (auto& layer : layers_) {
                stopIfAsked(evalCtx);
                x = &layer->forward(*x, evalCtx);
            }
            const std::vector<std::uint8_t> sliceLabels(labels.begin() + n0, labels.begin() + n0 + count);
            const StepOutput out = reconstructs_ ? mse_.forward(*x, images.data() + n0 * kImageSide * kImageSide, evalCtx)
                                                 : loss_.forward(*x, sliceLabels, evalCtx);
            total.correct += out.correct;
            lossSum += static_cast<double>(out.loss) * static_cast<double>(count);
            if (N <= kEvaluationSlice) total.loss = out.loss;   // one slice: exactly the batch mean
        }
        if (N > kEvaluationSlice) total.loss = static_cast<float>(lossSum / static_cast<double>(N));
        return total;
    }

    std::vector<float> outputs(const Tensor& images, StepContext& ctx) override
    {
        StepContext evalCtx = ctx;
        evalCtx.telemetry = nullptr;
        evalCtx.training = false;
        const auto p = StepPrecision::of(evalCtx, firstLayerName());
        const std::int64_t N = images.rank() > 0 ? images.dim(0) : 0;
        if (N > kEvaluationSlice) throw std::invalid_argument("At most " + std::to_string(kEvaluationSlice) + " images at once.");
        Tensor* x = &prepareInput(images, N, 0, evalCtx, p);
        for (auto& layer : layers_) x = &layer->forward(*x, evalCtx);
        return x->toHost();
    }

    std::int64_t activationBytesPerSample(const PrecisionRecipe& recipe) const override
    {
        std::int64_t bytes = kImageSide * kImageSide * formatInfo(recipe.forLayer(firstLayerName()).storage()).storageBytes;
        forEachLayerInput(recipe, [&](const Layer& layer, const Shape& shape, const PrecisionRecipe& current) {
            bytes += layer.keptBytesPerSample(shape, current);
        });
        return bytes;
    }

    std::int64_t packedHeldBytesPerSample(const PrecisionRecipe& recipe) const override
    {
        const PrecisionRecipe fp32;
        std::int64_t bytes = kImageSide * kImageSide * 4;   // the batch's images, fp32
        forEachLayerInput(recipe, [&](const Layer& layer, const Shape& shape, const PrecisionRecipe& current) {
            // 16-bit outputs are packed, around quantised operands too (FP8 codes, MX blocks).
            if (packableStorage(current.storage(), false))
                bytes += layer.keptBytesPerSample(shape, current) - layer.loweredBytesPerSample(shape, current);
            else
                bytes += std::max(layer.keptBytesPerSample(shape, current), layer.keptBytesPerSample(shape, fp32));
        });
        return bytes;
    }

private:
    // fn(layer, its input's shape for one sample, its recipe) for every layer in order.
    // Layers without parameters keep their input's format: that of the layer before.
    template <class Fn>
    void forEachLayerInput(const PrecisionRecipe& recipe, const Fn& fn) const
    {
        Shape shape{1, 1, kImageSide, kImageSide};   // (C, N, H, W) with N = 1
        PrecisionRecipe current = recipe.forLayer(firstLayerName());
        for (const auto& layer : layers_) {
            if (!layer->parameters().empty()) current = recipe.forLayer(layer->name());
            fn(*layer, shape, current);
            shape = layer->outputShape(shape);
        }
    }

    // The first layer with parameters: the images are rounded to its storage format.
    const std::string& firstLayerName() const { return layers_[static_cast<std::size_t>(firstParameterLayer_)]->name(); }

    // Images [n0, n0 + count) as the (1, N, 28, 28) input of the stack, rounded to the
    // storage format (the tap "input", activation) when that is not fp32.
    Tensor& prepareInput(const Tensor& images, std::int64_t count, std::int64_t n0, StepContext& ctx,
                         const StepPrecision& p)
    {
        const std::int64_t pixels = kImageSide * kImageSide;
        if (images.rank() < 1 || images.size() != images.dim(0) * pixels)
            throw std::invalid_argument("Images must be (N, 1, 28, 28), got " + shapeString(images.shape()) + ".");
        if (images.onDevice()) throw std::invalid_argument("Images must be in host memory.");
        // Packed for a convolution that packs, on a backend in host memory (the images are
        // there): conv1 then lowers the compute format's patterns as the others do. A
        // linear first layer would widen them again, block by block, to save 2 bytes a
        // pixel (the MLPs' packed steps measured 3-8% slower so, bench/RESULTS.md).
        const bool packs = packsImages_ && (packsStorage(ctx, p) || packsAroundQuantized(ctx, p)) &&
                           !ctx.backend->allocator();   // fp16 or bf16
        prepareTensor(input_, {1, count, kImageSide, kImageSide}, p.storage, ctx, MemoryCategory::activations, packs);
        if (packs) {
            roundTappedTo16(ctx, p.storage, images.data() + n0 * pixels, input_, "input", TensorKind::activation);
            return input_;
        }
        input_.assignFromHost(images.data() + n0 * pixels, count * pixels);
        if (p.roundsStorage())
            roundTapped(ctx, p.storage, input_.data(), input_.data(), count * pixels, "input", TensorKind::activation);
        return input_;
    }

    ModelSpec spec_;
    std::vector<std::unique_ptr<Layer>> layers_;
    int firstParameterLayer_ = 0;
    SoftmaxCrossEntropy loss_;   // a classifier's
    MeanSquaredError mse_;        // an autoencoder's: its outputs against its input images
    bool reconstructs_ = false;   // ModelTask::reconstruct
    Tensor input_;   // (1, N, 28, 28): the images as the (C, N, H, W) input, in storage format
    bool packsImages_ = false;   // the first layer is a convolution (prepareInput)
};

void SequentialModel::applyRecipe(const PrecisionRecipe& recipe, MemoryAccountant* memory, ComputeBackend& backend)
{
    for (Parameter* param : parameters()) {
        const PrecisionRecipe layerRecipe = recipe.forLayer(param->layer);
        const Format stateFormat = layerRecipe.optimizerStateFormat();
        alignParameterWithRecipe(*param, layerRecipe, memory, backend);
        param->grad.resize(param->value.shape());
        param->grad.zero();
        param->grad.setStorage(layerRecipe.gradientFormat());
        param->grad.track(memory, MemoryCategory::gradients);
        for (Tensor* state : {&param->state1, &param->state2}) {
            if (state->size() == 0) continue;
            if (state->storage() != stateFormat) {   // (the optimizer packs it again where it should)
                state->unpack();
                if (stateFormat != Format::fp32)
                    backend.roundArray(stateFormat, state->data(), state->data(),
                                       static_cast<std::size_t>(state->size()), nullptr, nullptr);
                state->setStorage(stateFormat);
            }
            state->track(memory, MemoryCategory::optimizerState);
        }
    }
}

}  // namespace

std::vector<std::string> parameterLayerNames(const ModelSpec& spec)
{
    // The row's names of the stack it builds (tst_models checks that these equal a built
    // model's layerNames()); none for a spec that builds no model.
    try {
        const std::vector<int> w = widthsFor(spec);   // throws for an unknown kind, before its row is read
        return findModelKind(spec.kind)->layerNames(w);
    } catch (const std::invalid_argument&) {
        return {};
    }
}

std::vector<std::string> tapLayerNames(const ModelSpec& spec)
{
    try {
        const std::vector<int> w = widthsFor(spec);
        const ModelKind& kind = *findModelKind(spec.kind);
        return kind.tapNames ? kind.tapNames(w) : kind.layerNames(w);
    } catch (const std::invalid_argument&) {
        return {};
    }
}

std::vector<std::string> parameterLayerNames(const std::string& kind)
{
    return parameterLayerNames(ModelSpec{kind, {}});
}

std::unique_ptr<Model> Model::create(const ModelSpec& spec, std::uint64_t seed)
{
    return std::make_unique<SequentialModel>(spec, seed);
}

}  // namespace plab
