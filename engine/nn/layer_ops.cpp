// Shared rounding sites of the layers: parallel bulk rounding with telemetry taps.
#include "nn/layer_ops.h"

#include <stdexcept>

namespace plab {

StepPrecision StepPrecision::of(const PrecisionRecipe& recipe)
{
    StepPrecision p;
    p.compute = recipe.compute;
    p.storage = recipe.storage();
    p.fp32Accumulate = recipe.fp32Accumulate;
    p.grad = recipe.gradientFormat();
    p.fp32SensitiveOps = recipe.fp32SensitiveOps;
    return p;
}

StepPrecision StepPrecision::of(const StepContext& ctx)
{
    if (!ctx.recipe || !ctx.backend)
        throw std::invalid_argument("A model step needs a precision recipe and a compute backend in its context.");
    return of(*ctx.recipe);
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

void prepareTensor(Tensor& t, const Shape& shape, Format storage, StepContext& ctx, MemoryCategory category)
{
    t.place(ctx.backend->allocator());
    t.resize(shape);
    t.setStorage(storage);
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

}  // namespace plab
