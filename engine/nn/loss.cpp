// Softmax cross-entropy in fp32 (a max-shifted log-sum-exp) or emulated in the storage
// format with a rounding after every operation.
#include "nn/loss.h"

#include "nn/precision.h"

#include <cmath>
#include <stdexcept>

namespace plab {

StepOutput SoftmaxCrossEntropy::forward(const Tensor& logits, const std::vector<std::uint8_t>& labels,
                                        StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx);
    if (logits.rank() != 2) throw std::invalid_argument("The loss expects logits (N, classes), got " + shapeString(logits.shape()) + ".");
    const std::int64_t N = logits.dim(0), classes = logits.dim(1);
    if (static_cast<std::int64_t>(labels.size()) != N)
        throw std::invalid_argument("The batch has " + std::to_string(N) + " images but " +
                                    std::to_string(labels.size()) + " labels.");
    for (auto label : labels)
        if (label >= classes)
            throw std::invalid_argument("Label " + std::to_string(label) + " is outside 0.." +
                                        std::to_string(classes - 1) + ".");
    labels_ = labels;
    probabilities_.resize({N, classes});
    probabilities_.track(ctx.memory, MemoryCategory::workspace);

    StepOutput result;
    const float* x = logits.data();
    float* prob = probabilities_.data();
    for (std::int64_t n = 0; n < N; ++n) {
        const float* row = x + n * classes;
        std::int64_t best = 0;
        for (std::int64_t j = 1; j < classes; ++j)
            if (row[j] > row[best]) best = j;
        if (best == labels[static_cast<std::size_t>(n)]) ++result.correct;
    }

    if (p.fp32SensitiveOps || !p.roundsStorage()) {
        double total = 0.0;
        for (std::int64_t n = 0; n < N; ++n) {
            const float* row = x + n * classes;
            float m = row[0];
            for (std::int64_t j = 1; j < classes; ++j) m = std::fmax(m, row[j]);
            double sum = 0.0;   // terms in (0, 1], summed in double for a careful log-sum-exp
            for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j] - m));
            const float lse = m + static_cast<float>(std::log(sum));
            const int y = labels[static_cast<std::size_t>(n)];
            total += static_cast<double>(lse - row[y]);
            for (std::int64_t j = 0; j < classes; ++j) prob[n * classes + j] = std::exp(row[j] - lse);
        }
        result.loss = static_cast<float>(total / static_cast<double>(N));
        return result;
    }

    // Emulated in the storage format s: round after every operation.
    const Format s = p.storage;
    auto r = [s](float v) { return roundTo(s, v); };
    float total = 0.0f;
    std::vector<float> expValues(static_cast<std::size_t>(classes));
    for (std::int64_t n = 0; n < N; ++n) {
        const float* row = x + n * classes;
        float m = row[0];
        for (std::int64_t j = 1; j < classes; ++j) m = std::fmax(m, row[j]);
        float sum = 0.0f;
        for (std::int64_t j = 0; j < classes; ++j) {
            expValues[static_cast<std::size_t>(j)] = r(std::exp(r(row[j] - m)));
            sum = r(sum + expValues[static_cast<std::size_t>(j)]);
        }
        const float lse = r(std::log(sum));
        const int y = labels[static_cast<std::size_t>(n)];
        const float logProb = r(r(row[y] - m) - lse);
        total = r(total - logProb);
        for (std::int64_t j = 0; j < classes; ++j)
            prob[n * classes + j] = r(expValues[static_cast<std::size_t>(j)] / sum);
    }
    result.loss = r(total / static_cast<float>(N));
    return result;
}

Tensor& SoftmaxCrossEntropy::backward(float lossScale, StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx);
    const std::int64_t N = probabilities_.dim(0), classes = probabilities_.dim(1);
    gradLogits_.resize({N, classes});
    gradLogits_.setStorage(p.storage);
    gradLogits_.track(ctx.memory, MemoryCategory::workspace);
    const float batch = static_cast<float>(N);
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t j = 0; j < classes; ++j) {
            const float onehot = (j == labels_[static_cast<std::size_t>(n)]) ? 1.0f : 0.0f;
            gradLogits_[n * classes + j] = (probabilities_[n * classes + j] - onehot) / batch * lossScale;
        }
    if (p.roundsStorage())
        roundTapped(ctx, p.storage, gradLogits_.data(), gradLogits_.data(), gradLogits_.size(), kTapName,
                    TensorKind::activationGrad);
    return gradLogits_;
}

}  // namespace plab
