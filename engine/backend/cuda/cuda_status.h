// Checked calls for the CUDA plugin: every CUDA runtime, cuBLAS and cuDNN status that is
// not success becomes a std::runtime_error naming the call and the library's own status
// string, never an abort, so the engine reports it as one sentence and keeps running.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if PLAB_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif

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

#if PLAB_CUDA_HAVE_CUDNN
// "cudnnConvolutionForward failed: not supported: <cuDNN's last message> (CUDNN_STATUS_NOT_SUPPORTED_SHAPE)":
// the status's class, cuDNN's own message for the thread's last error when it has one, and
// the status name (what cudnnGetErrorString returns in cuDNN 9).
[[noreturn]] void throwCudnnError(cudnnStatus_t status, std::string_view call);

inline void checkCudnn(cudnnStatus_t status, std::string_view call)
{
    if (status != CUDNN_STATUS_SUCCESS) throwCudnnError(status, call);
}
#endif

// The function name of a call's source text: "cudaMalloc(&p, n)" -> "cudaMalloc".
std::string_view callName(std::string_view call);

}  // namespace plab::cuda

#define PLAB_CUDA_CHECK(call) ::plab::cuda::checkCuda((call), #call)
#define PLAB_CUBLAS_CHECK(call) ::plab::cuda::checkCublas((call), #call)
#if PLAB_CUDA_HAVE_CUDNN
#define PLAB_CUDNN_CHECK(call) ::plab::cuda::checkCudnn((call), #call)
#endif
