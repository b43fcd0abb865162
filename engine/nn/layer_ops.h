// What the layers share: the precision rules of one step (read from the recipe), a tensor
// sized and placed for the step on the backend's memory, the bias addition, and the
// rounding sites (round a buffer to a format on the backend, its statistics tapped into
// telemetry).
#pragma once

#include "amp/recipe.h"
#include "backend/backend.h"
#include "nn/model.h"
#include "telemetry/telemetry.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <string_view>

namespace plab {

struct StepPrecision {
    Format compute = Format::fp32;   // operands of matmul/conv
    Format storage = Format::fp32;   // activations and their gradients
    bool fp32Accumulate = true;
    Format grad = Format::fp32;      // weight and bias gradients: recipe.gradientFormat()
    bool fp32SensitiveOps = true;

    static StepPrecision of(const PrecisionRecipe& recipe);
    static StepPrecision of(const StepContext& ctx);   // throws without recipe / backend
    GemmPrecision gemm() const { return {compute, fp32Accumulate}; }
    bool roundsOperands() const { return compute != Format::fp32; }
    bool roundsStorage() const { return storage != Format::fp32; }
    Format gradFormat() const { return grad; }
};

// Where a rounding site adds its counts; both null without telemetry.
TelemetryCollector::Sink tapSink(const StepContext& ctx, std::string_view layer, TensorKind kind);

// dst = round_f(src) over n elements in parallel, counts added to the tap (layer, kind).
void roundTapped(StepContext& ctx, Format f, const float* src, float* dst, std::int64_t n,
                 std::string_view layer, TensorKind kind);

// Sizes `t` for this step where the backend keeps its tensors: shape, modelled storage
// format, memory accounting under `category`.
void prepareTensor(Tensor& t, const Shape& shape, Format storage, StepContext& ctx, MemoryCategory category);

// x[i] += bias[(i / repeat) % period] in fp32, then, when f is not fp32, x rounded to f
// with the counts added to the tap (layer, kind). See ComputeBackend::addBiasRound.
void addBiasAndRound(StepContext& ctx, Format f, Tensor& x, const Tensor& bias, std::int64_t period,
                     std::int64_t repeat, std::string_view layer, TensorKind kind);

// The operand a matmul/conv reads for `t`: t itself when it already holds values of the
// compute format, else t rounded into `workspace` (tapped as (layer, kind) when tap).
const Tensor& operandIn(StepContext& ctx, const StepPrecision& p, const Tensor& t,
                        Tensor& workspace, std::string_view layer, TensorKind kind, bool tap);

}  // namespace plab
