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

std::int64_t Conv2d::samplesPerBlock(const ConvGeometry& g, std::int64_t granule) const
{
    const std::int64_t perSample = std::max<std::int64_t>(1, g.patchSize() * g.planeSize());
    const std::int64_t fit = std::max<std::int64_t>(1, kColsBudget / perSample);
    return fit >= g.batch || fit < granule ? fit : fit / granule * granule;
}

Tensor& Conv2d::forward(Tensor& input, StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx, name());
    if (p.quant.on() && p.quant.passes != QuantPasses::both)   // (validateSettings refuses it first)
        throw std::invalid_argument("Layer " + name() + ": a quantisation of one pass applies to linear layers only.");
    geometry_ = geometryOf(input.shape());
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize();
    // A packed input is lowered from its bits when it is the operand as it is (in
    // the compute format, not quantised), or quantised from them into codes; else it is
    // read as fp32.
    codes_ = holdsCodes(ctx, p);
    mxInBlocks_ = mxInBlocks(ctx, p);
    packs_ = codes_ || mxInBlocks_ ? packsAroundQuantized(ctx, p) : packsStorage(ctx, p);
    multiplies16_ = false;   // forwardPacked says
    if (input.packed() && !codes_ && !mxInBlocks_ && !(packs_ && input.storage() == p.compute)) input.unpack();
    if (!codes_)   // (a recipe changed mid-run: codes held before are freed)
        for (Fp8Codes* c : {&inputCodes_, &weightCodes_, &gradCodes_}) c->discard();
    if (!codes_ && !mxInBlocks_) blockSums_.discard();

    // tf32 rounds the fp32 activation operand here (its outputs stay fp32, so this is the
    // rounding site telemetry shows for tf32); fp16/bf16 inputs already are in the format.
    const bool mx = p.quant.blockScaled();
    if (mx) {
        // MX: the reduction runs over the patch (C*k*k): W in blocks along its rows, the
        // lowered columns in blocks down theirs, once lowered (lowerAndMultiply; from the
        // patterns of a packed input under mxInBlocks_). The lowered input holds every input
        // value (and padding zeros): under NVFP4 its amax is the columns' tensor amax.
        inputOperand_ = &input;
        inputAmax_ = nvfp4TensorAmax(ctx, p, input);
        roundedInput_.discard();   // (held under another recipe before a mid-run change)
        weightPatterns_.discard();
        weightOperand_ = &blockOperand(ctx, p, weight_.value, outChannels_, g.patchSize(), true, roundedWeight_,
                                       name(), OperandRole::weight);
    } else if (codes_) {
        // FP8 codes kept for backward; the input is lowered from them, the weights decoded
        // (into the second work buffer: the packed pass's results take the first).
        inputOperand_ = nullptr;
        quantizedCodes(ctx, p, input, inputCodes_, name(), OperandRole::input, scalers_.input);
        quantizedCodes(ctx, p, weight_.value, weightCodes_, name(), OperandRole::weight, scalers_.weight);
        weightOperand_ = &decodedInto(ctx, 1, weightCodes_, ownWork_[1]);
        roundedInput_.discard();
        roundedWeight_.discard();
    } else {
        inputOperand_ = &layerOperand(ctx, p, input, roundedInput_, name(), OperandRole::input, scalers_);
        weightOperand_ = &layerOperand(ctx, p, weight_.value, roundedWeight_, name(), OperandRole::weight, scalers_);
    }

    prepareTensor(output_, {outChannels_, N, g.height, g.width}, p.storage, ctx, MemoryCategory::activations, packs_,
                  NewElements::undefined);
    if (packs_) {
        forwardPacked(ctx, p);
        return output_;
    }

    // A convolution library (cuDNN) takes the whole batch in one call; else im2col + GEMM.
    const GemmPrecision precision = layerGemm(p, scalers_, OperandRole::weight, OperandRole::input);
    usesLibrary_ = !mx && !codes_ && ctx.backend->convolutionForward(g, outChannels_, inputOperand_->data(),
                                                          weightOperand_->data(), output_.data(), precision);
    if (!usesLibrary_) lowerAndMultiply(ctx, p, output_.data());

    // Bias in fp32 (one value per output row of N * hw), then one rounding to the storage format.
    addBiasAndRound(ctx, p.storage, output_, bias_.value, outChannels_, N * hw, name(), TensorKind::activation);
    return output_;
}

bool Conv2d::readsPatterns(const StepContext& ctx, const GemmPrecision& gemm, const StepPrecision& p, Format f) const
{
    return multiplies16_ && f == p.compute && ctx.backend->supports(BackendOp::gemm16, gemm);
}

void Conv2d::lowerInput(StepContext& ctx, const StepPrecision& p, std::int64_t n0, std::int64_t count)
{
    if (p.quant.blockScaled())   // lowered and quantised in one pass (blocks down the columns)
        lowerInBlocks(ctx, p, geometry_, *inputOperand_, n0, count, cols_.data(), false, name(), inputAmax_);
    else
        lowerChannels(ctx, 0, geometry_.channels, n0, count);
}

void Conv2d::lowerChannels(StepContext& ctx, std::int64_t c0, std::int64_t c1, std::int64_t n0, std::int64_t count)
{
    // The input is (C, N, H, W): channels [c0, c1) are a smaller tensor of the same batch.
    ConvGeometry part = geometry_;
    part.channels = c1 - c0;
    const std::int64_t offset = c0 * geometry_.batch * geometry_.planeSize();
    if (codes_)
        ctx.backend->im2colFp8(part, inputCodes_.operand.element, inputCodes_.operand.scaleInv,
                               inputCodes_.data() + offset, n0, count, cols_.data());
    else if (cols_.packed())   // 16-bit columns for gemm16: the input's patterns moved
        ctx.backend->im2col16(part, inputOperand_->bits16() + offset, n0, count, cols_.bits16());
    else if (inputOperand_->packed())
        ctx.backend->im2colPacked(part, inputOperand_->storage(), inputOperand_->bits16() + offset, n0, count,
                                  cols_.data());
    else
        ctx.backend->im2col(part, inputOperand_->data() + offset, n0, count, cols_.data());
}

void Conv2d::prepareColumns(StepContext& ctx, const StepPrecision& p)
{
    const auto& g = geometry_;
    colsBlock_ = unpackedLowering(ctx);
    // Quantised, the columns hold the dequantised values in fp32 (what the GEMM reads).
    prepareTensor(cols_, {g.patchSize(), colsBlock_ * g.planeSize()}, p.quantizes() ? Format::fp32 : p.compute, ctx,
                  MemoryCategory::workspace, false, NewElements::undefined);
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
    for (std::int64_t n0 = 0; n0 < N; n0 += colsBlock_) {
        const std::int64_t count = std::min(colsBlock_, N - n0);
        lowerInput(ctx, p, n0, count);
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
    requireGradientShape(name(), gradOutput, output_);
    for (Parameter* param : {&weight_, &bias_})
        prepareTensor(param->grad, param->value.shape(), p.gradFormat(), ctx, MemoryCategory::gradients);
    if (codes_ || mxInBlocks_) {
        if (codes_)
            backwardFromCodes(ctx, p, gradOutput, needInputGrad);
        else
            backwardInBlocks(ctx, p, gradOutput, needInputGrad);
        return needInputGrad ? &gradInput_ : nullptr;
    }
    if (packs_ && operandAsItIs(gradOutput, p)) {   // the passes in blocks
        filterGradientPacked(ctx, p, gradOutput);
        roundWeightGradients(ctx, p);
        if (!needInputGrad) return nullptr;
        prepareTensor(gradInput_, {g.channels, N, g.height, g.width}, p.storage, ctx, MemoryCategory::workspace,
                      true, NewElements::undefined);
        inputGradientPacked(ctx, p, gradOutput);
        return &gradInput_;
    }
    if (packs_) {   // the forward pass left no columns: lowered again, block by block
        prepareColumns(ctx, p);
        colsHoldWholeBatch_ = false;
    }
    // MX quantises the gradient once for each GEMM, in its blocks (filterGradientLowered,
    // inputGradientLowered); the bias gradient sums it as it arrived when quantising.
    // The GEMMs read fp32: a packed gradient is widened into the step's work
    // buffer, which is the operand itself when it is in the compute format.
    const Tensor* arrived = gradOutput.packed() ? &widenedInto(ctx, 0, gradOutput, ownWork_[0]) : &gradOutput;
    const Tensor& dY =   // (Cout, N, H, W)
        p.quant.blockScaled() || operandAsItIs(gradOutput, p)
            ? *arrived
            : layerOperand(ctx, p, *arrived, roundedGrad_, name(), OperandRole::gradOutput, scalers_);

    // A library that refuses (false: nothing written) leaves the pass, and the rest of the
    // step's backward, to the lowering.
    const GemmPrecision filterGemm = layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input);
    if (usesLibrary_ && !ctx.backend->convolutionBackwardFilter(g, outChannels_, inputOperand_->data(), dY.data(),
                                                                weight_.grad.data(), filterGemm))
        lowerAfterRefusal(ctx, p);
    if (!usesLibrary_) filterGradientLowered(ctx, p, dY);
    // db (Cout) = row sums of dY, summed in double (order-independent to within one rounding).
    ctx.backend->sumRows((p.quantizes() ? *arrived : dY).data(), outChannels_, N * hw, bias_.grad.data());
    roundWeightGradients(ctx, p);
    if (!needInputGrad) return nullptr;

    // Packed, col2im sums into the step's second work buffer; rounding packs the result.
    const bool packsGrad = packs_ && p.roundsStorage();
    prepareTensor(gradInput_, {g.channels, N, g.height, g.width}, p.storage, ctx, MemoryCategory::workspace,
                  packsGrad, NewElements::undefined);
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

void Conv2d::roundWeightGradients(StepContext& ctx, const StepPrecision& p)
{
    if (!p.roundsStorage()) return;
    // Weight and bias gradients share one tap: the layer's weight gradients.
    roundTapped(ctx, p.storage, weight_.grad.data(), weight_.grad.data(), weight_.grad.size(), name(),
                TensorKind::weightGrad);
    roundTapped(ctx, p.storage, bias_.grad.data(), bias_.grad.data(), bias_.grad.size(), name(),
                TensorKind::weightGrad);
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
    const GemmPrecision filterGemm = layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input);
    // Held as codes and not decoded whole: dY's columns decoded span by span where the BLAS
    // cuts the sum anyway, else block by block into the first work buffer.
    const bool decodes = codes_ && !quantizedGrad_;
    const ColumnsOfDY decoded = [&](std::int64_t at, std::int64_t width, float* dst) {
        decodeRows(ctx, gradCodes_, at, N * hw, dst, width, outChannels_, width);
    };
    if (decodes) {
        const std::int64_t cut = ctx.backend->gemmReductionCut(filterGemm, outChannels_, K);
        if (cut > 0 && block * hw >= 2 * cut) {
            filterGradientInSpans(ctx, filterGemm, decoded, block, cut,
                                  packedBlockValues(ctx, filterGemm, outChannels_ * N * hw));
            return;
        }
    }
    Tensor* wide = decodes ? &workBuffer(ctx, 0, {outChannels_, std::min(block, N) * hw}, ownWork_[0]) : nullptr;
    if (mx)
        prepareQuantized(roundedGrad_, dY.shape(), quantizedStorageOf(p, OperandRole::gradOutput), ctx,
                         MemoryCategory::workspace);
    const float gradAmax = mx ? nvfp4TensorAmax(ctx, p, dY) : 0.0f;
    for (std::int64_t n0 = 0; n0 < N; n0 += block) {
        const std::int64_t count = std::min(block, N - n0);
        const float* dYBlock = nullptr;
        std::int64_t ld = N * hw;
        if (decodes) {
            decoded(n0 * hw, count * hw, wide->data());
            dYBlock = wide->data();
            ld = count * hw;
        } else {
            dYBlock = dY.data() + n0 * hw;
        }
        if (mx) {
            quantizeBlocks(ctx, p, dYBlock, roundedGrad_.data() + n0 * hw, outChannels_, count * hw, N * hw, true,
                           name(), OperandRole::gradOutput, gradAmax);
            dYBlock = roundedGrad_.data() + n0 * hw;
            lowerInBlocks(ctx, p, g, *inputOperand_, n0, count, cols_.data(), true, name(), inputAmax_);
        } else if (!colsHoldWholeBatch_) {
            lowerChannels(ctx, 0, g.channels, n0, count);
        }
        ctx.backend->gemm(Transpose::no, Transpose::yes, outChannels_, K, count * hw, dYBlock, ld, cols_.data(),
                          count * hw, n0 == 0 ? 0.0f : 1.0f, weight_.grad.data(), K, filterGemm);
    }
}

void Conv2d::inputGradientLowered(StepContext& ctx, const StepPrecision& p, const Tensor& dY, float* target)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    // dcols (K, count*hw) = W^T (K, Cout) * dY block; col2im folds them into dX. The cols
    // buffer is free now (dW is done), so it holds dcols. MX: this GEMM sums over Cout, so W
    // and dY go in blocks down their columns.
    const GemmPrecision dataGemm = layerGemm(p, scalers_, OperandRole::weight, OperandRole::gradOutput);
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
                          count * hw, dataGemm);
        ctx.backend->col2im(g, cols_.data(), n0, count, target, 0);
    }
}

std::int64_t Conv2d::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const auto g = geometryOf(input);
    const std::int64_t output = outChannels_ * g.planeSize() * formatInfo(recipe.storage()).storageBytes;
    return output + loweredBytesPerSample(input, recipe);
}

std::int64_t Conv2d::loweredBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const auto g = geometryOf(input);
    const std::int64_t hw = g.planeSize();
    std::int64_t bytes = 0;
    if (!recipe.quantization.on()) {
        bytes += g.patchSize() * hw * formatInfo(recipe.compute).storageBytes;   // cols
        if (recipe.compute == Format::tf32) bytes += g.channels * hw * 4;        // the rounded input
        return bytes;
    }
    // The lowered input, its quantised values in fp32 (what the GEMM reads), and under
    // per-tensor FP8 the quantised input it is lowered from (as quantizedStorageOf stores
    // it; MX quantises the columns only).
    bytes += g.patchSize() * hw * 4;
    if (!recipe.quantization.blockScaled()) {
        const QuantizedStorage q = quantizedStorageOf(StepPrecision::of(recipe), OperandRole::input);
        bytes += quantizedBytes({q.elementBits, 0, 0}, g.channels * hw);
    }
    return bytes;
}

}  // namespace plab
