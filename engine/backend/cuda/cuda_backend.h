// The CUDA implementation of ComputeBackend (C++20, compiled by the host compiler): tensors
// live in device memory (allocator()), every op enqueues its kernels or cuBLAS call on the
// backend's one stream and returns without waiting, counts meant for host structs are
// deferred to flush(), and only the ops that return a value (the loss, the gradient sweep,
// the FP8 quantisation's amax) and downloads wait for the device. Convolutions go through cuDNN when it is built in
// (cuda_conv.h), else the layer lowers them through im2col + gemm. Also the device probe
// behind plab_cuda_probe.
#pragma once

#include "backend/backend.h"
#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_conv.h"
#include "backend/cuda/cuda_conv16.h"
#include "backend/cuda/cuda_counters.h"
#include "backend/cuda/cuda_precision.h"
#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/cuda_status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace plab::cuda {

// Fills info (name "cuda", availability, reason, versions of the CUDA runtime, driver,
// cuBLAS and cuDNN, the devices). Never throws: an unusable CUDA stack is a reason.
void probeDevices(BackendInfo& info);

// Used and total bytes of device `device` as the device reports them (cudaMemGetInfo: it
// does not wait on any stream). Blocks cached in a backend's memory pool count as used
// while that backend lives; its destructor gives them back. Throws on a CUDA error.
DeviceMemoryInfo queryDeviceMemory(int device);

class CudaBackend final : public ComputeBackend {
public:
    explicit CudaBackend(int device);   // throws std::runtime_error when the device is unusable
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    const BackendInfo& info() const override { return info_; }
    // FP8 codes, packed tensors (packed by default) and the transformer's ops; gemm16 and
    // cuDNN's 16-bit convolutions of a precision as the functions below say; no packed
    // updates (the optimizer's state stays in fp32 values on the device).
    bool supports(BackendOp op, const GemmPrecision& precision = {}) const override;
    int threads() const override { return 1; }   // host work runs on the caller
    std::string arithmeticFor(const GemmPrecision& precision) const override;
    // The device memory the backend's own buffers hold between calls (GEMM operand copies,
    // cuBLASLt's workspace, the loss, sweep and row scratch, cuDNN's workspace and copies):
    // the trainer counts it as workspace.
    std::int64_t scratchBytes() const override;

    void gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
              float* C, std::int64_t ldc, GemmPrecision precision) override;
    void im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count,
                float* cols) override;
    void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst,
                std::int64_t colsLd) override;
    void roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist) override;

    // The FP8 recipes (cuda_fp8.cpp): per-tensor quantisation to E4M3 / E5M2 and the amax;
    // block-scaled quantisation throws std::logic_error (the trainer refuses those recipes).
    float quantize(const QuantizeOp& op, const float* src, float* dst, std::int64_t n, RoundingStats* stats,
                   GradientHistogram* hist, GradientHistogram* blockScales) override;
    float amax(const float* src, std::int64_t n) override;
    // Per-tensor FP8 operands held as 1-byte codes on the device, as on the CPU: quantised
    // into codes (from fp32 or 16-bit patterns), decoded for the GEMMs (whole rows, or
    // lowered by im2col), and a 16-bit dY quantised straight into fp32 values.
    float quantize16(const QuantizeOp& op, Format from, const std::uint16_t* src, float* dst, std::int64_t n,
                     RoundingStats* stats, GradientHistogram* hist) override;
    float quantizeToCodes(const QuantizeOp& op, const float* src, std::uint8_t* codes, std::int64_t n,
                          RoundingStats* stats, GradientHistogram* hist) override;
    float quantize16ToCodes(const QuantizeOp& op, Format from, const std::uint16_t* src, std::uint8_t* codes,
                            std::int64_t n, RoundingStats* stats, GradientHistogram* hist) override;
    float amax16(Format from, const std::uint16_t* src, std::int64_t n) override;
    void decodeFp8(MiniFormat element, float scaleInv, const std::uint8_t* codes, std::int64_t codesLd, float* dst,
                   std::int64_t dstLd, std::int64_t rows, std::int64_t cols) override;
    void im2colFp8(const ConvGeometry& g, MiniFormat element, float scaleInv, const std::uint8_t* src,
                   std::int64_t n0, std::int64_t count, float* cols) override;

    // Whole-batch convolutions through cuDNN (cuda_conv.cpp); false without cuDNN, or when
    // cuDNN has no suitable algorithm for the shape (the layer then lowers them).
    bool convolutionForward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w,
                            float* y, GemmPrecision precision) override;
    bool convolutionBackwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w, const float* dy,
                                 float* dx, GemmPrecision precision) override;
    bool convolutionBackwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                   const float* dy, float* dw, GemmPrecision precision) override;

    DeviceAllocator* allocator() override { return &allocator_; }
    void flush() override;
    // Telemetry sampled's steps between snapshots: the packed convolutions go to cuDNN as
    // PLAB_CUDNN_16=forward,data,filter sends them (where cuDNN is built in).
    void allowLibraryRounding(bool allowed) override { libraryRounding_ = allowed; }
    // The device's own figures (cudaMemGetInfo); under a device-memory budget
    // (PLAB_CUDA_MEMORY_BUDGET_MIB) the budget as the total and what the pool holds of it.
    std::optional<DeviceMemoryInfo> deviceMemory() const override;

    // Layer ops (cuda_layer_ops.cpp).
    void addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                      std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist) override;
    void relu(float* x, std::int64_t n) override;
    void reluBackward(const float* y, float* g, std::int64_t n) override;
    void maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                    std::uint8_t* argmax) override;
    void maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes, std::int64_t H,
                            std::int64_t W, float* dx) override;
    void transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                         float* out) override;
    void sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out) override;
    void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out) override;
    LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                   std::int64_t classes, Format emulate, float* probabilities) override;
    void softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, std::int64_t N,
                                     std::int64_t classes, float lossScale, float* grad) override;

    // Packed 16-bit tensors in device memory (cuda_packed_ops.cpp, packed_kernels.cu; the
    // im2col variants in cuda_backend.cpp, gemm16 in cuda_gemm.cpp): the layers hold
    // 16-bit activations and gradients in 2 bytes an element, by default. On an H200 (fifth
    // GPU session) that halved the seed CNN's device memory at batch 1000 and took 0.94
    // times the step held as fp32 (small-cnn at batch 256: 1.06 times); docs/CUDA.md.
    void relu16(Format f, std::uint16_t* x, std::int64_t n) override;
    void reluBackward16(Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n) override;
    void maxPool2x2Packed(Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H, std::int64_t W,
                          std::uint16_t* out, std::uint8_t* argmax) override;
    void maxPool2x2BackwardPacked(const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                                  std::int64_t H, std::int64_t W, std::uint16_t* dx) override;
    void transposeBlocksPacked(const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                               std::uint16_t* out) override;
    void widen16(Format f, const std::uint16_t* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                 std::int64_t rows, std::int64_t cols) override;
    void roundTo16(Format f, const float* src, std::int64_t srcLd, std::uint16_t* dst, std::int64_t dstLd,
                   std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist) override;
    void addBiasRoundTo16(Format f, const float* x, std::int64_t xLd, const float* bias, std::uint16_t* out,
                          std::int64_t outLd, std::int64_t rows, std::int64_t cols, RoundingStats* stats,
                          GradientHistogram* hist) override;
    void sumRows16(Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out) override;
    void im2colPacked(const ConvGeometry& g, Format f, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                      float* cols) override;
    void im2col16(const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                  std::uint16_t* cols) override;
    // Strided batched products (cuda_gemm.cpp): one cublasGemmStridedBatchedEx in the
    // arithmetic gemm uses, except where gemm's own way is kept (see there).
    void gemmBatched(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                     const float* A, std::int64_t lda, std::int64_t strideA, const float* B, std::int64_t ldb,
                     std::int64_t strideB, float beta, float* C, std::int64_t ldc, std::int64_t strideC,
                     std::int64_t batch, GemmPrecision precision) override;
    // 16-bit operands with fp32 sums go to cuBLAS as they are (no conversion copies).
    bool multiplies16(const GemmPrecision& precision) const;   // supports(BackendOp::gemm16)
    void gemm16(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                const std::uint16_t* A, std::int64_t lda, const std::uint16_t* B, std::int64_t ldb, float beta,
                float* C, std::int64_t ldc, GemmPrecision precision) override;
    // The packed forward convolutions and filter gradients through cuDNN's graph API in
    // NHWC (cuda_conv16.h), only as PLAB_CUDNN_16 asks or on the steps allowLibraryRounding
    // allows: the forward pass's and the input gradient's sums rounded into the format by
    // cuDNN, the filter gradient's kept in fp32.
    bool convolves16(const GemmPrecision& precision) const;   // supports(BackendOp::convolution16)
    void convolutionForward16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x,
                              std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* y,
                              GemmPrecision precision) override;
    bool convolvesData16(const GemmPrecision& precision) const;   // supports(BackendOp::convolutionData16)
    void convolutionBackwardData16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* dy,
                                   std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* dx,
                                   GemmPrecision precision) override;
    bool convolvesFilter16(const GemmPrecision& precision) const;   // supports(...::convolutionFilter16)
    // Whether a pass runs on cuDNN's 16-bit kernels: `asked` by PLAB_CUDNN_16, or allowed this
    // step (allowLibraryRounding) where cuDNN is built in, on 16-bit operands with fp32 sums.
    bool cudnn16Runs(bool asked, const GemmPrecision& precision) const;
    // The forward pass (x in, y out) or the input gradient (dy in, dx out) on those kernels.
    void convolve16(bool inputGradient, const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* in,
                    std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* out, GemmPrecision precision);
    void convolutionBackwardFilter16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x,
                                     const std::uint16_t* dy, std::int64_t n0, std::int64_t count, float beta,
                                     float* dw, GemmPrecision precision) override;

    // The vision transformer's ops (cuda_transformer_ops.cpp), checked on the host
    // (transformer_math.h against the CPU's) and on an H200 (docs/CUDA.md).
    void patchify(const float* images, std::int64_t N, std::int64_t side, std::int64_t patch, float* out) override;
    void addPeriodic(float* x, std::int64_t n, const float* add, std::int64_t period) override;
    void sumPeriodic(const float* x, std::int64_t n, std::int64_t period, float* out) override;
    void layerNorm(Format emulate, const float* x, std::int64_t rows, std::int64_t D, const float* gamma,
                   const float* beta, float eps, float* y, float* xhat, float* rstd, float* sumOfSquares) override;
    void layerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                           std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta) override;
    void softmaxRows(Format emulate, const float* s, std::int64_t rows, std::int64_t T, float* p) override;
    void softmaxRowsBackward(const float* p, float* g, std::int64_t rows, std::int64_t T) override;
    void gelu(const float* x, float* y, std::int64_t n) override;
    void geluBackward(const float* x, float* g, std::int64_t n) override;
    void add(const float* a, const float* b, float* y, std::int64_t n) override;
    void scale(float* x, std::int64_t n, float factor) override;
    void meanTokens(const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y) override;
    void meanTokensBackward(const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx) override;

    // Loss scaling and the optimizers (cuda_update_ops.cpp).
    SweepResult gradientSweep(const std::vector<GradientView>& views, float multiplier, SweepSquares squares) override;
    void sgdUpdate(const SgdScalars& s, UpdateFormats f, float* weights, const float* grad, float* buffer,
                   std::int64_t n, UpdateCounts* counts) override;
    void adamUpdate(const AdamScalars& s, UpdateFormats f, float* weights, const float* grad, float* m, float* v,
                    std::int64_t n, UpdateCounts* counts) override;

private:
    // Makes this backend's device current on the calling thread (the current device is
    // per host thread, and the trainer calls from its worker thread).
    void activate() const;
    cudaStream_t stream() const { return stream_.get(); }
    void synchronize();
    // gemm on FP8 codes through cuBLASLt, for a precision that runsFp8 (cuda_fp8.cpp).
    void fp8Gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
                 std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                 const GemmPrecision& precision);
    // A per-tensor FP8 quantisation of n elements: `launch(counting)` starts its kernel
    // with the counters stats and hist want and the zeroed amax key; returns the amax.
    template <typename Launch>
    float quantizedPerTensor(std::int64_t n, RoundingStats* stats, GradientHistogram* hist, Launch&& launch);
    // The amax of n elements whose kernel `launch(key)` folds into the zeroed key.
    template <typename Launch>
    float amaxOf(std::int64_t n, Launch&& launch);
    // Waits for the amax key at deviceKey and returns it as a float (amaxFromKey).
    float readAmax(const unsigned* deviceKey);
    // The labels of the loss on the device: uploaded when they differ from the last ones,
    // so the backward pass reuses the forward pass's copy. Throws when one is >= classes.
    const std::uint8_t* deviceLabels(const std::uint8_t* labels, std::int64_t N, std::int64_t classes);

    // Declaration order is teardown order reversed: the buffers are freed on the stream,
    // the stream drains and is destroyed, and only then is the pool they all came from
    // trimmed and destroyed, with no block of it left allocated.
    int device_ = 0;
    DeviceCapability capability_;
    std::uint64_t memoryBudget_ = 0;   // bytes the pool may hold (0: no budget; memory_budget.h)
    MemoryPool memory_;          // every stream-ordered block below comes from here
    Stream stream_;
    CublasHandle cublas_;
    CublasLtHandle cublasLt_;
    BackendInfo info_;
    StreamAllocator allocator_;
    CounterArena counters_;
    DeviceBuffer a16_, b16_, c16_;   // 16-bit GEMM operands: op(A), op(B) as stored, C (M, N); FP8 codes
                                     // of op(A), op(B) and the fp32 result of an FP8 GEMM
    DeviceBuffer ltWorkspace_;       // cuBLASLt's workspace
    // cuBLASLt's descriptors and chosen algorithm per FP8 GEMM shape (cuda_fp8.cpp).
    struct Fp8Plans;
    struct Fp8PlansDeleter {
        void operator()(Fp8Plans* plans) const;
    };
    std::unique_ptr<Fp8Plans, Fp8PlansDeleter> fp8Plans_;
    DeviceBuffer quantizeScratch_;   // the amax key of quantize / amax
    DeviceBuffer labels_;            // (N) labels of the loss
    DeviceBuffer lossScratch_;       // LossTotals, then per-row results (N doubles) and hits (N bytes)
    DeviceBuffer sweepScratch_;      // flag, per-view sums, per-block partial sums
    DeviceBuffer rowScratch_{stream_.get(), memory_.get()};   // (rows, parts) partial sums of sumRows
    PinnedBuffer results_;           // what the ops that return a value read back
    CudnnConvolutions convolutions_; // cuDNN's handle, plans and buffers, made at the first convolution
    CudnnConvolutions16::Passes cudnn16_;   // what PLAB_CUDNN_16 asks for
    bool libraryRounding_ = false;          // allowLibraryRounding: this step, both passes
    CudnnConvolutions16 convolutions16_;
    DeviceBuffer nhwcIn_, nhwcWeights_, nhwcOut_;   // the NHWC copies around cuDNN's 16-bit calls
    std::vector<std::uint8_t> labelsOnDevice_;   // what labels_ holds
};

}  // namespace plab::cuda
