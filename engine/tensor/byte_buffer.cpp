// Host or device bytes behind one pointer.
#include "tensor/byte_buffer.h"

namespace plab {

ByteBuffer::~ByteBuffer()
{
    track(nullptr, category_);
    release();
}

void ByteBuffer::track(MemoryAccountant* accountant, MemoryCategory category)
{
    if (accountant_) accountant_->remove(category_, static_cast<std::int64_t>(size_));
    accountant_ = accountant;
    category_ = category;
    if (accountant_) accountant_->add(category_, static_cast<std::int64_t>(size_));
}

void ByteBuffer::release() noexcept
{
    if (device_ && deviceData_) device_->release(deviceData_);
    deviceData_ = nullptr;
    capacity_ = 0;
}

void ByteBuffer::clear()
{
    if (accountant_) accountant_->remove(category_, static_cast<std::int64_t>(size_));
    size_ = 0;
    release();
    std::vector<std::uint8_t>().swap(host_);
}

void ByteBuffer::resize(std::size_t n, DeviceAllocator* device)
{
    if (device != device_) {
        release();
        host_.clear();
        device_ = device;
    }
    if (accountant_) accountant_->add(category_, static_cast<std::int64_t>(n) - static_cast<std::int64_t>(size_));
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
