// The CPU's element-wise layer ops on packed 16-bit tensors (see packed_ops.h).
#include "backend/cpu/packed_ops.h"

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/row_sums.h"
#include "numerics/storage_convert.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace plab::cpu {

namespace {

constexpr std::int64_t kChunk = 4096;   // values widened at a time (on the stack)

std::uint16_t nanAbove(Format f) { return f == Format::fp16 ? 0x7C00u : 0x7F80u; }

// x <= 0 for a 16-bit pattern: a zero of either sign, or a negative number (not a NaN).
inline bool atMostZero(std::uint16_t b, std::uint16_t infBits)
{
    const std::uint16_t magnitude = b & 0x7FFFu;
    return magnitude == 0 || ((b & 0x8000u) && magnitude <= infBits);
}

// body(row, c0, c1) for the pieces of rows that the values [begin, end) of a rows x cols
// matrix, numbered row by row, cover.
template <typename Body>
void forRowPieces(std::int64_t begin, std::int64_t end, std::int64_t cols, Body&& body)
{
    while (begin < end) {
        const std::int64_t r = begin / cols, c0 = begin % cols, c1 = std::min(cols, c0 + (end - begin));
        body(r, c0, c1);
        begin += c1 - c0;
    }
}

}  // namespace

void addBiasRoundTo16(ThreadPool& pool, Format f, Strided<const float> x, const float* bias, Strided<std::uint16_t> out,
                      std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist)
{
    parallelForCounted(pool, rows * cols, 1 << 14, stats, hist,
                       [&](std::int64_t begin, std::int64_t end, RoundingStats* s, GradientHistogram* h) {
                           forRowPieces(begin, end, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
                               float sum[kChunk];
                               const float b = bias[r];
                               const float* in = x.data + r * x.ld;
                               for (std::int64_t first = c0; first < c1; first += kChunk) {
                                   const std::int64_t last = std::min(c1, first + kChunk);
                                   for (std::int64_t i = first; i < last; ++i) sum[i - first] = in[i] + b;
                                   roundArrayTo16(f, sum, out.data + r * out.ld + first,
                                                  static_cast<std::size_t>(last - first), s, h);
                               }
                           });
                       });
}

void widen16(ThreadPool& pool, Format f, Strided<const std::uint16_t> src, Strided<float> dst, std::int64_t rows,
             std::int64_t cols)
{
    pool.parallelFor(rows * cols, 1 << 16, [&](std::int64_t b, std::int64_t e) {
        forRowPieces(b, e, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
            widenArray(f, src.data + r * src.ld + c0, dst.data + r * dst.ld + c0, static_cast<std::size_t>(c1 - c0));
        });
    });
}

void roundTo16(ThreadPool& pool, Format f, Strided<const float> src, Strided<std::uint16_t> dst, std::int64_t rows,
               std::int64_t cols, RoundingStats* stats, GradientHistogram* hist)
{
    parallelForCounted(pool, rows * cols, 1 << 16, stats, hist,
                       [&](std::int64_t b, std::int64_t e, RoundingStats* s, GradientHistogram* h) {
                           forRowPieces(b, e, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
                               roundArrayTo16(f, src.data + r * src.ld + c0, dst.data + r * dst.ld + c0,
                                              static_cast<std::size_t>(c1 - c0), s, h);
                           });
                       });
}

void sumRows16(ThreadPool& pool, Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out)
{
    // As sumRows adds, the values widened a piece at a time.
    pool.parallelFor(rows, 8, [&](std::int64_t r0, std::int64_t r1) {
        sumRowsInOrder(
            r0, r1, cols,
            [&](std::int64_t r, std::int64_t c0, std::int64_t n, float* buffer) {
                widenArray(f, x + r * cols + c0, buffer, static_cast<std::size_t>(n));
                return static_cast<const float*>(buffer);
            },
            out);
    });
}

void relu16(ThreadPool& pool, Format f, std::uint16_t* x, std::int64_t n)
{
    const std::uint16_t inf = nanAbove(f);
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) x[i] = atMostZero(x[i], inf) ? std::uint16_t{0} : x[i];
    });
}

void reluBackward16(ThreadPool& pool, Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n)
{
    const std::uint16_t inf = nanAbove(f);
    pool.parallelFor(n, 1 << 15, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) g[i] = atMostZero(y[i], inf) ? std::uint16_t{0} : g[i];
    });
}

void maxPool2x2Packed(ThreadPool& pool, Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H,
                      std::int64_t W, std::uint16_t* out, std::uint8_t* argmax)
{
    // A plane widened at a time, pooled by the fp32 kernel (its winners and positions),
    // then the winners' own bits copied: no rounding anywhere.
    const std::int64_t Ho = H / 2, Wo = W / 2;
    pool.parallelFor(planes, 8, [&](std::int64_t p0, std::int64_t p1) {
        std::vector<float> plane(static_cast<std::size_t>(H * W));
        std::vector<float> pooled(static_cast<std::size_t>(Ho * Wo));
        for (std::int64_t p = p0; p < p1; ++p) {
            const std::uint16_t* src = in + p * H * W;
            widenArray(f, src, plane.data(), plane.size());
            std::uint8_t* at = argmax + p * Ho * Wo;
            maxPool2x2Plane(plane.data(), H, W, pooled.data(), at);
            std::uint16_t* dst = out + p * Ho * Wo;
            for (std::int64_t y = 0; y < Ho; ++y)
                for (std::int64_t x = 0; x < Wo; ++x) {
                    const int k = at[y * Wo + x];
                    dst[y * Wo + x] = src[(2 * y + k / 2) * W + 2 * x + k % 2];
                }
        }
    });
}

}  // namespace plab::cpu
