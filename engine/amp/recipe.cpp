// Over 500 lines: the presets, the frameworks' names and the recipe's rules in one table-driven file.
// Precision recipes and loss-scaling settings: the named recipes (our six presets, the
// frameworks' names from Apex, Keras and PyTorch, those below 16 bits), the loss-scaling
// presets of PyTorch, TensorFlow and Apex, and the checks that tell an impossible setting
// (an error). The sentences (notices, descriptions) are in recipe_text.cpp.
#include "amp/recipe.h"

#include "error.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace plab {

namespace {

// Shortest decimal that reads back as the same double: "65536", "0.5", "1e-08".
std::string shortestDecimal(double x)
{
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    std::array<char, 64> buf{};
    const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), x);
    return std::string(buf.data(), result.ptr);
}

// A loss scale lives in an fp32 tensor in PyTorch (and in an fp32 variable in
// TensorFlow), so a scale is possible only when it is positive and finite as an fp32.
bool isPossibleFp32Scale(double s)
{
    // A normal fp32 number: below 2^-126 the scale itself is subnormal and every scaled
    // gradient underflows (1e-45 backed off to 0 and the run "diverged").
    if (!std::isfinite(s) || !(s > 0)) return false;
    const float asFloat = static_cast<float>(s);
    return std::isfinite(asFloat) && asFloat >= std::numeric_limits<float>::min();
}

// "/2" for a backoff of 0.5 (reads like the usual "halve"), "x0.3" otherwise.
std::string backoffText(double backoff)
{
    // Appending (rather than "/" + text) also keeps GCC 12's false -Wrestrict quiet.
    const double divisor = 1.0 / backoff;
    const bool exactDivisor = divisor == std::round(divisor) && 1.0 / divisor == backoff;
    std::string text(1, exactDivisor ? '/' : 'x');
    text += shortestDecimal(exactDivisor ? divisor : backoff);
    return text;
}

struct NamedRecipe {
    const char* name;
    const char* displayName;
    Format compute;
    bool masterWeights;
    bool fp32Accumulate;
    bool fp32SensitiveOps;
    const char* lossScalingPreset;   // nullptr: scaling off
    QuantMode quantization = QuantMode::off;
    bool hybrid = true;              // FP8: E5M2 gradients (Quantization::hybrid)
};

// Our six presets (docs/ARCHITECTURE.md#recipes). FP32 has no separate master copy: its
// weights already are fp32, so masterWeights is set to true, which makes the optimizer
// update fp32 weights exactly as PyTorch's fp32 training does; false would mean the
// same arithmetic.
constexpr std::array<NamedRecipe, 6> kNamedRecipes{{
    {"fp32", "FP32", Format::fp32, true, true, true, nullptr},
    {"tf32", "TF32", Format::tf32, true, true, true, nullptr},
    {"amp-fp16", "AMP FP16", Format::fp16, true, true, true, "pytorch"},
    {"amp-bf16", "AMP BF16", Format::bf16, true, true, true, nullptr},
    {"pure-fp16", "Pure FP16", Format::fp16, false, true, false, nullptr},
    {"pure-bf16", "Pure BF16", Format::bf16, false, true, false, nullptr},
}};

// The recipes by the frameworks' own names, each set by the switches
// above; docs/FRAMEWORK_PRESETS.md says what each framework does and what the switches
// cannot express. Read from the frameworks' sources:
// - Apex amp (apex/amp/frontend.py, _initialize.py): O0 fp32; O1 patches torch functions
//   (matmul/conv in fp16, softmax/losses in fp32) on fp32 weights; O2 casts the model to
//   fp16 with fp32 master weights in the optimizer; O3 casts it to fp16 with no master
//   weights and loss scale 1. O2 and O3 cast the model's outputs to float32, so the loss
//   (softmax and cross-entropy outside the model) is fp32 in all four. O1 and O2 use the
//   dynamic scaler (2^16, x2 after 2000 clean steps, /2, at most 2^24).
// - Keras: policy mixed_float16 computes in fp16 on fp32 variables and Model.fit wraps the
//   optimizer in LossScaleOptimizer (2^15, x2 every 2000, never below 1); mixed_bfloat16
//   has no loss scaling. The guide's models end in a float32 softmax.
// - PyTorch: autocast + GradScaler and autocast(bfloat16) are our AMP presets;
//   torch.backends.cuda.matmul.allow_tf32 is TF32.
constexpr std::array<NamedRecipe, 9> kFrameworkRecipes{{
    {"apex-O0", "Apex O0", Format::fp32, true, true, true, nullptr},
    {"apex-O1", "Apex O1", Format::fp16, true, true, true, "apex"},
    {"apex-O2", "Apex O2", Format::fp16, true, true, true, "apex"},
    {"apex-O3", "Apex O3", Format::fp16, false, true, true, nullptr},
    {"mixed_float16", "Keras mixed_float16", Format::fp16, true, true, true, "tensorflow"},
    {"mixed_bfloat16", "Keras mixed_bfloat16", Format::bf16, true, true, true, nullptr},
    {"autocast-fp16", "PyTorch autocast FP16 + GradScaler", Format::fp16, true, true, true, "pytorch"},
    {"autocast-bf16", "PyTorch autocast BF16", Format::bf16, true, true, true, nullptr},
    {"allow-tf32", "PyTorch allow_tf32", Format::tf32, true, true, true, nullptr},
}};

// Below 16 bits: matmul/conv inputs quantised, outputs in bf16, fp32 master
// weights, fp32 accumulation, softmax/loss in fp32, no loss scaling. fp8-delayed is NVIDIA
// Transformer Engine's DelayedScaling with its defaults (HYBRID: E4M3 forward, E5M2
// gradients; amax history 1024, "max", margin 0); fp8-current scales by each tensor's own
// amax (TE's Float8CurrentScaling); mxfp8 is TE's MXFP8BlockScaling (E4M3 throughout);
// fp8-unscaled is the delayed recipe's formats with the scale left at 1; nvfp4 is the
// NVFP4 format of TE's NVFP4BlockScaling in blocks of 16 along the reduction dimension for
// every operand (TE's recipe adds 16 x 16 weight blocks, random Hadamard transforms and
// stochastic rounding of gradients, which the emulation does not: docs/FP8.md).
constexpr std::array<NamedRecipe, 7> kLowPrecisionRecipes{{
    {"fp8-unscaled", "FP8 without scaling", Format::bf16, true, true, true, nullptr, QuantMode::fp8Unscaled, true},
    {"fp8-delayed", "FP8 delayed scaling", Format::bf16, true, true, true, nullptr, QuantMode::fp8Delayed, true},
    {"fp8-current", "FP8 current scaling", Format::bf16, true, true, true, nullptr, QuantMode::fp8Current, true},
    {"mxfp8", "MXFP8", Format::bf16, true, true, true, nullptr, QuantMode::mxfp8, false},
    {"mxfp4", "MXFP4", Format::bf16, true, true, true, nullptr, QuantMode::mxfp4, false},
    {"nvfp4", "NVFP4", Format::bf16, true, true, true, nullptr, QuantMode::nvfp4, false},
    {"mxfp6", "MXFP6", Format::bf16, true, true, true, nullptr, QuantMode::mxfp6, false},
}};

template <std::size_t N>
std::vector<std::string> namesOf(const std::array<NamedRecipe, N>& recipes)
{
    std::vector<std::string> names;
    for (const NamedRecipe& n : recipes) names.emplace_back(n.name);
    return names;
}

// Ours first, then the frameworks'.
const NamedRecipe* findNamedRecipe(std::string_view name)
{
    for (const NamedRecipe& n : kNamedRecipes)
        if (name == n.name) return &n;
    for (const NamedRecipe& n : kFrameworkRecipes)
        if (name == n.name) return &n;
    for (const NamedRecipe& n : kLowPrecisionRecipes)
        if (name == n.name) return &n;
    return nullptr;
}

}  // namespace

// ---- LossScaling -----------------------------------------------------------------

LossScaling LossScaling::off()
{
    // The other fields keep their defaults so that every "off" compares equal.
    return LossScaling{};
}

LossScaling LossScaling::fixedScale(double s)
{
    LossScaling l;
    l.mode = LossScaleMode::fixed;
    l.initScale = s;
    return l;
}

std::optional<LossScaling> LossScaling::preset(std::string_view name)
{
    LossScaling l;
    l.mode = LossScaleMode::dynamic;
    l.growthFactor = 2.0;
    l.backoffFactor = 0.5;
    l.growthInterval = 2000;
    if (name == "pytorch" || name == "dynamic") {
        // torch.cuda.amp.GradScaler defaults; no floor, no cap.
        l.initScale = 65536.0;
    } else if (name == "tensorflow") {
        // tf.keras.mixed_precision.LossScaleOptimizer: initial 2^15, and the scale
        // never backs off below 1.
        l.initScale = 32768.0;
        l.minScale = 1.0;
    } else if (name == "apex") {
        // apex.amp dynamic scaling: initial 2^16, max_loss_scale 2^24.
        l.initScale = 65536.0;
        l.maxScale = 16777216.0;
    } else {
        return std::nullopt;
    }
    return l;
}

std::string LossScaling::validate() const
{
    if (mode == LossScaleMode::off) return {};
    const std::string what = mode == LossScaleMode::fixed ? "static loss scale" : "initial loss scale";
    if (!isPossibleFp32Scale(initScale))
        return what + " must be a normal fp32 number, from 2^-126 to below 2^128, got " + shortestDecimal(initScale);
    if (mode == LossScaleMode::fixed) return {};

    if (!std::isfinite(growthFactor) || !(growthFactor > 1.0))
        return "growth factor must be greater than 1, got " + shortestDecimal(growthFactor);
    if (!(backoffFactor > 0.0 && backoffFactor < 1.0))
        return "backoff factor must lie strictly between 0 and 1, got " + shortestDecimal(backoffFactor);
    if (growthInterval < 1 || growthInterval > kMaxGrowthInterval)
        return "growth interval must be between 1 and " + std::to_string(kMaxGrowthInterval) + " steps, got " +
               std::to_string(growthInterval);
    if (minScale && !isPossibleFp32Scale(*minScale))
        return "minimum loss scale must be a normal fp32 number, from 2^-126 to below 2^128, got " +
               shortestDecimal(*minScale);
    if (maxScale && !isPossibleFp32Scale(*maxScale))
        return "maximum loss scale must be a normal fp32 number, from 2^-126 to below 2^128, got " +
               shortestDecimal(*maxScale);
    if (minScale && maxScale && *minScale > *maxScale)
        return "minimum loss scale " + shortestDecimal(*minScale) + " is larger than the maximum loss scale " +
               shortestDecimal(*maxScale);
    if (minScale && initScale < *minScale)
        return "initial loss scale " + shortestDecimal(initScale) + " is below the minimum loss scale " +
               shortestDecimal(*minScale);
    if (maxScale && initScale > *maxScale)
        return "initial loss scale " + shortestDecimal(initScale) + " is above the maximum loss scale " +
               shortestDecimal(*maxScale);
    return {};
}

std::string LossScaling::describe() const
{
    switch (mode) {
    case LossScaleMode::off: return "no loss scaling";
    case LossScaleMode::fixed: return "static loss scale " + shortestDecimal(initScale);
    case LossScaleMode::dynamic: break;
    }
    std::string text = "dynamic loss scaling " + shortestDecimal(initScale) + " x" + shortestDecimal(growthFactor) +
                       " " + backoffText(backoffFactor) + " every " + std::to_string(growthInterval);
    if (minScale) text += ", min " + shortestDecimal(*minScale);
    if (maxScale) text += ", max " + shortestDecimal(*maxScale);
    return text;
}

std::optional<LossScaling> parseLossScaleOption(std::string_view text, std::string* error)
{
    auto fail = [&](std::string message) -> std::optional<LossScaling> {
        if (error) *error = std::move(message);
        return std::nullopt;
    };
    if (text == "off") return LossScaling::off();
    if (auto dynamic = LossScaling::preset(text)) return dynamic;

    constexpr std::string_view staticPrefix = "static:";
    if (text == "static" || text == "static:")
        return fail("static loss scaling needs a value, e.g. static:1024");
    if (text.substr(0, staticPrefix.size()) == staticPrefix) {
        const std::string_view number = text.substr(staticPrefix.size());
        double value = 0.0;
        const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
        if (ec != std::errc{} || end != number.data() + number.size())
            return fail("static loss scale '" + std::string(number) + "' is not a number");
        if (!isPossibleFp32Scale(value))
            return fail("static loss scale must be a normal fp32 number, from 2^-126 to below 2^128, got '" +
                        std::string(number) + "'");
        return LossScaling::fixedScale(value);
    }
    return fail("unknown loss scaling '" + std::string(text) +
                "': expected off, static:S, dynamic, pytorch, tensorflow or apex");
}

// ---- Quantization ---------------------------------------------------------------

namespace {

// One row per mode, in the enum's order: its names, how it scales, its block, its elements.
constexpr std::array<QuantModeInfo, 8> kQuantModes{{
    {QuantMode::off, "off", "in the compute format", "", QuantScale::none, 0, MiniFormat::e4m3, MiniFormat::e5m2, true},
    {QuantMode::fp8Unscaled, "fp8-unscaled", "FP8, no scaling", "FP8", QuantScale::unscaled, 0, MiniFormat::e4m3, MiniFormat::e5m2, true},
    {QuantMode::fp8Delayed, "fp8-delayed", "FP8, delayed scaling", "FP8", QuantScale::tensorDelayed, 0, MiniFormat::e4m3, MiniFormat::e5m2, true},
    {QuantMode::fp8Current, "fp8-current", "FP8, current scaling", "FP8", QuantScale::tensorCurrent, 0, MiniFormat::e4m3, MiniFormat::e5m2, true},
    {QuantMode::mxfp8, "mxfp8", "MXFP8 (blocks of 32)", "MXFP8", QuantScale::blockE8M0, kMxBlockSize, MiniFormat::e4m3, MiniFormat::e5m2, true},
    {QuantMode::mxfp4, "mxfp4", "MXFP4 (blocks of 32)", "MXFP4", QuantScale::blockE8M0, kMxBlockSize, MiniFormat::e2m1, MiniFormat::e2m1, false},
    {QuantMode::nvfp4, "nvfp4", "NVFP4 (blocks of 16)", "NVFP4", QuantScale::blockE4M3, kNvfp4BlockSize, MiniFormat::e2m1, MiniFormat::e2m1, false},
    // OCP MX's two FP6 formats: E2M3's finer steps forward, E3M2's wider range for gradients
    // (as FP8 recipes take E4M3 and E5M2).
    {QuantMode::mxfp6, "mxfp6", "MXFP6 (blocks of 32)", "MXFP6", QuantScale::blockE8M0, kMxBlockSize, MiniFormat::e2m3, MiniFormat::e3m2, false},
}};
static_assert([] {
    for (std::size_t i = 0; i < kQuantModes.size(); ++i)
        if (static_cast<std::size_t>(kQuantModes[i].mode) != i) return false;
    return true;
}(), "the quantisation modes' rows are in the enum's order");

}  // namespace

std::span<const QuantModeInfo> quantModes() { return kQuantModes; }

const QuantModeInfo& quantModeInfo(QuantMode m) { return kQuantModes[static_cast<std::size_t>(m)]; }

std::string_view quantModeName(QuantMode m)
{
    for (const QuantModeInfo& q : kQuantModes)
        if (q.mode == m) return q.name;
    return "off";
}

std::optional<QuantMode> parseQuantMode(std::string_view name)
{
    for (const QuantModeInfo& q : kQuantModes)
        if (q.name == name) return q.mode;
    return std::nullopt;
}

std::string_view amaxAlgorithmName(AmaxAlgorithm a) { return a == AmaxAlgorithm::max ? "max" : "most_recent"; }

std::optional<AmaxAlgorithm> parseAmaxAlgorithm(std::string_view name)
{
    if (name == "max") return AmaxAlgorithm::max;
    if (name == "most_recent") return AmaxAlgorithm::mostRecent;
    return std::nullopt;
}

MiniFormat Quantization::forwardFormat() const { return info().elements; }

MiniFormat Quantization::gradientFormat() const
{
    return info().fp8Elements && !hybrid ? info().elements : info().gradients;
}

std::string Quantization::validate() const
{
    if (amaxHistory < 1 || amaxHistory > kMaxAmaxHistory)
        return "amax history must be 1 to " + std::to_string(kMaxAmaxHistory) + " steps, got " +
               std::to_string(amaxHistory);
    if (margin < -kMaxMargin || margin > kMaxMargin)
        return "FP8 margin must be an integer from " + std::to_string(-kMaxMargin) + " to " +
               std::to_string(kMaxMargin) + ", got " + std::to_string(margin);
    return {};
}

// ---- Per-layer precision ----------------------------------------------------------

std::string_view quantPassesName(QuantPasses p)
{
    switch (p) {
    case QuantPasses::both: return "both";
    case QuantPasses::forward: return "forward";
    case QuantPasses::backward: return "backward";
    }
    return "both";
}

std::string layerPrecisionOfPass(std::string_view mode, QuantPasses pass)
{
    return std::string(mode) + ":" + std::string(quantPassesName(pass));
}

std::string_view LayerPrecision::base() const
{
    return std::string_view(precision).substr(0, precision.find(':'));
}

QuantPasses LayerPrecision::passes() const
{
    const std::size_t colon = precision.find(':');
    if (colon == std::string::npos) return QuantPasses::both;
    return std::string_view(precision).substr(colon + 1) == quantPassesName(QuantPasses::forward) ? QuantPasses::forward
                                                                                                  : QuantPasses::backward;
}

const std::vector<std::string>& layerPrecisionNames()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const FormatInfo& f : formats()) out.emplace_back(f.name);
        for (const QuantModeInfo& q : kQuantModes)
            if (q.mode != QuantMode::off) out.emplace_back(q.name);
        for (QuantPasses pass : {QuantPasses::forward, QuantPasses::backward})
            for (const QuantModeInfo& q : kQuantModes)
                if (q.blockSize > 0) out.push_back(layerPrecisionOfPass(q.name, pass));
        return out;
    }();
    return names;
}

namespace {

std::string_view trimmed(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// At most 40 characters of a user's text, for a message.
std::string excerpt(std::string_view s)
{
    std::string out;
    for (char c : s.substr(0, 40)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    return s.size() > 40 ? out + "..." : out;
}

}  // namespace

std::optional<std::vector<LayerPrecision>> parseLayerPrecisions(std::string_view text, std::string* error)
{
    const auto fail = [&](const std::string& what) -> std::optional<std::vector<LayerPrecision>> {
        if (error) *error = what;
        return std::nullopt;
    };
    std::vector<LayerPrecision> out;
    if (trimmed(text).empty()) return out;
    while (true) {
        const std::size_t comma = text.find(',');
        const std::string_view item = trimmed(text.substr(0, comma));
        const std::size_t eq = item.find('=');
        if (eq == std::string_view::npos)
            return fail("'" + excerpt(item) + "' is not layer=precision (e.g. conv1=fp32)");
        const std::string layer(trimmed(item.substr(0, eq)));
        const std::string precision(trimmed(item.substr(eq + 1)));
        if (layer.empty()) return fail("'" + excerpt(item) + "' names no layer (e.g. conv1=fp32)");
        if (!std::all_of(layer.begin(), layer.end(), [](char c) {
                return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '.';   // a transformer block's layers: block1.qkv
            }))
            return fail("layer name '" + excerpt(layer) + "' may hold only letters, digits, _ and .");
        const auto& names = layerPrecisionNames();
        if (std::find(names.begin(), names.end(), precision) == names.end())
            return fail(excerpt(layer) + ": precision must be " + alternatives(names) + ", got '" + excerpt(precision) +
                        "'" + didYouMean(precision, names));
        if (std::any_of(out.begin(), out.end(), [&](const LayerPrecision& l) { return l.layer == layer; }))
            return fail(excerpt(layer) + " is given twice");
        out.push_back({layer, precision});
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return out;
}

std::string layerPrecisionsText(const std::vector<LayerPrecision>& layers)
{
    std::string out;
    for (const auto& l : layers) out += (out.empty() ? "" : ",") + l.layer + "=" + l.precision;
    return out;
}

// ---- PrecisionRecipe --------------------------------------------------------------

const LayerPrecision* PrecisionRecipe::layerPrecision(std::string_view layer) const
{
    for (const auto& l : layers)
        if (l.layer == layer) return &l;
    return nullptr;
}

PrecisionRecipe PrecisionRecipe::forLayer(std::string_view layer) const
{
    PrecisionRecipe r = *this;
    r.layers.clear();
    if (const LayerPrecision* l = layerPrecision(layer)) {
        if (const auto f = parseFormat(l->precision)) {
            r.compute = *f;
            r.quantization.mode = QuantMode::off;
        } else if (const auto mode = parseQuantMode(l->base())) {   // "mxfp4" or "mxfp4:forward"
            r.quantization.mode = *mode;
            r.quantization.passes = l->passes();
        }
    }
    return r;
}

Format PrecisionRecipe::storage() const
{
    // tf32 only changes matmul/conv operands; what is stored stays fp32.
    return formatInfo(compute).packable16() ? compute : Format::fp32;
}

bool PrecisionRecipe::keepsMasterCopy() const { return masterWeights && compute != Format::fp32; }

Format PrecisionRecipe::weightFormat() const { return keepsMasterCopy() ? compute : storage(); }

Format PrecisionRecipe::gradientFormat() const { return masterWeights ? Format::fp32 : storage(); }

Format PrecisionRecipe::optimizerStateFormat() const
{
    if (optimizerState) return *optimizerState;
    return masterWeights ? Format::fp32 : storage();
}

std::optional<PrecisionRecipe> PrecisionRecipe::fromPreset(std::string_view name)
{
    const NamedRecipe* n = findNamedRecipe(name);
    if (!n) return std::nullopt;
    PrecisionRecipe r;
    r.preset = n->name;
    r.compute = n->compute;
    r.masterWeights = n->masterWeights;
    r.fp32Accumulate = n->fp32Accumulate;
    r.fp32SensitiveOps = n->fp32SensitiveOps;
    r.lossScaling = n->lossScalingPreset ? *LossScaling::preset(n->lossScalingPreset) : LossScaling::off();
    r.quantization.mode = n->quantization;
    r.quantization.hybrid = n->hybrid;
    return r;
}

const std::vector<std::string>& PrecisionRecipe::presetNames()
{
    static const std::vector<std::string> names = namesOf(kNamedRecipes);
    return names;
}

const std::vector<std::string>& PrecisionRecipe::frameworkPresetNames()
{
    static const std::vector<std::string> names = namesOf(kFrameworkRecipes);
    return names;
}

const std::vector<std::string>& PrecisionRecipe::lowPrecisionPresetNames()
{
    static const std::vector<std::string> names = namesOf(kLowPrecisionRecipes);
    return names;
}

std::vector<std::string> PrecisionRecipe::allPresetNames()
{
    std::vector<std::string> names;
    for (const auto* list : {&presetNames(), &frameworkPresetNames(), &lowPrecisionPresetNames()})
        names.insert(names.end(), list->begin(), list->end());
    return names;
}

std::string PrecisionRecipe::displayName(std::string_view presetName)
{
    const NamedRecipe* n = findNamedRecipe(presetName);
    return n ? n->displayName : "Custom";
}

std::string PrecisionRecipe::validate() const
{
    if (optimizerState && *optimizerState != Format::fp32 && *optimizerState != Format::bf16 &&
        *optimizerState != Format::fp16)
        return "The optimizer state must be fp32, bf16 or fp16, got " + std::string(formatName(*optimizerState)) + ".";
    if (auto problem = lossScaling.validate(); !problem.empty()) return problem;
    return quantization.validate();
}

bool PrecisionRecipe::matchesPreset(PresetMatch match) const
{
    const auto named = fromPreset(preset);
    if (!named) return false;
    if (match == PresetMatch::wholeRecipe) return *named == *this;
    PrecisionRecipe switches = *this;
    switches.layers = named->layers;
    return *named == switches;
}

}  // namespace plab
