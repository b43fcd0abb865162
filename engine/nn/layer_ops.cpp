// The layers' shared rounding sites, tensors and operands (see layer_ops.h).
#include "nn/layer_ops.h"

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

void requireGradientShape(std::string_view layer, const Tensor& gradOutput, const Tensor& output)
{
    if (gradOutput.shape() != output.shape())
        throw std::invalid_argument("Layer " + std::string(layer) + " got a gradient of shape " +
                                    shapeString(gradOutput.shape()) + " for an output of shape " +
                                    shapeString(output.shape()) + ".");
}

TelemetryCollector::Sink tapSink(const StepContext& ctx, std::string_view layer, TensorKind kind)
{
    if (!ctx.telemetry) return {nullptr, nullptr};
    return ctx.telemetry->sink(layer, kind);
}

void roundTapped(StepContext& ctx, Format f, const float* src, float* dst, std::int64_t n,
                 std::string_view layer, TensorKind kind)
{
    const auto sink = tapSink(ctx, layer, kind);
    ctx.backend->roundArray(f, src, dst, static_cast<std::size_t>(n), sink.stats, sink.hist);
}

void prepareTensor(Tensor& t, const Shape& shape, Format storage, StepContext& ctx, MemoryCategory category,
                   bool packed, NewElements added)
{
    t.place(ctx.backend->allocator());
    if (t.packed() != packed || (packed && t.storage() != storage)) t.discard();
    if (packed) {
        t.setStorage(storage);
        t.pack();   // empty: nothing converted
        t.resize(shape, added);
    } else {
        t.resize(shape, added);
        t.setStorage(storage);
    }
    t.track(ctx.memory, category);
}

void roundTappedTo16(StepContext& ctx, Format f, const float* src, Tensor& out, std::string_view layer,
                     TensorKind kind)
{
    const auto sink = tapSink(ctx, layer, kind);
    ctx.backend->roundTo16(f, src, out.size(), out.bits16(), out.size(), 1, out.size(), sink.stats, sink.hist);
}

QuantizedStorage quantizedStorageOf(const StepPrecision& p, OperandRole role)
{
    QuantizedStorage q;
    q.elementBits = miniFormatInfo(quantizedFormat(p.quant, role)).bits();
    if (p.quant.blockScaled()) {
        q.blockSize = p.quant.info().blockSize;
        if (p.quant.info().scale == QuantScale::blockE8M0) q.tensorBytes = 0;   // MX: block scales only
    }
    return q;
}

void prepareQuantized(Tensor& t, const Shape& shape, const QuantizedStorage& q, StepContext& ctx,
                      MemoryCategory category)
{
    // The model first, then the size: the accountant never sees the fp32 size in between.
    t.place(ctx.backend->allocator());
    t.setQuantizedStorage(q);
    t.resize(shape);
    t.track(ctx.memory, category);
}

void addBiasAndRound(StepContext& ctx, Format f, Tensor& x, const Tensor& bias, std::int64_t period,
                     std::int64_t repeat, std::string_view layer, TensorKind kind)
{
    // fp32 has no rounding site, so no tap either.
    const auto sink = f == Format::fp32 ? TelemetryCollector::Sink{nullptr, nullptr} : tapSink(ctx, layer, kind);
    ctx.backend->addBiasRound(f, x.data(), x.size(), bias.data(), period, repeat, sink.stats, sink.hist);
}

const Tensor& operandIn(StepContext& ctx, const StepPrecision& p, const Tensor& t,
                        Tensor& workspace, std::string_view layer, TensorKind kind, bool tap)
{
    if (!p.roundsOperands() || t.storage() == p.compute) return t;
    prepareTensor(workspace, t.shape(), p.compute, ctx, MemoryCategory::workspace);
    if (tap) {
        roundTapped(ctx, p.compute, t.data(), workspace.data(), t.size(), layer, kind);
    } else {
        ctx.backend->roundArray(p.compute, t.data(), workspace.data(), static_cast<std::size_t>(t.size()),
                                nullptr, nullptr);
    }
    return workspace;
}

const Tensor& layerOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                           std::string_view layer, OperandRole role, OperandScalers& scalers)
{
    if (p.quant.blockScaled())
        throw std::logic_error("Layer " + std::string(layer) + ": MX operands are quantised by blockOperand.");
    if (p.quantizes()) return quantizedOperand(ctx, p, t, workspace, layer, role, scalers.of(role));
    const bool tap = role != OperandRole::weight && p.compute == Format::tf32;
    const TensorKind kind = role == OperandRole::gradOutput ? TensorKind::activationGrad : TensorKind::activation;
    return operandIn(ctx, p, t, workspace, layer, kind, tap);
}

}  // namespace plab
