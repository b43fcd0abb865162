// The sentences of a recipe: its one-line description, the notices of unusual
// combinations, and what changed between two recipes (see recipe.h).
#include "amp/recipe.h"

#include <sstream>

namespace plab {

std::string Quantization::describe() const
{
    if (mode == QuantMode::off) return "operands in the compute format";
    if (passes != QuantPasses::both) {
        Quantization both = *this;
        both.passes = QuantPasses::both;
        return both.describe() + " on the " + std::string(quantPassesName(passes)) + " pass only";
    }
    const std::string fwd(miniFormatInfo(forwardFormat()).name);
    const std::string bwd(miniFormatInfo(gradientFormat()).name);
    const std::string formats = fwd != bwd       ? fwd + " forward, " + bwd + " gradients"
                                : fp8Elements() ? fwd + " throughout"
                                                : fwd + " elements";
    // By how the mode scales (its row), so a mode added as a row is described too.
    const std::string label(info().label);
    const std::string blocks = "blocks of " + std::to_string(info().blockSize);
    switch (info().scale) {
    case QuantScale::none: break;
    case QuantScale::unscaled: return label + " without scaling (" + formats + ", scale 1)";
    case QuantScale::tensorDelayed:
        return label + " delayed scaling (" + formats + ", amax history " + std::to_string(amaxHistory) + " " +
               std::string(amaxAlgorithmName(algorithm)) + ", margin " + std::to_string(margin) + ")";
    case QuantScale::tensorCurrent:
        return label + " current scaling (" + formats + ", margin " + std::to_string(margin) + ")";
    case QuantScale::blockE8M0:
        return label + " (" + formats + ", " + blocks + " with an E8M0 scale" +
               (mxScale == MxScaleRounding::ceil ? ", exponent rounded up" : "") + ")";
    case QuantScale::blockE4M3:
        return label + " (" + formats + ", " + blocks + " with an E4M3 scale, an fp32 scale per tensor)";
    }
    return {};
}

std::vector<std::string> PrecisionRecipe::notices() const
{
    std::vector<std::string> out;
    const std::string computeName(formatName(compute));
    const bool scaling = lossScaling.mode != LossScaleMode::off;

    if (scaling && compute == Format::fp16 && !masterWeights)
        out.push_back("Loss scaling with fp16 weights and no fp32 master copy: PyTorch's GradScaler refuses "
                      "fp16 parameters; Apex O3 runs pure fp16 with scale 1 — allowed here for comparison.");
    if (!scaling && compute == Format::fp16 && masterWeights)
        out.push_back("fp16 mixed precision without loss scaling: gradients smaller than 2^-24 underflow to "
                      "zero in fp16 and are lost; AMP normally scales the loss.");
    if (scaling && compute != Format::fp16)
        out.push_back("Loss scaling with " + computeName +
                      " compute is harmless but unusual: " + computeName +
                      " has an 8-bit exponent like fp32, so gradients rarely underflow.");
    if (!fp32Accumulate && (compute == Format::bf16 || compute == Format::tf32))
        out.push_back("Accumulation in " + computeName + ": no GPU library accumulates in bf16 or tf32; "
                      "this is emulated on the CPU only.");
    if (!fp32Accumulate && compute == Format::fp32)
        out.push_back("fp32 accumulation off has no effect with fp32 compute.");
    // Pure fp16/bf16 (model.half()) run softmax in the compute format by definition;
    // in a mixed-precision recipe it is a deliberate departure from autocast.
    if (!fp32SensitiveOps && masterWeights && formatInfo(compute).packable16())
        out.push_back("Softmax and cross-entropy in " + computeName +
                      ": autocast keeps them in fp32 because exp() overflows and sums lose precision "
                      "in reduced precision.");
    if (quantization.on() && compute == Format::tf32)
        out.push_back("TF32 with quantised operands: matmul/conv inputs are in " +
                      std::string(miniFormatInfo(quantization.forwardFormat()).name) +
                      ", so tf32 changes nothing; outputs stay fp32.");
    if (quantization.on() && !fp32Accumulate)
        out.push_back("Quantised operands summed in " + computeName +
                      ": FP8 and MX matrix units accumulate in fp32; this is emulated on the CPU only.");
    if (masterWeights && optimizerStateFormat() != Format::fp32)
        out.push_back("Optimizer state in " + std::string(formatName(optimizerStateFormat())) +
                      " beside fp32 master weights: the master copy keeps small updates, but the momentum "
                      "and Adam's moments are rounded to " + std::string(formatName(optimizerStateFormat())) +
                      " at every step (as 16-bit optimizers do to save memory).");
    if (updateRounding == UpdateRounding::stochastic && gradientFormat() == Format::fp32)
        out.push_back("Stochastic update rounding changes nothing here: the optimizer writes fp32 weights, "
                      "which its fp32 arithmetic already rounds to nearest. It is meant for weights kept in "
                      "16 bits without a master copy.");
    if (updateRounding == UpdateRounding::kahan && gradientFormat() == Format::fp32)
        out.push_back("Kahan-compensated updates of fp32 weights: the compensation (4 bytes a parameter) keeps "
                      "what fp32 rounding drops; it is meant for weights kept in 16 bits without a master copy.");
    if (!masterWeights && storage() == Format::fp32 && compute != Format::fp32)
        out.push_back("Master weights off changes nothing with " + computeName +
                      " compute: the weights are stored in fp32 either way.");
    return out;
}

std::string PrecisionRecipe::describe() const
{
    const std::string label = matchesPreset(PresetMatch::switchesOnly) ? displayName(preset) : "Custom";
    const std::string computeName(formatName(compute));
    const std::string storageName(formatName(storage()));

    std::ostringstream out;
    out << label << ": " << computeName << (quantization.on() ? " outputs, " : " compute, ");
    if (compute == Format::fp32)
        out << "fp32 weights";
    else if (masterWeights)
        out << "fp32 master weights";
    else
        out << storageName << " weights (no master copy)";
    // The state's format is named where it departs from PyTorch's rule (the parameter's dtype).
    PrecisionRecipe byRule = *this;
    byRule.optimizerState.reset();
    if (optimizerStateFormat() != byRule.optimizerStateFormat())
        out << ", " << formatName(optimizerStateFormat()) << " optimizer state";
    if (updateRounding == UpdateRounding::stochastic) out << ", stochastic update rounding";
    if (updateRounding == UpdateRounding::kahan) out << ", Kahan-compensated updates";
    out << ", " << (fp32Accumulate || compute == Format::fp32 ? std::string("fp32") : computeName)
        << " accumulation";
    out << ", " << (fp32SensitiveOps ? std::string("fp32") : storageName) << " softmax/loss";
    if (fp32AttentionScores) out << ", fp32 attention scores";
    out << ", " << lossScaling.describe();
    if (quantization.on()) out << ", " << quantization.describe();
    for (std::size_t i = 0; i < layers.size(); ++i)
        out << (i == 0 ? "; per layer: " : ", ") << layers[i].layer << " " << layers[i].precision;
    return out.str();
}

namespace {

std::string onOff(bool b) { return b ? "on" : "off"; }

std::string scalingText(const LossScaling& l)
{
    std::ostringstream out;
    switch (l.mode) {
    case LossScaleMode::off: out << "off"; break;
    case LossScaleMode::fixed: out << "static " << l.initScale; break;
    case LossScaleMode::dynamic: out << "dynamic from " << l.initScale; break;
    }
    return out.str();
}

}  // namespace

std::string describeRecipeChange(const PrecisionRecipe& a, const PrecisionRecipe& b)
{
    std::vector<std::string> parts;
    if (a.compute != b.compute)
        parts.push_back("compute " + std::string(formatName(a.compute)) + " -> " + std::string(formatName(b.compute)));
    if (a.masterWeights != b.masterWeights)
        parts.push_back("master weights " + onOff(a.masterWeights) + " -> " + onOff(b.masterWeights));
    if (a.optimizerStateFormat() != b.optimizerStateFormat())
        parts.push_back("optimizer state " + std::string(formatName(a.optimizerStateFormat())) + " -> " +
                        std::string(formatName(b.optimizerStateFormat())));
    if (a.updateRounding != b.updateRounding)
        parts.push_back("update rounding " + std::string(updateRoundingName(a.updateRounding)) + " -> " +
                        std::string(updateRoundingName(b.updateRounding)));
    if (a.fp32Accumulate != b.fp32Accumulate)
        parts.push_back("fp32 accumulation " + onOff(a.fp32Accumulate) + " -> " + onOff(b.fp32Accumulate));
    if (a.fp32SensitiveOps != b.fp32SensitiveOps)
        parts.push_back("fp32 softmax/loss " + onOff(a.fp32SensitiveOps) + " -> " + onOff(b.fp32SensitiveOps));
    if (a.fp32AttentionScores != b.fp32AttentionScores)
        parts.push_back("fp32 attention scores " + onOff(a.fp32AttentionScores) + " -> " + onOff(b.fp32AttentionScores));
    if (!(a.lossScaling == b.lossScaling))
        parts.push_back("loss scaling " + scalingText(a.lossScaling) + " -> " + scalingText(b.lossScaling));
    if (!(a.quantization == b.quantization))
        parts.push_back("quantisation " + a.quantization.describe() + " -> " + b.quantization.describe());
    if (a.layers != b.layers) {
        const auto text = [](const PrecisionRecipe& r) {
            return r.layers.empty() ? std::string("none") : layerPrecisionsText(r.layers);
        };
        parts.push_back("per-layer precision " + text(a) + " -> " + text(b));
    }
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
}

}  // namespace plab
