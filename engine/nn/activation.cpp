// ReLU and Flatten: exact data movement, no rounding sites.
#include "nn/activation.h"

#include "nn/layer_ops.h"

#include <stdexcept>

namespace plab {

Tensor& ReLU::forward(Tensor& input, StepContext& ctx)
{
    if (input.packed())
        ctx.backend->relu16(input.storage(), input.bits16(), input.size());
    else
        ctx.backend->relu(input.data(), input.size());
    output_ = &input;
    return input;
}

Tensor* ReLU::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    if (!output_ || gradOutput.size() != output_->size())
        throw std::invalid_argument("Layer " + name() + " got a gradient that does not match its output.");
    if (output_->packed() && gradOutput.packed()) {
        ctx.backend->reluBackward16(output_->storage(), output_->bits16(), gradOutput.bits16(), gradOutput.size());
        return &gradOutput;
    }
    output_->unpack();   // one packed, one not (per-layer precision): both as fp32
    gradOutput.unpack();
    ctx.backend->reluBackward(output_->data(), gradOutput.data(), gradOutput.size());
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
    if (input.rank() == 2) {
        prepareTensor(output_, outShape, input.storage(), ctx, MemoryCategory::activations);
        output_ = input;
        return output_;
    }
    prepareTensor(output_, outShape, input.storage(), ctx, MemoryCategory::activations, input.packed(),
                  NewElements::undefined);
    const std::int64_t C = inputShape_[0], N = inputShape_[1], hw = inputShape_[2] * inputShape_[3];
    // out[n][c*hw + p] = in[c][n][p]
    if (input.packed())
        ctx.backend->transposeBlocksPacked(input.bits16(), C, N, hw, output_.bits16());
    else
        ctx.backend->transposeBlocks(input.data(), C, N, hw, output_.data());
    return output_;
}

Tensor* Flatten::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    if (inputShape_.size() == 2) {
        prepareTensor(gradInput_, inputShape_, gradOutput.storage(), ctx, MemoryCategory::workspace);
        gradInput_ = gradOutput;
        return &gradInput_;
    }
    prepareTensor(gradInput_, inputShape_, gradOutput.storage(), ctx, MemoryCategory::workspace, gradOutput.packed(),
                  NewElements::undefined);
    const std::int64_t C = inputShape_[0], N = inputShape_[1], hw = inputShape_[2] * inputShape_[3];
    // dx[c][n][p] = g[n][c*hw + p]
    if (gradOutput.packed())
        ctx.backend->transposeBlocksPacked(gradOutput.bits16(), N, C, hw, gradInput_.bits16());
    else
        ctx.backend->transposeBlocks(gradOutput.data(), N, C, hw, gradInput_.data());
    return &gradInput_;
}

std::int64_t Flatten::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape out = outputShape(input);
    return out[1] * formatInfo(recipe.storage()).storageBytes;
}

}  // namespace plab
