// GEMM with the sum kept in a reduced format: a rounding after every fused multiply-add,
// sequentially in k (C[i][j] = round(A[i][k] * B[k][j] + C[i][j]) for k = 0, 1, ...).
// fp16 uses AVX-512 FP16's vfmadd*ph where the CPU has it (one rounding per FMA in fp16,
// as a GPU's fp16 accumulation); everything else uses fmaRoundedTo(), an exact emulation,
// run across AVX2 or AVX-512 lanes where the CPU has them. All give the same bits.
#pragma once

#include "backend/backend.h"

#include <cstdint>

namespace plab::cpu {

// round_f(a * b + c) with a single rounding, exactly, for a, b, c representable in f.
// a * b is exact in double; a + b in double is made round-to-odd with TwoSum, then
// round-to-odd to fp32, then rounded to f: round-to-odd at p + 2 or more bits followed by
// round-to-nearest at p bits is the correctly rounded result (Boldo & Melquiond), so there
// is no double-rounding error even for exponent spans wider than double's 53 bits.
float fmaRoundedTo(Format f, float a, float b, float c);

// Double -> float with round-to-odd (truncate, then set the last bit if inexact).
float roundToOddFloat(double x);

// Whether the compiler provides the AVX-512 FP16 intrinsics the fast kernel is written with.
#if (defined(__clang__) && __clang_major__ >= 15) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12)
#define PLAB_HAVE_AVX512FP16 1
#else
#define PLAB_HAVE_AVX512FP16 0
#endif

// The CPU has AVX-512 FP16 (and the OS saves its state), and this build has the kernel.
bool cpuHasAvx512Fp16();

// Row-major dense operands already transposed as needed: A (M, K) with row stride lda,
// B (K, N) with row stride ldb. Computes rows [rowBegin, rowEnd) of C (for parallel use).
void gemmAccumulateScalar(Format f, std::int64_t rowBegin, std::int64_t rowEnd,
                          std::int64_t N, std::int64_t K, const float* A, std::int64_t lda,
                          const float* B, std::int64_t ldb, float beta, float* C,
                          std::int64_t ldc);

// As gemmAccumulateScalar, the same bits, with the output elements' sums run across 8 AVX2
// or 16 AVX-512 lanes as simdLevel() allows (any format; the scalar loop otherwise).
void gemmAccumulateVector(Format f, std::int64_t rowBegin, std::int64_t rowEnd,
                          std::int64_t N, std::int64_t K, const float* A, std::int64_t lda,
                          const float* B, std::int64_t ldb, float beta, float* C,
                          std::int64_t ldc);

// fp16 bit patterns of n fp32 values that are fp16-representable (exact conversion).
void packFp16(const float* src, std::uint16_t* dst, std::int64_t n);

// The AVX-512 FP16 path: A16 (M, K) and B16 (K, N) packed dense fp16; rows
// [rowBegin, rowEnd) of C. Call only when cpuHasAvx512Fp16().
void gemmAccumulateFp16Avx512(std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t N,
                              std::int64_t K, const std::uint16_t* A16, const std::uint16_t* B16,
                              float beta, float* C, std::int64_t ldc);

}  // namespace plab::cpu
