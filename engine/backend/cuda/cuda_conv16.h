// The packed layers' convolutions through cuDNN's graph API on 16-bit data: forward
// (BackendOp::convolution16 / convolutionForward16), input gradient (BackendOp::convolutionData16 /
// convolutionBackwardData16) and filter gradient (BackendOp::convolutionFilter16 /
// convolutionBackwardFilter16), asked for with PLAB_CUDNN_16 (cudnn16_passes.h) or by
// telemetry sampled at the steps between snapshots (allowLibraryRounding). A
// probe on an H200 (bench/cudnn_probe.cpp, docs/CUDA.md) found cuDNN's tensor-core kernels
// 3 times as fast as the lowering's GEMM on the seed CNN's conv2, but only in NHWC with a
// 16-bit output: so the activations are transposed to NHWC around the call and, in the
// forward pass, cuDNN rounds each fp32 sum into fp16 / bf16 itself, before the layer adds
// the bias and rounds (and counts) once more; in the input gradient likewise, before the
// layer's own rounding of the 16-bit results, exact where the storage format is the compute
// format, counts what they show. That rounding is not the lab's arithmetic (no tap sees
// it), which is why it is asked for, not the default. The filter gradient's
// output is fp32 (no 16-bit rounding, so no telemetry is changed). Without cuDNN at build
// time nothing is ever asked of it (asked() names no pass).
#pragma once

#include "backend/backend.h"
#include "backend/cuda/cudnn16_passes.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace plab::cuda {

class CudnnConvolutions16 {
public:
    // Nothing is made until the first convolution.
    CudnnConvolutions16(cudaStream_t stream, cudaMemPool_t pool);
    ~CudnnConvolutions16();
    CudnnConvolutions16(const CudnnConvolutions16&) = delete;
    CudnnConvolutions16& operator=(const CudnnConvolutions16&) = delete;

    // Which passes PLAB_CUDNN_16 asks for (cudnn16_passes.h), none without cuDNN built in.
    // Throws std::invalid_argument naming the variable for a value it does not take.
    using Passes = Cudnn16Passes;
    static Passes asked();

    // y (count, H, W, Cout), NHWC = x (count, H, W, C), NHWC, cross-correlated with w
    // (Cout, k, k, C), padding k/2, stride 1; every tensor 16-bit patterns of `format`
    // (fp16 or bf16), the sums in fp32, each rounded once into `format`. Throws
    // std::runtime_error when cuDNN offers no engine for the shape. Nothing waits.
    void forward(Format format, std::int64_t count, std::int64_t C, std::int64_t Cout, std::int64_t H,
                 std::int64_t W, std::int64_t k, const std::uint16_t* x, const std::uint16_t* w, std::uint16_t* y);

    // dx (count, H, W, C), NHWC = the input gradient of dy (count, H, W, Cout), NHWC, through w
    // (Cout, k, k, C), padding k/2, stride 1: 16-bit patterns of `format`, the sums in fp32,
    // each rounded once into `format`, as forward's.
    void data(Format format, std::int64_t count, std::int64_t C, std::int64_t Cout, std::int64_t H, std::int64_t W,
              std::int64_t k, const std::uint16_t* dy, const std::uint16_t* w, std::uint16_t* dx);

    // dw (Cout, k, k, C), fp32 = the filter gradient of x (count, H, W, C) and dy (count, H,
    // W, Cout), both NHWC 16-bit patterns of `format`: fp32 sums of the products, no 16-bit
    // rounding (a convolution into a virtual fp32 tensor, copied out by an identity op).
    void filter(Format format, std::int64_t count, std::int64_t C, std::int64_t Cout, std::int64_t H,
                std::int64_t W, std::int64_t k, const std::uint16_t* x, const std::uint16_t* dy, float* dw);

    // Bytes of device memory held between calls (the workspace).
    std::size_t scratchBytes() const;

private:
    struct State;
    // One pass (0 forward, 1 filter gradient, 2 input gradient) of its plan on a and b into out.
    void execute(int pass, Format format, std::int64_t count, std::int64_t C, std::int64_t Cout, std::int64_t H,
                 std::int64_t W, std::int64_t k, const void* a, const void* b, void* out);
    cudaStream_t stream_;
    cudaMemPool_t pool_;
    std::unique_ptr<State> state_;
};

}  // namespace plab::cuda
