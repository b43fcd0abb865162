// Internal to numerics: what the bulk rounding and the quantisers share between their
// portable code and their AVX2 / AVX-512 kernels: the histogram-by-exponent-byte folding,
// and (in the kernel files) the x86 intrinsics with the target attributes. Which kernels
// run is numerics/simd_level.h's simdLevel().
#pragma once

#include "numerics/rounding_stats.h"
#include "numerics/simd_level.h"

#include <cstdint>

namespace plab::detail {

// Histogram of |x| by fp32 biased exponent byte: byte b in 1..254 is the binade
// [2^(b-127), 2^(b-126)), 255 is inf/NaN, 0 holds zeros and fp32 subnormals. The kernels
// count bytes (cheap) and put subnormal inputs, which are rare, in their bins themselves;
// this folds the byte counts into the histogram (bulk_round.cpp).
void addExponentByteCounts(const std::uint64_t (&byteCounts)[256], std::uint64_t subnormalInputs,
                           GradientHistogram& hist);
// floor(log2 |x|) of an fp32 subnormal pattern: -149 + index of the leading mantissa bit.
int subnormalExponent(std::uint32_t absBits);

}  // namespace plab::detail

// For the kernel files: the intrinsics, and PLAB_AVX512 / PLAB_AVX2 to compile one function
// for AVX-512 or AVX2 (function-level target attributes keep the rest of the build baseline
// x86-64).
#if defined(PLAB_SIMD_KERNELS) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define PLAB_HAVE_X86 1
#define PLAB_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define PLAB_AVX2 __attribute__((target("avx2,fma,f16c")))
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn about it once
// inlined (GCC bug 105593, fixed in GCC 13): silence that false positive in kernel files.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif
