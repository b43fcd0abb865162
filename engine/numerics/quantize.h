// Bulk quantisation of fp32 arrays to the formats below 16 bits (minifloat.h) with a
// scale, as the FP8 and MX recipes quantise matmul/conv inputs:
// - per tensor: q = round_f(x * scale), saturating, and the value written is q * scaleInv
//   (Transformer Engine keeps scaleInv = 1 / scale beside the FP8 data; cuBLASLt multiplies
//   the fp32 sum by the two operands' scaleInv instead, so the emulation's operands differ
//   from the hardware's by at most one fp32 rounding each, 2^-24 relative, far below the
//   FP8 step of 2^-3 or 2^-4);
// - per block (OCP MX v1.0): blocks of kMxBlockSize consecutive elements along a row or
//   along a column of a matrix share 2^e, e = floor(log2(amax of the block)) - emax of the
//   element format (clamped to E8M0's [-127, 127]); P = round_f(x / 2^e), saturating, and
//   the value written is P * 2^e, exact.
// The statistics describe the values given to the element format (x * scale, x / 2^e):
// count, zerosIn, nan, infIn as for roundArray; underflow: nonzero finite values that
// became 0; subnormal: results subnormal in f; overflow: finite values beyond f's largest
// finite value, saturated to it. The histogram is of |x * scale| (|x / 2^e|) before
// rounding, so f's range can be drawn over it. Every value the kernels write equals
// roundToMini / mxQuantize of minifloat.h (the tests compare them over every pattern).
// Per tensor, FP8 can also be held as its codes, a byte a value (quantizeToCodes), and
// decoded into the values above (decodeScaled), bit for bit.
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/rounding_stats.h"

#include <cstddef>
#include <cstdint>

namespace plab {

// The largest |x| of src[0..n): NaN when one is NaN, +inf when one is infinite; 0 for n = 0.
float amaxOf(const float* src, std::size_t n);

// Per-tensor quantisation of src into dst (may alias), counts added to stats / hist (may
// be null). Returns amaxOf(src, n), measured in the same pass.
float quantizeScaled(MiniFormat f, const float* src, float* dst, std::size_t n, float scale, float scaleInv,
                     RoundingStats* stats, GradientHistogram* hist);

// quantizeScaled of values packed as `from`'s 16-bit patterns (fp16 or bf16), widened
// (exactly) a cache-sized chunk at a time: one pass from the patterns to the values.
float quantizeScaled(MiniFormat f, Format from, const std::uint16_t* src, float* dst, std::size_t n, float scale,
                     float scaleInv, RoundingStats* stats, GradientHistogram* hist);

// Per-tensor FP8 held as its codes, a byte a value (what FP8 hardware stores): codes[i]
// is the E4M3 or E5M2 bit pattern of q = round(src[i] * scale), counted into stats / hist
// as quantizeScaled counts them; returns amaxOf(src, n). Only f = e4m3 or e5m2.
float quantizeToCodes(MiniFormat f, const float* src, std::uint8_t* codes, std::size_t n, float scale,
                      RoundingStats* stats, GradientHistogram* hist);
// The same for values packed as `from`'s 16-bit patterns (fp16 or bf16), widened (exactly)
// a cache-sized chunk at a time.
float quantizeToCodes(MiniFormat f, Format from, const std::uint16_t* src, std::uint8_t* codes, std::size_t n,
                      float scale, RoundingStats* stats, GradientHistogram* hist);
// amaxOf of values packed so.
float amaxOf(Format from, const std::uint16_t* src, std::size_t n);
// dst[i] = the value of codes[i] times scaleInv, in fp32: what quantizeScaled writes for
// the same scale, bit for bit (a NaN may carry another payload).
void decodeScaled(MiniFormat f, const std::uint8_t* codes, float* dst, std::size_t n, float scaleInv);

// The per-tensor scale of Transformer Engine's delayed and current scaling for an amax:
// largest finite of f / amax / 2^margin, in fp32; `previous` when amax is 0, NaN or
// infinite (the tensor gives no information); fp32's largest finite when the ratio
// overflows.
float fp8ScaleFor(MiniFormat f, float amax, float previous, int margin);

// OCP MX blocks over a row-major matrix (rows, cols) with row stride ld: along each row
// (alongRows: blocks of cols) or along each column (blocks of rows). A partial block at the
// end is a smaller block (as if padded with zeros). blockScales (may be null) gets one
// count per block in the bin of its exponent e (nonFinite for a NaN scale). rounding: the
// shared exponent's (minifloat.h: floor, the OCP reference; ceil, Transformer Engine's).
void quantizeMxBlocks(MiniFormat f, const float* src, float* dst, std::int64_t rows, std::int64_t cols,
                      std::int64_t ld, bool alongRows, RoundingStats* stats, GradientHistogram* hist,
                      GradientHistogram* blockScales, MxScaleRounding rounding = MxScaleRounding::floor);

// NVFP4 blocks (minifloat.h) over a row-major matrix, as quantizeMxBlocks, with blocks of
// kNvfp4BlockSize and the encode scale nvfp4TensorScale(tensorAmax) (the amax of the
// whole tensor, which a caller quantising it in parts gives each part). The statistics
// and the histogram describe V_i * min(1 / (S_b / S_enc), fp32 max), the values given to
// E2M1; in a block whose scale rounded to 0, V_i * S_enc, each nonzero one counted as
// underflowed. blockScales (may be null) gets each block's S_b / S_enc in the bin of its
// exponent (zeros: the scale rounded to 0; nonFinite: a NaN block).
void quantizeNvfp4Blocks(const float* src, float* dst, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         bool alongRows, float tensorAmax, RoundingStats* stats, GradientHistogram* hist,
                         GradientHistogram* blockScales);

// Name of the code path the per-tensor and MX quantisers take now without a histogram
// ("avx512", "avx2", "scalar"), from simdLevel() (numerics/simd_level.h; tests cap it to
// compare the paths bit for bit); with a histogram (histogram steps) they take the scalar path.
const char* quantizePath();

}  // namespace plab
