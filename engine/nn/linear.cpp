// Linear forward and backward through three GEMMs, with the recipe's rounding sites
// (operands in the compute format, bias in fp32, outputs and gradients in storage).
#include "nn/linear.h"

#include "nn/layer_ops.h"

#include <stdexcept>

namespace plab {

Linear::Linear(std::string name, std::int64_t inFeatures, std::int64_t outFeatures)
    : Layer(std::move(name)), inFeatures_(inFeatures), outFeatures_(outFeatures)
{
    if (inFeatures <= 0 || outFeatures <= 0)
        throw std::invalid_argument("Linear needs positive input and output sizes.");
    weight_.layer = bias_.layer = this->name();
    weight_.name = "weight";
    bias_.name = "bias";
    weight_.value = Tensor({outFeatures, inFeatures});
    bias_.value = Tensor({outFeatures});
    weight_.grad = Tensor(weight_.value.shape());
    bias_.grad = Tensor(bias_.value.shape());
}

Shape Linear::outputShape(const Shape& input) const
{
    if (input.size() != 2 || input[1] != inFeatures_)
        throw std::invalid_argument("Layer " + name() + " expects input (N, " + std::to_string(inFeatures_) +
                                    "), got " + shapeString(input) + ".");
    return {input[0], outFeatures_};
}

Tensor& Linear::forward(Tensor& input, StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx, name());
    const Shape outShape = outputShape(input.shape());
    const std::int64_t N = input.dim(0);
    // A packed input (issue 31) is widened into the step's second work buffer, which keeps
    // it for this layer's backward pass (no layer between uses that buffer); it is the
    // operand itself when it is in the compute format.
    inputArrivedPacked_ = input.packed();
    const Tensor* in = input.packed() ? &widenedInto(ctx, 1, input, ownWork_) : &input;
    input_ = in;
    if (p.quant.blockScaled()) {
        // MX: blocks along the reduction dimension, `in` (the rows of both).
        inputOperand_ = &blockOperand(ctx, p, *in, N, inFeatures_, true, roundedInput_, name(), OperandRole::input);
        weightOperand_ = &blockOperand(ctx, p, weight_.value, outFeatures_, inFeatures_, true, roundedWeight_, name(),
                                       OperandRole::weight);
    } else {
        inputOperand_ = operandAsItIs(input, p)
                            ? in
                            : &layerOperand(ctx, p, *in, roundedInput_, name(), OperandRole::input, scalers_);
        weightOperand_ = &layerOperand(ctx, p, weight_.value, roundedWeight_, name(), OperandRole::weight, scalers_);
    }

    prepareTensor(output_, outShape, p.storage, ctx, MemoryCategory::activations);
    // output (N, out) = input (N, in) * W^T (in, out)
    ctx.backend->gemm(Transpose::no, Transpose::yes, N, outFeatures_, inFeatures_, inputOperand_->data(),
                      inFeatures_, weightOperand_->data(), inFeatures_, 0.0f, output_.data(), outFeatures_,
                      layerGemm(p, scalers_, OperandRole::input, OperandRole::weight));
    addBiasAndRound(ctx, p.storage, output_, bias_.value, outFeatures_, 1, name(), TensorKind::activation);
    return output_;
}

Tensor* Linear::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    const auto p = StepPrecision::of(ctx, name());
    if (gradOutput.shape() != output_.shape())
        throw std::invalid_argument("Layer " + name() + " got a gradient of shape " +
                                    shapeString(gradOutput.shape()) + " for an output of shape " +
                                    shapeString(output_.shape()) + ".");
    const std::int64_t N = output_.dim(0), O = outFeatures_, I = inFeatures_;
    const bool mx = p.quant.blockScaled();
    // MX: dW sums over the batch, so dY and X are quantised in blocks down their columns;
    // dX sums over `out`, so dY again along its rows and W down its columns.
    const Tensor& dY = mx ? blockOperand(ctx, p, gradOutput, N, O, false, roundedGrad_, name(), OperandRole::gradOutput)
                          : layerOperand(ctx, p, gradOutput, roundedGrad_, name(), OperandRole::gradOutput, scalers_);
    if (mx) inputOperand_ = &blockOperand(ctx, p, *input_, N, I, false, roundedInput_, name(), OperandRole::input);
    // The bias gradient from the gradient as it arrived (Transformer Engine sums it before
    // the cast); without quantisation that is the operand itself, unless tf32 rounded it.
    const Tensor& dYForBias = p.quantizes() ? gradOutput : dY;   // (N, out)
    for (Parameter* param : {&weight_, &bias_})
        prepareTensor(param->grad, param->value.shape(), p.gradFormat(), ctx, MemoryCategory::gradients);
    // dW (out, in) = dY^T (out, N) * X (N, in)
    ctx.backend->gemm(Transpose::yes, Transpose::no, O, I, N, dY.data(), O, inputOperand_->data(), I, 0.0f,
                      weight_.grad.data(), I, layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input));
    // db (out) = column sums of dY, in double.
    ctx.backend->sumColumns(dYForBias.data(), N, O, bias_.grad.data());
    if (p.roundsStorage()) {
        roundTapped(ctx, p.storage, weight_.grad.data(), weight_.grad.data(), weight_.grad.size(), name(),
                    TensorKind::weightGrad);
        roundTapped(ctx, p.storage, bias_.grad.data(), bias_.grad.data(), bias_.grad.size(), name(),
                    TensorKind::weightGrad);
    }
    if (!needInputGrad) return nullptr;

    // dX (N, in) = dY (N, out) * W (out, in); packed (through the first work buffer) when
    // the input arrived packed and the layer packs.
    prepareTensor(gradInput_, {N, I}, p.storage, ctx, MemoryCategory::workspace);
    const bool packsGrad = inputArrivedPacked_ && packsStorage(ctx, p) && p.roundsStorage();
    holdPacked(gradInput_, packsGrad);
    Tensor& sums = packsGrad ? workBuffer(ctx, 0, gradInput_.shape(), ownGradWork_) : gradInput_;
    const Tensor& dYRows =
        mx ? blockOperand(ctx, p, gradOutput, N, O, true, roundedGrad_, name(), OperandRole::gradOutput) : dY;
    if (mx) weightOperand_ = &blockOperand(ctx, p, weight_.value, O, I, false, roundedWeight_, name(), OperandRole::weight);
    ctx.backend->gemm(Transpose::no, Transpose::no, N, I, O, dYRows.data(), O, weightOperand_->data(), I, 0.0f,
                      sums.data(), I, layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::weight));
    if (packsGrad)
        roundTappedTo16(ctx, p.storage, sums.data(), gradInput_, name(), TensorKind::activationGrad);
    else if (p.roundsStorage())
        roundTapped(ctx, p.storage, gradInput_.data(), gradInput_.data(), gradInput_.size(), name(),
                    TensorKind::activationGrad);
    return &gradInput_;
}

std::int64_t Linear::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    outputShape(input);
    const Format storage = recipe.storage();
    std::int64_t bytes = outFeatures_ * formatInfo(storage).storageBytes;
    // The rounded (tf32) or quantised (as quantizedStorageOf stores it) input operand.
    if (recipe.compute == Format::tf32) bytes += inFeatures_ * 4;
    if (recipe.quantization.on()) {
        const QuantizedStorage q = quantizedStorageOf(StepPrecision::of(recipe), OperandRole::input);
        bytes += quantizedBytes({q.elementBits, q.blockSize, 0}, inFeatures_);
    }
    return bytes;
}

}  // namespace plab
