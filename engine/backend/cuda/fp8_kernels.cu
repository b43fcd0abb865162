// The kernels of the FP8 recipes: per-tensor quantisation with its statistics,
// histogram and amax in one pass (from fp32 or 16-bit patterns, into fp32 values or 1-byte
// codes), the amax alone, codes decoded (whole or lowered by im2col), and the operands and
// result of cuBLASLt's FP8 GEMM (codes in the K-major, padded layout it wants; the padded
// result added into C).
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

// Where quantisation reads its values: fp32, or 16-bit patterns of format `from` widened.
struct Fp32Source {
    const float* values;
    __device__ float operator()(long long i) const { return values[i]; }
};
struct PackedSource {
    int from;
    const std::uint16_t* bits;
    __device__ float operator()(long long i) const { return __uint_as_float(widenBits16(from, bits[i])); }
};
// What it writes: q * scaleInv in fp32, or q's code.
struct ValueTarget {
    float* values;
    float scaleInv;
    __device__ void operator()(long long i, int, float q) const { values[i] = mulRn(q, scaleInv); }
};
struct CodeTarget {
    std::uint8_t* codes;
    __device__ void operator()(long long i, int format, float q) const { codes[i] = fp8Code(format, q); }
};

template <typename Source, typename Target>
__global__ void __launch_bounds__(kThreads) quantizeFp8Kernel(int format, Source src, Target dst, long long n,
                                                              float scale, unsigned long long* counters,
                                                              bool wantStats, bool wantHist, unsigned* amax)
{
    __shared__ unsigned int local[kCounterSlots];
    const bool counting = counters != nullptr && (wantStats || wantHist);
    if (counting) zeroCounters(local);
    const Fp8Rule rule = fp8Rule(format);
    std::uint32_t key = 0;
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        const float in = src(i);   // read before the write: may alias
        key = max(key, amaxKey(in));
        const Fp8Element e = fp8Element(rule, in, scale);
        dst(i, format, e.q);
        if (counting) {
            const std::uint32_t bits = __float_as_uint(e.x);
            countElement(local, wantStats ? e.statMask : 0u, wantHist ? histogramSlot(bits) : 0, wantHist);
        }
    }
    if (counting) addCounters(local, counters);
    foldAmax(key, amax);
}

template <typename Source>
__global__ void __launch_bounds__(kThreads) amaxKernel(Source src, long long n, unsigned* amax)
{
    std::uint32_t key = 0;
    for (long long i = firstIndex(); i < n; i += gridStride()) key = max(key, amaxKey(src(i)));
    foldAmax(key, amax);
}

template <typename Source, typename Target>
cudaError_t launchQuantize(int format, Source src, Target dst, long long n, float scale, const Fp8Counting& c,
                           cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    quantizeFp8Kernel<<<blocksFor(static_cast<std::size_t>(n)), kThreads, 0, stream>>>(
        format, src, dst, n, scale, c.counters, c.wantStats, c.wantHist, c.amax);
    return cudaGetLastError();
}

template <typename Source>
cudaError_t launchAmaxOf(Source src, long long n, unsigned* amax, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    amaxKernel<<<blocksFor(static_cast<std::size_t>(n)), kThreads, 0, stream>>>(src, n, amax);
    return cudaGetLastError();
}

__global__ void decodeFp8Kernel(int format, float scaleInv, const std::uint8_t* codes, long long codesLd, float* dst,
                                long long dstLd, long long rows, long long cols)
{
    for (long long i = firstIndex(); i < rows * cols; i += gridStride()) {
        const long long r = i / cols, c = i % cols;
        dst[r * dstLd + c] = fp8Decoded(format, codes[r * codesLd + c], scaleInv);
    }
}

// im2colKernel (kernels.cu) from codes: each column element the decoded value (+0 for
// the padding).
__global__ void im2colFp8Kernel(int format, float scaleInv, ConvShape g, long long n0, long long count,
                                const std::uint8_t* codes, float* cols, long long total)
{
    const long long columns = count * g.height * g.width;
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        const long long from = im2colSource(g, n0, count, i / columns, i % columns);
        cols[i] = from < 0 ? 0.0f : fp8Decoded(format, codes[from], scaleInv);
    }
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
                              const Fp8Counting& counting, cudaStream_t stream)
{
    return launchQuantize(format, Fp32Source{src}, ValueTarget{dst, scaleInv}, n, scale, counting, stream);
}

cudaError_t launchQuantizeFp8From16(int format, int from, const std::uint16_t* src, float* dst, long long n,
                                    float scale, float scaleInv, const Fp8Counting& counting, cudaStream_t stream)
{
    return launchQuantize(format, PackedSource{from, src}, ValueTarget{dst, scaleInv}, n, scale, counting, stream);
}

cudaError_t launchQuantizeFp8Codes(int format, const float* src, std::uint8_t* codes, long long n, float scale,
                                   const Fp8Counting& counting, cudaStream_t stream)
{
    return launchQuantize(format, Fp32Source{src}, CodeTarget{codes}, n, scale, counting, stream);
}

cudaError_t launchQuantizeFp8CodesFrom16(int format, int from, const std::uint16_t* src, std::uint8_t* codes,
                                         long long n, float scale, const Fp8Counting& counting, cudaStream_t stream)
{
    return launchQuantize(format, PackedSource{from, src}, CodeTarget{codes}, n, scale, counting, stream);
}

cudaError_t launchAmax(const float* src, long long n, unsigned* amax, cudaStream_t stream)
{
    return launchAmaxOf(Fp32Source{src}, n, amax, stream);
}

cudaError_t launchAmax16(int from, const std::uint16_t* src, long long n, unsigned* amax, cudaStream_t stream)
{
    return launchAmaxOf(PackedSource{from, src}, n, amax, stream);
}

cudaError_t launchDecodeFp8(int format, float scaleInv, const std::uint8_t* codes, long long codesLd, float* dst,
                            long long dstLd, long long rows, long long cols, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    decodeFp8Kernel<<<blocksFor(static_cast<std::size_t>(rows * cols)), kThreads, 0, stream>>>(
        format, scaleInv, codes, codesLd, dst, dstLd, rows, cols);
    return cudaGetLastError();
}

cudaError_t launchIm2colFp8(int format, float scaleInv, const ConvShape& g, long long n0, long long count,
                            const std::uint8_t* codes, float* cols, cudaStream_t stream)
{
    const long long total = g.channels * g.kernel * g.kernel * count * g.height * g.width;
    if (total <= 0) return cudaSuccess;
    im2colFp8Kernel<<<blocksFor(static_cast<std::size_t>(total)), kThreads, 0, stream>>>(format, scaleInv, g, n0,
                                                                                          count, codes, cols, total);
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
