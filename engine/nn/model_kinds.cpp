// The model kinds' table (see model_kinds.h).
#include "nn/model_kinds.h"

#include "error.h"
#include "nn/model_stacks.h"

#include <algorithm>

namespace plab {

namespace {

constexpr int kMaxWidth = 1 << 16;

double d(int v) { return static_cast<double>(v); }

// 28 x 28 inputs, 10 classes; the CNNs' 3 x 3 convolutions pool twice to 7 x 7.
double mlpCount(std::span<const int> w)
{
    const double a = d(w[0]), b = d(w[1]);
    return 784 * a + a + a * b + b + b * 10 + 10;
}

double deepMlpCount(std::span<const int> w)
{
    const double a = d(w[0]), b = d(w[1]);
    return 784 * a + a + (b - 2) * (a * a + a) + a * 10 + 10;
}

double cnnCount(std::span<const int> w)
{
    const double a = d(w[0]), b = d(w[1]);
    return 9 * a + a + 9 * a * b + b + 49 * b * 10 + 10;
}

// vit: the patch embedding, the positions, per block two LayerNorms, qkv, proj and a 4x
// MLP (12 D^2 + 13 D), the final LayerNorm and the head.
double vitCount(std::span<const int> w)
{
    const double D = d(w[0]), blocks = d(w[1]), P = d(w[3]), T = (28 / P) * (28 / P);
    return P * P * D + D + T * D + blocks * (12 * D * D + 13 * D) + 2 * D + 10 * D + 10;
}

// Forward multiply-adds of one image, the products only (biases and element-wise ops are a
// small share): a linear layer's are its weights; a 3 x 3 convolution's, its weights times
// the positions it is applied at (28 x 28, then 14 x 14 after the first pooling).
double mlpMultiplyAdds(std::span<const int> w)
{
    const double a = d(w[0]), b = d(w[1]);
    return 784 * a + a * b + b * 10;
}

double deepMlpMultiplyAdds(std::span<const int> w)
{
    const double a = d(w[0]), b = d(w[1]);
    return 784 * a + (b - 2) * a * a + a * 10;
}

double cnnMultiplyAdds(std::span<const int> w)
{
    const double a = d(w[0]), b = d(w[1]);
    return 28 * 28 * 9 * a + 14 * 14 * 9 * a * b + 49 * b * 10;
}

// vit over T patches: the embedding, per block qkv, the scores and their weighted sum
// (2 T^2 D), the projection and the 4x MLP (12 T D^2 in all), and the head.
double vitMultiplyAdds(std::span<const int> w)
{
    const double D = d(w[0]), blocks = d(w[1]), P = d(w[3]), T = (28 / P) * (28 / P);
    return T * P * P * D + blocks * (12 * T * D * D + 2 * T * T * D) + 10 * D;
}

// autoencoder's widths: the hidden width h, the code width c (784-h-c-h-784).
double autoencoderCount(std::span<const int> w)
{
    const double h = d(w[0]), c = d(w[1]);
    return 784 * h + h + h * c + c + c * h + h + h * 784 + 784;
}

double autoencoderMultiplyAdds(std::span<const int> w)
{
    const double h = d(w[0]), c = d(w[1]);
    return 2 * 784 * h + 2 * h * c;
}

std::string vitTogether(std::span<const int> w)
{
    if (w[0] % w[2] != 0)
        return "the heads (" + std::to_string(w[2]) + ") must divide the width (" + std::to_string(w[0]) + ")";
    if (28 % w[3] != 0) return "the patch side must divide 28 (2, 4, 7, 14 or 28), got " + std::to_string(w[3]);
    return {};
}

const ModelKind kKinds[] = {
    {.name = "mlp",
     .title = "MLP 784-512-256-10",
     .widths = {{"first hidden width", 512, 1, kMaxWidth}, {"second hidden width", 256, 1, kMaxWidth}},
     .parameterCount = mlpCount,
     .multiplyAdds = mlpMultiplyAdds,
     .layers = stacks::mlp,
     .layerNames = stacks::mlpLayerNames},
    {.name = "deep-mlp",
     .title = "Deep MLP (16 layers of 128, no normalisation)",
     .widths = {{"hidden width", 128, 1, kMaxWidth}, {"number of linear layers", 16, 2, 64}},
     .parameterCount = deepMlpCount,
     .multiplyAdds = deepMlpMultiplyAdds,
     .layers = stacks::deepMlp,
     .layerNames = stacks::deepMlpLayerNames},
    {.name = "small-cnn",
     .title = "Small CNN",
     .widths = {{"conv1 channels", 32, 1, kMaxWidth}, {"conv2 channels", 64, 1, kMaxWidth}},
     .parameterCount = cnnCount,
     .multiplyAdds = cnnMultiplyAdds,
     .layers = stacks::cnn,
     .layerNames = stacks::cnnLayerNames},
    {.name = "seed-cnn",
     .title = "Seed CNN (420/1000 channels)",
     .widths = {{"conv1 channels", 420, 1, kMaxWidth}, {"conv2 channels", 1000, 1, kMaxWidth}},
     .parameterCount = cnnCount,
     .multiplyAdds = cnnMultiplyAdds,
     .layers = stacks::cnn,
     .layerNames = stacks::cnnLayerNames},
    // docs/TRANSFORMER.md: with its own defaults 96.00 / 96.30 / 96.20% for seeds 1-3 in 3 epochs.
    {.name = "vit",
     .title = "Vision transformer (7x7 patches)",
     .widths = {{"width", 64, 16, 4096}, {"number of blocks", 2, 1, 24}, {"heads", 4, 1, 256}, {"patch side", 7, 2, 28}},
     .parameterCount = vitCount,
     .multiplyAdds = vitMultiplyAdds,
     .widthsTogether = vitTogether,
     .layers = stacks::vit,
     .layerNames = stacks::vitLayerNames,
     .tapNames = stacks::vitTapNames,
     .residualBranches = true,
     .attention = true,
     .trainingDefaults = R"({"widths": [128, 3, 8, 7], "batch": 16, "lr_schedule": "cosine", "warmup_steps": 150,
                             "zero_init_residual": true, "label_smoothing": 0.1})"},
    // The dense-loss model: the image reconstructed through a narrow code, the loss a mean
    // over batch x 784 outputs (nn/loss.h, MeanSquaredError).
    {.name = "autoencoder",
     .title = "Autoencoder 784-256-32-256-784 (per-pixel MSE)",
     .widths = {{"hidden width", 256, 1, kMaxWidth}, {"code width", 32, 1, kMaxWidth}},
     .parameterCount = autoencoderCount,
     .multiplyAdds = autoencoderMultiplyAdds,
     .layers = stacks::autoencoder,
     .layerNames = stacks::autoencoderLayerNames,
     .task = ModelTask::reconstruct},
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

ModelTask modelTask(std::string_view kind)
{
    const ModelKind* k = findModelKind(kind);
    return k ? k->task : ModelTask::classify;
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
               " (" + widthMeanings(kind) + ")";
    for (std::size_t i = 0; i < widths.size(); ++i) {
        const WidthRule& rule = kind.widths[i];
        if (widths[i] < rule.min || widths[i] > rule.max)
            return model + ": the " + std::string(rule.meaning) + " must be between " + std::to_string(rule.min) +
                   " and " + std::to_string(rule.max) + ", got " + std::to_string(widths[i]);
    }
    if (kind.widthsTogether)
        if (std::string problem = kind.widthsTogether(widths); !problem.empty()) return model + ": " + problem;
    return {};
}

std::vector<int> defaultWidths(const ModelKind& kind)
{
    std::vector<int> w;
    for (const WidthRule& rule : kind.widths) w.push_back(rule.defaultValue);
    return w;
}

std::string widthMeanings(const ModelKind& kind)
{
    std::string text;
    for (const WidthRule& rule : kind.widths) text += (text.empty() ? "" : ", ") + std::string(rule.meaning);
    return text;
}

}  // namespace plab
