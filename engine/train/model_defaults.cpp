// A model's own training defaults (the vit's), which a new run's settings take where its
// patch names none, and what follows from them: the notices that list them, and the
// settings panel's model change (settings.h).
#include "train/settings.h"

#include "error.h"
#include "nn/model_kinds.h"

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

// The model a patch names (every model's default where it names none or no text: the
// reader then says what is wrong).
std::string patchModel(const json& patch)
{
    const auto it = patch.find("model");
    return it != patch.end() && it->is_string() ? it->get<std::string>() : TrainSettings{}.model.kind;
}

// Whether settings name initial weights from a file (which give every weight).
bool givesWeights(const json& settings)
{
    const auto w = settings.find("init_weights");
    return w != settings.end() && w->is_string() && !w->get<std::string>().empty();
}

// Whether the settings' recipe refuses label smoothing e (labelSmoothingProblem: a loss kept
// in 16 bits), read from what of them can be read (a refused learning rate says nothing
// about the loss); false where not even that can (their own problem is reported elsewhere).
bool refusesSmoothing(const json& settings, double e)
{
    try {
        const TrainSettings s = storedSettingsUnchecked(readableSettings(settings), "the model's defaults");
        return !labelSmoothingProblem(s.recipe, s.model, e).empty();
    } catch (const InputError&) {
        return false;
    }
}

// The patch's model's own defaults that it leaves to them. Not the zero-initialised branches
// beside initial weights from a file (they give every weight), nor label smoothing where
// the patch's recipe keeps the loss in 16 bits (labelSmoothingProblem): the model's default
// must not refuse a run the user's own settings allow.
struct OwnDefaults {
    json taken = json::object();
    std::vector<std::string> leftOff;   // "key value (why)"
};
OwnDefaults ownDefaultsOf(const json& patch)
{
    OwnDefaults out;
    out.taken = modelTrainingDefaults(patchModel(patch));
    json& own = out.taken;
    for (const auto& [key, value] : patch.items()) own.erase(key);
    if (givesWeights(patch) && own.contains("zero_init_residual")) {
        out.leftOff.push_back("zero_init_residual " + settingFlagText(own["zero_init_residual"]) +
                              " (the initial weights from a file give every weight)");
        own.erase("zero_init_residual");
    }
    if (const auto smoothing = own.find("label_smoothing"); smoothing != own.end()) {
        json trial = own;
        for (const auto& [key, value] : patch.items()) trial[key] = value;
        if (refusesSmoothing(trial, smoothing->get<double>())) {
            out.leftOff.push_back("label_smoothing " + settingFlagText(*smoothing) +
                                  " (the recipe keeps the loss in 16 bits)");
            own.erase("label_smoothing");
        }
    }
    return out;
}

// "a, b, c".
std::string commaList(const std::vector<std::string>& items)
{
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
    return text;
}

// "key value, key value" as the flags take the values.
std::string listed(const json& keysAndValues)
{
    std::vector<std::string> items;
    for (const auto& [key, value] : keysAndValues.items()) items.push_back(key + " " + settingFlagText(value));
    return commaList(items);
}

}  // namespace

std::string settingFlagText(const json& v)
{
    if (v.is_null()) return {};
    if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
        std::string text;
        for (const json& e : v) {
            if (!text.empty()) text += ',';
            text += settingFlagText(e);
        }
        return text;
    }
    return v.dump();
}

const nlohmann::json& modelTrainingDefaults(std::string_view kind)
{
    // Each model row's own defaults (ModelKind::trainingDefaults), read once by the settings
    // reader (a bad row fails loudly at the first use) and kept as settingsToJson writes
    // them, where they differ from every model's.
    static const std::map<std::string, json, std::less<>> byKind = [] {
        std::map<std::string, json, std::less<>> out;
        // Every model's defaults as a stored record reads them (not defaultSettingsJson(),
        // whose reading asks for these).
        const json base = settingsToJson(storedSettingsFromJson(json::object(), "the defaults"));
        for (const ModelKind& k : modelKinds()) {
            json own = json::object();
            if (!k.trainingDefaults.empty()) {
                json stored = json::parse(k.trainingDefaults);
                stored["model"] = std::string(k.name);
                const json all = settingsToJson(storedSettingsFromJson(stored, "model " + std::string(k.name) + "'s defaults"));
                for (const auto& [key, value] : all.items())
                    if (key != "model" && value != base.at(key)) own[key] = value;
            }
            out.emplace(std::string(k.name), std::move(own));
        }
        return out;
    }();
    static const json none = json::object();
    const auto it = byKind.find(kind);
    return it == byKind.end() ? none : it->second;
}

std::string modelDefaultsTaken(const json& patch, bool training)
{
    json taken = modelDefaultsPatch(patch);
    if (!training)
        for (auto it = taken.begin(); it != taken.end();) it = it.key() == "widths" ? std::next(it) : taken.erase(it);
    return listed(taken);
}

std::string modelDefaultsLeftOff(const json& patch) { return commaList(ownDefaultsOf(patch).leftOff); }

std::string modelDefaultsHeld(const TrainSettings& s)
{
    const json now = settingsToJson(s);
    json held = json::object();
    for (const auto& [key, value] : modelTrainingDefaults(s.model.kind).items())
        if (now.at(key) == value) held[key] = value;
    return listed(held);
}

json followModelDefaults(const json& settings, std::string_view from, std::string_view to)
{
    json out = settings;
    const json& base = defaultSettingsJson();
    const json &own = modelTrainingDefaults(from), &next = modelTrainingDefaults(to);
    const auto defaultOf = [&](const json& model, const std::string& key) {
        return model.contains(key) ? model.at(key) : base.at(key);
    };
    std::vector<std::string> keys;
    for (const json* m : {&own, &next})
        for (const auto& [key, value] : m->items()) keys.push_back(key);
    const bool weights = givesWeights(out);
    for (const std::string& key : keys)
        if (key != "widths" && !(weights && key == "zero_init_residual") && out.contains(key) &&
            out.at(key) == defaultOf(own, key))
            out[key] = defaultOf(next, key);
    out["widths"] = defaultOf(next, "widths");
    // Not a label smoothing the recipe refuses (a loss kept in 16 bits): it stays as it was.
    if (out.contains("label_smoothing") && out["label_smoothing"] != settings.value("label_smoothing", json()) &&
        refusesSmoothing(out, out["label_smoothing"].get<double>()))
        out["label_smoothing"] = settings.at("label_smoothing");
    return out;
}

json modelDefaultsPatch(const json& patch) { return ownDefaultsOf(patch).taken; }

json readableSettings(const json& settings, std::vector<std::string>* refused)
{
    json readable = json::object();   // a patch stays a patch (a preset's keys are not overridden)
    const auto take = [&](const std::string& key, const json& value) {
        json trial = readable;
        trial[key] = value;
        try {
            (void)storedSettingsUnchecked(trial, "the settings");
            readable = std::move(trial);
        } catch (const InputError&) {
            if (refused) refused->push_back(key);
        }
    };
    if (const auto model = settings.find("model"); model != settings.end()) take("model", *model);
    for (const auto& [key, value] : settings.items())
        if (key != "model") take(key, value);
    return readable;
}

}  // namespace plab
