// A growable array of bytes that lives where a backend keeps its tensors (host memory, or
// a device allocator's memory), for per-element side data such as max-pooling positions.
#pragma once

#include "tensor/device_allocator.h"
#include "tensor/memory.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plab {

class ByteBuffer {
public:
    ByteBuffer() = default;
    ~ByteBuffer();
    ByteBuffer(const ByteBuffer&) = delete;
    ByteBuffer& operator=(const ByteBuffer&) = delete;

    // Room for n bytes on `device` (nullptr: host memory); contents undefined afterwards.
    void resize(std::size_t n, DeviceAllocator* device);
    // Frees the bytes (no longer counted), keeping the registration.
    void clear();
    std::uint8_t* data() { return device_ ? deviceData_ : host_.data(); }
    const std::uint8_t* data() const { return device_ ? deviceData_ : host_.data(); }
    std::size_t size() const { return size_; }
    // Registers with an accountant under a category (nullptr unregisters); size() bytes
    // are counted there from then on.
    void track(MemoryAccountant* accountant, MemoryCategory category);

private:
    void release() noexcept;

    std::vector<std::uint8_t> host_;
    DeviceAllocator* device_ = nullptr;
    std::uint8_t* deviceData_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
    MemoryAccountant* accountant_ = nullptr;
    MemoryCategory category_ = MemoryCategory::workspace;
};

}  // namespace plab
