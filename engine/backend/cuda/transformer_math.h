// The vision transformer's per-row and per-element arithmetic (LayerNorm, the row softmax,
// GELU, token means), written once for the device kernels (transformer_kernels.cu) and the
// host tests, op for op as the CPU backend's transformer_ops.cpp computes it: the same
// sums in double in the same order, every float operation rounded once (no fused
// multiply-add on the device). On the host the result is the CPU's bit for bit
// (tst_cuda_op_math); on the device only erf and exp may round differently (CUDA's erff
// and expf, docs/CUDA.md).
// C++17 and free of CUDA headers, as kernel_math.h.
#pragma once

#include "backend/cuda/kernel_math.h"

namespace plab::cudakernels {

PLAB_HOST_DEVICE double addDoubleRn(double a, double b)
{
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

PLAB_HOST_DEVICE double subDoubleRn(double a, double b)
{
#if defined(__CUDA_ARCH__)
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}

PLAB_HOST_DEVICE double mulDoubleRn(double a, double b)
{
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

PLAB_HOST_DEVICE double divDoubleRn(double a, double b)
{
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}

#if defined(__CUDA_ARCH__)
PLAB_HOST_DEVICE float erfFloat(float x) { return erff(x); }
#else
PLAB_HOST_DEVICE float erfFloat(float x) { return std::erf(x); }
#endif

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// One row of LayerNorm (D values): y, xhat, 1/std and the exact sum of squared deviations.
// f: kFp32 for autocast's fp32 statistics, else the format every step is rounded to.
PLAB_HOST_DEVICE void layerNormRow(int f, const float* row, std::int64_t D, const float* gamma, const float* beta,
                                   float eps, float* y, float* xhat, float* rstdOut, float* sumOfSquares)
{
    double exactSum = 0.0;
    for (std::int64_t d = 0; d < D; ++d) exactSum = addDoubleRn(exactSum, static_cast<double>(row[d]));
    const double exactMean = divDoubleRn(exactSum, static_cast<double>(D));
    double exactSquares = 0.0;
    for (std::int64_t d = 0; d < D; ++d) {
        const double dev = subDoubleRn(static_cast<double>(row[d]), exactMean);
        exactSquares = addDoubleRn(exactSquares, squareRn(dev));
    }
    *sumOfSquares = static_cast<float>(exactSquares);
    float mean = static_cast<float>(exactMean), rstd = 0.0f;
    if (f == kFp32) {
        rstd = divRn(1.0f, sqrtRn(addRn(static_cast<float>(divDoubleRn(exactSquares, static_cast<double>(D))), eps)));
    } else {
        float sum = 0.0f;
        for (std::int64_t d = 0; d < D; ++d) sum = roundFloat(f, addRn(sum, row[d]));
        mean = roundFloat(f, divRn(sum, static_cast<float>(D)));
        float squares = 0.0f;
        for (std::int64_t d = 0; d < D; ++d) {
            const float diff = roundFloat(f, subRn(row[d], mean));
            squares = roundFloat(f, addRn(squares, roundFloat(f, mulRn(diff, diff))));
        }
        const float var = roundFloat(f, divRn(squares, static_cast<float>(D)));
        rstd = roundFloat(f, divRn(1.0f, roundFloat(f, sqrtRn(roundFloat(f, addRn(var, eps))))));
    }
    *rstdOut = rstd;
    for (std::int64_t d = 0; d < D; ++d) {
        const float h = f == kFp32 ? mulRn(subRn(row[d], mean), rstd)
                                   : roundFloat(f, mulRn(roundFloat(f, subRn(row[d], mean)), rstd));
        xhat[d] = h;
        y[d] = addRn(mulRn(h, gamma[d]), beta[d]);
    }
}

// Column d of LayerNorm's weight gradients over `rows` rows of width D.
PLAB_HOST_DEVICE void layerNormWeightGradColumn(const float* g, const float* xhat, std::int64_t rows, std::int64_t D,
                                                std::int64_t d, float* dgamma, float* dbeta)
{
    double sg = 0.0, sb = 0.0;
    for (std::int64_t m = 0; m < rows; ++m) {
        sg = addDoubleRn(sg, mulDoubleRn(static_cast<double>(g[m * D + d]), static_cast<double>(xhat[m * D + d])));
        sb = addDoubleRn(sb, static_cast<double>(g[m * D + d]));
    }
    dgamma[d] = static_cast<float>(sg);
    dbeta[d] = static_cast<float>(sb);
}

// One row of LayerNorm's input gradient.
PLAB_HOST_DEVICE void layerNormInputGradRow(const float* g, const float* xhat, float rstd, const float* gamma,
                                            std::int64_t D, float* dx)
{
    double a = 0.0, c = 0.0;
    for (std::int64_t d = 0; d < D; ++d) {
        const double dh = mulDoubleRn(static_cast<double>(g[d]), static_cast<double>(gamma[d]));
        a = addDoubleRn(a, dh);
        c = addDoubleRn(c, mulDoubleRn(dh, static_cast<double>(xhat[d])));
    }
    const float meanA = static_cast<float>(divDoubleRn(a, static_cast<double>(D)));
    const float meanC = static_cast<float>(divDoubleRn(c, static_cast<double>(D)));
    for (std::int64_t d = 0; d < D; ++d)
        dx[d] = mulRn(rstd, subRn(subRn(mulRn(g[d], gamma[d]), meanA), mulRn(xhat[d], meanC)));
}

// One row of the attention softmax (T values), shifted by its maximum (the first largest).
PLAB_HOST_DEVICE void softmaxRowPlain(int f, const float* row, std::int64_t T, float* out)
{
    float top = row[0];
    for (std::int64_t j = 1; j < T; ++j)
        if (top < row[j]) top = row[j];
    if (f == kFp32) {
        double sum = 0.0;
        for (std::int64_t j = 0; j < T; ++j) {
            out[j] = expFloat(subRn(row[j], top));
            sum = addDoubleRn(sum, static_cast<double>(out[j]));
        }
        for (std::int64_t j = 0; j < T; ++j) out[j] = static_cast<float>(divDoubleRn(static_cast<double>(out[j]), sum));
    } else {
        float sum = 0.0f;
        for (std::int64_t j = 0; j < T; ++j) {
            out[j] = roundFloat(f, expFloat(roundFloat(f, subRn(row[j], top))));
            sum = roundFloat(f, addRn(sum, out[j]));
        }
        for (std::int64_t j = 0; j < T; ++j) out[j] = roundFloat(f, divRn(out[j], sum));
    }
}

// g = p o (g - rowsum(g o p)) over one row.
PLAB_HOST_DEVICE void softmaxRowBackward(const float* p, float* g, std::int64_t T)
{
    double dot = 0.0;
    for (std::int64_t j = 0; j < T; ++j)
        dot = addDoubleRn(dot, mulDoubleRn(static_cast<double>(g[j]), static_cast<double>(p[j])));
    const float c = static_cast<float>(dot);
    for (std::int64_t j = 0; j < T; ++j) g[j] = mulRn(p[j], subRn(g[j], c));
}

PLAB_HOST_DEVICE float geluValue(float x)
{
    return mulRn(mulRn(0.5f, x), addRn(1.0f, erfFloat(mulRn(x, kInvSqrt2))));
}

// g times d/dx x Phi(x) = Phi(x) + x phi(x).
PLAB_HOST_DEVICE float geluGradient(float x, float g)
{
    const float cdf = mulRn(0.5f, addRn(1.0f, erfFloat(mulRn(x, kInvSqrt2))));
    const float pdf = mulRn(kInvSqrt2Pi, expFloat(mulRn(mulRn(-0.5f, x), x)));
    return mulRn(g, addRn(cdf, mulRn(x, pdf)));
}

// Output element o of patchify: the pixel of image n it reads.
PLAB_HOST_DEVICE std::int64_t patchSource(std::int64_t o, std::int64_t side, std::int64_t patch)
{
    const std::int64_t grid = side / patch, P = patch, perImage = side * side;
    const std::int64_t n = o / perImage, rest = o % perImage;
    const std::int64_t token = rest / (P * P), pixel = rest % (P * P);
    const std::int64_t gy = token / grid, gx = token % grid, r = pixel / P, c = pixel % P;
    return (n * side + gy * P + r) * side + gx * P + c;
}

// Column i of a sum over blocks of `period` values, in block order.
PLAB_HOST_DEVICE float periodicSum(const float* x, std::int64_t blocks, std::int64_t period, std::int64_t i)
{
    double sum = 0.0;
    for (std::int64_t k = 0; k < blocks; ++k) sum = addDoubleRn(sum, static_cast<double>(x[k * period + i]));
    return static_cast<float>(sum);
}

// y[n][d] of the mean over T tokens.
PLAB_HOST_DEVICE float tokenMean(const float* x, std::int64_t T, std::int64_t D, std::int64_t n, std::int64_t d)
{
    double sum = 0.0;
    for (std::int64_t t = 0; t < T; ++t) sum = addDoubleRn(sum, static_cast<double>(x[(n * T + t) * D + d]));
    return static_cast<float>(divDoubleRn(sum, static_cast<double>(T)));
}

}  // namespace plab::cudakernels
