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
// Every tensor op computes in fp32 (PyTorch's "opmath" for fp16/bf16 too) and rounds
// once when it writes its result; with master weights off the weights, moments and
// gradient are fp16/bf16 tensors, so each of the seven writes above rounds to that
// format. That is why real fp16 Adam loses eps: (sqrt(v) / c2).add_(1e-8) stores 0
// where v is 0, and an element whose gradient has been zero gets 0/0 = NaN.
// Within an op we follow the CUDA kernels, which these recipes model: a division by a
// Python scalar multiplies by its fp32 reciprocal, addcmul_ is self + (value*t1)*t2 and
// addcdiv_ is self + value*(t1/t2), each sum a fused multiply-add (nvcc contracts
// them). PyTorch's CPU kernels differ from this by at most an fp32 rounding per op.
#include "optim/adam.h"

#include "nn/parameter_copies.h"
#include "optim/update_rules.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace plab {

namespace {

constexpr std::size_t kChunk = 1024;   // elements per pass; the temporaries stay in L1

// The Python scalars of one step, as the fp32 opmath values each kernel receives.
struct AdamStepScalars {
    float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
    float invBiasCorrection2Sqrt;   // a CUDA division by a Python scalar multiplies by this
    float eps;
    float negStepSize;
};

// One chunk of elements through the whole op sequence; f is the format of every tensor
// (fp32 beside masters, else fp16/bf16).
PLAB_FMA_CLONES void adamChunk(const AdamStepScalars& s, Format f, const float* gradIn, float* m, float* v,
                               float* weights, std::size_t len, UpdateCounts& counts)
{
    std::array<float, kChunk> grad{};    // (len) the gradient as format f holds it
    std::array<float, kChunk> denom{};   // (len) the temporary tensor `denom`, format f
    std::array<float, kChunk> ratio{};   // (len) exp_avg / denom inside addcdiv_, fp32 opmath
    std::copy_n(gradIn, len, grad.data());
    roundWritten(f, grad.data(), len);

    for (std::size_t i = 0; i < len; ++i) m[i] *= s.beta1;                                       // exp_avg.mul_
    roundWritten(f, m, len);
    for (std::size_t i = 0; i < len; ++i) m[i] = std::fma(s.oneMinusBeta1, grad[i], m[i]);      // .add_
    roundWritten(f, m, len);
    for (std::size_t i = 0; i < len; ++i) v[i] *= s.beta2;                                       // exp_avg_sq.mul_
    roundWritten(f, v, len);
    for (std::size_t i = 0; i < len; ++i) v[i] = std::fma(s.oneMinusBeta2 * grad[i], grad[i], v[i]);   // .addcmul_
    roundWritten(f, v, len);

    for (std::size_t i = 0; i < len; ++i) denom[i] = std::sqrt(v[i]);                            // exp_avg_sq.sqrt()
    roundWritten(f, denom.data(), len);
    for (std::size_t i = 0; i < len; ++i) denom[i] *= s.invBiasCorrection2Sqrt;                  // / bias_correction2_sqrt
    roundWritten(f, denom.data(), len);
    for (std::size_t i = 0; i < len; ++i) denom[i] += s.eps;                                     // .add_(eps)
    roundWritten(f, denom.data(), len);

    for (std::size_t i = 0; i < len; ++i) ratio[i] = m[i] / denom[i];
    applyUpdate(f, weights, ratio.data(), s.negStepSize, len, counts);                          // param.addcdiv_
}

}  // namespace


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

void AdamOptimizer::stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory) const
{
    Tensor& weights = p.stored();
    // Weights, gradient and moments share one format: fp32 beside masters, else storage.
    const Format f = recipe.optimizerStateFormat();
    prepareStateTensor(p.state1, weights.shape(), f, memory);   // exp_avg, zeros at first
    prepareStateTensor(p.state2, weights.shape(), f, memory);   // exp_avg_sq

    p.optimizerSteps += 1;
    const auto t = static_cast<double>(p.optimizerSteps);
    const double biasCorrection1 = 1.0 - std::pow(beta1_, t);
    const double biasCorrection2 = 1.0 - std::pow(beta2_, t);
    const double stepSize = learningRate() / biasCorrection1;
    const double biasCorrection2Sqrt = std::sqrt(biasCorrection2);

    const AdamStepScalars scalars{static_cast<float>(beta1_),
                                  static_cast<float>(1.0 - beta1_),
                                  static_cast<float>(beta2_),
                                  static_cast<float>(1.0 - beta2_),
                                  1.0f / static_cast<float>(biasCorrection2Sqrt),
                                  static_cast<float>(eps_),
                                  static_cast<float>(-stepSize)};
    UpdateCounts counts;
    const auto n = static_cast<std::size_t>(weights.size());
    for (std::size_t start = 0; start < n; start += kChunk) {
        const std::size_t len = std::min(kChunk, n - start);
        adamChunk(scalars, f, p.grad.data() + start, p.state1.data() + start, p.state2.data() + start,
                  weights.data() + start, len, counts);
    }
    p.lastUpdate = counts;
}

}  // namespace plab
