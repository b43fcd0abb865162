// Shared rounding sites of the layers: parallel bulk rounding with telemetry taps.
#include "nn/precision.h"

#include "numerics/bulk_round.h"

#include <mutex>
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

void prepareAndRound(StepContext& ctx, Format f, float* data, std::int64_t n,
                     std::string_view layer, TensorKind kind,
                     const std::function<void(std::int64_t, std::int64_t)>& prepare)
{
    if (f == Format::fp32) {
        ctx.backend->parallelFor(n, 1 << 14, prepare);
        return;
    }
    const auto sink = tapSink(ctx, layer, kind);
    std::mutex merge;
    // Counts are sums: merging chunk-local counts gives exactly what one serial pass gives.
    ctx.backend->parallelFor(n, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
        prepare(begin, end);
        RoundingStats stats;
        GradientHistogram hist;
        plab::roundArray(f, data + begin, static_cast<std::size_t>(end - begin),
                         sink.stats ? &stats : nullptr, sink.hist ? &hist : nullptr);
        if (!sink.stats && !sink.hist) return;
        std::lock_guard lock(merge);
        if (sink.stats) *sink.stats += stats;
        if (sink.hist) *sink.hist += hist;
    });
}

const Tensor& operandIn(StepContext& ctx, const StepPrecision& p, const Tensor& t,
                        Tensor& workspace, std::string_view layer, TensorKind kind, bool tap)
{
    if (!p.roundsOperands() || t.storage() == p.compute) return t;
    workspace.resize(t.shape());
    workspace.setStorage(p.compute);
    workspace.track(ctx.memory, MemoryCategory::workspace);
    if (tap) {
        roundTapped(ctx, p.compute, t.data(), workspace.data(), t.size(), layer, kind);
    } else {
        ctx.backend->roundArray(p.compute, t.data(), workspace.data(), static_cast<std::size_t>(t.size()),
                                nullptr, nullptr);
    }
    return workspace;
}

}  // namespace plab
