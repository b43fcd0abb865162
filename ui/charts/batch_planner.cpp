// Batch-size planning arithmetic (see batch_planner.h).
#include "charts/batch_planner.h"

#include <algorithm>

namespace plab::ui {

ParameterBytes parameterBytesFor(const PrecisionRecipe& recipe, int optimizerStateTensors)
{
    // Mirrors Model::applyRecipe: with master weights, the layers' copy is in the compute
    // format next to an fp32 master and fp32 gradients; without, they are in the storage
    // format (fp32 for fp32 and tf32 computes). The state takes optimizerStateFormat().
    ParameterBytes b;
    const int storage = formatInfo(recipe.storage()).storageBytes;
    if (recipe.masterWeights) {
        b.weights = formatInfo(recipe.compute).storageBytes;
        b.masterWeights = 4;
        b.gradients = 4;
    } else {
        b.weights = storage;
        b.masterWeights = 0;
        b.gradients = storage;
    }
    // The state in its own format (fp32 beside masters, storage without, unless set apart).
    b.optimizerState = formatInfo(recipe.optimizerStateFormat()).storageBytes * optimizerStateTensors;
    return b;
}

BatchPlan planBatch(const BatchPlanInput& input, std::int64_t budgetBytes)
{
    BatchPlan plan;
    plan.fixedBytes = input.parameters * input.perParameter.total() + input.reservedBytes;
    plan.perSampleBytes = input.activationBytesPerSample + input.workspaceBytesPerSample;
    const std::int64_t room = budgetBytes - plan.fixedBytes;
    if (room <= 0 || plan.perSampleBytes <= 0) return plan;
    plan.largestBatch = room / plan.perSampleBytes;
    return plan;
}

ModelFootprint modelFootprint(const ModelSpec& spec)
{
    ModelFootprint footprint;
    footprint.spec = spec;
    const auto model = Model::create(spec, 1);
    for (Parameter* p : model->parameters()) footprint.parameters += p->value.size();
    for (const std::string& name : PrecisionRecipe::presetNames()) {
        const auto recipe = PrecisionRecipe::fromPreset(name);
        if (!recipe) continue;
        footprint.presets.push_back(
            {name, PrecisionRecipe::displayName(name), *recipe, model->activationBytesPerSample(*recipe)});
    }
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

BatchPlan planPreset(const ModelFootprint& model, const PresetFootprint& preset, std::int64_t budgetBytes,
                     int optimizerStateTensors, std::int64_t workspaceBytesPerSample, std::int64_t reservedBytes)
{
    BatchPlanInput input;
    input.parameters = model.parameters;
    input.perParameter = parameterBytesFor(preset.recipe, optimizerStateTensors);
    input.activationBytesPerSample = preset.activationBytesPerSample;
    input.workspaceBytesPerSample = workspaceBytesPerSample;
    input.reservedBytes = reservedBytes;
    return planBatch(input, budgetBytes);
}

std::vector<PresetPlan> planPresets(const ModelFootprint& model, std::int64_t budgetBytes,
                                    int optimizerStateTensors, std::int64_t workspaceBytesPerSample,
                                    std::int64_t reservedBytes)
{
    std::vector<PresetPlan> rows;
    for (const auto& preset : model.presets)
        rows.push_back({preset.displayName,
                        planPreset(model, preset, budgetBytes, optimizerStateTensors, workspaceBytesPerSample, reservedBytes)});
    return rows;
}

}  // namespace plab::ui
