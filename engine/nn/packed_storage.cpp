// Packed 16-bit tensors and the blocks the layers compute them in (see packed_storage.h).
#include "nn/packed_storage.h"

#include "nn/layer_ops.h"   // the rounding sites, work buffers and taps the layers share

#include "numerics/quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

namespace plab {

namespace {
std::atomic<PackedStorage>& packedStorageSwitch()
{
    static std::atomic<PackedStorage> setting{[] {
        const char* v = std::getenv("PLAB_PACKED_STORAGE");
        const std::string_view s = v ? v : "";
        return s == "on" ? PackedStorage::on : s == "off" ? PackedStorage::off : PackedStorage::byDefault;
    }()};
    return setting;
}
}  // namespace

void setPackedStorage(PackedStorage setting) { packedStorageSwitch() = setting; }
PackedStorage packedStorageSetting() { return packedStorageSwitch(); }
void setPackedStorageEnabled(bool enabled) { setPackedStorage(enabled ? PackedStorage::on : PackedStorage::off); }

bool packsStorageOn(const ComputeBackend& backend)
{
    if (!backend.supports(BackendOp::packedTensors)) return false;
    switch (packedStorageSetting()) {
    case PackedStorage::on: return true;
    case PackedStorage::off: return false;
    case PackedStorage::byDefault: break;
    }
    return backend.supports(BackendOp::packsByDefault);
}

bool packableStorage(Format storage, bool quantizes)
{
    return formatInfo(storage).packable16() && !quantizes;
}

bool packsStorage(const StepContext& ctx, const StepPrecision& p)
{
    return packableStorage(p.storage, p.quantizes()) && packsStorageOn(*ctx.backend);
}

Tensor& workBuffer(StepContext& ctx, int slot, const Shape& shape, Tensor& own)
{
    Tensor& t = ctx.work ? (*ctx.work)[static_cast<std::size_t>(slot)] : own;
    prepareTensor(t, shape, Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    return t;
}

const Tensor& widenedInto(StepContext& ctx, int slot, const Tensor& packed, Tensor& own)
{
    Tensor& wide = workBuffer(ctx, slot, packed.shape(), own);
    ctx.backend->widen16(packed.storage(), packed.bits16(), packed.size(), wide.data(), packed.size(), 1,
                         packed.size());
    return wide;
}

bool operandAsItIs(const Tensor& packed, const StepPrecision& p)
{
    return packed.packed() && packed.storage() == p.compute && !p.quantizes();
}

const std::uint16_t* patternsOf(StepContext& ctx, Format f, const Tensor& t, Tensor& bits)
{
    prepareTensor(bits, t.shape(), f, ctx, MemoryCategory::workspace, true);
    // Representable values: the rounding moves none of them, and counts nothing.
    ctx.backend->roundTo16(f, t.data(), t.size(), bits.bits16(), t.size(), 1, t.size(), nullptr, nullptr);
    return bits.bits16();
}

namespace {
std::atomic<std::int64_t>& packedBlockSetting()
{
    static std::atomic<std::int64_t> values{[] {
        const char* v = std::getenv("PLAB_PACKED_BLOCK_VALUES");
        const long long n = v ? std::atoll(v) : 0;
        return n > 0 ? static_cast<std::int64_t>(n) : std::int64_t{8} << 20;
    }()};
    return values;
}
}  // namespace

std::int64_t packedBlockValues() { return packedBlockSetting(); }
void setPackedBlockValues(std::int64_t values) { packedBlockSetting() = std::max<std::int64_t>(1, values); }

std::int64_t packedBlockValues(const StepContext& ctx, const GemmPrecision& precision, std::int64_t packedValues)
{
    const std::int64_t most = packedBlockValues();
    if (ctx.backend->supports(BackendOp::gemm16, precision)) return most;
    return std::clamp(packedValues / 4, std::max<std::int64_t>(1, most / 32), most);
}

std::int64_t leastGemmBlock(std::int64_t others)
{
    constexpr std::int64_t kLeastProduct = std::int64_t{1} << 21;
    return std::max<std::int64_t>(16, (kLeastProduct + std::max<std::int64_t>(others, 1) - 1) /
                                          std::max<std::int64_t>(others, 1));
}

Pieces piecesOf(std::int64_t total, std::int64_t most, std::int64_t least, std::int64_t granule)
{
    Pieces p;
    p.total = std::max<std::int64_t>(total, 0);
    most = std::max<std::int64_t>(most, 1);
    // A granule wider than `most` allows would override that budget: then no granule.
    p.granule = std::max<std::int64_t>(granule, 1) <= most ? std::max<std::int64_t>(granule, 1) : 1;
    // Starts rounded down to the granule widen a piece by up to granule - 1: pieces of at
    // most `most` take as many as `most - (granule - 1)` asks for...
    const std::int64_t narrowed = most - (p.granule - 1);
    const std::int64_t wanted = (p.total + narrowed - 1) / narrowed;
    // ... and each keeps at least `least`, rounded up to the granule (none empty).
    const std::int64_t fewest = (std::max<std::int64_t>(least, 1) + p.granule - 1) / p.granule * p.granule;
    p.count = std::max<std::int64_t>(1, std::min(wanted, p.total / fewest));
    return p;
}

std::int64_t Pieces::largest() const
{
    if (granule == 1) return (total + count - 1) / count;
    std::int64_t widest = 0;
    for (std::int64_t i = 0; i < count; ++i) widest = std::max(widest, begin(i + 1) - begin(i));
    return widest;
}

PieceGroups pieceGroups(const GemmCut& cut, bool columns, std::int64_t extent, std::int64_t most, std::int64_t least,
                        std::int64_t roomy)
{
    PieceGroups g;
    if (cut.count < 1 || cut.columns != columns || cut.extent != extent) {   // one group, the whole
        g.cut = {columns, extent, extent, 1};
        g.firstPiece = {0, 1};
        return g;
    }
    g.cut = cut;
    g.firstPiece.push_back(0);
    for (std::int64_t p = 0; p < cut.count;) {
        // One piece, `least` where they fit in `roomy`, more where they fit in `most`.
        auto fits = [&](std::int64_t end) {
            const std::int64_t width = cut.begin(end) - cut.begin(p);
            return width <= most || (end - p <= least && width <= roomy);
        };
        std::int64_t q = p + 1;
        while (q < cut.count && fits(q + 1)) ++q;
        // A multiple of `least` pieces where more fit: the threads take a group's pieces side
        // by side, so a group of 3 on 2 threads leaves one idle for its last piece (the seed
        // CNN's conv2 in groups of 3, 3 and 2 rather than 2, 2, 2 and 2).
        if (least > 1 && q - p > least) q = p + (q - p) / least * least;
        g.firstPiece.push_back(q);
        p = q;
    }
    return g;
}

std::int64_t PieceGroups::largest() const
{
    std::int64_t widest = 0;
    for (std::int64_t i = 0; i < count(); ++i) widest = std::max(widest, begin(i + 1) - begin(i));
    return widest;
}

void gemmGroup(StepContext& ctx, const PieceGroups& groups, std::int64_t i, Transpose transA, Transpose transB,
               std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda, const float* B,
               std::int64_t ldb, float beta, float* C, std::int64_t ldc, const GemmPrecision& precision)
{
    if (groups.count() == 1) {
        ctx.backend->gemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
        return;
    }
    const auto first = groups.firstPiece[static_cast<std::size_t>(i)];
    const auto last = groups.firstPiece[static_cast<std::size_t>(i + 1)];
    ctx.backend->gemmPieces(groups.cut, first, last, transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
}

void copyColumns(StepContext& ctx, const float* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                 std::int64_t rows, std::int64_t cols)
{
    if (rows <= 0 || cols <= 0) return;
    const std::size_t bytes = static_cast<std::size_t>(cols) * sizeof(float);
    DeviceAllocator* device = ctx.backend->allocator();
    for (std::int64_t r = 0; r < rows; ++r) {
        if (device) device->copy(dst + r * dstLd, src + r * srcLd, bytes);
        else std::memmove(dst + r * dstLd, src + r * srcLd, bytes);
    }
}

bool sumsDependOnCut(const StepContext& ctx, const GemmPrecision& precision, std::int64_t M, std::int64_t N,
                     std::int64_t K)
{
    return ctx.backend->gemmCut(precision, M, N, K).count > 0;
}

std::int64_t deviceGranule(const StepContext& ctx, std::int64_t itemBytes)
{
    if (!ctx.backend->allocator()) return 1;
    return 16 / std::gcd<std::int64_t>(std::max<std::int64_t>(itemBytes, 1), 16);
}

bool packsAroundQuantized(const StepContext& ctx, const StepPrecision& p)
{
    return (holdsCodes(ctx, p) || mxInBlocks(ctx, p)) && packableStorage(p.storage, false);
}

}  // namespace plab
