// Tensors held packed in their 16-bit storage format, and the blocks the layers compute them
// in: which layers pack (and the process-wide switch that forces packing on or off), the
// fp32 work buffers and widened copies the GEMMs read, 16-bit patterns for gemm16, and the
// block sizes and piece groups that keep a packed layer's sums those of the unpacked one.
#pragma once

#include "backend/backend.h"
#include "nn/model.h"
#include "nn/step_precision.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <vector>

namespace plab {

// Whether a layer holds its output and its input gradient packed into its 16-bit
// storage format (Tensor::pack): fp16 or bf16 storage, operands not quantised, on a backend
// that holds packed tensors (BackendOp::packedTensors: the CPU's in host memory, or a device's
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
// Whether a layer that quantises so (holdsCodes or mxInBlocks) also holds its output and
// input gradient packed in their 16-bit storage format (as packsStorage, for layers whose
// operands are not quantised).
bool packsAroundQuantized(const StepContext& ctx, const StepPrecision& p);
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

}  // namespace plab
