// The plugin's own CUDA kernels: fused rounding + RoundingStats + histogram in one pass,
// 16-bit operand conversion for cuBLAS, im2col / col2im. The per-element arithmetic lives
// in kernel_math.h (shared with the host tests); this file only maps it onto threads.
// Kept small on purpose: every kernel is compiled for five architectures in CI.
#include "backend/cuda/kernels.h"

namespace plab::cudakernels {

namespace {

constexpr int kThreads = 256;
// Grid-stride loops over at most this many blocks: enough to fill any current GPU, and it
// bounds the elements one block counts (n / kMaxBlocks), so the 32-bit shared counters of
// the rounding kernel cannot overflow below n = 2^44.
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocksFor(std::size_t n)
{
    const std::size_t blocks = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks == 0 ? 1 : blocks) : kMaxBlocks);
}

// One pass: round, store, and count. Counts go to shared memory first (fast atomics on
// a few hot bins: gradients cluster in a few binades), then one global atomic per nonzero
// counter per block. Counts are integers, so the result equals the CPU's exactly.
__global__ void roundKernel(int format, const float* src, float* dst, long long n,
                            unsigned long long* counters, bool wantStats, bool wantHist)
{
    __shared__ unsigned int local[kCounterSlots];
    const bool counting = counters != nullptr && (wantStats || wantHist);
    if (counting) {
        for (int i = threadIdx.x; i < kCounterSlots; i += blockDim.x) local[i] = 0;
        __syncthreads();
    }
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const std::uint32_t in = __float_as_uint(src[i]);   // read before the write: may alias
        const std::uint32_t out = roundBits(format, in);
        dst[i] = __uint_as_float(out);
        if (!counting) continue;
        if (wantStats) {
            unsigned mask = statMask(format, in, out);
            while (mask != 0) {
                const int slot = __ffs(static_cast<int>(mask)) - 1;
                atomicAdd(&local[slot], 1u);
                mask &= mask - 1;
            }
        }
        if (wantHist) atomicAdd(&local[histogramSlot(in)], 1u);
    }
    if (!counting) return;
    __syncthreads();
    for (int i = threadIdx.x; i < kCounterSlots; i += blockDim.x)
        if (local[i] != 0) atomicAdd(&counters[i], static_cast<unsigned long long>(local[i]));
}

__global__ void to16BitKernel(int format, const float* src, std::uint16_t* dst, long long n)
{
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const std::uint32_t u = __float_as_uint(src[i]);
        dst[i] = format == kFp16 ? fp32ToFp16Bits(u) : fp32ToBf16Bits(u);
    }
}

__global__ void from16BitKernel(int format, const std::uint16_t* src, float* dst, long long n)
{
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const std::uint16_t h = src[i];
        dst[i] = __uint_as_float(format == kFp16 ? fp16BitsToFp32Bits(h) : static_cast<std::uint32_t>(h) << 16);
    }
}

// One thread per element of cols (patchSize, count * H * W); consecutive threads write
// consecutive columns and read (mostly) consecutive pixels, so both sides coalesce.
__global__ void im2colKernel(ConvShape g, const float* src, float* cols, long long total)
{
    const long long columns = g.batch * g.height * g.width;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const long long from = im2colSource(g, 0, g.batch, i / columns, i % columns);
        cols[i] = from < 0 ? 0.0f : src[from];
    }
}

// One thread per output element: a gather in kk order (no atomics, deterministic, and the
// same additions in the same order as the CPU's col2im, so the results agree bit for bit).
__global__ void col2imKernel(ConvShape g, const float* cols, float* dst, long long total)
{
    const int k2 = g.kernel * g.kernel;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        float sum = 0.0f;
        for (int kk = 0; kk < k2; ++kk) {
            const long long from = col2imTerm(g, g.batch, i, kk);
            if (from >= 0) sum = __fadd_rn(sum, cols[from]);   // __fadd_rn: never contracted
        }
        dst[i] = sum;
    }
}

}  // namespace

cudaError_t launchRound(int format, const float* src, float* dst, std::size_t n,
                        unsigned long long* counters, bool wantStats, bool wantHist,
                        cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    roundKernel<<<blocksFor(n), kThreads, 0, stream>>>(format, src, dst, static_cast<long long>(n),
                                                       counters, wantStats, wantHist);
    return cudaGetLastError();
}

cudaError_t launchTo16Bit(int format, const float* src, std::uint16_t* dst, std::size_t n,
                          cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    to16BitKernel<<<blocksFor(n), kThreads, 0, stream>>>(format, src, dst, static_cast<long long>(n));
    return cudaGetLastError();
}

cudaError_t launchFrom16Bit(int format, const std::uint16_t* src, float* dst, std::size_t n,
                            cudaStream_t stream)
{
    if (n == 0) return cudaSuccess;
    from16BitKernel<<<blocksFor(n), kThreads, 0, stream>>>(format, src, dst, static_cast<long long>(n));
    return cudaGetLastError();
}

cudaError_t launchIm2col(const ConvShape& block, const float* src, float* cols, cudaStream_t stream)
{
    const long long total = static_cast<long long>(block.channels) * block.kernel * block.kernel *
                            block.batch * block.height * block.width;
    if (total == 0) return cudaSuccess;
    im2colKernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(block, src, cols, total);
    return cudaGetLastError();
}

cudaError_t launchCol2im(const ConvShape& block, const float* cols, float* dst, cudaStream_t stream)
{
    const long long total = static_cast<long long>(block.channels) * block.batch * block.height * block.width;
    if (total == 0) return cudaSuccess;
    col2imKernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(block, cols, dst, total);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
