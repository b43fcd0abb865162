// Per-tensor FP8 operands (see fp8_operands.h).
#include "nn/fp8_operands.h"

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

void OperandScaler::adopt(const Quantization& q)
{
    if (q == settings_ && history_.size() == static_cast<std::size_t>(q.amaxHistory)) return;
    settings_ = q;
    history_.assign(static_cast<std::size_t>(q.amaxHistory), 0.0f);
    next_ = filled_ = 0;
    scale_ = 1.0f;
}

float OperandScaler::scale(const Quantization& q, MiniFormat f, float currentAmax)
{
    adopt(q);
    switch (q.info().scale) {
    case QuantScale::tensorDelayed: return scale_;
    // Transformer Engine's current scaling: a tensor of zeros keeps scale 1.
    case QuantScale::tensorCurrent: return fp8ScaleFor(f, currentAmax, 1.0f, q.margin);
    default: return 1.0f;
    }
}

void OperandScaler::record(const Quantization& q, MiniFormat f, float amax)
{
    adopt(q);
    if (q.info().scale != QuantScale::tensorDelayed) return;
    history_[next_] = amax;
    next_ = (next_ + 1) % history_.size();
    filled_ = std::min(filled_ + 1, history_.size());
    float reduced = amax;   // most_recent
    if (q.algorithm == AmaxAlgorithm::max) {
        // NaN wins, as torch.max over the history does; fp8ScaleFor then keeps the scale.
        for (std::size_t i = 0; i < filled_; ++i)
            if (std::isnan(history_[i]) || history_[i] > reduced) reduced = history_[i];
    }
    scale_ = fp8ScaleFor(f, reduced, scale_, q.margin);
}

namespace {

// The scale for this quantisation of t, and the quantiser's op; current scaling takes t's
// amax from `amax` (called only then).
template <class Amax>
QuantizeOp scaledOp(const StepPrecision& p, OperandRole role, OperandScaler& scaler, const Amax& amax)
{
    const MiniFormat f = quantizedFormat(p.quant, role);
    const float currentAmax = p.quant.info().scale == QuantScale::tensorCurrent ? amax() : 0.0f;
    QuantizeOp op;
    op.element = f;
    op.scale = scaler.scale(p.quant, f, currentAmax);
    op.scaleInv = 1.0f / op.scale;
    return op;
}

// After quantising with op: the operand the GEMMs read, the amax history, the tap's scale.
Fp8Operand recordQuantized(StepContext& ctx, const StepPrecision& p, const QuantizeOp& op, float amax,
                           const TelemetryCollector::Sink& sink, OperandScaler& scaler)
{
    const Fp8Operand operand{true, op.element, op.scale, op.scaleInv};
    scaler.setOperand(operand);
    if (ctx.training) scaler.record(p.quant, op.element, amax);
    if (sink.scaling) {
        sink.scaling->present = sink.scaling->tensorScale = true;
        sink.scaling->scale = op.scale;
        sink.scaling->amax = amax;
    }
    return operand;
}

}  // namespace

const Tensor& quantizedOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                               std::string_view layer, OperandRole role, OperandScaler& scaler)
{
    // The values dequantised, in fp32; the accountant counts the FP8 copy a GPU would hold
    // (quantizedStorageOf).
    prepareQuantized(workspace, t.shape(), quantizedStorageOf(p, role), ctx, MemoryCategory::workspace);
    quantizedValuesInto(ctx, p, t, workspace, layer, role, scaler);
    return workspace;
}

bool holdsCodes(const StepContext& ctx, const StepPrecision& p)
{
    return p.quantizes() && !p.quant.blockScaled() && ctx.backend->supports(BackendOp::fp8Codes) && packsStorageOn(*ctx.backend);
}

namespace {
// The per-tensor op for t (held packed or not) under its scaler.
QuantizeOp scaledOpOf(StepContext& ctx, const StepPrecision& p, const Tensor& t, OperandRole role,
                      OperandScaler& scaler)
{
    return scaledOp(p, role, scaler, [&] {
        return t.packed() ? ctx.backend->amax16(t.storage(), t.bits16(), t.size()) : ctx.backend->amax(t.data(), t.size());
    });
}
}  // namespace

const Fp8Codes& quantizedCodes(StepContext& ctx, const StepPrecision& p, const Tensor& t, Fp8Codes& out,
                               std::string_view layer, OperandRole role, OperandScaler& scaler)
{
    const QuantizeOp op = scaledOpOf(ctx, p, t, role, scaler);
    out.shape = t.shape();
    out.codes.track(ctx.memory, MemoryCategory::workspace);
    out.codes.resize(static_cast<std::size_t>(t.size()), ctx.backend->allocator());
    const auto sink = tapSink(ctx, layer, quantizedKind(role));
    const float amax =
        t.packed()
            ? ctx.backend->quantize16ToCodes(op, t.storage(), t.bits16(), out.codes.data(), t.size(), sink.stats,
                                             sink.hist)
            : ctx.backend->quantizeToCodes(op, t.data(), out.codes.data(), t.size(), sink.stats, sink.hist);
    out.operand = recordQuantized(ctx, p, op, amax, sink, scaler);
    return out;
}

void quantizedValuesInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& values,
                         std::string_view layer, OperandRole role, OperandScaler& scaler)
{
    if (values.shape() != t.shape() || values.packed())
        throw std::logic_error("quantizedValuesInto needs an fp32 buffer shaped as the operand.");
    const QuantizeOp op = scaledOpOf(ctx, p, t, role, scaler);
    const auto sink = tapSink(ctx, layer, quantizedKind(role));
    const float amax = t.packed() ? ctx.backend->quantize16(op, t.storage(), t.bits16(), values.data(), t.size(),
                                                            sink.stats, sink.hist)
                                  : ctx.backend->quantize(op, t.data(), values.data(), t.size(), sink.stats, sink.hist,
                                                          nullptr);
    recordQuantized(ctx, p, op, amax, sink, scaler);
}

void decodeRows(StepContext& ctx, const Fp8Codes& codes, std::int64_t at, std::int64_t ld, float* dst,
                std::int64_t dstLd, std::int64_t rows, std::int64_t cols)
{
    ctx.backend->decodeFp8(codes.operand.element, codes.operand.scaleInv, codes.data() + at, ld, dst, dstLd, rows,
                           cols);
}

const Tensor& decodedInto(StepContext& ctx, int slot, const Fp8Codes& codes, Tensor& own)
{
    Tensor& values = workBuffer(ctx, slot, codes.shape, own);
    decodeRows(ctx, codes, 0, codes.size(), values.data(), codes.size(), 1, codes.size());
    return values;
}

GemmPrecision layerGemm(const StepPrecision& p, const OperandScalers& scalers, OperandRole a, OperandRole b)
{
    GemmPrecision g = p.gemm();
    if (p.quantizes() && !p.quant.blockScaled() && g.fp32Accumulate) {
        g.a = scalers.of(a).operand();
        g.b = scalers.of(b).operand();
    }
    return g;
}

}  // namespace plab
