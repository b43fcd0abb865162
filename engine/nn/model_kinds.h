// The model kinds, one row each: name, title, what each of the two widths means with its
// default and range, and the parameter count of given widths. The CLI's help, the
// settings' validation, the settings panel and Model::create read them; adding a model is a
// row here and its layer stack in models.cpp.
#pragma once

#include <array>
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
    std::array<WidthRule, 2> widths;     // ModelSpec::widths, in order
    // Parameters (weights and biases) of the model with widths {a, b}, in double so that
    // absurd widths are counted without overflow.
    double (*parameterCount)(double a, double b);
};

std::span<const ModelKind> modelKinds();
// Null for a name no row has.
const ModelKind* findModelKind(std::string_view name);
// "mlp, deep-mlp, small-cnn or seed-cnn"
std::string modelKindNames();
// What is wrong with `widths` for `kind` (empty: nothing; no widths keep the defaults):
// "model small-cnn takes 2 widths, got 1 (conv1 channels, conv2 channels)".
std::string widthsProblem(const ModelKind& kind, const std::vector<int>& widths);

}  // namespace plab
