// Status-to-exception conversion for CUDA runtime, cuBLAS and cuDNN calls (see cuda_status.h).
#include "backend/cuda/cuda_status.h"

#include <stdexcept>

namespace plab::cuda {

std::string_view callName(std::string_view call)
{
    const auto open = call.find('(');
    std::string_view name = open == std::string_view::npos ? call : call.substr(0, open);
    // "::cudaMalloc" or "plab::x" -> the last component reads best.
    if (const auto colon = name.rfind("::"); colon != std::string_view::npos) name.remove_prefix(colon + 2);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    return name;
}

bool cudaErrorLosesContext(cudaError_t status)
{
    // The statuses whose documentation in driver_types.h (CUDA 13.0) says that the process is
    // left in an inconsistent state, or that the device cannot be used again, and must be
    // relaunched. Not cudaErrorECCUncorrectable: its documentation says no such thing.
    switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
#if CUDART_VERSION >= 13000   // newer statuses; older toolkits may not name them all
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
#endif
        return true;
    default: return false;
    }
}

void throwCudaError(cudaError_t status, std::string_view call)
{
    // Clears the runtime's last-error slot so that a later, unrelated check does not
    // report this failure again (a context-losing error stays: every later call fails).
    (void)cudaGetLastError();
    throw std::runtime_error(cudaErrorMessage(callName(call), cudaGetErrorString(status), cudaGetErrorName(status),
                                              cudaErrorLosesContext(status)));
}

void throwCublasError(cublasStatus_t status, std::string_view call)
{
    throw std::runtime_error(std::string(callName(call)) + " failed: " + cublasGetStatusString(status) +
                             " (" + cublasGetStatusName(status) + ")");
}

#if PLAB_CUDA_HAVE_CUDNN
// cudnnStatusKind is written in numbers, so that host tests check it without cuDNN; here
// the numbers meet this cuDNN's names (tests/tst_cuda_kernel_math.cpp reads the header for
// statuses that the table does not name).
static_assert(cudnnStatusKind(CUDNN_STATUS_SUCCESS) == CudnnStatusKind::success);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_BAD_PARAM) == CudnnStatusKind::failure);
static_assert(cudnnStatusKind(CUDNN_STATUS_INTERNAL_ERROR) == CudnnStatusKind::failure);
static_assert(cudnnStatusKind(CUDNN_STATUS_EXECUTION_FAILED) == CudnnStatusKind::failure);
#if CUDNN_VERSION >= 91900   // the finer statuses as cuDNN 9.19 names them; older 9.x may lack some
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_SHAPE) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER) == CudnnStatusKind::environment);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART) == CudnnStatusKind::environment);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH) == CudnnStatusKind::environment);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING) ==
              CudnnStatusKind::environment);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE) == CudnnStatusKind::environment);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT) ==
              CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_PADDING) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API) == CudnnStatusKind::shapeNotSupported);
static_assert(cudnnStatusKind(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE) == CudnnStatusKind::shapeNotSupported);
#endif

void throwCudnnError(cudnnStatus_t status, std::string_view call)
{
    // cuDNN keeps a message for the last error of the calling thread; reading it clears it,
    // so a later failure does not show this one's message.
    char detail[256] = {};
    cudnnGetLastErrorString(detail, sizeof detail);
    std::string message = std::string(callName(call)) + " failed: " + cudnnStatusMeaning(static_cast<int>(status));
    if (detail[0] != '\0') message += std::string(": ") + detail;
    throw std::runtime_error(message + " (" + cudnnGetErrorString(status) + ")");
}
#endif

}  // namespace plab::cuda
