// CudaBackend's ops on packed 16-bit tensors in device memory (backend.h's packed ops):
// each enqueues one kernel of packed_kernels.cu (or step_kernels.cu's row sums) and
// returns. gemm16 hands cuBLAS the 16-bit operands as they are stored.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <cublas_v2.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace plab::cuda {

namespace ck = cudakernels;

namespace {

int format16(Format f, const char* op)
{
    if (f != Format::fp16 && f != Format::bf16)
        throw std::invalid_argument(std::string(op) + ": a packed tensor's format is fp16 or bf16.");
    return static_cast<int>(f);
}

void checkSizes(const char* op, std::initializer_list<std::int64_t> sizes)
{
    for (const std::int64_t v : sizes)
        if (v < 0) throw std::invalid_argument(std::string(op) + " got a negative size.");
}

void checkStrided(const char* op, std::int64_t cols, std::initializer_list<std::int64_t> lds)
{
    for (const std::int64_t ld : lds)
        if (ld < cols) throw std::invalid_argument(std::string(op) + " got a leading dimension shorter than its row.");
}

ck::ConvShape shapeOf(const ConvGeometry& g, std::int64_t n0, std::int64_t count, const char* op)
{
    if (g.kernel != 2 * g.pad + 1 || g.channels <= 0 || g.height <= 0 || g.width <= 0 || n0 < 0 || count < 0 ||
        n0 + count > g.batch)
        throw std::invalid_argument(std::string(op) +
                                    " needs a same-size stride-1 convolution and a sample range inside the batch.");
    return {g.channels, g.batch, g.height, g.width, g.kernel, g.pad};
}

int asInt(std::int64_t v, const char* what)
{
    if (v > INT_MAX) throw std::invalid_argument(std::string("gemm16: ") + what + " exceeds the 32-bit range of cublasGemmEx");
    return static_cast<int>(v);
}

cublasOperation_t op(Transpose t) { return t == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void CudaBackend::relu16(Format f, std::uint16_t* x, std::int64_t n)
{
    checkSizes("relu16", {n});
    activate();
    PLAB_CUDA_CHECK(ck::launchRelu16(format16(f, "relu16"), x, n, stream()));
}

void CudaBackend::reluBackward16(Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n)
{
    checkSizes("reluBackward16", {n});
    activate();
    PLAB_CUDA_CHECK(ck::launchReluBackward16(format16(f, "reluBackward16"), y, g, n, stream()));
}

void CudaBackend::maxPool2x2Packed(Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H,
                                   std::int64_t W, std::uint16_t* out, std::uint8_t* argmax)
{
    checkSizes("maxPool2x2Packed", {planes, H, W});
    activate();
    PLAB_CUDA_CHECK(ck::launchMaxPoolPacked(format16(f, "maxPool2x2Packed"), {planes, H, W}, in, out, argmax, stream()));
}

void CudaBackend::maxPool2x2BackwardPacked(const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                                           std::int64_t H, std::int64_t W, std::uint16_t* dx)
{
    checkSizes("maxPool2x2BackwardPacked", {planes, H, W});
    activate();
    PLAB_CUDA_CHECK(ck::launchMaxPoolBackwardPacked({planes, H, W}, g, argmax, dx, stream()));
}

void CudaBackend::transposeBlocksPacked(const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                                        std::uint16_t* out)
{
    checkSizes("transposeBlocksPacked", {A, B, inner});
    activate();
    PLAB_CUDA_CHECK(ck::launchTransposeBlocksPacked(in, A, B, inner, out, stream()));
}

void CudaBackend::widen16(Format f, const std::uint16_t* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                          std::int64_t rows, std::int64_t cols)
{
    checkSizes("widen16", {rows, cols});
    checkStrided("widen16", cols, {srcLd, dstLd});
    activate();
    PLAB_CUDA_CHECK(ck::launchWiden16(format16(f, "widen16"), src, srcLd, dst, dstLd, rows, cols, stream()));
}

void CudaBackend::roundTo16(Format f, const float* src, std::int64_t srcLd, std::uint16_t* dst, std::int64_t dstLd,
                            std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist)
{
    addBiasRoundTo16(f, src, srcLd, nullptr, dst, dstLd, rows, cols, stats, hist);
}

void CudaBackend::addBiasRoundTo16(Format f, const float* x, std::int64_t xLd, const float* bias, std::uint16_t* out,
                                   std::int64_t outLd, std::int64_t rows, std::int64_t cols, RoundingStats* stats,
                                   GradientHistogram* hist)
{
    const char* name = bias ? "addBiasRoundTo16" : "roundTo16";
    checkSizes(name, {rows, cols});
    checkStrided(name, cols, {xLd, outLd});
    const int fmt = format16(f, name);
    if (rows == 0 || cols == 0) return;
    activate();
    const bool counted = stats || hist;
    unsigned long long* slots = counted ? counters_.roundingSlots(stats, hist) : nullptr;
    PLAB_CUDA_CHECK(ck::launchRoundTo16(fmt, x, xLd, bias, out, outLd, rows, cols, slots, stats != nullptr,
                                        hist != nullptr, stream()));
    if (counted) counters_.addElements(stats, hist, static_cast<std::size_t>(rows * cols));   // only after a launch
}

void CudaBackend::sumRows16(Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out)
{
    checkSizes("sumRows16", {rows, cols});
    const int fmt = format16(f, "sumRows16");
    if (rows == 0) return;
    activate();
    auto* partials = rowScratch_.reserveFor<double>(static_cast<std::size_t>(rows * ck::sumRowsParts(rows, cols)));
    PLAB_CUDA_CHECK(ck::launchSumRows16(fmt, x, rows, cols, partials, out, stream()));
}

void CudaBackend::im2colPacked(const ConvGeometry& g, Format f, const std::uint16_t* src, std::int64_t n0,
                               std::int64_t count, float* cols)
{
    const ck::ConvShape shape = shapeOf(g, n0, count, "im2colPacked");
    activate();
    PLAB_CUDA_CHECK(ck::launchIm2colPacked(format16(f, "im2colPacked"), shape, n0, count, src, cols, stream()));
}

void CudaBackend::im2col16(const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                           std::uint16_t* cols)
{
    const ck::ConvShape shape = shapeOf(g, n0, count, "im2col16");
    activate();
    PLAB_CUDA_CHECK(ck::launchIm2col16(shape, n0, count, src, cols, stream()));
}

bool CudaBackend::multiplies16(const GemmPrecision& precision) const
{
    if (precision.fp8() || runsFp8(precision, capability_)) return false;
    try {
        return choosePath(precision, capability_, "GEMMs") == GemmPath::bits16Fp32Accumulate;
    } catch (const std::exception&) {
        return false;   // gemm names the reason when it is asked
    }
}

void CudaBackend::gemm16(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                         const std::uint16_t* A, std::int64_t lda, const std::uint16_t* B, std::int64_t ldb,
                         float beta, float* C, std::int64_t ldc, GemmPrecision precision)
{
    if (!multiplies16(precision))
        throw std::logic_error("gemm16: this precision is not multiplied on 16-bit operands here (multiplies16)");
    if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm16 got a negative dimension.");
    if (M == 0 || N == 0) return;
    const std::int64_t colsA = transA == Transpose::yes ? M : K, colsB = transB == Transpose::yes ? K : N;
    if (lda < colsA || ldb < colsB || ldc < N)
        throw std::invalid_argument("gemm16 got a leading dimension shorter than its row.");
    activate();
    if (K == 0) {   // an empty sum: C = beta * C (cuBLAS is not asked, as in gemm)
        PLAB_CUDA_CHECK(ck::launchScaleMatrix(C, M, N, ldc, beta, ck::kFp32, stream()));
        return;
    }
    // gemm's bits16Fp32Accumulate call, on the stored patterns instead of dense copies
    // (C^T = op(B)^T op(A)^T, cuda_gemm.cpp).
    const cudaDataType type16 = precision.compute == Format::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    const float one = 1.0f;
    PLAB_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), op(transB), op(transA), asInt(N, "N"), asInt(M, "M"), asInt(K, "K"),
                                   &one, B, type16, asInt(ldb, "ldb"), A, type16, asInt(lda, "lda"), &beta, C,
                                   CUDA_R_32F, asInt(ldc, "ldc"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace plab::cuda
