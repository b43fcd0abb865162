// A recorded recipe in words: its preset's name and each switch that departs from the preset
// (the comparison's labels, the report). See recipe_phrase.h.
#include "report/recipe_phrase.h"

#include "amp/recipe.h"
#include "json/json_input.h"
#include "report/run_comparison.h"
#include "train/settings.h"

#include <vector>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

std::string optimizerStateByRule(const json& recipe)
{
    return recipe.value("master_weights", true) ? std::string("fp32")
                                                : jsonTextOr(recipe, "storage", jsonTextOr(recipe, "compute", "fp32"));
}

namespace {

std::string lossScalingPhrase(const json& ls)
{
    const std::string mode = jsonTextOr(ls, "mode", "off");
    if (mode == "off") return "without loss scaling";
    if (mode == "static") return "with static loss scale " + settingValueText(ls.value("init_scale", json(1.0)));
    return "with dynamic loss scaling";
}

}  // namespace

std::string recipePhraseOf(const json& recipe)
{
    const std::string preset = jsonTextOr(recipe, "preset", "custom");
    std::string phrase = jsonTextOr(recipe, "display_name", PrecisionRecipe::displayName(preset));
    const auto base = PrecisionRecipe::fromPreset(preset);
    if (!base || !recipe.value("custom", false)) return phrase;
    const json ref = recipeToJson(*base);
    std::vector<std::string> parts;
    if (recipe.value("compute", json()) != ref["compute"])
        parts.push_back(jsonTextOr(recipe, "compute") + " compute");
    if (recipe.value("master_weights", json()) != ref["master_weights"])
        parts.push_back(recipe.value("master_weights", true) ? "with fp32 master weights" : "without master weights");
    // The state named where it departs from its parameter's dtype (PyTorch's rule).
    const std::string byRule = optimizerStateByRule(recipe);
    if (const std::string state = jsonTextOr(recipe, "optimizer_state", byRule); state != byRule)
        parts.push_back(state + " optimizer state");
    // Records before update rounding was a setting rounded to nearest.
    if (const std::string rounding = jsonTextOr(recipe, "update_rounding", "nearest"); rounding == "stochastic")
        parts.push_back("with stochastic update rounding");
    else if (rounding == "kahan")
        parts.push_back("with Kahan-compensated updates");
    if (recipe.value("fp32_accumulate", json()) != ref["fp32_accumulate"])
        parts.push_back(recipe.value("fp32_accumulate", true) ? "with fp32 accumulation"
                                                              : "accumulating in " + jsonTextOr(recipe, "compute"));
    if (recipe.value("fp32_sensitive_ops", json()) != ref["fp32_sensitive_ops"])
        parts.push_back(recipe.value("fp32_sensitive_ops", true) ? "with fp32 softmax/loss"
                                                                 : "softmax/loss in " + jsonTextOr(recipe, "storage"));
    const json ls = recipe.value("loss_scaling", json::object());
    if (ls != ref["loss_scaling"]) {
        if (ls.value("mode", json()) != ref["loss_scaling"]["mode"] || jsonTextOr(ls, "mode") == "static")
            parts.push_back(lossScalingPhrase(ls));
        else
            parts.push_back("with custom loss scaling");
    }
    // Records older than quantisation have none: off, as every preset of theirs.
    const json q = recipe.value("quantization", ref["quantization"]);
    if (q != ref["quantization"]) parts.push_back("with " + jsonTextOr(q, "description", "quantised operands"));
    // Per-layer precision (records before it have none).
    const json layers = recipe.value("layers", json::object());
    if (layers.is_object() && !layers.empty()) {
        std::string each;
        for (const auto& [layer, precision] : layers.items())
            each += (each.empty() ? "" : ", ") + layer + " in " + (precision.is_string() ? precision.get<std::string>() : "?");
        parts.push_back("with " + each);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) phrase += (i == 0 ? " " : ", ") + parts[i];
    return phrase;
}

}  // namespace plab
