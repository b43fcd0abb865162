// MaxPool2d forward (max and its position per 2x2 window) and backward (scatter).
#include "nn/pool.h"

#include "nn/precision.h"

#include <cstring>
#include <stdexcept>

namespace plab {

Shape MaxPool2d::outputShape(const Shape& input) const
{
    if (input.size() != 4 || input[2] < 2 || input[3] < 2)
        throw std::invalid_argument("Layer " + name() + " expects input (C, N, H, W) with H, W >= 2, got " +
                                    shapeString(input) + ".");
    return {input[0], input[1], input[2] / 2, input[3] / 2};
}

Tensor& MaxPool2d::forward(Tensor& input, StepContext& ctx)
{
    const Shape outShape = outputShape(input.shape());
    inputShape_ = input.shape();
    const std::int64_t planes = outShape[0] * outShape[1];
    const std::int64_t H = inputShape_[2], W = inputShape_[3], Ho = outShape[2], Wo = outShape[3];
    output_.resize(outShape);
    output_.setStorage(input.storage());   // a max of values of a format is in that format
    output_.track(ctx.memory, MemoryCategory::activations);
    argmax_.resize(static_cast<std::size_t>(output_.size()));
    const float* in = input.data();
    float* out = output_.data();
    std::uint8_t* arg = argmax_.data();
    ctx.backend->parallelFor(planes, 8, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t plane = p0; plane < p1; ++plane) {
            const float* src = in + plane * H * W;
            for (std::int64_t y = 0; y < Ho; ++y) {
                const float* r0 = src + 2 * y * W;
                const float* r1 = r0 + W;
                float* dst = out + (plane * Ho + y) * Wo;
                std::uint8_t* pos = arg + (plane * Ho + y) * Wo;
                for (std::int64_t x = 0; x < Wo; ++x) {
                    // First maximum wins; a NaN propagates (as PyTorch's max_pool2d).
                    const float v[4] = {r0[2 * x], r0[2 * x + 1], r1[2 * x], r1[2 * x + 1]};
                    int best = 0;
                    for (int k = 1; k < 4; ++k)
                        if (v[k] > v[best] || (v[k] != v[k] && v[best] == v[best])) best = k;
                    dst[x] = v[best];
                    pos[x] = static_cast<std::uint8_t>(best);
                }
            }
        }
    });
    return output_;
}

Tensor* MaxPool2d::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    if (gradOutput.shape() != output_.shape())
        throw std::invalid_argument("Layer " + name() + " got a gradient of shape " +
                                    shapeString(gradOutput.shape()) + " for an output of shape " +
                                    shapeString(output_.shape()) + ".");
    const std::int64_t H = inputShape_[2], W = inputShape_[3], Ho = output_.dim(2), Wo = output_.dim(3);
    const std::int64_t planes = output_.dim(0) * output_.dim(1);
    gradInput_.resize(inputShape_);
    gradInput_.setStorage(gradOutput.storage());
    gradInput_.track(ctx.memory, MemoryCategory::workspace);
    const float* g = gradOutput.data();
    float* dx = gradInput_.data();
    const std::uint8_t* arg = argmax_.data();
    ctx.backend->parallelFor(planes, 8, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t plane = p0; plane < p1; ++plane) {
            float* dst = dx + plane * H * W;
            std::memset(dst, 0, sizeof(float) * static_cast<std::size_t>(H * W));
            for (std::int64_t y = 0; y < Ho; ++y)
                for (std::int64_t x = 0; x < Wo; ++x) {
                    const std::int64_t o = (plane * Ho + y) * Wo + x;
                    const int k = arg[o];
                    dst[(2 * y + k / 2) * W + 2 * x + k % 2] = g[o];
                }
        }
    });
    return &gradInput_;
}

std::int64_t MaxPool2d::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape out = outputShape(input);
    const std::int64_t perSample = out[0] * out[2] * out[3];
    return perSample * (formatInfo(recipe.storage()).storageBytes + 1);   // + argmax
}

}  // namespace plab
