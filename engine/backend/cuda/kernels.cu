// The plugin's data-movement and rounding kernels: fused bias + rounding + RoundingStats +
// histogram in one pass, fill, 16-bit operand conversion and empty-sum scaling for cuBLAS,
// im2col / col2im. The per-element arithmetic lives in kernel_math.h (shared with the host
// tests); this file only maps it onto threads. The layers' and optimizers' kernels are in
// step_kernels.cu. Every kernel is compiled for five architectures, so keep them few.
#include "backend/cuda/device_common.cuh"
#include "backend/cuda/kernels.h"

namespace plab::cudakernels {

// Grid-stride loops over at most kMaxBlocks blocks: enough to fill any current GPU, and it
// bounds the elements one block counts (device_common.cuh).
unsigned gridOf(std::size_t blocks)
{
    return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks == 0 ? 1 : blocks) : kMaxBlocks);
}

unsigned blocksFor(std::size_t n) { return gridOf((n + kThreads - 1) / kThreads); }

namespace {

// One pass: add the bias, round, store, and count (device_common.cuh).
__global__ void roundKernel(int format, const float* src, float* dst, long long n, BiasTerm bias,
                            unsigned long long* counters, bool wantStats, bool wantHist)
{
    __shared__ unsigned int local[kCounterSlots];
    const bool counting = counters != nullptr && (wantStats || wantHist);
    if (counting) zeroCounters(local);
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        float x = src[i];   // read before the write: may alias
        if (bias.values) x = addRn(x, bias.values[biasIndex(i, bias.period, bias.repeat)]);
        const std::uint32_t in = __float_as_uint(x);
        const std::uint32_t out = roundBits(format, in);
        dst[i] = __uint_as_float(out);
        if (counting) countElement(local, wantStats ? statMask(format, in, out) : 0u, wantHist ? histogramSlot(in) : 0,
                                   wantHist);
    }
    if (counting) addCounters(local, counters);
}

__global__ void fillKernel(float* dst, long long n, float value)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) dst[i] = value;
}

__global__ void to16BitKernel(int format, const float* src, long long ld, long long rows, long long cols,
                              std::uint16_t* dst)
{
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        const std::uint32_t u = __float_as_uint(src[(i / cols) * ld + i % cols]);
        dst[i] = format == kFp16 ? fp32ToFp16Bits(u) : fp32ToBf16Bits(u);
    }
}

__global__ void to16BitBatchedKernel(int format, const float* src, long long ld, long long stride, long long rows,
                                     long long cols, long long total, std::uint16_t* dst)
{
    const long long plane = rows * cols;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        const long long b = i / plane, r = (i % plane) / cols, c = i % cols;
        const std::uint32_t u = __float_as_uint(src[b * stride + r * ld + c]);
        dst[i] = format == kFp16 ? fp32ToFp16Bits(u) : fp32ToBf16Bits(u);
    }
}

__global__ void from16BitKernel(int format, const std::uint16_t* src, long long rows, long long cols, float* dst,
                                long long ld)
{
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        const std::uint16_t h = src[i];
        dst[(i / cols) * ld + i % cols] =
            __uint_as_float(format == kFp16 ? fp16BitsToFp32Bits(h) : static_cast<std::uint32_t>(h) << 16);
    }
}

__global__ void scaleMatrixKernel(float* c, long long rows, long long cols, long long ld, float beta, int format)
{
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        float& x = c[(i / cols) * ld + i % cols];
        x = beta == 0.0f ? 0.0f : roundFloat(format, mulRn(beta, x));   // beta == 0 never reads C
    }
}

// One thread per element of cols (patchSize, count * H * W); consecutive threads write
// consecutive columns and read (mostly) consecutive pixels, so both sides coalesce.
__global__ void im2colKernel(ConvShape g, long long n0, long long count, const float* src, float* cols,
                             long long total)
{
    const long long columns = count * g.height * g.width;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        const long long from = im2colSource(g, n0, count, i / columns, i % columns);
        cols[i] = from < 0 ? 0.0f : src[from];
    }
}

// One thread per output element: a gather in kk order (no atomics, deterministic, and the
// same additions in the same order as the CPU's col2im, so the results agree bit for bit).
__global__ void col2imKernel(ConvShape g, long long n0, long long count, const float* cols, long long colsLd,
                             float* dst, long long total)
{
    const int k2 = g.kernel * g.kernel;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        float sum = 0.0f;
        for (int kk = 0; kk < k2; ++kk) {
            const long long from = col2imTerm(g, count, i, kk, colsLd);
            if (from >= 0) sum = addRn(sum, cols[from]);
        }
        dst[col2imTarget(g, n0, count, i)] = sum;
    }
}

}  // namespace

cudaError_t launchRound(int format, const float* src, float* dst, std::size_t n, BiasTerm bias,
                        unsigned long long* counters, bool wantStats, bool wantHist, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    roundKernel<<<blocksFor(n), kThreads, 0, stream>>>(format, src, dst, static_cast<long long>(n), bias, counters,
                                                       wantStats, wantHist);
    return cudaGetLastError();
}

cudaError_t launchFill(float* dst, std::size_t n, float value, cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    fillKernel<<<blocksFor(n), kThreads, 0, stream>>>(dst, static_cast<long long>(n), value);
    return cudaGetLastError();
}

cudaError_t launchTo16Bit(int format, const float* src, long long ld, long long rows, long long cols,
                          std::uint16_t* dst, cudaStream_t stream)
{
    if (rows * cols == 0) return cudaSuccess;
    to16BitKernel<<<blocksFor(static_cast<std::size_t>(rows * cols)), kThreads, 0, stream>>>(format, src, ld, rows,
                                                                                            cols, dst);
    return cudaGetLastError();
}

cudaError_t launchTo16BitBatched(int format, const float* src, long long ld, long long stride, long long rows,
                                 long long cols, long long batch, std::uint16_t* dst, cudaStream_t stream)
{
    const long long total = batch * rows * cols;
    if (total == 0) return cudaSuccess;
    to16BitBatchedKernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(format, src, ld, stride,
                                                                                             rows, cols, total, dst);
    return cudaGetLastError();
}

cudaError_t launchFrom16Bit(int format, const std::uint16_t* src, long long rows, long long cols, float* dst,
                            long long ld, cudaStream_t stream)
{
    if (rows * cols == 0) return cudaSuccess;
    from16BitKernel<<<blocksFor(static_cast<std::size_t>(rows * cols)), kThreads, 0, stream>>>(format, src, rows,
                                                                                              cols, dst, ld);
    return cudaGetLastError();
}

cudaError_t launchScaleMatrix(float* c, long long rows, long long cols, long long ld, float beta, int format,
                              cudaStream_t stream)
{
    if (rows * cols == 0) return cudaSuccess;
    scaleMatrixKernel<<<blocksFor(static_cast<std::size_t>(rows * cols)), kThreads, 0, stream>>>(c, rows, cols, ld,
                                                                                                beta, format);
    return cudaGetLastError();
}

cudaError_t launchIm2col(const ConvShape& g, long long n0, long long count, const float* src, float* cols,
                         cudaStream_t stream)
{
    const long long total = g.channels * g.kernel * g.kernel * count * g.height * g.width;
    if (total == 0) return cudaSuccess;
    im2colKernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(g, n0, count, src, cols,
                                                                                     total);
    return cudaGetLastError();
}

cudaError_t launchCol2im(const ConvShape& g, long long n0, long long count, const float* cols, long long colsLd,
                         float* dst, cudaStream_t stream)
{
    const long long total = g.channels * count * g.height * g.width;
    if (total == 0) return cudaSuccess;
    col2imKernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(g, n0, count, cols, colsLd,
                                                                                     dst, total);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
