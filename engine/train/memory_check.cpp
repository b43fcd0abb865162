// Memory checked before a run (see memory_check.h).
#include "train/memory_check.h"

#include "backend/backend.h"
#include "files/input_file.h"
#include "nn/layer_ops.h"
#include "nn/model.h"
#include "optim/grad_accumulation.h"
#include "optim/optimizer.h"

#include <algorithm>
#include <fstream>
#include <numeric>

namespace plab {

std::int64_t MemoryFootprint::fixedBytes() const { return std::accumulate(bytes.begin(), bytes.end(), std::int64_t{0}); }

std::vector<MemoryFootprint> memoryFootprints(const ModelSpec& spec, const std::vector<PrecisionRecipe>& recipes,
                                              const OptimizerConfig& optimizerConfig)
{
    const auto optimizer = Optimizer::create(optimizerConfig);
    const auto backend = createCpuBackend(1);
    MemoryAccountant memory;   // outlives the model, whose tensors it counts
    const auto model = Model::create(spec, 1);
    std::vector<MemoryFootprint> footprints;
    for (const PrecisionRecipe& recipe : recipes) {
        model->applyRecipe(recipe, &memory, *backend);
        optimizer->prepareState(model->parameters(), recipe, &memory, *backend);
        MemoryFootprint& f = footprints.emplace_back();
        for (const Parameter* p : model->parameters()) {
            f.parameters += p->stored().size();
            for (const Tensor* t : {&p->master, &p->value, &p->grad, &p->state1, &p->state2}) f.heldElements += t->size();
        }
        f.bytes = memory.snapshot().live;
        f.activationBytesPerSample = model->activationBytesPerSample(recipe);
        f.heldActivationBytesPerSample =
            packsStorageOn(*backend)
                ? model->packedHeldBytesPerSample(recipe)
                : std::max(f.activationBytesPerSample, model->activationBytesPerSample(PrecisionRecipe{}));
    }
    return footprints;
}

MemoryFootprint memoryFootprint(const ModelSpec& spec, const PrecisionRecipe& recipe, const OptimizerConfig& optimizer)
{
    return memoryFootprints(spec, {recipe}, optimizer).front();
}

std::vector<MemoryEstimate> estimateRunMemories(const TrainSettings& settings, const std::vector<PrecisionRecipe>& recipes)
{
    std::vector<MemoryEstimate> out;
    for (const MemoryFootprint& footprint : memoryFootprints(settings.model, recipes, settings.optimizer)) {
        MemoryEstimate& e = out.emplace_back();
        e.fixedBytes = footprint.heldElements * static_cast<std::int64_t>(sizeof(float));
        e.perSampleBytes = footprint.heldActivationBytesPerSample;
        if (settings.gradAccumSteps > 1) {
            // One buffer per parameter, 4 bytes an element as the CPU holds them (Trainer::
            // accumulateMicroBatches), and one micro-batch's activations at a time.
            e.parts = settings.gradAccumSteps;
            e.fixedBytes += footprint.parameters * static_cast<std::int64_t>(sizeof(float));
        }
    }
    return out;
}

std::int64_t MemoryEstimate::samplesHeldAt(std::int64_t batch) const
{
    const std::int64_t n = accumulationParts(batch, parts);
    return accumulationPartStart(batch, n, 1) + (batch % n != 0 ? 1 : 0);
}

std::int64_t MemoryEstimate::bytesAt(std::int64_t batch) const
{
    return fixedBytes + perSampleBytes * samplesHeldAt(batch);
}

MemoryEstimate estimateRunMemory(const TrainSettings& settings)
{
    return estimateRunMemories(settings, {settings.recipe}).front();
}

std::int64_t largestBatchWithin(const MemoryEstimate& e, std::int64_t limitBytes)
{
    if (e.perSampleBytes <= 0 || limitBytes <= e.fixedBytes) return 0;
    return (limitBytes - e.fixedBytes) / e.perSampleBytes * e.parts;
}

std::vector<PresetEstimate> presetEstimates(const TrainSettings& settings)
{
    std::vector<PresetEstimate> rows;
    std::vector<PrecisionRecipe> recipes;
    for (const std::string& name : PrecisionRecipe::presetNames())
        if (const auto recipe = PrecisionRecipe::fromPreset(name)) {
            rows.push_back({name, PrecisionRecipe::displayName(name), *recipe, {}});
            recipes.push_back(*recipe);
        }
    const std::vector<MemoryEstimate> estimates = estimateRunMemories(settings, recipes);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i].estimate = estimates[i];
    return rows;
}

std::int64_t availableMemoryBytes()
{
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::int64_t value = 0;
    std::string unit;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return value * 1024;
    }
    return 0;
}

std::string checkRunMemory(const TrainSettings& settings, std::int64_t limitBytes, const std::string& limitName)
{
    if (limitBytes <= 0) return {};
    const MemoryEstimate e = estimateRunMemory(settings);
    const std::int64_t need = e.bytesAt(settings.batch);
    if (need <= limitBytes) return {};
    const std::int64_t largest = largestBatchWithin(e, limitBytes);
    std::string sentence = "batch " + std::to_string(settings.batch) + " of " + settings.model.kind + " needs at least " +
                           byteSizeText(static_cast<std::uint64_t>(need)) + " (" +
                           byteSizeText(static_cast<std::uint64_t>(e.perSampleBytes)) + " of activations a sample" +
                           (e.parts > 1 ? ", " + std::to_string(e.samplesHeldAt(settings.batch)) + " samples of a micro-batch at a time" : "") +
                           "), more than " + limitName + ": ";
    sentence += largest > 0 ? "the largest batch that fits is " + std::to_string(largest)
                            : "not even the weights fit";
    return sentence;
}

std::string checkRunMemory(const TrainSettings& settings, std::int64_t memoryLimitBytes)
{
    if (settings.backend == "cuda") return {};   // device memory: the backend's own planner says (docs/CUDA.md)
    const std::int64_t available = availableMemoryBytes();
    if (memoryLimitBytes > 0 && (available <= 0 || memoryLimitBytes < available))
        return checkRunMemory(settings, memoryLimitBytes, "--memory-limit " + byteSizeText(static_cast<std::uint64_t>(memoryLimitBytes)));
    return checkRunMemory(settings, available,
                          "the " + byteSizeText(static_cast<std::uint64_t>(available)) + " this machine has available");
}

}  // namespace plab
