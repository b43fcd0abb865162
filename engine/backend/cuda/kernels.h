// Launch wrappers of the plugin's own CUDA kernels (kernels.cu): fused rounding with
// statistics, fp32 <-> 16-bit storage conversion for cuBLAS operands, im2col / col2im.
// Plain C++17 over device pointers, so that nvcc (C++17) and g++ (C++20, cuda_backend.cpp)
// share it. Each wrapper only enqueues work on `stream` and returns the launch status;
// the caller checks it and turns failures into exceptions.
#pragma once

#include "backend/cuda/kernel_math.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace plab::cudakernels {

// Rounds src[0..n) to `format` into dst (may alias). counters (device, kCounterSlots
// values) get the element counts added when non-null; wantStats / wantHist pick which.
cudaError_t launchRound(int format, const float* src, float* dst, std::size_t n,
                        unsigned long long* counters, bool wantStats, bool wantHist,
                        cudaStream_t stream);

// fp32 -> 16-bit patterns of format kFp16 or kBf16 (the rounding of kernel_math.h), and
// back. Operands arrive already rounded, so these conversions are exact in practice.
cudaError_t launchTo16Bit(int format, const float* src, std::uint16_t* dst, std::size_t n,
                          cudaStream_t stream);
cudaError_t launchFrom16Bit(int format, const std::uint16_t* src, float* dst, std::size_t n,
                            cudaStream_t stream);

// cols (patchSize, count * H * W) from the dense block src (C, count, H, W) on the device.
cudaError_t launchIm2col(const ConvShape& block, const float* src, float* cols, cudaStream_t stream);
// dst (C, count, H, W) overwritten with the col2im sums of cols.
cudaError_t launchCol2im(const ConvShape& block, const float* cols, float* dst, cudaStream_t stream);

}  // namespace plab::cudakernels
