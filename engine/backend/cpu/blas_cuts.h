// How OpenBLAS's sgemm sums a product that is cut into pieces: which cuts give every
// element the sum the whole product gives (docs/ARITHMETIC.md, "Packed blocks").
#pragma once

#include <cstdint>

namespace plab::cpu {

// Whether this CPU's OpenBLAS kernels sum a product cut into blocks of rows or columns as
// they sum the whole: its SkylakeX kernels do (and Cooperlake's, which are SkylakeX's for
// sgemm); its Haswell and Zen kernels, which AVX2-only CPUs get, do not.
bool blasCutsSumAlike();

// The length of the blocks OpenBLAS's sgemm driver cuts a product's sum (K) into: it sums
// an element block by block, adding each block's sum to C, and cuts off whole blocks while
// at least two are left (the rest in two halves). So a product cut along K at multiples of
// this length, with beta 1 after the first piece and the last piece at least this long,
// gives every element the whole product's sum. Found once, on first use, by cutting a
// single-threaded product at multiples of 16 up to 1,024 and comparing the bits with the
// whole (320 on Debian's 0.3.21 Cooperlake, Haswell and Zen kernels, 448 on SkylakeX);
// 0 where no cut gives them.
std::int64_t blasReductionBlock();

// How CpuBackend::sgemm cuts a product with an (M, N) result for its threads: along the
// longer of M and N (the columns when N >= M) into blocks a multiple of 16 wide (the
// AVX-512 kernels' width), the last narrower; one block (the whole call) below 2 pieces.
struct SgemmCut {
    bool columns = true;      // N cut (else M)
    std::int64_t extent = 0;  // N or M
    std::int64_t block = 0;   // the blocks' width
    std::int64_t blocks = 1;
    std::int64_t narrowest() const { return extent - (blocks - 1) * block; }
};
SgemmCut sgemmCut(std::int64_t M, std::int64_t N, std::int64_t pieces);
// The most pieces that cut takes for an (M, N) result, whatever K: at most `most`, each at
// least 32 wide. A product of K takes the fewer of that and M * N * K / 2^21 (each piece at
// least 2^21 multiply-adds).
std::int64_t sgemmMostPieces(std::int64_t most, std::int64_t M, std::int64_t N);
std::int64_t sgemmPieces(std::int64_t most, std::int64_t M, std::int64_t N, std::int64_t K);

// ComputeBackend::gemmReductionCut for OpenBLAS's products cut so (at most `most` pieces):
// a multiple of blasReductionBlock() at which every piece of the sum is cut into M or N as
// the whole product is, and each call is past OpenBLAS's small-matrix kernels, which sum
// without the driver's blocks (at least 2^21 multiply-adds a call: measured, a 40 x 8 call
// of 1.02 million summed as the whole, one of 0.31 million did not); 0 where no block was
// found.
std::int64_t blasReductionCut(std::int64_t most, std::int64_t M, std::int64_t N);

}  // namespace plab::cpu
