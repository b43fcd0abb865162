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

void throwCudaError(cudaError_t status, std::string_view call)
{
    // Clears the runtime's last-error slot so that a later, unrelated check does not
    // report this failure again (sticky errors stay: the context is then unusable).
    (void)cudaGetLastError();
    throw std::runtime_error(std::string(callName(call)) + " failed: " + cudaGetErrorString(status) +
                             " (" + cudaGetErrorName(status) + ")");
}

void throwCublasError(cublasStatus_t status, std::string_view call)
{
    throw std::runtime_error(std::string(callName(call)) + " failed: " + cublasGetStatusString(status) +
                             " (" + cublasGetStatusName(status) + ")");
}

#if PLAB_CUDA_HAVE_CUDNN
namespace {

// cuDNN 9 groups its statuses by thousands; the name says which one exactly.
const char* cudnnStatusClass(cudnnStatus_t status)
{
    switch (static_cast<int>(status) / 1000) {
    case 1: return "not initialized";
    case 2: return "bad parameter";
    case 3: return "not supported";
    case 4: return "internal error";
    case 5: return "execution failed";
    default: return "error";
    }
}

}  // namespace

void throwCudnnError(cudnnStatus_t status, std::string_view call)
{
    // cuDNN keeps a message for the last error of the calling thread; reading it clears it,
    // so a later failure does not show this one's message.
    char detail[256] = {};
    cudnnGetLastErrorString(detail, sizeof detail);
    std::string message = std::string(callName(call)) + " failed: " + cudnnStatusClass(status);
    if (detail[0] != '\0') message += std::string(": ") + detail;
    throw std::runtime_error(message + " (" + cudnnGetErrorString(status) + ")");
}
#endif

}  // namespace plab::cuda
