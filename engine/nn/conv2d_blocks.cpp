// Conv2d's passes in blocks: where the layer holds its output and input gradient packed
// into 16 bits (forwardPacked and the packed backward passes, in blocks of samples, spans
// of pixels, or the backend's own pieces of the unpacked products), and where it holds its
// FP8 operands as codes (backwardFromCodes). Every block's sums are the unpacked layer's,
// bit for bit (conv2d.h says how).
#include "nn/conv2d.h"

#include "nn/layer_ops.h"

#include <algorithm>

namespace plab {

namespace {
// The fewest samples whose columns make a block of a GEMM whose other two dimensions
// multiply to `others` (leastGemmBlock).
std::int64_t leastSamples(std::int64_t planeSize, std::int64_t others)
{
    return (leastGemmBlock(others) + planeSize - 1) / std::max<std::int64_t>(planeSize, 1);
}
}  // namespace

void Conv2d::forwardPacked(StepContext& ctx, const StepPrecision& p)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    usesLibrary_ = colsHoldWholeBatch_ = false;
    const GemmPrecision precision = layerGemm(p, scalers_, OperandRole::weight, OperandRole::input);
    if (p.quant.blockScaled()) {
        forwardInBlocks(ctx, p, precision);
        return;
    }
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
    multiplies16_ = !codes_ && inputOperand_->packed() && ctx.backend->supports(BackendOp::gemm16, precision);
    if (multiplies16_)
        patternsOf(ctx, p.compute, *weightOperand_, weightPatterns_);
    else
        weightPatterns_.discard();
    if (!multiplies16_ && sumsDependOnCut(ctx, precision, outChannels_, N * hw, K)) {
        forwardInPieces(ctx, p, precision);
        return;
    }
    // A library that convolves the patterns itself (cuDNN, asked for) lowers nothing here.
    const bool library16 = multiplies16_ && ctx.backend->supports(BackendOp::convolution16, precision);
    if (library16)
        cols_.discard();
    else
        prepareTensor(cols_, {K, widest}, multiplies16_ ? p.compute : Format::fp32, ctx, MemoryCategory::workspace,
                      multiplies16_, NewElements::undefined);
    Tensor& result = workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    const auto sink = tapSink(ctx, name(), TensorKind::activation);
    if (library16 && ctx.telemetry) ctx.telemetry->libraryRounded(name(), TensorKind::activation);
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

void Conv2d::forwardInBlocks(StepContext& ctx, const StepPrecision& p, const GemmPrecision& precision)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    // MX: each block of the unpacked layer's lowering lowered and quantised once, whole (the
    // pieces of forwardInPieces would lower, and count, a sample their cut splits twice;
    // quantised down the columns, a block of columns is the whole's). Its product whole
    // where its result fits two blocks' budget (one call, on every thread), where the
    // backend's sums depend on a cut along the rows, or where it multiplies natively; else
    // in blocks of columns: groups of the backend's pieces where its sums depend on their
    // cut, blocks of at most a block's budget where they do not (gemmCut none); each
    // biased, rounded and packed into its place.
    prepareColumns(ctx, p);
    const std::vector<PieceGroups> blocks = loweringGroups(ctx, precision, outChannels_, K, outChannels_);
    const std::int64_t packed = outChannels_ * N * hw;
    const bool whole = outChannels_ * std::min(colsBlock_, N) * hw <= packedColumnValues(ctx, precision, packed) ||
                       ctx.backend->supports(BackendOp::gemm16, precision);
    const std::int64_t most = packedBlockValues(ctx, precision, packed) / outChannels_;
    const std::int64_t least = leastGemmBlock(outChannels_ * K);
    enum class Cut : std::uint8_t { whole, groups, blocks };
    const auto cutOf = [&](std::int64_t columns) {
        if (whole) return Cut::whole;
        const GemmCut c = ctx.backend->gemmCut(precision, outChannels_, columns, K);
        if (c.count == 0) return Cut::blocks;
        return c.columns ? Cut::groups : Cut::whole;
    };
    // Each lowering block's cut and its column blocks [begins[i], begins[i + 1]).
    struct Plan {
        Cut cut = Cut::whole;
        std::vector<std::int64_t> begins;
    };
    std::vector<Plan> plans(blocks.size());
    std::int64_t widest = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const std::int64_t columns = std::min(colsBlock_, N - static_cast<std::int64_t>(b) * colsBlock_) * hw;
        Plan& plan = plans[b];
        plan.cut = cutOf(columns);
        switch (plan.cut) {
        case Cut::whole: plan.begins = {0, columns}; break;
        case Cut::groups:
            for (std::int64_t i = 0; i <= blocks[b].count(); ++i) plan.begins.push_back(blocks[b].begin(i));
            break;
        case Cut::blocks: {
            const Pieces pieces = piecesOf(columns, most, least);
            for (std::int64_t i = 0; i <= pieces.count; ++i) plan.begins.push_back(pieces.begin(i));
            break;
        }
        }
        for (std::size_t i = 0; i + 1 < plan.begins.size(); ++i)
            widest = std::max(widest, plan.begins[i + 1] - plan.begins[i]);
    }
    Tensor& result = workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    const auto sink = tapSink(ctx, name(), TensorKind::activation);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const std::int64_t n0 = static_cast<std::int64_t>(b) * colsBlock_;
        const std::int64_t count = std::min(colsBlock_, N - n0), columns = count * hw;
        lowerInput(ctx, p, n0, count);
        const Plan& plan = plans[b];
        for (std::size_t i = 0; i + 1 < plan.begins.size(); ++i) {
            const std::int64_t c0 = plan.begins[i], width = plan.begins[i + 1] - c0;
            if (plan.cut == Cut::groups)
                gemmGroup(ctx, blocks[b], static_cast<std::int64_t>(i), Transpose::no, Transpose::no, outChannels_,
                          width, K, weightOperand_->data(), K, cols_.data() + c0, columns, 0.0f, result.data(), width,
                          precision);
            else
                ctx.backend->gemm(Transpose::no, Transpose::no, outChannels_, width, K, weightOperand_->data(), K,
                                  cols_.data() + c0, columns, 0.0f, result.data(), width, precision);
            ctx.backend->addBiasRoundTo16(p.storage, result.data(), width, bias_.value.data(),
                                          output_.bits16() + n0 * hw + c0, N * hw, outChannels_, width, sink.stats,
                                          sink.hist);
        }
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
    if (patterns && ctx.backend->supports(BackendOp::convolutionFilter16, filterGemm)) {
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
                                   std::int64_t lowering, std::int64_t cut, std::int64_t budget,
                                   const SpanOfColumns& quantizeColumns)
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
            if (quantizeColumns) quantizeColumns(cols_.data() + (k0 - s0 * hw), (s1 - s0) * hw, width);
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
    // A library that convolves the patterns itself (cuDNN, asked for, or at telemetry
    // sampled's steps between snapshots) lowers nothing: its results, rounded into the
    // compute format by the library, are widened into the block's sums, which the layer
    // rounds (exactly, where the storage format is the compute format) and counts as any.
    const bool library16 = patterns && ctx.backend->supports(BackendOp::convolutionData16, dataGemm);
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
    if (library16)
        cols_.discard();
    else
        prepareTensor(cols_, {K, widest}, Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    Tensor* dYBlock = patterns ? nullptr : &workBuffer(ctx, 0, {outChannels_, widest}, ownWork_[0]);
    Tensor& sums = workBuffer(ctx, 1, {C, widest}, ownWork_[1]);
    const auto sink = tapSink(ctx, name(), TensorKind::activationGrad);
    if (library16 && ctx.telemetry) ctx.telemetry->libraryRounded(name(), TensorKind::activationGrad);
    for (std::int64_t i = 0; i < samples.count; ++i) {
        const std::int64_t n0 = samples.begin(i), count = samples.begin(i + 1) - n0, columns = count * hw;
        if (library16) {
            ctx.backend->convolutionBackwardData16(g, outChannels_, dYBits, n0, count, weightPatterns_.bits16(),
                                                   sums.data(), dataGemm);
            ctx.backend->roundTo16(p.storage, sums.data(), columns, gradInput_.bits16() + n0 * hw, N * hw, C, columns,
                                   sink.stats, sink.hist);
            continue;
        }
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

void Conv2d::biasGradientAsArrived(StepContext& ctx, const Tensor& gradOutput)
{
    const std::int64_t rows = geometry_.batch * geometry_.planeSize();
    if (gradOutput.packed())
        ctx.backend->sumRows16(gradOutput.storage(), gradOutput.bits16(), outChannels_, rows, bias_.grad.data());
    else
        ctx.backend->sumRows(gradOutput.data(), outChannels_, rows, bias_.grad.data());
}

void Conv2d::backwardFromCodes(StepContext& ctx, const StepPrecision& p, const Tensor& gradOutput,
                               bool needInputGrad)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch;
    if (packs_) {   // the forward pass left no columns: lowered again, block by block
        prepareColumns(ctx, p);
        colsHoldWholeBatch_ = false;
    }
    // A dY within a block's budget is quantised once, whole, into the first work buffer as
    // the values both passes read (as the unpacked layer reads it; no codes to decode); a
    // larger one into codes (from the patterns when packed), decoded block by block in each
    // pass. The bias gradient sums the gradient as it arrived (Transformer Engine sums it
    // before the cast).
    roundedGrad_.discard();
    if (gradOutput.size() <= packedBlockValues()) {
        gradCodes_.discard();
        Tensor& values = workBuffer(ctx, 0, gradOutput.shape(), ownWork_[0]);
        quantizedValuesInto(ctx, p, gradOutput, values, name(), OperandRole::gradOutput, scalers_.gradOutput);
        quantizedGrad_ = &values;
    } else {
        quantizedCodes(ctx, p, gradOutput, gradCodes_, name(), OperandRole::gradOutput, scalers_.gradOutput);
        quantizedGrad_ = nullptr;
    }
    biasGradientAsArrived(ctx, gradOutput);
    filterGradientLowered(ctx, p, quantizedGrad_ ? *quantizedGrad_ : gradOutput);
    roundWeightGradients(ctx, p);
    if (!needInputGrad) return;
    prepareTensor(gradInput_, {g.channels, N, g.height, g.width}, p.storage, ctx, MemoryCategory::workspace,
                  packs_ && p.roundsStorage(), NewElements::undefined);
    inputGradientFromCodes(ctx, p);
}

void Conv2d::inputGradientFromCodes(StepContext& ctx, const StepPrecision& p)
{
    const std::int64_t N = geometry_.batch, hw = geometry_.planeSize();
    prepareColumns(ctx, p);
    const Tensor& w = decodedInto(ctx, 1, weightCodes_, ownWork_[1]);
    Tensor* dYBlock = quantizedGrad_ ? nullptr : &workBuffer(ctx, 0, {outChannels_, colsBlock_ * hw}, ownWork_[0]);
    inputGradientBySamples(ctx, p, w, [&](std::int64_t n0, std::int64_t count, std::int64_t& ld) -> const float* {
        if (quantizedGrad_) {
            ld = N * hw;
            return quantizedGrad_->data() + n0 * hw;
        }
        ld = count * hw;
        decodeRows(ctx, gradCodes_, n0 * hw, N * hw, dYBlock->data(), ld, outChannels_, ld);
        return dYBlock->data();
    });
}

void Conv2d::inputGradientBySamples(StepContext& ctx, const StepPrecision& p, const Tensor& w,
                                    const BlockOfDY& dYBlock)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize(), C = g.channels;
    // dcols (K, count*hw) = W^T (K, Cout) * dY's block, as inputGradientLowered, over the
    // same blocks of samples (the spans of the filter gradient may have left narrower
    // columns); col2im folds them into dX, or, packed, into a block of sums that is rounded
    // and packed into its place.
    const GemmPrecision dataGemm = layerGemm(p, scalers_, OperandRole::weight, OperandRole::gradOutput);
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
        std::int64_t ld = 0;
        const float* dY = dYBlock(n0, count, ld);
        ctx.backend->gemm(Transpose::yes, Transpose::no, K, columns, outChannels_, w.data(), K, dY, ld, 0.0f,
                          cols_.data(), columns, dataGemm);
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

void Conv2d::backwardInBlocks(StepContext& ctx, const StepPrecision& p, const Tensor& gradOutput, bool needInputGrad)
{
    const auto& g = geometry_;
    const std::int64_t N = g.batch, hw = g.planeSize(), K = g.patchSize();
    // As filterGradientLowered and inputGradientLowered quantise dY under MX, but a block of
    // samples at a time, in the step's first work buffer: its columns of the lowering block
    // copied (widened when packed) and quantised there, in blocks along its rows for the
    // filter gradient (blocks start where the lowering block does, as there) and down its
    // columns for the input gradient (each column on its own). No whole quantised copy.
    prepareColumns(ctx, p);
    roundedGrad_.discard();
    const float gradAmax = nvfp4TensorAmax(ctx, p, gradOutput);
    // dY's columns [at, at + width) of every row copied (widened when packed) into dst (rows
    // width apart) and quantised there; a block of samples so in the first work buffer.
    const auto quantizedColumns = [&](std::int64_t at, std::int64_t width, float* dst, bool alongRows) {
        if (gradOutput.packed())
            ctx.backend->widen16(gradOutput.storage(), gradOutput.bits16() + at, N * hw, dst, width, outChannels_,
                                 width);
        else
            copyColumns(ctx, gradOutput.data() + at, N * hw, dst, width, outChannels_, width);
        quantizeBlocks(ctx, p, dst, dst, outChannels_, width, width, alongRows, name(), OperandRole::gradOutput,
                       gradAmax);
    };
    const auto quantizedBlock = [&](std::int64_t n0, std::int64_t count, bool alongRows) -> const float* {
        Tensor& block = workBuffer(ctx, 0, {outChannels_, count * hw}, ownWork_[0]);
        quantizedColumns(n0 * hw, count * hw, block.data(), alongRows);
        return block.data();
    };
    biasGradientAsArrived(ctx, gradOutput);

    // dW (Cout, K) = dY (Cout, N*hw) * cols^T: this GEMM sums over pixels, so dY and the
    // columns go in blocks along their rows, which start where the lowering block does.
    // Where a lowering block's dY would not fit two blocks' budget and the BLAS cuts the sum
    // anyway, into spans whose starts are whole blocks apart: span by span, lowered, copied
    // and quantised there (each value once; the blocks are the same), within a block's
    // budget (a span lowers the samples it touches, so short spans lower more).
    const GemmPrecision filterGemm = layerGemm(p, scalers_, OperandRole::gradOutput, OperandRole::input);
    const std::int64_t cut = ctx.backend->gemmReductionCut(filterGemm, outChannels_, K);
    const std::int64_t blockSize = p.quant.info().blockSize;
    const std::int64_t span = std::min(colsBlock_, N) * hw;
    if (outChannels_ * span > packedColumnValues(ctx, filterGemm, outChannels_ * N * hw) && cut > 0 &&
        cut % blockSize == 0 && span >= 2 * cut) {
        const ColumnsOfDY spanOfDY = [&](std::int64_t at, std::int64_t width, float* dst) {
            quantizedColumns(at, width, dst, true);
        };
        const SpanOfColumns spanOfColumns = [&](float* columns, std::int64_t ld, std::int64_t width) {
            quantizeBlocks(ctx, p, columns, columns, K, width, ld, true, name(), OperandRole::input, inputAmax_);
        };
        filterGradientInSpans(ctx, filterGemm, spanOfDY, colsBlock_, cut,
                              packedBlockValues(ctx, filterGemm, outChannels_ * N * hw), spanOfColumns);
    } else {
        for (std::int64_t n0 = 0; n0 < N; n0 += colsBlock_) {
            const std::int64_t count = std::min(colsBlock_, N - n0), columns = count * hw;
            const float* dY = quantizedBlock(n0, count, true);
            lowerInBlocks(ctx, p, g, *inputOperand_, n0, count, cols_.data(), true, name(), inputAmax_);
            ctx.backend->gemm(Transpose::no, Transpose::yes, outChannels_, K, columns, dY, columns, cols_.data(),
                              columns, n0 == 0 ? 0.0f : 1.0f, weight_.grad.data(), K, filterGemm);
        }
    }
    roundWeightGradients(ctx, p);
    if (!needInputGrad) return;

    // dX: this GEMM sums over Cout, so W and dY go in blocks down their columns.
    prepareColumns(ctx, p);   // (the spans may have left narrower columns)
    prepareTensor(gradInput_, {g.channels, N, g.height, g.width}, p.storage, ctx, MemoryCategory::workspace,
                  packs_ && p.roundsStorage(), NewElements::undefined);
    weightOperand_ = &blockOperand(ctx, p, weight_.value, outChannels_, K, false, roundedWeight_, name(),
                                   OperandRole::weight);
    inputGradientBySamples(ctx, p, *weightOperand_,
                           [&](std::int64_t n0, std::int64_t count, std::int64_t& ld) -> const float* {
        ld = count * hw;
        return quantizedBlock(n0, count, false);
    });
}

}  // namespace plab
