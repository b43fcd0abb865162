// Operands quantised in blocks, MX and NVFP4 (see mx_operands.h).
#include "nn/mx_operands.h"

#include "nn/layer_ops.h"   // the rounding sites, work buffers and taps the layers share

#include "numerics/quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

namespace plab {

bool mxInBlocks(const StepContext& ctx, const StepPrecision& p)
{
    return p.quant.blockScaled() && ctx.backend->supports(BackendOp::fp8Codes) && packsStorageOn(*ctx.backend);
}

float nvfp4TensorAmax(StepContext& ctx, const StepPrecision& p, const Tensor& t)
{
    if (p.quant.info().scale != QuantScale::blockE4M3) return 0.0f;   // no tensor scale over the blocks'
    return t.packed() ? ctx.backend->amax16(t.storage(), t.bits16(), t.size()) : ctx.backend->amax(t.data(), t.size());
}

namespace {

QuantizeOp blockOp(const StepPrecision& p, OperandRole role, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                   bool alongRows, float tensorAmax)
{
    QuantizeOp op;
    op.element = quantizedFormat(p.quant, role);
    op.blocks = true;
    op.blockScaling = p.quant.info().scale == QuantScale::blockE4M3 ? BlockScaling::nvfp4 : BlockScaling::mx;
    op.mxScale = p.quant.mxScale;
    op.tensorAmax = tensorAmax;
    op.rows = rows;
    op.cols = cols;
    op.ld = ld;
    op.alongRows = alongRows;
    return op;
}

// Runs `quantize(stats, hist, blockScales)` into the tap of (layer, role) and marks its
// scaling: block scales on histogram steps only, like the histograms.
template <typename Quantize>
void tappedBlocks(StepContext& ctx, const QuantizeOp& op, std::string_view layer, OperandRole role,
                  const Quantize& quantize)
{
    const auto sink = tapSink(ctx, layer, quantizedKind(role));
    quantize(sink.stats, sink.hist, sink.hist && sink.scaling ? &sink.scaling->blockScales : nullptr);
    if (!sink.scaling) return;
    sink.scaling->present = sink.scaling->blocks = true;
    if (op.blockScaling == BlockScaling::nvfp4) {   // the tensor's scale beside the blocks'
        sink.scaling->tensorScale = true;
        sink.scaling->scale = nvfp4TensorScale(op.tensorAmax);
        sink.scaling->amax = op.tensorAmax;
    }
}

}  // namespace

void quantizeBlocks(StepContext& ctx, const StepPrecision& p, const float* src, float* dst, std::int64_t rows,
                    std::int64_t cols, std::int64_t ld, bool alongRows, std::string_view layer, OperandRole role,
                    float tensorAmax)
{
    const QuantizeOp op = blockOp(p, role, rows, cols, ld, alongRows, tensorAmax);
    tappedBlocks(ctx, op, layer, role, [&](RoundingStats* stats, GradientHistogram* hist, GradientHistogram* scales) {
        ctx.backend->quantize(op, src, dst, rows * cols, stats, hist, scales);
    });
}

void lowerInBlocks(StepContext& ctx, const StepPrecision& p, const ConvGeometry& g, const Tensor& src,
                   std::int64_t n0, std::int64_t count, float* cols, bool alongRows, std::string_view layer,
                   float tensorAmax)
{
    const std::int64_t K = g.patchSize(), columns = count * g.planeSize();
    const QuantizeOp op = blockOp(p, OperandRole::input, K, columns, columns, alongRows, tensorAmax);
    tappedBlocks(ctx, op, layer, OperandRole::input,
                 [&](RoundingStats* stats, GradientHistogram* hist, GradientHistogram* scales) {
        if (src.packed())
            ctx.backend->im2colPacked(g, src.storage(), src.bits16(), n0, count, cols);
        else if (ctx.backend->im2colQuantize(g, src.data(), n0, count, cols, op, stats, hist, scales))
            return;
        else
            ctx.backend->im2col(g, src.data(), n0, count, cols);
        ctx.backend->quantize(op, cols, cols, K * columns, stats, hist, scales);
    });
}

const Tensor& blockOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                           std::int64_t cols, bool alongRows, Tensor& workspace, std::string_view layer,
                           OperandRole role)
{
    if (rows * cols != t.size())
        throw std::invalid_argument("Layer " + std::string(layer) + " quantises a tensor of " +
                                    std::to_string(t.size()) + " values as " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + ".");
    // Held as the fp32 values the GEMM reads; counted so where whole copies are not the
    // rule (mxInBlocks: these are the weights' and a linear layer's small dY), else as the
    // format stores them (a device's MX copy).
    if (mxInBlocks(ctx, p))
        prepareTensor(workspace, t.shape(), Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    else
        prepareQuantized(workspace, t.shape(), quantizedStorageOf(p, role), ctx, MemoryCategory::workspace);
    quantizeBlocks(ctx, p, t.data(), workspace.data(), rows, cols, cols, alongRows, layer, role,
                   nvfp4TensorAmax(ctx, p, t));
    return workspace;
}

const Tensor& blockOperandInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                               std::int64_t cols, bool alongRows, int slot, Tensor& own, std::string_view layer,
                               OperandRole role)
{
    if (rows * cols != t.size() || t.packed())
        throw std::invalid_argument("Layer " + std::string(layer) + " quantises a tensor of " +
                                    std::to_string(t.size()) + " values as " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + (t.packed() ? " from its 16-bit patterns." : "."));
    Tensor& values = workBuffer(ctx, slot, t.shape(), own);
    quantizeBlocks(ctx, p, t.data(), values.data(), rows, cols, cols, alongRows, layer, role,
                   nvfp4TensorAmax(ctx, p, t));
    return values;
}

}  // namespace plab
