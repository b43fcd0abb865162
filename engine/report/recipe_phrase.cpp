// A recipe in words: its preset's name and each switch that departs from the preset (the
// comparison's labels, the report). See recipe_phrase.h.
#include "report/recipe_phrase.h"

#include "report/run_comparison.h"
#include "train/settings.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

namespace plab {

std::string lossScaleModeName(LossScaleMode mode)
{
    switch (mode) {
    case LossScaleMode::off: return "off";
    case LossScaleMode::fixed: return "static";
    case LossScaleMode::dynamic: return "dynamic";
    }
    return "off";
}

namespace {

std::string lossScalingPhrase(const LossScaling& ls)
{
    if (ls.mode == LossScaleMode::off) return "without loss scaling";
    if (ls.mode == LossScaleMode::fixed) return "with static loss scale " + settingValueText(nlohmann::json(ls.initScale));
    return "with dynamic loss scaling";
}

std::string name(Format f) { return std::string(formatName(f)); }

}  // namespace

bool recipePhraseSays(std::string_view settingKey)
{
    static constexpr std::string_view said[] = {"recipe", "compute", "master_weights", "optimizer_state", "update_rounding",
                                                "fp32_accumulate", "fp32_sensitive_ops", "attention_scores"};
    if (std::find(std::begin(said), std::end(said), settingKey) != std::end(said)) return true;
    const SettingKey* key = findSettingKey(settingKey);
    return key && key->role == SettingRole::scalesLoss;
}

std::string recipePhraseOf(const PrecisionRecipe& r)
{
    std::string phrase = PrecisionRecipe::displayName(r.preset);
    const auto base = PrecisionRecipe::fromPreset(r.preset);
    if (!base || r.matchesPreset()) return phrase;
    std::vector<std::string> parts;
    if (r.compute != base->compute) parts.push_back(name(r.compute) + " compute");
    if (r.masterWeights != base->masterWeights)
        parts.push_back(r.masterWeights ? "with fp32 master weights" : "without master weights");
    // The state named where it departs from its parameter's dtype (PyTorch's rule: fp32
    // beside master weights, else the storage format).
    const Format byRule = r.masterWeights ? Format::fp32 : r.storage();
    if (r.optimizerStateFormat() != byRule) parts.push_back(name(r.optimizerStateFormat()) + " optimizer state");
    if (r.updateRounding == UpdateRounding::stochastic) parts.push_back("with stochastic update rounding");
    else if (r.updateRounding == UpdateRounding::kahan) parts.push_back("with Kahan-compensated updates");
    if (r.fp32Accumulate != base->fp32Accumulate)
        parts.push_back(r.fp32Accumulate ? "with fp32 accumulation" : "accumulating in " + name(r.compute));
    if (r.fp32SensitiveOps != base->fp32SensitiveOps)
        parts.push_back(r.fp32SensitiveOps ? "with fp32 softmax/loss" : "softmax/loss in " + name(r.storage()));
    if (r.fp32AttentionScores != base->fp32AttentionScores)
        parts.push_back(r.fp32AttentionScores ? "with fp32 attention scores" : "attention scores in " + name(r.storage()));
    if (r.lossScaling != base->lossScaling) {
        if (r.lossScaling.mode != base->lossScaling.mode || r.lossScaling.mode == LossScaleMode::fixed)
            parts.push_back(lossScalingPhrase(r.lossScaling));
        else
            parts.push_back("with custom loss scaling");
    }
    if (r.quantization != base->quantization) parts.push_back("with " + r.quantization.describe());
    // Per-layer precision, by layer name.
    if (!r.layers.empty()) {
        std::vector<LayerPrecision> layers = r.layers;
        std::sort(layers.begin(), layers.end(), [](const auto& a, const auto& b) { return a.layer < b.layer; });
        std::string each;
        for (const LayerPrecision& l : layers) {
            // "fc1 in mxfp4 on its forward pass only" for "mxfp4:forward".
            const std::string own = l.passes() == QuantPasses::both ? l.precision
                                                                    : std::string(l.base()) + " on its " +
                                                                          std::string(quantPassesName(l.passes())) + " pass only";
            each += (each.empty() ? "" : ", ") + l.layer + " in " + own;
        }
        parts.push_back("with " + each);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) phrase += (i == 0 ? " " : ", ") + parts[i];
    return phrase;
}

}  // namespace plab
