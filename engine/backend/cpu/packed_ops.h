// The layers' element-wise ops on tensors packed into their 16-bit storage format (a
// tensor's bytes are its format's bytes), on the CPU. Each gives, bit for bit, what
// the fp32 op of cpu_ops.h gives on the widened values, narrowed again: every one moves
// values, picks one, zeroes, or rounds to the format, so the narrowing is exact.
// The layers use them when PLAB_PACKED_STORAGE=on (nn/layer_ops.h, packsStorage).
#pragma once

#include "backend/cpu/thread_pool.h"
#include "numerics/format.h"
#include "numerics/rounding_stats.h"

#include <cstdint>

namespace plab::cpu {

// A block of a matrix: row r at data + r * ld.
template <typename T>
struct Strided {
    T* data;
    std::int64_t ld;
};

// out (packed in f, fp16 or bf16) = round_f(x + bias[r]) in row r, x the fp32 result of a
// GEMM (rows x cols); counts as addBiasRound's.
void addBiasRoundTo16(ThreadPool& pool, Format f, Strided<const float> x, const float* bias, Strided<std::uint16_t> out,
                      std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist);
// widenArray and roundArrayTo16 over the pool's threads (the counts merged: sums).
void widen16(ThreadPool& pool, Format f, Strided<const std::uint16_t> src, Strided<float> dst, std::int64_t rows,
             std::int64_t cols);
void roundTo16(ThreadPool& pool, Format f, Strided<const float> src, Strided<std::uint16_t> dst, std::int64_t rows,
               std::int64_t cols, RoundingStats* stats, GradientHistogram* hist);
// sumRows (cpu_ops.h) of the widened values: each row summed in double, in order.
void sumRows16(ThreadPool& pool, Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out);
// max(0, x) in place; NaN kept.
void relu16(ThreadPool& pool, Format f, std::uint16_t* x, std::int64_t n);
// g = 0 where y <= 0.
void reluBackward16(ThreadPool& pool, Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n);
// maxPool2x2 of cpu_ops.h: the same winners and positions, the winner's bits copied.
void maxPool2x2Packed(ThreadPool& pool, Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H,
                      std::int64_t W, std::uint16_t* out, std::uint8_t* argmax);
// maxPool2x2Backward and transposeBlocks move values without looking at them: their
// uint16_t overloads in cpu_ops.h serve packed tensors.

}  // namespace plab::cpu
