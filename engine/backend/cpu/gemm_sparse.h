// Sums in a reduced format that skip the steps whose product is zero. A step
// c = round(a * b + c) with a = +-0 and b finite leaves c as it was, with one exception: a
// sum that is -0 becomes +0 when the product is +0. So a row of A that is mostly zeros (an
// activation's gradient after ReLU and max pooling: 92% zeros in small-cnn's conv2) needs
// only its nonzero steps, and the skipped ones where a sum is -0 (taken as they are). The
// bits are gemmAccumulateScalar's: every sum keeps its order of k, and every step it takes
// is the same step.
#pragma once

#include "numerics/format.h"

#include <cstdint>
#include <vector>

namespace plab::cpu {

// A matrix read as (rows, cols): element (i, k) at data[i * rowStride + k * colStride].
// A transposed operand is the same storage with the two strides swapped.
struct StridedMatrix {
    const float* data = nullptr;
    std::int64_t rowStride = 0, colStride = 1;
    float at(std::int64_t i, std::int64_t k) const { return data[i * rowStride + k * colStride]; }
};

// The share of zeros (either sign) among the rows x cols values of X, row-major with
// leading dimension ld; 0 for no values.
double zeroShare(const float* X, std::int64_t rows, std::int64_t cols, std::int64_t ld);

// 1 for each row of B (K, N, row-major with leading dimension ldb) that holds an infinity
// or a NaN: a zero of A times such a value is NaN, so those steps are never skipped.
std::vector<std::uint8_t> nonFiniteRows(const float* B, std::int64_t K, std::int64_t N, std::int64_t ldb);

// The steps of k that rows [rowBegin, rowEnd) of A (M, K) must take in
// C[i][j] = round(A[i][k] * B[k][j] + C[i][j]): k with A[i][k] != 0, and every k whose row of
// B is non-finite (nonFiniteRows). Compressed: row rowBegin + r takes the steps
// k[rowStart[r] .. rowStart[r + 1]), in increasing order, with their values of A in a.
struct SumSteps {
    std::int64_t rowBegin = 0;
    std::vector<std::int64_t> rowStart;
    std::vector<std::int32_t> k;
    std::vector<float> a;
};
SumSteps sumSteps(StridedMatrix A, std::int64_t rowBegin, std::int64_t rowEnd, std::int64_t K,
                  const std::vector<std::uint8_t>& nonFiniteRowsOfB);

// Whether gemmAccumulateSkippingZeros can run here (it needs the AVX2 lanes).
bool skipsZeroSteps();

// The rows of `steps` of C = round-after-every-step(A B + beta C), as
// gemmAccumulateScalar computes them bit for bit, taking only those steps (sumSteps for the
// same A and B) and, where a sum is -0, the skipped ones too. B is (K, N) row-major;
// C's element (i, j) is C[i * cRowStride + j * cColStride]. Call only when skipsZeroSteps().
void gemmAccumulateSkippingZeros(Format f, const SumSteps& steps, std::int64_t N, std::int64_t K,
                                 StridedMatrix A, const float* B, std::int64_t ldb, float beta, float* C,
                                 std::int64_t cRowStride, std::int64_t cColStride);

}  // namespace plab::cpu
