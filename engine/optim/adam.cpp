// Adam, following torch/optim/adam.py (_single_tensor_adam, PyTorch 1.13 defaults:
// not fused, not foreach, not amsgrad, weight decay 0), op for op:
//
//     step += 1
//     exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
//     exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
//     bias_correction1 = 1 - beta1 ** step              # Python floats (double)
//     bias_correction2 = 1 - beta2 ** step
//     step_size = lr / bias_correction1
//     bias_correction2_sqrt = sqrt(bias_correction2)
//     denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
//     param.addcdiv_(exp_avg, denom, value=-step_size)
//
// Every tensor op computes in fp32 and rounds once when it writes a tensor of the
// recipe's optimizer-state format; the element-wise arithmetic (and why fp16 Adam loses
// eps) is numerics/update_math.cpp's adamUpdate, run on the backend.
#include "optim/adam.h"

#include "backend/backend.h"
#include "optim/state_tensor.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace plab {

AdamOptimizer::AdamOptimizer(double lr, double beta1, double beta2, double eps)
    : beta1_(beta1), beta2_(beta2), eps_(eps)
{
    setLearningRate(lr);
    // The checks torch.optim.Adam makes, with its messages' meaning.
    if (!(beta1 >= 0.0 && beta1 < 1.0))
        throw std::invalid_argument("Adam beta1 must lie in [0, 1), got " + std::to_string(beta1));
    if (!(beta2 >= 0.0 && beta2 < 1.0))
        throw std::invalid_argument("Adam beta2 must lie in [0, 1), got " + std::to_string(beta2));
    if (!std::isfinite(eps) || eps < 0.0)
        throw std::invalid_argument("Adam eps must be a finite number >= 0, got " + std::to_string(eps));
}

void AdamOptimizer::stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                                  ComputeBackend& backend) const
{
    Tensor& weights = p.stored();
    const UpdateFormats f = updateFormats(p, recipe, memory, backend);
    prepareStates(p, f.state, memory, backend);   // exp_avg and exp_avg_sq, zeros at first

    p.optimizerSteps += 1;
    const auto t = static_cast<double>(p.optimizerSteps);
    const double biasCorrection1 = 1.0 - std::pow(beta1_, t);
    const double biasCorrection2 = 1.0 - std::pow(beta2_, t);
    const double stepSize = learningRate() / biasCorrection1;
    const double biasCorrection2Sqrt = std::sqrt(biasCorrection2);

    const AdamScalars scalars{static_cast<float>(beta1_),
                              static_cast<float>(1.0 - beta1_),
                              static_cast<float>(beta2_),
                              static_cast<float>(1.0 - beta2_),
                              1.0f / static_cast<float>(biasCorrection2Sqrt),
                              static_cast<float>(eps_),
                              static_cast<float>(-stepSize)};
    const UpdateTensors ops{updateOperand(weights), updateOperand(p.grad), updateOperand(p.state1),
                            updateOperand(p.state2),
                            f.write.rounding == UpdateRounding::kahan ? updateOperand(p.compensation) : UpdateOperand{}};
    if (anyPacked(ops))
        backend.adamUpdatePacked(scalars, f, ops, weights.size(), &p.lastUpdate);
    else
        backend.adamUpdate(scalars, f, ops.weights.values, ops.grad.values, ops.state1.values, ops.state2.values,
                           weights.size(), &p.lastUpdate);
}

}  // namespace plab
