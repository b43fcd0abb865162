// The vision transformer's kernels: LayerNorm, the attention softmax, GELU, patches,
// positions, token means, adds. One thread per row (or column, or element) running
// transformer_math.h's arithmetic, which the host tests check against the CPU backend: a
// row's sums run in the CPU's order, so the results never depend on scheduling.
#include "backend/cuda/device_common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/transformer_math.h"

namespace plab::cudakernels {

namespace {

unsigned blocksOf(long long n) { return blocksFor(static_cast<std::size_t>(n)); }

__global__ void patchifyKernel(const float* images, long long total, long long side, long long patch, float* out)
{
    for (long long o = firstIndex(); o < total; o += gridStride()) out[o] = images[patchSource(o, side, patch)];
}

__global__ void addPeriodicKernel(float* x, long long n, const float* add, long long period)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) x[i] = addRn(x[i], add[i % period]);
}

__global__ void sumPeriodicKernel(const float* x, long long blocks, long long period, float* out)
{
    for (long long i = firstIndex(); i < period; i += gridStride()) out[i] = periodicSum(x, blocks, period, i);
}

__global__ void layerNormKernel(int f, const float* x, long long rows, long long D, const float* gamma,
                                const float* beta, float eps, float* y, float* xhat, float* rstd, float* sumOfSquares)
{
    for (long long m = firstIndex(); m < rows; m += gridStride())
        layerNormRow(f, x + m * D, D, gamma, beta, eps, y + m * D, xhat + m * D, rstd + m, sumOfSquares + m);
}

__global__ void layerNormWeightGradKernel(const float* g, const float* xhat, long long rows, long long D,
                                          float* dgamma, float* dbeta)
{
    for (long long d = firstIndex(); d < D; d += gridStride()) layerNormWeightGradColumn(g, xhat, rows, D, d, dgamma, dbeta);
}

__global__ void layerNormInputGradKernel(const float* g, const float* xhat, const float* rstd, const float* gamma,
                                         long long rows, long long D, float* dx)
{
    for (long long m = firstIndex(); m < rows; m += gridStride())
        layerNormInputGradRow(g + m * D, xhat + m * D, rstd[m], gamma, D, dx + m * D);
}

__global__ void softmaxRowsKernel(int f, const float* s, long long rows, long long T, float* p)
{
    for (long long r = firstIndex(); r < rows; r += gridStride()) softmaxRowPlain(f, s + r * T, T, p + r * T);
}

__global__ void softmaxRowsBackwardKernel(const float* p, float* g, long long rows, long long T)
{
    for (long long r = firstIndex(); r < rows; r += gridStride()) softmaxRowBackward(p + r * T, g + r * T, T);
}

__global__ void geluKernel(const float* x, float* y, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) y[i] = geluValue(x[i]);
}

__global__ void geluBackwardKernel(const float* x, float* g, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) g[i] = geluGradient(x[i], g[i]);
}

__global__ void addKernel(const float* a, const float* b, float* y, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) y[i] = addRn(a[i], b[i]);
}

__global__ void scaleKernel(float* x, long long n, float factor)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) x[i] = mulRn(x[i], factor);
}

__global__ void meanTokensKernel(const float* x, long long N, long long T, long long D, float* y)
{
    for (long long o = firstIndex(); o < N * D; o += gridStride()) y[o] = tokenMean(x, T, D, o / D, o % D);
}

__global__ void meanTokensBackwardKernel(const float* g, long long N, long long T, long long D, float* dx)
{
    const float tokens = static_cast<float>(T);
    for (long long o = firstIndex(); o < N * T * D; o += gridStride())
        dx[o] = divRn(g[(o / (T * D)) * D + o % D], tokens);
}

}  // namespace

cudaError_t launchPatchify(const float* images, long long N, long long side, long long patch, float* out,
                           cudaStream_t stream)
{
    const long long total = N * side * side;
    if (total <= 0) return cudaSuccess;
    patchifyKernel<<<blocksOf(total), kThreads, 0, stream>>>(images, total, side, patch, out);
    return cudaGetLastError();
}

cudaError_t launchAddPeriodic(float* x, long long n, const float* add, long long period, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    addPeriodicKernel<<<blocksOf(n), kThreads, 0, stream>>>(x, n, add, period);
    return cudaGetLastError();
}

cudaError_t launchSumPeriodic(const float* x, long long n, long long period, float* out, cudaStream_t stream)
{
    if (period <= 0) return cudaSuccess;
    sumPeriodicKernel<<<blocksOf(period), kThreads, 0, stream>>>(x, n / period, period, out);
    return cudaGetLastError();
}

cudaError_t launchLayerNorm(int f, const float* x, long long rows, long long D, const float* gamma, const float* beta,
                            float eps, float* y, float* xhat, float* rstd, float* sumOfSquares, cudaStream_t stream)
{
    if (rows <= 0) return cudaSuccess;
    layerNormKernel<<<blocksOf(rows), kThreads, 0, stream>>>(f, x, rows, D, gamma, beta, eps, y, xhat, rstd,
                                                             sumOfSquares);
    return cudaGetLastError();
}

cudaError_t launchLayerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                                    long long rows, long long D, float* dx, float* dgamma, float* dbeta,
                                    cudaStream_t stream)
{
    if (D <= 0) return cudaSuccess;
    layerNormWeightGradKernel<<<blocksOf(D), kThreads, 0, stream>>>(g, xhat, rows, D, dgamma, dbeta);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess || !dx || rows <= 0) return status;
    layerNormInputGradKernel<<<blocksOf(rows), kThreads, 0, stream>>>(g, xhat, rstd, gamma, rows, D, dx);
    return cudaGetLastError();
}

cudaError_t launchSoftmaxRows(int f, const float* s, long long rows, long long T, float* p, cudaStream_t stream)
{
    if (rows <= 0) return cudaSuccess;
    softmaxRowsKernel<<<blocksOf(rows), kThreads, 0, stream>>>(f, s, rows, T, p);
    return cudaGetLastError();
}

cudaError_t launchSoftmaxRowsBackward(const float* p, float* g, long long rows, long long T, cudaStream_t stream)
{
    if (rows <= 0) return cudaSuccess;
    softmaxRowsBackwardKernel<<<blocksOf(rows), kThreads, 0, stream>>>(p, g, rows, T);
    return cudaGetLastError();
}

cudaError_t launchGelu(const float* x, float* y, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    geluKernel<<<blocksOf(n), kThreads, 0, stream>>>(x, y, n);
    return cudaGetLastError();
}

cudaError_t launchGeluBackward(const float* x, float* g, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    geluBackwardKernel<<<blocksOf(n), kThreads, 0, stream>>>(x, g, n);
    return cudaGetLastError();
}

cudaError_t launchAdd(const float* a, const float* b, float* y, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    addKernel<<<blocksOf(n), kThreads, 0, stream>>>(a, b, y, n);
    return cudaGetLastError();
}

cudaError_t launchScale(float* x, long long n, float factor, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    scaleKernel<<<blocksOf(n), kThreads, 0, stream>>>(x, n, factor);
    return cudaGetLastError();
}

cudaError_t launchMeanTokens(const float* x, long long N, long long T, long long D, float* y, cudaStream_t stream)
{
    if (N * D <= 0) return cudaSuccess;
    meanTokensKernel<<<blocksOf(N * D), kThreads, 0, stream>>>(x, N, T, D, y);
    return cudaGetLastError();
}

cudaError_t launchMeanTokensBackward(const float* g, long long N, long long T, long long D, float* dx,
                                     cudaStream_t stream)
{
    if (N * T * D <= 0) return cudaSuccess;
    meanTokensBackwardKernel<<<blocksOf(N * T * D), kThreads, 0, stream>>>(g, N, T, D, dx);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
