// Status-to-exception conversion for CUDA runtime and cuBLAS calls (see cuda_status.h).
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

}  // namespace plab::cuda
