// Conv2d forward and backward by batched im2col + GEMM (or the backend's convolution
// library), with the rounding sites of the recipe: input and weight operands in the
// compute format, bias added in fp32, output and every gradient rounded to the storage
// format (each tapped into telemetry).
#include "nn/conv2d.h"

#include "nn/layer_ops.h"

#include <algorithm>
#include <stdexcept>

namespace plab {

namespace {
// The fewest samples whose columns make a block of a GEMM whose other two dimensions
// multiply to `others` (leastGemmBlock).
std::int64_t leastSamples(std::int64_t planeSize, std::int64_t others)
{
    return (leastGemmBlock(others) + planeSize - 1) / std::max<std::int64_t>(planeSize, 1);
}
}  // namespace

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
    geometry_ = geometryOf(input.shape());
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize();
    // A packed input is lowered from its bits when it is the operand as it is (in
    // the compute format, not quantised), or quantised from them into codes; else it is
    // read as fp32.
    codes_ = holdsCodes(ctx, p);
    packs_ = codes_ ? packsAroundCodes(ctx, p) : packsStorage(ctx, p);
    multiplies16_ = false;   // forwardPacked says
    if (input.packed() && !codes_ && !(packs_ && input.storage() == p.compute)) input.unpack();
    if (!codes_) {   // (a recipe changed mid-run: codes held before are freed)
        for (Fp8Codes* c : {&inputCodes_, &weightCodes_, &gradCodes_}) c->discard();
        blockSums_.discard();
    }

    // tf32 rounds the fp32 activation operand here (its outputs stay fp32, so this is the
    // rounding site telemetry shows for tf32); fp16/bf16 inputs already are in the format.
    const bool mx = p.quant.blockScaled();
    if (mx) {
        // MX: the reduction runs over the patch (C*k*k): W in blocks along its rows, the
        // lowered columns in blocks down theirs, once lowered (lowerAndMultiply).
        inputOperand_ = &input;
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

void Conv2d::forwardPacked(StepContext& ctx, const StepPrecision& p)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    usesLibrary_ = colsHoldWholeBatch_ = false;
    const GemmPrecision precision = layerGemm(p, scalers_, OperandRole::weight, OperandRole::input);
    // Blocks of samples whose columns (K, n * hw) fit packedColumnValues and whose result
    // (Cout, n * hw) fits a block, both scaled to the output.
    const std::int64_t packed = outChannels_ * N * hw;
    const Pieces samples = piecesOf(N,
                                    std::min(packedColumnValues(ctx, precision, packed) / K,
                                             packedBlockValues(ctx, precision, packed) / outChannels_) /
                                        hw,
                                    leastSamples(hw, outChannels_ * K), deviceGranule(ctx, hw * 2));
    const std::int64_t widest = samples.largest() * hw;
    // Native 16-bit products read the patterns: the input lowered as they are, the weights
    // taken once for the step's three passes.
    multiplies16_ = !codes_ && inputOperand_->packed() && ctx.backend->multiplies16(precision);
    if (multiplies16_)
        patternsOf(ctx, p.compute, *weightOperand_, weightPatterns_);
    else
        weightPatterns_.discard();
    if (!multiplies16_ && sumsDependOnCut(ctx, precision, outChannels_, N * hw, K)) {
        forwardInPieces(ctx, p, precision);
        return;
    }
    // A library that convolves the patterns itself (cuDNN, asked for) lowers nothing here.
    const bool library16 = multiplies16_ && ctx.backend->convolves16(precision);
    if (library16)
        cols_.discard();
    else
        prepareTensor(cols_, {K, widest}, multiplies16_ ? p.compute : Format::fp32, ctx, MemoryCategory::workspace,
                      multiplies16_, NewElements::undefined);
    Tensor& result = workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    const auto sink = tapSink(ctx, name(), TensorKind::activation);
    for (std::int64_t i = 0; i < samples.count; ++i) {
        const std::int64_t n0 = samples.begin(i), count = samples.begin(i + 1) - n0, columns = count * hw;
        if (library16) {
            ctx.backend->convolutionForward16(g, outChannels_, inputOperand_->bits16(), n0, count,
                                              weightPatterns_.bits16(), result.data(), precision);
        } else if (multiplies16_) {
            // result (Cout, count*hw) = W (Cout, K) * cols: columns n0*hw.. of the whole product
            lowerChannels(ctx, 0, g.channels, n0, count);
            ctx.backend->gemm16(Transpose::no, Transpose::no, outChannels_, columns, K, weightPatterns_.bits16(), K,
                                cols_.bits16(), columns, 0.0f, result.data(), columns, precision);
        } else {
            lowerChannels(ctx, 0, g.channels, n0, count);
            ctx.backend->gemm(Transpose::no, Transpose::no, outChannels_, columns, K, weightOperand_->data(), K,
                              cols_.data(), columns, 0.0f, result.data(), columns, precision);
        }
        // Bias in fp32, one rounding to the storage format, packed into the output's block.
        ctx.backend->addBiasRoundTo16(p.storage, result.data(), columns, bias_.value.data(),
                                      output_.bits16() + n0 * hw, N * hw, outChannels_, columns, sink.stats,
                                      sink.hist);
    }
}

std::int64_t Conv2d::unpackedLowering(const StepContext& ctx) const
{
    const auto& g = geometry_;
    return std::min(samplesPerBlock(g, deviceGranule(ctx, g.planeSize() * 2)), std::max<std::int64_t>(g.batch, 1));
}

std::vector<PieceGroups> Conv2d::loweringGroups(const StepContext& ctx, const GemmPrecision& precision,
                                               std::int64_t M, std::int64_t sum, std::int64_t rows) const
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), packed = rows * N * hw;
    const std::int64_t most = std::min(packedColumnValues(ctx, precision, packed) / K,
                                       packedBlockValues(ctx, precision, packed) / rows);
    const std::int64_t roomy = std::min(2 * packedBlockValues() / K, packedBlockValues() / rows);
    const std::int64_t lowering = unpackedLowering(ctx);
    std::vector<PieceGroups> blocks;
    for (std::int64_t n0 = 0; n0 < N; n0 += lowering) {
        const std::int64_t columns = std::min(lowering, N - n0) * hw;
        blocks.push_back(pieceGroups(ctx.backend->gemmCut(precision, M, columns, sum), true, columns, most,
                                     ctx.backend->threads(), roomy));
    }
    return blocks;
}

void Conv2d::forwardInPieces(StepContext& ctx, const StepPrecision& p, const GemmPrecision& precision)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), lowering = unpackedLowering(ctx);
    // The unpacked layer's products, one a block of `lowering` samples, each in groups of
    // its pieces: a group's columns lowered from the samples they lie in.
    const std::vector<PieceGroups> blocks = loweringGroups(ctx, precision, outChannels_, K, outChannels_);
    std::int64_t widest = 0, widestLowered = 0;
    for (const PieceGroups& groups : blocks) {
        for (std::int64_t i = 0; i < groups.count(); ++i) {
            const std::int64_t c0 = groups.begin(i), c1 = groups.begin(i + 1);
            widest = std::max(widest, c1 - c0);
            widestLowered = std::max(widestLowered, ((c1 + hw - 1) / hw - c0 / hw) * hw);
        }
    }
    prepareTensor(cols_, {K, widestLowered}, Format::fp32, ctx, MemoryCategory::workspace, false,
                  NewElements::undefined);
    Tensor& result = workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    const auto sink = tapSink(ctx, name(), TensorKind::activation);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const PieceGroups& groups = blocks[b];
        const std::int64_t n0 = static_cast<std::int64_t>(b) * lowering;
        for (std::int64_t i = 0; i < groups.count(); ++i) {
            const std::int64_t c0 = groups.begin(i), c1 = groups.begin(i + 1), columns = c1 - c0;
            const std::int64_t s0 = c0 / hw, s1 = (c1 + hw - 1) / hw;
            lowerChannels(ctx, 0, g.channels, n0 + s0, s1 - s0);
            gemmGroup(ctx, groups, i, Transpose::no, Transpose::no, outChannels_, columns, K, weightOperand_->data(),
                      K, cols_.data() + (c0 - s0 * hw), (s1 - s0) * hw, 0.0f, result.data(), columns, precision);
            ctx.backend->addBiasRoundTo16(p.storage, result.data(), columns, bias_.value.data(),
                                          output_.bits16() + n0 * hw + c0, N * hw, outChannels_, columns, sink.stats,
                                          sink.hist);
        }
    }
}

void Conv2d::filterGradientPacked(StepContext& ctx, const StepPrecision& p, const Tensor& dY)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), C = g.channels;
    const GemmPrecision filterGemm = layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input);
    const std::int64_t k2 = std::int64_t{kernel_} * kernel_, budget = packedBlockValues(ctx, filterGemm, dY.size());
    const Format f = dY.storage();
    const std::uint16_t* dYBits = dY.bits16();

    // db (Cout) = row sums of dY, in double, in the order sumRows adds them.
    ctx.backend->sumRows16(f, dYBits, outChannels_, N * hw, bias_.grad.data());

    // dW (Cout, K) = dY (Cout, N*hw) * cols^T, summed over the same blocks of samples as the
    // unpacked layer lowers (samplesPerBlock), each block's GEMM cut into blocks of dW's rows
    // (output channels, dY widened) and columns (input channels, lowered).
    const std::int64_t lowering = unpackedLowering(ctx), span = lowering * hw;
    // Channels first (their blocks' columns against all rows), then rows against the
    // narrowest block of columns, so that every block is as wide as leastGemmBlock says.
    const Pieces channelBlocks = piecesOf(C, budget / (k2 * span), (leastGemmBlock(outChannels_ * span) + k2 - 1) / k2,
                                          deviceGranule(ctx, k2 * 4));
    const bool patterns = readsPatterns(ctx, filterGemm, p, f);
    if (patterns && ctx.backend->convolvesFilter16(filterGemm)) {
        // A library that convolves the patterns itself (cuDNN, asked for): no lowering.
        cols_.discard();
        for (std::int64_t n0 = 0; n0 < N; n0 += lowering)
            ctx.backend->convolutionBackwardFilter16(g, outChannels_, inputOperand_->bits16(), dYBits, n0,
                                                     std::min(lowering, N - n0), n0 == 0 ? 0.0f : 1.0f,
                                                     weight_.grad.data(), filterGemm);
        return;
    }
    if (patterns) {
        const Pieces& channels = channelBlocks;
        // Native 16-bit products: dY's patterns read where they are, all rows at once.
        prepareTensor(cols_, {channels.largest() * k2, span}, p.compute, ctx, MemoryCategory::workspace, true,
                      NewElements::undefined);
        for (std::int64_t n0 = 0; n0 < N; n0 += lowering) {
            const std::int64_t count = std::min(lowering, N - n0), columns = count * hw;
            for (std::int64_t j = 0; j < channels.count; ++j) {
                const std::int64_t c0 = channels.begin(j), c1 = channels.begin(j + 1);
                lowerChannels(ctx, c0, c1, n0, count);
                ctx.backend->gemm16(Transpose::no, Transpose::yes, outChannels_, (c1 - c0) * k2, columns,
                                    dYBits + n0 * hw, N * hw, cols_.bits16(), columns, n0 == 0 ? 0.0f : 1.0f,
                                    weight_.grad.data() + c0 * k2, K, filterGemm);
            }
        }
        return;
    }
    // The BLAS sums a product cut along its pixels as the whole: spans of all rows and columns.
    if (const std::int64_t cut = ctx.backend->gemmReductionCut(filterGemm, outChannels_, K); cut > 0 && span >= 2 * cut) {
        const ColumnsOfDY widened = [&](std::int64_t at, std::int64_t width, float* dst) {
            ctx.backend->widen16(f, dYBits + at, N * hw, dst, width, outChannels_, width);
        };
        filterGradientInSpans(ctx, filterGemm, widened, lowering, cut, budget);
        return;
    }
    // Where the backend's sums depend on the cut (and the sum is too short for spans), the
    // unpacked layer's products whole: every row of dY's block widened, every channel lowered.
    const bool whole = sumsDependOnCut(ctx, filterGemm, outChannels_, K, span);
    const Pieces channels = whole ? piecesOf(C, C, 1) : channelBlocks;
    const Pieces rows = whole ? piecesOf(outChannels_, outChannels_, 1)
                              : piecesOf(outChannels_, budget / span, leastGemmBlock(C / channels.count * k2 * span),
                                         deviceGranule(ctx, K * 4));
    prepareTensor(cols_, {channels.largest() * k2, span}, Format::fp32, ctx, MemoryCategory::workspace, false,
                  NewElements::undefined);
    Tensor& wide = workBuffer(ctx, 0, {rows.largest(), span}, ownWork_[0]);
    for (std::int64_t n0 = 0; n0 < N; n0 += lowering) {
        const std::int64_t count = std::min(lowering, N - n0), columns = count * hw;
        auto widenRows = [&](std::int64_t r0, std::int64_t r1) {
            ctx.backend->widen16(f, dYBits + r0 * N * hw + n0 * hw, N * hw, wide.data(), columns, r1 - r0, columns);
        };
        if (rows.count == 1) widenRows(0, outChannels_);
        for (std::int64_t j = 0; j < channels.count; ++j) {
            const std::int64_t c0 = channels.begin(j), c1 = channels.begin(j + 1);
            lowerChannels(ctx, c0, c1, n0, count);
            for (std::int64_t i = 0; i < rows.count; ++i) {
                const std::int64_t r0 = rows.begin(i), r1 = rows.begin(i + 1);
                if (rows.count > 1) widenRows(r0, r1);
                ctx.backend->gemm(Transpose::no, Transpose::yes, r1 - r0, (c1 - c0) * k2, columns, wide.data(),
                                  columns, cols_.data(), columns, n0 == 0 ? 0.0f : 1.0f,
                                  weight_.grad.data() + r0 * K + c0 * k2, K, filterGemm);
            }
        }
    }
}

void Conv2d::filterGradientInSpans(StepContext& ctx, const GemmPrecision& filterGemm, const ColumnsOfDY& dYColumns,
                                   std::int64_t lowering, std::int64_t cut, std::int64_t budget)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    const std::int64_t span = std::min(lowering, N) * hw;
    // Spans `length` long (a multiple of cut, at least cut), a remainder shorter than cut
    // joining the last: each shorter than length + cut, and its samples' columns at most
    // two samples wider.
    const std::int64_t fits =
        std::min(budget / outChannels_, packedColumnValues(ctx, filterGemm, outChannels_ * N * hw) / K - 2 * hw);
    const std::int64_t length = std::max<std::int64_t>(1, fits / cut) * cut;
    const std::int64_t widest = std::min(span, length + cut - 1);
    prepareTensor(cols_, {K, std::min(span, (widest / hw + 2) * hw)}, Format::fp32, ctx, MemoryCategory::workspace,
                  false, NewElements::undefined);
    Tensor& wide = workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    for (std::int64_t n0 = 0; n0 < N; n0 += lowering) {
        const std::int64_t columns = std::min(lowering, N - n0) * hw;
        std::int64_t spans = std::max<std::int64_t>(1, columns / length);
        if (columns - spans * length >= cut) ++spans;
        for (std::int64_t i = 0; i < spans; ++i) {
            // Pixels [k0, k1) of the block: dY's columns widened, the samples they lie in lowered.
            const std::int64_t k0 = i * length, k1 = i + 1 == spans ? columns : k0 + length, width = k1 - k0;
            const std::int64_t s0 = k0 / hw, s1 = (k1 + hw - 1) / hw;
            lowerChannels(ctx, 0, g.channels, n0 + s0, s1 - s0);
            dYColumns(n0 * hw + k0, width, wide.data());
            ctx.backend->gemm(Transpose::no, Transpose::yes, outChannels_, K, width, wide.data(), width,
                              cols_.data() + (k0 - s0 * hw), (s1 - s0) * hw, n0 == 0 && i == 0 ? 0.0f : 1.0f,
                              weight_.grad.data(), K, filterGemm);
        }
    }
}

void Conv2d::inputGradientPacked(StepContext& ctx, const StepPrecision& p, const Tensor& dY)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), C = g.channels;
    const Format f = dY.storage();
    const std::uint16_t* dYBits = dY.bits16();
    // dX in blocks of samples: dcols (K, n*hw) = W^T (K, Cout) * dY block (widened), folded
    // by col2im into a block of dX's sums, which is rounded and packed into gradInput_.
    const GemmPrecision dataGemm = layerGemm(p, scalers_, OperandRole::weight, OperandRole::gradOutput);
    // Native 16-bit products read dY's patterns where they are (and the step's weight patterns).
    const bool patterns = readsPatterns(ctx, dataGemm, p, f);
    if (!patterns && sumsDependOnCut(ctx, dataGemm, K, N * hw, outChannels_)) {
        inputGradientInPieces(ctx, p, dataGemm, dY);
        return;
    }
    const std::int64_t packed = std::max(outChannels_, C) * N * hw;
    const Pieces samples = piecesOf(N,
                                    std::min(packedColumnValues(ctx, dataGemm, packed) / K,
                                             packedBlockValues(ctx, dataGemm, packed) / std::max(outChannels_, C)) /
                                        hw,
                                    leastSamples(hw, K * outChannels_), deviceGranule(ctx, hw * 2));
    const std::int64_t widest = samples.largest() * hw;
    prepareTensor(cols_, {K, widest}, Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    Tensor* dYBlock = patterns ? nullptr : &workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    Tensor& sums = workBuffer(ctx, 1, {C, widest}, ownWork_[1]);
    const auto sink = tapSink(ctx, name(), TensorKind::activationGrad);
    for (std::int64_t i = 0; i < samples.count; ++i) {
        const std::int64_t n0 = samples.begin(i), count = samples.begin(i + 1) - n0, columns = count * hw;
        if (patterns) {
            ctx.backend->gemm16(Transpose::yes, Transpose::no, K, columns, outChannels_, weightPatterns_.bits16(), K,
                                dYBits + n0 * hw, N * hw, 0.0f, cols_.data(), columns, dataGemm);
        } else {
            ctx.backend->widen16(f, dYBits + n0 * hw, N * hw, dYBlock->data(), columns, outChannels_, columns);
            ctx.backend->gemm(Transpose::yes, Transpose::no, K, columns, outChannels_, weightOperand_->data(), K,
                              dYBlock->data(), columns, 0.0f, cols_.data(), columns, dataGemm);
        }
        ConvGeometry part = g;
        part.batch = count;
        ctx.backend->col2im(part, cols_.data(), 0, count, sums.data(), 0);
        ctx.backend->roundTo16(p.storage, sums.data(), columns, gradInput_.bits16() + n0 * hw, N * hw, C, columns,
                               sink.stats, sink.hist);
    }
}

void Conv2d::inputGradientInPieces(StepContext& ctx, const StepPrecision& p, const GemmPrecision& dataGemm,
                                   const Tensor& dY)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), C = g.channels;
    const std::int64_t lowering = unpackedLowering(ctx);
    // The unpacked layer's products, dcols (K, count*hw) = W^T dY of a block of `lowering`
    // samples, each in groups of its pieces. A group's columns follow the columns of the
    // sample the last group left unfinished (the carry, under one sample), the samples
    // completed are folded (col2im over the buffer's rows, ld apart), and the columns of the
    // next unfinished one move to the buffer's front.
    const std::vector<PieceGroups> blocks = loweringGroups(ctx, dataGemm, K, outChannels_, std::max(outChannels_, C));
    std::int64_t widest = 0;
    for (const PieceGroups& groups : blocks) widest = std::max(widest, groups.largest());
    const std::int64_t ld = widest + hw - 1;
    prepareTensor(cols_, {K, ld}, Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    Tensor& dYBlock = workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    Tensor& sums = workBuffer(ctx, 1, {C, ld}, ownWork_[1]);
    const auto sink = tapSink(ctx, name(), TensorKind::activationGrad);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const PieceGroups& groups = blocks[b];
        const std::int64_t n0 = static_cast<std::int64_t>(b) * lowering;
        std::int64_t folded = 0;   // the block's samples folded so far
        for (std::int64_t i = 0; i < groups.count(); ++i) {
            const std::int64_t c0 = groups.begin(i), c1 = groups.begin(i + 1), columns = c1 - c0;
            const std::int64_t carry = c0 - folded * hw;
            ctx.backend->widen16(dY.storage(), dY.bits16() + n0 * hw + c0, N * hw, dYBlock.data(), columns,
                                 outChannels_, columns);
            gemmGroup(ctx, groups, i, Transpose::yes, Transpose::no, K, columns, outChannels_, weightOperand_->data(), K,
                      dYBlock.data(), columns, 0.0f, cols_.data() + carry, ld, dataGemm);
            const std::int64_t complete = c1 / hw - folded;
            if (complete == 0) continue;
            ConvGeometry part = g;
            part.batch = complete;
            ctx.backend->col2im(part, cols_.data(), 0, complete, sums.data(), ld);
            ctx.backend->roundTo16(p.storage, sums.data(), complete * hw, gradInput_.bits16() + (n0 + folded) * hw,
                                   N * hw, C, complete * hw, sink.stats, sink.hist);
            folded += complete;
            copyColumns(ctx, cols_.data() + complete * hw, ld, cols_.data(), ld, K, c1 - folded * hw);
        }
    }
}

bool Conv2d::readsPatterns(const StepContext& ctx, const GemmPrecision& gemm, const StepPrecision& p, Format f) const
{
    return multiplies16_ && f == p.compute && ctx.backend->multiplies16(gemm);
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
    // The lowered columns hold every input value (and padding zeros): the input's amax,
    // kept for the filter gradient's lowering.
    inputAmax_ = mx ? nvfp4TensorAmax(ctx, p, *inputOperand_) : 0.0f;
    for (std::int64_t n0 = 0; n0 < N; n0 += colsBlock_) {
        const std::int64_t count = std::min(colsBlock_, N - n0);
        if (mx)   // lowered and quantised in one pass
            lowerInBlocks(ctx, p, g, inputOperand_->data(), n0, count, cols_.data(), false, name(), inputAmax_);
        else
            lowerChannels(ctx, 0, g.channels, n0, count);
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
    if (codes_) {
        backwardFromCodes(ctx, p, gradOutput, needInputGrad);
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

void Conv2d::backwardFromCodes(StepContext& ctx, const StepPrecision& p, const Tensor& gradOutput,
                               bool needInputGrad)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize();
    if (packs_) {   // the forward pass left no columns: lowered again, block by block
        prepareColumns(ctx, p);
        colsHoldWholeBatch_ = false;
    }
    // dY's codes (quantised from the patterns when packed); the bias gradient sums the
    // gradient as it arrived (Transformer Engine sums it before the cast).
    quantizedCodes(ctx, p, gradOutput, gradCodes_, name(), OperandRole::gradOutput, scalers_.gradOutput);
    roundedGrad_.discard();
    // A dY within a block's budget is decoded once, whole, for both passes (as the unpacked
    // layer reads it); a larger one block by block in each pass.
    decodedGrad_ = gradCodes_.size() <= packedBlockValues() ? &decodedInto(ctx, 0, gradCodes_, ownWork_[0]) : nullptr;
    if (gradOutput.packed())
        ctx.backend->sumRows16(gradOutput.storage(), gradOutput.bits16(), outChannels_, N * hw, bias_.grad.data());
    else
        ctx.backend->sumRows(gradOutput.data(), outChannels_, N * hw, bias_.grad.data());
    filterGradientLowered(ctx, p, decodedGrad_ ? *decodedGrad_ : gradOutput);
    roundWeightGradients(ctx, p);
    if (!needInputGrad) return;
    prepareTensor(gradInput_, {g.channels, N, g.height, g.width}, p.storage, ctx, MemoryCategory::workspace,
                  packs_ && p.roundsStorage(), NewElements::undefined);
    inputGradientFromCodes(ctx, p);
}

void Conv2d::inputGradientFromCodes(StepContext& ctx, const StepPrecision& p)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), C = g.channels;
    // dcols (K, count*hw) = W^T (K, Cout) * dY's block decoded, as inputGradientLowered, over
    // the same blocks of samples (the spans of the filter gradient may have left narrower
    // columns); col2im folds them into dX, or, packed, into a block of sums that is rounded
    // and packed into its place.
    prepareColumns(ctx, p);
    const GemmPrecision dataGemm = layerGemm(p, scalers_, OperandRole::weight, OperandRole::gradOutput);
    const Tensor& w = decodedInto(ctx, 1, weightCodes_, ownWork_[1]);
    Tensor* dYBlock = decodedGrad_ ? nullptr : &workBuffer(ctx, 0, {outChannels_, colsBlock_ * hw}, ownWork_[0]);
    const bool packed = gradInput_.packed();
    if (packed)
        prepareTensor(blockSums_, {C, colsBlock_ * hw}, Format::fp32, ctx, MemoryCategory::workspace, false,
                      NewElements::undefined);
    else
        blockSums_.discard();
    // The tap where the values path has one: packed, the rounding of each block; else
    // roundTapped below, where the storage format rounds.
    const auto sink =
        packed ? tapSink(ctx, name(), TensorKind::activationGrad) : TelemetryCollector::Sink{nullptr, nullptr};
    for (std::int64_t n0 = 0; n0 < N; n0 += colsBlock_) {
        const std::int64_t count = std::min(colsBlock_, N - n0), columns = count * hw;
        const float* dY = decodedGrad_ ? decodedGrad_->data() + n0 * hw : dYBlock->data();
        if (!decodedGrad_)
            decodeRows(ctx, gradCodes_, n0 * hw, N * hw, dYBlock->data(), columns, outChannels_, columns);
        ctx.backend->gemm(Transpose::yes, Transpose::no, K, columns, outChannels_, w.data(), K, dY,
                          decodedGrad_ ? N * hw : columns, 0.0f, cols_.data(), columns, dataGemm);
        if (!packed) {
            ctx.backend->col2im(g, cols_.data(), n0, count, gradInput_.data(), 0);
            continue;
        }
        ConvGeometry part = g;
        part.batch = count;
        ctx.backend->col2im(part, cols_.data(), 0, count, blockSums_.data(), 0);
        ctx.backend->roundTo16(p.storage, blockSums_.data(), columns, gradInput_.bits16() + n0 * hw, N * hw, C,
                               columns, sink.stats, sink.hist);
    }
    if (!packed && p.roundsStorage())
        roundTapped(ctx, p.storage, gradInput_.data(), gradInput_.data(), gradInput_.size(), name(),
                    TensorKind::activationGrad);
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
    if (codes_ && !decodedGrad_) {
        // dY's columns decoded span by span where the BLAS cuts the sum anyway, else block by block.
        const ColumnsOfDY decoded = [&](std::int64_t at, std::int64_t width, float* dst) {
            decodeRows(ctx, gradCodes_, at, N * hw, dst, width, outChannels_, width);
        };
        const std::int64_t span = block * hw, cut = ctx.backend->gemmReductionCut(filterGemm, outChannels_, K);
        if (cut > 0 && span >= 2 * cut) {
            filterGradientInSpans(ctx, filterGemm, decoded, block, cut,
                                  packedBlockValues(ctx, filterGemm, outChannels_ * N * hw));
            return;
        }
        Tensor& wide = workBuffer(ctx, 0, {outChannels_, std::min(block, N) * hw}, ownWork_[0]);
        for (std::int64_t n0 = 0; n0 < N; n0 += block) {
            const std::int64_t count = std::min(block, N - n0);
            decoded(n0 * hw, count * hw, wide.data());
            if (!colsHoldWholeBatch_) lowerChannels(ctx, 0, g.channels, n0, count);
            ctx.backend->gemm(Transpose::no, Transpose::yes, outChannels_, K, count * hw, wide.data(), count * hw,
                              cols_.data(), count * hw, n0 == 0 ? 0.0f : 1.0f, weight_.grad.data(), K, filterGemm);
        }
        return;
    }
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
            lowerChannels(ctx, 0, g.channels, n0, count);
        }
        ctx.backend->gemm(Transpose::no, Transpose::yes, outChannels_, K, count * hw,
                          dYBlock, N * hw, cols_.data(), count * hw, n0 == 0 ? 0.0f : 1.0f,
                          weight_.grad.data(), K, filterGemm);
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
