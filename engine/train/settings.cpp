// Over 500 lines: the one table of settings keys, each row its reading, checks and writing, so no key is spelled twice.
// Settings <-> flat JSON, with one clear sentence for every bad key or value.
#include "train/settings.h"

#include "error.h"
#include "json/json_input.h"
#include "nn/model_kinds.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <sstream>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

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

    // A whole number the row's range has admitted (jsonValueProblem).
    std::int64_t integer(const char* key) const
    {
        const auto& v = j_.at(key);
        if (!v.is_number_integer())
            fail(key, "must be a whole number, got " + jsonExcerpt(v));
        // An unsigned value above 2^63 must not wrap to a negative one (2^64-1 read as -1).
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
            fail(key, "must be at most " + std::to_string(INT64_MAX) + ", got " + jsonExcerpt(v));
        return v.get<std::int64_t>();
    }

    std::vector<int> widths(const char* key) const
    {
        const auto& w = j_.at(key);
        if (!w.is_array()) fail(key, "must be a list of whole numbers");
        std::vector<int> out;
        for (const auto& v : w) {
            if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 65536)
                fail(key, "must hold whole numbers from 1 to 65536, got " + jsonExcerpt(v));
            out.push_back(v.get<int>());
        }
        return out;
    }

private:
    const json& j_;
    std::string origin_;
};

// A setting's JSON value as its flag takes it: on/off, text, a list as 1,2,3 (empty for
// none), a number as JSON writes it; empty for null.
std::string settingFlagText(const json& v)
{
    if (v.is_null()) return {};
    if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
        std::string text;
        for (const json& e : v) text += (text.empty() ? "" : ",") + settingFlagText(e);
        return text;
    }
    return v.dump();
}

// An unknown key as a message shows it: at most 60 characters, control characters escaped.
std::string shortKey(const std::string& key)
{
    std::string text = jsonExcerpt(json(key));   // with JSON's quotes, which the message replaces
    if (!text.empty() && text.front() == '"') text.erase(0, 1);
    if (!text.empty() && text.back() == '"') text.pop_back();
    return text;
}

std::string formatScale(double s)
{
    std::ostringstream out;
    out << s;
    return out.str();
}

// One row per settings key: what the rest of the lab knows of it (SettingKey: its type,
// title, group, whether a run takes it live, its range or choices, its help), how a value
// is read into the settings, and how it is written back. The reader checks a value against
// the row's range and choices before the row reads it. Rows are read in this order: the
// preset ("recipe") before the switches that override it, the loss-scaling mode before its
// knobs.
struct KeyRule {
    SettingKey info;
    void (*read)(const Reader& r, TrainSettings& s);
    json (*write)(const TrainSettings& s);
};

std::string lossScaleText(const LossScaling& l)
{
    if (l.mode == LossScaleMode::fixed) return "static:" + formatScale(l.initScale);
    return l.mode == LossScaleMode::dynamic ? "dynamic" : "off";
}

json optionalScale(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Text that lives as long as the tables do: the choices made from other tables' strings.
const char* kept(std::string text)
{
    static std::deque<std::string> texts;
    return texts.emplace_back(std::move(text)).c_str();
}

// The names of the formats' and quantisation modes' tables.
std::vector<std::string> formatNames()
{
    std::vector<std::string> names;
    for (const FormatInfo& f : formats()) names.emplace_back(f.name);
    return names;
}

std::vector<std::string> quantModeNames()
{
    std::vector<std::string> names;
    for (const QuantModeInfo& q : quantModes()) names.emplace_back(q.name);
    return names;
}

// The choices of the keys whose values another table holds: the models, the presets (ours,
// then the frameworks', then those below 16 bits), the formats, the quantisation modes.
std::vector<SettingChoice> modelChoices()
{
    std::vector<SettingChoice> out;
    for (const ModelKind& k : modelKinds()) out.push_back({kept(std::string(k.name)), kept(std::string(k.title))});
    return out;
}

std::vector<SettingChoice> presetChoices()
{
    std::vector<SettingChoice> out;
    for (const auto& name : PrecisionRecipe::allPresetNames())
        out.push_back({kept(name), kept(PrecisionRecipe::displayName(name))});
    return out;
}

std::vector<SettingChoice> formatChoices()
{
    std::vector<SettingChoice> out;
    for (const std::string& name : formatNames()) out.push_back({kept(name), kept(name)});
    return out;
}

std::vector<SettingChoice> quantModeChoices()
{
    std::vector<SettingChoice> out;
    for (const QuantModeInfo& q : quantModes()) out.push_back({kept(std::string(q.name)), kept(std::string(q.title))});
    return out;
}

// The modes with an E8M0 block scale, from their table.
const char* mxScaleHelp()
{
    static const std::string help = [] {
        std::string modes;
        for (const QuantModeInfo& q : quantModes())
            if (q.scale == QuantScale::blockE8M0) modes += (modes.empty() ? "" : "/") + std::string(q.label);
        return modes + " block scale";
    }();
    return help.c_str();
}

// ", "-joined names.
std::string listed(const std::vector<std::string>& names)
{
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    return text;
}

// The compute formats and the quantisation modes from their tables.
const char* layerHelp()
{
    std::vector<std::string> modes = quantModeNames();
    modes.erase(modes.begin());   // "off" is no layer's precision
    static const std::string help = "Per-layer precision: layer=precision pairs, comma-separated (e.g. "
                                    "conv1=fp32,fc1=bf16); a precision is a compute format (" +
                                    listed(formatNames()) + ") or a quantisation (" + listed(modes) +
                                    "); a block-scaled quantisation of one pass of a linear layer is "
                                    "mxfp4:forward or mxfp4:backward (the other pass in the compute format)";
    return help.c_str();
}

const char* widthsHelp()
{
    static const std::string help = [] {
        std::string h = "The model's widths, comma-separated (e.g. 16,32):";
        const auto kinds = modelKinds();
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            const ModelKind& k = kinds[i];
            h += std::string(i == 0 ? " " : "; ") + std::string(k.name) + " " + widthMeanings(k);
        }
        return h + ". An empty list, as settings written before 2026-11-28 hold it: the model's base widths "
                   "(vit 64,2,4,7)";
    }();
    return help.c_str();
}

// Ranges: whole numbers from a to b; numbers greater than a; a or more; in [a, b).
SettingRange wholes(std::int64_t min, std::int64_t max) { return {min, max, 0, 0, false, false}; }
SettingRange above(double min) { return {0, 0, min, HUGE_VAL, true, false}; }
SettingRange atLeast(double min) { return {0, 0, min, HUGE_VAL, false, false}; }
SettingRange fromUpTo(double min, double max) { return {0, 0, min, max, false, true}; }

// A whole-number key's value, once the reader has checked it against its row's range.
template <typename T>
T whole(const Reader& r, const char* key)
{
    return static_cast<T>(r.integer(key));
}

const std::vector<KeyRule>& keyRules()
{
    using T = SettingType;
    using G = SettingGroup;
    constexpr bool live = true;
    static const std::vector<KeyRule> rules = {
        {{"model", T::text, "Model", G::modelAndData, false, {}, modelChoices(), "The model"},
         [](const Reader& r, TrainSettings& s) { s.model.kind = r.text("model"); },
         [](const TrainSettings& s) { return json(s.model.kind); }},
        {{"widths", T::intList, "Widths", G::modelAndData, false, {}, {}, widthsHelp()},
         [](const Reader& r, TrainSettings& s) { s.model.widths = r.widths("widths"); },
         [](const TrainSettings& s) { return json(s.model.widths); }},
        {{"recipe", T::text, "Preset", G::precision, live, {}, presetChoices(),
          "Preset: ours, a framework's by its own name (docs/FRAMEWORK_PRESETS.md), or below 16 bits"},
         [](const Reader& r, TrainSettings& s) { s.recipe = *PrecisionRecipe::fromPreset(r.text("recipe")); },
         [](const TrainSettings& s) { return json(s.recipe.preset); }},
        {{"compute", T::text, "Compute", G::precision, live, {}, formatChoices(), "Compute format"},
         [](const Reader& r, TrainSettings& s) { s.recipe.compute = *parseFormat(r.text("compute")); },
         [](const TrainSettings& s) { return json(std::string(formatName(s.recipe.compute))); }},
        {{"master_weights", T::onOff, "fp32 master weights", G::precision, live, {}, {}, "fp32 master weights"},
         [](const Reader& r, TrainSettings& s) { s.recipe.masterWeights = r.boolean("master_weights"); },
         [](const TrainSettings& s) { return json(s.recipe.masterWeights); }},
        {{"optimizer_state", T::text, "Optimizer state", G::precision, live, {},
          {{"auto", "as the weights (PyTorch)", "fp32 with master weights, else the weights' format"},
           {"fp32", "fp32"},
           {"bf16", "bf16"},
           {"fp16", "fp16"}},
          "Optimizer state (momentum, Adam's moments)"},
         [](const Reader& r, TrainSettings& s) {
             const std::string text = r.text("optimizer_state");
             if (text == "auto")
                 s.recipe.optimizerState.reset();
             else
                 s.recipe.optimizerState = parseFormat(text);
         },
         [](const TrainSettings& s) {
             return json(s.recipe.optimizerState ? std::string(formatName(*s.recipe.optimizerState)) : "auto");
         }},
        {{"update_rounding", T::text, "Update rounding", G::precision, live, {},
          {{"nearest", "to nearest (PyTorch)"},
           {"stochastic", "stochastic", "up or down with the probabilities that keep the update on average"},
           {"kahan", "Kahan-compensated", "a compensation buffer carries what rounding lost"}},
          "How the optimizer rounds its write to the weights, for weights kept in 16 bits"},
         [](const Reader& r, TrainSettings& s) { s.recipe.updateRounding = *parseUpdateRounding(r.text("update_rounding")); },
         [](const TrainSettings& s) { return json(std::string(updateRoundingName(s.recipe.updateRounding))); }},
        {{"fp32_accumulate", T::onOff, "fp32 accumulation", G::precision, live, {}, {}, "Accumulate matmul/conv in fp32"},
         [](const Reader& r, TrainSettings& s) { s.recipe.fp32Accumulate = r.boolean("fp32_accumulate"); },
         [](const TrainSettings& s) { return json(s.recipe.fp32Accumulate); }},
        {{"fp32_sensitive_ops", T::onOff, "fp32 softmax / loss", G::precision, live, {}, {},
          "Softmax/cross-entropy in fp32"},
         [](const Reader& r, TrainSettings& s) { s.recipe.fp32SensitiveOps = r.boolean("fp32_sensitive_ops"); },
         [](const TrainSettings& s) { return json(s.recipe.fp32SensitiveOps); }},
        {{"attention_scores", T::text, "Attention scores", G::precision, live, {},
          {{"storage", "rounded to storage, then scaled", "as attention written op by op rounds them"},
           {"fp32", "fp32 (fused attention)", "as fused kernels (FlashAttention) keep them"}},
          "Attention's scores q k^T (the vit): rounded to the storage format before the 1/sqrt(d) scale, or kept "
          "in fp32 through the softmax and its gradient"},
         [](const Reader& r, TrainSettings& s) { s.recipe.fp32AttentionScores = r.text("attention_scores") == "fp32"; },
         [](const TrainSettings& s) { return json(s.recipe.fp32AttentionScores ? "fp32" : "storage"); }},
        {{"loss_scale", T::text, "Loss scaling", G::precision, live, {}, {},
          "off, static:S, dynamic, pytorch, tensorflow or apex", SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) {
             std::string error;
             auto parsed = parseLossScaleOption(r.text("loss_scale"), &error);
             if (!parsed) r.fail("loss_scale", error);
             s.recipe.lossScaling = *parsed;
         },
         [](const TrainSettings& s) { return json(lossScaleText(s.recipe.lossScaling)); }},
        {{"init_scale", T::number, "Initial scale", G::precision, live, above(0), {}, "Initial (or static) loss scale",
          SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) { s.recipe.lossScaling.initScale = r.number("init_scale"); },
         [](const TrainSettings& s) { return json(s.recipe.lossScaling.initScale); }},
        {{"growth_factor", T::number, "Growth factor", G::precision, live, {}, {}, "Dynamic scaling: growth factor",
          SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) { s.recipe.lossScaling.growthFactor = r.number("growth_factor"); },
         [](const TrainSettings& s) { return json(s.recipe.lossScaling.growthFactor); }},
        {{"backoff_factor", T::number, "Backoff factor", G::precision, live, {}, {}, "Dynamic scaling: backoff factor",
          SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) { s.recipe.lossScaling.backoffFactor = r.number("backoff_factor"); },
         [](const TrainSettings& s) { return json(s.recipe.lossScaling.backoffFactor); }},
        {{"growth_interval", T::integer, "Growth interval", G::precision, live, wholes(1, LossScaling::kMaxGrowthInterval),
          {}, "Dynamic scaling: clean steps before growth", SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) { s.recipe.lossScaling.growthInterval = whole<int>(r, "growth_interval"); },
         [](const TrainSettings& s) { return json(s.recipe.lossScaling.growthInterval); }},
        {{"min_scale", T::number, "Minimum scale", G::precision, live, above(0), {}, "Dynamic scaling: floor",
          SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) { s.recipe.lossScaling.minScale = r.number("min_scale"); },
         [](const TrainSettings& s) { return optionalScale(s.recipe.lossScaling.minScale); }},
        {{"max_scale", T::number, "Maximum scale", G::precision, live, above(0), {}, "Dynamic scaling: cap",
          SettingRole::scalesLoss},
         [](const Reader& r, TrainSettings& s) { s.recipe.lossScaling.maxScale = r.number("max_scale"); },
         [](const TrainSettings& s) { return optionalScale(s.recipe.lossScaling.maxScale); }},
        {{"quantize", T::text, "Operands", G::precision, live, {}, quantModeChoices(), "Matmul/conv inputs below 16 bits"},
         [](const Reader& r, TrainSettings& s) { s.recipe.quantization.mode = *parseQuantMode(r.text("quantize")); },
         [](const TrainSettings& s) { return json(std::string(quantModeName(s.recipe.quantization.mode))); }},
        {{"fp8_format", T::text, "FP8 formats", G::precision, live, {},
          {{"hybrid", "E4M3 forward, E5M2 gradients", "E4M3 forward, E5M2 gradients"},
           {"e4m3", "E4M3 throughout", "E4M3 throughout"}},
          "FP8 formats"},
         [](const Reader& r, TrainSettings& s) { s.recipe.quantization.hybrid = r.text("fp8_format") == "hybrid"; },
         [](const TrainSettings& s) { return json(s.recipe.quantization.hybrid ? "hybrid" : "e4m3"); }},
        {{"mx_scale", T::text, "MX scale", G::precision, live, {},
          {{"floor", "rounded down (OCP MX)", "the OCP MX reference: the block's largest value may saturate"},
           {"ceil", "rounded up (Transformer Engine)",
            "Transformer Engine's MXFP8: the smallest scale that fits the block"}},
          mxScaleHelp()},
         [](const Reader& r, TrainSettings& s) { s.recipe.quantization.mxScale = *parseMxScaleRounding(r.text("mx_scale")); },
         [](const TrainSettings& s) { return json(std::string(mxScaleRoundingName(s.recipe.quantization.mxScale))); }},
        {{"amax_history", T::integer, "Amax history", G::precision, live, wholes(1, Quantization::kMaxAmaxHistory), {},
          "FP8 delayed scaling: steps of amax history"},
         [](const Reader& r, TrainSettings& s) { s.recipe.quantization.amaxHistory = whole<int>(r, "amax_history"); },
         [](const TrainSettings& s) { return json(s.recipe.quantization.amaxHistory); }},
        {{"amax_algorithm", T::text, "Amax algorithm", G::precision, live, {},
          {{"max", "the history's largest"}, {"most_recent", "the most recent"}},
          "FP8 delayed scaling: the amax the history gives"},
         [](const Reader& r, TrainSettings& s) { s.recipe.quantization.algorithm = *parseAmaxAlgorithm(r.text("amax_algorithm")); },
         [](const TrainSettings& s) { return json(std::string(amaxAlgorithmName(s.recipe.quantization.algorithm))); }},
        {{"fp8_margin", T::integer, "FP8 margin", G::precision, live,
          wholes(-Quantization::kMaxMargin, Quantization::kMaxMargin), {},
          "FP8 scaling: margin, the scale divided by 2^margin"},
         [](const Reader& r, TrainSettings& s) { s.recipe.quantization.margin = whole<int>(r, "fp8_margin"); },
         [](const TrainSettings& s) { return json(s.recipe.quantization.margin); }},
        {{"layer", T::text, "Per layer", G::precision, live, {}, {}, layerHelp()},
         [](const Reader& r, TrainSettings& s) {
             std::string error;
             auto layers = parseLayerPrecisions(r.text("layer"), &error);
             if (!layers) r.fail("layer", error);
             s.recipe.layers = std::move(*layers);
         },
         [](const TrainSettings& s) { return json(layerPrecisionsText(s.recipe.layers)); }},
        {{"batch", T::integer, "Batch size", G::optimizer, live, wholes(1, 65536), {}, "Batch size"},
         [](const Reader& r, TrainSettings& s) { s.batch = whole<int>(r, "batch"); },
         [](const TrainSettings& s) { return json(s.batch); }},
        {{"epochs", T::integer, "Epochs", G::modelAndData, false, wholes(0, 100000), {},
          "Epochs (0: no training, the initial weights evaluated once)"},
         [](const Reader& r, TrainSettings& s) { s.epochs = whole<int>(r, "epochs"); },
         [](const TrainSettings& s) { return json(s.epochs); }},
        {{"max_steps", T::integer, "Max steps", G::modelAndData, false, wholes(0, std::int64_t(1) << 40), {},
          "Stop after this many steps (0: no limit)"},
         [](const Reader& r, TrainSettings& s) { s.maxSteps = r.integer("max_steps"); },
         [](const TrainSettings& s) { return json(s.maxSteps); }},
        {{"lr", T::number, "Learning rate", G::optimizer, live, above(0), {}, "Learning rate"},
         [](const Reader& r, TrainSettings& s) { s.optimizer.lr = r.number("lr"); },
         [](const TrainSettings& s) { return json(s.optimizer.lr); }},
        {{"lr_schedule", T::text, "Schedule", G::optimizer, false, {},
          {{"constant", "Constant", "lr throughout"},
           {"cosine", "Cosine to 0",
            "lr lowered along a half cosine towards 0 over the planned steps; the batch is then fixed for the run"}},
          "The learning rate's schedule, after warmup_steps"},
         [](const Reader& r, TrainSettings& s) { s.lrSchedule.shape = *parseLrShape(r.text("lr_schedule")); },
         [](const TrainSettings& s) { return json(std::string(lrShapeName(s.lrSchedule.shape))); }},
        {{"warmup_steps", T::integer, "Warm-up steps", G::optimizer, false, wholes(0, std::int64_t(1) << 40), {},
          "Steps of linear learning-rate warm-up from lr / N to lr (0: none)"},
         [](const Reader& r, TrainSettings& s) { s.lrSchedule.warmupSteps = r.integer("warmup_steps"); },
         [](const TrainSettings& s) { return json(s.lrSchedule.warmupSteps); }},
        {{"zero_init_residual", T::onOff, "Residual branches start at zero", G::optimizer, false, {}, {},
          "vit: each block's residual branches (proj and fc2 weights) start at zero"},
         [](const Reader& r, TrainSettings& s) { s.zeroInitResidual = r.boolean("zero_init_residual"); },
         [](const TrainSettings& s) { return json(s.zeroInitResidual); }},
        {{"label_smoothing", T::number, "Label smoothing", G::optimizer, false, fromUpTo(0, 1), {},
          "Label smoothing of the training loss: targets (1 - e) onehot + e / classes (0: none; needs the loss in "
          "fp32)"},
         [](const Reader& r, TrainSettings& s) { s.labelSmoothing = r.number("label_smoothing"); },
         [](const TrainSettings& s) { return json(s.labelSmoothing); }},
        {{"optimizer", T::text, "Optimizer", G::optimizer, false, {}, {{"adam", "Adam"}, {"sgd", "SGD + momentum"}},
          "The optimizer"},
         [](const Reader& r, TrainSettings& s) { s.optimizer.kind = r.text("optimizer"); },
         [](const TrainSettings& s) { return json(s.optimizer.kind); }},
        {{"momentum", T::number, "Momentum", G::optimizer, false, fromUpTo(0, 1), {}, "SGD momentum"},
         [](const Reader& r, TrainSettings& s) { s.optimizer.momentum = r.number("momentum"); },
         [](const TrainSettings& s) { return json(s.optimizer.momentum); }},
        {{"adam_eps", T::number, "Adam eps", G::optimizer, false, above(0), {},
          "Adam's eps, added to the root of its second moment before dividing (PyTorch's default 1e-8)"},
         [](const Reader& r, TrainSettings& s) { s.optimizer.eps = r.number("adam_eps"); },
         [](const TrainSettings& s) { return json(s.optimizer.eps); }},
        {{"seed", T::integer, "Seed", G::modelAndData, false, wholes(0, INT64_MAX), {}, "Seed of weights and shuffling"},
         [](const Reader& r, TrainSettings& s) { s.seed = whole<std::uint64_t>(r, "seed"); },
         [](const TrainSettings& s) { return json(s.seed); }},
        {{"dataset", T::text, "Dataset", G::modelAndData, false, {},
          {{"mnist", "MNIST"}, {"fashion-mnist", "Fashion-MNIST"}}, "The dataset"},
         [](const Reader& r, TrainSettings& s) { s.dataset = r.text("dataset"); },
         [](const TrainSettings& s) { return json(s.dataset); }},
        {{"data_dir", T::text, "Data folder", G::files, false, {}, {},
          "Data folder (empty: the per-user folder the set-up fills)", SettingRole::observes},
         [](const Reader& r, TrainSettings& s) { s.dataDir = r.text("data_dir"); },
         [](const TrainSettings& s) { return json(s.dataDir); }},
        {{"threads", T::integer, "Threads", G::modelAndData, false, wholes(1, 256), {}, "CPU threads",
          SettingRole::observes},
         [](const Reader& r, TrainSettings& s) { s.threads = whole<int>(r, "threads"); },
         [](const TrainSettings& s) { return json(s.threads); }},
        {{"histogram_every", T::integer, "Telemetry every", G::run, false, wholes(0, 1'000'000'000), {},
          "Telemetry snapshot every N steps (0: never)", SettingRole::observes},
         [](const Reader& r, TrainSettings& s) { s.histogramEvery = whole<int>(r, "histogram_every"); },
         [](const TrainSettings& s) { return json(s.histogramEvery); }},
        {{"telemetry", T::text, "Telemetry", G::modelAndData, false, {},
          {{"every-step", "Every step", "the lab rounds and counts every 16-bit result at every step"},
           {"sampled", "Sampled (GPU: cuDNN between snapshots)",
            "between the snapshot steps a GPU may run the 16-bit convolutions on cuDNN, whose own rounding no tap "
            "sees; the CPU counts every step either way"}},
          "How much of each step the telemetry counts"},
         [](const Reader& r, TrainSettings& s) { s.telemetry = *parseTelemetryMode(r.text("telemetry")); },
         [](const TrainSettings& s) { return json(std::string(telemetryModeName(s.telemetry))); }},
        {{"eval_every", T::integer, "Evaluate every", G::run, false, wholes(0, 1'000'000'000), {},
          "Also evaluate every N steps (0: per epoch only)", SettingRole::observes},
         [](const Reader& r, TrainSettings& s) { s.evalEvery = whole<int>(r, "eval_every"); },
         [](const TrainSettings& s) { return json(s.evalEvery); }},
        {{"divergence_steps", T::integer, "Divergence steps", G::run, false, wholes(1, 1'000'000), {},
          "Non-finite losses in a row that end a run"},
         [](const Reader& r, TrainSettings& s) { s.divergenceSteps = whole<int>(r, "divergence_steps"); },
         [](const TrainSettings& s) { return json(s.divergenceSteps); }},
        {{"grad_accum_steps", T::integer, "Accumulation steps", G::optimizer, false, wholes(1, 1024), {},
          "Gradient accumulation: micro-batches per step, the batch split into them and their gradients summed in one buffer "
          "before the update (1: none; the CPU backend)"},
         [](const Reader& r, TrainSettings& s) { s.gradAccumSteps = whole<int>(r, "grad_accum_steps"); },
         [](const TrainSettings& s) { return json(s.gradAccumSteps); }},
        {{"grad_accum_format", T::text, "Accumulation buffer", G::optimizer, false, {},
          {{"fp32", "fp32"}, {"bf16", "bf16"}, {"fp16", "fp16"}},
          "The accumulation buffer's format: each micro-batch's gradients added to it and the sum rounded to it"},
         [](const Reader& r, TrainSettings& s) { s.gradAccumFormat = *parseFormat(r.text("grad_accum_format")); },
         [](const TrainSettings& s) { return json(std::string(formatName(s.gradAccumFormat))); }},
        {{"clip_grad_norm", T::number, "Clip gradient norm", G::optimizer, false, atLeast(0), {},
          "Clip the gradient norm to this (0: off); clip_grad_at says whether before or after unscaling"},
         [](const Reader& r, TrainSettings& s) { s.clipGradNorm = r.number("clip_grad_norm"); },
         [](const TrainSettings& s) { return json(s.clipGradNorm); }},
        {{"clip_grad_at", T::text, "Clip at", G::optimizer, false, {},
          {{"unscaled", "after unscaling", "after unscaling, as PyTorch's AMP examples do"},
           {"scaled", "before unscaling", "before it: the mistake, the limit then applies to S times the gradients"}},
          "Where clip_grad_norm clips"},
         [](const Reader& r, TrainSettings& s) {
             s.clipAt = r.text("clip_grad_at") == "scaled" ? ClipAt::scaled : ClipAt::unscaled;
         },
         [](const TrainSettings& s) { return json(std::string(clipAtName(s.clipAt))); }},
        {{"backend", T::text, "Backend", G::modelAndData, false, {}, {{"cpu", "CPU"}, {"cuda", "CUDA"}}, "The backend"},
         [](const Reader& r, TrainSettings& s) { s.backend = r.text("backend"); },
         [](const TrainSettings& s) { return json(s.backend); }},
        {{"arithmetic", T::text, "Arithmetic", G::modelAndData, false, {},
          {{"hardware", "Hardware (native 16-bit units)", "native units via oneDNN where the CPU has them"},
           {"exact", "Exact (emulated, same bits on every CPU)", "emulated, the same bits on every CPU"}},
          "CPU products of bf16/fp16 operands"},
         [](const Reader& r, TrainSettings& s) { s.arithmetic = *parseArithmetic(r.text("arithmetic")); },
         [](const TrainSettings& s) { return json(std::string(arithmeticName(s.arithmetic))); }},
        {{"init_weights", T::text, "Initial weights", G::modelAndData, false, {}, {},
          "Initial weights: a safetensors file with PyTorch's tensor names"},
         [](const Reader& r, TrainSettings& s) { s.initWeights = r.text("init_weights"); },
         [](const TrainSettings& s) { return json(s.initWeights); }},
        {{"save_weights", T::text, "Save weights", G::files, false, {}, {}, "Write the final weights here (safetensors)",
          SettingRole::observes},
         [](const Reader& r, TrainSettings& s) { s.saveWeights = r.text("save_weights"); },
         [](const TrainSettings& s) { return json(s.saveWeights); }},
        {{"write_batches", T::text, "Write batches", G::files, false, {}, {},
          "Write every step's sample indices here (text, one line per step)", SettingRole::observes},
         [](const Reader& r, TrainSettings& s) { s.writeBatches = r.text("write_batches"); },
         [](const TrainSettings& s) { return json(s.writeBatches); }},
        {{"read_batches", T::text, "Read batches", G::files, false, {}, {},
          "Train on the batches of this file (as --write-batches writes it)"},
         [](const Reader& r, TrainSettings& s) { s.readBatches = r.text("read_batches"); },
         [](const TrainSettings& s) { return json(s.readBatches); }},
    };
    return rules;
}

// Settings files are small: 16 MiB and 64 levels are far above any real one.
constexpr JsonLimits kSettingsFileLimits{std::size_t{16} << 20, 64};

}  // namespace

const std::vector<SettingKey>& settingKeys()
{
    static const std::vector<SettingKey> keys = [] {
        std::vector<SettingKey> out;
        for (const auto& rule : keyRules()) out.push_back(rule.info);
        return out;
    }();
    return keys;
}

std::string_view telemetryModeName(TelemetryMode m)
{
    return m == TelemetryMode::sampled ? "sampled" : "every-step";
}

std::optional<TelemetryMode> parseTelemetryMode(std::string_view name)
{
    for (const TelemetryMode m : {TelemetryMode::everyStep, TelemetryMode::sampled})
        if (telemetryModeName(m) == name) return m;
    return std::nullopt;
}

std::string_view settingGroupTitle(SettingGroup g)
{
    switch (g) {
    case SettingGroup::modelAndData: return "Model and data";
    case SettingGroup::precision: return "Precision";
    case SettingGroup::optimizer: return "Optimizer";
    case SettingGroup::run: return "Telemetry and stopping";
    case SettingGroup::files: return "Files";
    }
    return {};
}

const SettingKey* findSettingKey(std::string_view key)
{
    for (const SettingKey& k : settingKeys())
        if (key == k.key) return &k;
    return nullptr;
}

std::vector<std::string> settingChoiceValues(const SettingKey& key)
{
    std::vector<std::string> values;
    for (const SettingChoice& c : key.choices) values.emplace_back(c.value);
    return values;
}

std::string settingRangeText(const SettingKey& key)
{
    if (!key.range) return {};
    const SettingRange& r = *key.range;
    if (key.type == SettingType::integer)
        return "between " + std::to_string(r.wholeMin) + " and " + std::to_string(r.wholeMax);
    if (std::isinf(r.max)) return r.minOpen ? "greater than " + formatScale(r.min) : formatScale(r.min) + " or more";
    return std::string("in ") + (r.minOpen ? "(" : "[") + formatScale(r.min) + ", " + formatScale(r.max) +
           (r.maxOpen ? ")" : "]");
}

namespace {

bool insideRange(const SettingRange& r, double v)
{
    return (r.minOpen ? v > r.min : v >= r.min) && (r.maxOpen ? v < r.max : v <= r.max);
}

// Why a JSON value is not one of the key's: outside its range, not one of its choices (a
// value of another type is the reader's to refuse).
std::string jsonValueProblem(const SettingKey& key, const json& value)
{
    if (key.range && value.is_number()) {
        if (key.type == SettingType::integer) {
            if (!value.is_number_integer()) return {};   // the reader's to refuse: not a whole number
            if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
                return "must be " + settingRangeText(key) + ", got " + jsonExcerpt(value);
            return settingWholeProblem(key, value.get<std::int64_t>());
        }
        return settingNumberProblem(key, value.get<double>());
    }
    if (!key.choices.empty() && value.is_string()) {
        const std::string text = value.get<std::string>();
        const std::vector<std::string> values = settingChoiceValues(key);
        if (std::find(values.begin(), values.end(), text) == values.end())
            return "must be " + alternatives(values) + ", got " + jsonExcerpt(value) + didYouMean(text, values);
    }
    return {};
}

const KeyRule* findRule(std::string_view key)
{
    for (const KeyRule& rule : keyRules())
        if (key == rule.info.key) return &rule;
    return nullptr;
}

}  // namespace

std::string settingWholeProblem(const SettingKey& key, std::int64_t value)
{
    if (!key.range) return {};
    if (value >= key.range->wholeMin && value <= key.range->wholeMax) return {};
    return "must be " + settingRangeText(key) + ", got " + std::to_string(value);
}

std::string settingNumberProblem(const SettingKey& key, double value)
{
    if (!key.range) return {};
    if (!std::isfinite(value)) return "must be a finite number";
    if (insideRange(*key.range, value)) return {};
    return "must be " + settingRangeText(key) + ", got " + formatScale(value);
}

std::string settingValueProblem(const SettingKey& key, const TrainSettings& s)
{
    const KeyRule* rule = findRule(key.key);
    return rule ? jsonValueProblem(rule->info, rule->write(s)) : std::string();
}

void copySetting(std::string_view key, const TrainSettings& from, TrainSettings& to)
{
    if (const KeyRule* rule = findRule(key)) {
        const json one{{rule->info.key, rule->write(from)}};
        rule->read(Reader(one, "the settings"), to);
    }
}

std::string settingText(const TrainSettings& s, std::string_view key)
{
    const KeyRule* rule = findRule(key);
    return rule ? settingFlagText(rule->write(s)) : std::string();
}

std::string settingHelp(const SettingKey& key)
{
    std::string help = key.help;
    // The choices where one needs saying what it means (the flag's {a,b} lists them all).
    const bool meanings = std::any_of(key.choices.begin(), key.choices.end(),
                                      [](const SettingChoice& c) { return c.meaning != nullptr; });
    if (meanings) {
        std::vector<std::string> said;
        for (const SettingChoice& c : key.choices)
            said.push_back(std::string(c.value) + (c.meaning ? " (" + std::string(c.meaning) + ")" : ""));
        help += ": " + alternatives(said);
    }
    if (key.range) help += "; " + settingRangeText(key);
    return help;
}

json settingsToJson(const TrainSettings& s)
{
    json j = json::object();
    for (const auto& rule : keyRules()) j[rule.info.key] = rule.write(s);
    return j;
}

namespace {

void requireSettingsObject(const json& j, const std::string& origin)
{
    if (!j.is_object()) throw InputError(origin + ": expected a JSON object of settings");
    for (const auto& [key, value] : j.items())
        if (!findRule(key)) throw InputError(origin + ": unknown setting '" + shortKey(key) + "'");
}

// The keys `j` gives read over every model's defaults, each value checked against its row;
// validate: then the whole against validateSettings.
TrainSettings readOverDefaults(const json& j, const std::string& origin, bool validate)
{
    const Reader r(j, origin);
    TrainSettings s;
    s.recipe = *PrecisionRecipe::fromPreset("fp32");
    for (const auto& rule : keyRules()) {
        if (!r.has(rule.info.key)) continue;
        if (const std::string problem = jsonValueProblem(rule.info, j.at(rule.info.key)); !problem.empty())
            r.fail(rule.info.key, problem);
        rule.read(r, s);
    }
    if (!validate) return s;
    if (auto problem = validateSettings(s); !problem.empty()) throw InputError(origin + ": " + problem);
    return s;
}

// The model a new run's JSON names (every model's default where it names none or no text:
// the reader then says what is wrong).
std::string modelNamed(const json& j)
{
    const auto it = j.find("model");
    return it != j.end() && it->is_string() ? it->get<std::string>() : TrainSettings{}.model.kind;
}

// Whether settings JSON names initial weights from a file (which give every weight).
bool givesWeights(const json& j)
{
    const auto w = j.find("init_weights");
    return w != j.end() && w->is_string() && !w->get<std::string>().empty();
}

// A new run's JSON with its model's own defaults where it names none (ModelDefaultsTaken says
// which are left off and why), what the reader then reads over every model's.
json withModelDefaults(const json& j, ModelDefaultsTaken& use)
{
    const std::string kind = modelNamed(j);
    const json own = settingsToJson(modelDefaultSettings(kind));
    json complete = json::object();
    for (const std::string& key : modelDefaultKeys(kind)) {
        if (j.contains(key)) continue;
        if (key == "zero_init_residual" && givesWeights(j)) {
            use.leftOff.push_back(key + " " + settingFlagText(own.at(key)) +
                                  " (the initial weights from a file give every weight)");
            continue;
        }
        complete[key] = own.at(key);
        use.taken.emplace_back(key, settingFlagText(own.at(key)));
    }
    for (const auto& [key, value] : j.items()) complete[key] = value;
    // Label smoothing the recipe refuses (a loss kept in 16 bits) is left off; where the
    // settings cannot even be read, their own problem is what the reader reports.
    if (complete.contains("label_smoothing") && !j.contains("label_smoothing")) {
        bool refused = false;
        try {
            const TrainSettings trial = readOverDefaults(complete, "the model's defaults", false);
            refused = !labelSmoothingProblem(trial.recipe, trial.model, trial.labelSmoothing).empty();
        } catch (const InputError&) {
        }
        if (refused) {
            const std::string value = settingFlagText(complete.at("label_smoothing"));
            use.leftOff.push_back("label_smoothing " + value + " (the recipe keeps the loss in 16 bits)");
            complete.erase("label_smoothing");
            std::erase_if(use.taken, [](const auto& t) { return t.first == "label_smoothing"; });
        }
    }
    return complete;
}

}  // namespace

std::string ModelDefaultsTaken::takenText(bool training) const
{
    std::vector<std::string> items;
    for (const auto& [key, value] : taken)
        if (training || key == "widths") items.push_back(key + " " + value);
    return listed(items);
}

std::string ModelDefaultsTaken::leftOffText() const { return listed(leftOff); }

TrainSettings settingsFromJson(const json& j, const std::string& origin, SettingsReading reading, ModelDefaultsTaken* taken)
{
    requireSettingsObject(j, origin);
    if (reading == SettingsReading::stored) return readOverDefaults(j, origin, true);
    ModelDefaultsTaken use;
    const TrainSettings s = readOverDefaults(withModelDefaults(j, use), origin, true);
    if (taken) *taken = std::move(use);
    return s;
}

nlohmann::json settingsPatchFromFile(const std::filesystem::path& file)
{
    const std::string origin = "config " + file.string();
    json patch = readJsonFile(file, origin, kSettingsFileLimits);
    if (!patch.is_object()) throw InputError(origin + ": expected a JSON object of settings");
    return patch;
}

TrainSettings settingsFromFile(const std::filesystem::path& file, const nlohmann::json& overrides)
{
    json patch = settingsPatchFromFile(file);
    for (const auto& [key, value] : overrides.items()) patch[key] = value;
    return settingsFromJson(patch, "config " + file.string());
}

TrainSettings settingsFromFile(const std::filesystem::path& file)
{
    return settingsFromFile(file, json::object());
}

}  // namespace plab
