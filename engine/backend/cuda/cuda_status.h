// Checked calls for the CUDA plugin: every CUDA runtime and cuBLAS status that is not
// success becomes a std::runtime_error naming the call and the library's own status
// string, never an abort, so the engine reports it as one sentence and keeps running.
// (cuDNN's checks join when its convolutions land, see docs/CUDA.md.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

namespace plab::cuda {

// "cudaMalloc failed: out of memory (cudaErrorMemoryAllocation)". `call` is the source
// text of the call; its function name is what the message shows.
[[noreturn]] void throwCudaError(cudaError_t status, std::string_view call);
[[noreturn]] void throwCublasError(cublasStatus_t status, std::string_view call);

inline void checkCuda(cudaError_t status, std::string_view call)
{
    if (status != cudaSuccess) throwCudaError(status, call);
}

inline void checkCublas(cublasStatus_t status, std::string_view call)
{
    if (status != CUBLAS_STATUS_SUCCESS) throwCublasError(status, call);
}

// The function name of a call's source text: "cudaMalloc(&p, n)" -> "cudaMalloc".
std::string_view callName(std::string_view call);

}  // namespace plab::cuda

#define PLAB_CUDA_CHECK(call) ::plab::cuda::checkCuda((call), #call)
#define PLAB_CUBLAS_CHECK(call) ::plab::cuda::checkCublas((call), #call)
