// im2col / col2im for stride-1 convolutions with zero padding, parallel over (row, sample)
// planes so that even conv1 (9 rows) splits evenly over the threads.
#include "backend/cpu/im2col.h"

#include "numerics/quantize.h"
#include "numerics/storage_convert.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace plab::cpu {

namespace {

void checkGeometry(const ConvGeometry& g, std::int64_t n0, std::int64_t count)
{
    if (g.kernel != 2 * g.pad + 1 || g.channels <= 0 || g.height <= 0 || g.width <= 0 ||
        n0 < 0 || count < 0 || n0 + count > g.batch)
        throw std::invalid_argument("im2col needs a same-size stride-1 convolution and a sample range inside the batch.");
}

// One shifted copy of an (H, W) plane: dst[y][x] = src[y + dy][x + dx], zero outside
// (all bits zero: +0 in fp32, and in fp16 and bf16 patterns).
template <typename T>
void shiftedCopy(const T* src, T* dst, std::int64_t H, std::int64_t W, int dy, int dx)
{
    const std::int64_t xs = std::max<std::int64_t>(0, -dx), xe = std::min<std::int64_t>(W, W - dx);
    for (std::int64_t y = 0; y < H; ++y) {
        T* d = dst + y * W;
        const std::int64_t sy = y + dy;
        if (sy < 0 || sy >= H || xs >= xe) {
            std::memset(d, 0, sizeof(T) * static_cast<std::size_t>(W));
            continue;
        }
        const T* s = src + sy * W + dx;
        for (std::int64_t x = 0; x < xs; ++x) d[x] = T{0};
        std::memcpy(d + xs, s + xs, sizeof(T) * static_cast<std::size_t>(xe - xs));
        for (std::int64_t x = xe; x < W; ++x) d[x] = T{0};
    }
}

// The adjoint of shiftedCopy: dst[y + dy][x + dx] += src[y][x] where inside.
void shiftedAdd(const float* src, float* dst, std::int64_t H, std::int64_t W, int dy, int dx)
{
    const std::int64_t xs = std::max<std::int64_t>(0, -dx), xe = std::min<std::int64_t>(W, W - dx);
    for (std::int64_t y = 0; y < H; ++y) {
        const std::int64_t sy = y + dy;
        if (sy < 0 || sy >= H) continue;
        const float* s = src + y * W;
        float* d = dst + sy * W + dx;
        for (std::int64_t x = xs; x < xe; ++x) d[x] += s[x];
    }
}

template <typename T>
void lowerRows(ThreadPool& pool, const ConvGeometry& g, const T* src, std::int64_t n0, std::int64_t count, T* cols)
{
    checkGeometry(g, n0, count);
    const std::int64_t hw = g.planeSize(), k2 = g.kernel * g.kernel;
    const std::int64_t rowLength = count * hw;
    // One item = one row of cols for one sample: an (H, W) shifted copy.
    pool.parallelFor(g.patchSize() * count, std::max<std::int64_t>(1, 16384 / hw),
                     [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t row = item / count, n = item % count;
            const std::int64_t c = row / k2, kk = row % k2;
            const int ky = static_cast<int>(kk / g.kernel), kx = static_cast<int>(kk % g.kernel);
            const T* plane = src + (c * g.batch + n0 + n) * hw;   // (H, W) of sample n0 + n
            shiftedCopy(plane, cols + row * rowLength + n * hw, g.height, g.width, ky - g.pad, kx - g.pad);
        }
    });
}

}  // namespace

void im2colBatch(ThreadPool& pool, const ConvGeometry& g, const float* src, std::int64_t n0,
                 std::int64_t count, float* cols)
{
    lowerRows(pool, g, src, n0, count, cols);
}

void im2colBatch16(ThreadPool& pool, const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0,
                   std::int64_t count, std::uint16_t* cols)
{
    lowerRows(pool, g, src, n0, count, cols);
}

namespace {

// One item = one (channel, sample) plane: widened once into a plane buffer, then its
// k * k shifted copies, so that no widened copy of the block exists.
template <typename Widen>
void lowerWidenedPlanes(ThreadPool& pool, const ConvGeometry& g, std::int64_t n0, std::int64_t count, float* cols,
                        const Widen& widen)
{
    checkGeometry(g, n0, count);
    const std::int64_t hw = g.planeSize(), k2 = g.kernel * g.kernel;
    const std::int64_t rowLength = count * hw;
    pool.parallelFor(g.channels * count, std::max<std::int64_t>(1, 2048 / hw), [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> plane(static_cast<std::size_t>(hw));
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t c = item / count, n = item % count;
            widen((c * g.batch + n0 + n) * hw, plane.data(), plane.size());
            for (std::int64_t kk = 0; kk < k2; ++kk) {
                const int ky = static_cast<int>(kk / g.kernel), kx = static_cast<int>(kk % g.kernel);
                shiftedCopy(plane.data(), cols + (c * k2 + kk) * rowLength + n * hw, g.height, g.width, ky - g.pad,
                            kx - g.pad);
            }
        }
    });
}

}  // namespace

void im2colBatchWidened(ThreadPool& pool, Format f, const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0,
                        std::int64_t count, float* cols)
{
    lowerWidenedPlanes(pool, g, n0, count, cols, [&](std::int64_t at, float* plane, std::size_t n) {
        widenArray(f, src + at, plane, n);
    });
}

void im2colBatchDecoded(ThreadPool& pool, MiniFormat element, float scaleInv, const ConvGeometry& g,
                        const std::uint8_t* src, std::int64_t n0, std::int64_t count, float* cols)
{
    lowerWidenedPlanes(pool, g, n0, count, cols, [&](std::int64_t at, float* plane, std::size_t n) {
        decodeScaled(element, src + at, plane, n, scaleInv);
    });
}

void im2colInParts(ThreadPool& pool, const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count,
                   float* cols, std::int64_t band,
                   const std::function<void(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>& part)
{
    checkGeometry(g, n0, count);
    const std::int64_t hw = g.planeSize(), k2 = g.kernel * g.kernel, K = g.patchSize();
    const std::int64_t rowLength = count * hw;
    auto lower = [&](std::int64_t row, std::int64_t n) {
        const std::int64_t c = row / k2, kk = row % k2;
        const int ky = static_cast<int>(kk / g.kernel), kx = static_cast<int>(kk % g.kernel);
        shiftedCopy(src + (c * g.batch + n0 + n) * hw, cols + row * rowLength + n * hw, g.height, g.width,
                    ky - g.pad, kx - g.pad);
    };
    if (band <= 0) {
        pool.parallelFor(K, 1, [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t row = begin; row < end; ++row) {
                for (std::int64_t n = 0; n < count; ++n) lower(row, n);
                part(row, 1, 0, rowLength);
            }
        });
        return;
    }
    const std::int64_t bands = (K + band - 1) / band;
    // One item = one band of one sample: band * H * W values (32 x 196 floats for
    // small-cnn's conv2, 25 KiB).
    pool.parallelFor(bands * count, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t row0 = (item / count) * band, n = item % count;
            const std::int64_t rows = std::min(band, K - row0);
            for (std::int64_t row = row0; row < row0 + rows; ++row) lower(row, n);
            part(row0, rows, n * hw, hw);
        }
    });
}

void col2imBatch(ThreadPool& pool, const ConvGeometry& g, const float* cols, std::int64_t n0,
                 std::int64_t count, float* dst, std::int64_t colsLd)
{
    checkGeometry(g, n0, count);
    const std::int64_t hw = g.planeSize(), k2 = g.kernel * g.kernel;
    if (colsLd != 0 && colsLd < count * hw) throw std::invalid_argument("col2im got rows shorter than its columns.");
    const std::int64_t rowLength = colsLd != 0 ? colsLd : count * hw;
    // One item = one (channel, sample) plane of dst, summed from its k*k rows in a fixed
    // order (deterministic, no write conflicts between threads).
    pool.parallelFor(g.channels * count, std::max<std::int64_t>(1, 4096 / hw),
                     [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t c = item / count, n = item % count;
            float* plane = dst + (c * g.batch + n0 + n) * hw;   // (H, W)
            std::memset(plane, 0, sizeof(float) * static_cast<std::size_t>(hw));
            for (std::int64_t kk = 0; kk < k2; ++kk) {
                const int ky = static_cast<int>(kk / g.kernel), kx = static_cast<int>(kk % g.kernel);
                shiftedAdd(cols + (c * k2 + kk) * rowLength + n * hw, plane, g.height, g.width,
                           ky - g.pad, kx - g.pad);
            }
        }
    });
}

}  // namespace plab::cpu
