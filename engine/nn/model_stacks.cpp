// The model kinds' layer stacks and their layers' names (see model_stacks.h).
#include "nn/model_stacks.h"

#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/pool.h"
#include "nn/transformer.h"

namespace plab::stacks {

namespace {

constexpr std::int64_t kImageSide = 28;
constexpr std::int64_t kClasses = 10;

// Linear layers over these hidden widths, a ReLU between two, to `outputs` values.
Layers linearStack(const std::vector<int>& hidden, std::int64_t outputs = kClasses)
{
    Layers layers;
    layers.push_back(std::make_unique<Flatten>("flatten"));
    std::int64_t in = kImageSide * kImageSide;
    int n = 1;
    for (int width : hidden) {
        layers.push_back(std::make_unique<Linear>("fc" + std::to_string(n), in, width));
        layers.push_back(std::make_unique<ReLU>("relu" + std::to_string(n)));
        in = width;
        ++n;
    }
    layers.push_back(std::make_unique<Linear>("fc" + std::to_string(n), in, outputs));
    return layers;
}

std::vector<std::string> linearNames(std::size_t hidden)
{
    std::vector<std::string> names;
    for (std::size_t n = 1; n <= hidden + 1; ++n) names.push_back("fc" + std::to_string(n));
    return names;
}

// deep-mlp's widths: the hidden width, the number of linear layers.
std::vector<int> deepHidden(std::span<const int> w) { return std::vector<int>(static_cast<std::size_t>(w[1] - 1), w[0]); }

}  // namespace

Layers mlp(std::span<const int> w) { return linearStack({w.begin(), w.end()}); }
Layers deepMlp(std::span<const int> w) { return linearStack(deepHidden(w)); }
std::vector<std::string> mlpLayerNames(std::span<const int> w) { return linearNames(w.size()); }
std::vector<std::string> deepMlpLayerNames(std::span<const int> w) { return linearNames(deepHidden(w).size()); }

Layers autoencoder(std::span<const int> w) { return linearStack({w[0], w[1], w[0]}, kImageSide * kImageSide); }
std::vector<std::string> autoencoderLayerNames(std::span<const int>) { return linearNames(3); }

Layers cnn(std::span<const int> w)
{
    Layers layers;
    layers.push_back(std::make_unique<Conv2d>("conv1", 1, w[0]));
    layers.push_back(std::make_unique<ReLU>("relu1"));
    layers.push_back(std::make_unique<MaxPool2d>("pool1"));
    layers.push_back(std::make_unique<Conv2d>("conv2", w[0], w[1]));
    layers.push_back(std::make_unique<ReLU>("relu2"));
    layers.push_back(std::make_unique<MaxPool2d>("pool2"));
    layers.push_back(std::make_unique<Flatten>("flatten"));
    layers.push_back(std::make_unique<Linear>("fc1", std::int64_t{w[1]} * 7 * 7, kClasses));
    return layers;
}

std::vector<std::string> cnnLayerNames(std::span<const int>) { return {"conv1", "conv2", "fc1"}; }

// vit's widths: the width D, the number of blocks, the heads, the patch side.
Layers vit(std::span<const int> w)
{
    const std::int64_t D = w[0], patch = w[3], T = (kImageSide / patch) * (kImageSide / patch);
    Layers layers;
    layers.push_back(std::make_unique<Patchify>("patches", kImageSide, patch));
    layers.push_back(std::make_unique<Linear>("embed", patch * patch, D));
    layers.push_back(std::make_unique<PositionEmbedding>("pos", T, D));
    for (int b = 1; b <= w[1]; ++b)
        layers.push_back(std::make_unique<TransformerBlock>("block" + std::to_string(b), T, D, w[2]));
    layers.push_back(std::make_unique<TokenMeanPool>("pool", T));
    layers.push_back(std::make_unique<LayerNorm>("norm", D));
    layers.push_back(std::make_unique<Linear>("head", D, kClasses));
    return layers;
}

std::vector<std::string> vitLayerNames(std::span<const int> w)
{
    std::vector<std::string> names{"embed", "pos"};
    for (int b = 1; b <= w[1]; ++b)
        for (const char* layer : {"ln1", "qkv", "proj", "ln2", "fc1", "fc2"})
            names.push_back("block" + std::to_string(b) + "." + layer);
    names.push_back("norm");
    names.push_back("head");
    return names;
}

std::vector<std::string> vitTapNames(std::span<const int> w)
{
    std::vector<std::string> names;
    for (const std::string& layer : vitLayerNames(w)) {
        const auto dot = layer.find('.');
        const std::string part = dot == std::string::npos ? layer : layer.substr(dot + 1);
        const std::string block = dot == std::string::npos ? "" : layer.substr(0, dot + 1);
        if (layer == "norm") names.push_back("pool");
        names.push_back(layer);
        if (part == "ln1" || part == "ln2" || layer == "norm")
            names.push_back(layer + std::string(LayerNorm::kStatisticsTap));
        if (part == "qkv")
            for (const std::string& tap : {std::string("attn"), "attn" + std::string(Attention::kScoresTap),
                                           std::string("attn.softmax")})
                names.push_back(block + tap);
        if (part == "proj") names.push_back(block + "residual");   // both adds of the block
        if (part == "fc1") names.push_back(block + "gelu");
    }
    return names;
}

}  // namespace plab::stacks
