// CudaBackend's element and row ops on packed 16-bit tensors in device memory (backend.h's
// packed ops): each enqueues one kernel of packed_kernels.cu (or step_kernels.cu's row
// sums) and returns. im2col from packed activations is beside im2col (cuda_backend.cpp),
// gemm16 beside gemm (cuda_gemm.cpp).
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <stdexcept>
#include <string>

namespace plab::cuda {

namespace ck = cudakernels;

int format16(Format f, const char* what)
{
    if (f != Format::fp16 && f != Format::bf16)
        throw std::invalid_argument(std::string(what) + ": a packed tensor's format is fp16 or bf16.");
    return static_cast<int>(f);
}

namespace {

void checkSizes(const char* op, std::initializer_list<std::int64_t> sizes)
{
    for (const std::int64_t v : sizes)
        if (v < 0) throw std::invalid_argument(std::string(op) + " got a negative size.");
}

void checkStrided(const char* op, std::int64_t cols, std::initializer_list<std::int64_t> lds)
{
    for (const std::int64_t ld : lds)
        if (ld < cols) throw std::invalid_argument(std::string(op) + " got a leading dimension shorter than its row.");
}

}  // namespace

void CudaBackend::relu16(Format f, std::uint16_t* x, std::int64_t n)
{
    checkSizes("relu16", {n});
    activate();
    PLAB_CUDA_CHECK(ck::launchRelu16(format16(f, "relu16"), x, n, stream()));
}

void CudaBackend::reluBackward16(Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n)
{
    checkSizes("reluBackward16", {n});
    activate();
    PLAB_CUDA_CHECK(ck::launchReluBackward16(format16(f, "reluBackward16"), y, g, n, stream()));
}

void CudaBackend::maxPool2x2Packed(Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H,
                                   std::int64_t W, std::uint16_t* out, std::uint8_t* argmax)
{
    checkSizes("maxPool2x2Packed", {planes, H, W});
    activate();
    PLAB_CUDA_CHECK(ck::launchMaxPoolPacked(format16(f, "maxPool2x2Packed"), {planes, H, W}, in, out, argmax, stream()));
}

void CudaBackend::maxPool2x2BackwardPacked(const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                                           std::int64_t H, std::int64_t W, std::uint16_t* dx)
{
    checkSizes("maxPool2x2BackwardPacked", {planes, H, W});
    activate();
    PLAB_CUDA_CHECK(ck::launchMaxPoolBackwardPacked({planes, H, W}, g, argmax, dx, stream()));
}

void CudaBackend::transposeBlocksPacked(const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                                        std::uint16_t* out)
{
    checkSizes("transposeBlocksPacked", {A, B, inner});
    activate();
    PLAB_CUDA_CHECK(ck::launchTransposeBlocksPacked(in, A, B, inner, out, stream()));
}

void CudaBackend::widen16(Format f, const std::uint16_t* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                          std::int64_t rows, std::int64_t cols)
{
    checkSizes("widen16", {rows, cols});
    checkStrided("widen16", cols, {srcLd, dstLd});
    activate();
    PLAB_CUDA_CHECK(ck::launchWiden16(format16(f, "widen16"), src, srcLd, dst, dstLd, rows, cols, stream()));
}

void CudaBackend::roundTo16(Format f, const float* src, std::int64_t srcLd, std::uint16_t* dst, std::int64_t dstLd,
                            std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist)
{
    addBiasRoundTo16(f, src, srcLd, nullptr, dst, dstLd, rows, cols, stats, hist);
}

void CudaBackend::addBiasRoundTo16(Format f, const float* x, std::int64_t xLd, const float* bias, std::uint16_t* out,
                                   std::int64_t outLd, std::int64_t rows, std::int64_t cols, RoundingStats* stats,
                                   GradientHistogram* hist)
{
    const char* name = bias ? "addBiasRoundTo16" : "roundTo16";
    checkSizes(name, {rows, cols});
    checkStrided(name, cols, {xLd, outLd});
    const int fmt = format16(f, name);
    if (rows == 0 || cols == 0) return;
    activate();
    const bool counted = stats || hist;
    unsigned long long* slots = counted ? counters_.roundingSlots(stats, hist) : nullptr;
    PLAB_CUDA_CHECK(ck::launchRoundTo16(fmt, x, xLd, bias, out, outLd, rows, cols, slots, stats != nullptr,
                                        hist != nullptr, stream()));
    if (counted) counters_.addElements(stats, hist, static_cast<std::size_t>(rows * cols));   // only after a launch
}

void CudaBackend::sumRows16(Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out)
{
    checkSizes("sumRows16", {rows, cols});
    const int fmt = format16(f, "sumRows16");
    if (rows == 0) return;
    activate();
    auto* partials = rowScratch_.reserveFor<double>(static_cast<std::size_t>(rows * ck::sumRowsParts(rows, cols)));
    PLAB_CUDA_CHECK(ck::launchSumRows16(fmt, x, rows, cols, partials, out, stream()));
}

}  // namespace plab::cuda
