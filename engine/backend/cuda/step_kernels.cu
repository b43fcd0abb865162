// The kernels of a training step beyond GEMM and rounding: ReLU, 2x2 max pooling, the block
// transpose of Flatten, the bias-gradient sums, softmax cross-entropy, the gradient sweep of
// loss scaling, SGD and Adam. The arithmetic is kernel_math.h's (checked on the host against
// the CPU reference); this file maps it onto threads. Reductions use a fixed tree, so a
// result never depends on scheduling: the same inputs give the same bits on every run.
#include "backend/cuda/device_common.cuh"
#include "backend/cuda/kernels.h"

#include <algorithm>

namespace plab::cudakernels {

namespace {

// The halving tree of blockSum pairs slot t with t + half for half = kThreads / 2 .. 1.
static_assert(kThreads >= 32 && (kThreads & (kThreads - 1)) == 0, "kThreads must be a power of two");

// The sum of v over the block, in a fixed tree order (it depends on blockDim.x only); the
// result is valid in thread 0. Every thread of the block must call it: it has barriers.
// The kernels that call it are launched with kThreads threads and declare
// __launch_bounds__(kThreads), so a larger block fails to launch instead of writing past
// `partial`; a smaller one still sums correctly, its missing partners skipped (not added
// as zeros, which would turn a -0 sum into +0).
__device__ double blockSum(double v)
{
    __shared__ double partial[kThreads];
    __syncthreads();   // an earlier call's partial[0] may still be being read
    partial[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = kThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half && threadIdx.x + half < blockDim.x)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    return partial[0];
}

// Adds the UpdateSlot bits of each thread's elements to the block's counts, then to the
// global counters with one atomic per nonzero count per block.
__device__ void countUpdates(unsigned* local, unsigned mask)
{
    for (int slot = 0; slot < kUpdateSlots; ++slot)
        if (mask & (1u << slot)) atomicAdd(&local[slot], 1u);
}

__device__ void publishUpdates(const unsigned* local, unsigned long long* counters)
{
    __syncthreads();
    if (threadIdx.x < kUpdateSlots && local[threadIdx.x] != 0)
        atomicAdd(&counters[threadIdx.x], static_cast<unsigned long long>(local[threadIdx.x]));
}

__global__ void reluKernel(float* x, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) x[i] = reluValue(x[i]);
}

__global__ void reluBackwardKernel(const float* y, float* g, long long n)
{
    for (long long i = firstIndex(); i < n; i += gridStride()) g[i] = reluGradient(y[i], g[i]);
}

// One thread per output element; the window's maximum stays in registers (poolMax).
__global__ void maxPoolKernel(PoolShape s, const float* in, float* out, std::uint8_t* argmax, long long total)
{
    for (long long o = firstIndex(); o < total; o += gridStride()) {
        const float* w = in + poolWindowStart(s, o);
        const PoolMax best = poolMax(w[0], w[1], w[s.width], w[s.width + 1]);
        out[o] = best.value;
        argmax[o] = static_cast<std::uint8_t>(best.position);
    }
}

// One thread per input element: a gather, so every element of dx is written exactly once
// (zeros included) without a separate memset and without atomics.
__global__ void maxPoolBackwardKernel(PoolShape s, const float* g, const std::uint8_t* argmax, float* dx,
                                      long long total)
{
    for (long long i = firstIndex(); i < total; i += gridStride()) {
        int position = 0;
        const long long o = poolOutputOf(s, i, &position);
        dx[i] = (o >= 0 && argmax[o] == position) ? g[o] : 0.0f;
    }
}

__global__ void transposeBlocksKernel(const float* in, long long A, long long B, long long inner, float* out)
{
    for (long long o = firstIndex(); o < A * B * inner; o += gridStride())
        out[o] = in[transposeBlocksSource(A, B, inner, o)];
}

// sumRows splits each row into parts, one block each: a conv layer's bias gradient has few
// rows (16 to 64 channels) of up to millions of floats, so one block per row would leave
// most of a large GPU idle. The split depends on the shape only, never on the device, so
// the sums are the same on every GPU and every run.
constexpr long long kRowSumBlocks = 1024;             // an H100's 132 SMs hold 8 blocks each: one wave
constexpr long long kRowSumMinPart = 16LL * kThreads; // smaller parts would mostly wait for the tree
constexpr int kRowSumAccumulators = 4;                // loads in flight per thread

struct RowSplit {
    long long parts;      // per row
    long long partSize;   // floats, a multiple of kThreads; the last part of a row may be shorter
};

RowSplit rowSplit(long long rows, long long cols)
{
    const long long wanted = std::max(1LL, (kRowSumBlocks + rows - 1) / rows);
    const long long useful = std::max(1LL, (cols + kRowSumMinPart - 1) / kRowSumMinPart);
    const long long parts = std::min(wanted, useful);
    // Parts start at multiples of kThreads floats from the row's start, so each warp's
    // loads stay within as few 128-byte lines as the row's alignment allows.
    const long long partSize = std::max(1LL, ((cols + parts - 1) / parts + kThreads - 1) / kThreads) * kThreads;
    return {std::max(1LL, (cols + partSize - 1) / partSize), partSize};
}

// An element's value: fp32 as it is, a packed 16-bit pattern (of format f) widened.
__device__ __forceinline__ float valueOf(float x, int) { return x; }
__device__ __forceinline__ float valueOf(std::uint16_t h, int f) { return __uint_as_float(widenBits16(f, h)); }

// Pass one of sumRows: block b sums part b % parts of row b / parts into partials[b], in
// double. Each thread keeps kRowSumAccumulators independent sums, taking its elements in
// turn (so that several loads are in flight rather than one add waiting for the next),
// pairs them in a fixed order, then the block's tree. Deterministic: nothing depends on
// scheduling. T: float, or the patterns of packed values of format f (sumRows16: the same
// additions on the widened values, so the same bits as sumRows on them).
template <typename T>
__global__ void __launch_bounds__(kThreads)
sumRowPartsKernel(const T* x, int f, long long rows, long long cols, RowSplit split, double* partials)
{
    static_assert(kRowSumAccumulators == 4, "the pairing below adds four sums");
    constexpr long long kRound = static_cast<long long>(kRowSumAccumulators) * kThreads;
    for (long long b = blockIdx.x; b < rows * split.parts; b += gridDim.x) {   // uniform in the block
        const T* row = x + (b / split.parts) * cols;
        const long long begin = (b % split.parts) * split.partSize;
        const long long end = begin + split.partSize < cols ? begin + split.partSize : cols;
        double acc[kRowSumAccumulators] = {0.0, 0.0, 0.0, 0.0};
        long long c = begin + threadIdx.x;
        for (; c + kRound - kThreads < end; c += kRound) {   // all of this round's elements exist
#pragma unroll
            for (int k = 0; k < kRowSumAccumulators; ++k) acc[k] += valueOf(row[c + k * kThreads], f);
        }
#pragma unroll
        for (int k = 0; k < kRowSumAccumulators; ++k)   // the last, partial round
            if (c + k * kThreads < end) acc[k] += valueOf(row[c + k * kThreads], f);
        const double sum = blockSum((acc[0] + acc[1]) + (acc[2] + acc[3]));
        if (threadIdx.x == 0) partials[b] = sum;
    }
}

// Pass two: one block per row adds its parts' sums in a fixed order (thread t takes parts
// t, t + kThreads, ..., then the tree) and rounds once to fp32.
__global__ void __launch_bounds__(kThreads)
sumRowPartialsKernel(const double* partials, long long rows, long long parts, float* out)
{
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        double sum = 0.0;
        for (long long p = threadIdx.x; p < parts; p += kThreads) sum += partials[r * parts + p];
        sum = blockSum(sum);
        if (threadIdx.x == 0) out[r] = static_cast<float>(sum);
    }
}

// sumColumns stages a tile of rows into shared memory, loaded by the whole block (the rows
// of a column chunk are contiguous when the chunk is all the columns, so the loads
// coalesce whatever the width), then thread t adds column t's values from the tile in row
// order: exactly the CPU's double sum, bit for bit. The tile holds kColumnTile floats:
// kColumnTile / width rows (at least 8). Two tiles alternate, so the block loads the next
// tile while the column threads still add the last one, with one barrier per tile.
constexpr int kColumnTile = 8 * kThreads;

// One block per chunk of kThreads columns (a grid-stride loop over chunks).
__global__ void __launch_bounds__(kThreads)
sumColumnsKernel(const float* x, long long rows, long long cols, float* out)
{
    __shared__ float tiles[2][kColumnTile];
    const int t = static_cast<int>(threadIdx.x);
    const long long chunkStride = static_cast<long long>(gridDim.x) * kThreads;
    for (long long c0 = static_cast<long long>(blockIdx.x) * kThreads; c0 < cols; c0 += chunkStride) {
        const int width = cols - c0 < kThreads ? static_cast<int>(cols - c0) : kThreads;
        const int tileRows = kColumnTile / width;
        // Element e of a tile is (row e / width, column e % width) of the chunk; kept as a
        // (row, column) pair stepped by kThreads elements, to avoid a division per load.
        const int rowStep = kThreads / width, colStep = kThreads % width;
        double sum = 0.0;
        int buffer = 0;
        for (long long r0 = 0; r0 < rows; r0 += tileRows, buffer ^= 1) {   // uniform in the block
            const int count = static_cast<int>(rows - r0 < tileRows ? rows - r0 : tileRows) * width;
            float* tile = tiles[buffer];
            // This tile was last read two rounds ago, and every thread reached the last
            // round's barrier after those reads: one barrier per tile is enough.
            int rr = t / width, cc = t % width;
            for (int e = t; e < count; e += kThreads) {
                tile[e] = x[(r0 + rr) * cols + c0 + cc];
                rr += rowStep;
                cc += colStep;
                if (cc >= width) {
                    cc -= width;
                    ++rr;
                }
            }
            __syncthreads();   // the tile is complete
            if (t < width)
                for (int e = t; e < count; e += width) sum += tile[e];
        }
        if (t < width) out[c0 + t] = static_cast<float>(sum);
        __syncthreads();   // the next chunk's first tiles overwrite both
    }
}

// One thread per row: probabilities, the row's loss term and whether argmax hits the label.
__global__ void softmaxRowsKernel(int emulate, const float* logits, const std::uint8_t* labels, long long N,
                                  long long classes, float* prob, double* rowResults, std::uint8_t* rowCorrect)
{
    for (long long n = firstIndex(); n < N; n += gridStride()) {
        const float* row = logits + n * classes;
        const int label = labels[n];
        rowCorrect[n] = predictsLabel(row, classes, label) ? 1 : 0;
        rowResults[n] = emulate == kFp32 ? softmaxRowFp32(row, classes, label, prob + n * classes)
                                         : static_cast<double>(
                                               softmaxRowEmulated(emulate, row, classes, label, prob + n * classes));
    }
}

// One block. The count of argmax hits is an integer, so the block counts them in any order
// (one barrier per kThreads rows); the loss stays with thread 0, in row order, exactly the
// CPU's sequential sum.
__global__ void __launch_bounds__(kThreads)
lossTotalKernel(int emulate, const double* rowResults, const std::uint8_t* rowCorrect, long long N,
                LossTotals* totals)
{
    long long correct = 0;
    for (long long n0 = 0; n0 < N; n0 += kThreads) {   // uniform in the block
        const long long n = n0 + threadIdx.x;
        correct += __syncthreads_count(n < N && rowCorrect[n] != 0);
    }
    if (threadIdx.x != 0) return;
    totals->correct = correct;
    totals->loss = emulate == kFp32 ? lossMeanFp32(rowResults, N) : lossMeanEmulated(emulate, rowResults, N);
    totals->spare = 0.0f;
}

__global__ void softmaxBackwardKernel(const float* prob, const std::uint8_t* labels, long long N, long long classes,
                                      float lossScale, float* grad)
{
    const float batch = static_cast<float>(N);
    for (long long i = firstIndex(); i < N * classes; i += gridStride())
        grad[i] = softmaxGradient(prob[i], i % classes == labels[i / classes], batch, lossScale);
}

// One atomic per block that saw an inf or NaN, not one per such element (a view full of
// infs would otherwise queue millions of atomics on one address). Every thread leaves the
// loop and reaches the barrier.
__global__ void findNonFiniteKernel(const float* x, long long n, unsigned* flag)
{
    bool found = false;
    for (long long i = firstIndex(); i < n; i += gridStride())
        if (!isFiniteFloat(x[i])) {
            found = true;
            break;
        }
    if (__syncthreads_or(found) != 0 && threadIdx.x == 0) atomicOr(flag, 1u);
}

// Per block: scale (when asked) and the partial sum of squares; skipped entirely once a
// non-finite value was found anywhere (the step is then skipped, values stay as they were).
__global__ void __launch_bounds__(kThreads)
scaleAndSquareKernel(int format, float* x, long long n, float multiplier, const unsigned* flag, double* blockSums)
{
    if (*flag != 0) return;   // uniform across the grid: no thread reaches blockSum
    double sum = 0.0;
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        float v = x[i];
        if (multiplier != 1.0f) {
            v = sweepScaled(format, v, multiplier);
            x[i] = v;
        }
        sum += squareRn(static_cast<double>(v));
    }
    sum = blockSum(sum);
    if (threadIdx.x == 0) blockSums[blockIdx.x] = sum;
}

// One block: the partial sums of scaleAndSquareKernel in a fixed order.
__global__ void __launch_bounds__(kThreads)
sumBlocksKernel(const double* blockSums, unsigned blocks, const unsigned* flag, double* total)
{
    if (*flag != 0) return;
    double sum = 0.0;
    for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) sum += blockSums[b];
    sum = blockSum(sum);
    if (threadIdx.x == 0) *total = sum;
}

__global__ void sgdKernel(SgdStep s, int format, int stateFormat, WeightWriteRule rule, float* comp, float* weights,
                          const float* grad, float* buffer, long long n, unsigned long long* counters)
{
    __shared__ unsigned local[kUpdateSlots];
    if (threadIdx.x < kUpdateSlots) local[threadIdx.x] = 0;
    __syncthreads();
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        float w = weights[i];
        float buf = s.useMomentum && !s.firstStep ? buffer[i] : 0.0f;
        const unsigned mask = sgdElement(s, format, stateFormat, w, grad[i], buf, rule, static_cast<unsigned long long>(i),
                                         comp ? comp + i : nullptr);
        weights[i] = w;
        if (s.useMomentum) buffer[i] = buf;
        countUpdates(local, mask);
    }
    if (counters) publishUpdates(local, counters);
}

__global__ void adamKernel(AdamStep s, int format, int stateFormat, WeightWriteRule rule, float* comp, float* weights,
                           const float* grad, float* m, float* v, long long n, unsigned long long* counters)
{
    __shared__ unsigned local[kUpdateSlots];
    if (threadIdx.x < kUpdateSlots) local[threadIdx.x] = 0;
    __syncthreads();
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        float w = weights[i], mi = m[i], vi = v[i];
        const unsigned mask = adamElement(s, format, stateFormat, w, grad[i], mi, vi, rule, static_cast<unsigned long long>(i),
                                          comp ? comp + i : nullptr);
        weights[i] = w;
        m[i] = mi;
        v[i] = vi;
        countUpdates(local, mask);
    }
    if (counters) publishUpdates(local, counters);
}

unsigned blocksForLl(long long n) { return blocksFor(static_cast<std::size_t>(n)); }


}  // namespace

cudaError_t launchRelu(float* x, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    reluKernel<<<blocksForLl(n), kThreads, 0, stream>>>(x, n);
    return cudaGetLastError();
}

cudaError_t launchReluBackward(const float* y, float* g, long long n, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    reluBackwardKernel<<<blocksForLl(n), kThreads, 0, stream>>>(y, g, n);
    return cudaGetLastError();
}

cudaError_t launchMaxPool(const PoolShape& s, const float* in, float* out, std::uint8_t* argmax,
                          cudaStream_t stream)
{
    const long long total = s.planes * s.outHeight() * s.outWidth();
    if (total <= 0) return cudaSuccess;
    maxPoolKernel<<<blocksForLl(total), kThreads, 0, stream>>>(s, in, out, argmax, total);
    return cudaGetLastError();
}

cudaError_t launchMaxPoolBackward(const PoolShape& s, const float* g, const std::uint8_t* argmax, float* dx,
                                  cudaStream_t stream)
{
    const long long total = s.planes * s.height * s.width;
    if (total <= 0) return cudaSuccess;
    maxPoolBackwardKernel<<<blocksForLl(total), kThreads, 0, stream>>>(s, g, argmax, dx, total);
    return cudaGetLastError();
}

cudaError_t launchTransposeBlocks(const float* in, long long A, long long B, long long inner, float* out,
                                  cudaStream_t stream)
{
    if (A * B * inner <= 0) return cudaSuccess;
    transposeBlocksKernel<<<blocksForLl(A * B * inner), kThreads, 0, stream>>>(in, A, B, inner, out);
    return cudaGetLastError();
}

long long sumRowsParts(long long rows, long long cols) { return rows > 0 ? rowSplit(rows, cols).parts : 0; }

namespace {

template <typename T>
cudaError_t sumRowsOf(const T* x, int f, long long rows, long long cols, double* partials, float* out,
                      cudaStream_t stream)
{
    if (rows <= 0) return cudaSuccess;
    const RowSplit split = rowSplit(rows, cols);
    const auto blocks = static_cast<std::size_t>(rows * split.parts);
    sumRowPartsKernel<T><<<gridOf(blocks), kThreads, 0, stream>>>(x, f, rows, cols, split, partials);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    sumRowPartialsKernel<<<gridOf(static_cast<std::size_t>(rows)), kThreads, 0, stream>>>(partials, rows, split.parts,
                                                                                          out);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launchSumRows(const float* x, long long rows, long long cols, double* partials, float* out,
                          cudaStream_t stream)
{
    return sumRowsOf(x, kFp32, rows, cols, partials, out, stream);
}

cudaError_t launchSumRows16(int f, const std::uint16_t* x, long long rows, long long cols, double* partials,
                            float* out, cudaStream_t stream)
{
    return sumRowsOf(x, f, rows, cols, partials, out, stream);
}

cudaError_t launchSumColumns(const float* x, long long rows, long long cols, float* out, cudaStream_t stream)
{
    if (cols <= 0) return cudaSuccess;
    sumColumnsKernel<<<blocksForLl(cols), kThreads, 0, stream>>>(x, rows, cols, out);
    return cudaGetLastError();
}

cudaError_t launchSoftmaxCrossEntropy(int emulate, const float* logits, const std::uint8_t* labels, long long N,
                                      long long classes, float* probabilities, double* rowResults,
                                      std::uint8_t* rowCorrect, LossTotals* totals, cudaStream_t stream)
{
    if (N <= 0) return cudaSuccess;
    softmaxRowsKernel<<<blocksForLl(N), kThreads, 0, stream>>>(emulate, logits, labels, N, classes, probabilities,
                                                               rowResults, rowCorrect);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    lossTotalKernel<<<1, kThreads, 0, stream>>>(emulate, rowResults, rowCorrect, N, totals);
    return cudaGetLastError();
}

cudaError_t launchSoftmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, long long N,
                                              long long classes, float lossScale, float* grad,
                                              cudaStream_t stream)
{
    if (N * classes <= 0) return cudaSuccess;
    softmaxBackwardKernel<<<blocksForLl(N * classes), kThreads, 0, stream>>>(probabilities, labels, N, classes,
                                                                             lossScale, grad);
    return cudaGetLastError();
}

cudaError_t launchFindNonFinite(const float* x, long long n, unsigned* flag, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    findNonFiniteKernel<<<blocksForLl(n), kThreads, 0, stream>>>(x, n, flag);
    return cudaGetLastError();
}

cudaError_t launchScaleAndSumSquares(int format, float* x, long long n, float multiplier, const unsigned* flag,
                                     double* blockSums, double* sumOfSquares, cudaStream_t stream)
{
    const unsigned blocks = blocksForLl(n);   // one block (a zero sum) even for n == 0
    scaleAndSquareKernel<<<blocks, kThreads, 0, stream>>>(format, x, n, multiplier, flag, blockSums);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
    sumBlocksKernel<<<1, kThreads, 0, stream>>>(blockSums, blocks, flag, sumOfSquares);
    return cudaGetLastError();
}

cudaError_t launchSgdUpdate(const SgdStep& s, int format, int stateFormat, const WeightWriteRule& rule, float* comp,
                            float* weights, const float* grad, float* buffer, long long n, unsigned long long* counters,
                            cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    sgdKernel<<<blocksForLl(n), kThreads, 0, stream>>>(s, format, stateFormat, rule, comp, weights, grad, buffer, n, counters);
    return cudaGetLastError();
}

cudaError_t launchAdamUpdate(const AdamStep& s, int format, int stateFormat, const WeightWriteRule& rule, float* comp,
                             float* weights, const float* grad, float* m, float* v, long long n,
                             unsigned long long* counters, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    adamKernel<<<blocksForLl(n), kThreads, 0, stream>>>(s, format, stateFormat, rule, comp, weights, grad, m, v, n, counters);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
