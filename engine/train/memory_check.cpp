// Memory checked before a run (see memory_check.h).
#include "train/memory_check.h"

#include "files/input_file.h"
#include "nn/layer_ops.h"
#include "nn/model.h"
#include "optim/optimizer.h"

#include <algorithm>
#include <fstream>

namespace plab {

MemoryEstimate estimateRunMemory(const TrainSettings& settings)
{
    const auto model = Model::create(settings.model, 1);
    std::int64_t parameters = 0;
    for (Parameter* p : model->parameters()) parameters += p->value.size();
    const int stateTensors = optimizerStateTensorsFor(settings.optimizer.kind, settings.optimizer.momentum);
    const int copies = 2 + stateTensors + (settings.recipe.masterWeights ? 1 : 0);   // weights, gradients, state, master
    MemoryEstimate e;
    e.fixedBytes = parameters * 4 * copies;
    // 4 bytes an element whatever the format: what the CPU backend holds without packing;
    // with it, 16-bit activations take 2 bytes and the columns come in bounded blocks.
    e.perSampleBytes = packedStorageEnabled()
                           ? model->packedHeldBytesPerSample(settings.recipe)
                           : std::max(model->activationBytesPerSample(settings.recipe),
                                      model->activationBytesPerSample(PrecisionRecipe{}));
    return e;
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
    const std::int64_t largest = e.perSampleBytes > 0 && limitBytes > e.fixedBytes ? (limitBytes - e.fixedBytes) / e.perSampleBytes : 0;
    std::string sentence = "batch " + std::to_string(settings.batch) + " of " + settings.model.kind + " needs at least " +
                           byteSizeText(static_cast<std::uint64_t>(need)) + " (" +
                           byteSizeText(static_cast<std::uint64_t>(e.perSampleBytes)) + " of activations a sample), more than " +
                           limitName + ": ";
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
