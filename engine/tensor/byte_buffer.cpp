// Host or device bytes behind one pointer.
#include "tensor/byte_buffer.h"

namespace plab {

ByteBuffer::~ByteBuffer() { release(); }

void ByteBuffer::release() noexcept
{
    if (device_ && deviceData_) device_->release(deviceData_);
    deviceData_ = nullptr;
    capacity_ = 0;
}

void ByteBuffer::resize(std::size_t n, DeviceAllocator* device)
{
    if (device != device_) {
        release();
        host_.clear();
        device_ = device;
    }
    size_ = n;
    if (!device_) {
        host_.resize(n);
        return;
    }
    if (n <= capacity_) return;
    release();
    deviceData_ = static_cast<std::uint8_t*>(device_->allocate(n));
    capacity_ = n;
}

}  // namespace plab
