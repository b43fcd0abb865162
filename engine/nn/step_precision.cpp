// One step's precision rules for a layer (see step_precision.h).
#include "nn/step_precision.h"

#include "nn/model.h"

#include <stdexcept>
#include <string>
#include <string_view>

namespace plab {

StepPrecision StepPrecision::of(const PrecisionRecipe& recipe)
{
    StepPrecision p;
    p.compute = recipe.compute;
    p.storage = recipe.storage();
    p.fp32Accumulate = recipe.fp32Accumulate;
    p.grad = recipe.gradientFormat();
    p.fp32SensitiveOps = recipe.fp32SensitiveOps;
    p.quant = recipe.quantization;
    p.fp32AttentionScores = recipe.fp32AttentionScores;
    return p;
}

StepPrecision StepPrecision::of(const StepContext& ctx, std::string_view layer)
{
    if (!ctx.recipe || !ctx.backend)
        throw std::invalid_argument("A model step needs a precision recipe and a compute backend in its context.");
    return ctx.recipe->layers.empty() ? of(*ctx.recipe) : of(ctx.recipe->forLayer(layer));
}

TensorKind quantizedKind(OperandRole role)
{
    switch (role) {
    case OperandRole::input: return TensorKind::quantizedActivation;
    case OperandRole::weight: return TensorKind::quantizedWeight;
    case OperandRole::gradOutput: return TensorKind::quantizedActivationGrad;
    }
    return TensorKind::quantizedActivation;
}

MiniFormat quantizedFormat(const Quantization& q, OperandRole role)
{
    return role == OperandRole::gradOutput ? q.gradientFormat() : q.forwardFormat();
}

}  // namespace plab
