// Settings <-> flat JSON, with one clear sentence for every bad key or value.
#include "train/settings.h"

#include "error.h"
#include "json/json_input.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace plab {

using nlohmann::json;

namespace {

const std::set<std::string>& knownKeys()
{
    static const std::set<std::string> keys = {
        "model", "widths", "recipe", "compute", "master_weights", "fp32_accumulate",
        "fp32_sensitive_ops", "loss_scale", "init_scale", "growth_factor", "backoff_factor",
        "growth_interval", "min_scale", "max_scale", "batch", "epochs", "max_steps", "lr",
        "optimizer", "momentum", "seed", "dataset", "data_dir", "threads", "histogram_every",
        "eval_every", "divergence_steps", "clip_grad_norm", "backend"};
    return keys;
}

// Reads typed values out of the patch, naming the key in every error.
class Reader {
public:
    Reader(const json& j, std::string origin) : j_(j), origin_(std::move(origin)) {}

    bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

    [[noreturn]] void fail(const char* key, const std::string& what) const
    {
        throw InputError(origin_ + ": '" + key + "' " + what);
    }

    std::string text(const char* key) const
    {
        const auto& v = j_.at(key);
        if (!v.is_string()) fail(key, "must be a string, got " + std::string(v.type_name()));
        return v.get<std::string>();
    }

    bool boolean(const char* key) const
    {
        const auto& v = j_.at(key);
        if (v.is_boolean()) return v.get<bool>();
        if (v.is_string()) {
            const auto s = v.get<std::string>();
            if (s == "on" || s == "true") return true;
            if (s == "off" || s == "false") return false;
        }
        fail(key, "must be on or off (true or false)");
    }

    double number(const char* key) const
    {
        const auto& v = j_.at(key);
        if (!v.is_number()) fail(key, "must be a number, got " + std::string(v.type_name()));
        const double d = v.get<double>();
        if (!std::isfinite(d)) fail(key, "must be finite");
        return d;
    }

    std::int64_t integer(const char* key, std::int64_t min, std::int64_t max) const
    {
        const auto& v = j_.at(key);
        if (!v.is_number_integer())
            fail(key, "must be a whole number, got " + jsonExcerpt(v));
        // An unsigned value above 2^63 must not wrap to a negative one (2^64-1 read as -1).
        const bool inRange = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max) &&
                                                          static_cast<std::int64_t>(v.get<std::uint64_t>()) >= min
                                                    : v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max;
        if (!inRange)
            fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + jsonExcerpt(v));
        return v.get<std::int64_t>();
    }

    double positive(const char* key) const
    {
        const double d = number(key);
        if (!(d > 0)) fail(key, "must be greater than 0, got " + jsonExcerpt(j_.at(key)));
        return d;
    }

private:
    const json& j_;
    std::string origin_;
};

std::string formatScale(double s)
{
    std::ostringstream out;
    out << s;
    return out.str();
}

}  // namespace

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

json recipeToJson(const PrecisionRecipe& r)
{
    const auto base = PrecisionRecipe::fromPreset(r.preset);
    return {{"preset", r.preset},
            {"custom", !base || !(*base == r)},
            {"display_name", PrecisionRecipe::displayName(r.preset)},
            {"compute", std::string(formatName(r.compute))},
            {"storage", std::string(formatName(r.storage()))},
            {"master_weights", r.masterWeights},
            {"fp32_accumulate", r.fp32Accumulate},
            {"fp32_sensitive_ops", r.fp32SensitiveOps},
            {"loss_scaling", lossScalingToJson(r.lossScaling)}};
}

json settingsToJson(const TrainSettings& s)
{
    const auto& l = s.recipe.lossScaling;
    std::string scale = "off";
    if (l.mode == LossScaleMode::fixed) scale = "static:" + formatScale(l.initScale);
    if (l.mode == LossScaleMode::dynamic) scale = "dynamic";
    json j = {
        {"model", s.model.kind},
        {"widths", s.model.widths},
        {"recipe", s.recipe.preset},
        {"compute", std::string(formatName(s.recipe.compute))},
        {"master_weights", s.recipe.masterWeights},
        {"fp32_accumulate", s.recipe.fp32Accumulate},
        {"fp32_sensitive_ops", s.recipe.fp32SensitiveOps},
        {"loss_scale", scale},
        {"init_scale", l.initScale},
        {"growth_factor", l.growthFactor},
        {"backoff_factor", l.backoffFactor},
        {"growth_interval", l.growthInterval},
        {"min_scale", l.minScale ? json(*l.minScale) : json(nullptr)},
        {"max_scale", l.maxScale ? json(*l.maxScale) : json(nullptr)},
        {"batch", s.batch},
        {"epochs", s.epochs},
        {"max_steps", s.maxSteps},
        {"lr", s.optimizer.lr},
        {"optimizer", s.optimizer.kind},
        {"momentum", s.optimizer.momentum},
        {"seed", s.seed},
        {"dataset", s.dataset},
        {"data_dir", s.dataDir},
        {"threads", s.threads},
        {"histogram_every", s.histogramEvery},
        {"eval_every", s.evalEvery},
        {"divergence_steps", s.divergenceSteps},
        {"clip_grad_norm", s.clipGradNorm},
        {"backend", s.backend},
    };
    return j;
}

TrainSettings settingsFromJson(const json& patch, const std::string& origin)
{
    if (!patch.is_object()) throw InputError(origin + ": expected a JSON object of settings");
    for (const auto& [key, value] : patch.items())
        if (!knownKeys().count(key))
            throw InputError(origin + ": unknown setting '" + key + "'");

    const Reader r(patch, origin);
    TrainSettings s;

    if (r.has("model")) s.model.kind = r.text("model");
    if (r.has("widths")) {
        const auto& w = patch.at("widths");
        if (!w.is_array()) r.fail("widths", "must be a list of whole numbers");
        s.model.widths.clear();
        for (const auto& v : w) {
            if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 65536)
                r.fail("widths", "must hold whole numbers from 1 to 65536, got " + jsonExcerpt(v));
            s.model.widths.push_back(v.get<int>());
        }
    }

    // The preset first, then each switch that the patch names.
    if (r.has("recipe")) {
        const auto name = r.text("recipe");
        auto preset = PrecisionRecipe::fromPreset(name);
        if (!preset) {
            std::string names;
            for (const auto& n : PrecisionRecipe::presetNames()) names += (names.empty() ? "" : ", ") + n;
            r.fail("recipe", "must be one of " + names + ", got '" + name + "'");
        }
        s.recipe = *preset;
    } else {
        s.recipe = *PrecisionRecipe::fromPreset("fp32");
    }
    if (r.has("compute")) {
        const auto f = parseFormat(r.text("compute"));
        if (!f) r.fail("compute", "must be fp32, tf32, fp16 or bf16");
        s.recipe.compute = *f;
    }
    if (r.has("master_weights")) s.recipe.masterWeights = r.boolean("master_weights");
    if (r.has("fp32_accumulate")) s.recipe.fp32Accumulate = r.boolean("fp32_accumulate");
    if (r.has("fp32_sensitive_ops")) s.recipe.fp32SensitiveOps = r.boolean("fp32_sensitive_ops");

    auto& l = s.recipe.lossScaling;
    if (r.has("loss_scale")) {
        std::string error;
        auto parsed = parseLossScaleOption(r.text("loss_scale"), &error);
        if (!parsed) r.fail("loss_scale", error);
        l = *parsed;
    }
    if (r.has("init_scale")) l.initScale = r.positive("init_scale");
    if (r.has("growth_factor")) l.growthFactor = r.number("growth_factor");
    if (r.has("backoff_factor")) l.backoffFactor = r.number("backoff_factor");
    if (r.has("growth_interval"))
        l.growthInterval = static_cast<int>(r.integer("growth_interval", 1, 1'000'000'000));
    if (r.has("min_scale")) l.minScale = r.positive("min_scale");
    if (r.has("max_scale")) l.maxScale = r.positive("max_scale");

    if (r.has("batch")) s.batch = static_cast<int>(r.integer("batch", 1, 65536));
    if (r.has("epochs")) s.epochs = static_cast<int>(r.integer("epochs", 1, 100000));
    if (r.has("max_steps")) s.maxSteps = r.integer("max_steps", 0, std::int64_t(1) << 40);
    if (r.has("lr")) s.optimizer.lr = r.positive("lr");
    if (r.has("optimizer")) {
        s.optimizer.kind = r.text("optimizer");
        if (s.optimizer.kind != "adam" && s.optimizer.kind != "sgd")
            r.fail("optimizer", "must be adam or sgd, got '" + s.optimizer.kind + "'");
    }
    if (r.has("momentum")) {
        s.optimizer.momentum = r.number("momentum");
        if (s.optimizer.momentum < 0 || s.optimizer.momentum >= 1)
            r.fail("momentum", "must be in [0, 1)");
    }
    if (r.has("seed")) s.seed = static_cast<std::uint64_t>(r.integer("seed", 0, INT64_MAX));
    if (r.has("dataset")) {
        s.dataset = r.text("dataset");
        if (s.dataset != "mnist" && s.dataset != "fashion-mnist")
            r.fail("dataset", "must be mnist or fashion-mnist, got '" + s.dataset + "'");
    }
    if (r.has("data_dir")) s.dataDir = r.text("data_dir");
    if (r.has("threads")) s.threads = static_cast<int>(r.integer("threads", 1, 256));
    if (r.has("histogram_every")) s.histogramEvery = static_cast<int>(r.integer("histogram_every", 0, 1'000'000'000));
    if (r.has("eval_every")) s.evalEvery = static_cast<int>(r.integer("eval_every", 0, 1'000'000'000));
    if (r.has("divergence_steps")) s.divergenceSteps = static_cast<int>(r.integer("divergence_steps", 1, 1'000'000));
    if (r.has("clip_grad_norm")) {
        s.clipGradNorm = r.number("clip_grad_norm");
        if (s.clipGradNorm < 0) r.fail("clip_grad_norm", "must be 0 (off) or positive");
    }
    if (r.has("backend")) {
        s.backend = r.text("backend");
        if (s.backend != "cpu" && s.backend != "cuda")
            r.fail("backend", "must be cpu or cuda, got '" + s.backend + "'");
    }

    if (auto problem = validateSettings(s); !problem.empty()) throw InputError(origin + ": " + problem);
    return s;
}

std::int64_t plannedSteps(const TrainSettings& s, std::int64_t trainImages)
{
    if (s.batch <= 0 || trainImages <= 0) return 0;
    const std::int64_t all = (trainImages + s.batch - 1) / s.batch * s.epochs;
    return s.maxSteps > 0 ? std::min(all, s.maxSteps) : all;
}

std::string validateSettings(const TrainSettings& s)
{
    if (s.model.kind != "mlp" && s.model.kind != "small-cnn" && s.model.kind != "seed-cnn")
        return "model must be mlp, small-cnn or seed-cnn, got '" + s.model.kind + "'";
    // The model's size before anything is allocated: a wrong widths count, or widths
    // whose parameters alone would not fit in memory (65536 x 65536 ran out of memory).
    if (!s.model.widths.empty() && s.model.widths.size() != 2)
        return "widths: model " + s.model.kind + " takes 2 widths, got " + std::to_string(s.model.widths.size());
    if (s.model.widths.size() == 2) {
        const double a = s.model.widths[0], b = s.model.widths[1];
        const double parameters = s.model.kind == "mlp" ? 784 * a + a + a * b + b + b * 10 + 10
                                                        : 9 * a + a + 9 * a * b + b + 49 * b * 10 + 10;
        constexpr double kMaxParameters = double(std::int64_t{1} << 28);   // 1 GiB of fp32 weights
        if (parameters > kMaxParameters)
            return "widths: model " + s.model.kind + " with widths " + std::to_string(s.model.widths[0]) + ", " +
                   std::to_string(s.model.widths[1]) + " has " + std::to_string(static_cast<std::int64_t>(parameters)) +
                   " parameters, more than this lab trains (at most 268,435,456: 1 GiB of fp32 weights, 4 with "
                   "gradients and Adam's state)";
    }
    if (s.batch < 1) return "batch must be at least 1";
    if (s.epochs < 1) return "epochs must be at least 1";
    if (!(s.optimizer.lr > 0) || !std::isfinite(s.optimizer.lr)) return "lr must be a positive number";
    return s.recipe.validate();
}

}  // namespace plab
