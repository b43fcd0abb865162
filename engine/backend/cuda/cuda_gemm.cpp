// CudaBackend::gemm: one cublasGemmEx per call, with the cuBLAS compute type that each
// GemmPrecision implies (the GPU's real arithmetic for the recipe), or, for FP8 operands
// on a device with FP8 tensor cores (runsFp8), cuBLASLt's FP8 GEMM (cuda_fp8.cpp):
//   fp32                       -> CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no reduced reductions)
//   tf32                       -> CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores; operands are
//                                 already tf32 values, so the cores' conversion changes none)
//   fp16 / bf16, fp32 accum.   -> 16-bit operands, CUBLAS_COMPUTE_32F, fp32 output
//   fp16, fp16 accumulation    -> CUBLAS_COMPUTE_16F_PEDANTIC, half alpha/beta, fp16 output
//   bf16 / tf32, no fp32 accum -> unsupported: neither cuBLAS nor the hardware sums in them
// Tensor cores (the tf32 and 16-bit rows with fp32 sums) multiply these operands exactly,
// but their fp32 accumulation is not IEEE round-to-nearest after every addition: a block of
// products is aligned to the largest exponent and the bits shifted out are truncated
// (measured on V100, T4 and A100 by Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior
// of NVIDIA tensor cores", PeerJ Computer Science, 2021). Those sums differ from the CPU's
// sgemm by more than the order of the additions.
// Row-major operands use the column-major identity C^T = op(B)^T op(A)^T: cuBLAS gets B as
// its first operand and A as its second, with the same transpose flags, and writes C^T
// column-major, which is C row-major; a row-major leading dimension is the column-major one
// of the transpose, so padded tensors need no copies. All pointers are device pointers and
// nothing here waits for the device. choosePath (cuda_precision.h) is defined here; the
// cuDNN convolutions (cuda_conv.cpp) follow it too.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <cublas_v2.h>

#include <bit>
#include <climits>
#include <stdexcept>
#include <string>

namespace plab::cuda {

GemmPath choosePath(GemmPrecision p, DeviceCapability cap, std::string_view products)
{
    const auto needsAmpere = [&](const char* what) {
        if (cap.major < 8)
            throw std::runtime_error(std::string(what) + " needs a GPU of compute capability 8.0 or newer; this one is " +
                                     std::to_string(cap.major) + "." + std::to_string(cap.minor));
    };
    const auto noAccumulation = [&](const char* format) {
        return std::runtime_error("the GPU has no " + std::string(format) + " accumulation; " + format + " " +
                                  std::string(products) + " always accumulate in fp32 on the CUDA backend (use fp32 "
                                  "accumulation, or the CPU backend to emulate it)");
    };
    switch (p.compute) {
    case Format::fp32:
        // fp32 "accumulated in fp32" either way: the CPU reference also runs sgemm here.
        return GemmPath::fp32Strict;
    case Format::tf32:
        if (!p.fp32Accumulate) throw noAccumulation("tf32");
        needsAmpere("tf32 tensor-core math");
        return GemmPath::tf32;
    case Format::bf16:
        if (!p.fp32Accumulate) throw noAccumulation("bf16");
        needsAmpere("bf16 tensor-core math");
        return GemmPath::bits16Fp32Accumulate;
    case Format::fp16:
        return p.fp32Accumulate ? GemmPath::bits16Fp32Accumulate : GemmPath::fp16Accumulate;
    }
    throw std::invalid_argument(std::string(products) + ": unknown compute format");
}

namespace {

int asInt(std::int64_t v, const char* what)
{
    if (v > INT_MAX) throw std::invalid_argument(std::string("gemm: ") + what + " exceeds the 32-bit range of cublasGemmEx");
    return static_cast<int>(v);
}

cublasOperation_t op(Transpose t) { return t == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N; }

std::uint16_t halfBits(float x) { return cudakernels::fp32ToFp16Bits(std::bit_cast<std::uint32_t>(x)); }

// The stored (rows, cols) of the row-major operands of C (M, N) = op(A) op(B), checked
// against their leading dimensions (gemm, gemm16 and gemmBatched alike).
struct StoredOperands {
    std::int64_t rowsA, colsA, rowsB, colsB;
};
StoredOperands storedOperands(const char* call, Transpose transA, Transpose transB, std::int64_t M, std::int64_t N,
                              std::int64_t K, std::int64_t lda, std::int64_t ldb, std::int64_t ldc)
{
    const StoredOperands s{transA == Transpose::yes ? K : M, transA == Transpose::yes ? M : K,
                           transB == Transpose::yes ? N : K, transB == Transpose::yes ? K : N};
    if (lda < s.colsA || ldb < s.colsB || ldc < N)
        throw std::invalid_argument(std::string(call) + " got a leading dimension shorter than its row.");
    return s;
}

}  // namespace

std::string CudaBackend::arithmeticFor(const GemmPrecision& precision) const
{
    if (runsFp8(precision, capability_))
        return "hardware: FP8 tensor cores on the quantised codes via cuBLASLt (per-tensor scales), fp32 accumulation";
    try {
        switch (choosePath(precision, capability_, "products")) {
        case GemmPath::fp32Strict: return "hardware: fp32 FMAs (no TF32)";
        case GemmPath::tf32: return "hardware: tensor cores on tf32 operands, fp32 accumulation";
        case GemmPath::bits16Fp32Accumulate:
            // (the plugin links no engine library: formatName is not here)
            return std::string("hardware: tensor cores on ") + (precision.compute == Format::bf16 ? "bf16" : "fp16") +
                   " operands, fp32 accumulation";
        case GemmPath::fp16Accumulate: return "hardware: fp16 sums without tensor cores, in the library's order";
        }
    } catch (const std::exception& e) {
        return std::string("not runnable: ") + e.what();
    }
    return {};
}

void CudaBackend::gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                       const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                       std::int64_t ldc, GemmPrecision precision)
{
    if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm got a negative dimension.");
    if (M == 0 || N == 0) return;
    const GemmPath path = choosePath(precision, capability_, "GEMMs");
    const auto [rowsA, colsA, rowsB, colsB] = storedOperands("gemm", transA, transB, M, N, K, lda, ldb, ldc);
    activate();
    if (K == 0) {
        // An empty sum: C = beta * C, rounded to fp16 when fp16 accumulates (as the CPU
        // reference does); cuBLAS is not asked (implementations treat k == 0 unevenly).
        PLAB_CUDA_CHECK(cudakernels::launchScaleMatrix(
            C, M, N, ldc, beta, path == GemmPath::fp16Accumulate ? cudakernels::kFp16 : cudakernels::kFp32, stream()));
        return;
    }
    if (runsFp8(precision, capability_)) {
        fp8Gemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
        return;
    }
    const int m = asInt(N, "N"), n = asInt(M, "M"), k = asInt(K, "K");   // cuBLAS's view: C^T (N, M)
    const int ldA = asInt(lda, "lda"), ldB = asInt(ldb, "ldb"), ldC = asInt(ldc, "ldc");

    const float one = 1.0f;
    switch (path) {
    case GemmPath::fp32Strict:
    case GemmPath::tf32:
        // Straight on the tensors: cuBLAS honours the leading dimensions, reads only the
        // (rows, cols) of A and B, never reads C when beta == 0, and writes only C's (M, N).
        PLAB_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), op(transB), op(transA), m, n, k, &one, B, CUDA_R_32F, ldB, A,
                                       CUDA_R_32F, ldA, &beta, C, CUDA_R_32F, ldC,
                                       path == GemmPath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC,
                                       CUBLAS_GEMM_DEFAULT));
        break;
    case GemmPath::bits16Fp32Accumulate:
    case GemmPath::fp16Accumulate: {
        // cuBLAS wants 16-bit operands: dense copies in reused workspace. The operands are
        // compute-format values held in fp32, so the conversion is exact.
        const int fmt = precision.compute == Format::bf16 ? cudakernels::kBf16 : cudakernels::kFp16;
        const cudaDataType type16 = precision.compute == Format::bf16 ? CUDA_R_16BF : CUDA_R_16F;
        auto* a16 = a16_.reserveFor<std::uint16_t>(static_cast<std::size_t>(rowsA * colsA));   // (rowsA, colsA)
        auto* b16 = b16_.reserveFor<std::uint16_t>(static_cast<std::size_t>(rowsB * colsB));   // (rowsB, colsB)
        PLAB_CUDA_CHECK(cudakernels::launchTo16Bit(fmt, A, lda, rowsA, colsA, a16, stream()));
        PLAB_CUDA_CHECK(cudakernels::launchTo16Bit(fmt, B, ldb, rowsB, colsB, b16, stream()));
        const int ldA16 = static_cast<int>(colsA), ldB16 = static_cast<int>(colsB);
        if (path == GemmPath::bits16Fp32Accumulate) {
            PLAB_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), op(transB), op(transA), m, n, k, &one, b16, type16, ldB16,
                                           a16, type16, ldA16, &beta, C, CUDA_R_32F, ldC, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT));
            break;
        }
        // fp16 accumulation, the teaching option: the CPU reference (cpu/gemm_emulated.h)
        // starts the running sum from round_fp16(beta * C) and rounds to fp16 after every
        // multiply-add, sequentially in k. CUBLAS_COMPUTE_16F would let cuBLAS use tensor
        // cores, whose fp16 MMA rounds once per block of products; the _PEDANTIC type asks
        // for standard fp16 arithmetic with an fp16 accumulator in every phase, so no tensor
        // cores and a rounding at every addition. Still not guaranteed, and not the CPU's:
        //   - the order of the additions: cuBLAS's tiling, and it may split K into partial
        //     sums (each rounded to fp16) that it adds at the end;
        //   - whether a kernel fuses each multiply-add (one rounding, as the CPU) or
        //     multiplies and adds (two): cuBLAS does not document its instructions;
        //   - where beta * C enters: cuBLAS adds it to the products' sum instead of starting
        //     from it. Its value is the CPU's: C is scaled and rounded to fp16 first, in
        //     place (C is overwritten below anyway), and cuBLAS gets beta = 1.
        // alpha and beta are halves (bit patterns of __half), as cuBLAS wants them for a
        // 16F compute type; C is a dense fp16 copy written back into C's (M, N) elements only.
        auto* c16 = c16_.reserveFor<std::uint16_t>(static_cast<std::size_t>(M * N));   // (M, N)
        if (beta != 0.0f) {
            if (beta != 1.0f)
                PLAB_CUDA_CHECK(cudakernels::launchScaleMatrix(C, M, N, ldc, beta, cudakernels::kFp16, stream()));
            PLAB_CUDA_CHECK(cudakernels::launchTo16Bit(cudakernels::kFp16, C, ldc, M, N, c16, stream()));
        }
        const std::uint16_t alpha16 = halfBits(1.0f), beta16 = halfBits(beta == 0.0f ? 0.0f : 1.0f);
        PLAB_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), op(transB), op(transA), m, n, k, &alpha16, b16, CUDA_R_16F,
                                       ldB16, a16, CUDA_R_16F, ldA16, &beta16, c16, CUDA_R_16F, m,
                                       CUBLAS_COMPUTE_16F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
        PLAB_CUDA_CHECK(cudakernels::launchFrom16Bit(cudakernels::kFp16, c16, M, N, C, ldc, stream()));
        break;
    }
    }
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

// gemm's bits16Fp32Accumulate call on the stored 16-bit patterns instead of dense copies.
void CudaBackend::gemm16(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                         const std::uint16_t* A, std::int64_t lda, const std::uint16_t* B, std::int64_t ldb,
                         float beta, float* C, std::int64_t ldc, GemmPrecision precision)
{
    if (!multiplies16(precision))
        throw std::logic_error("gemm16: this precision is not multiplied on 16-bit operands here (multiplies16)");
    if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm16 got a negative dimension.");
    if (M == 0 || N == 0) return;
    storedOperands("gemm16", transA, transB, M, N, K, lda, ldb, ldc);
    activate();
    if (K == 0) {   // an empty sum: C = beta * C (cuBLAS is not asked, as in gemm)
        PLAB_CUDA_CHECK(cudakernels::launchScaleMatrix(C, M, N, ldc, beta, cudakernels::kFp32, stream()));
        return;
    }
    const cudaDataType type16 = precision.compute == Format::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    const float one = 1.0f;
    PLAB_CUBLAS_CHECK(cublasGemmEx(cublas_.get(), op(transB), op(transA), asInt(N, "N"), asInt(M, "M"), asInt(K, "K"),
                                   &one, B, type16, asInt(ldb, "ldb"), A, type16, asInt(lda, "lda"), &beta, C,
                                   CUDA_R_32F, asInt(ldc, "ldc"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void CudaBackend::gemmBatched(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                              const float* A, std::int64_t lda, std::int64_t strideA, const float* B, std::int64_t ldb,
                              std::int64_t strideB, float beta, float* C, std::int64_t ldc, std::int64_t strideC,
                              std::int64_t batch, GemmPrecision precision)
{
    if (M < 0 || N < 0 || K < 0 || batch < 0) throw std::invalid_argument("gemmBatched got a negative dimension.");
    if (M == 0 || N == 0 || batch == 0) return;
    const GemmPath path = choosePath(precision, capability_, "GEMMs");
    // An empty sum, FP8 codes, fp16 sums (their C copies) and a single product: gemm's own
    // way, one call a product.
    if (K == 0 || batch == 1 || runsFp8(precision, capability_) || path == GemmPath::fp16Accumulate) {
        ComputeBackend::gemmBatched(transA, transB, M, N, K, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
                                    batch, precision);
        return;
    }
    const auto [rowsA, colsA, rowsB, colsB] = storedOperands("gemmBatched", transA, transB, M, N, K, lda, ldb, ldc);
    activate();
    const int m = asInt(N, "N"), n = asInt(M, "M"), k = asInt(K, "K");   // cuBLAS's view: C^T (N, M)
    const int count = asInt(batch, "batch");
    const float one = 1.0f;
    if (path == GemmPath::fp32Strict || path == GemmPath::tf32) {
        PLAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            cublas_.get(), op(transB), op(transA), m, n, k, &one, B, CUDA_R_32F, asInt(ldb, "ldb"), strideB, A,
            CUDA_R_32F, asInt(lda, "lda"), strideA, &beta, C, CUDA_R_32F, asInt(ldc, "ldc"), strideC, count,
            path == GemmPath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
        return;
    }
    // 16-bit operands with fp32 sums: every product's operands converted into one dense
    // batch each (exact: they hold compute-format values), then one batched call.
    const int fmt = precision.compute == Format::bf16 ? cudakernels::kBf16 : cudakernels::kFp16;
    const cudaDataType type16 = precision.compute == Format::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    auto* a16 = a16_.reserveFor<std::uint16_t>(static_cast<std::size_t>(batch * rowsA * colsA));
    auto* b16 = b16_.reserveFor<std::uint16_t>(static_cast<std::size_t>(batch * rowsB * colsB));
    PLAB_CUDA_CHECK(cudakernels::launchTo16BitBatched(fmt, A, lda, strideA, rowsA, colsA, batch, a16, stream()));
    PLAB_CUDA_CHECK(cudakernels::launchTo16BitBatched(fmt, B, ldb, strideB, rowsB, colsB, batch, b16, stream()));
    PLAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_.get(), op(transB), op(transA), m, n, k, &one, b16, type16,
                                                 asInt(colsB, "ldb"), rowsB * colsB, a16, type16, asInt(colsA, "lda"),
                                                 rowsA * colsA, &beta, C, CUDA_R_32F, asInt(ldc, "ldc"), strideC,
                                                 count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace plab::cuda
