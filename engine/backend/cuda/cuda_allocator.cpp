// StreamAllocator: tensors in device memory, ordered on the backend's stream (see
// cuda_allocator.h).
#include "backend/cuda/cuda_allocator.h"

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/kernels.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace plab::cuda {

StreamAllocator::StreamAllocator(int device, cudaStream_t stream, cudaMemPool_t pool)
    : device_(device), stream_(stream), pool_(pool)
{
}

void* StreamAllocator::allocate(std::size_t bytes)
{
    if (bytes == 0) return nullptr;
    PLAB_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    PLAB_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, pool_, stream_));
    // The interface promises cudaMalloc's 256-byte alignment; checked, not assumed.
    if (reinterpret_cast<std::uintptr_t>(p) % 256 != 0) {
        release(p);
        throw std::runtime_error("cudaMallocFromPoolAsync returned memory that is not 256-byte aligned");
    }
    return p;
}

void StreamAllocator::release(void* p) noexcept
{
    if (!p) return;
    // Must not throw (tensor destructors call it). A failure leaks the block to the pool
    // and is cleared from the last-error slot, so that no later check reports it.
    if (cudaSetDevice(device_) != cudaSuccess || cudaFreeAsync(p, stream_) != cudaSuccess) (void)cudaGetLastError();
}

void StreamAllocator::copy(void* dst, const void* src, std::size_t bytes)
{
    if (bytes == 0) return;
    PLAB_CUDA_CHECK(cudaSetDevice(device_));
    PLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void StreamAllocator::upload(void* dst, const void* host, std::size_t bytes)
{
    if (bytes == 0) return;
    PLAB_CUDA_CHECK(cudaSetDevice(device_));
    PLAB_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
}

void StreamAllocator::download(void* host, const void* src, std::size_t bytes)
{
    if (bytes == 0) return;
    PLAB_CUDA_CHECK(cudaSetDevice(device_));
    PLAB_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
    PLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void StreamAllocator::fill(float* dst, std::size_t count, float value)
{
    if (count == 0) return;
    PLAB_CUDA_CHECK(cudaSetDevice(device_));
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    if (bits == 0) {   // +0.0f is all zero bytes (-0.0f is not)
        PLAB_CUDA_CHECK(cudaMemsetAsync(dst, 0, count * sizeof(float), stream_));
        return;
    }
    PLAB_CUDA_CHECK(cudakernels::launchFill(dst, count, value, stream_));
}

}  // namespace plab::cuda
