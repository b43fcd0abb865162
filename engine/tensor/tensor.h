// A dense tensor of fp32 values that are exactly representable in its storage format.
// Shapes are row-major; conv activations are (N, C, H, W). A tensor registered with a
// MemoryAccountant reports its bytes (in its storage format) under its category for as
// long as it lives.
#pragma once

#include "numerics/format.h"
#include "tensor/memory.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace plab {

using Shape = std::vector<std::int64_t>;
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

    // Reshapes (reallocating only when the element count grows) and keeps accounting true.
    void resize(const Shape& shape);
    void reshape(const Shape& shape);   // same element count, new view of the shape
    void setStorage(Format f);          // changes the modelled format (values untouched)
    void fill(float v);
    void zero() { fill(0.0f); }

    // Registers with an accountant under a category (nullptr unregisters).
    void track(MemoryAccountant* accountant, MemoryCategory category);

    const Shape& shape() const { return shape_; }
    std::int64_t dim(int i) const { return shape_[static_cast<std::size_t>(i)]; }
    int rank() const { return static_cast<int>(shape_.size()); }
    std::int64_t size() const { return static_cast<std::int64_t>(data_.size()); }
    Format storage() const { return storage_; }
    std::int64_t bytes() const;   // size() * storage bytes of the format

    float* data() { return data_.data(); }
    const float* data() const { return data_.data(); }
    float& operator[](std::int64_t i) { return data_[static_cast<std::size_t>(i)]; }
    float operator[](std::int64_t i) const { return data_[static_cast<std::size_t>(i)]; }

private:
    void account(std::int64_t deltaBytes);

    Shape shape_;
    std::vector<float> data_;
    Format storage_ = Format::fp32;
    MemoryAccountant* accountant_ = nullptr;
    MemoryCategory category_ = MemoryCategory::workspace;
};

}  // namespace plab
