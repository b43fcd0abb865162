// What settings mean together, beyond each key's own row (settings.cpp): the notices of
// unusual combinations, the steps a run plans, and the first problem of the whole
// (validateSettings), each as one sentence.
#include "train/settings.h"

#include "error.h"
#include "nn/conv2d.h"
#include "nn/model_kinds.h"
#include "numerics/format.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace plab {

std::vector<std::string> settingsNotices(const TrainSettings& s)
{
    std::vector<std::string> out = s.recipe.notices();
    if (const ModelKind* kind = findModelKind(s.model.kind); s.zeroInitResidual && kind && !kind->residualBranches) {
        std::vector<std::string> with;
        for (const ModelKind& k : modelKinds())
            if (k.residualBranches) with.emplace_back(k.name);
        out.push_back("zero_init_residual: model " + s.model.kind + " has no residual branches (only " +
                      alternatives(with) + " has), so no weight starts at zero");
    }
    if (const ModelKind* kind = findModelKind(s.model.kind); s.recipe.fp32AttentionScores && kind && !kind->attention) {
        std::vector<std::string> with;
        for (const ModelKind& k : modelKinds())
            if (k.attention) with.emplace_back(k.name);
        out.push_back("attention_scores fp32: model " + s.model.kind + " has no attention (only " + alternatives(with) +
                      " has), so nothing changes");
    }
    if (s.telemetry == TelemetryMode::sampled && s.backend != "cuda")
        out.push_back("telemetry sampled: the " + s.backend + " backend has no convolution library, so it rounds and "
                      "counts every step as every-step does");
    else if (s.telemetry == TelemetryMode::sampled && s.histogramEvery == 0)
        out.push_back("telemetry sampled with histogram_every 0: no step takes a snapshot, so the 16-bit "
                      "convolutions' own rounding is never counted");
    if (s.optimizer.kind != "adam") return out;
    const Format state = s.recipe.optimizerStateFormat();
    const std::string name(formatName(state));
    if (roundDoubleTo(state, s.optimizer.eps) == 0.0f) {
        std::ostringstream eps;
        eps << s.optimizer.eps;
        out.push_back("Adam's eps (" + eps.str() + ") is 0 in " + name + ", the optimizer state's format: where a " +
                      "second moment is 0 the update is 0/0, NaN (PyTorch's Adam on " + name + " tensors does the same).");
    }
    if (state == Format::fp16 && s.optimizer.beta2 < 1.0) {
        // A step adds (1 - beta2) g^2 to the second moment; below half of fp16's smallest
        // subnormal (2^-24) that rounds to 0.
        std::ostringstream g;
        g.precision(2);
        g << std::sqrt(std::ldexp(1.0, -25) / (1.0 - s.optimizer.beta2));
        out.push_back("Adam's second moment in fp16: a step adds (1 - beta2) g^2 to it, which rounds to 0 in fp16 "
                      "(below half of 2^-24) for gradients smaller than about " + g.str() + ".");
    }
    return out;
}

std::int64_t plannedSteps(const TrainSettings& s, std::int64_t trainImages)
{
    if (s.batch <= 0 || trainImages <= 0) return 0;
    const std::int64_t all = (trainImages + s.batch - 1) / s.batch * s.epochs;
    return s.maxSteps > 0 ? std::min(all, s.maxSteps) : all;
}

std::string labelSmoothingProblem(const PrecisionRecipe& r, const ModelSpec& model, double e)
{
    if (!(e > 0)) return {};
    // As the loss layer decides: the logits come in the last layer's storage format.
    const auto layers = parameterLayerNames(model);
    const Format logits = layers.empty() ? r.storage() : r.forLayer(layers.back()).storage();
    if (r.fp32SensitiveOps || logits == Format::fp32) return {};
    return "label_smoothing needs the loss in fp32: turn fp32_sensitive_ops on (the " +
           std::string(formatName(logits)) + " loss is emulated op by op)";
}

namespace {

// "16, 32"
std::string joinedWidths(const std::vector<int>& widths)
{
    std::string text;
    for (int w : widths) text += (text.empty() ? "" : ", ") + std::to_string(w);
    return text;
}

// A quantisation of one pass ("fc1=mxfp4:forward") is written for linear layers (nn/linear.cpp);
// a convolution lowers and quantises its input in one go, so it quantises both passes or none.
std::string onePassProblem(const PrecisionRecipe& r, const ModelKind& kind, const std::vector<int>& widths)
{
    const auto onePass = [](const LayerPrecision& l) { return l.passes() != QuantPasses::both; };
    if (std::none_of(r.layers.begin(), r.layers.end(), onePass) || !kind.layers) return {};
    const std::vector<int> w = widths.empty() ? defaultWidths(kind) : widths;
    for (const auto& layer : kind.layers(w))
        if (dynamic_cast<const Conv2d*>(layer.get()))
            for (const LayerPrecision& l : r.layers)
                if (l.layer == layer->name() && onePass(l))
                    return "layer: " + l.layer + "=" + l.precision + " quantises one pass of a convolution; a " +
                           "quantisation of one pass applies to linear layers only (give " + l.layer +
                           " a quantisation of both passes or a compute format)";
    return {};
}

}  // namespace

std::string validateSettings(const TrainSettings& s)
{
    // Each key's value against its row: its range, its choices (the model among them).
    for (const SettingKey& key : settingKeys())
        if (const std::string problem = settingValueProblem(key, s); !problem.empty())
            return std::string(key.key) + " " + problem;
    const ModelKind* kind = findModelKind(s.model.kind);
    // The model's size before anything is allocated: widths its row does not take, or
    // widths whose parameters alone would not fit in memory (65536 x 65536 ran out of memory).
    if (const std::string problem = widthsProblem(*kind, s.model.widths); !problem.empty())
        return "widths: " + problem;
    if (!s.model.widths.empty()) {
        const double parameters = kind->parameterCount(s.model.widths);
        constexpr double kMaxParameters = double(std::int64_t{1} << 28);   // 1 GiB of fp32 weights
        if (parameters > kMaxParameters)
            return "widths: model " + s.model.kind + " with widths " + joinedWidths(s.model.widths) + " has " + std::to_string(static_cast<std::int64_t>(parameters)) +
                   " parameters, more than this lab trains (at most 268,435,456: 1 GiB of fp32 weights, 4 with "
                   "gradients and Adam's state)";
    }
    if (kind->task == ModelTask::reconstruct && s.labelSmoothing != 0.0)
        return "label_smoothing: model " + s.model.kind + " reconstructs its input; it has no classes to smooth";
    if (auto problem = labelSmoothingProblem(s.recipe, s.model, s.labelSmoothing); !problem.empty()) return problem;
    if (s.gradAccumSteps > s.batch)
        return "grad_accum_steps " + std::to_string(s.gradAccumSteps) + " splits each step into more micro-batches than its batch of " +
               std::to_string(s.batch) + " has samples";
    if (s.gradAccumSteps > 1 && s.backend != "cpu")
        return "grad_accum_steps: gradient accumulation runs on the CPU backend only (the " + s.backend +
               " backend does not accumulate yet)";
    if (s.zeroInitResidual && !s.initWeights.empty())
        return "zero_init_residual and init_weights together: the weights file gives every initial weight";
    const auto layers = parameterLayerNames(s.model);
    for (const LayerPrecision& l : s.recipe.layers)
        if (std::find(layers.begin(), layers.end(), l.layer) == layers.end())
            return "layer: model " + s.model.kind + " has no layer '" + l.layer + "' with weights (it has " +
                   alternatives(layers) + ")";
    if (auto problem = onePassProblem(s.recipe, *kind, s.model.widths); !problem.empty()) return problem;
    return s.recipe.validate();
}

}  // namespace plab
