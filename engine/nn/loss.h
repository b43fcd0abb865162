// Softmax + cross-entropy, mean over the batch. With fp32 sensitive ops (autocast) the
// log-softmax and the loss run in fp32 from the storage-format logits; without, every
// intermediate (differences, exp values, their running sum, the log, the loss sum and the
// mean) is rounded to the storage format, so fp16 underflows there as real fp16 does.
#pragma once

#include "nn/model.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <vector>

namespace plab {

class SoftmaxCrossEntropy {
public:
    // logits (N, classes); labels: N values in [0, classes). Keeps the probabilities.
    StepOutput forward(const Tensor& logits, const std::vector<std::uint8_t>& labels, StepContext& ctx);

    // dL/dlogits * lossScale = (softmax - onehot) / N * lossScale, computed in fp32, then
    // rounded to the storage format (tap "loss", activation_grad). (N, classes)
    // With label smoothing e (StepContext::labelSmoothing, training only; the loss in fp32):
    // the loss is (1 - e) CE + e mean_j(-log p_j) = CE + e mean_n(x_label - mean_j x_j), and
    // e (onehot - 1 / classes) / N * lossScale is added to the gradient before its rounding.
    Tensor& backward(float lossScale, StepContext& ctx);

    static constexpr const char* kTapName = "loss";

private:
    Tensor probabilities_;              // (N, classes) fp32 (storage-rounded when emulated)
    std::vector<std::uint8_t> labels_;  // (N)
    Tensor gradLogits_;                 // (N, classes)
    Tensor smoothingTerm_;              // (N, classes): label smoothing's part of the gradient
    float smoothing_ = 0.0f;            // the forward pass's label smoothing
    Format storage_ = Format::fp32;     // the logits' format, of the gradient too
};

}  // namespace plab

namespace plab {

// Mean squared error of a reconstruction against its target (the autoencoder's input image),
// mean over the batch times the pixels: the dense per-pixel loss, where every output's
// gradient is 2 (y - x) / (N * pixels), small enough for fp16 to flush without loss scaling.
// The loss and its gradient are computed in fp32 from the storage-format outputs (as
// PyTorch's mse_loss runs in fp32 under autocast and in fp32 opmath on fp16 tensors); without
// fp32 sensitive ops, in a reduced storage format, each difference and square is rounded to
// it before the fp32 sum, and the mean is rounded too. The gradient is rounded once into the
// outputs' format (tap "loss", activation_grad): where fp16 flushes the small ones.
class MeanSquaredError {
public:
    // outputs (N, pixels); targets: N * pixels fp32 values in host memory.
    StepOutput forward(const Tensor& outputs, const float* targets, StepContext& ctx);
    // dL/dy * lossScale, rounded to the outputs' storage format. (N, pixels)
    Tensor& backward(float lossScale, StepContext& ctx);

    static constexpr const char* kTapName = "loss";

private:
    Tensor differences_;   // y - x, fp32 (N, pixels): workspace, as the cross-entropy's probabilities
    Shape shape_;
    Tensor gradOutputs_;
    Format storage_ = Format::fp32;
};

}  // namespace plab
