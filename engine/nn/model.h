// Models (mlp, deep-mlp, small-cnn, seed-cnn, vit, autoencoder) as stacks of layers, with one training step's
// forward and backward under a precision recipe.
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"
#include "telemetry/telemetry.h"
#include "tensor/memory.h"
#include "tensor/tensor.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plab {

class ComputeBackend;

struct ModelSpec {
    std::string kind = "small-cnn";   // a row of modelKinds() (nn/model_kinds.h)
    // Two channel / width overrides; empty keeps the row's defaults.
    std::vector<int> widths;
    bool operator==(const ModelSpec&) const = default;
};

// The layers with parameters of a model, in model order ("conv1", "conv2", "fc1"), without
// building it: what per-layer precision may name. Empty for an unknown kind or bad widths.
std::vector<std::string> parameterLayerNames(const ModelSpec& spec);
// The same for a kind's default widths.
std::vector<std::string> parameterLayerNames(const std::string& kind);
// Every layer name the model's telemetry taps (besides "input" and "loss"): its layers with
// weights, and a transformer's other rounding sites (block1.attn.scores, block1.residual, ...).
std::vector<std::string> tapLayerNames(const ModelSpec& spec);

// What a layer needs to know during one step.
struct StepContext {
    const PrecisionRecipe* recipe = nullptr;
    ComputeBackend* backend = nullptr;      // the CPU backend unless a plugin is loaded
    TelemetryCollector* telemetry = nullptr;   // may be null (evaluation)
    MemoryAccountant* memory = nullptr;        // may be null
    bool training = true;
    // fp32 work buffers the layers of a step share (a packed activation is
    // computed or widened here), reused from step to step; null: each layer keeps its own.
    std::array<Tensor, 2>* work = nullptr;
    // Label smoothing of the training loss (0: none): the cross-entropy's targets are
    // (1 - e) onehot + e / classes, as torch.nn.functional.cross_entropy's label_smoothing.
    float labelSmoothing = 0.0f;
    // Set when the run is asked to stop (null: never): a step checks it between layers and
    // ends with StepStopped, so a stop never waits for a long step to finish.
    const std::atomic<bool>* stop = nullptr;
};

// Thrown by trainStep and evaluate between two layers once ctx.stop is set: the step is
// abandoned (nothing was updated: the optimizer runs after trainStep returns).
struct StepStopped {};

inline void stopIfAsked(const StepContext& ctx)
{
    if (ctx.stop && ctx.stop->load(std::memory_order_relaxed)) throw StepStopped{};
}

struct StepOutput {
    float loss = 0.0f;          // mean cross-entropy (or squared error) of the batch, unscaled, as computed
    std::int64_t correct = 0;   // argmax(logits) == label; 0 for a model that reconstructs
};

class Model {
public:
    virtual ~Model() = default;

    // Throws std::invalid_argument with one clear sentence for a bad spec.
    // Weights are initialised like PyTorch's defaults (Kaiming-uniform, a = sqrt(5)),
    // from a generator seeded with `seed`.
    static std::unique_ptr<Model> create(const ModelSpec& spec, std::uint64_t seed);

    virtual const ModelSpec& spec() const = 0;
    virtual std::vector<Parameter*> parameters() = 0;
    virtual std::vector<std::string> layerNames() const = 0;   // in model order

    // Puts the weights into the form `recipe` needs, where `backend` keeps its tensors:
    // creates or drops the fp32 master copies, re-rounds or promotes the stored weights and
    // optimizer state, sizes the gradients. Called at the start and on every mid-run
    // recipe change; trainStep and evaluate need the same backend in their context.
    virtual void applyRecipe(const PrecisionRecipe& recipe, MemoryAccountant* memory, ComputeBackend& backend) = 0;

    // images: (N, 1, 28, 28) fp32 in [0, 1], in host memory; labels: N values 0..9 (an
    // autoencoder's target is the image). Forward, loss * lossScale, backward; leaves S * dL/dw in every Parameter::grad,
    // rounded as the recipe says. Taps telemetry at every rounding site.
    virtual StepOutput trainStep(const Tensor& images, const std::vector<std::uint8_t>& labels,
                                 float lossScale, StepContext& ctx) = 0;

    // Forward only; loss is the batch mean (correct: 0 for a model that reconstructs).
    virtual StepOutput evaluate(const Tensor& images, const std::vector<std::uint8_t>& labels,
                                StepContext& ctx) = 0;

    // The last layer's outputs for at most 256 images (N x 10 logits, or N x 784 pixels of a
    // reconstruction), forward only, as evaluation computes them.
    virtual std::vector<float> outputs(const Tensor& images, StepContext& ctx) = 0;

    // Bytes per sample of activations kept for backward, in the recipe's storage format,
    // for the batch-size planner.
    virtual std::int64_t activationBytesPerSample(const PrecisionRecipe& recipe) const = 0;
    // What the CPU backend holds per sample with 16-bit packing on, a lower bound: a layer
    // whose storage is fp16 or bf16 (quantised or not: FP8 codes and MX blocks pack around
    // them) counts its output packed (2 bytes an element; a linear layer's, held in fp32, is
    // small) and lowers its input in bounded blocks; any other keeps 4-byte values, or its
    // recipe's bytes where those are more.
    virtual std::int64_t packedHeldBytesPerSample(const PrecisionRecipe& recipe) const = 0;
};

}  // namespace plab
