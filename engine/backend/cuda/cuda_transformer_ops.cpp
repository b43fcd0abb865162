// CudaBackend's transformer ops on device tensors: each checks its sizes, enqueues its
// kernel (transformer_kernels.cu) and returns.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <stdexcept>
#include <string>

namespace plab::cuda {

namespace ck = cudakernels;

namespace {

void checkSizes(std::initializer_list<std::int64_t> sizes, const char* op)
{
    for (std::int64_t n : sizes)
        if (n < 0) throw std::invalid_argument(std::string(op) + " got a negative size.");
}

}  // namespace

void CudaBackend::patchify(const float* images, std::int64_t N, std::int64_t side, std::int64_t patch, float* out)
{
    checkSizes({N, side}, "patchify");
    if (patch <= 0 || side % patch != 0) throw std::invalid_argument("patchify: the patch side must divide the image side.");
    activate();
    PLAB_CUDA_CHECK(ck::launchPatchify(images, N, side, patch, out, stream()));
}

void CudaBackend::addPeriodic(float* x, std::int64_t n, const float* add, std::int64_t period)
{
    checkSizes({n}, "addPeriodic");
    if (period <= 0) throw std::invalid_argument("addPeriodic needs a positive period.");
    activate();
    PLAB_CUDA_CHECK(ck::launchAddPeriodic(x, n, add, period, stream()));
}

void CudaBackend::sumPeriodic(const float* x, std::int64_t n, std::int64_t period, float* out)
{
    checkSizes({n}, "sumPeriodic");
    if (period <= 0 || n % period != 0) throw std::invalid_argument("sumPeriodic: n must be a multiple of the period.");
    activate();
    PLAB_CUDA_CHECK(ck::launchSumPeriodic(x, n, period, out, stream()));
}

void CudaBackend::layerNorm(Format emulate, const float* x, std::int64_t rows, std::int64_t D, const float* gamma,
                            const float* beta, float eps, float* y, float* xhat, float* rstd, float* sumOfSquares)
{
    checkSizes({rows, D}, "layerNorm");
    activate();
    PLAB_CUDA_CHECK(ck::launchLayerNorm(static_cast<int>(emulate), x, rows, D, gamma, beta, eps, y, xhat, rstd,
                                        sumOfSquares, stream()));
}

void CudaBackend::layerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                                    std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta)
{
    checkSizes({rows, D}, "layerNormBackward");
    activate();
    PLAB_CUDA_CHECK(ck::launchLayerNormBackward(g, xhat, rstd, gamma, rows, D, dx, dgamma, dbeta, stream()));
}

void CudaBackend::softmaxRows(Format emulate, const float* s, std::int64_t rows, std::int64_t T, float* p)
{
    checkSizes({rows, T}, "softmaxRows");
    activate();
    PLAB_CUDA_CHECK(ck::launchSoftmaxRows(static_cast<int>(emulate), s, rows, T, p, stream()));
}

void CudaBackend::softmaxRowsBackward(const float* p, float* g, std::int64_t rows, std::int64_t T)
{
    checkSizes({rows, T}, "softmaxRowsBackward");
    activate();
    PLAB_CUDA_CHECK(ck::launchSoftmaxRowsBackward(p, g, rows, T, stream()));
}

void CudaBackend::gelu(const float* x, float* y, std::int64_t n)
{
    checkSizes({n}, "gelu");
    activate();
    PLAB_CUDA_CHECK(ck::launchGelu(x, y, n, stream()));
}

void CudaBackend::geluBackward(const float* x, float* g, std::int64_t n)
{
    checkSizes({n}, "geluBackward");
    activate();
    PLAB_CUDA_CHECK(ck::launchGeluBackward(x, g, n, stream()));
}

void CudaBackend::add(const float* a, const float* b, float* y, std::int64_t n)
{
    checkSizes({n}, "add");
    activate();
    PLAB_CUDA_CHECK(ck::launchAdd(a, b, y, n, stream()));
}

void CudaBackend::scale(float* x, std::int64_t n, float factor)
{
    checkSizes({n}, "scale");
    activate();
    PLAB_CUDA_CHECK(ck::launchScale(x, n, factor, stream()));
}

void CudaBackend::meanTokens(const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y)
{
    checkSizes({N, T, D}, "meanTokens");
    activate();
    PLAB_CUDA_CHECK(ck::launchMeanTokens(x, N, T, D, y, stream()));
}

void CudaBackend::meanTokensBackward(const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx)
{
    checkSizes({N, T, D}, "meanTokensBackward");
    activate();
    PLAB_CUDA_CHECK(ck::launchMeanTokensBackward(g, N, T, D, dx, stream()));
}

}  // namespace plab::cuda
