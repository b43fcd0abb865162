// A precision recipe: the five independent switches of DESIGN.md section 4, the six
// named presets and the frameworks' named recipes. The one source of truth for the UI,
// the CLI, run records and reports.
#pragma once

#include "numerics/format.h"

#include <optional>
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
    int growthInterval = 2000;
    std::optional<double> minScale; // floor (TensorFlow: 1)
    std::optional<double> maxScale; // cap (Apex: 2^24)

    static LossScaling off();
    static LossScaling fixedScale(double s);
    // Dynamic presets: "pytorch" (= "dynamic"), "tensorflow", "apex".
    static std::optional<LossScaling> preset(std::string_view name);

    // The first impossible setting as one sentence naming it (a scale that is not a
    // positive finite fp32 number, growth factor <= 1, backoff outside (0, 1), interval
    // < 1, min > max, initial scale outside [min, max]); empty when every value is
    // possible. Only the fields the mode uses are checked.
    [[nodiscard]] std::string validate() const;
    // One phrase for logs and reports: "dynamic loss scaling 65536 x2 /2 every 2000".
    std::string describe() const;
    bool operator==(const LossScaling&) const = default;
};

struct PrecisionRecipe {
    std::string preset = "fp32";    // the preset it started from, "custom" once edited
    Format compute = Format::fp32;
    bool masterWeights = true;      // fp32 master copy (on) or weights in the compute format
    bool fp32Accumulate = true;     // products summed in fp32 (on) or in the compute format
    bool fp32SensitiveOps = true;   // softmax, log-softmax, cross-entropy in fp32
    LossScaling lossScaling;

    // Storage format of activations, activation gradients, and (without master
    // weights) of weights, gradients and optimizer state: fp16/bf16 for those compute
    // formats, fp32 for fp32 and tf32 (tf32 only touches matmul/conv operands).
    Format storage() const;

    // Where each copy of a parameter lives under this recipe (one rule for the model,
    // the optimizers and the memory accounting):
    // an fp32 master exists when master weights are on and compute is not fp32 (with fp32
    // compute it would duplicate the weights bit for bit: DESIGN.md's "-");
    bool keepsMasterCopy() const;
    // Parameter::value: the cast copy in the compute format beside a master, else the
    // only copy, in the storage format;
    Format weightFormat() const;
    // weight gradients: fp32 beside master weights (holding storage-rounded values, like
    // the fp32 .grad of an AMP parameter), else the storage format;
    Format gradientFormat() const;
    // momentum and Adam moments: fp32 with master weights, else the storage format.
    Format optimizerStateFormat() const;

    static std::optional<PrecisionRecipe> fromPreset(std::string_view name);
    static const std::vector<std::string>& presetNames();   // fp32 tf32 amp-fp16 ...
    // The frameworks' recipes by their own names, each set by the switches above:
    // apex-O0..apex-O3, mixed_float16, mixed_bfloat16, autocast-fp16, autocast-bf16,
    // allow-tf32 (docs/FRAMEWORK_PRESETS.md). fromPreset and displayName take both lists.
    static const std::vector<std::string>& frameworkPresetNames();
    static std::string displayName(std::string_view presetName);  // "AMP FP16"

    // Notices about unusual but allowed combinations, e.g. loss scaling with fp16
    // weights (PyTorch's GradScaler refuses it), accumulation in bf16. Empty when usual.
    std::vector<std::string> notices() const;
    // The first impossible setting as one sentence; empty when the recipe can run.
    // Impossible values are errors; unusual combinations are notices().
    [[nodiscard]] std::string validate() const;
    // One line, e.g. "AMP FP16: fp16 compute, fp32 master weights, fp32 accumulation,
    // fp32 softmax/loss, dynamic loss scaling 65536 x2 /2 every 2000". Named after the
    // preset while the switches still equal it, "Custom" otherwise.
    std::string describe() const;
    bool operator==(const PrecisionRecipe&) const = default;
};

// Parses a --loss-scale value: "off", "static:S" (S a positive finite number),
// "dynamic" (= "pytorch"), "pytorch", "tensorflow", "apex". On a bad value returns
// nullopt and, when `error` is given, stores one sentence saying what is wrong.
std::optional<LossScaling> parseLossScaleOption(std::string_view text, std::string* error = nullptr);

}  // namespace plab
