// The CUDA backend's whole-batch convolutions through cuDNN's legacy convolution API
// (cudnnConvolutionForward / BackwardData / BackwardFilter, still in cuDNN 9): the stride-1
// "same" convolutions of ConvGeometry on the (C, N, H, W) activations as they are stored,
// in the arithmetic the recipe asks for (cuda_precision.h), with algorithms chosen once per
// shape and cached. Without cuDNN at build time every call returns false and the layer
// lowers its convolutions through im2col + gemm. cuDNN's types stay in cuda_conv.cpp.
#pragma once

#include "backend/backend.h"
#include "backend/cuda/cuda_precision.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace plab::cuda {

// Which convolution passes cuDNN runs; the layer lowers the others through im2col + cuBLAS.
// The environment variable PLAB_CUDNN_PASSES says: "all", "forward", or (unset, "none")
// none. None is the default because it was measured fastest: on an H200 (docs/CUDA.md,
// 2026-11-26) cuDNN's legacy API on fp32 data ran the seed CNN's amp-fp16 step at 0.31
// and its fp32 step at 0.60 of the lowering's speed, in 1.9 and 1.7 times its memory;
// small-cnn at batch 256 was 1.04 times as fast in amp-fp16 and 0.64 in fp32. cuDNN on
// 16-bit tensors (its tensor-core kernels) is not written yet.
enum class CudnnPasses { none, forward, all };
CudnnPasses cudnnPasses();

class CudnnConvolutions {
public:
    // Creates nothing yet: the cuDNN handle, the plans and the buffers are made at the first
    // convolution, so a backend that never convolves never loads cuDNN's kernels. The
    // buffers come from the backend's `pool`.
    CudnnConvolutions(cudaStream_t stream, cudaMemPool_t pool, DeviceCapability capability);
    ~CudnnConvolutions();
    CudnnConvolutions(const CudnnConvolutions&) = delete;
    CudnnConvolutions& operator=(const CudnnConvolutions&) = delete;

    // Whether the plugin was built with cuDNN.
    static bool builtIn();

    // y (Cout, N, H, W) = x (C, N, H, W) cross-correlated with w (Cout, C, k, k), padding
    // k/2; dx (C, N, H, W) = its adjoint applied to dy (Cout, N, H, W); dw (Cout, C, k, k) =
    // the sum over the batch of dy times the shifted x. Outputs are overwritten. Device
    // pointers holding values of precision.compute; the sums as choosePath says.
    // false: not done, nothing written (no cuDNN, a tensor beyond cuDNN's 32-bit sizes, no
    // algorithm of the kind we accept for this shape and precision, or the pass's last such
    // algorithm refusing the shape when it runs). The three passes of one shape and
    // precision share one plan, so once any pass returns false all three do, for good; a
    // backward pass may still return false after this step's forward pass ran here (Conv2d
    // then lowers it from the input it kept). Throws std::invalid_argument for a geometry
    // that is not a same-size convolution, std::runtime_error for a precision the GPU cannot
    // run (choosePath), a cuDNN installation that cannot run here (an environment status,
    // cuda_status.h) or any other failed cuDNN or CUDA call. Nothing waits for the device.
    bool forward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w, float* y,
                 GemmPrecision precision);
    bool backwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w, const float* dy, float* dx,
                      GemmPrecision precision);
    bool backwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* dy, float* dw,
                        GemmPrecision precision);

    // Bytes of device memory held between calls: the workspace and the copies (0 before
    // the first convolution, and without cuDNN).
    std::size_t scratchBytes() const;

private:
    struct State;   // the handle, the plans per shape, the buffers (cuda_conv.cpp)
    State& state();

    cudaStream_t stream_;
    cudaMemPool_t pool_;
    DeviceCapability capability_;
    std::unique_ptr<State> state_;
};

}  // namespace plab::cuda
