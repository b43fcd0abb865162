// The recipe in the form records and reports write: every switch, the loss scaling and the
// quantization spelled out, per-layer precision as {"conv1": "fp32", ...}.
#include "train/settings.h"

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

json lossScalingToJson(const LossScaling& l)
{
    json j;
    switch (l.mode) {
    case LossScaleMode::off: j["mode"] = "off"; break;
    case LossScaleMode::fixed: j["mode"] = "static"; break;
    case LossScaleMode::dynamic: j["mode"] = "dynamic"; break;
    }
    j["init_scale"] = l.initScale;
    j["growth_factor"] = l.growthFactor;
    j["backoff_factor"] = l.backoffFactor;
    j["growth_interval"] = l.growthInterval;
    j["min_scale"] = l.minScale ? json(*l.minScale) : json(nullptr);
    j["max_scale"] = l.maxScale ? json(*l.maxScale) : json(nullptr);
    return j;
}

json quantizationToJson(const Quantization& q)
{
    return {{"mode", std::string(quantModeName(q.mode))},
            {"forward_format", std::string(miniFormatInfo(q.forwardFormat()).name)},
            {"gradient_format", std::string(miniFormatInfo(q.gradientFormat()).name)},
            {"hybrid", q.hybrid},
            {"amax_history", q.amaxHistory},
            {"amax_algorithm", std::string(amaxAlgorithmName(q.algorithm))},
            {"margin", q.margin},
            {"mx_scale", std::string(mxScaleRoundingName(q.mxScale))},
            {"description", q.describe()}};
}

namespace {

// Per-layer precision as {"conv1": "fp32", ...} (empty: every layer follows the recipe).
json layersToJson(const std::vector<LayerPrecision>& layers)
{
    json j = json::object();
    for (const auto& l : layers) j[l.layer] = l.precision;
    return j;
}

}  // namespace

json recipeToJson(const PrecisionRecipe& r)
{
    return {{"preset", r.preset},
            {"custom", !r.matchesPreset()},
            {"display_name", PrecisionRecipe::displayName(r.preset)},
            {"compute", std::string(formatName(r.compute))},
            {"storage", std::string(formatName(r.storage()))},
            {"master_weights", r.masterWeights},
            {"optimizer_state", std::string(formatName(r.optimizerStateFormat()))},
            {"update_rounding", std::string(updateRoundingName(r.updateRounding))},
            {"fp32_accumulate", r.fp32Accumulate},
            {"fp32_sensitive_ops", r.fp32SensitiveOps},
            {"loss_scaling", lossScalingToJson(r.lossScaling)},
            {"quantization", quantizationToJson(r.quantization)},
            {"layers", layersToJson(r.layers)}};
}

}  // namespace plab
