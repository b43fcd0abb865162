// The CPU backend's element-wise and reduction ops of the layers and optimizers (see
// ComputeBackend in backend/backend.h for what each computes), on host memory, parallel
// over the backend's thread pool where the work is large enough. These are the reference
// the CUDA plugin is checked against.
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace plab::cpu {

// body(begin, end, stats, hist) over chunks of [0, n) on the pool, each chunk counting into
// its own RoundingStats / GradientHistogram (null where the caller's is null), merged into
// the caller's under one lock: counts are sums, so the result is the serial one.
void parallelForCounted(ThreadPool& pool, std::int64_t n, std::int64_t grain, RoundingStats* stats,
                        GradientHistogram* hist,
                        const std::function<void(std::int64_t, std::int64_t, RoundingStats*, GradientHistogram*)>& body);

void addBiasRound(ThreadPool& pool, Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                  std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist);
void relu(ThreadPool& pool, float* x, std::int64_t n);
void reluBackward(ThreadPool& pool, const float* y, float* g, std::int64_t n);
// 2x2 max pooling of (planes, H, W) into (planes, H/2, W/2) with each winner's position
// 0..3 in its window: the first maximum wins, the first NaN propagates.
void maxPool2x2(ThreadPool& pool, const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                std::uint8_t* argmax);
// One plane of it, on the calling thread (the packed pooling's kernel).
void maxPool2x2Plane(const float* in, std::int64_t H, std::int64_t W, float* out, std::uint8_t* argmax);
void maxPool2x2Backward(ThreadPool& pool, const float* g, const std::uint8_t* argmax, std::int64_t planes,
                        std::int64_t H, std::int64_t W, float* dx);
void transposeBlocks(ThreadPool& pool, const float* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                     float* out);
// The same for packed 16-bit tensors: they only move values.
void maxPool2x2Backward(ThreadPool& pool, const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                        std::int64_t H, std::int64_t W, std::uint16_t* dx);
void transposeBlocks(ThreadPool& pool, const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                     std::uint16_t* out);
void sumRows(ThreadPool& pool, const float* x, std::int64_t rows, std::int64_t cols, float* out);
void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out);
LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                               std::int64_t classes, Format emulate, float* probabilities);
void softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, std::int64_t N,
                                 std::int64_t classes, float lossScale, float* grad);

}  // namespace plab::cpu
