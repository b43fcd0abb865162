// A precision recipe: the five independent switches of DESIGN.md section 4 and the six
// named presets. The one source of truth for the UI, the CLI, run records and reports.
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

    static std::optional<PrecisionRecipe> fromPreset(std::string_view name);
    static const std::vector<std::string>& presetNames();   // fp32 tf32 amp-fp16 ...
    static std::string displayName(std::string_view presetName);  // "AMP FP16"

    // Notices about unusual but allowed combinations, e.g. loss scaling with fp16
    // weights (PyTorch's GradScaler refuses it), accumulation in bf16. Empty when usual.
    std::vector<std::string> notices() const;
    bool operator==(const PrecisionRecipe&) const = default;
};

}  // namespace plab
