// A model's own training defaults (the vit's), which a new run's settings take where its
// JSON names none (settingsFromJson), and what follows from them on typed settings: the
// defaults --help says, the notices that list those settings hold, and the settings panel's
// model change (settings.h).
#include "train/settings.h"

#include "nn/model_kinds.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plab {

namespace {

// Each model row's own defaults, read once as a stored run's settings (a bad row fails loudly
// at the first use): the settings, and the keys where they differ from every model's.
struct OwnDefaults {
    TrainSettings settings;
    std::vector<std::string> keys;
};

const OwnDefaults* ownDefaultsOf(std::string_view kind)
{
    static const std::map<std::string, OwnDefaults, std::less<>> byKind = [] {
        std::map<std::string, OwnDefaults, std::less<>> out;
        for (const ModelKind& k : modelKinds()) {
            nlohmann::json stored =
                k.trainingDefaults.empty() ? nlohmann::json::object() : nlohmann::json::parse(k.trainingDefaults);
            stored["model"] = std::string(k.name);
            OwnDefaults own{settingsFromJson(stored, "model " + std::string(k.name) + "'s defaults",
                                             SettingsReading::stored),
                            {}};
            for (const SettingKey& key : settingKeys())
                if (std::string_view(key.key) != "model" &&
                    settingText(own.settings, key.key) != settingText(defaultSettings(), key.key))
                    own.keys.emplace_back(key.key);
            std::sort(own.keys.begin(), own.keys.end());   // as the notices list them
            out.emplace(std::string(k.name), std::move(own));
        }
        return out;
    }();
    const auto it = byKind.find(kind);
    return it == byKind.end() ? nullptr : &it->second;
}

}  // namespace

const TrainSettings& defaultSettings()
{
    static const TrainSettings defaults =
        settingsFromJson(nlohmann::json::object(), "the defaults", SettingsReading::stored);
    return defaults;
}

std::vector<std::string> modelDefaultKeys(std::string_view kind)
{
    const OwnDefaults* own = ownDefaultsOf(kind);
    return own ? own->keys : std::vector<std::string>{};
}

const TrainSettings& modelDefaultSettings(std::string_view kind)
{
    const OwnDefaults* own = ownDefaultsOf(kind);
    return own ? own->settings : defaultSettings();
}

std::string settingDefaultsText(const SettingKey& key)
{
    std::string text = settingText(defaultSettings(), key.key);
    for (const ModelKind& kind : modelKinds())
        for (const std::string& k : modelDefaultKeys(kind.name))
            if (k == key.key)
                text += (text.empty() ? "" : "; ") + std::string(kind.name) + ": " +
                        settingText(modelDefaultSettings(kind.name), key.key);
    return text;
}

TrainSettings followModelDefaults(const TrainSettings& s, std::string_view to)
{
    TrainSettings out = s;
    const TrainSettings &was = modelDefaultSettings(s.model.kind), &next = modelDefaultSettings(to);
    out.model = ModelSpec{std::string(to), next.model.widths};
    std::vector<std::string> keys = modelDefaultKeys(s.model.kind);
    for (const std::string& key : modelDefaultKeys(to)) keys.push_back(key);
    const bool weights = !s.initWeights.empty();
    for (const std::string& key : keys)
        if (key != "widths" && !(weights && key == "zero_init_residual") && settingText(s, key) == settingText(was, key))
            copySetting(key, next, out);
    // Not a label smoothing the recipe refuses (a loss kept in 16 bits): it stays as it was.
    if (out.labelSmoothing != s.labelSmoothing && !labelSmoothingProblem(out.recipe, out.model, out.labelSmoothing).empty())
        out.labelSmoothing = s.labelSmoothing;
    return out;
}

std::string modelDefaultsHeld(const TrainSettings& s)
{
    std::string text;
    for (const std::string& key : modelDefaultKeys(s.model.kind))
        if (const std::string value = settingText(s, key); value == settingText(modelDefaultSettings(s.model.kind), key))
            text += (text.empty() ? "" : ", ") + key + " " + value;
    return text;
}

}  // namespace plab
