// CudaBackend's layer ops on device tensors: bias + rounding, ReLU, 2x2 max pooling, the
// block transpose, bias-gradient sums, softmax cross-entropy. Each enqueues its kernels and
// returns; only the loss forward waits, for the value it returns.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace plab::cuda {

namespace ck = cudakernels;

namespace {

void checkCount(std::int64_t n, const char* op)
{
    if (n < 0) throw std::invalid_argument(std::string(op) + " got a negative size.");
}

}  // namespace

void CudaBackend::addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                               std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist)
{
    checkCount(n, "addBiasRound");
    if (period <= 0 || repeat <= 0) throw std::invalid_argument("addBiasRound needs a positive period and repeat.");
    if (n == 0) return;
    activate();
    // fp32 is not a rounding site (as on the CPU): the bias only, nothing counted.
    const bool counted = f != Format::fp32 && (stats || hist);
    unsigned long long* slots = counted ? counters_.roundingSlots(stats, hist) : nullptr;
    PLAB_CUDA_CHECK(ck::launchRound(static_cast<int>(f), x, x, static_cast<std::size_t>(n), {bias, period, repeat},
                                    slots, counted && stats, counted && hist, stream()));
    if (counted) counters_.addElements(stats, hist, static_cast<std::size_t>(n));   // only after a launch
}

void CudaBackend::relu(float* x, std::int64_t n)
{
    checkCount(n, "relu");
    activate();
    PLAB_CUDA_CHECK(ck::launchRelu(x, n, stream()));
}

void CudaBackend::reluBackward(const float* y, float* g, std::int64_t n)
{
    checkCount(n, "reluBackward");
    activate();
    PLAB_CUDA_CHECK(ck::launchReluBackward(y, g, n, stream()));
}

void CudaBackend::maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                             std::uint8_t* argmax)
{
    if (planes < 0 || H < 0 || W < 0) throw std::invalid_argument("maxPool2x2 got a negative size.");
    activate();
    PLAB_CUDA_CHECK(ck::launchMaxPool({planes, H, W}, in, out, argmax, stream()));
}

void CudaBackend::maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes,
                                     std::int64_t H, std::int64_t W, float* dx)
{
    if (planes < 0 || H < 0 || W < 0) throw std::invalid_argument("maxPool2x2Backward got a negative size.");
    activate();
    PLAB_CUDA_CHECK(ck::launchMaxPoolBackward({planes, H, W}, g, argmax, dx, stream()));
}

void CudaBackend::transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner, float* out)
{
    if (A < 0 || B < 0 || inner < 0) throw std::invalid_argument("transposeBlocks got a negative size.");
    activate();
    PLAB_CUDA_CHECK(ck::launchTransposeBlocks(in, A, B, inner, out, stream()));
}

void CudaBackend::sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out)
{
    if (rows < 0 || cols < 0) throw std::invalid_argument("sumRows got a negative size.");
    if (rows == 0) return;
    activate();
    // (rows, parts) partial sums of the first pass
    auto* partials = rowScratch_.reserveFor<double>(static_cast<std::size_t>(rows * ck::sumRowsParts(rows, cols)));
    PLAB_CUDA_CHECK(ck::launchSumRows(x, rows, cols, partials, out, stream()));
}

void CudaBackend::sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out)
{
    if (rows < 0 || cols < 0) throw std::invalid_argument("sumColumns got a negative size.");
    activate();
    PLAB_CUDA_CHECK(ck::launchSumColumns(x, rows, cols, out, stream()));
}

const std::uint8_t* CudaBackend::deviceLabels(const std::uint8_t* labels, std::int64_t N, std::int64_t classes)
{
    // An out-of-range label would make the kernels read outside the logits: refused here,
    // although the caller has checked them already.
    if (std::any_of(labels, labels + N, [&](std::uint8_t y) { return y >= classes; }))
        throw std::invalid_argument("a label is outside 0.." + std::to_string(classes - 1) + ".");
    auto* device = static_cast<std::uint8_t*>(labels_.data());
    const auto bytes = static_cast<std::size_t>(N);
    if (device && labelsOnDevice_.size() == bytes && std::memcmp(labelsOnDevice_.data(), labels, bytes) == 0)
        return device;
    labelsOnDevice_.clear();   // until the copy below is enqueued
    device = labels_.reserveFor<std::uint8_t>(bytes);
    // From pageable memory: the driver stages the bytes before returning.
    PLAB_CUDA_CHECK(cudaMemcpyAsync(device, labels, bytes, cudaMemcpyHostToDevice, stream()));
    labelsOnDevice_.assign(labels, labels + N);
    return device;
}

LossResult CudaBackend::softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                            std::int64_t classes, Format emulate, float* probabilities)
{
    if (N <= 0 || classes <= 0) throw std::invalid_argument("the loss needs at least one row and one class.");
    activate();
    const std::uint8_t* y = deviceLabels(labels, N, classes);
    // (LossTotals, padded to 16 bytes) (N doubles: row results) (N bytes: argmax hits)
    constexpr std::size_t kTotalsBytes = 16;
    static_assert(sizeof(ck::LossTotals) <= kTotalsBytes);
    const auto rows = static_cast<std::size_t>(N);
    auto* scratch = static_cast<char*>(lossScratch_.reserve(kTotalsBytes + rows * sizeof(double) + rows));
    auto* totals = reinterpret_cast<ck::LossTotals*>(scratch);
    auto* rowResults = reinterpret_cast<double*>(scratch + kTotalsBytes);
    auto* rowCorrect = reinterpret_cast<std::uint8_t*>(scratch + kTotalsBytes + rows * sizeof(double));
    PLAB_CUDA_CHECK(ck::launchSoftmaxCrossEntropy(static_cast<int>(emulate), logits, y, N, classes, probabilities,
                                                  rowResults, rowCorrect, totals, stream()));
    auto* host = results_.reserveFor<ck::LossTotals>(1);
    PLAB_CUDA_CHECK(cudaMemcpyAsync(host, totals, sizeof(ck::LossTotals), cudaMemcpyDeviceToHost, stream()));
    synchronize();
    return {host->loss, host->correct};
}

void CudaBackend::softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, std::int64_t N,
                                              std::int64_t classes, float lossScale, float* grad)
{
    if (N <= 0 || classes <= 0) throw std::invalid_argument("the loss needs at least one row and one class.");
    activate();
    const std::uint8_t* y = deviceLabels(labels, N, classes);
    PLAB_CUDA_CHECK(ck::launchSoftmaxCrossEntropyBackward(probabilities, y, N, classes, lossScale, grad, stream()));
}

}  // namespace plab::cuda
