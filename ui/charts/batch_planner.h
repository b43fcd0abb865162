// The batch-size planner: "the largest batch that fits in N GiB" for a precision recipe.
// Memory = a fixed part (weights, fp32 master copies, gradients, optimizer state: the
// engine's memoryFootprint, which builds them with Model::applyRecipe and counts them) plus
// a part per sample (activations kept for backward, Model::activationBytesPerSample, and
// the workspace per sample). Plain arithmetic without widgets, so it is unit-testable.
#pragma once

#include "amp/recipe.h"
#include "nn/model.h"
#include "optim/optimizer.h"
#include "train/memory_check.h"

#include <cstdint>
#include <string>
#include <vector>

namespace plab::ui {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

struct BatchPlanInput {
    std::int64_t parameterBytes = 0;             // MemoryFootprint::fixedBytes()
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

// What the planner needs of one model and optimizer under each preset, computed once by
// the engine (memoryFootprint).
struct PresetFootprint {
    std::string preset;                 // "fp32", "amp-fp16", ...
    std::string displayName;            // "AMP FP16"
    PrecisionRecipe recipe;
    MemoryFootprint memory;
};
struct ModelFootprint {
    ModelSpec spec;
    std::int64_t parameters = 0;
    std::vector<PresetFootprint> presets;   // in PrecisionRecipe::presetNames() order
};
// Throws std::invalid_argument for a bad spec or optimizer (from memoryFootprint).
ModelFootprint modelFootprint(const ModelSpec& spec, const OptimizerConfig& optimizer);

// One row per preset: the largest batch within budgetBytes.
struct PresetPlan {
    std::string displayName;
    BatchPlan plan;
};
// The preset a recipe is, as far as memory goes (compute format, master weights, fp32
// accumulation and softmax; loss scaling takes no memory): "" when it is none of them.
std::string memoryPresetOf(const PrecisionRecipe& recipe);

// One preset of the model: the plan with this workspace per sample.
BatchPlan planPreset(const PresetFootprint& preset, std::int64_t budgetBytes, std::int64_t workspaceBytesPerSample = 0,
                     std::int64_t reservedBytes = 0);
// Every preset of the model with the same workspace per sample.
std::vector<PresetPlan> planPresets(const ModelFootprint& model, std::int64_t budgetBytes,
                                    std::int64_t workspaceBytesPerSample = 0, std::int64_t reservedBytes = 0);

}  // namespace plab::ui
