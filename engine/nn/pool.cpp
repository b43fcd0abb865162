// MaxPool2d forward (max and its position per 2x2 window) and backward (scatter), on the backend.
#include "nn/pool.h"

#include "nn/layer_ops.h"

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
    // A max of values of a format is in that format: the storage stays.
    prepareTensor(output_, outShape, input.storage(), ctx, MemoryCategory::activations, input.packed(),
                  NewElements::undefined);
    // The window positions are kept for backward as the output is: counted with the activations.
    argmax_.track(ctx.memory, MemoryCategory::activations);
    argmax_.resize(static_cast<std::size_t>(output_.size()), ctx.backend->allocator());
    if (input.packed())
        ctx.backend->maxPool2x2Packed(input.storage(), input.bits16(), outShape[0] * outShape[1], inputShape_[2],
                                      inputShape_[3], output_.bits16(), argmax_.data());
    else
        ctx.backend->maxPool2x2(input.data(), outShape[0] * outShape[1], inputShape_[2], inputShape_[3],
                                output_.data(), argmax_.data());
    return output_;
}

Tensor* MaxPool2d::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    requireGradientShape(name(), gradOutput, output_);
    prepareTensor(gradInput_, inputShape_, gradOutput.storage(), ctx, MemoryCategory::workspace, gradOutput.packed(),
                  NewElements::undefined);
    if (gradOutput.packed())
        ctx.backend->maxPool2x2BackwardPacked(gradOutput.bits16(), argmax_.data(), output_.dim(0) * output_.dim(1),
                                              inputShape_[2], inputShape_[3], gradInput_.bits16());
    else
        ctx.backend->maxPool2x2Backward(gradOutput.data(), argmax_.data(), output_.dim(0) * output_.dim(1),
                                        inputShape_[2], inputShape_[3], gradInput_.data());
    return &gradInput_;
}

std::int64_t MaxPool2d::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape out = outputShape(input);
    const std::int64_t perSample = out[0] * out[2] * out[3];
    return perSample * (formatInfo(recipe.storage()).storageBytes + 1);   // + argmax
}

}  // namespace plab
