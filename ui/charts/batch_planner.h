// The batch-size planner: "the largest batch that fits in N GiB" for a precision recipe,
// from the engine's memory accounting. Memory = a fixed part (weights in the compute or
// storage format, fp32 master copies, gradients, optimizer state, from the parameter
// count and the recipe's storage formats, as Model::applyRecipe tracks them) plus a part
// per sample (activations kept for backward, Model::activationBytesPerSample, and the
// workspace per sample). Plain arithmetic without widgets, so it is unit-testable.
#pragma once

#include "amp/recipe.h"
#include "nn/model.h"
#include "optim/optimizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace plab::ui {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Bytes per parameter element in each fixed category, as applyRecipe() stores them.
struct ParameterBytes {
    int weights = 4;          // the weights the layers compute with (or the only copy)
    int masterWeights = 0;    // fp32 master copy (with master weights)
    int gradients = 4;        // fp32 next to master weights, else the storage format
    int optimizerState = 8;   // per state tensor the storage (or fp32) bytes, times tensors
    int total() const { return weights + masterWeights + gradients + optimizerState; }
};

// optimizerStateTensors: Adam keeps 2 (moments), SGD with momentum 1, plain SGD 0
// (the engine's optimizerStateTensorsFor).
ParameterBytes parameterBytesFor(const PrecisionRecipe& recipe, int optimizerStateTensors);
using plab::optimizerStateTensorsFor;

struct BatchPlanInput {
    std::int64_t parameters = 0;                 // elements in all weights and biases
    ParameterBytes perParameter;
    std::int64_t activationBytesPerSample = 0;   // Model::activationBytesPerSample(recipe)
    std::int64_t workspaceBytesPerSample = 0;    // scratch that grows with the batch
    std::int64_t reservedBytes = 0;              // fixed workspace / framework reserve
};

struct BatchPlan {
    std::int64_t fixedBytes = 0;        // parameters' categories + reserve
    std::int64_t perSampleBytes = 0;    // activations + workspace per sample
    std::int64_t largestBatch = 0;      // 0 when not even the fixed part fits
    std::int64_t bytesAt(std::int64_t batch) const { return fixedBytes + perSampleBytes * batch; }
};

// The largest batch b with fixed + b * perSample <= budgetBytes.
BatchPlan planBatch(const BatchPlanInput& input, std::int64_t budgetBytes);

// What the planner needs of one model under each preset, computed once from the engine
// (Model::create, parameters(), activationBytesPerSample()).
struct PresetFootprint {
    std::string preset;                 // "fp32", "amp-fp16", ...
    std::string displayName;            // "AMP FP16"
    PrecisionRecipe recipe;
    std::int64_t activationBytesPerSample = 0;
};
struct ModelFootprint {
    ModelSpec spec;
    std::int64_t parameters = 0;
    std::vector<PresetFootprint> presets;   // in PrecisionRecipe::presetNames() order
};
// Throws std::invalid_argument for a bad spec (from Model::create).
ModelFootprint modelFootprint(const ModelSpec& spec);

// One row per preset: the largest batch within budgetBytes.
struct PresetPlan {
    std::string displayName;
    BatchPlan plan;
};
// The preset a recipe is, as far as memory goes (compute format, master weights, fp32
// accumulation and softmax; loss scaling takes no memory): "" when it is none of them.
std::string memoryPresetOf(const PrecisionRecipe& recipe);

// One preset of the model: the plan with this workspace per sample.
BatchPlan planPreset(const ModelFootprint& model, const PresetFootprint& preset, std::int64_t budgetBytes,
                     int optimizerStateTensors, std::int64_t workspaceBytesPerSample = 0, std::int64_t reservedBytes = 0);
// Every preset of the model with the same workspace per sample.
std::vector<PresetPlan> planPresets(const ModelFootprint& model, std::int64_t budgetBytes,
                                    int optimizerStateTensors, std::int64_t workspaceBytesPerSample = 0,
                                    std::int64_t reservedBytes = 0);

}  // namespace plab::ui
