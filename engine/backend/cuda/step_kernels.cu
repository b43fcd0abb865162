// The kernels of a training step beyond GEMM and rounding: ReLU, 2x2 max pooling, the block
// transpose of Flatten, the bias-gradient sums, softmax cross-entropy, the gradient sweep of
// loss scaling, SGD and Adam. The arithmetic is kernel_math.h's (checked on the host against
// the CPU reference); this file maps it onto threads. Reductions use a fixed tree, so a
// result never depends on scheduling: the same inputs give the same bits on every run.
#include "backend/cuda/kernels.h"

namespace plab::cudakernels {

namespace {

__device__ long long firstIndex() { return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ long long gridStride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

// The sum of v over the block (kThreads threads, all calling), in a fixed tree order;
// the result is valid in thread 0.
__device__ double blockSum(double v)
{
    __shared__ double partial[kThreads];
    __syncthreads();   // an earlier call's partial[0] may still be being read
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
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

// One thread per output element.
__global__ void maxPoolKernel(PoolShape s, const float* in, float* out, std::uint8_t* argmax, long long total)
{
    for (long long o = firstIndex(); o < total; o += gridStride()) {
        const float* w = in + poolWindowStart(s, o);
        const float v[4] = {w[0], w[1], w[s.width], w[s.width + 1]};
        const int best = poolWinner(v);
        out[o] = v[best];
        argmax[o] = static_cast<std::uint8_t>(best);
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

// One block per row: strided partial sums in double, then the block's tree.
__global__ void sumRowsKernel(const float* x, long long rows, long long cols, float* out)
{
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = x + r * cols;
        double sum = 0.0;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c];
        sum = blockSum(sum);
        if (threadIdx.x == 0) out[r] = static_cast<float>(sum);
    }
}

// One thread per column, down the rows in order: the CPU's order, so the same double sum.
__global__ void sumColumnsKernel(const float* x, long long rows, long long cols, float* out)
{
    for (long long c = firstIndex(); c < cols; c += gridStride()) {
        double sum = 0.0;
        for (long long r = 0; r < rows; ++r) sum += x[r * cols + c];
        out[c] = static_cast<float>(sum);
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

// One thread: the batch total in row order, exactly the CPU's sequential sum.
__global__ void lossTotalKernel(int emulate, const double* rowResults, const std::uint8_t* rowCorrect, long long N,
                                LossTotals* totals)
{
    long long correct = 0;
    for (long long n = 0; n < N; ++n) correct += rowCorrect[n];
    totals->correct = correct;
    totals->loss = emulate == kFp32 ? lossMeanFp32(rowResults, N) : lossMeanEmulated(emulate, rowResults, N);
}

__global__ void softmaxBackwardKernel(const float* prob, const std::uint8_t* labels, long long N, long long classes,
                                      float lossScale, float* grad)
{
    const float batch = static_cast<float>(N);
    for (long long i = firstIndex(); i < N * classes; i += gridStride())
        grad[i] = softmaxGradient(prob[i], i % classes == labels[i / classes], batch, lossScale);
}

__global__ void findNonFiniteKernel(const float* x, long long n, unsigned* flag)
{
    for (long long i = firstIndex(); i < n; i += gridStride())
        if (!isFiniteFloat(x[i])) atomicOr(flag, 1u);
}

// Per block: scale (when asked) and the partial sum of squares; skipped entirely once a
// non-finite value was found anywhere (the step is then skipped, values stay as they were).
__global__ void scaleAndSquareKernel(int format, float* x, long long n, float multiplier, const unsigned* flag,
                                     double* blockSums)
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
__global__ void sumBlocksKernel(const double* blockSums, unsigned blocks, const unsigned* flag, double* total)
{
    if (*flag != 0) return;
    double sum = 0.0;
    for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) sum += blockSums[b];
    sum = blockSum(sum);
    if (threadIdx.x == 0) *total = sum;
}

__global__ void sgdKernel(SgdStep s, int format, float* weights, const float* grad, float* buffer, long long n,
                          unsigned long long* counters)
{
    __shared__ unsigned local[kUpdateSlots];
    if (threadIdx.x < kUpdateSlots) local[threadIdx.x] = 0;
    __syncthreads();
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        float w = weights[i];
        float buf = s.useMomentum && !s.firstStep ? buffer[i] : 0.0f;
        const unsigned mask = sgdElement(s, format, w, grad[i], buf);
        weights[i] = w;
        if (s.useMomentum) buffer[i] = buf;
        countUpdates(local, mask);
    }
    if (counters) publishUpdates(local, counters);
}

__global__ void adamKernel(AdamStep s, int format, float* weights, const float* grad, float* m, float* v,
                           long long n, unsigned long long* counters)
{
    __shared__ unsigned local[kUpdateSlots];
    if (threadIdx.x < kUpdateSlots) local[threadIdx.x] = 0;
    __syncthreads();
    for (long long i = firstIndex(); i < n; i += gridStride()) {
        float w = weights[i], mi = m[i], vi = v[i];
        const unsigned mask = adamElement(s, format, w, grad[i], mi, vi);
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

cudaError_t launchSumRows(const float* x, long long rows, long long cols, float* out, cudaStream_t stream)
{
    if (rows <= 0) return cudaSuccess;
    const unsigned blocks = rows < static_cast<long long>(kMaxBlocks) ? static_cast<unsigned>(rows)
                                                                       : static_cast<unsigned>(kMaxBlocks);
    sumRowsKernel<<<blocks, kThreads, 0, stream>>>(x, rows, cols, out);
    return cudaGetLastError();
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
    lossTotalKernel<<<1, 1, 0, stream>>>(emulate, rowResults, rowCorrect, N, totals);
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

cudaError_t launchSgdUpdate(const SgdStep& s, int format, float* weights, const float* grad, float* buffer,
                            long long n, unsigned long long* counters, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    sgdKernel<<<blocksForLl(n), kThreads, 0, stream>>>(s, format, weights, grad, buffer, n, counters);
    return cudaGetLastError();
}

cudaError_t launchAdamUpdate(const AdamStep& s, int format, float* weights, const float* grad, float* m,
                             float* v, long long n, unsigned long long* counters, cudaStream_t stream)
{
    if (n <= 0) return cudaSuccess;
    adamKernel<<<blocksForLl(n), kThreads, 0, stream>>>(s, format, weights, grad, m, v, n, counters);
    return cudaGetLastError();
}

}  // namespace plab::cudakernels
