// Each model kind's layer stack and the names of its layers, as the model kinds' rows
// (model_kinds.h) hold them: one builder, one list of the layers with weights and one of the
// taps per shape. Widths come filled in and checked (their rows' defaults and ranges).
#pragma once

#include "nn/layer.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace plab::stacks {

using Layers = std::vector<std::unique_ptr<Layer>>;

// mlp and deep-mlp: linear layers fc1 ... fcN with a ReLU between two, no normalisation.
Layers mlp(std::span<const int> w);
Layers deepMlp(std::span<const int> w);
std::vector<std::string> mlpLayerNames(std::span<const int> w);
std::vector<std::string> deepMlpLayerNames(std::span<const int> w);

// small-cnn and seed-cnn: two 3x3 convolutions, each with a ReLU and a 2x2 max pool, and a
// linear head.
Layers cnn(std::span<const int> w);
std::vector<std::string> cnnLayerNames(std::span<const int> w);

// autoencoder: fc1 (784 to the hidden width), fc2 (to the code), fc3 (back to the hidden
// width), fc4 (to 784 pixels), a ReLU between two; no output activation (the loss compares
// the outputs with the image's [0, 1] pixels directly).
Layers autoencoder(std::span<const int> w);
std::vector<std::string> autoencoderLayerNames(std::span<const int> w);

// vit: patches embedded, positions added, pre-norm transformer blocks, mean pooling, a final
// LayerNorm, the head; its taps beside its layers with weights (transformer.h says where each is).
Layers vit(std::span<const int> w);
std::vector<std::string> vitLayerNames(std::span<const int> w);
std::vector<std::string> vitTapNames(std::span<const int> w);

}  // namespace plab::stacks
