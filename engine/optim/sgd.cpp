// SGD with momentum, following torch/optim/sgd.py (_single_tensor_sgd, PyTorch 1.13):
//
//     first step:  buf = clone(grad)
//     later:       buf.mul_(momentum).add_(grad, alpha=1 - dampening)   # dampening 0
//     param.add_(buf, alpha=-lr)
//
// Each in-place op computes in fp32 and rounds once when it writes its tensor: a
// no-op for fp32 master weights and state, the fp16/bf16 rounding of model.half()
// when master weights are off (weights, gradient and buffer then live in that format).
// The element-wise arithmetic is numerics/update_math.cpp's sgdUpdate, run on the backend.
#include "optim/sgd.h"

#include "backend/backend.h"
#include "optim/state_tensor.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace plab {

SgdOptimizer::SgdOptimizer(double lr, double momentum) : momentum_(momentum)
{
    setLearningRate(lr);
    if (!std::isfinite(momentum) || momentum < 0.0)
        throw std::invalid_argument("SGD momentum must be a finite number >= 0, got " + std::to_string(momentum));
}

void SgdOptimizer::stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                                 ComputeBackend& backend) const
{
    Tensor& weights = p.stored();
    const UpdateFormats f = updateFormats(p, recipe, memory, backend);
    SgdScalars s;
    s.useMomentum = stateTensorCount() == 1;
    s.firstStep = prepareStates(p, f.state, memory, backend);
    // PyTorch turns Python scalars into the op's fp32 "opmath" type.
    s.momentum = static_cast<float>(momentum_);
    s.negLr = static_cast<float>(-learningRate());
    UpdateTensors t{updateOperand(weights), updateOperand(p.grad), {}, {}, {}};
    if (s.useMomentum) t.state1 = updateOperand(p.state1);
    if (f.write.rounding == UpdateRounding::kahan) t.compensation = updateOperand(p.compensation);
    if (anyPacked(t))
        backend.sgdUpdatePacked(s, f, t, weights.size(), &p.lastUpdate);
    else
        backend.sgdUpdate(s, f, t.weights.values, t.grad.values, t.state1.values, weights.size(), &p.lastUpdate);
}

}  // namespace plab
