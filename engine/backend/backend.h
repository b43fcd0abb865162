// The compute backend interface: the op-level primitives the layers call (GEMM under a
// precision rule, batched im2col/col2im for 3x3-style convolutions, bulk rounding with
// telemetry, a parallel loop), the CPU backend factory, and the probe and C entry point
// of the CUDA plugin (libplab_cuda.so, loaded at run time so that everything starts and
// runs on machines without the CUDA libraries).
#pragma once

#include "numerics/format.h"
#include "numerics/rounding_stats.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace plab {

// How a GEMM sums its products. Operands are already rounded to `compute` by the caller.
// fp32Accumulate: products summed in fp32 (the products of fp16/bf16/tf32 values are exact
// in fp32, so an fp32 sgemm is exact emulation up to the order of the additions).
// Otherwise: summed in `compute`, one rounding after every fused multiply-add, sequentially
// in k (the teaching option: what fp16 accumulation on a GPU does).
struct GemmPrecision {
    Format compute = Format::fp32;
    bool fp32Accumulate = true;
    bool operator==(const GemmPrecision&) const = default;
};

enum class Transpose : std::uint8_t { no, yes };

// Geometry of a stride-1 convolution with a square kernel and symmetric zero padding
// whose output has the spatial size of its input (kernel = 2 * pad + 1).
// Activations are held channel-major over the batch: (C, N, H, W), so that the GEMM of a
// whole batch writes its output without a transpose (see engine/nn/conv2d.h).
struct ConvGeometry {
    std::int64_t channels = 0;   // input channels C
    std::int64_t batch = 0;      // N of the activation tensor (C, N, H, W)
    std::int64_t height = 0;
    std::int64_t width = 0;
    int kernel = 3;
    int pad = 1;
    std::int64_t patchSize() const { return channels * kernel * kernel; }   // rows of cols
    std::int64_t planeSize() const { return height * width; }
};

struct BackendInfo {
    std::string name;                    // "cpu", "cuda"
    bool available = false;
    std::string reason;                  // why not available, or a short description
    std::vector<std::string> versions;   // "OpenBLAS 0.3.21 ...", "CUDA 12.4", "cuDNN 9.1"
};

class ComputeBackend {
public:
    virtual ~ComputeBackend() = default;

    virtual const BackendInfo& info() const = 0;
    virtual int threads() const = 0;

    // Row-major C (M, N) = op(A) (M, K) * op(B) (K, N) + beta * C, where op(A) is A or A^T
    // as stored with leading dimension lda (likewise B, C). beta == 0 never reads C.
    // With compute-format accumulation the running sum starts from round(beta * C).
    virtual void gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N,
                      std::int64_t K, const float* A, std::int64_t lda, const float* B,
                      std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                      GemmPrecision precision) = 0;

    // cols (patchSize, count * H * W) from samples [n0, n0 + count) of src (C, N, H, W);
    // row c * k * k + ky * k + kx, column (n - n0) * H * W + y * W + x.
    virtual void im2col(const ConvGeometry& g, const float* src, std::int64_t n0,
                        std::int64_t count, float* cols) = 0;
    // The adjoint: dst (C, N, H, W) samples [n0, n0 + count) are overwritten with the
    // sums of the cols entries that im2col would have read from them.
    virtual void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0,
                        std::int64_t count, float* dst) = 0;

    // roundArray of engine/numerics over both threads; stats / hist (may be null) get the
    // counts added, exactly as one serial call would.
    virtual void roundArray(Format f, const float* src, float* dst, std::size_t n,
                            RoundingStats* stats, GradientHistogram* hist) = 0;

    // Calls body(begin, end) on disjoint ranges covering [0, n); in parallel only when n
    // is at least 2 * grain. Chunks are taken dynamically, so a busy core slows the loop
    // instead of stalling it. body must not call parallelFor.
    virtual void parallelFor(std::int64_t n, std::int64_t grain,
                             const std::function<void(std::int64_t, std::int64_t)>& body) = 0;
};

// The reference backend: OpenBLAS for fp32-accumulated GEMM, exact emulation of
// compute-format accumulation, `threads` threads for BLAS and elementwise work
// (threads <= 0: the number of cores). Defined in engine/backend/cpu.
std::unique_ptr<ComputeBackend> createCpuBackend(int threads);

// Looks for the CUDA plugin next to the executable, then on the library path, and asks it
// whether a device is usable. Never throws; available = false with a reason when absent.
BackendInfo probeCudaBackend();

// Loads the CUDA plugin and creates its backend; throws std::runtime_error with the
// probe's reason when it is not available.
std::unique_ptr<ComputeBackend> createCudaBackend(int deviceIndex);

}  // namespace plab

// The C entry points the CUDA plugin exports (extern "C", so dlsym finds them by name).
// plab_cuda_create_backend: a new backend (owned by the caller, deleted through its
// virtual destructor) or null, with a NUL-terminated reason written to error (at most
// errorSize bytes). The plugin is built from the same headers and compiler ABI.
// plab_cuda_probe: fills info (name, availability, reason, versions) without creating one.
#define PLAB_CUDA_CREATE_BACKEND_SYMBOL "plab_cuda_create_backend"
#define PLAB_CUDA_PROBE_SYMBOL "plab_cuda_probe"
extern "C" {
using PlabCudaCreateBackendFn = plab::ComputeBackend* (*)(int deviceIndex, char* error,
                                                          std::size_t errorSize);
using PlabCudaProbeFn = void (*)(plab::BackendInfo* info);
plab::ComputeBackend* plab_cuda_create_backend(int deviceIndex, char* error, std::size_t errorSize);
void plab_cuda_probe(plab::BackendInfo* info);
}
