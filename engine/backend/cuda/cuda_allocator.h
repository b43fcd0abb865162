// The CUDA backend's DeviceAllocator: tensors placed on it live in device memory from the
// backend's own memory pool (MemoryPool, cuda_resources.h), allocated and freed in the order
// of the backend's stream (cudaMallocFromPoolAsync / cudaFreeAsync), so a tensor freed while
// kernels still read it stays valid until they are done, and reallocating per step costs no
// synchronisation. The pool keeps freed blocks cached: a training step that frees and
// reallocates the same shapes gets them back without asking the driver. Every tensor placed
// here must be released before the backend is destroyed (the pool goes with it).
#pragma once

#include "tensor/device_allocator.h"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace plab::cuda {

class StreamAllocator final : public DeviceAllocator {
public:
    StreamAllocator(int device, cudaStream_t stream, cudaMemPool_t pool);

    void* allocate(std::size_t bytes) override;
    void release(void* p) noexcept override;

    void copy(void* dst, const void* src, std::size_t bytes) override;
    // From pageable memory the driver stages the bytes before returning, so the caller may
    // reuse `host` at once (Tensor::place frees it); pinned sources must outlive the copy.
    void upload(void* dst, const void* host, std::size_t bytes) override;
    void download(void* host, const void* src, std::size_t bytes) override;
    void fill(float* dst, std::size_t count, float value) override;

private:
    int device_;
    cudaStream_t stream_;
    cudaMemPool_t pool_;
};

}  // namespace plab::cuda
