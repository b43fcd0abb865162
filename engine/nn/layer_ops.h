// What the layers share: the precision rules of one step (read from the recipe), a tensor
// sized and placed for the step on the backend's memory, the bias addition, and the
// rounding sites (round a buffer to a format on the backend, its statistics tapped into
// telemetry), and the quantisation sites of the FP8 and MX recipes with their scales.
#pragma once

#include "amp/recipe.h"
#include "backend/backend.h"
#include "nn/model.h"
#include "telemetry/telemetry.h"
#include "tensor/byte_buffer.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace plab {

struct StepPrecision {
    Format compute = Format::fp32;   // operands of matmul/conv (unless quantised)
    Format storage = Format::fp32;   // activations and their gradients
    bool fp32Accumulate = true;
    Format grad = Format::fp32;      // weight and bias gradients: recipe.gradientFormat()
    bool fp32SensitiveOps = true;
    Quantization quant;              // FP8 / MX operands; off: rounded to compute

    static StepPrecision of(const PrecisionRecipe& recipe);
    // The rules of one layer: the recipe's, with the layer's own precision where the
    // recipe gives it one (per-layer precision). Throws without recipe / backend.
    static StepPrecision of(const StepContext& ctx, std::string_view layer);
    // Quantised operands hold dequantised values that no 16-bit format holds exactly, so
    // with fp32 accumulation the GEMM runs on them in fp32 (sums as FP8 matrix units do).
    GemmPrecision gemm() const
    {
        GemmPrecision g;
        g.compute = quant.on() && fp32Accumulate ? Format::fp32 : compute;
        g.fp32Accumulate = fp32Accumulate;
        return g;
    }
    bool quantizes() const { return quant.on(); }
    bool roundsOperands() const { return compute != Format::fp32; }
    bool roundsStorage() const { return storage != Format::fp32; }
    Format gradFormat() const { return grad; }
};

// Which input of a layer's matmul/conv an operand is; each has its own scale.
enum class OperandRole : std::uint8_t { input, weight, gradOutput };
TensorKind quantizedKind(OperandRole role);
MiniFormat quantizedFormat(const Quantization& q, OperandRole role);

// The per-tensor scale of one operand of one layer across steps (FP8 recipes): the scale
// this step uses and, for delayed scaling, the amax history that sets the next one.
// Transformer Engine's order: step t quantises with the scale computed from the amaxes of
// steps before t (1 at the first step), then its own amax joins the history. Evaluation
// uses the scale and leaves the history alone. A change of the quantisation settings
// (mid-run) starts afresh.
class OperandScaler {
public:
    // The scale for this step. Current scaling needs the tensor's amax (`currentAmax`).
    float scale(const Quantization& q, MiniFormat f, float currentAmax);
    // After a training step's quantisation: the amax joins the history, the next scale is set.
    void record(const Quantization& q, MiniFormat f, float amax);
    // The FP8 operand the last quantisation wrote (its format and scale), for the GEMMs
    // that read it (layerGemm); off before the first.
    const Fp8Operand& operand() const { return operand_; }
    void setOperand(const Fp8Operand& o) { operand_ = o; }

private:
    void adopt(const Quantization& q);
    Quantization settings_;
    std::vector<float> history_;   // ring of the last amaxHistory amaxes
    std::size_t next_ = 0;
    std::size_t filled_ = 0;
    float scale_ = 1.0f;
    Fp8Operand operand_;
};

// The operand a matmul/conv reads for `t` under a per-tensor FP8 recipe: t quantised into
// `workspace` with its scaler's scale, tapped as (layer, quantizedKind(role)) with the
// scale and amax reported. Only for QuantMode fp8Unscaled / fp8Delayed / fp8Current.
const Tensor& quantizedOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                               std::string_view layer, OperandRole role, OperandScaler& scaler);

// A per-tensor FP8 operand held as its codes, a byte a value (counted so), with the format
// and scale it was quantised with: where the backend holds codes (holdsFp8Codes, the CPU),
// the layers keep their quantised copies so and decode them for the GEMMs, which read fp32.
struct Fp8Codes {
    ByteBuffer codes;
    Shape shape;
    Fp8Operand operand;
    std::int64_t size() const { return elementCount(shape); }
    const std::uint8_t* data() const { return codes.data(); }
    // Frees the codes (a layer that stopped holding codes: no longer counted).
    void discard()
    {
        codes.clear();
        shape.clear();
    }
};
// Whether a layer of precision p holds its quantised operands as Fp8Codes: per-tensor FP8 on
// a backend that holds codes, where tensors are held in their format's bytes (packsStorageOn:
// PLAB_PACKED_STORAGE=off holds FP8 copies as fp32 values too).
bool holdsCodes(const StepContext& ctx, const StepPrecision& p);
// quantizedOperand into codes: the same scale, counts, tap and amax history (a packed t
// read from its patterns).
const Fp8Codes& quantizedCodes(StepContext& ctx, const StepPrecision& p, const Tensor& t, Fp8Codes& out,
                               std::string_view layer, OperandRole role, OperandScaler& scaler);
// The values quantizedCodes' codes decode to, written straight into `values` (fp32, shaped
// as t, prepared by the caller) in one pass from t (its patterns when packed): for a dY
// that a layer holding codes reads whole, at once (no codes kept to decode). The same
// scale, counts, tap and amax history.
void quantizedValuesInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& values,
                         std::string_view layer, OperandRole role, OperandScaler& scaler);
// Whether a layer of precision p quantises in MX or NVFP4 blocks without holding a whole
// quantised copy: each block of samples (or the whole operand, for a linear layer) is
// quantised into a step work buffer just before the GEMM that reads it, as fp32 values
// (counted so). On a backend that holds FP8 codes (the CPU), where tensors are held in their
// format's bytes (packsStorageOn; PLAB_PACKED_STORAGE=off keeps a whole copy per operand
// in each layer; the CUDA backend refuses MX and NVFP4).
bool mxInBlocks(const StepContext& ctx, const StepPrecision& p);
// Whether a layer that quantises so (holdsCodes or mxInBlocks) also holds its output and
// input gradient packed in their 16-bit storage format (as packsStorage, for layers whose
// operands are not quantised).
bool packsAroundQuantized(const StepContext& ctx, const StepPrecision& p);
// The values of codes (what quantizedOperand writes, bit for bit), whole, in the step's fp32
// work buffer `slot` (or `own`), shaped as the codes.
const Tensor& decodedInto(StepContext& ctx, int slot, const Fp8Codes& codes, Tensor& own);
// rows x cols of the codes from `at` (rows ld apart) decoded into dst (rows dstLd apart).
void decodeRows(StepContext& ctx, const Fp8Codes& codes, std::int64_t at, std::int64_t ld, float* dst,
                std::int64_t dstLd, std::int64_t rows, std::int64_t cols);

// How the recipe stores a quantised operand of this role, for the memory accountant: FP8
// per tensor (1 byte a value, an fp32 scale), MX (the element's bits, an E8M0 byte per 32
// values), NVFP4 (4 bits, an E4M3 byte per 16, an fp32 tensor scale).
QuantizedStorage quantizedStorageOf(const StepPrecision& p, OperandRole role);
// prepareTensor for a workspace that holds quantised values (modelled as quantizedStorageOf).
void prepareQuantized(Tensor& t, const Shape& shape, const QuantizedStorage& q, StepContext& ctx,
                      MemoryCategory category);

// Under an MX recipe: the (rows, cols) matrix at src, row stride ld, quantised
// in OCP MX blocks along its rows or down its columns (the GEMM's reduction dimension)
// into dst (may alias; same stride), tapped as (layer, quantizedKind(role)) with its
// block scales. A tensor used by two GEMMs along different dimensions is quantised once
// for each, as MX training keeps a row-wise and a column-wise copy. NVFP4 (the same in
// blocks of 16) needs the amax of the whole tensor src is part of: tensorAmax, from
// nvfp4TensorAmax (the tap reports the tensor scale and that amax).
void quantizeBlocks(StepContext& ctx, const StepPrecision& p, const float* src, float* dst, std::int64_t rows,
                    std::int64_t cols, std::int64_t ld, bool alongRows, std::string_view layer, OperandRole role,
                    float tensorAmax);
// The columns of a convolution (ConvGeometry g) lowered from samples [n0, n0 + count) of
// src into cols (patchSize, count * H * W) and quantised in blocks as quantizeBlocks does
// with the input's role, in one pass where the backend has im2colQuantize (the same values
// and counts as im2col then quantizeBlocks, which it falls back to).
// A packed src is lowered from its patterns (widened), then quantised.
void lowerInBlocks(StepContext& ctx, const StepPrecision& p, const ConvGeometry& g, const Tensor& src,
                   std::int64_t n0, std::int64_t count, float* cols, bool alongRows, std::string_view layer,
                   float tensorAmax);
// The amax of t (packed or not) under NVFP4 (on the backend), 0 under the other recipes
// (they need none).
float nvfp4TensorAmax(StepContext& ctx, const StepPrecision& p, const Tensor& t);
// blockOperand into the step's work buffer `slot` (or `own`): the quantised values, in fp32,
// for GEMMs that read them before another layer runs (mxInBlocks).
const Tensor& blockOperandInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                               std::int64_t cols, bool alongRows, int slot, Tensor& own, std::string_view layer,
                               OperandRole role);
// The same for a whole tensor viewed as (rows, cols), into `workspace`, which it returns.
const Tensor& blockOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                           std::int64_t cols, bool alongRows, Tensor& workspace, std::string_view layer,
                           OperandRole role);

// The scalers of a matmul/conv layer's three operands.
struct OperandScalers {
    OperandScaler input, weight, gradOutput;
    OperandScaler& of(OperandRole role)
    {
        return role == OperandRole::input ? input : role == OperandRole::weight ? weight : gradOutput;
    }
    const OperandScaler& of(OperandRole role) const
    {
        return role == OperandRole::input ? input : role == OperandRole::weight ? weight : gradOutput;
    }
};

// The GemmPrecision of a layer's GEMM (or convolution) of op(A) in role `a` by op(B) in
// role `b`: p.gemm(), with both operands' FP8 format and scale under a per-tensor FP8 recipe
// with fp32 accumulation (as the last quantisation of each wrote them), so that a backend
// with FP8 matrix units can multiply the codes.
GemmPrecision layerGemm(const StepPrecision& p, const OperandScalers& scalers, OperandRole a, OperandRole b);

// The operand a layer's matmul/conv reads for `t` in `role`, under any recipe: quantised
// (quantizedOperand) under a per-tensor FP8 recipe; else t rounded to the compute format
// (operandIn), the input and the output gradient tapped as activation / activation_grad
// when the compute format is tf32 (its only rounding site), the weight never.
const Tensor& layerOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                           std::string_view layer, OperandRole role, OperandScalers& scalers);

// Throws std::invalid_argument, naming the layer and both shapes, unless the gradient a
// layer's backward receives has its output's shape.
void requireGradientShape(std::string_view layer, const Tensor& gradOutput, const Tensor& output);

// Where a rounding site adds its counts; both null without telemetry.
TelemetryCollector::Sink tapSink(const StepContext& ctx, std::string_view layer, TensorKind kind);

// dst = round_f(src) over n elements in parallel, counts added to the tap (layer, kind).
void roundTapped(StepContext& ctx, Format f, const float* src, float* dst, std::int64_t n,
                 std::string_view layer, TensorKind kind);

// Sizes `t` for this step where the backend keeps its tensors: shape, modelled storage
// format, memory accounting under `category`. packed: held packed into its
// 16-bit storage format. A tensor that changes form is emptied first, never converted:
// its values are about to be written, and it never holds both forms at once. Elements it
// gains read as `added` says: NewElements::undefined only where every element is written
// before one is read (outputs, lowered columns, work buffers).
void prepareTensor(Tensor& t, const Shape& shape, Format storage, StepContext& ctx, MemoryCategory category,
                   bool packed = false, NewElements added = NewElements::zero);

// Whether a layer holds its output and its input gradient packed into its 16-bit
// storage format (Tensor::pack): fp16 or bf16 storage, operands not quantised, on a backend
// that holds packed tensors (handlesPackedTensors: the CPU's in host memory, or a device's
// in its own). Values are the same either way; bytes are halved.
bool packsStorage(const StepContext& ctx, const StepPrecision& p);
// The part of that which is the format's: fp16 or bf16 storage, operands not quantised.
bool packableStorage(Format storage, bool quantizes);
// Whether 16-bit tensors are packed: as the backend does by default, or forced on or off
// (PLAB_PACKED_STORAGE=on|off when the process starts; benchmarks and tests set it).
enum class PackedStorage : std::uint8_t { byDefault, on, off };
void setPackedStorage(PackedStorage setting);
PackedStorage packedStorageSetting();
// Forced on or off (benchmarks and tests: packing on and off side by side in one process).
void setPackedStorageEnabled(bool enabled);
// Whether `backend` holds 16-bit tensors packed: forced on, every backend that handles
// packed tensors does; by default, as the backend says (packsByDefault: the CPU backend
// and the CUDA plugin do).
bool packsStorageOn(const ComputeBackend& backend);
// The setting set for a scope (tests), and put back as it was when the scope ends.
class ScopedPackedStorage {
public:
    explicit ScopedPackedStorage(bool enabled) { setPackedStorageEnabled(enabled); }
    ~ScopedPackedStorage() { setPackedStorage(was_); }
    ScopedPackedStorage(const ScopedPackedStorage&) = delete;
    ScopedPackedStorage& operator=(const ScopedPackedStorage&) = delete;

private:
    PackedStorage was_ = packedStorageSetting();
};
// An fp32 work buffer of `shape`: the step's shared one of this slot (StepContext::work),
// or `own` when the step has none. Its contents are undefined.
Tensor& workBuffer(StepContext& ctx, int slot, const Shape& shape, Tensor& own);
// A packed tensor's values widened (on the backend's threads) into the step's work buffer
// `slot` (or `own`), for the GEMMs, which read fp32. operandAsItIs: whether that widened
// copy is the layer's operand itself (the compute format, not quantised), with no rounding
// site of its own to pass through.
const Tensor& widenedInto(StepContext& ctx, int slot, const Tensor& packed, Tensor& own);
bool operandAsItIs(const Tensor& packed, const StepPrecision& p);
// The packed form of roundTapped: the same values and counts, the results stored into the
// packed tensor `out` (storage f).
void roundTappedTo16(StepContext& ctx, Format f, const float* src, Tensor& out, std::string_view layer,
                     TensorKind kind);
// t's values, each representable in f (fp16 or bf16: an operand already in the compute
// format), as f's 16-bit patterns in `bits` (packed, counted as workspace), for gemm16: the
// weights once a step, not once a GEMM.
const std::uint16_t* patternsOf(StepContext& ctx, Format f, const Tensor& t, Tensor& bits);
// The most values a layer's fp32 buffer for one block of a packed tensor holds (columns,
// GEMM results, widened operands): 8 Mi (32 MiB) unless PLAB_PACKED_BLOCK_VALUES sets it
// when the process starts, or a test does (small blocks exercise the blocked paths).
std::int64_t packedBlockValues();
void setPackedBlockValues(std::int64_t values);
// The block for a layer whose largest packed tensor holds `packedValues` values and whose
// products run in `precision`: a quarter of that tensor, within [1/32 of packedBlockValues(),
// packedBlockValues()], so that a small layer's fp32 buffers stay a fraction of what its
// packed tensors save (a block as large as the whole batch holds in fp32 what packing saves).
// Where the backend multiplies natively (oneDNN: its sums depend on a product's shape, so
// other blocks would move results) it stays packedBlockValues().
std::int64_t packedBlockValues(const StepContext& ctx, const GemmPrecision& precision, std::int64_t packedValues);
// The most values of a convolution's fp32 columns (or their gradient) for a block of
// samples: two blocks. The columns are the largest operand, and a product cut into
// narrower blocks runs slower (OpenBLAS packs its operands again for every call).
inline std::int64_t packedColumnValues(const StepContext& ctx, const GemmPrecision& precision,
                                       std::int64_t packedValues)
{
    return 2 * packedBlockValues(ctx, precision, packedValues);
}
// [0, total) cut into `count` pieces of nearly equal size (piece i is [begin(i), begin(i + 1))),
// each of at most `most` where that leaves each at least `least` (or one piece, the whole),
// every piece starting at a multiple of `granule` (deviceGranule; dropped when it is wider
// than `most`).
struct Pieces {
    std::int64_t total = 0, count = 1, granule = 1;
    std::int64_t begin(std::int64_t i) const { return i >= count ? total : i * total / count / granule * granule; }
    std::int64_t largest() const;
};
Pieces piecesOf(std::int64_t total, std::int64_t most, std::int64_t least, std::int64_t granule = 1);
// Where the backend's sums depend on how a product is cut (ComputeBackend::gemmCut: the CPU
// on OpenBLAS's Haswell and Zen kernels), a packed layer computes a product in groups of
// whole pieces of the backend's cut of the product the unpacked layer computes, so that
// every element is the sum that layer's one call gives it. Each group holds as many pieces
// as fit in `most` columns (or rows), at least one, and at least `least` (the backend's
// threads, which run a group's pieces side by side: a group of one piece runs on one
// thread) where they fit in `roomy` (the unscaled budget, packedBlockValues()); more than
// `least`, a multiple of it (no thread idles for a group's last piece). A cut along the
// other dimension, or none (count 0), gives one group: the whole.
struct PieceGroups {
    GemmCut cut;
    std::vector<std::int64_t> firstPiece;   // group i is pieces [firstPiece[i], firstPiece[i + 1])
    std::int64_t count() const { return static_cast<std::int64_t>(firstPiece.size()) - 1; }
    std::int64_t begin(std::int64_t i) const { return cut.begin(firstPiece[static_cast<std::size_t>(i)]); }
    std::int64_t largest() const;
};
PieceGroups pieceGroups(const GemmCut& cut, bool columns, std::int64_t extent, std::int64_t most, std::int64_t least,
                        std::int64_t roomy);
// Copies a (rows, cols) block of fp32 values, rows srcLd and dstLd apart, on the backend's
// memory (the rows of one buffer may not overlap).
void copyColumns(StepContext& ctx, const float* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                 std::int64_t rows, std::int64_t cols);
// Group i's product: gemmPieces of its pieces (one gemm call for a whole product that is not
// cut along the groups' dimension). Arguments as gemm's for the group's block.
void gemmGroup(StepContext& ctx, const PieceGroups& groups, std::int64_t i, Transpose transA, Transpose transB,
               std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda, const float* B,
               std::int64_t ldb, float beta, float* C, std::int64_t ldc, const GemmPrecision& precision);
// Whether the backend's sums of this product depend on its cut (gemmCut's count > 0).
bool sumsDependOnCut(const StepContext& ctx, const GemmPrecision& precision, std::int64_t M, std::int64_t N,
                     std::int64_t K);
// The fewest items of `itemBytes` bytes that make a multiple of 16 bytes, on a backend whose
// tensors live on a device: there a GEMM whose operands start and are strided on 16-byte
// boundaries runs cuBLAS's fast tensor-core kernels (8 fp16 values a load), and one that
// does not runs kernels for 2- or 1-element alignment (measured on an H200, the seed CNN's
// packed filter gradient: docs/CUDA.md). 1 on the host, whose sums depend on block widths
// (leastGemmBlock), so that its blocks, and its results, stay as they were.
std::int64_t deviceGranule(const StepContext& ctx, std::int64_t itemBytes);
// The fewest rows (or columns) a block of a GEMM whose other two dimensions multiply to
// `others` may have. A block of rows or columns sums each element as the whole product does
// when it takes the same kernels; OpenBLAS (0.3.21, measured) gave other sums for blocks 1
// to 7 wide and for 16-row blocks of 125,000 multiply-adds. So a block is at least 16 wide
// and 2^21 multiply-adds (docs/ARITHMETIC.md).
std::int64_t leastGemmBlock(std::int64_t others);

// x[i] += bias[(i / repeat) % period] in fp32, then, when f is not fp32, x rounded to f
// with the counts added to the tap (layer, kind). See ComputeBackend::addBiasRound.
void addBiasAndRound(StepContext& ctx, Format f, Tensor& x, const Tensor& bias, std::int64_t period,
                     std::int64_t repeat, std::string_view layer, TensorKind kind);

// The operand a matmul/conv reads for `t`: t itself when it already holds values of the
// compute format, else t rounded into `workspace` (tapped as (layer, kind) when tap).
const Tensor& operandIn(StepContext& ctx, const StepPrecision& p, const Tensor& t,
                        Tensor& workspace, std::string_view layer, TensorKind kind, bool tap);

}  // namespace plab
