// ReLU (in place, exact) and Flatten ((C, N, H, W) -> (N, C*H*W) in PyTorch's order).
#pragma once

#include "nn/layer.h"

namespace plab {

class ReLU final : public Layer {
public:
    explicit ReLU(std::string name) : Layer(std::move(name)) {}

    Shape outputShape(const Shape& input) const override { return input; }
    // Rectifies `input` in place and returns it; keeps it (the output) for the mask.
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape&, const PrecisionRecipe&) const override { return 0; }

private:
    Tensor* output_ = nullptr;   // the rectified tensor (owned by the previous layer)
};

class Flatten final : public Layer {
public:
    explicit Flatten(std::string name) : Layer(std::move(name)) {}

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    Shape inputShape_;
    Tensor output_;      // (N, C*H*W)
    Tensor gradInput_;   // (C, N, H, W)
};

}  // namespace plab
