// The memory a run will need, checked before its first step: a batch the
// machine cannot hold is refused with the estimate and the largest batch that fits,
// instead of growing until the kernel kills the process with no message.
#pragma once

#include "tensor/memory.h"
#include "train/settings.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace plab {

// What a run's parameters hold before its first step, as the engine itself builds them: a
// model of the spec with the recipe applied (Model::applyRecipe) and the optimizer's state
// made (Optimizer::prepareState), counted by a MemoryAccountant. The memory check and the
// app's batch planner read this instead of re-stating the recipe's rules.
struct MemoryFootprint {
    std::int64_t parameters = 0;                           // elements in all weights and biases
    std::array<std::int64_t, kMemoryCategories> bytes{};   // accounted (the formats' bytes): weights, master
                                                           // weights, gradients, optimizer state
    std::int64_t heldElements = 0;                         // elements of all those tensors (the CPU holds 4 bytes each)
    std::int64_t activationBytesPerSample = 0;             // Model::activationBytesPerSample(recipe)
    // What the CPU backend holds of them per sample: 4 bytes an element without 16-bit
    // packing (the larger of this recipe's count and fp32's), Model::packedHeldBytesPerSample
    // with it (packsStorageOn: on the CPU by default, unless PLAB_PACKED_STORAGE=off).
    std::int64_t heldActivationBytesPerSample = 0;
    std::int64_t fixedBytes() const;                       // the sum of `bytes`
    std::int64_t bytesOf(MemoryCategory c) const { return bytes[static_cast<std::size_t>(c)]; }
};
// Throws std::invalid_argument for a bad spec or optimizer.
MemoryFootprint memoryFootprint(const ModelSpec& spec, const PrecisionRecipe& recipe, const OptimizerConfig& optimizer);
// The same for several recipes, applied in turn to one model as a recipe change applies
// them during a run (one model built instead of one a recipe).
std::vector<MemoryFootprint> memoryFootprints(const ModelSpec& spec, const std::vector<PrecisionRecipe>& recipes,
                                              const OptimizerConfig& optimizer);

struct MemoryEstimate {
    std::int64_t fixedBytes = 0;       // weights, gradients, optimizer state, master copies
                                       // (and gradient accumulation's buffers)
    std::int64_t perSampleBytes = 0;   // activations kept for backward, per sample
    // Gradient accumulation (grad_accum_steps): the batch runs in this many micro-batches,
    // one at a time, so only one micro-batch's activations are held (accumulationParts).
    int parts = 1;
    std::int64_t bytesAt(std::int64_t batch) const;
    std::int64_t samplesHeldAt(std::int64_t batch) const;   // the largest micro-batch of `batch`
};

// From the engine's own accounting (memoryFootprint, activationBytesPerSample): every
// tensor at 4 bytes an element, as the CPU backend holds them without 16-bit packing (with
// packing, packsStorageOn, activations as Model::packedHeldBytesPerSample counts them). A
// lower bound of what the process takes: the check refuses only runs that cannot fit,
// never one that would.
MemoryEstimate estimateRunMemory(const TrainSettings& settings);
// The same for each of `recipes` in place of the settings' own (one model built).
std::vector<MemoryEstimate> estimateRunMemories(const TrainSettings& settings, const std::vector<PrecisionRecipe>& recipes);

// The largest batch whose estimate fits in limitBytes (with accumulation, the largest
// micro-batch that fits times the parts), 0 when not even the fixed part does:
// what checkRunMemory admits and names, and what the app's batch planner shows.
std::int64_t largestBatchWithin(const MemoryEstimate& estimate, std::int64_t limitBytes);

// Each preset recipe (PrecisionRecipe::presetNames(), in that order) in place of the
// settings' own, estimated as the memory check estimates a run: the batch planner's rows.
struct PresetEstimate {
    std::string preset;        // "amp-fp16"
    std::string displayName;   // "AMP FP16"
    PrecisionRecipe recipe;
    MemoryEstimate estimate;
};
// Throws std::invalid_argument for a bad model spec or optimizer.
std::vector<PresetEstimate> presetEstimates(const TrainSettings& settings);

// The memory this machine has free for a run: MemAvailable of /proc/meminfo, 0 when unknown.
std::int64_t availableMemoryBytes();

// Empty, or one sentence refusing the run: its estimate exceeds `limitBytes` (the
// available memory, or --memory-limit when smaller), with the largest batch that fits.
// `limitName` says which limit ("the 23.4 GiB this machine has available").
std::string checkRunMemory(const TrainSettings& settings, std::int64_t limitBytes, const std::string& limitName);

// Checks against the available memory and, when > 0, `memoryLimitBytes`. Used by plab
// train, sweep, lesson and the app before a run's first step.
std::string checkRunMemory(const TrainSettings& settings, std::int64_t memoryLimitBytes = 0);

}  // namespace plab
