// A precision recipe: its independent switches (docs/ARCHITECTURE.md#recipes) and the
// named recipes (our six presets, the frameworks' names, those below 16 bits). The one
// source of truth for the UI, the CLI, run records and reports.
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/update_math.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

enum class LossScaleMode : std::uint8_t { off, fixed, dynamic };

struct LossScaling {
    LossScaleMode mode = LossScaleMode::off;
    double initScale = 65536.0;     // the static S, or the dynamic scaler's start
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    int growthInterval = 2000;      // 1 to kMaxGrowthInterval steps
    std::optional<double> minScale; // floor (TensorFlow: 1)
    std::optional<double> maxScale; // cap (Apex: 2^24)

    // The longest growth interval a setting, a config or the panel takes.
    static constexpr int kMaxGrowthInterval = 1'000'000'000;

    static LossScaling off();
    static LossScaling fixedScale(double s);
    // Dynamic presets: "pytorch" (= "dynamic"), "tensorflow", "apex".
    static std::optional<LossScaling> preset(std::string_view name);

    // The first impossible setting as one sentence naming it (a scale that is not a
    // positive finite fp32 number, growth factor <= 1, backoff outside (0, 1), interval
    // outside 1 to kMaxGrowthInterval, min > max, initial scale outside [min, max]); empty when every value is
    // possible. Only the fields the mode uses are checked.
    [[nodiscard]] std::string validate() const;
    // One phrase for logs and reports: "dynamic loss scaling 65536 x2 /2 every 2000".
    std::string describe() const;
    bool operator==(const LossScaling&) const = default;
};

// Matmul and convolution inputs below 16 bits: quantised to FP8 or to an OCP
// Microscaling format with a scale, multiplied with fp32 accumulation; everything else
// (outputs, the other ops, the weights' copies) follows the recipe's other switches.
enum class QuantMode : std::uint8_t {
    off,          // operands in the compute format (every 16-bit recipe)
    fp8Unscaled,  // FP8, scale 1: what FP8 does without scaling
    fp8Delayed,   // FP8, per-tensor scale from an amax history (Transformer Engine's DelayedScaling)
    fp8Current,   // FP8, per-tensor scale from the tensor's own amax
    mxfp8,        // OCP MX: blocks of 32 along the reduction dimension, E8M0 scale, FP8 elements
    mxfp4,        // OCP MX: the same with FP4 E2M1 elements
    nvfp4,        // NVFP4: blocks of 16 FP4 E2M1 elements, E4M3 block scales, an fp32 tensor scale
    mxfp6,        // OCP MX: blocks of 32, E8M0 scale, FP6 elements (E2M3 forward, E3M2 gradients)
};
// The quantisation modes, one row each: what settings, the CLI's help, the settings panel
// and per-layer precision offer.
// How a quantisation mode scales its elements.
enum class QuantScale : std::uint8_t {
    none,            // off: operands in the compute format
    unscaled,        // FP8 with scale 1
    tensorDelayed,   // one scale per tensor from an amax history
    tensorCurrent,   // one scale per tensor from the tensor's own amax
    blockE8M0,       // OCP MX: a power-of-two (E8M0) scale per block, no tensor scale
    blockE4M3,       // NVFP4: an E4M3 scale per block and an fp32 scale per tensor
};
struct QuantModeInfo {
    QuantMode mode;
    std::string_view name;    // "fp8-delayed", as settings and records spell it
    std::string_view title;   // the settings panel's choice: "FP8, delayed scaling"
    std::string_view label;   // in sentences: "FP8", "MXFP8", "NVFP4"
    QuantScale scale;
    int blockSize;            // elements sharing a block scale; 0: scaled per tensor
    MiniFormat elements;      // the activations' and weights' elements
    MiniFormat gradients;     // the activation gradients' elements
    // FP8 elements, where Quantization::hybrid chooses the gradients': `gradients` (E5M2)
    // when on, `elements` (E4M3 throughout) when off. Other modes' are always `gradients`.
    bool fp8Elements;
};
std::span<const QuantModeInfo> quantModes();   // in the order of the enum
const QuantModeInfo& quantModeInfo(QuantMode m);
std::string_view quantModeName(QuantMode m);   // "off", "fp8-unscaled", "fp8-delayed", ...
std::optional<QuantMode> parseQuantMode(std::string_view name);

enum class AmaxAlgorithm : std::uint8_t { max, mostRecent };
std::string_view amaxAlgorithmName(AmaxAlgorithm a);   // "max", "most_recent"
std::optional<AmaxAlgorithm> parseAmaxAlgorithm(std::string_view name);

// Which passes of a layer a quantisation covers: both (the recipes'), or one, the other
// pass then multiplying operands rounded to the compute format as an unquantised layer does
// ("fc1=mxfp4:forward" keeps fc1's backward pass in bf16). Block-scaled modes on linear
// layers only (validateSettings says so).
enum class QuantPasses : std::uint8_t { both, forward, backward };
std::string_view quantPassesName(QuantPasses p);   // "both", "forward", "backward"

struct Quantization {
    QuantMode mode = QuantMode::off;
    QuantPasses passes = QuantPasses::both;
    // FP8 formats: E4M3 for activations and weights, E5M2 for gradients ("hybrid", on), or
    // E4M3 throughout (off). MXFP4 and NVFP4 quantise everything to FP4 E2M1 and ignore it.
    bool hybrid = true;
    // Delayed scaling (Transformer Engine's defaults): the amax of the last `amaxHistory`
    // steps, reduced by `algorithm`; scale = largest finite / amax / 2^margin.
    int amaxHistory = 1024;
    AmaxAlgorithm algorithm = AmaxAlgorithm::max;
    int margin = 0;
    // MXFP8 / MXFP4: how each block's E8M0 exponent is rounded (numerics/minifloat.h): floor,
    // the OCP MX reference (the block's largest value may saturate), or ceil, Transformer
    // Engine's MXFP8 (it never does).
    MxScaleRounding mxScale = MxScaleRounding::floor;
    static constexpr int kMaxAmaxHistory = 100000;
    static constexpr int kMaxMargin = 32;

    bool on() const { return mode != QuantMode::off; }
    // Whether the forward pass (activations and weights of the product) or the backward pass
    // (the gradient products) is quantised.
    bool quantizesForward() const { return on() && passes != QuantPasses::backward; }
    bool quantizesBackward() const { return on() && passes != QuantPasses::forward; }
    const QuantModeInfo& info() const { return quantModeInfo(mode); }   // the mode's row
    bool blockScaled() const { return info().blockSize > 0; }
    // FP8 elements, where `hybrid` chooses the gradients' format (not MXFP4, NVFP4).
    bool fp8Elements() const { return on() && info().fp8Elements; }
    MiniFormat forwardFormat() const;    // activations and weights
    MiniFormat gradientFormat() const;   // activation gradients
    // "FP8 delayed scaling (E4M3 forward, E5M2 gradients, amax history 1024 max, margin 0)".
    std::string describe() const;
    // The first impossible value as one sentence (history length < 1, margin outside
    // [-kMaxMargin, kMaxMargin]); empty when every value is possible.
    [[nodiscard]] std::string validate() const;
    bool operator==(const Quantization&) const = default;
};

// Per-layer precision (selective autocast): one layer of the model whose matmul or
// convolution, outputs and weights follow another compute format, or another quantisation,
// than the rest of the recipe (FP8 practice keeps the first and last layers in bf16).
struct LayerPrecision {
    std::string layer;       // a layer with parameters: "conv1", "fc2", ...
    // A compute format (fp32, tf32, fp16, bf16; the layer's operands are not quantised) or a
    // quantisation (fp8-unscaled, fp8-delayed, fp8-current, mxfp8, mxfp4, nvfp4; the recipe's compute
    // format then names the layer's outputs).
    std::string precision;
    bool operator==(const LayerPrecision&) const = default;
    // A quantisation of one pass is spelled "mxfp4:forward": the precision before the colon,
    // and the passes it covers (both where there is no colon).
    std::string_view base() const;
    QuantPasses passes() const;
};
// "mxfp4:forward": a block-scaled mode's name with the one pass it quantises.
std::string layerPrecisionOfPass(std::string_view mode, QuantPasses pass);
// What a layer's precision may be: fp32 tf32 fp16 bf16 fp8-unscaled ... mxfp4, nvfp4, and a
// block-scaled quantisation of one pass: mxfp8:forward, mxfp8:backward, ... nvfp4:backward.
const std::vector<std::string>& layerPrecisionNames();
// "conv1=fp32,fc1=bf16" (spaces allowed, "" for none). On a bad text returns nullopt and, when
// `error` is given, one sentence naming the problem (no '=', an unknown precision, a layer
// named twice). Layer names are checked against the model elsewhere (validateSettings).
std::optional<std::vector<LayerPrecision>> parseLayerPrecisions(std::string_view text, std::string* error = nullptr);
std::string layerPrecisionsText(const std::vector<LayerPrecision>& layers);   // "conv1=fp32,fc1=bf16"

struct PrecisionRecipe {
    std::string preset = "fp32";    // the preset it started from, "custom" once edited
    Format compute = Format::fp32;
    bool masterWeights = true;      // fp32 master copy (on) or weights in the compute format
    bool fp32Accumulate = true;     // products summed in fp32 (on) or in the compute format
    bool fp32SensitiveOps = true;   // softmax, log-softmax, cross-entropy in fp32
    // Attention's scores q k^T: rounded to the storage format before the 1/sqrt(d) scale, as
    // attention written op by op does (off), or kept in fp32 through the softmax and its
    // gradient, as fused kernels (FlashAttention, scaled_dot_product_attention) keep them.
    bool fp32AttentionScores = false;
    LossScaling lossScaling;
    // Below 16 bits: how matmul/conv inputs are quantised (off: rounded to `compute`).
    // With it on, `compute` is the format of everything else: matmul outputs, activations
    // and their gradients are stored in bf16 (compute bf16) or fp32 (compute fp32).
    Quantization quantization;
    // The optimizer state's format (SGD's momentum, Adam's two moments and its `denom`),
    // apart from the weights'. Unset: PyTorch's rule, the state takes its
    // parameter's dtype: fp32 beside master weights, else the storage format (pure-fp16 is
    // model.half() with its fp16 Adam state). Set: fp32, bf16 or fp16, whatever the weights.
    std::optional<Format> optimizerState;
    // How the optimizer's write to the weights rounds: to nearest (PyTorch), stochastically,
    // or Kahan-compensated (numerics/update_math.h). Meant for weights kept in 16 bits
    // without a master copy, where updates below half a unit of the last place are lost.
    UpdateRounding updateRounding = UpdateRounding::nearest;
    // Layers that depart from the switches above (empty: every layer follows them).
    std::vector<LayerPrecision> layers;

    // The recipe one layer runs under: this one with the layer's precision applied (and no
    // per-layer list); this one, less the list, for a layer without an entry (and for the
    // loss, the input and layers without parameters).
    PrecisionRecipe forLayer(std::string_view layer) const;
    // The precision given to `layer`, or nullptr.
    const LayerPrecision* layerPrecision(std::string_view layer) const;

    // Storage format of activations, activation gradients, and (without master
    // weights) of weights, gradients and optimizer state: fp16/bf16 for those compute
    // formats, fp32 for fp32 and tf32 (tf32 only touches matmul/conv operands).
    Format storage() const;

    // Where each copy of a parameter lives under this recipe (one rule for the model,
    // the optimizers and the memory accounting):
    // an fp32 master exists when master weights are on and compute is not fp32 (with fp32
    // compute it would duplicate the weights bit for bit);
    bool keepsMasterCopy() const;
    // Parameter::value: the cast copy in the compute format beside a master, else the
    // only copy, in the storage format;
    Format weightFormat() const;
    // weight gradients: fp32 beside master weights (holding storage-rounded values, like
    // the fp32 .grad of an AMP parameter), else the storage format;
    Format gradientFormat() const;
    // momentum and Adam moments: optimizerState when set, else fp32 with master weights
    // and the storage format without.
    Format optimizerStateFormat() const;

    static std::optional<PrecisionRecipe> fromPreset(std::string_view name);
    static const std::vector<std::string>& presetNames();   // fp32 tf32 amp-fp16 ...
    // The frameworks' recipes by their own names, each set by the switches above:
    // apex-O0..apex-O3, mixed_float16, mixed_bfloat16, autocast-fp16, autocast-bf16,
    // allow-tf32 (docs/FRAMEWORK_PRESETS.md). fromPreset and displayName take both lists.
    static const std::vector<std::string>& frameworkPresetNames();
    // The recipes below 16 bits: fp8-unscaled, fp8-delayed, fp8-current, mxfp8,
    // mxfp4. fromPreset and displayName take them too.
    static const std::vector<std::string>& lowPrecisionPresetNames();
    // Every preset name: ours, the frameworks', the ones below 16 bits.
    static std::vector<std::string> allPresetNames();
    static std::string displayName(std::string_view presetName);  // "AMP FP16"

    // Notices about unusual but allowed combinations, e.g. loss scaling with fp16
    // weights (PyTorch's GradScaler refuses it), accumulation in bf16. Empty when usual.
    std::vector<std::string> notices() const;
    // The first impossible setting as one sentence; empty when the recipe can run.
    // Impossible values are errors; unusual combinations are notices().
    [[nodiscard]] std::string validate() const;
    // One line, e.g. "AMP FP16: fp16 compute, fp32 master weights, fp32 accumulation,
    // fp32 softmax/loss, dynamic loss scaling 65536 x2 /2 every 2000". Named after the
    // preset while the switches still equal it, "Custom" otherwise; per-layer precision is
    // appended ("; per layer: conv1 fp32, fc1 bf16").
    std::string describe() const;
    // Whether this is still the named preset: every switch (formats, master weights, state,
    // accumulation, softmax/loss, loss scaling, quantisation) equals the preset's, and with
    // PresetMatch::wholeRecipe there is no per-layer precision either. The record's "custom",
    // the run list's "(custom)", describe()'s name and the settings panel's mark ask here;
    // the last two show per-layer precision apart and so ask about the switches alone.
    enum class PresetMatch { wholeRecipe, switchesOnly };
    bool matchesPreset(PresetMatch match = PresetMatch::wholeRecipe) const;
    bool operator==(const PrecisionRecipe&) const = default;
};

// What changed from `a` to `b`, "" when nothing: "compute fp32 -> fp16; loss scaling off ->
// dynamic from 65536" (the record's setting-change events).
std::string describeRecipeChange(const PrecisionRecipe& a, const PrecisionRecipe& b);

// Parses a --loss-scale value: "off", "static:S" (S a positive finite number),
// "dynamic" (= "pytorch"), "pytorch", "tensorflow", "apex". On a bad value returns
// nullopt and, when `error` is given, stores one sentence saying what is wrong.
std::optional<LossScaling> parseLossScaleOption(std::string_view text, std::string* error = nullptr);

}  // namespace plab
