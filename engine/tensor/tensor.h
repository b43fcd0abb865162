// A dense tensor of fp32 values that are exactly representable in its storage format.
// Shapes are row-major; conv activations are (C, N, H, W). On the host, a tensor whose
// storage format is fp16 or bf16 may be packed: it then holds its values as that
// format's 2-byte bit patterns (bits16()), exactly, and data() is refused. A tensor registered with a
// MemoryAccountant reports its bytes (in its storage format, or as a quantised copy would
// be stored) under its category for as long as it lives. A tensor lives in host memory unless placed on a backend's device
// allocator (place()); then data() is a device pointer, for the backend's ops only, and
// operator[] must not be used (toHost() copies the values out).
#pragma once

#include "numerics/format.h"
#include "tensor/device_allocator.h"
#include "tensor/memory.h"

#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace plab {

using Shape = std::vector<std::int64_t>;

// What Tensor::resize leaves in the elements it adds: zeros (as std::vector::resize does),
// or whatever was there (a buffer the caller overwrites whole before reading: no memset of
// megabytes each pass).
enum class NewElements { zero, undefined };
// Whether undefined new elements are poisoned, written as NaN (16-bit: 0x7FFF, a NaN in fp16
// and bf16), so that a reader that relied on zeros computes NaN and fails its tests: on in
// AddressSanitizer builds and with PLAB_POISON_NEW_ELEMENTS=1 (CTest sets it for the suites
// and lessons), and for a scope in tests.
bool poisonsNewElements();
void setPoisonNewElements(bool poison);

// std::allocator that leaves an element constructed without a value uninitialised (so
// std::vector::resize does not write what it adds); a value given is constructed as usual.
template <typename T>
struct UninitialisedAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = UninitialisedAllocator<U>;
    };
    UninitialisedAllocator() = default;
    template <typename U>
    UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept
    {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) noexcept(std::is_nothrow_constructible_v<U, Args...>)
    {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

// The size of a quantised copy as FP8/MX/NVFP4 hardware stores it: elementBits
// per value, one byte of scale per blockSize values (0: none; counted over the whole
// tensor, so a partial block at the end of each row is not counted apart) and tensorBytes
// for the whole tensor (its fp32 scale). The emulation keeps the values in fp32, as it keeps a bf16
// tensor's; the accountant counts the modelled bytes in both cases.
struct QuantizedStorage {
    int elementBits = 8;
    int blockSize = 0;
    int tensorBytes = 4;
    bool operator==(const QuantizedStorage&) const = default;
};
// The bytes of `count` values stored so (0 for none).
std::int64_t quantizedBytes(const QuantizedStorage& q, std::int64_t count);
std::int64_t elementCount(const Shape& s);
std::string shapeString(const Shape& s);

class Tensor {
public:
    Tensor() = default;
    Tensor(Shape shape, Format storage = Format::fp32);
    Tensor(const Tensor& o);
    Tensor& operator=(const Tensor& o);
    Tensor(Tensor&& o) noexcept;
    Tensor& operator=(Tensor&& o) noexcept;
    ~Tensor();

    // Reshapes (reallocating only when the element count grows) and keeps accounting true;
    // the elements added read as `added` says.
    void resize(const Shape& shape, NewElements added = NewElements::zero);
    void reshape(const Shape& shape);   // same element count, new view of the shape
    void setStorage(Format f);          // changes the modelled format (values untouched)
    // Models the tensor as a quantised copy (values untouched) until setStorage().
    void setQuantizedStorage(const QuantizedStorage& q);
    void fill(float v);   // v rounded to the storage format when packed
    void zero() { fill(0.0f); }

    // Packs the values into the tensor's 16-bit storage format (fp16 or bf16; each value
    // rounded to nearest even, exact for the values this tensor holds), where the tensor
    // lives: in host memory, or on its device (2 bytes an element there too; a non-empty
    // tensor goes through the host, so the layers pack empty ones and fill them with the
    // backend's ops). The fp32 buffer is freed. unpack() widens them back (exact). A packed
    // tensor stays packed when placed, and unpacks itself before it is given another
    // storage format.
    void pack();
    void unpack();
    bool packed() const { return packed_; }
    // Frees the values (host or device): an empty, unpacked tensor of the same storage
    // format, still placed and tracked where it was.
    void discard();

    // Moves the values to `device` (nullptr: host memory); a no-op when already there.
    // On a throw (out of device memory, say) the tensor stays where it was, values intact.
    void place(DeviceAllocator* device);
    DeviceAllocator* device() const { return device_; }
    bool onDevice() const { return device_ != nullptr; }
    // The values in host memory (a download when placed on a device).
    std::vector<float> toHost() const;
    // Overwrites the first values.size() elements from host memory (an upload on a device).
    void assignFromHost(const float* values, std::int64_t count);

    // Registers with an accountant under a category (nullptr unregisters).
    void track(MemoryAccountant* accountant, MemoryCategory category);

    const Shape& shape() const { return shape_; }
    std::int64_t dim(int i) const { return shape_[static_cast<std::size_t>(i)]; }
    int rank() const { return static_cast<int>(shape_.size()); }
    std::int64_t size() const { return size_; }
    Format storage() const { return storage_; }
    std::int64_t bytes() const;   // size() * storage bytes of the format, or the quantised copy's

    // The fp32 values (throws std::logic_error for a packed tensor: use bits16()).
    float* data()
    {
        if (packed_) refusePacked("data()");
        return device_ ? static_cast<float*>(deviceData_) : host_.data();
    }
    const float* data() const
    {
        if (packed_) refusePacked("data()");
        return device_ ? static_cast<const float*>(deviceData_) : host_.data();
    }
    // A packed tensor's bit patterns (throws std::logic_error for one that is not packed):
    // a device pointer when placed.
    std::uint16_t* bits16()
    {
        if (!packed_) refusePacked("bits16()");
        return device_ ? static_cast<std::uint16_t*>(deviceData_) : packedHost_.data();
    }
    const std::uint16_t* bits16() const
    {
        if (!packed_) refusePacked("bits16()");
        return device_ ? static_cast<const std::uint16_t*>(deviceData_) : packedHost_.data();
    }
    // Host tensors only: a placed tensor's host vector is empty. Checked in debug builds
    // only, as these are the CPU backend's inner loops.
    float& operator[](std::int64_t i)
    {
        assert(!device_ && "Tensor::operator[] on a tensor placed on a device (use toHost())");
        assert(!packed_ && "Tensor::operator[] on a packed tensor");
        return host_[static_cast<std::size_t>(i)];
    }
    float operator[](std::int64_t i) const
    {
        assert(!device_ && "Tensor::operator[] on a tensor placed on a device (use toHost())");
        assert(!packed_ && "Tensor::operator[] on a packed tensor");
        return host_[static_cast<std::size_t>(i)];
    }

private:
    [[noreturn]] void refusePacked(const char* what) const;
    std::size_t elementBytes() const { return packed_ ? sizeof(std::uint16_t) : sizeof(float); }
    // The packed patterns, wherever they live (a download from a device).
    std::vector<std::uint16_t> patternsOnHost() const;
    // Replaces a placed tensor's device buffer by one of size_ elements of bytesPerElement
    // each, uploaded from `bytes` in host memory (the old one stays on a throw).
    void uploadFresh(const void* bytes, std::size_t bytesPerElement);
    void account(std::int64_t deltaBytes);
    void releaseDevice() noexcept;
    void takeFrom(Tensor& o) noexcept;   // o's contents, leaving o empty (the moves)
    // Makes room for `count` elements where the tensor lives, keeping the first `keep`;
    // the others as `added` says (on the host, those the vector kept stay as they were).
    void allocate(std::int64_t count, std::int64_t keep, NewElements added);

    Shape shape_;
    std::int64_t size_ = 0;
    std::vector<float, UninitialisedAllocator<float>> host_;   // the values when on the host, not packed
    std::vector<std::uint16_t, UninitialisedAllocator<std::uint16_t>> packedHost_;   // their bits when packed
    bool packed_ = false;
    DeviceAllocator* device_ = nullptr;   // where they are otherwise
    void* deviceData_ = nullptr;           // fp32 values, or 16-bit patterns when packed
    std::int64_t deviceCapacity_ = 0;     // elements (of elementBytes() each)
    Format storage_ = Format::fp32;
    std::optional<QuantizedStorage> quantized_;
    MemoryAccountant* accountant_ = nullptr;
    MemoryCategory category_ = MemoryCategory::workspace;
};

}  // namespace plab
