// The bits a 16-bit tensor holds (a tensor's bytes are its format's bytes):
// fp32 values narrowed to fp16 or bf16 bit patterns and widened back. Narrowing rounds to
// nearest even exactly as fp32ToFp16Bits / fp32ToBf16Bits (numerics/format.h) do, so a
// value already rounded to the format is stored exactly; widening is exact (an fp16
// signaling NaN comes back quiet, as vcvtph2ps returns it; no arithmetic makes one). The rounding
// tap into 16-bit storage gives roundArray's values, statistics and histogram, as bits.
// Each dispatches by simdLevel() (AVX-512, AVX2 with F16C, portable), bit for bit alike.
#pragma once

#include "numerics/format.h"
#include "numerics/rounding_stats.h"

#include <cstddef>
#include <cstdint>

namespace plab {

// f is Format::fp16 or Format::bf16 (std::invalid_argument otherwise).
// One element as narrowArray / widenArray convert it (the portable code and the kernels' tails).
std::uint16_t narrowBits(Format f, float x);
float widenBits(Format f, std::uint16_t bits);
void narrowArray(Format f, const float* src, std::uint16_t* dst, std::size_t n);
void widenArray(Format f, const std::uint16_t* src, float* dst, std::size_t n);

// roundArray(f, src, ..., stats, hist) whose results are stored as f's bits: the counts of
// this call are ADDED to stats / hist when non-null.
void roundArrayTo16(Format f, const float* src, std::uint16_t* dst, std::size_t n,
                    RoundingStats* stats = nullptr, GradientHistogram* hist = nullptr);

}  // namespace plab
