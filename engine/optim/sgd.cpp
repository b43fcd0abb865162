// SGD with momentum, following torch/optim/sgd.py (_single_tensor_sgd, PyTorch 1.13):
//
//     first step:  buf = clone(grad)
//     later:       buf.mul_(momentum).add_(grad, alpha=1 - dampening)   # dampening 0
//     param.add_(buf, alpha=-lr)
//
// Each in-place op computes in fp32 and rounds once when it writes its tensor: a
// no-op for fp32 master weights and state, the fp16/bf16 rounding of model.half()
// when master weights are off (weights, gradient and buffer then live in that format).
#include "optim/sgd.h"

#include "nn/parameter_copies.h"
#include "optim/update_rules.h"

#include <algorithm>
#include <array>
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

void SgdOptimizer::stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory) const
{
    Tensor& weights = p.stored();
    // Weights, gradient and buffer share one format: fp32 beside masters, else storage.
    const Format f = recipe.optimizerStateFormat();
    const bool useMomentum = momentum_ != 0.0;   // PyTorch keeps no buffer without momentum
    const bool firstStep = useMomentum && prepareStateTensor(p.state1, weights.shape(), f, memory);

    // PyTorch turns Python scalars into the op's fp32 "opmath" type.
    const float momentum = static_cast<float>(momentum_);
    const float negLr = static_cast<float>(-learningRate());

    constexpr std::size_t kChunk = 1024;
    std::array<float, kChunk> grad{};
    UpdateCounts counts;
    const auto n = static_cast<std::size_t>(weights.size());
    for (std::size_t start = 0; start < n; start += kChunk) {
        const std::size_t len = std::min(kChunk, n - start);
        // (len) the gradient as a tensor of format f holds it
        std::copy_n(p.grad.data() + start, len, grad.data());
        roundWritten(f, grad.data(), len);

        const float* direction = grad.data();
        if (useMomentum) {
            float* buf = p.state1.data() + start;   // (len)
            if (firstStep) {
                std::copy_n(grad.data(), len, buf);   // buf = clone(grad)
            } else {
                for (std::size_t i = 0; i < len; ++i) buf[i] *= momentum;   // buf.mul_(momentum)
                roundWritten(f, buf, len);
                for (std::size_t i = 0; i < len; ++i) buf[i] += grad[i];    // .add_(grad, alpha=1)
                roundWritten(f, buf, len);
            }
            direction = buf;
        }
        applyUpdate(f, weights.data() + start, direction, negLr, len, counts);   // param.add_(buf, alpha=-lr)
    }
    p.lastUpdate = counts;
}

}  // namespace plab
