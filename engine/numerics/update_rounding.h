// How an optimizer's write to 16-bit weights rounds, beside round-to-nearest: the random
// bits of stochastic rounding and the stochastic rounding itself, on fp32 bit patterns.
// Written once for the CPU (numerics/update_math.cpp) and the CUDA kernels
// (backend/cuda/kernel_math.h): C++17, integer arithmetic only, no engine header, so the
// two backends give the same bits for the same key.
//
// Stochastic rounding of x to a format rounds it to one of its two neighbours in the format,
// the one further from zero with a probability equal to x's distance from the nearer-to-zero
// one, in units of their spacing (Gupta et al. 2015; Zamirai et al. 2020 for bf16 training).
// Its expectation is x, so updates far below the weights' spacing are not lost on average.
// The probability is taken from 32 random bits: exact wherever the distance is a multiple
// of 2^-32 of the spacing, which holds for every fp32 value rounded to bf16 (16 bits cut),
// to tf32 (13), and to fp16 from 2^-33 up; below that (fp16's subnormal spacing is 2^-24)
// it is rounded up to the next multiple of 2^-32.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PLAB_UPDATE_HD __host__ __device__ __forceinline__
#else
#define PLAB_UPDATE_HD inline
#endif

namespace plab::update_rounding {

// As plab::Format (checked with static_assert in update_math.cpp): fp32, tf32, fp16, bf16.
enum FormatCode : int { kFp32 = 0, kTf32 = 1, kFp16 = 2, kBf16 = 3 };

// How the weights' write rounds (plab::UpdateRounding has the same values).
enum Mode : int { kNearest = 0, kStochastic = 1, kKahan = 2 };

// SplitMix64's finaliser (Steele, Lea and Flood 2014): a bijection of 64-bit words whose
// outputs for consecutive inputs pass BigCrush.
PLAB_UPDATE_HD std::uint64_t mix64(std::uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The key of one tensor's update at one step: the run's seed, the tensor's own update count
// and a hash of its name, each mixed in turn, so no two (seed, step, tensor) share a key by
// an accident of their sum.
PLAB_UPDATE_HD std::uint64_t stepKey(std::uint64_t seed, std::uint64_t step, std::uint64_t tensor)
{
    return mix64(mix64(mix64(seed) ^ step) ^ tensor);
}

// A counter-based generator: 32 random bits for element `index` of the tensor whose step
// key is `key`; the same on every backend, in every order of the elements.
PLAB_UPDATE_HD std::uint32_t randomBits(std::uint64_t key, std::uint64_t index)
{
    return static_cast<std::uint32_t>(mix64(key ^ mix64(index)) >> 32);
}

// The fp32 bit pattern of x (bits `x`) rounded stochastically to `format` with the random
// bits r: up (away from zero) when r / 2^32 is below x's distance from the neighbour nearer
// zero, in units of the format's spacing there. fp32, a value the format holds, inf and NaN
// come back unchanged. fp16 values from 2^16 up become inf (the next power of two past its
// largest finite value stands for the overflow, as round-to-nearest's boundary 65520 does).
PLAB_UPDATE_HD std::uint32_t stochasticRoundBits(int format, std::uint32_t x, std::uint32_t r)
{
    if (format == kFp32) return x;
    const std::uint32_t sign = x & 0x80000000u, magnitude = x & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u) return x;   // inf, NaN
    if (format == kFp16 && magnitude >= (143u << 23)) return sign | 0x7F800000u;   // 2^16 and up: inf
    const std::uint32_t biased = magnitude >> 23;
    // How many low bits of the pattern lie below the format's spacing at x.
    int cut = format == kBf16 ? 16 : 13;
    if (format == kFp16 && biased < 113) cut = biased == 0 ? 125 : 126 - static_cast<int>(biased);   // below 2^-14
    std::uint32_t rounded = 0;
    if (cut <= 23) {
        // Within one binade the patterns count the spacing linearly, and a carry out of the
        // fraction is the next binade's first value: adding cut random bits and dropping them
        // rounds up with probability (the dropped bits) / 2^cut.
        const std::uint32_t low = magnitude & ((1u << cut) - 1u);
        if (low == 0) return x;
        rounded = magnitude - low;
        if ((r >> (32 - cut)) < low) rounded += 1u << cut;
    } else {
        // fp16 below 2^-24 (its smallest subnormal, spacing 2^-24): 0 or 2^-24. The
        // significand m with its implicit bit counts units of 2^-24 / 2^cut.
        const std::uint32_t m = biased == 0 ? magnitude : (magnitude & 0x7FFFFFu) | 0x800000u;
        if (m == 0) return x;
        bool up = false;
        if (cut <= 32)
            up = (r >> (32 - cut)) < m;
        else if (cut - 32 < 24)
            up = (static_cast<std::uint64_t>(r) << (cut - 32)) < m;
        else
            up = r == 0;   // the probability m / 2^cut is below 2^-32: rounded up to 2^-32
        rounded = up ? (103u << 23) : 0u;   // 2^-24 or 0
    }
    if (format == kFp16 && rounded >= (143u << 23)) rounded = 0x7F800000u;   // up from 65504: inf
    return sign | rounded;
}

}  // namespace plab::update_rounding
