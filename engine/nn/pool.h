// 2x2 max pooling, stride 2, over (C, N, H, W) activations (odd sizes floor, as PyTorch).
// Exact: no rounding. The position of each maximum is kept for backward.
#pragma once

#include "nn/layer.h"
#include "tensor/byte_buffer.h"

#include <cstdint>
#include <vector>

namespace plab {

class MaxPool2d final : public Layer {
public:
    explicit MaxPool2d(std::string name) : Layer(std::move(name)) {}

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    Shape inputShape_;
    Tensor output_;                    // (C, N, H/2, W/2)
    ByteBuffer argmax_;                // (C, N, H/2, W/2): 0..3 = position in the 2x2 window
    Tensor gradInput_;                 // (C, N, H, W)
};

}  // namespace plab
