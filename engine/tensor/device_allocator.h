// Where a backend keeps its tensors. The CPU backend has none (tensors live in host
// memory); the CUDA plugin's allocator hands out device memory, and a Tensor placed on it
// (Tensor::place) holds its values there: data() is then a device pointer that only the
// backend's ops may touch. Copies between host and device go through here.
// Part of the CUDA plugin's interface: bump kCudaPluginAbiVersion (backend/backend.h)
// whenever this class changes.
#pragma once

#include <cstddef>

namespace plab {

class DeviceAllocator {
public:
    virtual ~DeviceAllocator() = default;

    // At least `bytes` of device memory, 256-byte aligned; throws std::runtime_error
    // naming the failed call (out of memory included). bytes == 0 may return null.
    virtual void* allocate(std::size_t bytes) = 0;
    virtual void release(void* p) noexcept = 0;

    // Ordered after the backend's earlier work; download() returns once the bytes are on
    // the host, the others may return before the copy has run.
    virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;   // device -> device
    virtual void upload(void* dst, const void* host, std::size_t bytes) = 0;
    virtual void download(void* host, const void* src, std::size_t bytes) = 0;
    virtual void fill(float* dst, std::size_t count, float value) = 0;
};

}  // namespace plab
