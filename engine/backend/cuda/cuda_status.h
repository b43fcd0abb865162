// Checked calls for the CUDA plugin: every CUDA runtime, cuBLAS and cuDNN status that is
// not success becomes a std::runtime_error naming the call and the library's own status
// string, never an abort, so the engine reports it as one sentence and keeps running.
//
// The first part (what a cuDNN status means for a convolution, and the wording of a CUDA
// error) is plain C++ over status numbers, without CUDA headers, so that the host tests
// (tests/tst_cuda_kernel_math.cpp) check it on any machine: they define
// PLAB_CUDA_STATUS_TEXT_ONLY before including this file. The checked calls follow.
#pragma once

#include <string>
#include <string_view>

namespace plab::cuda {

// ---- cuDNN statuses, as the convolutions act on them (values of cudnn_graph.h, cuDNN 9) ----

enum class CudnnStatusKind {
    success,
    // This shape, layout, data type or algorithm is not supported (CUDNN_STATUS_NOT_SUPPORTED,
    // _GRAPH_PATTERN, _SHAPE, _DATA_TYPE, _LAYOUT, _SHARED_MEMORY_INSUFFICIENT, _PADDING,
    // _BAD_LAUNCH_PARAM, _CUDA_GRAPH_NATIVE_API, _INVALID_DYNAMIC_SHAPE): another algorithm,
    // or the layer's lowering, can do the work. The only kind a convolution drops silently.
    shapeNotSupported,
    // cuDNN cannot run on this system at all (CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
    // _INCOMPATIBLE_CUDART, _ARCH_MISMATCH, _RUNTIME_PREREQUISITE_MISSING,
    // _SUBLIBRARY_UNAVAILABLE): the installation is wrong, which lowering would only hide.
    environment,
    // Everything else, including a 3xxx status this table does not know (a newer cuDNN at
    // run time): reported, never taken for "not supported".
    failure,
};

// The kind of cudnnStatus_t `status`.
constexpr CudnnStatusKind cudnnStatusKind(int status)
{
    switch (status) {
    case 0: return CudnnStatusKind::success;
    case 3000:   // NOT_SUPPORTED
    case 3001:   // NOT_SUPPORTED_GRAPH_PATTERN
    case 3002:   // NOT_SUPPORTED_SHAPE
    case 3003:   // NOT_SUPPORTED_DATA_TYPE
    case 3004:   // NOT_SUPPORTED_LAYOUT
    case 3010:   // NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT: this algorithm's kernel, this device
    case 3011:   // NOT_SUPPORTED_PADDING
    case 3012:   // NOT_SUPPORTED_BAD_LAUNCH_PARAM: this algorithm's launch, for this shape
    case 3013:   // NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API: an engine without CUDA-graph support
    case 3014:   // NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE
        return CudnnStatusKind::shapeNotSupported;
    case 3005:   // NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER
    case 3006:   // NOT_SUPPORTED_INCOMPATIBLE_CUDART
    case 3007:   // NOT_SUPPORTED_ARCH_MISMATCH
    case 3008:   // NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING
    case 3009:   // NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE
        return CudnnStatusKind::environment;
    default: return CudnnStatusKind::failure;
    }
}

// What a failed cuDNN status means, for the message: its class (cuDNN 9 groups statuses by
// thousands), or, for the environment statuses, what is wrong with the installation. The
// exact status name follows it in the message.
constexpr const char* cudnnStatusMeaning(int status)
{
    switch (status) {
    case 3005: return "cuDNN cannot run here: the NVIDIA driver is incompatible with this cuDNN";
    case 3006: return "cuDNN cannot run here: the CUDA runtime is incompatible with this cuDNN";
    case 3007: return "cuDNN cannot run here: this cuDNN has no kernels for this GPU's architecture";
    case 3008: return "cuDNN cannot run here: a library that cuDNN needs at run time is missing";
    case 3009: return "cuDNN cannot run here: a cuDNN sub-library is not installed or does not load";
    default: break;
    }
    switch (status / 1000) {
    case 1: return "not initialized";
    case 2: return "bad parameter";
    case 3: return "not supported";
    case 4: return "internal error";
    case 5: return "execution failed";
    default: return "error";
    }
}

// ---- CUDA runtime errors ------------------------------------------------------------------

// "cudaMalloc failed: out of memory (cudaErrorMemoryAllocation)" from the call's name,
// cudaGetErrorString and cudaGetErrorName. After an error that leaves the context unusable
// (contextLost: every later CUDA call in the process fails the same way) the message says
// that only a restart brings the GPU back, so the user does not retry in vain.
inline std::string cudaErrorMessage(std::string_view name, std::string_view description, std::string_view status,
                                    bool contextLost)
{
    std::string message = std::string(name) + " failed: " + std::string(description) + " (" + std::string(status) + ")";
    if (contextLost)
        message += ". The GPU context is lost: restart Precision Lab to use the GPU again";
    return message;
}

}  // namespace plab::cuda

#ifndef PLAB_CUDA_STATUS_TEXT_ONLY

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if PLAB_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace plab::cuda {

// The function name of a call's source text: "cudaMalloc(&p, n)" -> "cudaMalloc".
std::string_view callName(std::string_view call);

// Whether `status` leaves the process's CUDA context unusable: the errors that the CUDA
// runtime's headers document as "any further CUDA work will return the same error; the
// process must be terminated and relaunched".
bool cudaErrorLosesContext(cudaError_t status);

// cudaErrorMessage for a failed call. `call` is the source text of the call; its function
// name is what the message shows.
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
// cudnnStatusMeaning, cuDNN's own message for the thread's last error when it has one, and
// the status name (what cudnnGetErrorString returns in cuDNN 9).
[[noreturn]] void throwCudnnError(cudnnStatus_t status, std::string_view call);

inline void checkCudnn(cudnnStatus_t status, std::string_view call)
{
    if (status != CUDNN_STATUS_SUCCESS) throwCudnnError(status, call);
}

constexpr CudnnStatusKind cudnnStatusKind(cudnnStatus_t status) { return cudnnStatusKind(static_cast<int>(status)); }
#endif

}  // namespace plab::cuda

#define PLAB_CUDA_CHECK(call) ::plab::cuda::checkCuda((call), #call)
#define PLAB_CUBLAS_CHECK(call) ::plab::cuda::checkCublas((call), #call)
#if PLAB_CUDA_HAVE_CUDNN
#define PLAB_CUDNN_CHECK(call) ::plab::cuda::checkCudnn((call), #call)
#endif

#endif  // PLAB_CUDA_STATUS_TEXT_ONLY
