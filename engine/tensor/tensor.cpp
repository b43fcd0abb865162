// Dense fp32-held tensors whose accounted size is that of their storage format.
#include "tensor/tensor.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace plab {

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
    : shape_(std::move(shape)), data_(static_cast<std::size_t>(elementCount(shape_)), 0.0f),
      storage_(storage)
{
}

Tensor::Tensor(const Tensor& o) : shape_(o.shape_), data_(o.data_), storage_(o.storage_) {}

Tensor& Tensor::operator=(const Tensor& o)
{
    if (this == &o) return *this;
    const auto before = bytes();
    shape_ = o.shape_;
    data_ = o.data_;
    storage_ = o.storage_;
    account(bytes() - before);
    return *this;
}

Tensor::Tensor(Tensor&& o) noexcept
    : shape_(std::move(o.shape_)), data_(std::move(o.data_)), storage_(o.storage_),
      accountant_(o.accountant_), category_(o.category_)
{
    o.accountant_ = nullptr;
    o.data_.clear();
    o.shape_.clear();
}

Tensor& Tensor::operator=(Tensor&& o) noexcept
{
    if (this == &o) return *this;
    track(nullptr, category_);
    shape_ = std::move(o.shape_);
    data_ = std::move(o.data_);
    storage_ = o.storage_;
    accountant_ = o.accountant_;
    category_ = o.category_;
    o.accountant_ = nullptr;
    o.data_.clear();
    o.shape_.clear();
    return *this;
}

Tensor::~Tensor() { track(nullptr, category_); }

std::int64_t Tensor::bytes() const
{
    return size() * formatInfo(storage_).storageBytes;
}

void Tensor::account(std::int64_t deltaBytes)
{
    if (accountant_ && deltaBytes) accountant_->add(category_, deltaBytes);
}

void Tensor::resize(const Shape& shape)
{
    const auto before = bytes();
    shape_ = shape;
    data_.resize(static_cast<std::size_t>(elementCount(shape_)));
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
    const auto before = bytes();
    storage_ = f;
    account(bytes() - before);
}

void Tensor::fill(float v) { std::fill(data_.begin(), data_.end(), v); }

void Tensor::track(MemoryAccountant* accountant, MemoryCategory category)
{
    if (accountant_) accountant_->remove(category_, bytes());
    accountant_ = accountant;
    category_ = category;
    if (accountant_) accountant_->add(category_, bytes());
}

}  // namespace plab
