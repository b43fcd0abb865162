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
