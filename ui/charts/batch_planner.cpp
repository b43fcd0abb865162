// Batch-size planning arithmetic (see batch_planner.h).
#include "charts/batch_planner.h"

#include <algorithm>

namespace plab::ui {

BatchPlan planBatch(const BatchPlanInput& input, std::int64_t budgetBytes)
{
    BatchPlan plan;
    plan.fixedBytes = input.parameterBytes + input.reservedBytes;
    plan.perSampleBytes = input.activationBytesPerSample + input.workspaceBytesPerSample;
    const std::int64_t room = budgetBytes - plan.fixedBytes;
    if (room <= 0 || plan.perSampleBytes <= 0) return plan;
    plan.largestBatch = room / plan.perSampleBytes;
    return plan;
}

ModelFootprint modelFootprint(const ModelSpec& spec, const OptimizerConfig& optimizer)
{
    ModelFootprint footprint;
    footprint.spec = spec;
    std::vector<PrecisionRecipe> recipes;
    for (const std::string& name : PrecisionRecipe::presetNames())
        if (const auto recipe = PrecisionRecipe::fromPreset(name)) {
            footprint.presets.push_back({name, PrecisionRecipe::displayName(name), *recipe, {}});
            recipes.push_back(*recipe);
        }
    const std::vector<MemoryFootprint> memory = memoryFootprints(spec, recipes, optimizer);
    for (std::size_t i = 0; i < memory.size(); ++i) footprint.presets[i].memory = memory[i];
    if (!memory.empty()) footprint.parameters = memory.front().parameters;
    return footprint;
}

std::string memoryPresetOf(const PrecisionRecipe& recipe)
{
    for (const std::string& name : PrecisionRecipe::presetNames()) {
        const auto preset = PrecisionRecipe::fromPreset(name);
        if (preset && preset->compute == recipe.compute && preset->masterWeights == recipe.masterWeights &&
            preset->fp32Accumulate == recipe.fp32Accumulate && preset->fp32SensitiveOps == recipe.fp32SensitiveOps)
            return name;
    }
    return {};
}

BatchPlan planPreset(const PresetFootprint& preset, std::int64_t budgetBytes, std::int64_t workspaceBytesPerSample,
                     std::int64_t reservedBytes)
{
    BatchPlanInput input;
    input.parameterBytes = preset.memory.fixedBytes();
    input.activationBytesPerSample = preset.memory.activationBytesPerSample;
    input.workspaceBytesPerSample = workspaceBytesPerSample;
    input.reservedBytes = reservedBytes;
    return planBatch(input, budgetBytes);
}

std::vector<PresetPlan> planPresets(const ModelFootprint& model, std::int64_t budgetBytes,
                                    std::int64_t workspaceBytesPerSample, std::int64_t reservedBytes)
{
    std::vector<PresetPlan> rows;
    for (const auto& preset : model.presets)
        rows.push_back({preset.displayName, planPreset(preset, budgetBytes, workspaceBytesPerSample, reservedBytes)});
    return rows;
}

}  // namespace plab::ui
