// CudaBackend: lifetime (device, stream, cuBLAS handle), host <-> device transfers, and
// the element-wise ops: rounding with telemetry, im2col / col2im, host parallel loops.
// The GEMM is in cuda_gemm.cpp, the probe and the C entry points in cuda_plugin.cpp.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <thread>

namespace plab::cuda {

// The kernels take the format as an int in the order of plab::Format.
static_assert(static_cast<int>(Format::fp32) == cudakernels::kFp32);
static_assert(static_cast<int>(Format::tf32) == cudakernels::kTf32);
static_assert(static_cast<int>(Format::fp16) == cudakernels::kFp16);
static_assert(static_cast<int>(Format::bf16) == cudakernels::kBf16);
static_assert(GradientHistogram::kBins == cudakernels::kHistBins);
static_assert(GradientHistogram::kMinExponent == cudakernels::kHistMinExponent);

namespace {

int hostThreads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void checkGeometry(const ConvGeometry& g, std::int64_t n0, std::int64_t count)
{
    // The same contract as the CPU backend's im2col (engine/backend/cpu/im2col.cpp).
    if (g.kernel != 2 * g.pad + 1 || g.channels <= 0 || g.height <= 0 || g.width <= 0 ||
        n0 < 0 || count < 0 || n0 + count > g.batch)
        throw std::invalid_argument("im2col needs a same-size stride-1 convolution and a sample range inside the batch.");
}

// The dense (C, count, H, W) device block a [n0, n0 + count) sample range maps to.
cudakernels::ConvShape blockShape(const ConvGeometry& g, std::int64_t count)
{
    return {g.channels, count, g.height, g.width, g.kernel, g.pad};
}

std::string megabytes(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

CudaBackend::CudaBackend(int device) : device_(device), pool_(hostThreads())
{
    int count = 0;
    PLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        throw std::runtime_error("there is no CUDA device " + std::to_string(device) + " (found " +
                                 std::to_string(count) + ")");
    activate();
    PLAB_CUDA_CHECK(cudaDeviceGetAttribute(&capability_.major, cudaDevAttrComputeCapabilityMajor, device));
    PLAB_CUDA_CHECK(cudaDeviceGetAttribute(&capability_.minor, cudaDevAttrComputeCapabilityMinor, device));
    try {
        // Non-blocking: our work never waits on the legacy default stream of other code.
        PLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        PLAB_CUBLAS_CHECK(cublasCreate(&cublas_));
        PLAB_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
        // Alpha and beta come from host memory; split-K reductions stay in the compute type.
        PLAB_CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST));
        PLAB_CUBLAS_CHECK(cublasSetMathMode(
            cublas_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
        probeDevices(info_);
        const DeviceMemory mem = deviceMemory(device_);
        info_.reason = "CUDA device " + std::to_string(device_) + " (compute " + std::to_string(capability_.major) +
                       "." + std::to_string(capability_.minor) + "), operands copied per op";
        info_.versions.push_back("device memory at start: " + megabytes(mem.used) + " used of " +
                                 megabytes(mem.total));
    } catch (...) {
        // The destructor does not run for a constructor that throws: release by hand.
        if (cublas_) (void)cublasDestroy(cublas_);
        if (stream_) (void)cudaStreamDestroy(stream_);
        throw;
    }
}

CudaBackend::~CudaBackend()
{
    // No throwing here: a failing teardown (a lost device) must not take the process down.
    (void)cudaSetDevice(device_);
    if (stream_) (void)cudaStreamSynchronize(stream_);
    if (cublas_) (void)cublasDestroy(cublas_);
    if (stream_) (void)cudaStreamDestroy(stream_);
}

void CudaBackend::activate() const { PLAB_CUDA_CHECK(cudaSetDevice(device_)); }

void CudaBackend::upload(const float* host, std::int64_t ld, std::int64_t rows, std::int64_t cols, float* device)
{
    if (rows == 0 || cols == 0) return;
    const auto width = static_cast<std::size_t>(cols) * sizeof(float);
    PLAB_CUDA_CHECK(cudaMemcpy2DAsync(device, width, host, static_cast<std::size_t>(ld) * sizeof(float), width,
                                      static_cast<std::size_t>(rows), cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::download(const float* device, std::int64_t rows, std::int64_t cols, float* host, std::int64_t ld)
{
    if (rows == 0 || cols == 0) return;
    // Row by row with the host pitch: the gaps between rows (ld > cols) are left untouched.
    const auto width = static_cast<std::size_t>(cols) * sizeof(float);
    PLAB_CUDA_CHECK(cudaMemcpy2DAsync(host, static_cast<std::size_t>(ld) * sizeof(float), device, width, width,
                                      static_cast<std::size_t>(rows), cudaMemcpyDeviceToHost, stream_));
}

void CudaBackend::synchronize() { PLAB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaBackend::roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                             GradientHistogram* hist)
{
    if (n == 0) return;
    activate();
    float* data = a_.reserveFor<float>(n);   // (n)
    PLAB_CUDA_CHECK(cudaMemcpyAsync(data, src, n * sizeof(float), cudaMemcpyHostToDevice, stream_));
    unsigned long long* counters = nullptr;
    if (stats || hist) {
        counters = counters_.reserveFor<unsigned long long>(cudakernels::kCounterSlots);
        PLAB_CUDA_CHECK(cudaMemsetAsync(counters, 0, cudakernels::kCounterSlots * sizeof(unsigned long long), stream_));
    }
    PLAB_CUDA_CHECK(cudakernels::launchRound(static_cast<int>(f), data, data, n, counters, stats != nullptr,
                                             hist != nullptr, stream_));
    PLAB_CUDA_CHECK(cudaMemcpyAsync(dst, data, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    std::array<unsigned long long, cudakernels::kCounterSlots> counts{};
    if (counters)
        PLAB_CUDA_CHECK(cudaMemcpyAsync(counts.data(), counters, sizeof(counts), cudaMemcpyDeviceToHost, stream_));
    synchronize();
    // Counts are added, as the CPU backend does: the caller accumulates over many calls.
    if (stats) {
        stats->count += n;
        stats->zerosIn += counts[cudakernels::kZerosIn];
        stats->underflow += counts[cudakernels::kUnderflow];
        stats->subnormal += counts[cudakernels::kSubnormal];
        stats->overflow += counts[cudakernels::kOverflow];
        stats->nan += counts[cudakernels::kNan];
        stats->infIn += counts[cudakernels::kInfIn];
    }
    if (hist) {
        for (int b = 0; b < cudakernels::kHistBins; ++b)
            hist->bins[static_cast<std::size_t>(b)] += counts[static_cast<std::size_t>(cudakernels::kHistFirst + b)];
        hist->zeros += counts[cudakernels::kHistZeros];
        hist->nonFinite += counts[cudakernels::kHistNonFinite];
    }
}

void CudaBackend::im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count, float* cols)
{
    checkGeometry(g, n0, count);
    if (count == 0) return;
    activate();
    const std::int64_t hw = g.planeSize();
    const auto blockElems = static_cast<std::size_t>(g.channels * count * hw);
    const auto colsElems = static_cast<std::size_t>(g.patchSize() * count * hw);
    float* block = a_.reserveFor<float>(blockElems);   // (C, count, H, W)
    float* dcols = c_.reserveFor<float>(colsElems);    // (patchSize, count * H * W)
    // The samples of one channel are contiguous in (C, N, H, W): one row per channel.
    upload(src + n0 * hw, g.batch * hw, g.channels, count * hw, block);
    PLAB_CUDA_CHECK(cudakernels::launchIm2col(blockShape(g, count), block, dcols, stream_));
    PLAB_CUDA_CHECK(cudaMemcpyAsync(cols, dcols, colsElems * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    synchronize();
}

void CudaBackend::col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst)
{
    checkGeometry(g, n0, count);
    if (count == 0) return;
    activate();
    const std::int64_t hw = g.planeSize();
    const auto blockElems = static_cast<std::size_t>(g.channels * count * hw);
    const auto colsElems = static_cast<std::size_t>(g.patchSize() * count * hw);
    float* dcols = c_.reserveFor<float>(colsElems);    // (patchSize, count * H * W)
    float* block = a_.reserveFor<float>(blockElems);   // (C, count, H, W)
    PLAB_CUDA_CHECK(cudaMemcpyAsync(dcols, cols, colsElems * sizeof(float), cudaMemcpyHostToDevice, stream_));
    PLAB_CUDA_CHECK(cudakernels::launchCol2im(blockShape(g, count), dcols, block, stream_));
    download(block, g.channels, count * hw, dst + n0 * hw, g.batch * hw);
    synchronize();
}

void CudaBackend::parallelFor(std::int64_t n, std::int64_t grain,
                              const std::function<void(std::int64_t, std::int64_t)>& body)
{
    // Host loops: the layers' element-wise work on host tensors (until tensors live on
    // the device, see docs/CUDA.md).
    pool_.parallelFor(n, grain, body);
}

DeviceMemory deviceMemory(int device)
{
    PLAB_CUDA_CHECK(cudaSetDevice(device));
    std::size_t freeBytes = 0, totalBytes = 0;
    PLAB_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    return {static_cast<std::uint64_t>(totalBytes - freeBytes), static_cast<std::uint64_t>(totalBytes)};
}

}  // namespace plab::cuda
