// The bias gradients' row sums, each row in order in double from +0 (as they have always
// been summed), eight rows at a time: eight independent chains of additions, where one
// row's chain waits for every addition before the next (a twentieth of the small CNN's step).
#pragma once

#include <algorithm>
#include <cstdint>

namespace plab::cpu {

// out[r] for r in [r0, r1) = float(in-order double sum of row r's cols values).
// rowValues(r, c0, n, buffer) gives a pointer to row r's n values from column c0, either
// where they lie or widened into buffer (room for kRowSumChunk floats).
inline constexpr std::int64_t kRowSumChunk = 512;

template <typename RowValues>
void sumRowsInOrder(std::int64_t r0, std::int64_t r1, std::int64_t cols, RowValues&& rowValues, float* out)
{
    constexpr std::int64_t kRows = 8;
    float buffers[kRows][kRowSumChunk];
    for (std::int64_t r = r0; r < r1; r += kRows) {
        const std::int64_t rows = std::min(kRows, r1 - r);
        double sums[kRows] = {};
        const float* values[kRows] = {};
        for (std::int64_t c0 = 0; c0 < cols; c0 += kRowSumChunk) {
            const std::int64_t n = std::min(kRowSumChunk, cols - c0);
            for (std::int64_t j = 0; j < rows; ++j) values[j] = rowValues(r + j, c0, n, buffers[j]);
            if (rows == kRows) {
                for (std::int64_t i = 0; i < n; ++i)
                    for (std::int64_t j = 0; j < kRows; ++j) sums[j] += values[j][i];
            } else {
                for (std::int64_t j = 0; j < rows; ++j)
                    for (std::int64_t i = 0; i < n; ++i) sums[j] += values[j][i];
            }
        }
        for (std::int64_t j = 0; j < rows; ++j) out[r + j] = static_cast<float>(sums[j]);
    }
}

}  // namespace plab::cpu
