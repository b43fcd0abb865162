// Linear forward and backward through three GEMMs, with the recipe's rounding sites
// (operands in the compute format, bias in fp32, outputs and gradients in storage).
#include "nn/linear.h"

#include "nn/layer_ops.h"

#include <algorithm>
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
    // p: the layer's quantisation, which decides how its input is held for both passes;
    // pf: the forward pass's operands (rounded to the compute format where the layer
    // quantises its backward pass only, recipe.h QuantPasses).
    const auto p = StepPrecision::of(ctx, name());
    const StepPrecision pf = p.forward();
    const Shape outShape = outputShape(input.shape());
    const std::int64_t N = input.dim(0);
    // A packed input in the compute format is read in blocks of rows; another packed input,
    // or one whose products the backend sums by their cut (gemmCut: the unpacked layer's
    // calls then, whole), is widened whole into the step's second work buffer, which keeps
    // it for this layer's backward pass (no layer between uses that buffer). A packed
    // operand is never quantised: p.gemm() is its products' precision.
    inputArrivedPacked_ = input.packed();
    readsInBlocks_ = operandAsItIs(input, p) && (ctx.backend->supports(BackendOp::gemm16, p.gemm()) ||
                                                 !sumsDependOnCut(ctx, p.gemm(), N, outFeatures_, inFeatures_));
    const Tensor* in = input.packed() && !readsInBlocks_ ? &widenedInto(ctx, 1, input, ownWork_) : &input;
    input_ = in;
    codes_ = holdsCodes(ctx, p);
    mxInBlocks_ = mxInBlocks(ctx, p);
    // (A recipe changed mid-run: codes held before are freed.) A codes layer uses both work
    // buffers in both passes, so a packed input kept in the second (above) must not wait
    // for its backward pass across one; none does in these models (only the CNN's last
    // layer takes a packed input).
    if (!codes_)
        for (Fp8Codes* c : {&inputCodes_, &weightCodes_}) c->discard();
    if (codes_) {
        // FP8 codes kept for backward; decoded into the work buffers for the GEMM (the input
        // after `in`, which may be the second buffer, is quantised).
        quantizedCodes(ctx, p, *in, inputCodes_, name(), OperandRole::input, scalers_.input);
        quantizedCodes(ctx, p, weight_.value, weightCodes_, name(), OperandRole::weight, scalers_.weight);
        inputOperand_ = &decodedInto(ctx, 1, inputCodes_, ownWork_);
        weightOperand_ = &decodedInto(ctx, 0, weightCodes_, ownGradWork_);
        roundedInput_.discard();
        roundedWeight_.discard();
    } else if (pf.quant.blockScaled()) {
        // MX: blocks along the reduction dimension, `in` (the rows of both); under mxInBlocks_
        // the input's quantised values only for this GEMM, in the first work buffer.
        if (mxInBlocks_) roundedInput_.discard();
        inputOperand_ = mxInBlocks_ ? &blockOperandInto(ctx, pf, *in, N, inFeatures_, true, 0, ownGradWork_, name(),
                                                        OperandRole::input)
                                    : &blockOperand(ctx, pf, *in, N, inFeatures_, true, roundedInput_, name(),
                                                    OperandRole::input);
        weightOperand_ = &blockOperand(ctx, pf, weight_.value, outFeatures_, inFeatures_, true, roundedWeight_, name(),
                                       OperandRole::weight);
    } else {
        inputOperand_ = operandAsItIs(input, pf)
                            ? in
                            : &layerOperand(ctx, pf, *in, roundedInput_, name(), OperandRole::input, scalers_);
        weightOperand_ = &layerOperand(ctx, pf, weight_.value, roundedWeight_, name(), OperandRole::weight, scalers_);
    }

    prepareTensor(output_, outShape, p.storage, ctx, MemoryCategory::activations, false, NewElements::undefined);
    // output (N, out) = input (N, in) * W^T (in, out), in blocks of rows when read so.
    const GemmPrecision precision = layerGemm(pf, scalers_, OperandRole::input, OperandRole::weight);
    const std::int64_t I = inFeatures_, O = outFeatures_;
    multiplies16_ = readsInBlocks_ && ctx.backend->supports(BackendOp::gemm16, precision);
    if (!multiplies16_) patterns_.discard();
    if (multiplies16_) {
        ctx.backend->gemm16(Transpose::no, Transpose::yes, N, O, I, input.bits16(), I,
                            patternsOf(ctx, p.compute, *weightOperand_, patterns_), I, 0.0f, output_.data(), O,
                            precision);
    } else if (readsInBlocks_) {
        const Pieces rows = piecesOf(N, packedBlockValues(ctx, precision, N * I) / I, leastGemmBlock(O * I));
        Tensor& wide = workBuffer(ctx, 1, {rows.largest(), I}, ownWork_);
        for (std::int64_t i = 0; i < rows.count; ++i) {
            const std::int64_t r0 = rows.begin(i), count = rows.begin(i + 1) - r0;
            ctx.backend->widen16(input.storage(), input.bits16() + r0 * I, I, wide.data(), I, count, I);
            ctx.backend->gemm(Transpose::no, Transpose::yes, count, O, I, wide.data(), I, weightOperand_->data(), I,
                              0.0f, output_.data() + r0 * O, O, precision);
        }
    } else {
        ctx.backend->gemm(Transpose::no, Transpose::yes, N, O, I, inputOperand_->data(), I, weightOperand_->data(), I,
                          0.0f, output_.data(), O, precision);
    }
    addBiasAndRound(ctx, p.storage, output_, bias_.value, outFeatures_, 1, name(), TensorKind::activation);
    return output_;
}

Tensor* Linear::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    // As forward: p decides how operands are held, pb is the backward pass's own rules.
    const auto p = StepPrecision::of(ctx, name());
    const StepPrecision pb = p.backward();
    const bool onePass = p.quant.on() && p.quant.passes != QuantPasses::both;
    requireGradientShape(name(), gradOutput, output_);
    const std::int64_t N = output_.dim(0), O = outFeatures_, I = inFeatures_;
    const bool mx = pb.quant.blockScaled();
    // MX: dW sums over the batch, so dY and X are quantised in blocks down their columns;
    // dX sums over `out`, so dY again along its rows and W down its columns.
    if (codes_) {
        // dY quantised straight into the values both GEMMs read, in the layer's own buffer
        // (the first work buffer may hold dX's sums below; read whole at once, it is held
        // as no codes), the input decoded into the second work buffer (the forward pass's
        // decoded values may be gone: other layers use the buffers in between).
        roundedGrad_.discard();
        inputOperand_ = &decodedInto(ctx, 1, inputCodes_, ownWork_);
        prepareTensor(quantizedGrad_, gradOutput.shape(), Format::fp32, ctx, MemoryCategory::workspace, false,
                      NewElements::undefined);
        quantizedValuesInto(ctx, p, gradOutput, quantizedGrad_, name(), OperandRole::gradOutput, scalers_.gradOutput);
    } else {
        quantizedGrad_.discard();
    }
    const Tensor& dY = mx      ? blockOperand(ctx, pb, gradOutput, N, O, false, roundedGrad_, name(), OperandRole::gradOutput)
                       : codes_ ? quantizedGrad_
                               : layerOperand(ctx, pb, gradOutput, roundedGrad_, name(), OperandRole::gradOutput, scalers_);
    if (mx)   // (the first work buffer is free until dX's sums below)
        inputOperand_ = mxInBlocks_
                            ? &blockOperandInto(ctx, pb, *input_, N, I, false, 0, ownGradWork_, name(), OperandRole::input)
                            : &blockOperand(ctx, pb, *input_, N, I, false, roundedInput_, name(), OperandRole::input);
    else if (onePass)   // the forward pass's operands were quantised; these passes' are not
        inputOperand_ = operandAsItIs(*input_, pb)
                            ? input_
                            : &layerOperand(ctx, pb, *input_, roundedInput_, name(), OperandRole::input, scalers_);
    // The bias gradient from the gradient as it arrived (Transformer Engine sums it before
    // the cast); without quantisation that is the operand itself, unless tf32 rounded it.
    const Tensor& dYForBias = pb.quantizes() ? gradOutput : dY;   // (N, out)
    for (Parameter* param : {&weight_, &bias_})
        prepareTensor(param->grad, param->value.shape(), p.gradFormat(), ctx, MemoryCategory::gradients);
    // dW (out, in) = dY^T (out, N) * X (N, in), in blocks of dW's columns when X is read so.
    const GemmPrecision filterGemm = layerGemm(pb, scalers_, OperandRole::gradOutput, OperandRole::input);
    if (multiplies16_ && ctx.backend->supports(BackendOp::gemm16, filterGemm)) {
        ctx.backend->gemm16(Transpose::yes, Transpose::no, O, I, N, patternsOf(ctx, p.compute, dY, patterns_), O,
                            input_->bits16(), I, 0.0f, weight_.grad.data(), I, filterGemm);
    } else if (readsInBlocks_) {
        const Pieces cols =
            piecesOf(I, packedBlockValues(ctx, filterGemm, N * I) / std::max<std::int64_t>(N, 1), leastGemmBlock(O * N));
        Tensor& wide = workBuffer(ctx, 1, {N, cols.largest()}, ownWork_);
        for (std::int64_t i = 0; i < cols.count; ++i) {
            const std::int64_t c0 = cols.begin(i), count = cols.begin(i + 1) - c0;
            ctx.backend->widen16(input_->storage(), input_->bits16() + c0, I, wide.data(), count, N, count);
            ctx.backend->gemm(Transpose::yes, Transpose::no, O, count, N, dY.data(), O, wide.data(), count, 0.0f,
                              weight_.grad.data() + c0, I, filterGemm);
        }
    } else {
        ctx.backend->gemm(Transpose::yes, Transpose::no, O, I, N, dY.data(), O, inputOperand_->data(), I, 0.0f,
                          weight_.grad.data(), I, filterGemm);
    }
    // db (out) = column sums of dY, in double.
    ctx.backend->sumColumns(dYForBias.data(), N, O, bias_.grad.data());
    if (p.roundsStorage()) {
        roundTapped(ctx, p.storage, weight_.grad.data(), weight_.grad.data(), weight_.grad.size(), name(),
                    TensorKind::weightGrad);
        roundTapped(ctx, p.storage, bias_.grad.data(), bias_.grad.data(), bias_.grad.size(), name(),
                    TensorKind::weightGrad);
    }
    if (!needInputGrad) return nullptr;

    // dX (N, in) = dY (N, out) * W (out, in); packed when the input arrived packed and the
    // layer packs, block of rows by block (through the first work buffer).
    const bool packsGrad =
        inputArrivedPacked_ && (codes_ || mxInBlocks_ ? packsAroundQuantized(ctx, p) : packsStorage(ctx, p)) &&
        p.roundsStorage();
    prepareTensor(gradInput_, {N, I}, p.storage, ctx, MemoryCategory::workspace, packsGrad,
                  NewElements::undefined);
    const Tensor& dYRows =
        mx ? blockOperand(ctx, pb, gradOutput, N, O, true, roundedGrad_, name(), OperandRole::gradOutput) : dY;
    if (mx) weightOperand_ = &blockOperand(ctx, pb, weight_.value, O, I, false, roundedWeight_, name(), OperandRole::weight);
    else if (onePass)
        weightOperand_ = &layerOperand(ctx, pb, weight_.value, roundedWeight_, name(), OperandRole::weight, scalers_);
    if (codes_) weightOperand_ = &decodedInto(ctx, 1, weightCodes_, ownWork_);   // the input is read
    const GemmPrecision dataGemm = layerGemm(pb, scalers_, OperandRole::gradOutput, OperandRole::weight);
    if (packsGrad) {
        // In blocks of rows, or whole where the backend's sums depend on the cut.
        const Pieces rows = sumsDependOnCut(ctx, dataGemm, N, I, O)
                                ? piecesOf(N, N, 1)
                                : piecesOf(N, packedBlockValues(ctx, dataGemm, N * I) / I, leastGemmBlock(I * O));
        Tensor& sums = workBuffer(ctx, 0, {rows.largest(), I}, ownGradWork_);
        const auto sink = tapSink(ctx, name(), TensorKind::activationGrad);
        for (std::int64_t i = 0; i < rows.count; ++i) {
            const std::int64_t r0 = rows.begin(i), count = rows.begin(i + 1) - r0;
            ctx.backend->gemm(Transpose::no, Transpose::no, count, I, O, dYRows.data() + r0 * O, O,
                              weightOperand_->data(), I, 0.0f, sums.data(), I, dataGemm);
            ctx.backend->roundTo16(p.storage, sums.data(), I, gradInput_.bits16() + r0 * I, I, count, I, sink.stats,
                                   sink.hist);
        }
        return &gradInput_;
    }
    ctx.backend->gemm(Transpose::no, Transpose::no, N, I, O, dYRows.data(), O, weightOperand_->data(), I, 0.0f,
                      gradInput_.data(), I, dataGemm);
    if (p.roundsStorage())
        roundTapped(ctx, p.storage, gradInput_.data(), gradInput_.data(), gradInput_.size(), name(),
                    TensorKind::activationGrad);
    return &gradInput_;
}

std::int64_t Linear::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const std::int64_t rows = outputShape(input)[0];   // 1, or a sample's tokens
    const Format storage = recipe.storage();
    std::int64_t bytes = outFeatures_ * formatInfo(storage).storageBytes;
    // The rounded (tf32) or quantised (as quantizedStorageOf stores it) input operand.
    if (recipe.compute == Format::tf32) bytes += inFeatures_ * 4;
    if (recipe.quantization.on()) {
        const QuantizedStorage q = quantizedStorageOf(StepPrecision::of(recipe), OperandRole::input);
        bytes += quantizedBytes({q.elementBits, q.blockSize, 0}, inFeatures_);
    }
    return rows * bytes;
}

}  // namespace plab
