// CudaBackend: lifetime (device, memory pool, stream, cuBLAS handle, allocator, counter
// arena), the step's synchronisation (flush), rounding with telemetry, im2col / col2im, the
// convolutions' entry points (their cuDNN code is in cuda_conv.cpp; refused for FP8 codes,
// which the layer lowers to cuBLASLt's FP8 GEMMs), host parallel loops.
// The GEMM is in cuda_gemm.cpp, the layers' ops in cuda_layer_ops.cpp, the sweep and the
// optimizers in cuda_update_ops.cpp, the probe and the C entry points in cuda_plugin.cpp.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/memory_budget.h"

#include <cstdlib>
#include <stdexcept>

namespace plab::cuda {

// The kernels take the format as an int in the order of plab::Format.
static_assert(static_cast<int>(Format::fp32) == cudakernels::kFp32);
static_assert(static_cast<int>(Format::tf32) == cudakernels::kTf32);
static_assert(static_cast<int>(Format::fp16) == cudakernels::kFp16);
static_assert(static_cast<int>(Format::bf16) == cudakernels::kBf16);
static_assert(GradientHistogram::kBins == cudakernels::kHistBins);
static_assert(GradientHistogram::kMinExponent == cudakernels::kHistMinExponent);

namespace {

// `device` when it exists, made current; throws otherwise.
int usableDevice(int device)
{
    int count = 0;
    PLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        throw std::runtime_error("there is no CUDA device " + std::to_string(device) + " (found " +
                                 std::to_string(count) + ")");
    PLAB_CUDA_CHECK(cudaSetDevice(device));
    return device;
}

DeviceCapability capabilityOf(int device)
{
    DeviceCapability cap;
    PLAB_CUDA_CHECK(cudaDeviceGetAttribute(&cap.major, cudaDevAttrComputeCapabilityMajor, device));
    PLAB_CUDA_CHECK(cudaDeviceGetAttribute(&cap.minor, cudaDevAttrComputeCapabilityMinor, device));
    return cap;
}

void checkGeometry(const ConvGeometry& g, std::int64_t n0, std::int64_t count)
{
    // The same contract as the CPU backend's im2col (engine/backend/cpu/im2col.cpp).
    if (g.kernel != 2 * g.pad + 1 || g.channels <= 0 || g.height <= 0 || g.width <= 0 ||
        n0 < 0 || count < 0 || n0 + count > g.batch)
        throw std::invalid_argument("im2col needs a same-size stride-1 convolution and a sample range inside the batch.");
}

cudakernels::ConvShape shapeOf(const ConvGeometry& g)
{
    return {g.channels, g.batch, g.height, g.width, g.kernel, g.pad};
}

std::string megabytes(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

CudaBackend::CudaBackend(int device)
    : device_(usableDevice(device)), capability_(capabilityOf(device_)),
      memoryBudget_(memoryBudgetBytes(std::getenv(kMemoryBudgetVariable))), memory_(device_, memoryBudget_),
      stream_(device_),
      cublas_(stream_.get()), allocator_(device_, stream_.get(), memory_.get()),
      counters_(stream_.get(), memory_.get()), a16_(stream_.get(), memory_.get()), b16_(stream_.get(), memory_.get()),
      c16_(stream_.get(), memory_.get()),
      ltWorkspace_(stream_.get(), memory_.get()), quantizeScratch_(stream_.get(), memory_.get()),
      labels_(stream_.get(), memory_.get()),
      lossScratch_(stream_.get(), memory_.get()), sweepScratch_(stream_.get(), memory_.get()),
      convolutions_(stream_.get(), memory_.get(), capability_), cudnn16_(CudnnConvolutions16::asked()),
      convolutions16_(stream_.get(), memory_.get()), nhwcIn_(stream_.get(), memory_.get()),
      nhwcWeights_(stream_.get(), memory_.get()), nhwcOut_(stream_.get(), memory_.get())
{
    probeDevices(info_);
    const DeviceMemoryInfo mem = queryDeviceMemory(device_);
    info_.reason = "CUDA device " + std::to_string(device_) + " (compute " + std::to_string(capability_.major) + "." +
                   std::to_string(capability_.minor) + "), tensors on the device";
    info_.versions.push_back("device memory at start: " + megabytes(mem.used) + " used of " + megabytes(mem.total));
    if (cudnn16_.forward)
        info_.versions.push_back("packed forward convolutions: cuDNN on 16-bit NHWC data (PLAB_CUDNN_16), "
                                 "each sum rounded into the format by cuDNN before the bias");
    if (cudnn16_.data)
        info_.versions.push_back("packed input gradients: cuDNN on 16-bit NHWC data (PLAB_CUDNN_16), each sum "
                                 "rounded into the format by cuDNN");
    if (cudnn16_.filter)
        info_.versions.push_back("packed filter gradients: cuDNN on 16-bit NHWC data (PLAB_CUDNN_16), fp32 sums "
                                 "and an fp32 result");
    if (memoryBudget_)
        info_.versions.push_back("device-memory budget: " + megabytes(memoryBudget_) + " (" + kMemoryBudgetVariable +
                                 "), the backend's pool capped there");
}

std::optional<DeviceMemoryInfo> CudaBackend::deviceMemory() const
{
    if (!memoryBudget_) return queryDeviceMemory(device_);
    activate();
    return DeviceMemoryInfo{memory_.reserved(), memoryBudget_};
}

CudaBackend::~CudaBackend()
{
    // The members free their memory on the stream, drain it, then trim and destroy the
    // pool (member order); the device must be current for that. No throwing here: a lost
    // device must not take the process down. Counts still pending are dropped unwritten.
    if (cudaSetDevice(device_) != cudaSuccess) (void)cudaGetLastError();
}

void CudaBackend::activate() const { PLAB_CUDA_CHECK(cudaSetDevice(device_)); }

void CudaBackend::synchronize() { PLAB_CUDA_CHECK(cudaStreamSynchronize(stream())); }

std::int64_t CudaBackend::scratchBytes() const
{
    const std::size_t own = a16_.capacity() + b16_.capacity() + c16_.capacity() +
                            ltWorkspace_.capacity() + quantizeScratch_.capacity() + labels_.capacity() +
                            lossScratch_.capacity() + sweepScratch_.capacity() + rowScratch_.capacity();
    return static_cast<std::int64_t>(own + nhwcIn_.capacity() + nhwcWeights_.capacity() + nhwcOut_.capacity() +
                                     convolutions_.scratchBytes() + convolutions16_.scratchBytes());
}

void CudaBackend::flush()
{
    if (!counters_.pending()) return;
    activate();
    counters_.flush();
}

void CudaBackend::roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                             GradientHistogram* hist)
{
    if (n == 0) return;
    activate();
    const bool counted = stats || hist;
    unsigned long long* slots = counted ? counters_.roundingSlots(stats, hist) : nullptr;
    PLAB_CUDA_CHECK(cudakernels::launchRound(static_cast<int>(f), src, dst, n, {}, slots, stats != nullptr,
                                             hist != nullptr, stream()));
    if (counted) counters_.addElements(stats, hist, n);
}

void CudaBackend::im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count, float* cols)
{
    checkGeometry(g, n0, count);
    if (count == 0) return;
    activate();
    PLAB_CUDA_CHECK(cudakernels::launchIm2col(shapeOf(g), n0, count, src, cols, stream()));
}

// im2col from a packed source (cuda_packed_ops.cpp has the other packed ops): into fp32
// columns, widened, or into packed columns, the patterns moved.
void CudaBackend::im2colPacked(const ConvGeometry& g, Format f, const std::uint16_t* src, std::int64_t n0,
                               std::int64_t count, float* cols)
{
    checkGeometry(g, n0, count);
    const int fmt = format16(f, "im2colPacked");
    if (count == 0) return;
    activate();
    PLAB_CUDA_CHECK(cudakernels::launchIm2colPacked(fmt, shapeOf(g), n0, count, src, cols, stream()));
}

void CudaBackend::im2col16(const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                           std::uint16_t* cols)
{
    checkGeometry(g, n0, count);
    if (count == 0) return;
    activate();
    PLAB_CUDA_CHECK(cudakernels::launchIm2col16(shapeOf(g), n0, count, src, cols, stream()));
}

// im2col from FP8 codes (cuda_fp8.cpp has the other FP8 ops): each column element the
// code's value times scaleInv.
void CudaBackend::im2colFp8(const ConvGeometry& g, MiniFormat element, float scaleInv, const std::uint8_t* src,
                            std::int64_t n0, std::int64_t count, float* cols)
{
    checkGeometry(g, n0, count);
    const int f = fp8Format(element, "im2colFp8");
    if (count == 0) return;
    activate();
    PLAB_CUDA_CHECK(cudakernels::launchIm2colFp8(f, scaleInv, shapeOf(g), n0, count, src, cols, stream()));
}

namespace {

// What cuDNN's 16-bit convolutions take: products of 16-bit patterns with fp32 sums.
bool sixteenBitOperands(const CudaBackend& backend, const GemmPrecision& precision)
{
    return backend.multiplies16(precision) && packable16(precision.compute);
}

}  // namespace

bool CudaBackend::supports(BackendOp op, const GemmPrecision& precision) const
{
    switch (op) {
    case BackendOp::fp8Codes:
    case BackendOp::packedTensors:
    case BackendOp::packsByDefault:
    case BackendOp::transformer: return true;
    case BackendOp::gemm16: return multiplies16(precision);
    case BackendOp::convolution16: return convolves16(precision);
    case BackendOp::convolutionData16: return convolvesData16(precision);
    case BackendOp::convolutionFilter16: return convolvesFilter16(precision);
    case BackendOp::packedUpdates: return false;
    }
    return false;
}

bool CudaBackend::cudnn16Runs(bool asked, const GemmPrecision& precision) const
{
    return (asked || (libraryRounding_ && CudnnConvolutions::builtIn())) && sixteenBitOperands(*this, precision);
}

bool CudaBackend::convolves16(const GemmPrecision& precision) const
{
    return cudnn16Runs(cudnn16_.forward, precision);
}

bool CudaBackend::convolvesData16(const GemmPrecision& precision) const
{
    return cudnn16Runs(cudnn16_.data, precision);
}

bool CudaBackend::convolvesFilter16(const GemmPrecision& precision) const
{
    return cudnn16Runs(cudnn16_.filter, precision);
}

void CudaBackend::convolutionBackwardFilter16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x,
                                              const std::uint16_t* dy, std::int64_t n0, std::int64_t count, float beta,
                                              float* dw, GemmPrecision precision)
{
    if (!convolvesFilter16(precision))
        throw std::logic_error("convolutionBackwardFilter16: not asked for, or not this precision (convolvesFilter16)");
    checkGeometry(g, n0, count);
    if (g.kernel != 2 * g.pad + 1 || outChannels <= 0 || (beta != 0.0f && beta != 1.0f))
        throw std::invalid_argument("convolutionBackwardFilter16 takes a same-size stride-1 convolution, beta 0 or 1.");
    const std::int64_t C = g.channels, hw = g.planeSize(), k2 = std::int64_t{g.kernel} * g.kernel,
                       columns = count * hw;
    activate();
    if (count == 0) {
        if (beta == 0.0f) PLAB_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * outChannels * C * k2, stream()));
        return;
    }
    // x's and dy's blocks (channels, count * hw), rows N * hw apart, to NHWC; cuDNN's
    // (Cout, k2, C) fp32 result into dw (Cout, C, k2), added when beta is 1.
    auto* xIn = nhwcIn_.reserveFor<std::uint16_t>(static_cast<std::size_t>(columns * C));
    auto* dyIn = nhwcWeights_.reserveFor<std::uint16_t>(static_cast<std::size_t>(columns * outChannels));
    auto* result = nhwcOut_.reserveFor<float>(static_cast<std::size_t>(outChannels * k2 * C));
    PLAB_CUDA_CHECK(cudakernels::launchTranspose16(x + n0 * hw, 1, C, columns, g.batch * hw, 0, xIn, stream()));
    PLAB_CUDA_CHECK(
        cudakernels::launchTranspose16(dy + n0 * hw, 1, outChannels, columns, g.batch * hw, 0, dyIn, stream()));
    convolutions16_.filter(precision.compute, count, C, outChannels, g.height, g.width, g.kernel, xIn, dyIn, result);
    PLAB_CUDA_CHECK(cudakernels::launchFilterFromKrsc(result, outChannels, C, k2, beta != 0.0f, dw, stream()));
}

void CudaBackend::convolutionForward16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x,
                                       std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* y,
                                       GemmPrecision precision)
{
    if (!convolves16(precision))
        throw std::logic_error("convolutionForward16: not asked for, or not this precision (convolves16)");
    convolve16(false, g, outChannels, x, n0, count, w, y, precision);
}

void CudaBackend::convolutionBackwardData16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* dy,
                                            std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* dx,
                                            GemmPrecision precision)
{
    if (!convolvesData16(precision))
        throw std::logic_error("convolutionBackwardData16: not asked for, or not this precision (convolvesData16)");
    convolve16(true, g, outChannels, dy, n0, count, w, dx, precision);
}

void CudaBackend::convolve16(bool inputGradient, const ConvGeometry& g, std::int64_t outChannels,
                             const std::uint16_t* in, std::int64_t n0, std::int64_t count, const std::uint16_t* w,
                             float* out, GemmPrecision precision)
{
    checkGeometry(g, n0, count);
    if (g.kernel != 2 * g.pad + 1 || outChannels <= 0)
        throw std::invalid_argument(std::string(inputGradient ? "convolutionBackwardData16" : "convolutionForward16") +
                                    " takes a same-size stride-1 convolution.");
    if (count == 0) return;
    activate();
    const std::int64_t C = g.channels, hw = g.planeSize(), k2 = std::int64_t{g.kernel} * g.kernel,
                       columns = count * hw;
    // The forward pass reads x (C channels) and writes y (Cout); the input gradient reads dy
    // (Cout) and writes dx (C). The input's block (channels, count * hw), rows N * hw apart,
    // to NHWC; w (Cout, C, k2) to (Cout, k2, C); cuDNN's NHWC result (count * hw, channels)
    // widened into out (channels, columns).
    const std::int64_t inChannels = inputGradient ? outChannels : C, resultChannels = inputGradient ? C : outChannels;
    auto* nhwc = nhwcIn_.reserveFor<std::uint16_t>(static_cast<std::size_t>(columns * inChannels));
    auto* wIn = nhwcWeights_.reserveFor<std::uint16_t>(static_cast<std::size_t>(outChannels * k2 * C));
    auto* result = nhwcOut_.reserveFor<std::uint16_t>(static_cast<std::size_t>(columns * resultChannels));
    PLAB_CUDA_CHECK(
        cudakernels::launchTranspose16(in + n0 * hw, 1, inChannels, columns, g.batch * hw, 0, nhwc, stream()));
    PLAB_CUDA_CHECK(cudakernels::launchTranspose16(w, outChannels, C, k2, k2, C * k2, wIn, stream()));
    if (inputGradient)
        convolutions16_.data(precision.compute, count, C, outChannels, g.height, g.width, g.kernel, nhwc, wIn, result);
    else
        convolutions16_.forward(precision.compute, count, C, outChannels, g.height, g.width, g.kernel, nhwc, wIn,
                                result);
    PLAB_CUDA_CHECK(cudakernels::launchWidenTransposed16(static_cast<int>(precision.compute), result, columns,
                                                         resultChannels, out, stream()));
}

void CudaBackend::col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst,
                         std::int64_t colsLd)
{
    checkGeometry(g, n0, count);
    if (colsLd != 0 && colsLd < count * g.planeSize())
        throw std::invalid_argument("col2im got rows shorter than its columns.");
    if (count == 0) return;
    activate();
    PLAB_CUDA_CHECK(cudakernels::launchCol2im(shapeOf(g), n0, count, cols, colsLd != 0 ? colsLd : count * g.planeSize(),
                                              dst, stream()));
}

bool CudaBackend::convolutionForward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w,
                                     float* y, GemmPrecision precision)
{
    if (!CudnnConvolutions::builtIn() || runsFp8(precision, capability_)) return false;
    activate();
    return convolutions_.forward(g, outChannels, x, w, y, precision);
}

bool CudaBackend::convolutionBackwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w,
                                          const float* dy, float* dx, GemmPrecision precision)
{
    if (!CudnnConvolutions::builtIn() || runsFp8(precision, capability_)) return false;
    activate();
    return convolutions_.backwardData(g, outChannels, w, dy, dx, precision);
}

bool CudaBackend::convolutionBackwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                            const float* dy, float* dw, GemmPrecision precision)
{
    if (!CudnnConvolutions::builtIn() || runsFp8(precision, capability_)) return false;
    activate();
    return convolutions_.backwardFilter(g, outChannels, x, dy, dw, precision);
}

DeviceMemoryInfo queryDeviceMemory(int device)
{
    PLAB_CUDA_CHECK(cudaSetDevice(device));
    std::size_t freeBytes = 0, totalBytes = 0;
    PLAB_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    return {static_cast<std::uint64_t>(totalBytes - freeBytes), static_cast<std::uint64_t>(totalBytes)};
}

}  // namespace plab::cuda
