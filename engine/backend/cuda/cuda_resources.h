// The CUDA objects one backend owns, each released by its destructor without throwing:
// its memory pool, its stream, its cuBLAS and cuBLASLt handles, growable device buffers (stream-ordered
// from the pool, so growing one never waits for the device) and growable pinned host
// buffers (the targets of the device -> host copies the host waits for). Members of
// CudaBackend are declared so that the buffers are freed on the stream before it drains
// and is destroyed, and the pool is destroyed after that.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace plab::cuda {

// A stream-ordered memory pool of `device` owned by one backend, so that what a run keeps
// cached is given back when its backend goes (the device's default pool is process-wide,
// and a release threshold set on it would outlive every backend). Freed blocks stay cached
// (release threshold UINT64_MAX): a step that frees and reallocates the same shapes gets
// them back without asking the driver. The destructor trims the pool to nothing and
// destroys it; it must run after every block was freed and the stream has drained (a
// block still allocated then makes the driver defer the pool's release until it is freed).
// Throws std::runtime_error when the device has no stream-ordered memory pools. maxBytes,
// when not 0, caps what the pool may hold (a device-memory budget, memory_budget.h).
class MemoryPool {
public:
    explicit MemoryPool(int device, std::uint64_t maxBytes = 0);
    ~MemoryPool();
    MemoryPool(const MemoryPool&) = delete;
    MemoryPool& operator=(const MemoryPool&) = delete;
    cudaMemPool_t get() const { return pool_; }
    // The bytes the pool holds from the device now (cudaMemPoolAttrReservedMemCurrent).
    std::uint64_t reserved() const;

private:
    cudaMemPool_t pool_ = nullptr;
};

// A non-blocking stream of `device` (our work never waits on the legacy default stream of
// other code); destroyed after it has drained.
class Stream {
public:
    explicit Stream(int device);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return stream_; }

private:
    cudaStream_t stream_ = nullptr;
};

// A cuBLAS handle issuing on `stream`, with host alpha/beta and no reduced-precision
// split-K reductions (the sums stay in the compute type the recipe asks for).
class CublasHandle {
public:
    explicit CublasHandle(cudaStream_t stream);
    ~CublasHandle();
    CublasHandle(const CublasHandle&) = delete;
    CublasHandle& operator=(const CublasHandle&) = delete;
    cublasHandle_t get() const { return handle_; }

private:
    cublasHandle_t handle_ = nullptr;
};

// A cuBLASLt handle (the FP8 GEMMs, cuda_fp8.cpp); the stream is given per call.
class CublasLtHandle {
public:
    CublasLtHandle();
    ~CublasLtHandle();
    CublasLtHandle(const CublasLtHandle&) = delete;
    CublasLtHandle& operator=(const CublasLtHandle&) = delete;
    cublasLtHandle_t get() const { return handle_; }

private:
    cublasLtHandle_t handle_ = nullptr;
};

// Device memory that only grows, allocated from `pool` and freed in the order of `stream`:
// work already enqueued keeps using the old block until the stream reaches the free.
class DeviceBuffer {
public:
    DeviceBuffer(cudaStream_t stream, cudaMemPool_t pool) : stream_(stream), pool_(pool) {}
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // At least `bytes`; on growth the first `keepBytes` are copied over, the rest undefined.
    // A throw leaves the buffer as it was.
    void* reserve(std::size_t bytes, std::size_t keepBytes = 0);
    template <typename T>
    T* reserveFor(std::size_t count)
    {
        return static_cast<T*>(reserve(count * sizeof(T)));
    }
    void* data() const { return ptr_; }
    std::size_t capacity() const { return bytes_; }

private:
    cudaStream_t stream_;
    cudaMemPool_t pool_;
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

// Page-locked host memory that only grows. Only reused after the copies into it were
// waited for, so growing it never races with the device.
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    ~PinnedBuffer();
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    void* reserve(std::size_t bytes);
    template <typename T>
    T* reserveFor(std::size_t count)
    {
        return static_cast<T*>(reserve(count * sizeof(T)));
    }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace plab::cuda
