// The model kinds, one row each: name, title, what each of its widths means with its
// default and range, a check of widths together, the parameter count and forward
// multiply-adds of given widths, its layer stack (the builder), the names of its layers with
// weights and of its taps, whether it has residual branches, and its own training defaults.
// The CLI's help, the settings (their validation, a model's defaults), the settings panel,
// per-layer precision, the layer charts and Model::create read them; adding a model is a row
// here and its stack in model_stacks.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

class Layer;

struct WidthRule {
    std::string_view meaning;   // "conv1 channels"
    int defaultValue;
    int min;
    int max;
};

// What a model learns: the digit's class (softmax cross-entropy over 10 logits, test
// accuracy), or its input image back (per-pixel mean squared error over 784 outputs, test
// MSE and PSNR, reconstructions).
enum class ModelTask : std::uint8_t { classify, reconstruct };

struct ModelKind {
    std::string_view name;               // "small-cnn", as settings and records spell it
    std::string_view title;              // the settings panel's choice
    std::vector<WidthRule> widths;       // ModelSpec::widths, in order
    // Parameters (weights and biases) of the model with these widths (one per rule), in
    // double so that absurd widths are counted without overflow.
    double (*parameterCount)(std::span<const int> w);
    // Multiply-adds of one image's forward pass with these widths (a training step is about
    // three times that per image: the forward pass and the two gradients of each product).
    // What a lesson's cost is estimated by before it runs.
    double (*multiplyAdds)(std::span<const int> w);
    // What is wrong with widths that each keep their rule together ("the heads must
    // divide the width"), empty for nothing; null where any such widths go together.
    std::string (*widthsTogether)(std::span<const int> w) = nullptr;
    // The layers of the model with these widths (checked, defaults filled in), in order.
    std::vector<std::unique_ptr<Layer>> (*layers)(std::span<const int> w) = nullptr;
    // The names of its layers that hold weights, in model order (a transformer block's own
    // layers, "block1.qkv", not the block's), as the built model's layerNames() gives them.
    std::vector<std::string> (*layerNames)(std::span<const int> w) = nullptr;
    // Its taps, the layers telemetry watches, in model order: null for its layers with weights.
    std::vector<std::string> (*tapNames)(std::span<const int> w) = nullptr;
    ModelTask task = ModelTask::classify;
    // Whether it has residual branches (zero_init_residual starts them at zero).
    bool residualBranches = false;
    // Whether it has attention (attention_scores chooses the format of its scores).
    bool attention = false;
    // Its own training defaults where they differ from every model's, as settings JSON (an
    // object of settings keys; empty: none). Read by train/model_defaults.cpp.
    std::string_view trainingDefaults = {};
};

std::span<const ModelKind> modelKinds();
// Null for a name no row has.
const ModelKind* findModelKind(std::string_view name);
// The task of the kind of that name (classify for a name no row has).
ModelTask modelTask(std::string_view kind);
// "mlp, deep-mlp, small-cnn, seed-cnn, vit or autoencoder"
std::string modelKindNames();
// What is wrong with `widths` for `kind` (empty: nothing; no widths keep the defaults):
// "model small-cnn takes 2 widths, got 1 (conv1 channels, conv2 channels)".
std::string widthsProblem(const ModelKind& kind, const std::vector<int>& widths);
// The widths a spec's empty list stands for: the rules' defaults.
std::vector<int> defaultWidths(const ModelKind& kind);
// "conv1 channels, conv2 channels"
std::string widthMeanings(const ModelKind& kind);

}  // namespace plab
