// ReLU and Flatten: exact data movement, no rounding sites.
#include "nn/activation.h"

#include "nn/precision.h"

#include <stdexcept>

namespace plab {

Tensor& ReLU::forward(Tensor& input, StepContext& ctx)
{
    float* x = input.data();
    // max(0, x) with NaN kept a NaN (PyTorch's relu propagates it).
    ctx.backend->parallelFor(input.size(), 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) x[i] = (x[i] <= 0.0f) ? 0.0f : x[i];
    });
    output_ = &input;
    return input;
}

Tensor* ReLU::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    if (!output_ || gradOutput.size() != output_->size())
        throw std::invalid_argument("Layer " + name() + " got a gradient that does not match its output.");
    float* g = gradOutput.data();
    const float* y = output_->data();
    ctx.backend->parallelFor(gradOutput.size(), 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) g[i] = (y[i] <= 0.0f) ? 0.0f : g[i];
    });
    return &gradOutput;
}

Shape Flatten::outputShape(const Shape& input) const
{
    if (input.size() == 2) return input;
    if (input.size() != 4)
        throw std::invalid_argument("Layer " + name() + " expects input (C, N, H, W), got " + shapeString(input) + ".");
    return {input[1], input[0] * input[2] * input[3]};
}

Tensor& Flatten::forward(Tensor& input, StepContext& ctx)
{
    const Shape outShape = outputShape(input.shape());
    inputShape_ = input.shape();
    output_.resize(outShape);
    output_.setStorage(input.storage());
    output_.track(ctx.memory, MemoryCategory::activations);
    if (input.rank() == 2) {
        std::copy(input.data(), input.data() + input.size(), output_.data());
        return output_;
    }
    const std::int64_t C = inputShape_[0], N = inputShape_[1], hw = inputShape_[2] * inputShape_[3];
    const float* in = input.data();
    float* out = output_.data();
    // out[n][c*hw + p] = in[c][n][p]
    ctx.backend->parallelFor(C * N, 64, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t item = b; item < e; ++item) {
            const std::int64_t c = item / N, n = item % N;
            std::copy(in + item * hw, in + (item + 1) * hw, out + (n * C + c) * hw);
        }
    });
    return output_;
}

Tensor* Flatten::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    gradInput_.resize(inputShape_);
    gradInput_.setStorage(gradOutput.storage());
    gradInput_.track(ctx.memory, MemoryCategory::workspace);
    if (inputShape_.size() == 2) {
        std::copy(gradOutput.data(), gradOutput.data() + gradOutput.size(), gradInput_.data());
        return &gradInput_;
    }
    const std::int64_t C = inputShape_[0], N = inputShape_[1], hw = inputShape_[2] * inputShape_[3];
    const float* g = gradOutput.data();
    float* dx = gradInput_.data();
    ctx.backend->parallelFor(C * N, 64, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t item = b; item < e; ++item) {
            const std::int64_t c = item / N, n = item % N;
            std::copy(g + (n * C + c) * hw, g + (n * C + c + 1) * hw, dx + item * hw);
        }
    });
    return &gradInput_;
}

std::int64_t Flatten::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape out = outputShape(input);
    return out[1] * formatInfo(recipe.storage()).storageBytes;
}

}  // namespace plab
