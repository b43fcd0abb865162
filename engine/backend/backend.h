// Over 500 lines: the one interface every backend implements, each op documented where it is declared.
// The compute backend interface: every op a training step runs on tensor values (GEMM
// under a precision rule, batched im2col/col2im for 3x3-style convolutions, bulk
// rounding with telemetry, bias, ReLU, pooling, the loss, the gradient sweep of loss
// scaling, the optimizers' updates), the CPU backend factory, and the probe and C entry
// points of the CUDA plugin (libplab_cuda.so, loaded at run time so that everything
// starts and runs on machines without the CUDA libraries).
//
// Pointers to tensor values are the backend's own: host memory for the CPU backend,
// device memory for a backend with an allocator() (tensors placed there with
// Tensor::place). Pointers to counters (RoundingStats, GradientHistogram, UpdateCounts)
// and to labels are host memory. A backend may run ops asynchronously: results written
// to host counters are complete after flush(); ops that return a value wait for it.
//
// Counter structs passed to an op must stay alive until the next flush(), and the caller
// must neither read nor reset them in between: a backend may keep their addresses and
// write them only at flush() (the CUDA backend adds a step's device-side counts then, in
// one go), while another writes them at once. So: reset before the ops, read after
// flush(). A backend destroyed with counts pending drops them without writing.
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/rounding_stats.h"
#include "numerics/update_math.h"
#include "tensor/device_allocator.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

// An operand of a GEMM that holds FP8 values with one per-tensor scale (what quantize wrote
// under the FP8 recipes): each value is q * scaleInv, q in `element` (E4M3 or E5M2) and
// q = round(x * scale). A backend with FP8 matrix units may multiply the codes q and the
// sum by both operands' scaleInv (cuBLASLt's scale pointers); the others read the values.
struct Fp8Operand {
    bool on = false;
    MiniFormat element = MiniFormat::e4m3;
    float scale = 1.0f;
    float scaleInv = 1.0f;
    bool operator==(const Fp8Operand&) const = default;
};

// How a GEMM sums its products. Operands are already rounded to `compute` by the caller.
// fp32Accumulate: products summed in fp32 (the products of fp16/bf16/tf32 values are exact
// in fp32, so an fp32 sgemm is exact emulation up to the order of the additions).
// Otherwise: summed in `compute`, one rounding after every fused multiply-add, sequentially
// in k (the teaching option: what fp16 accumulation on a GPU does).
struct GemmPrecision {
    GemmPrecision() = default;
    GemmPrecision(Format c, bool sumInFp32) : compute(c), fp32Accumulate(sumInFp32) {}   // no FP8 operands
    Format compute = Format::fp32;
    bool fp32Accumulate = true;
    Fp8Operand a, b;   // op(A) and op(B) as FP8 (both or neither; then compute is fp32)
    bool fp8() const { return a.on && b.on; }
    bool operator==(const GemmPrecision&) const = default;
};

enum class Transpose : std::uint8_t { no, yes };

// How a backend cuts a product for its threads where the cut decides the sums
// (ComputeBackend::gemmCut): `count` pieces of `width` columns, or rows when !columns, of
// an extent of `extent`; count 0: any block sums as the whole.
struct GemmCut {
    bool columns = true;
    std::int64_t extent = 0, width = 0, count = 0;
    // Where piece i starts (extent for i >= count).
    std::int64_t begin(std::int64_t i) const { return i >= count ? extent : i * width; }
};

// How a matmul/conv input is quantised below 16 bits (numerics/quantize.h): with
// one scale for the tensor, or in blocks along the rows or the columns of a row-major
// (rows, cols) matrix: OCP MX (kMxBlockSize, an E8M0 scale each) or NVFP4
// (kNvfp4BlockSize, an E4M3 scale each and one fp32 scale from the tensor's amax). The
// values written are the dequantised ones, held in fp32 for an fp32-accumulated GEMM.
enum class BlockScaling : std::uint8_t { mx, nvfp4 };
struct QuantizeOp {
    MiniFormat element = MiniFormat::e4m3;
    bool blocks = false;          // blocks; else one scale
    BlockScaling blockScaling = BlockScaling::mx;   // NVFP4: element must be e2m1
    float tensorAmax = 0.0f;      // NVFP4: the amax of the whole tensor (its encode scale)
    MxScaleRounding mxScale = MxScaleRounding::floor;   // MX: the blocks' exponent rounding
    float scale = 1.0f;           // per tensor: q = round(x * scale), written as q * scaleInv
    float scaleInv = 1.0f;
    std::int64_t rows = 0;        // blocks: the matrix (rows * cols values, row stride ld)
    std::int64_t cols = 0;
    std::int64_t ld = 0;          // 0: cols
    bool alongRows = true;        // blocks along each row (the reduction runs along rows)
    std::int64_t stride() const { return ld ? ld : cols; }
};

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

// What the loss forward returns: the batch mean of the cross-entropy as computed (in
// fp32, or in the emulated format) and how many argmax(logits) equal the label.
struct LossResult {
    float loss = 0.0f;
    std::int64_t correct = 0;
};

// Device memory as the device reports it (cudaMemGetInfo), in bytes.
struct DeviceMemoryInfo {
    std::uint64_t used = 0;
    std::uint64_t total = 0;
    bool operator==(const DeviceMemoryInfo&) const = default;
};

// What a backend can run: the trainer refuses a recipe (at the start and in a mid-run
// change) that needs anything else (recipeProblem, train/backend_support.h).
struct BackendCapabilities {
    std::vector<Format> compute;         // the formats its products and convolutions compute in
    std::vector<Format> sumsInCompute;   // those it can also accumulate in (fp32 accumulation off)
    bool quantizes = false;              // runs ComputeBackend::quantize per tensor (the FP8 recipes)
    bool quantizesBlocks = false;        // and in blocks (the MX and NVFP4 recipes)
    std::string blocksLimitation;        // why not in blocks, for people ("" when it does)
    std::string limitation;              // why a format is missing, for people ("" when none is)
    std::uint64_t memoryBytes = 0;       // the device's memory; 0: host memory
};

struct BackendInfo {
    std::string name;                    // "cpu", "cuda"
    bool available = false;
    std::string reason;                  // why not available, or a short description
    std::vector<std::string> versions;   // "OpenBLAS 0.3.21 ...", "CUDA 12.4", "cuDNN 9.1"
    BackendCapabilities capabilities;
};

// "CPU", "CUDA": a backend's name as sentences write it.
std::string backendDisplayName(const std::string& name);

// How the CPU multiplies 16-bit operands: `exact` emulates the recipe on fp32
// arithmetic (the reference, the same bits on every CPU); `hardware` uses the CPU's native
// bf16/fp16 units through oneDNN where it has them (fp32 accumulation in the hardware's
// order), and exact where it has none.
enum class Arithmetic : std::uint8_t { exact, hardware };
std::string_view arithmeticName(Arithmetic a);                      // "exact", "hardware"
std::optional<Arithmetic> parseArithmetic(std::string_view name);
// The first word of an arithmeticFor() phrase when it is "hardware" or "exact" (the CPU's
// two for 16-bit products); empty otherwise (fp32, the GPU's, none recorded).
std::string_view arithmeticKind(std::string_view phrase);

// What a backend runs beyond the ops every backend has, asked in one place
// (ComputeBackend::supports, as ggml's backends answer supports_op): each names a family of
// ops below, which a backend that does not support it never gets (each throws
// std::logic_error). The 16-bit products are asked with their precision.
enum class BackendOp : std::uint8_t {
    // Per-tensor FP8 operands held as their 1-byte codes (the layers' quantised copies; the
    // CPU and CUDA backends): quantize16, quantizeToCodes and the ops that decode codes.
    // Elsewhere the layers hold the values quantize writes, in fp32.
    fp8Codes,
    // Activations and their gradients held packed in their 16-bit format (Tensor::pack; the
    // CPU backend in host memory, CUDA in device memory): relu16, im2col16 and the other
    // packed ops, each giving the fp32 op's bits on the widened values, narrowed again.
    packedTensors,
    // And packing unless told otherwise (nn/packed_storage.h, packsStorageOn): where the
    // packed layers' blocks give the bits whole products give, and the packed ops were
    // checked on the hardware they run on.
    packsByDefault,
    // gemm16 of operands of this precision as their 16-bit patterns, as gemm multiplies
    // their values (the CPU's hardware arithmetic on native units: fp32 sums, bf16 or fp16,
    // no FP8). Elsewhere the layers widen packed operands into fp32 for gemm.
    gemm16,
    // convolutionForward16 of this precision: a convolution library that convolves 16-bit
    // patterns itself (cuDNN, PLAB_CUDNN_16=forward, or on the steps allowLibraryRounding
    // allows), rounding each output's fp32 sum into the compute format before handing it
    // back (as PyTorch's autocast convolutions do), so the layer's bias and its one counted
    // rounding come after a rounding it cannot see.
    convolution16,
    // convolutionBackwardData16 of this precision (PLAB_CUDNN_16=data on CUDA, or on the steps
    // allowLibraryRounding allows): the input gradient's fp32 sums rounded by the library
    // into the compute format, as convolution16's.
    convolutionData16,
    // convolutionBackwardFilter16 of this precision (PLAB_CUDNN_16=filter on CUDA, or on the
    // steps allowLibraryRounding allows): fp32 sums of the 16-bit products into an fp32
    // result, in the library's order; no 16-bit rounding.
    convolutionFilter16,
    // The vision transformer's ops (nn/transformer.h).
    transformer,
    // sgdUpdatePacked and adamUpdatePacked: the updates on operands that may be packed (the
    // optimizer then keeps 16-bit state in 2 bytes an element where packsStorageOn says the
    // backend packs).
    packedUpdates,
};

// ComputeBackend's packed-tensor ops on a backend without them (a caller's mistake).
[[noreturn]] inline void refusePackedOp(const char* op)
{
    throw std::logic_error(std::string("ComputeBackend::") + op +
                           ": this backend holds no packed 16-bit tensors (it does not support BackendOp::packedTensors)");
}

// ComputeBackend's transformer ops on a backend without them.
[[noreturn]] inline void refuseTransformerOp(const char* op)
{
    throw std::logic_error(std::string("ComputeBackend::") + op +
                           ": this backend has no transformer ops (it does not support BackendOp::transformer)");
}

class ComputeBackend {
public:
    virtual ~ComputeBackend() = default;

    virtual const BackendInfo& info() const = 0;
    // Whether it runs `op` (BackendOp above; the 16-bit products with `precision`). (Defined
    // here, not in backend.cpp: the CUDA plugin links none of the engine's code.)
    virtual bool supports(BackendOp /*op*/, const GemmPrecision& /*precision*/ = {}) const { return false; }
    virtual int threads() const = 0;
    // The arithmetic products of this precision run in, and why, in one phrase for the
    // record, the status bar and the report: "hardware: AVX-512 BF16 via oneDNN 2.6.3
    // (brg:avx512_core_bf16)", "exact: this CPU has no native fp16 ...".
    virtual std::string arithmeticFor(const GemmPrecision& precision) const = 0;
    // Bytes the backend holds between calls for its own work (the native products' packed
    // operands and oneDNN's scratchpads): the trainer counts them as workspace.
    virtual std::int64_t scratchBytes() const { return 0; }

    // Row-major C (M, N) = op(A) (M, K) * op(B) (K, N) + beta * C, where op(A) is A or A^T
    // as stored with leading dimension lda (likewise B, C). beta == 0 never reads C.
    // With compute-format accumulation the running sum starts from round(beta * C).
    virtual void gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N,
                      std::int64_t K, const float* A, std::int64_t lda, const float* B,
                      std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                      GemmPrecision precision) = 0;
    // A length L at which gemm of this precision with an (M, N) result may be cut along its
    // sum (K): one call a piece, every piece but the last a multiple of L long and the last
    // at least L long, the first with beta and the rest with beta 1, gives every element of
    // C the sum one call gives, bit for bit. 0 where no cut does (the default; oneDNN's
    // and a device's sums depend on the product's shape).
    virtual std::int64_t gemmReductionCut(const GemmPrecision&, std::int64_t /*M*/, std::int64_t /*N*/) const
    {
        return 0;
    }
    // How gemm of this precision cuts a product with an (M, N) result and a sum of K where
    // that decides its sums: `count` pieces of `width` columns (rows when !columns) from the
    // first, the last narrower, each summed as one call of its own shape. A product computed
    // piece by piece (gemmPieces, any grouping of whole pieces) then has the bits of one gemm
    // call; a block that cuts a piece need not. count 0 (the default): any block of rows or
    // columns at least leastGemmBlock wide sums as the whole (docs/ARITHMETIC.md). The CPU
    // backend on OpenBLAS's Haswell and Zen kernels, which sum each cut in its own order.
    virtual GemmCut gemmCut(const GemmPrecision&, std::int64_t /*M*/, std::int64_t /*N*/, std::int64_t /*K*/) const
    {
        return {};
    }
    // Pieces [first, last) of `cut` (gemmCut's for the whole product): gemm of the columns
    // (or rows) [cut.begin(first), cut.begin(last)) of the whole, A, B and C pointing at
    // the first piece's, N (or M) that extent. The default is one gemm call.
    virtual void gemmPieces(const GemmCut& /*cut*/, std::int64_t /*first*/, std::int64_t /*last*/, Transpose transA,
                            Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
                            std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                            GemmPrecision precision)
    {
        gemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
    }
    // C_i = op(A_i) op(B_i) + beta C_i for i < batch, with A_i = A + i * strideA (B_i, C_i
    // alike): gemm's arithmetic for each product, which are independent (their order does
    // not matter). The default calls gemm once a product; a device backend runs them as
    // one batched call (the attention's per-image products).
    virtual void gemmBatched(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                             const float* A, std::int64_t lda, std::int64_t strideA, const float* B, std::int64_t ldb,
                             std::int64_t strideB, float beta, float* C, std::int64_t ldc, std::int64_t strideC,
                             std::int64_t batch, GemmPrecision precision)
    {
        for (std::int64_t i = 0; i < batch; ++i)
            gemm(transA, transB, M, N, K, A + i * strideA, lda, B + i * strideB, ldb, beta, C + i * strideC, ldc,
                 precision);
    }

    // cols (patchSize, count * H * W) from samples [n0, n0 + count) of src (C, N, H, W);
    // row c * k * k + ky * k + kx, column (n - n0) * H * W + y * W + x.
    virtual void im2col(const ConvGeometry& g, const float* src, std::int64_t n0,
                        std::int64_t count, float* cols) = 0;
    // The adjoint: dst (C, N, H, W) samples [n0, n0 + count) are overwritten with the
    // sums of the cols entries that im2col would have read from them; cols's rows are
    // colsLd apart (0: count * H * W, as im2col writes them).
    virtual void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0,
                        std::int64_t count, float* dst, std::int64_t colsLd) = 0;

    // roundArray of engine/numerics over both threads; stats / hist (may be null) get the
    // counts added, exactly as one serial call would.
    virtual void roundArray(Format f, const float* src, float* dst, std::size_t n,
                            RoundingStats* stats, GradientHistogram* hist) = 0;

    // Quantises n values of src into dst (may alias) as op says (blocks: n = rows * cols,
    // src and dst both with row stride op.stride()); counts of the values given
    // to the element format added to stats / hist, one count per block to blockScales (each
    // may be null). Returns the amax of src (NaN if one is NaN; 0 for blocks). Waits for it.
    // Only backends whose capabilities say `quantizes` run it (the trainer refuses the FP8
    // and MX recipes elsewhere); the others throw std::logic_error.
    // (Defined here, like every default of this class: the CUDA plugin links none of the
    // engine's libraries.)
    virtual float quantize(const QuantizeOp& op, const float* src, float* dst, std::int64_t n,
                           RoundingStats* stats, GradientHistogram* hist, GradientHistogram* blockScales)
    {
        (void)op, (void)src, (void)dst, (void)n, (void)stats, (void)hist, (void)blockScales;
        throw std::logic_error("The " + info().name + " backend cannot quantise below 16 bits.");
    }
    // im2col of samples [n0, n0 + count) into cols, quantised in blocks as `op` says (op.blocks;
    // op.rows = patchSize, op.cols = op.stride() = count * H * W), in one pass that quantises
    // each part while it is in the cache: the same values and counts as im2col then
    // quantize. A backend without it returns false and writes nothing (the layer then
    // lowers and quantises in two passes).
    virtual bool im2colQuantize(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count,
                                float* cols, const QuantizeOp& op, RoundingStats* stats, GradientHistogram* hist,
                                GradientHistogram* blockScales)
    {
        (void)g, (void)src, (void)n0, (void)count, (void)cols, (void)op, (void)stats, (void)hist, (void)blockScales;
        return false;
    }
    // quantize (per tensor) of values packed as `from`'s 16-bit patterns (fp16 or bf16),
    // widened on the way, into fp32 values: for a layer that holds codes but reads an
    // operand once, whole, in fp32 (no codes to decode).
    virtual float quantize16(const QuantizeOp& op, Format from, const std::uint16_t* src, float* dst, std::int64_t n,
                             RoundingStats* stats, GradientHistogram* hist)
    {
        (void)op, (void)from, (void)src, (void)dst, (void)n, (void)stats, (void)hist;
        throw std::logic_error("The " + info().name + " backend does not hold FP8 codes.");
    }
    // quantize (per tensor: !op.blocks, op.element E4M3 or E5M2) writing the codes of q =
    // round(x * op.scale) instead of q * op.scaleInv; the same counts and amax.
    virtual float quantizeToCodes(const QuantizeOp& op, const float* src, std::uint8_t* codes, std::int64_t n,
                                  RoundingStats* stats, GradientHistogram* hist)
    {
        (void)op, (void)src, (void)codes, (void)n, (void)stats, (void)hist;
        throw std::logic_error("The " + info().name + " backend does not hold FP8 codes.");
    }
    // quantizeToCodes of values packed as `from`'s 16-bit patterns (fp16 or bf16), widened on
    // the way; and amax of such values.
    virtual float quantize16ToCodes(const QuantizeOp& op, Format from, const std::uint16_t* src, std::uint8_t* codes,
                                    std::int64_t n, RoundingStats* stats, GradientHistogram* hist)
    {
        (void)op, (void)from, (void)src, (void)codes, (void)n, (void)stats, (void)hist;
        throw std::logic_error("The " + info().name + " backend does not hold FP8 codes.");
    }
    virtual float amax16(Format from, const std::uint16_t* src, std::int64_t n)
    {
        (void)from, (void)src, (void)n;
        throw std::logic_error("The " + info().name + " backend does not hold FP8 codes.");
    }
    // dst = the values of the codes (in `element`) times scaleInv: what quantize writes,
    // bit for bit; `rows` rows of `cols`, each operand's rows its ld apart.
    virtual void decodeFp8(MiniFormat element, float scaleInv, const std::uint8_t* codes, std::int64_t codesLd,
                           float* dst, std::int64_t dstLd, std::int64_t rows, std::int64_t cols)
    {
        (void)element, (void)scaleInv, (void)codes, (void)codesLd, (void)dst, (void)dstLd, (void)rows, (void)cols;
        throw std::logic_error("The " + info().name + " backend does not hold FP8 codes.");
    }
    // im2col of samples [n0, n0 + count) of a (C, N, H, W) tensor held as FP8 codes: the
    // columns im2col makes from the decoded values (decodeFp8).
    virtual void im2colFp8(const ConvGeometry& g, MiniFormat element, float scaleInv, const std::uint8_t* src,
                           std::int64_t n0, std::int64_t count, float* cols)
    {
        (void)g, (void)element, (void)scaleInv, (void)src, (void)n0, (void)count, (void)cols;
        throw std::logic_error("The " + info().name + " backend does not hold FP8 codes.");
    }
    // The amax of src: the largest |x|, NaN if one is NaN. Waits for it. Backends that
    // quantize run it; the others throw std::logic_error.
    virtual float amax(const float* src, std::int64_t n)
    {
        (void)src, (void)n;
        throw std::logic_error("The " + info().name + " backend cannot quantise below 16 bits.");
    }

    // ---- Where tensors live, and the step's synchronisation --------------------------

    // The device allocator tensors of this backend are placed on; nullptr: host memory.
    virtual DeviceAllocator* allocator() { return nullptr; }
    // Delivers every pending result written through host counter pointers (a backend may
    // hold them back until here; see the lifetime rule at the top of this file).
    virtual void flush() {}
    // Whether the steps from here on may hand 16-bit passes to a library that rounds its fp32
    // sums into the compute format itself, where no tap sees that rounding: telemetry
    // sampled's steps between snapshots (TrainSettings::telemetry). False, as at the start:
    // the lab rounds, and counts, every 16-bit result. It allows, not forces: supports
    // (convolution16, convolutionData16, convolutionFilter16) says what the backend then
    // does. A backend without such a library ignores it.
    virtual void allowLibraryRounding(bool /*allowed*/) {}
    // The device's memory, where the backend has a device. Used counts what the device
    // reports, every process included (CUDA: blocks this backend keeps cached count as used
    // while it lives, and are given back when it is destroyed).
    virtual std::optional<DeviceMemoryInfo> deviceMemory() const { return std::nullopt; }

    // ---- Convolutions in one library call (optional) ----------------------------------

    // A backend with a convolution library (cuDNN) runs the stride-1 "same" convolutions
    // of ConvGeometry whole; one without returns false and the layer lowers them through
    // im2col + gemm. Activations are (C, N, H, W) as everywhere; w is (Cout, C, k, k);
    // operands are already in precision.compute. y (Cout, N, H, W) and dx are
    // overwritten; dw (Cout, C, k, k) is overwritten. Sums as gemm's `precision` says
    // (a device library may round a 16-bit result once more before the bias is added).
    virtual bool convolutionForward(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                    const float* w, float* y, GemmPrecision precision)
    {
        (void)g, (void)outChannels, (void)x, (void)w, (void)y, (void)precision;
        return false;
    }
    virtual bool convolutionBackwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w,
                                         const float* dy, float* dx, GemmPrecision precision)
    {
        (void)g, (void)outChannels, (void)w, (void)dy, (void)dx, (void)precision;
        return false;
    }
    virtual bool convolutionBackwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                           const float* dy, float* dw, GemmPrecision precision)
    {
        (void)g, (void)outChannels, (void)x, (void)dy, (void)dw, (void)precision;
        return false;
    }

    // ---- Element-wise and reduction ops of the layers ---------------------------------

    // x[i] = round_f(x[i] + bias[(i / repeat) % period]) for i < n: the bias added in fp32,
    // one rounding to f (none for fp32) with its counts added to stats / hist.
    // Linear (N, out): period out, repeat 1. Conv (Cout, N*H*W): period Cout, repeat N*H*W.
    virtual void addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                              std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist) = 0;

    // x = max(0, x) in place, NaN kept; g[i] = 0 where y[i] <= 0 (y: ReLU's output).
    virtual void relu(float* x, std::int64_t n) = 0;
    virtual void reluBackward(const float* y, float* g, std::int64_t n) = 0;

    // 2x2 max pooling, stride 2, over `planes` planes of H x W (odd sizes floor): out
    // (planes, H/2, W/2), argmax the position 0..3 of the first maximum (a NaN wins).
    // Backward overwrites dx (planes, H, W) with g scattered to those positions.
    virtual void maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                            std::uint8_t* argmax) = 0;
    virtual void maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes,
                                    std::int64_t H, std::int64_t W, float* dx) = 0;

    // out (B, A, inner) = in (A, B, inner) with the first two axes swapped; in != out.
    virtual void transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                                 float* out) = 0;

    // Sums in double, stored as float: out[r] = sum_c x[r][c]  (x is rows x cols), and
    // out[c] = sum_r x[r][c]. The bias gradients of Conv2d and Linear.
    virtual void sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out) = 0;
    virtual void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out) = 0;

    // Softmax + cross-entropy of logits (N, classes) against labels (host, N values,
    // checked by the caller to be < classes). emulate == fp32: a max-shifted log-sum-exp
    // in fp32 with the sums in double; otherwise every intermediate is rounded to
    // `emulate` (the fp32-sensitive-ops switch off). probabilities (N, classes) are kept
    // for backward. Waits for the result.
    virtual LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                           std::int64_t classes, Format emulate, float* probabilities) = 0;
    // grad[n][j] = (probabilities[n][j] - (j == label_n)) / N * lossScale, in fp32.
    virtual void softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels,
                                             std::int64_t N, std::int64_t classes, float lossScale,
                                             float* grad) = 0;

    // ---- Tensors packed into their 16-bit storage format ---------------------
    virtual void relu16(Format, std::uint16_t*, std::int64_t) { refusePackedOp("relu16"); }
    virtual void reluBackward16(Format, const std::uint16_t* /*y*/, std::uint16_t* /*g*/, std::int64_t)
    {
        refusePackedOp("reluBackward16");
    }
    virtual void maxPool2x2Packed(Format, const std::uint16_t* /*in*/, std::int64_t /*planes*/, std::int64_t /*H*/,
                                  std::int64_t /*W*/, std::uint16_t* /*out*/, std::uint8_t* /*argmax*/)
    {
        refusePackedOp("maxPool2x2Packed");
    }
    virtual void maxPool2x2BackwardPacked(const std::uint16_t* /*g*/, const std::uint8_t* /*argmax*/,
                                          std::int64_t /*planes*/, std::int64_t /*H*/, std::int64_t /*W*/,
                                          std::uint16_t* /*dx*/)
    {
        refusePackedOp("maxPool2x2BackwardPacked");
    }
    virtual void transposeBlocksPacked(const std::uint16_t* /*in*/, std::int64_t /*A*/, std::int64_t /*B*/,
                                       std::int64_t /*inner*/, std::uint16_t* /*out*/)
    {
        refusePackedOp("transposeBlocksPacked");
    }
    // The next three work on a block of `rows` rows of `cols` values, row r of each operand
    // at its pointer + r * its ld (a block of samples of a (C, N, H, W) tensor, say).
    // dst = the values of src (packed in f), widened; on the backend's threads.
    virtual void widen16(Format, const std::uint16_t* /*src*/, std::int64_t /*srcLd*/, float* /*dst*/,
                         std::int64_t /*dstLd*/, std::int64_t /*rows*/, std::int64_t /*cols*/)
    {
        refusePackedOp("widen16");
    }
    // dst (packed in f) = round_f(src), counted into stats / hist (may be null) as roundArray.
    virtual void roundTo16(Format, const float* /*src*/, std::int64_t /*srcLd*/, std::uint16_t* /*dst*/,
                           std::int64_t /*dstLd*/, std::int64_t /*rows*/, std::int64_t /*cols*/,
                           RoundingStats* /*stats*/, GradientHistogram* /*hist*/)
    {
        refusePackedOp("roundTo16");
    }
    // out (packed in f) = round_f(x + bias[r]) in row r (the sum in fp32; x is left as it
    // was), counted as addBiasRound counts.
    virtual void addBiasRoundTo16(Format, const float* /*x*/, std::int64_t /*xLd*/, const float* /*bias*/,
                                  std::uint16_t* /*out*/, std::int64_t /*outLd*/, std::int64_t /*rows*/,
                                  std::int64_t /*cols*/, RoundingStats* /*stats*/, GradientHistogram* /*hist*/)
    {
        refusePackedOp("addBiasRoundTo16");
    }
    // sumRows of the widened values of x (rows x cols, packed in f): the same sums, bit for bit.
    virtual void sumRows16(Format, const std::uint16_t* /*x*/, std::int64_t /*rows*/, std::int64_t /*cols*/,
                           float* /*out*/)
    {
        refusePackedOp("sumRows16");
    }
    // im2col from a packed source (values widened on the way; cols are fp32).
    virtual void im2colPacked(const ConvGeometry&, Format, const std::uint16_t* /*src*/, std::int64_t /*n0*/,
                              std::int64_t /*count*/, float* /*cols*/)
    {
        refusePackedOp("im2colPacked");
    }
    // im2col of a packed source into packed columns: the 16-bit patterns moved (zeros for
    // the padding), for gemm16.
    virtual void im2col16(const ConvGeometry&, const std::uint16_t* /*src*/, std::int64_t /*n0*/,
                          std::int64_t /*count*/, std::uint16_t* /*cols*/)
    {
        refusePackedOp("im2col16");
    }
    // gemm with both operands as 16-bit patterns of precision.compute (strided as gemm's
    // are): the same products and sums as gemm on their widened values. Only where
    // supports(BackendOp::gemm16, precision).
    virtual void gemm16(Transpose, Transpose, std::int64_t /*M*/, std::int64_t /*N*/, std::int64_t /*K*/,
                        const std::uint16_t* /*A*/, std::int64_t /*lda*/, const std::uint16_t* /*B*/,
                        std::int64_t /*ldb*/, float /*beta*/, float* /*C*/, std::int64_t /*ldc*/, GemmPrecision)
    {
        refusePackedOp("gemm16");
    }
    // y (Cout, count * H * W), fp32 = the widened library result for samples n0..n0+count of
    // the packed x (C, N, H, W) and the packed w (Cout, C, k, k), both 16-bit patterns of
    // precision.compute. Only where supports(BackendOp::convolution16, precision); throws
    // when the library has no way to run the shape.
    virtual void convolutionForward16(const ConvGeometry&, std::int64_t /*outChannels*/, const std::uint16_t* /*x*/,
                                      std::int64_t /*n0*/, std::int64_t /*count*/, const std::uint16_t* /*w*/,
                                      float* /*y*/, GemmPrecision)
    {
        refusePackedOp("convolutionForward16");
    }
    // dx (C, count * H * W), fp32 = the widened library result for samples n0..n0+count of
    // the input gradient of the packed dy (Cout, N, H, W) through the packed w (Cout, C, k, k),
    // 16-bit patterns of precision.compute. Only where supports(BackendOp::convolutionData16,
    // precision); throws when the library has no way to run the shape.
    virtual void convolutionBackwardData16(const ConvGeometry&, std::int64_t /*outChannels*/,
                                           const std::uint16_t* /*dy*/, std::int64_t /*n0*/, std::int64_t /*count*/,
                                           const std::uint16_t* /*w*/, float* /*dx*/, GemmPrecision)
    {
        refusePackedOp("convolutionBackwardData16");
    }
    // dw (Cout, C, k, k), fp32 = beta * dw + the sum over samples n0..n0+count of dy (the
    // packed (Cout, N, H, W) gradient) times the shifted packed x (C, N, H, W); beta 0 or 1.
    // Only where supports(BackendOp::convolutionFilter16, precision); throws when the
    // library cannot run the shape.
    virtual void convolutionBackwardFilter16(const ConvGeometry&, std::int64_t /*outChannels*/,
                                             const std::uint16_t* /*x*/, const std::uint16_t* /*dy*/,
                                             std::int64_t /*n0*/, std::int64_t /*count*/, float /*beta*/,
                                             float* /*dw*/, GemmPrecision)
    {
        refusePackedOp("convolutionBackwardFilter16");
    }

    // ---- The vision transformer's ops (nn/transformer.h) ----------------------------
    // Rows of a (rows, cols) tensor are independent: each op below is the same, bit for
    // bit, however its rows are shared among threads. Where a Format `emulate` is not fp32,
    // every sum, quotient and product of the statistics is rounded to it (the
    // fp32-sensitive-ops switch off); fp32 is autocast's fp32, its sums in double.
    // out (N * T, P * P): patch t of image n (row-major over the (side/P)^2 grid), its
    // pixels row-major, from images (N, side, side).
    virtual void patchify(const float* /*images*/, std::int64_t /*N*/, std::int64_t /*side*/, std::int64_t /*patch*/,
                          float* /*out*/)
    {
        refuseTransformerOp("patchify");
    }
    // x[i] += add[i % period] over n values (positions added to every image's tokens).
    virtual void addPeriodic(float* /*x*/, std::int64_t /*n*/, const float* /*add*/, std::int64_t /*period*/)
    {
        refuseTransformerOp("addPeriodic");
    }
    // out[i] = sum over k of x[k * period + i] in double, for i < period; n a multiple of period.
    virtual void sumPeriodic(const float* /*x*/, std::int64_t /*n*/, std::int64_t /*period*/, float* /*out*/)
    {
        refuseTransformerOp("sumPeriodic");
    }
    // LayerNorm of each row of x (rows, D): y = xhat * gamma + beta with xhat = (x - mean)
    // * rstd, rstd = 1 / sqrt(var + eps); keeps xhat and rstd for backward, and writes each
    // row's sum of squared deviations computed exactly (double, then fp32) to sumOfSquares.
    virtual void layerNorm(Format /*emulate*/, const float* /*x*/, std::int64_t /*rows*/, std::int64_t /*D*/,
                           const float* /*gamma*/, const float* /*beta*/, float /*eps*/, float* /*y*/,
                           float* /*xhat*/, float* /*rstd*/, float* /*sumOfSquares*/)
    {
        refuseTransformerOp("layerNorm");
    }
    // Its gradients from dL/dy g (rows, D), in fp32 with double sums: dgamma, dbeta (D) over
    // the rows; dx (may be null) = rstd * (g gamma - mean(g gamma) - xhat mean(g gamma xhat)).
    virtual void layerNormBackward(const float* /*g*/, const float* /*xhat*/, const float* /*rstd*/,
                                   const float* /*gamma*/, std::int64_t /*rows*/, std::int64_t /*D*/, float* /*dx*/,
                                   float* /*dgamma*/, float* /*dbeta*/)
    {
        refuseTransformerOp("layerNormBackward");
    }
    // p = softmax of each row of s (rows, T), shifted by the row's maximum.
    virtual void softmaxRows(Format /*emulate*/, const float* /*s*/, std::int64_t /*rows*/, std::int64_t /*T*/,
                             float* /*p*/)
    {
        refuseTransformerOp("softmaxRows");
    }
    // g (rows, T), dL/dp in, dL/ds out: g = p o (g - rowsum(g o p)), the sums in double.
    virtual void softmaxRowsBackward(const float* /*p*/, float* /*g*/, std::int64_t /*rows*/, std::int64_t /*T*/)
    {
        refuseTransformerOp("softmaxRowsBackward");
    }
    // y = x Phi(x) (exact GELU, erf) and g *= Phi(x) + x phi(x), in fp32.
    virtual void gelu(const float* /*x*/, float* /*y*/, std::int64_t /*n*/) { refuseTransformerOp("gelu"); }
    virtual void geluBackward(const float* /*x*/, float* /*g*/, std::int64_t /*n*/)
    {
        refuseTransformerOp("geluBackward");
    }
    // y = a + b, and x *= factor, in fp32 (y may be a or b).
    virtual void add(const float* /*a*/, const float* /*b*/, float* /*y*/, std::int64_t /*n*/)
    {
        refuseTransformerOp("add");
    }
    virtual void scale(float* /*x*/, std::int64_t /*n*/, float /*factor*/) { refuseTransformerOp("scale"); }
    // y (N, D) = the mean over T tokens of x (N * T, D) (double sums); dx = g / T per token.
    virtual void meanTokens(const float* /*x*/, std::int64_t /*N*/, std::int64_t /*T*/, std::int64_t /*D*/,
                            float* /*y*/)
    {
        refuseTransformerOp("meanTokens");
    }
    virtual void meanTokensBackward(const float* /*g*/, std::int64_t /*N*/, std::int64_t /*T*/, std::int64_t /*D*/,
                                    float* /*dx*/)
    {
        refuseTransformerOp("meanTokensBackward");
    }

    // ---- Loss scaling and the optimizers (engine/numerics/update_math.h) ---------------

    // gradientSweep of update_math.h over tensors of this backend. Waits for the result.
    virtual SweepResult gradientSweep(const std::vector<GradientView>& views, float multiplier,
                                      SweepSquares squares) = 0;
    // One optimizer update of n elements (update_math.h); counts added (after flush()).
    virtual void sgdUpdate(const SgdScalars& s, UpdateFormats f, float* weights, const float* grad, float* buffer,
                           std::int64_t n, UpdateCounts* counts) = 0;
    virtual void adamUpdate(const AdamScalars& s, UpdateFormats f, float* weights, const float* grad, float* m,
                            float* v, std::int64_t n, UpdateCounts* counts) = 0;
    // The same updates with operands that may be packed (update_math.h's UpdateTensors):
    // the same results, counts and random bits, bit for bit.
    virtual void sgdUpdatePacked(const SgdScalars&, UpdateFormats, const UpdateTensors&, std::int64_t /*n*/,
                                 UpdateCounts*)
    {
        refusePackedOp("sgdUpdatePacked");
    }
    virtual void adamUpdatePacked(const AdamScalars&, UpdateFormats, const UpdateTensors&, std::int64_t /*n*/,
                                  UpdateCounts*)
    {
        refusePackedOp("adamUpdatePacked");
    }
};

// The reference backend: OpenBLAS for fp32-accumulated GEMM, exact emulation of
// compute-format accumulation, `threads` threads for BLAS and elementwise work
// (threads <= 0: the number of cores); with Arithmetic::hardware, oneDNN on the CPU's
// native units for the bf16/fp16 products it has them for. Defined in engine/backend/cpu.
std::unique_ptr<ComputeBackend> createCpuBackend(int threads, Arithmetic arithmetic = Arithmetic::exact);
// What that backend's arithmeticFor() says, without making one (the settings panel's tooltip).
std::string cpuArithmeticFor(Arithmetic arithmetic, const GemmPrecision& precision);
// The threads the CPU backend runs for a request: at most one per logical core (0 or less:
// one per core). plab and the app say so when a request is cut down.
int usableCpuThreads(int requested);

// Looks for the CUDA plugin next to the executable, then on the library path, and asks it
// whether a device is usable. Never throws; available = false with a reason when absent.
BackendInfo probeCudaBackend();

// A probe's reason as a person should read it: where no NVIDIA GPU or driver is there (the
// runtime then reports "CUDA driver version is insufficient for CUDA runtime version" or
// "no CUDA-capable device", which read as a broken driver), "No NVIDIA GPU found (the CUDA
// backend needs one)"; any other reason as it is. The raw reason stays the detail.
std::string cudaReasonForPeople(const std::string& reason);

// Loads the CUDA plugin and creates its backend; throws std::runtime_error with the
// probe's reason when it is not available.
std::unique_ptr<ComputeBackend> createCudaBackend(int deviceIndex);

// probeCudaBackend for the plugin in the file `path` (a name without a slash is looked up
// on the library path), with the same checks: the plugin's interface version first, and
// nothing else of it is called when that differs (the file is then unloaded again). For
// tests and diagnostics.
BackendInfo probeCudaPluginFile(const std::string& path);

// The interface between the engine and libplab_cuda.so: this header (ComputeBackend's
// vtable, BackendInfo and the structs the ops take), tensor/device_allocator.h, and the
// counter and update structs of numerics/rounding_stats.h and numerics/update_math.h.
// The plugin reports the number it was built with (plab_cuda_abi_version) and the loader
// refuses any other, so a plugin left over from another build is never called into.
// Bump it whenever any of those declarations change.
// 2: BackendInfo::capabilities; no parallelFor; 3: arithmeticFor, scratchBytes;
// 4: quantize, amax, BackendCapabilities::quantizes; 5: QuantizeOp's NVFP4 fields;
// 6: im2colQuantize; 7: GemmPrecision's FP8 operands, BackendCapabilities::quantizesBlocks;
// 8: QuantizeOp::mxScale; 9: gemmBatched, and the packed 16-bit and transformer ops,
// which had been added to the vtable without a bump; 10: packsByDefault; 11: gemmReductionCut;
// 12: updatesPacked, sgdUpdatePacked, adamUpdatePacked; 13: UpdateTensors::compensation;
// 14: gemmCut, gemmPieces, col2im's colsLd; 15: gradientSweep's SweepSquares; 16: convolves16,
// convolutionForward16, convolvesFilter16, convolutionBackwardFilter16; 17: holdsFp8Codes,
// quantizeToCodes, quantize16ToCodes, amax16, decodeFp8, im2colFp8; 18: quantize16;
// 19: supports(BackendOp) in place of the eight boolean queries; 20: allowLibraryRounding,
// BackendOp::convolutionData16, convolutionBackwardData16.
inline constexpr int kCudaPluginAbiVersion = 20;

}  // namespace plab

// The C entry points the CUDA plugin exports (extern "C", so dlsym finds them by name).
// plab_cuda_create_backend: a new backend (owned by the caller, deleted through its
// virtual destructor) or null, with a NUL-terminated reason written to error (at most
// errorSize bytes). The plugin is built from the same headers and compiler ABI.
// plab_cuda_probe: fills info (name, availability, reason, versions) without creating one.
// plab_cuda_abi_version: the kCudaPluginAbiVersion the plugin was built with; the only
// entry point called before it matches. None of them lets an exception escape.
#define PLAB_CUDA_CREATE_BACKEND_SYMBOL "plab_cuda_create_backend"
#define PLAB_CUDA_PROBE_SYMBOL "plab_cuda_probe"
#define PLAB_CUDA_ABI_VERSION_SYMBOL "plab_cuda_abi_version"
extern "C" {
using PlabCudaCreateBackendFn = plab::ComputeBackend* (*)(int deviceIndex, char* error,
                                                          std::size_t errorSize);
using PlabCudaProbeFn = void (*)(plab::BackendInfo* info);
using PlabCudaAbiVersionFn = int (*)();
plab::ComputeBackend* plab_cuda_create_backend(int deviceIndex, char* error, std::size_t errorSize);
void plab_cuda_probe(plab::BackendInfo* info);
int plab_cuda_abi_version();
}
