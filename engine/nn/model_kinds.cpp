// The model kinds' table (see model_kinds.h).
#include "nn/model_kinds.h"

#include "error.h"

#include <algorithm>

namespace plab {

namespace {

constexpr int kMaxWidth = 1 << 16;

// 28 x 28 inputs, 10 classes; the CNNs' 3 x 3 convolutions pool twice to 7 x 7.
const ModelKind kKinds[] = {
    {"mlp", "MLP 784-512-256-10",
     {{{"first hidden width", 512, 1, kMaxWidth}, {"second hidden width", 256, 1, kMaxWidth}}},
     [](double a, double b) { return 784 * a + a + a * b + b + b * 10 + 10; }},
    {"deep-mlp", "Deep MLP (16 layers of 128, no normalisation)",
     {{{"hidden width", 128, 1, kMaxWidth}, {"number of linear layers", 16, 2, 64}}},
     [](double a, double b) { return 784 * a + a + (b - 2) * (a * a + a) + a * 10 + 10; }},
    {"small-cnn", "Small CNN", {{{"conv1 channels", 32, 1, kMaxWidth}, {"conv2 channels", 64, 1, kMaxWidth}}},
     [](double a, double b) { return 9 * a + a + 9 * a * b + b + 49 * b * 10 + 10; }},
    {"seed-cnn", "Seed CNN (420/1000 channels)",
     {{{"conv1 channels", 420, 1, kMaxWidth}, {"conv2 channels", 1000, 1, kMaxWidth}}},
     [](double a, double b) { return 9 * a + a + 9 * a * b + b + 49 * b * 10 + 10; }},
};

}  // namespace

std::span<const ModelKind> modelKinds()
{
    return kKinds;
}

const ModelKind* findModelKind(std::string_view name)
{
    const auto* it = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const ModelKind& k) { return k.name == name; });
    return it == std::end(kKinds) ? nullptr : it;
}

std::string modelKindNames()
{
    std::vector<std::string> names;
    for (const ModelKind& k : kKinds) names.emplace_back(k.name);
    return alternatives(names);
}

std::string widthsProblem(const ModelKind& kind, const std::vector<int>& widths)
{
    const std::string model = "model " + std::string(kind.name);
    if (widths.empty()) return {};
    if (widths.size() != kind.widths.size())
        return model + " takes " + std::to_string(kind.widths.size()) + " widths, got " + std::to_string(widths.size()) +
               " (" + std::string(kind.widths[0].meaning) + ", " + std::string(kind.widths[1].meaning) + ")";
    for (std::size_t i = 0; i < widths.size(); ++i) {
        const WidthRule& rule = kind.widths[i];
        if (widths[i] < rule.min || widths[i] > rule.max)
            return model + ": the " + std::string(rule.meaning) + " must be between " + std::to_string(rule.min) +
                   " and " + std::to_string(rule.max) + ", got " + std::to_string(widths[i]);
    }
    return {};
}

}  // namespace plab
