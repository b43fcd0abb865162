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

}  // namespace plab::cpu
