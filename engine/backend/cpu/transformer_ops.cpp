// The transformer ops on the CPU: per row, in fp32 with double sums or emulated in a 16-bit
// format with a rounding after every operation.
#include "backend/cpu/transformer_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace plab::cpu {

namespace {

// Rows per chunk for work of about `perRow` values a row: chunks of some 16 Ki values.
std::int64_t rowGrain(std::int64_t perRow) { return std::max<std::int64_t>(1, (1 << 14) / std::max<std::int64_t>(perRow, 1)); }

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

}  // namespace

void patchify(ThreadPool& pool, const float* images, std::int64_t N, std::int64_t side, std::int64_t patch,
              float* out)
{
    const std::int64_t grid = side / patch, P = patch, tokens = grid * grid;
    pool.parallelFor(N, rowGrain(side * side), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t n = b; n < e; ++n) {
            float* y = out + n * tokens * P * P;
            for (std::int64_t gy = 0; gy < grid; ++gy)
                for (std::int64_t gx = 0; gx < grid; ++gx)
                    for (std::int64_t r = 0; r < P; ++r)
                        for (std::int64_t c = 0; c < P; ++c) *y++ = images[(n * side + gy * P + r) * side + gx * P + c];
        }
    });
}

void addPeriodic(ThreadPool& pool, float* x, std::int64_t n, const float* add, std::int64_t period)
{
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) x[i] += add[i % period];
    });
}

void sumPeriodic(ThreadPool& pool, const float* x, std::int64_t n, std::int64_t period, float* out)
{
    const std::int64_t blocks = n / period;
    pool.parallelFor(period, rowGrain(blocks), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) {
            double sum = 0.0;
            for (std::int64_t k = 0; k < blocks; ++k) sum += x[k * period + i];
            out[i] = static_cast<float>(sum);
        }
    });
}

void layerNorm(ThreadPool& pool, Format f, const float* x, std::int64_t rows, std::int64_t D, const float* gamma,
               const float* beta, float eps, float* y, float* xhat, float* rstdOut, float* sumOfSquares)
{
    const bool fp32 = f == Format::fp32;
    pool.parallelFor(rows, rowGrain(3 * D), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t m = b; m < e; ++m) {
            const float* row = x + m * D;
            // The sum of squared deviations, exactly: what a 16-bit accumulator must hold.
            double exactSum = 0.0;
            for (std::int64_t d = 0; d < D; ++d) exactSum += row[d];
            const double exactMean = exactSum / static_cast<double>(D);
            double exactSquares = 0.0;
            for (std::int64_t d = 0; d < D; ++d) exactSquares += (row[d] - exactMean) * (row[d] - exactMean);
            sumOfSquares[m] = static_cast<float>(exactSquares);
            float mean = static_cast<float>(exactMean), rstd = 0.0f;
            if (fp32) {
                rstd = 1.0f / std::sqrt(static_cast<float>(exactSquares / static_cast<double>(D)) + eps);
            } else {
                // A 16-bit kernel with a 16-bit accumulator: two passes, each step rounded.
                float sum = 0.0f;
                for (std::int64_t d = 0; d < D; ++d) sum = roundTo(f, sum + row[d]);
                mean = roundTo(f, sum / static_cast<float>(D));
                float squares = 0.0f;
                for (std::int64_t d = 0; d < D; ++d) {
                    const float diff = roundTo(f, row[d] - mean);
                    squares = roundTo(f, squares + roundTo(f, diff * diff));
                }
                const float var = roundTo(f, squares / static_cast<float>(D));
                rstd = roundTo(f, 1.0f / roundTo(f, std::sqrt(roundTo(f, var + eps))));
            }
            rstdOut[m] = rstd;
            for (std::int64_t d = 0; d < D; ++d) {
                const float h = fp32 ? (row[d] - mean) * rstd : roundTo(f, roundTo(f, row[d] - mean) * rstd);
                xhat[m * D + d] = h;
                y[m * D + d] = h * gamma[d] + beta[d];
            }
        }
    });
}

void layerNormBackward(ThreadPool& pool, const float* g, const float* xhat, const float* rstd, const float* gamma,
                       std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta)
{
    // dgamma, dbeta: per column, the rows in order.
    pool.parallelFor(D, rowGrain(2 * rows), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t d = b; d < e; ++d) {
            double sg = 0.0, sb = 0.0;
            for (std::int64_t m = 0; m < rows; ++m) {
                sg += static_cast<double>(g[m * D + d]) * xhat[m * D + d];
                sb += g[m * D + d];
            }
            dgamma[d] = static_cast<float>(sg);
            dbeta[d] = static_cast<float>(sb);
        }
    });
    if (!dx) return;
    pool.parallelFor(rows, rowGrain(2 * D), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t m = b; m < e; ++m) {
            double a = 0.0, c = 0.0;
            for (std::int64_t d = 0; d < D; ++d) {
                const double dh = static_cast<double>(g[m * D + d]) * gamma[d];
                a += dh;
                c += dh * xhat[m * D + d];
            }
            const float meanA = static_cast<float>(a / static_cast<double>(D));
            const float meanC = static_cast<float>(c / static_cast<double>(D));
            for (std::int64_t d = 0; d < D; ++d)
                dx[m * D + d] = rstd[m] * (g[m * D + d] * gamma[d] - meanA - xhat[m * D + d] * meanC);
        }
    });
}

void softmaxRows(ThreadPool& pool, Format f, const float* s, std::int64_t rows, std::int64_t T, float* p)
{
    pool.parallelFor(rows, rowGrain(2 * T), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
            const float* row = s + r * T;
            float* out = p + r * T;
            const float top = *std::max_element(row, row + T);
            if (f == Format::fp32) {
                double sum = 0.0;
                for (std::int64_t j = 0; j < T; ++j) sum += out[j] = std::exp(row[j] - top);
                for (std::int64_t j = 0; j < T; ++j) out[j] = static_cast<float>(out[j] / sum);
            } else {
                float sum = 0.0f;
                for (std::int64_t j = 0; j < T; ++j) {
                    out[j] = roundTo(f, std::exp(roundTo(f, row[j] - top)));
                    sum = roundTo(f, sum + out[j]);
                }
                for (std::int64_t j = 0; j < T; ++j) out[j] = roundTo(f, out[j] / sum);
            }
        }
    });
}

void softmaxRowsBackward(ThreadPool& pool, const float* p, float* g, std::int64_t rows, std::int64_t T)
{
    pool.parallelFor(rows, rowGrain(2 * T), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
            float* row = g + r * T;
            const float* y = p + r * T;
            double dot = 0.0;
            for (std::int64_t j = 0; j < T; ++j) dot += static_cast<double>(row[j]) * y[j];
            const float c = static_cast<float>(dot);
            for (std::int64_t j = 0; j < T; ++j) row[j] = y[j] * (row[j] - c);
        }
    });
}

void gelu(ThreadPool& pool, const float* x, float* y, std::int64_t n)
{
    pool.parallelFor(n, 1 << 13, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
    });
}

void geluBackward(ThreadPool& pool, const float* x, float* g, std::int64_t n)
{
    // d/dx x Phi(x) = Phi(x) + x phi(x)
    pool.parallelFor(n, 1 << 13, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) {
            const float cdf = 0.5f * (1.0f + std::erf(x[i] * kInvSqrt2));
            const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x[i] * x[i]);
            g[i] *= cdf + x[i] * pdf;
        }
    });
}

void add(ThreadPool& pool, const float* a, const float* b, float* y, std::int64_t n)
{
    pool.parallelFor(n, 1 << 15, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
    });
}

void scale(ThreadPool& pool, float* x, std::int64_t n, float factor)
{
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) x[i] *= factor;
    });
}

void meanTokens(ThreadPool& pool, const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y)
{
    pool.parallelFor(N, rowGrain(T * D), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t n = b; n < e; ++n)
            for (std::int64_t d = 0; d < D; ++d) {
                double sum = 0.0;
                for (std::int64_t t = 0; t < T; ++t) sum += x[(n * T + t) * D + d];
                y[n * D + d] = static_cast<float>(sum / static_cast<double>(T));
            }
    });
}

void meanTokensBackward(ThreadPool& pool, const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx)
{
    const float tokens = static_cast<float>(T);
    pool.parallelFor(N, rowGrain(T * D), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t n = b; n < e; ++n)
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t d = 0; d < D; ++d) dx[(n * T + t) * D + d] = g[n * D + d] / tokens;
    });
}

}  // namespace plab::cpu
