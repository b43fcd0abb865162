// The CUDA implementation of ComputeBackend (C++20, compiled by the host compiler): cuBLAS
// GEMMs with the compute type each precision implies, the plugin's kernels for rounding
// with telemetry and for im2col / col2im, and the device probe behind plab_cuda_probe.
// Data arrives as host pointers through the current interface, so every op copies its
// operands in, computes, and copies the result out (see docs/CUDA.md).
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cuda/cuda_status.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace plab::cuda {

// What a device can do, from its compute capability.
struct DeviceCapability {
    int major = 0;
    int minor = 0;
    bool bf16() const { return major >= 8; }   // bf16 tensor-core GEMM: Ampere and newer
    bool tf32() const { return major >= 8; }   // tf32 tensor cores: Ampere and newer
};

// Fills info (name "cuda", availability, reason, versions of the CUDA runtime, driver,
// cuBLAS and cuDNN, the devices). Never throws: an unusable CUDA stack is a reason.
void probeDevices(BackendInfo& info);

// Device memory of the current process's view of device `device`: used and total bytes
// (cudaMemGetInfo). Throws on a CUDA error.
struct DeviceMemory {
    std::uint64_t used = 0;
    std::uint64_t total = 0;
};
DeviceMemory deviceMemory(int device);

class CudaBackend final : public ComputeBackend {
public:
    explicit CudaBackend(int device);   // throws std::runtime_error when the device is unusable
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    const BackendInfo& info() const override { return info_; }
    int threads() const override { return pool_.threads(); }

    void gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
              float* C, std::int64_t ldc, GemmPrecision precision) override;
    void im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count,
                float* cols) override;
    void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count,
                float* dst) override;
    void roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist) override;
    void parallelFor(std::int64_t n, std::int64_t grain,
                     const std::function<void(std::int64_t, std::int64_t)>& body) override;

    DeviceMemory memory() const { return deviceMemory(device_); }

private:
    // Makes this backend's device current on the calling thread (the current device is
    // per host thread, and the trainer calls from its worker thread).
    void activate() const;
    // Copies a row-major (rows, cols) host matrix with leading dimension ld to a dense
    // device matrix, and back.
    void upload(const float* host, std::int64_t ld, std::int64_t rows, std::int64_t cols, float* device);
    void download(const float* device, std::int64_t rows, std::int64_t cols, float* host, std::int64_t ld);
    void synchronize();

    int device_ = 0;
    DeviceCapability capability_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    BackendInfo info_;
    cpu::ThreadPool pool_;   // parallelFor runs host loops (the layers' elementwise work)

    // Reused device buffers: GEMM operands (fp32 and 16-bit), im2col blocks, counters.
    DeviceBuffer a_, b_, c_, a16_, b16_, c16_, counters_;
};

}  // namespace plab::cuda
