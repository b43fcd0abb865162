// Conv2d forward and backward by batched im2col + GEMM (or the backend's convolution
// library), with the rounding sites of the recipe: input and weight operands in the
// compute format, bias added in fp32, output and every gradient rounded to the storage
// format (each tapped into telemetry).
#include "nn/conv2d.h"

#include "nn/layer_ops.h"

#include <algorithm>
#include <stdexcept>

namespace plab {

Conv2d::Conv2d(std::string name, std::int64_t inChannels, std::int64_t outChannels, int kernel)
    : Layer(std::move(name)), inChannels_(inChannels), outChannels_(outChannels), kernel_(kernel)
{
    if (inChannels <= 0 || outChannels <= 0 || kernel <= 0 || kernel % 2 == 0)
        throw std::invalid_argument("Conv2d needs positive channel counts and an odd kernel size.");
    weight_.layer = bias_.layer = this->name();
    weight_.name = "weight";
    bias_.name = "bias";
    weight_.value = Tensor({outChannels, inChannels, kernel, kernel});
    bias_.value = Tensor({outChannels});
    weight_.grad = Tensor(weight_.value.shape());
    bias_.grad = Tensor(bias_.value.shape());
}

ConvGeometry Conv2d::geometryOf(const Shape& input) const
{
    if (input.size() != 4 || input[0] != inChannels_)
        throw std::invalid_argument("Layer " + name() + " expects input (" + std::to_string(inChannels_) +
                                    ", N, H, W), got " + shapeString(input) + ".");
    ConvGeometry g;
    g.channels = input[0];
    g.batch = input[1];
    g.height = input[2];
    g.width = input[3];
    g.kernel = kernel_;
    g.pad = kernel_ / 2;
    return g;
}

Shape Conv2d::outputShape(const Shape& input) const
{
    const auto g = geometryOf(input);
    return {outChannels_, g.batch, g.height, g.width};
}

std::int64_t Conv2d::samplesPerBlock(const ConvGeometry& g) const
{
    const std::int64_t perSample = std::max<std::int64_t>(1, g.patchSize() * g.planeSize());
    return std::max<std::int64_t>(1, kColsBudget / perSample);
}

Tensor& Conv2d::forward(Tensor& input, StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx, name());
    geometry_ = geometryOf(input.shape());
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize();
    // Issue 31: a packed input is lowered from its bits when it is the operand as it is (in
    // the compute format, not quantised); else it is read as fp32.
    packs_ = packsStorage(ctx, p);
    if (input.packed() && !(packs_ && input.storage() == p.compute)) input.unpack();

    // tf32 rounds the fp32 activation operand here (its outputs stay fp32, so this is the
    // rounding site telemetry shows for tf32); fp16/bf16 inputs already are in the format.
    const bool mx = p.quant.blockScaled();
    if (mx) {
        // MX: the reduction runs over the patch (C*k*k): W in blocks along its rows, the
        // lowered columns in blocks down theirs, once lowered (lowerAndMultiply).
        inputOperand_ = &input;
        weightOperand_ = &blockOperand(ctx, p, weight_.value, outChannels_, g.patchSize(), true, roundedWeight_,
                                       name(), OperandRole::weight);
    } else {
        inputOperand_ = &layerOperand(ctx, p, input, roundedInput_, name(), OperandRole::input, scalers_);
        weightOperand_ = &layerOperand(ctx, p, weight_.value, roundedWeight_, name(), OperandRole::weight, scalers_);
    }

    prepareTensor(output_, {outChannels_, N, g.height, g.width}, p.storage, ctx, MemoryCategory::activations);
    holdPacked(output_, packs_);
    // Packed, the GEMM's fp32 result goes to the step's work buffer, then bias, rounding and
    // packing in one pass.
    Tensor& result = packs_ ? workBuffer(ctx, 0, output_.shape(), ownWork_[0]) : output_;

    // A convolution library (cuDNN) takes the whole batch in one call; else im2col + GEMM.
    const GemmPrecision precision = layerGemm(p, scalers_, OperandRole::weight, OperandRole::input);
    usesLibrary_ = !mx && !packs_ && !inputOperand_->packed() &&
                   ctx.backend->convolutionForward(g, outChannels_, inputOperand_->data(), weightOperand_->data(),
                                                   output_.data(), precision);
    if (!usesLibrary_) lowerAndMultiply(ctx, p, result.data());

    // Bias in fp32 (one value per output row of N * hw), then one rounding to the storage format.
    if (packs_)
        addBiasAndRoundTo16(ctx, p.storage, result, output_, bias_.value, outChannels_, N * hw, name(),
                            TensorKind::activation);
    else
        addBiasAndRound(ctx, p.storage, output_, bias_.value, outChannels_, N * hw, name(), TensorKind::activation);
    return output_;
}

void Conv2d::prepareColumns(StepContext& ctx, const StepPrecision& p)
{
    const auto& g = geometry_;
    colsBlock_ = std::min(samplesPerBlock(g), std::max<std::int64_t>(g.batch, 1));   // >= 1
    const Shape shape{g.patchSize(), colsBlock_ * g.planeSize()};
    if (p.quantizes())   // the lowered quantised input
        prepareQuantized(cols_, shape, quantizedStorageOf(p, OperandRole::input), ctx, MemoryCategory::workspace);
    else
        prepareTensor(cols_, shape, p.compute, ctx, MemoryCategory::workspace);
}

void Conv2d::lowerAndMultiply(StepContext& ctx, const StepPrecision& p, float* target)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    prepareColumns(ctx, p);
    // Then backward reuses the columns as they are; not under MX, whose filter gradient
    // needs them in blocks along the other dimension.
    const bool mx = p.quant.blockScaled();
    const GemmPrecision precision = layerGemm(p, scalers_, OperandRole::weight, OperandRole::input);
    colsHoldWholeBatch_ = colsBlock_ >= N && !mx;
    // The lowered columns hold every input value (and padding zeros): the input's amax,
    // kept for the filter gradient's lowering.
    inputAmax_ = mx ? nvfp4TensorAmax(ctx, p, *inputOperand_) : 0.0f;
    for (std::int64_t n0 = 0; n0 < N; n0 += colsBlock_) {
        const std::int64_t count = std::min(colsBlock_, N - n0);
        if (mx)   // lowered and quantised in one pass
            lowerInBlocks(ctx, p, g, inputOperand_->data(), n0, count, cols_.data(), false, name(), inputAmax_);
        else
            lowerInput(ctx, n0, count);
        // output[:, n0:n0+count] (Cout, count*hw) = W (Cout, K) * cols (K, count*hw)
        ctx.backend->gemm(Transpose::no, Transpose::no, outChannels_, count * hw, K,
                          weightOperand_->data(), K, cols_.data(), count * hw, 0.0f,
                          target + n0 * hw, N * hw, precision);
    }
}

void Conv2d::lowerAfterRefusal(StepContext& ctx, const StepPrecision& p)
{
    // The library's forward pass left no columns, but the input operand is kept: sized as
    // the forward lowering sizes them, the columns are lowered again block by block, so
    // the gradients are bit for bit those of a layer that lowered from the start.
    usesLibrary_ = false;
    prepareColumns(ctx, p);
    colsHoldWholeBatch_ = false;
}

Tensor* Conv2d::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    const auto p = StepPrecision::of(ctx, name());
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize();
    if (gradOutput.shape() != output_.shape())
        throw std::invalid_argument("Layer " + name() + " got a gradient of shape " +
                                    shapeString(gradOutput.shape()) + " for an output of shape " +
                                    shapeString(output_.shape()) + ".");
    // MX quantises the gradient once for each GEMM, in its blocks (filterGradientLowered,
    // inputGradientLowered); the bias gradient sums it as it arrived when quantising.
    // The GEMMs read fp32 (issue 31): a packed gradient is widened into the step's work
    // buffer, which is the operand itself when it is in the compute format.
    const Tensor* arrived = gradOutput.packed() ? &widenedInto(ctx, 0, gradOutput, ownWork_[0]) : &gradOutput;
    const Tensor& dY =   // (Cout, N, H, W)
        p.quant.blockScaled() || operandAsItIs(gradOutput, p)
            ? *arrived
            : layerOperand(ctx, p, *arrived, roundedGrad_, name(), OperandRole::gradOutput, scalers_);

    for (Parameter* param : {&weight_, &bias_})
        prepareTensor(param->grad, param->value.shape(), p.gradFormat(), ctx, MemoryCategory::gradients);

    // A library that refuses (false: nothing written) leaves the pass, and the rest of the
    // step's backward, to the lowering.
    const GemmPrecision filterGemm = layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input);
    if (usesLibrary_ && !ctx.backend->convolutionBackwardFilter(g, outChannels_, inputOperand_->data(), dY.data(),
                                                                weight_.grad.data(), filterGemm))
        lowerAfterRefusal(ctx, p);
    if (!usesLibrary_) filterGradientLowered(ctx, p, dY);
    // db (Cout) = row sums of dY, summed in double (order-independent to within one rounding).
    ctx.backend->sumRows((p.quantizes() ? *arrived : dY).data(), outChannels_, N * hw, bias_.grad.data());
    if (p.roundsStorage()) {
        // Weight and bias gradients share one tap: the layer's weight gradients.
        roundTapped(ctx, p.storage, weight_.grad.data(), weight_.grad.data(), weight_.grad.size(),
                    name(), TensorKind::weightGrad);
        roundTapped(ctx, p.storage, bias_.grad.data(), bias_.grad.data(), bias_.grad.size(), name(),
                    TensorKind::weightGrad);
    }
    if (!needInputGrad) return nullptr;

    prepareTensor(gradInput_, {g.channels, N, g.height, g.width}, p.storage, ctx, MemoryCategory::workspace);
    // Packed, col2im sums into the step's second work buffer; rounding packs the result.
    const bool packsGrad = packs_ && p.roundsStorage();
    holdPacked(gradInput_, packsGrad);
    Tensor& sums = packsGrad ? workBuffer(ctx, 1, gradInput_.shape(), ownWork_[1]) : gradInput_;
    const GemmPrecision dataGemm = layerGemm(p, scalers_, OperandRole::weight, OperandRole::gradOutput);
    if (usesLibrary_ && !ctx.backend->convolutionBackwardData(g, outChannels_, weightOperand_->data(), dY.data(),
                                                              gradInput_.data(), dataGemm))
        lowerAfterRefusal(ctx, p);
    if (!usesLibrary_) inputGradientLowered(ctx, p, dY, sums.data());
    if (packsGrad)
        roundTappedTo16(ctx, p.storage, sums.data(), gradInput_, name(), TensorKind::activationGrad);
    else if (p.roundsStorage())
        roundTapped(ctx, p.storage, gradInput_.data(), gradInput_.data(), gradInput_.size(), name(),
                    TensorKind::activationGrad);
    return &gradInput_;
}

void Conv2d::filterGradientLowered(StepContext& ctx, const StepPrecision& p, const Tensor& dY)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    // dW (Cout, K) = dY (Cout, N*hw) * cols^T (N*hw, K), block by block when lowered in blocks.
    const std::int64_t block = colsHoldWholeBatch_ ? std::max<std::int64_t>(N, 1) : colsBlock_;
    // MX: this GEMM sums over pixels, so dY and the columns go in blocks along their rows,
    // block by block of the lowering.
    const bool mx = p.quant.blockScaled();
    if (mx)
        prepareQuantized(roundedGrad_, dY.shape(), quantizedStorageOf(p, OperandRole::gradOutput), ctx,
                         MemoryCategory::workspace);
    const float gradAmax = mx ? nvfp4TensorAmax(ctx, p, dY) : 0.0f;
    for (std::int64_t n0 = 0; n0 < N; n0 += block) {
        const std::int64_t count = std::min(block, N - n0);
        const float* dYBlock = dY.data() + n0 * hw;
        if (mx) {
            quantizeBlocks(ctx, p, dYBlock, roundedGrad_.data() + n0 * hw, outChannels_, count * hw, N * hw, true,
                           name(), OperandRole::gradOutput, gradAmax);
            dYBlock = roundedGrad_.data() + n0 * hw;
            lowerInBlocks(ctx, p, g, inputOperand_->data(), n0, count, cols_.data(), true, name(), inputAmax_);
        } else if (!colsHoldWholeBatch_) {
            lowerInput(ctx, n0, count);
        }
        ctx.backend->gemm(Transpose::no, Transpose::yes, outChannels_, K, count * hw,
                          dYBlock, N * hw, cols_.data(), count * hw, n0 == 0 ? 0.0f : 1.0f,
                          weight_.grad.data(), K, layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input));
    }
}

void Conv2d::inputGradientLowered(StepContext& ctx, const StepPrecision& p, const Tensor& dY, float* target)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    // dcols (K, count*hw) = W^T (K, Cout) * dY block; col2im folds them into dX. The cols
    // buffer is free now (dW is done), so it holds dcols. MX: this GEMM sums over Cout, so W
    // and dY go in blocks down their columns.
    const Tensor* dYOperand = &dY;
    if (p.quant.blockScaled()) {
        dYOperand = &blockOperand(ctx, p, dY, outChannels_, N * hw, false, roundedGrad_, name(), OperandRole::gradOutput);
        weightOperand_ = &blockOperand(ctx, p, weight_.value, outChannels_, K, false, roundedWeight_, name(),
                                       OperandRole::weight);
    }
    for (std::int64_t n0 = 0; n0 < N; n0 += colsBlock_) {
        const std::int64_t count = std::min(colsBlock_, N - n0);
        ctx.backend->gemm(Transpose::yes, Transpose::no, K, count * hw, outChannels_,
                          weightOperand_->data(), K, dYOperand->data() + n0 * hw, N * hw, 0.0f, cols_.data(),
                          count * hw, layerGemm(p, scalers_, OperandRole::weight, OperandRole::gradOutput));
        ctx.backend->col2im(g, cols_.data(), n0, count, target);
    }
}

void Conv2d::lowerInput(StepContext& ctx, std::int64_t n0, std::int64_t count)
{
    if (inputOperand_->packed())
        ctx.backend->im2colPacked(geometry_, inputOperand_->storage(), inputOperand_->bits16(), n0, count,
                                  cols_.data());
    else
        ctx.backend->im2col(geometry_, inputOperand_->data(), n0, count, cols_.data());
}

std::int64_t Conv2d::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const auto g = geometryOf(input);
    const Format storage = recipe.storage();
    const std::int64_t hw = g.planeSize();
    std::int64_t bytes = outChannels_ * hw * formatInfo(storage).storageBytes;   // output
    if (!recipe.quantization.on()) {
        bytes += g.patchSize() * hw * formatInfo(recipe.compute).storageBytes;   // cols
        if (recipe.compute == Format::tf32) bytes += g.channels * hw * 4;        // the rounded input
        return bytes;
    }
    // The lowered input quantised (as quantizedStorageOf stores it), and under per-tensor
    // FP8 the quantised input it is lowered from (MX quantises the columns only).
    const QuantizedStorage q = quantizedStorageOf(StepPrecision::of(recipe), OperandRole::input);
    bytes += quantizedBytes({q.elementBits, q.blockSize, 0}, g.patchSize() * hw);
    if (!recipe.quantization.blockScaled()) bytes += quantizedBytes({q.elementBits, 0, 0}, g.channels * hw);
    return bytes;
}

}  // namespace plab
