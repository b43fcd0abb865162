// The CPU backend's layer ops: the bias and rounding of the GEMM outputs, ReLU, 2x2 max
// pooling, the (C, N) <-> (N, C) block transpose of Flatten, bias-gradient sums, and
// softmax cross-entropy in fp32 or emulated in a reduced format.
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/row_sums.h"

#include "numerics/bulk_round.h"
#include "numerics/format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

namespace plab::cpu {

void parallelForCounted(ThreadPool& pool, std::int64_t n, std::int64_t grain, RoundingStats* stats,
                        GradientHistogram* hist,
                        const std::function<void(std::int64_t, std::int64_t, RoundingStats*, GradientHistogram*)>& body)
{
    if (!stats && !hist) {
        pool.parallelFor(n, grain, [&](std::int64_t b, std::int64_t e) { body(b, e, nullptr, nullptr); });
        return;
    }
    std::mutex merge;
    pool.parallelFor(n, grain, [&](std::int64_t b, std::int64_t e) {
        RoundingStats localStats;
        GradientHistogram localHist;
        body(b, e, stats ? &localStats : nullptr, hist ? &localHist : nullptr);
        std::lock_guard lock(merge);
        if (stats) *stats += localStats;
        if (hist) *hist += localHist;
    });
}

void addBiasRound(ThreadPool& pool, Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                  std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist)
{
    // x[begin, end) += bias, walking runs of one bias value; where each value repeats once
    // (a Linear layer's rows), walking the bias along the row instead (no division an element).
    auto addBias = [&](std::int64_t begin, std::int64_t end) {
        if (repeat == 1) {
            for (std::int64_t i = begin; i < end;) {
                const std::int64_t j = i % period, len = std::min(end - i, period - j);
                float* row = x + i;
                const float* b = bias + j;
                for (std::int64_t k = 0; k < len; ++k) row[k] += b[k];
                i += len;
            }
            return;
        }
        for (std::int64_t i = begin; i < end;) {
            const std::int64_t run = i / repeat, runEnd = std::min(end, (run + 1) * repeat);
            const float b = bias[run % period];
            for (; i < runEnd; ++i) x[i] += b;
        }
    };
    if (f == Format::fp32) {
        pool.parallelFor(n, 1 << 14, addBias);
        return;
    }
    parallelForCounted(pool, n, 1 << 14, stats, hist,
                       [&](std::int64_t begin, std::int64_t end, RoundingStats* s, GradientHistogram* h) {
                           addBias(begin, end);
                           plab::roundArray(f, x + begin, static_cast<std::size_t>(end - begin), s, h);
                       });
}

void relu(ThreadPool& pool, float* x, std::int64_t n)
{
    // max(0, x) with NaN kept a NaN (PyTorch's relu propagates it).
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) x[i] = (x[i] <= 0.0f) ? 0.0f : x[i];
    });
}

void reluBackward(ThreadPool& pool, const float* y, float* g, std::int64_t n)
{
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) g[i] = (y[i] <= 0.0f) ? 0.0f : g[i];
    });
}

void maxPool2x2(ThreadPool& pool, const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                std::uint8_t* argmax)
{
    const std::int64_t planeOut = (H / 2) * (W / 2);
    pool.parallelFor(planes, 8, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t plane = p0; plane < p1; ++plane)
            maxPool2x2Plane(in + plane * H * W, H, W, out + plane * planeOut, argmax + plane * planeOut);
    });
}

namespace {

template <class T>
void scatterToWinners(ThreadPool& pool, const T* g, const std::uint8_t* argmax, std::int64_t planes, std::int64_t H,
                      std::int64_t W, T* dx)
{
    const std::int64_t Ho = H / 2, Wo = W / 2;
    pool.parallelFor(planes, 8, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t plane = p0; plane < p1; ++plane) {
            T* dst = dx + plane * H * W;
            std::memset(dst, 0, sizeof(T) * static_cast<std::size_t>(H * W));   // +0 in every format
            for (std::int64_t y = 0; y < Ho; ++y)
                for (std::int64_t x = 0; x < Wo; ++x) {
                    const std::int64_t o = (plane * Ho + y) * Wo + x;
                    const int k = argmax[o];
                    dst[(2 * y + k / 2) * W + 2 * x + k % 2] = g[o];
                }
        }
    });
}

template <class T>
void transposeBlocksOf(ThreadPool& pool, const T* in, std::int64_t A, std::int64_t B, std::int64_t inner, T* out)
{
    // out[b][a] = in[a][b], each a block of `inner` values.
    pool.parallelFor(A * B, 64, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t a = item / B, b = item % B;
            std::copy(in + item * inner, in + (item + 1) * inner, out + (b * A + a) * inner);
        }
    });
}

}  // namespace

void maxPool2x2Backward(ThreadPool& pool, const float* g, const std::uint8_t* argmax, std::int64_t planes,
                        std::int64_t H, std::int64_t W, float* dx)
{
    scatterToWinners(pool, g, argmax, planes, H, W, dx);
}

void maxPool2x2Backward(ThreadPool& pool, const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                        std::int64_t H, std::int64_t W, std::uint16_t* dx)
{
    scatterToWinners(pool, g, argmax, planes, H, W, dx);
}

void transposeBlocks(ThreadPool& pool, const float* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                     float* out)
{
    transposeBlocksOf(pool, in, A, B, inner, out);
}

void transposeBlocks(ThreadPool& pool, const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                     std::uint16_t* out)
{
    transposeBlocksOf(pool, in, A, B, inner, out);
}

void sumRows(ThreadPool& pool, const float* x, std::int64_t rows, std::int64_t cols, float* out)
{
    pool.parallelFor(rows, 8, [&](std::int64_t r0, std::int64_t r1) {
        sumRowsInOrder(
            r0, r1, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t, float*) { return x + r * cols + c0; }, out);
    });
}

void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out)
{
    std::vector<double> sums(static_cast<std::size_t>(cols), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) sums[static_cast<std::size_t>(c)] += x[r * cols + c];
    for (std::int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(sums[static_cast<std::size_t>(c)]);
}

LossResult softmaxCrossEntropy(const float* x, const std::uint8_t* labels, std::int64_t N, std::int64_t classes,
                               Format emulate, float* prob)
{
    LossResult result;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* row = x + n * classes;
        std::int64_t best = 0;
        for (std::int64_t j = 1; j < classes; ++j)
            if (row[j] > row[best]) best = j;
        if (best == labels[n]) ++result.correct;
    }

    if (emulate == Format::fp32) {
        double total = 0.0;
        for (std::int64_t n = 0; n < N; ++n) {
            const float* row = x + n * classes;
            float m = row[0];
            for (std::int64_t j = 1; j < classes; ++j) m = std::fmax(m, row[j]);
            double sum = 0.0;   // terms in (0, 1], summed in double for a careful log-sum-exp
            for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j] - m));
            const float lse = m + static_cast<float>(std::log(sum));
            total += static_cast<double>(lse - row[labels[n]]);
            for (std::int64_t j = 0; j < classes; ++j) prob[n * classes + j] = std::exp(row[j] - lse);
        }
        result.loss = static_cast<float>(total / static_cast<double>(N));
        return result;
    }

    // Emulated in format s: round after every operation.
    auto r = [s = emulate](float v) { return roundTo(s, v); };
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
        const float logProb = r(r(row[labels[n]] - m) - lse);
        total = r(total - logProb);
        for (std::int64_t j = 0; j < classes; ++j)
            prob[n * classes + j] = r(expValues[static_cast<std::size_t>(j)] / sum);
    }
    result.loss = r(total / static_cast<float>(N));
    return result;
}

void softmaxCrossEntropyBackward(const float* prob, const std::uint8_t* labels, std::int64_t N,
                                 std::int64_t classes, float lossScale, float* grad)
{
    const float batch = static_cast<float>(N);
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t j = 0; j < classes; ++j) {
            const float onehot = (j == labels[n]) ? 1.0f : 0.0f;
            grad[n * classes + j] = (prob[n * classes + j] - onehot) / batch * lossScale;
        }
}

}  // namespace plab::cpu
