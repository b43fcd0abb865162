// Softmax cross-entropy in fp32 (a max-shifted log-sum-exp) or emulated in the storage
// format with a rounding after every operation: checks here, arithmetic on the backend.
#include "nn/loss.h"

#include "nn/layer_ops.h"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace plab {

StepOutput SoftmaxCrossEntropy::forward(const Tensor& logits, const std::vector<std::uint8_t>& labels,
                                        StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx, kTapName);
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
    // The logits' format: the recipe's storage format, or the last layer's own (per-layer
    // precision: a last layer in fp32 gives fp32 logits and an fp32 gradient, as in PyTorch).
    storage_ = logits.storage();
    prepareTensor(probabilities_, {N, classes}, Format::fp32, ctx, MemoryCategory::workspace);
    // Autocast keeps the loss in fp32; without it (and with a reduced storage format)
    // every intermediate is rounded to the storage format.
    const Format emulate = (p.fp32SensitiveOps || storage_ == Format::fp32) ? Format::fp32 : storage_;
    const LossResult r = ctx.backend->softmaxCrossEntropy(logits.data(), labels.data(), N, classes, emulate,
                                                          probabilities_.data());
    smoothing_ = ctx.training ? ctx.labelSmoothing : 0.0f;
    if (smoothing_ == 0.0f || N == 0) return {r.loss, r.correct};
    if (emulate != Format::fp32)
        throw std::invalid_argument("Label smoothing needs the loss in fp32 (fp32 softmax / loss on, or fp32 logits).");
    if (!ctx.backend->supports(BackendOp::transformer))   // its gradient term is added with addPeriodic
        throw std::invalid_argument("Label smoothing needs a backend with the element-wise ops of the transformer.");
    // CE + e mean_n(x_label - mean_j x_j), in double from the logits (N x classes, small).
    const std::vector<float> x = logits.toHost();
    double shift = 0.0;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* row = x.data() + n * classes;
        double sum = 0.0;
        for (std::int64_t j = 0; j < classes; ++j) sum += row[j];
        shift += double(row[labels[static_cast<std::size_t>(n)]]) - sum / double(classes);
    }
    return {static_cast<float>(double(r.loss) + double(smoothing_) * shift / double(N)), r.correct};
}

Tensor& SoftmaxCrossEntropy::backward(float lossScale, StepContext& ctx)
{
    const std::int64_t N = probabilities_.dim(0), classes = probabilities_.dim(1);
    prepareTensor(gradLogits_, {N, classes}, storage_, ctx, MemoryCategory::workspace);
    ctx.backend->softmaxCrossEntropyBackward(probabilities_.data(), labels_.data(), N, classes, lossScale,
                                             gradLogits_.data());
    if (smoothing_ != 0.0f && N > 0) {
        // + e (onehot - 1 / classes) / N * lossScale, element-wise on the backend.
        const double unit = double(smoothing_) * double(lossScale) / double(N);
        std::vector<float> term(static_cast<std::size_t>(N * classes), static_cast<float>(-unit / double(classes)));
        for (std::int64_t n = 0; n < N; ++n)
            term[static_cast<std::size_t>(n * classes + labels_[static_cast<std::size_t>(n)])] =
                static_cast<float>(unit - unit / double(classes));
        prepareTensor(smoothingTerm_, {N, classes}, Format::fp32, ctx, MemoryCategory::workspace, false,
                      NewElements::undefined);
        smoothingTerm_.assignFromHost(term.data(), N * classes);
        ctx.backend->addPeriodic(gradLogits_.data(), N * classes, smoothingTerm_.data(), N * classes);
    }
    if (storage_ != Format::fp32)
        roundTapped(ctx, storage_, gradLogits_.data(), gradLogits_.data(), gradLogits_.size(), kTapName,
                    TensorKind::activationGrad);
    return gradLogits_;
}

StepOutput MeanSquaredError::forward(const Tensor& outputs, const float* targets, StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx, kTapName);
    if (outputs.rank() != 2)
        throw std::invalid_argument("The reconstruction loss expects outputs (N, pixels), got " + shapeString(outputs.shape()) + ".");
    shape_ = outputs.shape();
    storage_ = outputs.storage();
    const std::vector<float> y = outputs.toHost();
    const bool emulate = !p.fp32SensitiveOps && storage_ != Format::fp32;
    std::vector<float> differences(y.size());
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        const float d = y[i] - targets[i];
        differences[i] = d;
        if (emulate) {
            const float dr = roundTo(storage_, d);
            sum += static_cast<double>(roundTo(storage_, dr * dr));
        } else {
            sum += static_cast<double>(d) * static_cast<double>(d);
        }
    }
    prepareTensor(differences_, shape_, Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    differences_.assignFromHost(differences.data(), static_cast<std::int64_t>(differences.size()));
    const double count = static_cast<double>(y.size());
    float loss = y.empty() ? 0.0f : static_cast<float>(sum / count);
    if (emulate) loss = roundTo(storage_, loss);
    return {loss, 0};
}

Tensor& MeanSquaredError::backward(float lossScale, StepContext& ctx)
{
    prepareTensor(gradOutputs_, shape_, storage_, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    // 2 (y - x) / (N * pixels) * S in fp32 (the factor in double, then once to fp32).
    const auto unit = static_cast<float>(2.0 * static_cast<double>(lossScale) / static_cast<double>(differences_.size()));
    std::vector<float> g = differences_.toHost();
    for (float& v : g) v *= unit;
    gradOutputs_.assignFromHost(g.data(), static_cast<std::int64_t>(g.size()));
    if (storage_ != Format::fp32)
        roundTapped(ctx, storage_, gradOutputs_.data(), gradOutputs_.data(), gradOutputs_.size(), kTapName,
                    TensorKind::activationGrad);
    return gradOutputs_;
}

}  // namespace plab
