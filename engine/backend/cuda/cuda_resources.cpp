// Lifetimes of the backend's memory pool, stream, cuBLAS handle, device and pinned buffers
// (see cuda_resources.h). Constructors throw on failure; destructors never do.
#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/cuda_status.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace plab::cuda {

namespace {

// Growth by half again, so a slowly growing sequence of shapes reallocates rarely.
std::size_t grownSize(std::size_t bytes) { return bytes + bytes / 2 + 256; }

}  // namespace

MemoryPool::MemoryPool(int device, std::uint64_t maxBytes)
{
    int pools = 0;
    PLAB_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
    if (!pools)
        throw std::runtime_error("CUDA device " + std::to_string(device) +
                                 " has no stream-ordered memory pools (cudaMallocAsync); the CUDA backend needs them");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    props.maxSize = static_cast<std::size_t>(maxBytes);   // 0: as much as the device has
    if (const cudaError_t status = cudaMemPoolCreate(&pool_, &props); status != cudaSuccess) {
        if (!maxBytes) throwCudaError(status, "cudaMemPoolCreate");
        throwCudaError(status, "cudaMemPoolCreate capped at the device-memory budget of " +
                                   std::to_string(maxBytes >> 20) + " MiB (PLAB_CUDA_MEMORY_BUDGET_MIB)");
    }
    std::uint64_t threshold = UINT64_MAX;
    if (const cudaError_t status = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
        status != cudaSuccess) {
        (void)cudaMemPoolDestroy(pool_);   // the destructor does not run for a throwing constructor
        throwCudaError(status, "cudaMemPoolSetAttribute");
    }
}

std::uint64_t MemoryPool::reserved() const
{
    std::uint64_t bytes = 0;   // the attribute is a 64-bit unsigned (cuuint64_t)
    PLAB_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &bytes));
    return bytes;
}

MemoryPool::~MemoryPool()
{
    // Every block was freed and the stream drained before we get here (CudaBackend's
    // member order), so the pool goes at once. Trimmed first: should a tensor have leaked
    // past its backend, the driver defers destroying the pool until that block is freed,
    // and the trim still gives back everything else now.
    const bool trimmed = cudaMemPoolTrimTo(pool_, 0) == cudaSuccess;
    const bool destroyed = cudaMemPoolDestroy(pool_) == cudaSuccess;
    if (!trimmed || !destroyed) (void)cudaGetLastError();
}

Stream::Stream(int device)
{
    PLAB_CUDA_CHECK(cudaSetDevice(device));
    PLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream()
{
    // A failing teardown (a lost device) must not take the process down; a failure is
    // cleared from the runtime's last-error slot so that no later check reports it.
    const bool drained = cudaStreamSynchronize(stream_) == cudaSuccess;
    const bool destroyed = cudaStreamDestroy(stream_) == cudaSuccess;
    if (!drained || !destroyed) (void)cudaGetLastError();
}

CublasHandle::CublasHandle(cudaStream_t stream)
{
    PLAB_CUBLAS_CHECK(cublasCreate(&handle_));
    try {
        PLAB_CUBLAS_CHECK(cublasSetStream(handle_, stream));
        PLAB_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
        PLAB_CUBLAS_CHECK(cublasSetMathMode(
            handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    } catch (...) {
        (void)cublasDestroy(handle_);   // the destructor does not run for a throwing constructor
        throw;
    }
}

CublasHandle::~CublasHandle() { (void)cublasDestroy(handle_); }

CublasLtHandle::CublasLtHandle() { PLAB_CUBLAS_CHECK(cublasLtCreate(&handle_)); }

CublasLtHandle::~CublasLtHandle() { (void)cublasLtDestroy(handle_); }

DeviceBuffer::~DeviceBuffer()
{
    if (ptr_ && cudaFreeAsync(ptr_, stream_) != cudaSuccess) (void)cudaGetLastError();
}

void* DeviceBuffer::reserve(std::size_t bytes, std::size_t keepBytes)
{
    if (bytes <= bytes_ && ptr_) return ptr_;
    const std::size_t want = grownSize(bytes);
    void* fresh = nullptr;
    PLAB_CUDA_CHECK(cudaMallocFromPoolAsync(&fresh, want, pool_, stream_));
    const std::size_t kept = keepBytes < bytes_ ? keepBytes : bytes_;
    if (kept) {
        if (const cudaError_t status = cudaMemcpyAsync(fresh, ptr_, kept, cudaMemcpyDeviceToDevice, stream_);
            status != cudaSuccess) {
            if (cudaFreeAsync(fresh, stream_) != cudaSuccess) (void)cudaGetLastError();
            throwCudaError(status, "cudaMemcpyAsync");
        }
    }
    // The new block is in use from here on, so no throw past this point: a throw means the
    // buffer is as it was. Failing to free the old block leaks it (a broken context, which
    // the next checked call reports).
    if (ptr_ && cudaFreeAsync(ptr_, stream_) != cudaSuccess) (void)cudaGetLastError();
    ptr_ = fresh;
    bytes_ = want;
    return ptr_;
}

PinnedBuffer::~PinnedBuffer()
{
    if (ptr_ && cudaFreeHost(ptr_) != cudaSuccess) (void)cudaGetLastError();
}

void* PinnedBuffer::reserve(std::size_t bytes)
{
    if (bytes <= bytes_ && ptr_) return ptr_;
    if (ptr_) {
        PLAB_CUDA_CHECK(cudaFreeHost(ptr_));
        ptr_ = nullptr;
        bytes_ = 0;
    }
    const std::size_t want = grownSize(bytes);
    PLAB_CUDA_CHECK(cudaMallocHost(&ptr_, want));
    bytes_ = want;
    return ptr_;
}

}  // namespace plab::cuda
