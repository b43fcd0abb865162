// The kernels of packed 16-bit tensors (ComputeBackend's packed ops, cuda_packed_ops.cpp):
// ReLU and pooling on the patterns, moves, widening, rounding into patterns with the
// rounding statistics, and im2col from packed activations. Each gives, bit for bit, what
// the fp32 kernel gives on the widened values, narrowed again (kernel_math.h's
// widenBits16 / narrowBits16, checked on the host for every pattern). The row sums of
// packed values are step_kernels.cu's, which share their kernel with sumRows.
#include "backend/cuda/device_common.cuh"
#include "backend/cuda/kernels.h"

#include <algorithm>

namespace plab::cudakernels {

namespace {

unsigned blocksOf(long long n) { return blocksFor(static_cast<std::size_t>(n)); }

__device__ __forceinline__ float widened(int f, std::uint16_t h) { return __uint_as_float(widenBits16(f, h)); }

__global__ void relu16Kernel(int f, std::uint16_t* x, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride())
        if (atMostZeroBits16(f, x[i])) x[i] = 0;
}

__global__ void reluBackward16Kernel(int f, const std::uint16_t* y, std::uint16_t* g, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride())
        if (atMostZeroBits16(f, y[i])) g[i] = 0;
}

// The fp32 kernel's window maximum on the widened values; the winner's own pattern copied.
__global__ void maxPoolPackedKernel(int f, PoolShape s, const std::uint16_t* in, std::uint16_t* out,
                                    std::uint8_t* argmax, long long total)
{
    for (long long o = firstIndex(); o < total; o += gridStride()) {
        const std::uint16_t* w = in + poolWindowStart(s, o);
        const PoolMax best = poolMax(widened(f, w[0]), widened(f, w[1]), widened(f, w[s.width]),
                                     widened(f, w[s.width + 1]));
        const int k = best.position;
        out[o] = w[(k / 2) * s.width + k % 2];
        argmax[o] = static_cast<std::uint8_t>(k);
    }
}

__global__ void maxPoolBackwardPackedKernel(PoolShape s, const std::uint16_t* g, const std::uint8_t* argmax,
                                            std::uint16_t* dx, long long total)
{
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        int position = 0;
        const long long o = poolOutputOf(s, i, &position);
        dx[i] = (o >= 0 && argmax[o] == position) ? g[o] : std::uint16_t{0};
    }
}

__global__ void transposeBlocksPackedKernel(const std::uint16_t* in, long long A, long long B, long long inner,
                                            std::uint16_t* out)
{
    for (long long o = firstIndex(); o < A * B * inner; o += gridStride())
        out[o] = in[transposeBlocksSource(A, B, inner, o)];
}

// Tiles of 32 x 32 through shared memory (a padded row, so the column reads do not
// collide in one bank), 32 x 8 threads: reads and writes both run along rows.
constexpr int kTile = 32, kTileRows = 8;

template <bool Widen>
__global__ void transpose16Kernel(int f, const std::uint16_t* in, long long rows, long long cols, long long inLd,
                                  long long inBatch, void* out)
{
    __shared__ std::uint16_t tile[kTile][kTile + 1];
    const long long b = blockIdx.z, c0 = static_cast<long long>(blockIdx.x) * kTile;
    const std::uint16_t* src = in + b * inBatch;
    // Row tiles in a grid-stride loop (gridDim.y is at most 65535); every thread of the
    // block runs the same number of rounds, so the barriers are reached by all.
    for (long long r0 = static_cast<long long>(blockIdx.y) * kTile; r0 < rows;
         r0 += static_cast<long long>(gridDim.y) * kTile) {
        for (int k = threadIdx.y; k < kTile; k += kTileRows) {
            const long long r = r0 + k, c = c0 + threadIdx.x;
            if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * inLd + c];
        }
        __syncthreads();
        for (int k = threadIdx.y; k < kTile; k += kTileRows) {
            const long long c = c0 + k, r = r0 + threadIdx.x;
            if (r >= rows || c >= cols) continue;
            const std::uint16_t v = tile[threadIdx.x][k];
            const long long o = b * rows * cols + c * rows + r;
            if constexpr (Widen)
                static_cast<float*>(out)[o] = widened(f, v);
            else
                static_cast<std::uint16_t*>(out)[o] = v;
        }
        __syncthreads();   // the tile is read out before the next round fills it
    }
}

template <bool Widen>
cudaError_t launchTranspose(int f, const std::uint16_t* in, long long batch, long long rows, long long cols,
                            long long inLd, long long inBatch, void* out, cudaStream_t stream)
{
    if (batch <= 0 || rows <= 0 || cols <= 0) return cudaSuccess;
    const long long tilesAcross = (cols + kTile - 1) / kTile, tilesDown = (rows + kTile - 1) / kTile;
    if (tilesAcross > 0x7fffffffLL || batch > 65535) return cudaErrorInvalidConfiguration;
    const dim3 grid(static_cast<unsigned>(tilesAcross), static_cast<unsigned>(std::min(tilesDown, 65535LL)),
                    static_cast<unsigned>(batch));
    transpose16Kernel<Widen><<<grid, dim3(kTile, kTileRows), 0, stream>>>(f, in, rows, cols, inLd, inBatch, out);
    return cudaGetLastError();
}

__global__ void filterFromKrscKernel(const float* in, long long Cout, long long C, long long k2, bool accumulate,
                                     float* dw)
{
    const long long perRow = C * k2;
    for (long long o = firstIndex(); o < Cout * perRow; o += gridStride()) {
        const long long co = o / perRow, rest = o - co * perRow, c = rest / k2, kk = rest - c * k2;
        const float v = in[(co * k2 + kk) * C + c];
        dw[o] = accumulate ? __fadd_rn(dw[o], v) : v;
    }
}

__global__ void widen16Kernel(int f, const std::uint16_t* src, long long srcLd, float* dst, long long dstLd,
                              long long rows, long long cols)
{
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        const long long r = i / cols, c = i % cols;
        dst[r * dstLd + c] = widened(f, src[r * srcLd + c]);
    }
}

// roundKernel's pass (kernels.cu) into patterns: the row's bias added in fp32 (when
// given), rounded, counted, stored as the format's 16 bits.
__global__ void roundTo16Kernel(int f, const float* src, long long srcLd, const float* bias, std::uint16_t* dst,
                                long long dstLd, long long rows, long long cols, unsigned long long* counters,
                                bool wantStats, bool wantHist)
{
    __shared__ unsigned int local[kCounterSlots];
    const bool counting = counters != nullptr && (wantStats || wantHist);
    if (counting) zeroCounters(local);
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        const long long r = i / cols, c = i % cols;
        float x = src[r * srcLd + c];
        if (bias) x = addRn(x, bias[r]);
        const std::uint32_t in = __float_as_uint(x);
        const std::uint32_t out = roundBits(f, in);
        dst[r * dstLd + c] = narrowBits16(f, out);
        if (counting) countElement(local, wantStats ? statMask(f, in, out) : 0u, wantHist ? histogramSlot(in) : 0,
                                   wantHist);
    }
    if (counting) addCounters(local, counters);
}

// im2colKernel (kernels.cu) from a packed source: into fp32 columns (widened), or into
// packed columns (the patterns moved; +0 for the padding).
__global__ void im2colPackedKernel(int f, ConvShape g, long long n0, long long count, const std::uint16_t* src,
                                   float* cols, long long total)
{
    const long long columns = count * g.height * g.width;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        const long long from = im2colSource(g, n0, count, i / columns, i % columns);
        cols[i] = from < 0 ? 0.0f : widened(f, src[from]);
    }
}

__global__ void im2col16Kernel(ConvShape g, long long n0, long long count, const std::uint16_t* src,
                               std::uint16_t* cols, long long total)
{
    const long long columns = count * g.height * g.width;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        const long long from = im2colSource(g, n0, count, i / columns, i % columns);
        cols[i] = from < 0 ? std::uint16_t{0} : src[from];
    }
}

}  // namespace

cudaError_t launchRelu16(int f, std::uint16_t* x, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    relu16Kernel<<<blocksOf(n), kThreads, 0, stream>>>(f, x, n);
    return cudaGetLastError();
}

cudaError_t launchReluBackward16(int f, const std::uint16_t* y, std::uint16_t* g, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    reluBackward16Kernel<<<blocksOf(n), kThreads, 0, stream>>>(f, y, g, n);
    return cudaGetLastError();
}

cudaError_t launchMaxPoolPacked(int f, const PoolShape& s, const std::uint16_t* in, std::uint16_t* out,
                                std::uint8_t* argmax, cudaStream_t stream)
{
    const long long total = s.planes * s.outHeight() * s.outWidth();
    if (total <= 0) return cudaSuccess;
    maxPoolPackedKernel<<<blocksOf(total), kThreads, 0, stream>>>(f, s, in, out, argmax, total);
    return cudaGetLastError();
}

cudaError_t launchMaxPoolBackwardPacked(const PoolShape& s, const std::uint16_t* g, const std::uint8_t* argmax,
                                        std::uint16_t* dx, cudaStream_t stream)
{
    const long long total = s.planes * s.height * s.width;
    if (total <= 0) return cudaSuccess;
    maxPoolBackwardPackedKernel<<<blocksOf(total), kThreads, 0, stream>>>(s, g, argmax, dx, total);
    return cudaGetLastError();
}

cudaError_t launchTransposeBlocksPacked(const std::uint16_t* in, long long A, long long B, long long inner,
                                        std::uint16_t* out, cudaStream_t stream)
{
    if (A * B * inner <= 0) return cudaSuccess;
    transposeBlocksPackedKernel<<<blocksOf(A * B * inner), kThreads, 0, stream>>>(in, A, B, inner, out);
    return cudaGetLastError();
}

cudaError_t launchTranspose16(const std::uint16_t* in, long long batch, long long rows, long long cols,
                              long long inLd, long long inBatch, std::uint16_t* out, cudaStream_t stream)
{
    return launchTranspose<false>(0, in, batch, rows, cols, inLd, inBatch, out, stream);
}

cudaError_t launchWidenTransposed16(int f, const std::uint16_t* in, long long rows, long long cols, float* out,
                                    cudaStream_t stream)
{
    return launchTranspose<true>(f, in, 1, rows, cols, cols, rows * cols, out, stream);
}

cudaError_t launchFilterFromKrsc(const float* in, long long Cout, long long C, long long k2, bool accumulate,
                                 float* dw, cudaStream_t stream)
{
    const long long total = Cout * C * k2;
    if (total <= 0) return cudaSuccess;
    filterFromKrscKernel<<<blocksOf(total), kThreads, 0, stream>>>(in, Cout, C, k2, accumulate, dw);
    return cudaGetLastError();
}

cudaError_t launchWiden16(int f, const std::uint16_t* src, long long srcLd, float* dst, long long dstLd,
                          long long rows, long long cols, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    widen16Kernel<<<blocksOf(rows * cols), kThreads, 0, stream>>>(f, src, srcLd, dst, dstLd, rows, cols);
    return cudaGetLastError();
}

cudaError_t launchRoundTo16(int f, const float* src, long long srcLd, const float* bias, std::uint16_t* dst,
                            long long dstLd, long long rows, long long cols, unsigned long long* counters,
                            bool wantStats, bool wantHist, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    roundTo16Kernel<<<blocksOf(rows * cols), kThreads, 0, stream>>>(f, src, srcLd, bias, dst, dstLd, rows, cols,
                                                                    counters, wantStats, wantHist);
    return cudaGetLastError();
}

cudaError_t launchIm2colPacked(int f, const ConvShape& g, long long n0, long long count, const std::uint16_t* src,
                               float* cols, cudaStream_t stream)
{
    const long long total = g.channels * g.kernel * g.kernel * count * g.height * g.width;
    if (total <= 0) return cudaSuccess;
    im2colPackedKernel<<<blocksOf(total), kThreads, 0, stream>>>(f, g, n0, count, src, cols, total);
    return cudaGetLastError();
}

cudaError_t launchIm2col16(const ConvShape& g, long long n0, long long count, const std::uint16_t* src,
                           std::uint16_t* cols, cudaStream_t stream)
{
    const long long total = g.channels * g.kernel * g.kernel * count * g.height * g.width;
    if (total <= 0) return cudaSuccess;
    im2col16Kernel<<<blocksOf(total), kThreads, 0, stream>>>(g, n0, count, src, cols, total);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
