// Dense tensors whose accounted size is that of their storage format: held as fp32 values,
// or packed into their 16-bit format's bits (in host memory or on a device).
#include "tensor/tensor.h"

#include "numerics/storage_convert.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace plab {

namespace {

// A new block of `bytes` on `device`, filled by fill(block), and released again when that
// throws, so that the tensor it was for keeps what it had (nothing for 0 bytes).
template <typename Fill>
void* filledBlock(DeviceAllocator& device, std::size_t bytes, Fill&& fill)
{
    if (bytes == 0) return nullptr;
    void* block = device.allocate(bytes);
    try {
        fill(block);
    } catch (...) {
        device.release(block);
        throw;
    }
    return block;
}

// A NaN in fp16 (exponent bits 0x7C00 all set) and in bf16 (0x7F80): what poisoned 16-bit
// elements hold.
constexpr std::uint16_t kNaNPattern16 = 0x7FFF;

std::atomic<bool>& poisonSwitch()
{
    static std::atomic<bool> poison{[] {
#if defined(__SANITIZE_ADDRESS__)
        return true;
#else
        const char* v = std::getenv("PLAB_POISON_NEW_ELEMENTS");
        return v != nullptr && std::string_view(v) == "1";
#endif
    }()};
    return poison;
}

// Writes the 16-bit pattern `bits` into `count` elements from `dst` on, on the device: as
// an fp32 fill of pattern pairs (no host buffer and no transfer, which on a GPU waits for
// the stream and stages through the host), a lone pattern at a 4-byte-misaligned start or
// an odd end uploaded. Pairs whose fp32 reading is not zero or normal (a NaN, infinity or subnormal,
// which a fill's float might not carry bit for bit) are uploaded whole, as before.
void fill16(DeviceAllocator& device, std::uint16_t* dst, std::size_t count, std::uint16_t bits)
{
    if (count == 0) return;
    const std::uint32_t pair = (std::uint32_t{bits} << 16) | bits;
    const std::uint32_t exponent = (pair >> 23) & 0xFFu;
    if (pair != 0 && (exponent == 0 || exponent == 0xFFu)) {
        const std::vector<std::uint16_t> patterns(count, bits);
        device.upload(dst, patterns.data(), count * sizeof(std::uint16_t));
        return;
    }
    if (reinterpret_cast<std::uintptr_t>(dst) % sizeof(float) != 0) {
        device.upload(dst, &bits, sizeof bits);
        ++dst;
        --count;
    }
    if (count / 2) device.fill(reinterpret_cast<float*>(dst), count / 2, std::bit_cast<float>(pair));
    if (count % 2) device.upload(dst + count - 1, &bits, sizeof bits);
}

}  // namespace

bool poisonsNewElements() { return poisonSwitch(); }
void setPoisonNewElements(bool poison) { poisonSwitch() = poison; }

std::int64_t elementCount(const Shape& s)
{
    std::int64_t n = 1;
    for (auto d : s) {
        if (d < 0) throw std::invalid_argument("negative tensor dimension " + std::to_string(d));
        n *= d;
    }
    return n;
}

std::string shapeString(const Shape& s)
{
    std::ostringstream out;
    out << '(';
    for (std::size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
    out << ')';
    return out.str();
}

Tensor::Tensor(Shape shape, Format storage)
    : shape_(std::move(shape)), size_(elementCount(shape_)), host_(static_cast<std::size_t>(size_), 0.0f),
      storage_(storage)
{
}

Tensor::Tensor(const Tensor& o) : shape_(o.shape_), size_(o.size_), storage_(o.storage_), quantized_(o.quantized_)
{
    packed_ = o.packed_;
    if (!o.device_) {
        host_ = o.host_;
        packedHost_ = o.packedHost_;
        return;
    }
    device_ = o.device_;
    allocate(size_, 0, NewElements::undefined);
    try {
        if (size_) device_->copy(deviceData_, o.deviceData_, static_cast<std::size_t>(size_) * elementBytes());
    } catch (...) {
        releaseDevice();   // no destructor runs for a constructor that throws
        throw;
    }
}

Tensor& Tensor::operator=(const Tensor& o)
{
    if (this == &o) return *this;
    const auto before = bytes();
    // The shape is taken last, so that a throw on the way never leaves o's shape over
    // this tensor's values.
    Shape shape = o.shape_;
    if (o.device_ && device_ != o.device_) place(o.device_);
    if (!o.device_ && device_) place(nullptr);
    if (!o.device_) {
        host_ = o.host_;
        packedHost_ = o.packedHost_;
        packed_ = o.packed_;
    } else if (packed_ != o.packed_) {
        // Elements of the other size: a buffer of o's bytes is filled before this one goes,
        // so that a throw leaves the tensor as it was.
        const auto bytesOfO = static_cast<std::size_t>(o.size_) * o.elementBytes();
        void* fresh = filledBlock(*device_, bytesOfO, [&](void* b) { device_->copy(b, o.deviceData_, bytesOfO); });
        releaseDevice();
        packedHost_ = {};
        packed_ = o.packed_;
        deviceData_ = fresh;
        deviceCapacity_ = o.size_;
    } else {
        packedHost_ = {};
        allocate(o.size_, 0, NewElements::undefined);
        if (o.size_) device_->copy(deviceData_, o.deviceData_, static_cast<std::size_t>(o.size_) * elementBytes());
    }
    shape_ = std::move(shape);
    size_ = o.size_;
    storage_ = o.storage_;
    quantized_ = o.quantized_;
    account(bytes() - before);
    return *this;
}

Tensor::Tensor(Tensor&& o) noexcept { takeFrom(o); }

Tensor& Tensor::operator=(Tensor&& o) noexcept
{
    if (this == &o) return *this;
    track(nullptr, category_);
    releaseDevice();
    takeFrom(o);
    return *this;
}

void Tensor::takeFrom(Tensor& o) noexcept
{
    shape_ = std::move(o.shape_);
    size_ = o.size_;
    host_ = std::move(o.host_);
    packedHost_ = std::move(o.packedHost_);
    packed_ = o.packed_;
    device_ = o.device_;
    deviceData_ = o.deviceData_;
    deviceCapacity_ = o.deviceCapacity_;
    storage_ = o.storage_;
    quantized_ = o.quantized_;
    accountant_ = o.accountant_;
    category_ = o.category_;
    o.accountant_ = nullptr;
    o.host_.clear();
    o.packedHost_.clear();
    o.packed_ = false;
    o.shape_.clear();
    o.size_ = 0;
    o.device_ = nullptr;
    o.deviceData_ = nullptr;
    o.deviceCapacity_ = 0;
}

Tensor::~Tensor()
{
    track(nullptr, category_);
    releaseDevice();
}

void Tensor::releaseDevice() noexcept
{
    if (device_ && deviceData_) device_->release(deviceData_);
    deviceData_ = nullptr;
    deviceCapacity_ = 0;
}

void Tensor::allocate(std::int64_t count, std::int64_t keep, NewElements added)
{
    // New elements read as zero (+0 in the 16-bit formats too), or as NaN where poisoned,
    // or are not written at all.
    const bool zero = added == NewElements::zero;
    const bool writes = zero || poisonsNewElements();
    const float value = zero ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    const std::uint16_t bits = zero ? std::uint16_t{0} : kNaNPattern16;
    if (!device_) {
        const auto grow = [&](auto& v, auto fill) {
            const std::size_t had = v.size();
            v.resize(static_cast<std::size_t>(count));
            if (writes && v.size() > had) std::fill(v.begin() + had, v.end(), fill);
        };
        if (packed_)
            grow(packedHost_, bits);
        else
            grow(host_, value);
        return;
    }
    const auto write = [&](void* base, std::int64_t from) {
        if (!writes || count <= from) return;
        const auto n = static_cast<std::size_t>(count - from);
        if (!packed_)
            device_->fill(static_cast<float*>(base) + from, n, value);
        else
            fill16(*device_, static_cast<std::uint16_t*>(base) + from, n, bits);
    };
    if (count <= deviceCapacity_) {
        write(deviceData_, keep);
        return;
    }
    const std::int64_t kept = std::min(keep, deviceCapacity_);
    void* fresh = filledBlock(*device_, static_cast<std::size_t>(count) * elementBytes(), [&](void* b) {
        if (kept > 0) device_->copy(b, deviceData_, static_cast<std::size_t>(kept) * elementBytes());
        write(b, kept);
    });
    releaseDevice();
    deviceData_ = fresh;
    deviceCapacity_ = count;
}

void Tensor::place(DeviceAllocator* device)
{
    // Strongly exception-safe: the values are copied to where they go first, and the
    // tensor switches over only once nothing can throw any more. A failed allocation or
    // copy (out of device memory) leaves it where it was, with its values.
    if (device == device_) return;
    // A packed tensor moves its 16-bit patterns, an unpacked one its fp32 values.
    const auto bytesOfValues = static_cast<std::size_t>(size_) * elementBytes();
    if (!device) {   // device -> host
        if (packed_) {
            const std::vector<std::uint16_t> bits = patternsOnHost();
            packedHost_.assign(bits.begin(), bits.end());
            releaseDevice();
        } else {
            const std::vector<float> values = toHost();
            host_.assign(values.begin(), values.end());
            releaseDevice();
        }
        device_ = nullptr;
        return;
    }
    // The values of a tensor on another device go through the host.
    std::vector<float> staged;
    std::vector<std::uint16_t> stagedBits;
    const void* values = nullptr;
    if (packed_) {
        if (device_) stagedBits = patternsOnHost();
        values = device_ ? stagedBits.data() : packedHost_.data();
    } else {
        if (device_) staged = toHost();
        values = device_ ? staged.data() : host_.data();
    }
    void* fresh = filledBlock(*device, bytesOfValues, [&](void* b) { device->upload(b, values, bytesOfValues); });
    releaseDevice();
    host_ = {};
    packedHost_ = {};
    device_ = device;
    deviceData_ = fresh;
    deviceCapacity_ = size_;
}

std::vector<std::uint16_t> Tensor::patternsOnHost() const
{
    if (!device_) return {packedHost_.begin(), packedHost_.end()};
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(size_));
    if (size_) device_->download(bits.data(), deviceData_, bits.size() * sizeof(std::uint16_t));
    return bits;
}

void Tensor::uploadFresh(const void* bytes, std::size_t bytesPerElement)
{
    const auto total = static_cast<std::size_t>(size_) * bytesPerElement;
    void* fresh = filledBlock(*device_, total, [&](void* b) { device_->upload(b, bytes, total); });
    releaseDevice();
    deviceData_ = fresh;
    deviceCapacity_ = size_;
}

std::vector<float> Tensor::toHost() const
{
    if (packed_) {
        const std::vector<std::uint16_t> bits = patternsOnHost();
        std::vector<float> values(static_cast<std::size_t>(size_));
        widenArray(storage_, bits.data(), values.data(), values.size());
        return values;
    }
    if (!device_) return {host_.begin(), host_.end()};
    std::vector<float> values(static_cast<std::size_t>(size_));
    if (size_) device_->download(values.data(), deviceData_, static_cast<std::size_t>(size_) * sizeof(float));
    return values;
}

void Tensor::assignFromHost(const float* values, std::int64_t count)
{
    if (count < 0 || count > size_)
        throw std::invalid_argument("cannot assign " + std::to_string(count) + " values to a tensor of " +
                                    std::to_string(size_));
    if (packed_ && !device_) {
        narrowArray(storage_, values, packedHost_.data(), static_cast<std::size_t>(count));
        return;
    }
    if (packed_) {
        std::vector<std::uint16_t> bits(static_cast<std::size_t>(count));
        narrowArray(storage_, values, bits.data(), bits.size());
        if (count) device_->upload(deviceData_, bits.data(), bits.size() * sizeof(std::uint16_t));
        return;
    }
    if (!device_) {
        std::copy(values, values + count, host_.begin());
        return;
    }
    if (count) device_->upload(deviceData_, values, static_cast<std::size_t>(count) * sizeof(float));
}

std::int64_t quantizedBytes(const QuantizedStorage& q, std::int64_t count)
{
    if (count <= 0) return 0;
    const std::int64_t scales = q.blockSize > 0 ? (count + q.blockSize - 1) / q.blockSize : 0;
    return (count * q.elementBits + 7) / 8 + scales + q.tensorBytes;
}

std::int64_t Tensor::bytes() const
{
    return quantized_ ? quantizedBytes(*quantized_, size()) : size() * formatInfo(storage_).storageBytes;
}

void Tensor::account(std::int64_t deltaBytes)
{
    if (accountant_ && deltaBytes) accountant_->add(category_, deltaBytes);
}

void Tensor::resize(const Shape& shape, NewElements added)
{
    const auto before = bytes();
    const std::int64_t count = elementCount(shape);
    allocate(count, size_, added);
    shape_ = shape;
    size_ = count;
    account(bytes() - before);
}

void Tensor::reshape(const Shape& shape)
{
    if (elementCount(shape) != size())
        throw std::invalid_argument("cannot reshape " + shapeString(shape_) + " to " + shapeString(shape));
    shape_ = shape;
}

void Tensor::setStorage(Format f)
{
    if (packed_ && f != storage_) unpack();
    const auto before = bytes();
    storage_ = f;
    quantized_.reset();
    account(bytes() - before);
}

void Tensor::setQuantizedStorage(const QuantizedStorage& q)
{
    if (q.elementBits <= 0 || q.blockSize < 0 || q.tensorBytes < 0)
        throw std::invalid_argument("A quantised copy needs a positive element size and no negative scale sizes.");
    if (packed_) unpack();
    const auto before = bytes();
    storage_ = Format::fp32;
    quantized_ = q;
    account(bytes() - before);
}

void Tensor::fill(float v)
{
    if (packed_ && !device_) {
        std::fill(packedHost_.begin(), packedHost_.end(), narrowBits(storage_, v));
        return;
    }
    if (packed_) {
        fill16(*device_, static_cast<std::uint16_t*>(deviceData_), static_cast<std::size_t>(size_),
               narrowBits(storage_, v));
        return;
    }
    if (!device_) {
        std::fill(host_.begin(), host_.end(), v);
        return;
    }
    if (size_) device_->fill(static_cast<float*>(deviceData_), static_cast<std::size_t>(size_), v);
}

void Tensor::pack()
{
    if (packed_) return;
    if (quantized_ || (storage_ != Format::fp16 && storage_ != Format::bf16))
        throw std::logic_error("Tensor::pack(): a packed tensor's storage format is fp16 or bf16, not " +
                               std::string(formatName(storage_)));
    if (device_) {   // through the host: the layers pack empty tensors and fill them on the device
        std::vector<std::uint16_t> bits(static_cast<std::size_t>(size_));
        if (size_) {
            const std::vector<float> values = toHost();
            narrowArray(storage_, values.data(), bits.data(), bits.size());
        }
        uploadFresh(bits.data(), sizeof(std::uint16_t));
        packed_ = true;
        return;
    }
    packedHost_.resize(static_cast<std::size_t>(size_));
    narrowArray(storage_, host_.data(), packedHost_.data(), packedHost_.size());
    decltype(host_)().swap(host_);   // the memory goes back, not only the size
    packed_ = true;
}

void Tensor::discard()
{
    const auto before = bytes();
    decltype(host_)().swap(host_);
    decltype(packedHost_)().swap(packedHost_);
    releaseDevice();
    packed_ = false;
    shape_.clear();
    size_ = 0;
    account(bytes() - before);
}

void Tensor::unpack()
{
    if (!packed_) return;
    if (device_) {
        std::vector<float> values(static_cast<std::size_t>(size_));
        if (size_) {
            const std::vector<std::uint16_t> bits = patternsOnHost();
            widenArray(storage_, bits.data(), values.data(), values.size());
        }
        uploadFresh(values.data(), sizeof(float));
        packed_ = false;
        return;
    }
    host_.resize(static_cast<std::size_t>(size_));
    widenArray(storage_, packedHost_.data(), host_.data(), host_.size());
    decltype(packedHost_)().swap(packedHost_);
    packed_ = false;
}

void Tensor::refusePacked(const char* what) const
{
    throw std::logic_error(std::string("Tensor::") + what + " of a tensor " + shapeString(shape_) +
                           (packed_ ? " packed into 16 bits" : " that is not packed"));
}

void Tensor::track(MemoryAccountant* accountant, MemoryCategory category)
{
    if (accountant_) accountant_->remove(category_, bytes());
    accountant_ = accountant;
    category_ = category;
    if (accountant_) accountant_->add(category_, bytes());
}

}  // namespace plab
