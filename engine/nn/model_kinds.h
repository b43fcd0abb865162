// The model kinds, one row each: name, title, what each of its widths means with its
// default and range, a check of widths together, and the parameter count and forward
// multiply-adds of given widths. The CLI's help, the
// settings' validation, the settings panel and Model::create read them; adding a model is a
// row here and its layer stack in models.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

struct WidthRule {
    std::string_view meaning;   // "conv1 channels"
    int defaultValue;
    int min;
    int max;
};

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
};

std::span<const ModelKind> modelKinds();
// Null for a name no row has.
const ModelKind* findModelKind(std::string_view name);
// "mlp, deep-mlp, small-cnn, seed-cnn or vit"
std::string modelKindNames();
// What is wrong with `widths` for `kind` (empty: nothing; no widths keep the defaults):
// "model small-cnn takes 2 widths, got 1 (conv1 channels, conv2 channels)".
std::string widthsProblem(const ModelKind& kind, const std::vector<int>& widths);
// The widths a spec's empty list stands for: the rules' defaults.
std::vector<int> defaultWidths(const ModelKind& kind);
// "conv1 channels, conv2 channels"
std::string widthMeanings(const ModelKind& kind);

}  // namespace plab
