// The kernels of the FP8 recipes: per-tensor quantisation with its statistics,
// histogram and amax in one pass, the amax alone, and the operands and result of cuBLASLt's
// FP8 GEMM (codes in the K-major, padded layout it wants; the padded result added into C).
// The per-element arithmetic is kernel_fp8.h's, checked on the host against the CPU.
#include "backend/cuda/device_common.cuh"
#include "backend/cuda/kernels.h"

namespace plab::cudakernels {

namespace {

// The largest key of the block's threads folded into *amax: a warp maximum by shuffles,
// then one atomicMax per warp. Every thread of the block calls it.
__device__ void foldAmax(std::uint32_t key, unsigned* amax)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        const std::uint32_t other = __shfl_down_sync(0xFFFFFFFFu, key, offset);
        key = other > key ? other : key;
    }
    if (threadIdx.x % 32 == 0 && key != 0) atomicMax(amax, key);
}

__global__ void __launch_bounds__(kThreads) quantizeFp8Kernel(int format, const float* src, float* dst, long long n,
                                                              float scale, float scaleInv,
                                                              unsigned long long* counters, bool wantStats,
                                                              bool wantHist, unsigned* amax)
{
    __shared__ unsigned int local[kCounterSlots];
    const bool counting = counters != nullptr && (wantStats || wantHist);
    if (counting) zeroCounters(local);
    const Fp8Rule rule = fp8Rule(format);
    std::uint32_t key = 0;
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        const float in = src[i];   // read before the write: may alias
        key = max(key, amaxKey(in));
        const float x = mulRn(in, scale);
        float r = 0.0f;
        bool saturated = false;
        dst[i] = mulRn(fp8Quantize(rule, x, &r, &saturated), scaleInv);
        if (counting) {
            const std::uint32_t bits = __float_as_uint(x);
            countElement(local, wantStats ? fp8StatMask(rule, bits, r, saturated) : 0u,
                         wantHist ? histogramSlot(bits) : 0, wantHist);
        }
    }
    if (counting) addCounters(local, counters);
    foldAmax(key, amax);
}

__global__ void __launch_bounds__(kThreads) amaxKernel(const float* src, long long n, unsigned* amax)
{
    std::uint32_t key = 0;
    for (long long i = firstIndex(); i < n; i += gridStride()) key = max(key, amaxKey(src[i]));
    foldAmax(key, amax);
}

__global__ void encodeFp8Kernel(int format, const float* src, Fp8OperandShape s, float scale, std::uint8_t* dst)
{
    const long long total = s.outerPadded * s.kPadded;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        const long long o = i / s.kPadded, k = i % s.kPadded;
        std::uint8_t code = 0;
        if (o < s.outer && k < s.K)
            code = fp8CodeOfOperand(format, s.kContiguous ? src[o * s.ld + k] : src[k * s.ld + o], scale);
        dst[i] = code;
    }
}

__global__ void addScaledKernel(const float* d, long long ldd, long long rows, long long cols, float beta, float* c,
                                long long ldc)
{
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        const long long r = i / cols, col = i % cols;
        const float sum = d[r * ldd + col];
        c[r * ldc + col] = beta == 0.0f ? sum : addRn(sum, mulRn(beta, c[r * ldc + col]));
    }
}

}  // namespace

cudaError_t launchQuantizeFp8(int format, const float* src, float* dst, long long n, float scale, float scaleInv,
                              unsigned long long* counters, bool wantStats, bool wantHist, unsigned* amax,
                              cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    quantizeFp8Kernel<<<blocksFor(static_cast<std::size_t>(n)), kThreads, 0, stream>>>(
        format, src, dst, n, scale, scaleInv, counters, wantStats, wantHist, amax);
    return cudaGetLastError();
}

cudaError_t launchAmax(const float* src, long long n, unsigned* amax, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    amaxKernel<<<blocksFor(static_cast<std::size_t>(n)), kThreads, 0, stream>>>(src, n, amax);
    return cudaGetLastError();
}

cudaError_t launchEncodeFp8(int format, const float* src, const Fp8OperandShape& s, float scale, std::uint8_t* dst,
                            cudaStream_t stream)
{
    const long long total = s.outerPadded * s.kPadded;
    if (total <= 0) return cudaSuccess;
    encodeFp8Kernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(format, src, s, scale, dst);
    return cudaGetLastError();
}

cudaError_t launchAddScaled(const float* d, long long ldd, long long rows, long long cols, float beta, float* c,
                            long long ldc, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    addScaledKernel<<<blocksFor(static_cast<std::size_t>(rows * cols)), kThreads, 0, stream>>>(d, ldd, rows, cols,
                                                                                                 beta, c, ldc);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
